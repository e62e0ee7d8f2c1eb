"""kill -9 at random moments never loses an acknowledged write, and revisions continue without reuse.

A child process writes (creates, updates, deletes from four concurrent writers) and prints every write once it
is acknowledged; the test SIGKILLs it after a random delay, reopens the database and checks every acknowledged
write at its revision, then starts the next child on the same file. 24 kills in the default crash-safe mode,
12 in fsync mode; `make soak` runs 300 and 150.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kubeplane.store.sqlite import Durability, SqliteStore

CHILD = Path(__file__).with_name("crash_child.py")


def _run_and_kill(path: Path, durability: Durability, seed: int, delay: float) -> tuple[int, list[str]]:
    """Start a child, kill it ``delay`` seconds after it is ready; its opening revision and complete lines."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(path), durability.value, str(seed)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    first = child.stdout.readline().decode()
    assert first.startswith("ready "), f"child did not start: {first!r} {child.stderr.read()!r}"  # type: ignore[union-attr]
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    output, _ = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    text = output.decode()
    complete = text.split("\n")[:-1]  # the last piece has no newline: it may be cut mid-write
    return int(first.split()[1]), complete


@pytest.mark.parametrize(
    ("durability", "kills"),
    [
        (Durability.CRASH_SAFE, 24),
        (Durability.FSYNC, 12),
        pytest.param(Durability.CRASH_SAFE, 300, marks=[pytest.mark.soak, pytest.mark.timeout(1800)]),
        pytest.param(Durability.FSYNC, 150, marks=[pytest.mark.soak, pytest.mark.timeout(1800)]),
    ],
    ids=["crash-safe", "fsync", "soak-crash-safe", "soak-fsync"],
)
async def test_acknowledged_writes_survive_sigkill(tmp_path: Path, durability: Durability, kills: int) -> None:
    path = tmp_path / "crash.db"
    rng = random.Random(20261121)
    acknowledged: dict[int, tuple[str, str, str]] = {}
    highest_seen = 0
    for round_ in range(kills):
        opened_at, lines = _run_and_kill(path, durability, seed=round_, delay=rng.uniform(0.02, 0.25))
        assert opened_at >= highest_seen, "reopened store went back in revisions"
        fresh: dict[int, tuple[str, str, str]] = {}
        for line in lines:
            op, rev, key, value = line.split()
            revision = int(rev)
            assert revision > highest_seen, f"revision {revision} reused after a restart"
            assert revision not in fresh, f"revision {revision} acknowledged twice"
            fresh[revision] = (op, key, value)
        acknowledged.update(fresh)
        highest_seen = max([highest_seen, *fresh])
        store = SqliteStore(path, durability=durability)
        try:
            assert store.revision >= highest_seen
            await _check(store, fresh)
            if round_ == kills - 1:  # once at the end: nothing acknowledged earlier was lost later either
                await _check(store, acknowledged)
            highest_seen = store.revision
        finally:
            await store.close()
    assert len(acknowledged) > kills * 10, "the children acknowledged too few writes to mean anything"


async def _check(store: SqliteStore, acknowledged: dict[int, tuple[str, str, str]]) -> None:
    for revision, (op, key, value) in acknowledged.items():
        kv = await store.get(key, revision=revision)
        if op == "delete":
            assert kv is None, f"acknowledged delete at {revision} of {key} lost"
        else:
            assert kv is not None, f"acknowledged {op} at {revision} of {key} lost"
            assert (kv.mod_revision, kv.value.hex()) == (revision, value)
