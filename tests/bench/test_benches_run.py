"""Every benchmark runs with --quick and follows the convention: one JSON object per line with bench, metric,
a numeric value and a unit. Figures are not asserted (benchmarks measure; tests do not time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(p for p in BENCH.glob("*_bench.py"))


def test_every_bench_is_covered() -> None:
    assert [p.name for p in SCRIPTS] == [
        "affinity_cycle_bench.py",
        "apiserver_bench.py",
        "autoscaler_bench.py",
        "batch_bench.py",
        "cel_bench.py",
        "crd_bench.py",
        "cronjob_bench.py",
        "csi_bench.py",
        "dra_allocator_bench.py",
        "dra_cel_bench.py",
        "endpoints_bench.py",
        "explain_bench.py",
        "fgd_bench.py",
        "gang_bench.py",
        "gojson_bench.py",
        "informer_bench.py",
        "job_controller_bench.py",
        "jsondepth_bench.py",
        "kubelet_bench.py",
        "node_authz_bench.py",
        "pod_logs_bench.py",
        "pod_writes_bench.py",
        "sa_token_bench.py",
        "sched_cycle_bench.py",
        "sched_try_bench.py",
        "sim_bench.py",
        "ssa_bench.py",
        "statefulset_bench.py",
        "store_bench.py",
        "typed_decode_bench.py",
        "ui_bench.py",
        "views_bench.py",
        "volume_binding_bench.py",
        "watch_memory_bench.py",
    ]


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_bench_quick_run_prints_json_lines(script: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=240, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert lines, "a bench printed nothing"
    for line in lines:
        assert {"bench", "metric", "value", "unit"} <= set(line), line
        assert isinstance(line["value"], int | float)
        if not line["metric"].endswith("overhead_pct"):  # a difference of two rates: below zero in the noise
            assert line["value"] > 0, line
        assert line["quick"] is True
