"""tools/sim_memory_census.py: one small run as a subprocess prints the census at the asked moment — the decoded
objects by kind (versions held per object), the store's current and history-only values, bytes per pod. Figures
are not asserted (a census measures), only that each row is there and that shared parts are counted once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.tools.loading import load_tool

ROOT = Path(__file__).resolve().parents[2]

tool = load_tool("sim_memory_census")


def test_a_shared_part_is_counted_once() -> None:
    shared: dict[str, Any] = {"f:spec": {}}
    a, b = {"m": shared, "x": [1]}, {"m": shared}
    seen: set[int] = set()
    first, second = tool.deep_size(a, seen), tool.deep_size(b, seen)
    assert second == sys.getsizeof(b)  # the shared dict and the (interned) key: counted with ``a``
    assert first > second


def test_a_small_run_prints_every_row() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    args = ["--nodes", "20", "--pods", "60", "--until", "120", "--at", "90"]
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "sim_memory_census.py"), *args],
        capture_output=True, text=True, env=env, check=True, timeout=300,
    ).stdout  # fmt: skip
    assert "pods created, resident set" in out
    assert "decoded Pod" in out
    assert "held for" in out
    for row in ("stored events (current)", "stored pods (current)", "stored other (current)", "stored history only"):
        assert row in out
    assert "B/pod" in out
