"""bench/scheduler_perf.py runs (both transports, small sizes) and prints upstream's metric names.
Figures are not asserted: benchmarks measure, tests do not time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "scheduler_perf.py"


@pytest.mark.parametrize(
    "args",
    [
        ["--workload", "SchedulingBasic", "--nodes", "150", "--init-pods", "100", "--pods", "600"],
        ["--workload", "SchedulingNodeAffinity", "--nodes", "150", "--init-pods", "100", "--pods", "600"],
        ["--transport", "http", "--nodes", "100", "--init-pods", "50", "--pods", "400"],
    ],
    ids=["basic-local", "node-affinity-local", "basic-http"],
)
def test_scheduler_perf_prints_throughput_and_rss(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", *args], capture_output=True, text=True, timeout=240, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    stats = {line.get("stat") for line in lines if line["metric"] == "SchedulingThroughput"}
    assert stats == {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}
    assert all(line["value"] > 0 and line["quick"] is True for line in lines)
    assert any(line["metric"] == "PeakRSS" and line["unit"] == "MB" for line in lines)
