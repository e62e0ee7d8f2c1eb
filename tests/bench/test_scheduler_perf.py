"""bench/scheduler_perf.py runs (both transports, small sizes) and prints upstream's metric names.
Figures are not asserted: benchmarks measure, tests do not time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "scheduler_perf.py"


# (workload, nodes, init pods per init op, measured pods): small, and feasible for the workload's constraints
# (required anti-affinity: one pod per node; PreemptionBasic: four low-priority pods fill a node, one
# high-priority pod per node preempts three).
LOCAL = [
    ("SchedulingBasic", 150, 100, 600),
    ("SchedulingNodeAffinity", 150, 100, 600),
    ("SchedulingPodAntiAffinity", 150, 30, 100),
    ("SchedulingPodAffinity", 150, 100, 300),
    ("SchedulingPreferredPodAffinity", 150, 100, 300),
    ("SchedulingPreferredPodAntiAffinity", 150, 100, 300),
    ("TopologySpreading", 150, 100, 300),
    ("PreferredTopologySpreading", 150, 100, 300),
    ("MixedSchedulingBasePod", 150, 20, 300),
    ("PreemptionBasic", 50, 200, 50),
]


@pytest.mark.parametrize(
    "args",
    [
        *(["--workload", w, "--nodes", str(n), "--init-pods", str(i), "--pods", str(p)] for w, n, i, p in LOCAL),
        ["--transport", "http", "--nodes", "100", "--init-pods", "50", "--pods", "400"],
    ],
    ids=[*(f"{w}-local" for w, *_ in LOCAL), "basic-http"],
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
    # CPU time per measured pod of the process that schedules: this one (local) or the scheduler's (http)
    cpu = [line for line in lines if line["metric"] == "CPUPerPod"]
    assert [(line["unit"], line["component"]) for line in cpu] == [("us", "scheduler" if "http" in args else "bench")]
