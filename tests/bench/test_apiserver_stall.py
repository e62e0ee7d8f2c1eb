"""bench/apiserver_stall.py runs every stall case (cut to 2 s each) and prints the bench convention's JSON lines.
Figures are not asserted: benchmarks measure, tests do not time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "apiserver_stall.py"


def test_every_case_reports_healthz_latency() -> None:
    command = [sys.executable, str(SCRIPT), "--quick", "--seconds", "2"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    for line in lines:
        assert {"bench", "metric", "value", "unit", "case"} <= set(line), line
        assert isinstance(line["value"], int | float)
        assert line["quick"] is True
    cases = {line["case"] for line in lines if line["metric"] == "healthz_max_ms"}
    assert cases == {"slow_headers", "partial_bodies", "idle_tls", "big_list", "smp_20000"}
