"""bench/kubelet_bench.py runs end to end at a tiny size (a real API server process, a fleet over HTTP) and
prints every figure it promises as JSON lines, then the summary line. Figures are not asserted (benchmarks
measure; tests do not time): a pod that never reaches Running makes the bench exit non-zero, which is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "kubelet_bench.py"

METRICS = {
    "registration_s",
    "nodes_registered_per_s",
    "steady_cpu_share",
    "steady_rss_mb",
    "peak_rss_mb",
    "pods_created_per_s",
    "pods_running_after_creation_s",
    "pods_running_after_first_create_s",
    "pods_running_per_s",
    "pod_bind_to_running_s",
    "pod_phase_cpu_share",
}


def run_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=240, check=False
    )


def test_tiny_run_prints_every_figure_and_a_summary() -> None:
    result = run_bench(
        "--quick", "--nodes", "4", "--pods", "23", "--window", "1", "--warmup", "0", "--pull-delay", "0.05",
        "--concurrency", "5", "--profile",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    *metrics, summary = lines
    assert {line["metric"] for line in metrics} >= METRICS
    for line in lines:
        assert line["bench"] == "kubelet"
        assert isinstance(line["value"], int | float)
        assert line["value"] >= 0, line
        assert (line["quick"], line["nodes"], line["pods"], line["window_s"]) == (True, 4, 23, 1.0)
        assert line["pull_delay_s"] == 0.05
        assert line["concurrency"] == 5
    rates = {line["metric"]: line["value"] for line in metrics if "per_s" in line["metric"]}
    assert all(value > 0 for value in rates.values()), rates
    stats = {line["stat"] for line in metrics if line["metric"] == "pod_bind_to_running_s"}
    assert stats == {"Perc50", "Perc99", "Max"}
    targeted = {line["metric"]: line for line in metrics if "target" in line}
    assert set(targeted) == {"steady_cpu_share", "steady_rss_mb", "pod_bind_to_running_s"}
    assert all(isinstance(line["target_met"], bool) for line in targeted.values())
    assert summary["metric"] == "summary"
    assert summary["unit"] == "s"
    assert summary["value"] > 0
    assert summary["figures"]["pods_running_per_s"] == rates["pods_running_per_s"]
    assert summary["fleet_warnings"] == 0, result.stderr[-3000:]
    # human-readable lines on stderr, the profile of the pod phase among them
    assert "pods_running_per_s:" in result.stderr
    assert "cumulative" in result.stderr


def test_bad_sizes_are_refused() -> None:
    result = run_bench("--nodes", "0")
    assert result.returncode == 2
    assert "must be positive" in result.stderr
    assert result.stdout == ""
