"""GPU pods through the whole control plane on the virtual clock: the default scheduler vs GpuShare + FGD.

A small openb-format trace with arrivals and deletions on a cluster whose one-GPU nodes attract GPU shares: the
default scheduler counts whole GPUs only, so two shares that do not fit one device together are bound to the same
node and the kubelet refuses the second (UnexpectedAdmissionError); with GpuShare and FGD every pod gets a device.
The run records GPU allocation and fragmentation per arrival and over time, and writes them into the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeplane.sim.runner import SimResult, run
from kubeplane.sim.scenario import Scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sim"
KINDS = [(1, 600), (1, 500), (1, 1000), (0, 0), (1, 600), (1, 300)]
POD_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
)


def _trace(tmp_path: Path) -> Path:
    """24 pods, one every 10 trace seconds: shares of 600 and 500 milli, whole GPUs, CPU-only pods; every pod lives
    200 s except every fourth, which stays."""
    lines = [POD_HEADER]
    for i in range(24):
        num_gpu, milli = KINDS[i % len(KINDS)]
        created = 10 * i
        deleted = "" if i % 4 == 3 else str(created + 200)
        lines.append(f"p-{i:03d},2000,4096,{num_gpu},{milli},,LS,Running,{created},{deleted},{created}")
    path = tmp_path / "pods.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _scenario(tmp_path: Path) -> Scenario:
    _trace(tmp_path)
    data: dict[str, Any] = {
        "name": "gpu-mini",
        "seed": 7,
        "duration": "6m",
        "sampleInterval": "10s",
        "cluster": {
            "nodes": [
                {
                    "count": 4,
                    "namePattern": "gpu1-{index}",
                    "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": "1"},
                    "labels": {"nvidia.com/gpu.product": "T4"},
                },
                {
                    "count": 1,
                    "namePattern": "gpu4-{index}",
                    "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"},
                    "labels": {"nvidia.com/gpu.product": "V100M16"},
                },
            ]
        },
        "workload": [{"trace": {"format": "openb", "pods": "pods.csv", "order": "times", "deletions": True}}],
    }
    return Scenario.parse(data, base=tmp_path)


def _fgd() -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / "fgd.yaml").read_text())
    return config


def _admission_failures(result: SimResult) -> list[str]:
    return [p["name"] for p in result.pods if p["reason"] == "UnexpectedAdmissionError"]


def test_default_scheduler_oversubscribes_devices_and_gpu_share_with_fgd_does_not(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path)
    default = run(scenario, label="default")
    fgd = run(scenario, label="fgd", scheduler_config=_fgd())

    # The default scheduler binds shares by whole-GPU counts only: the kubelet refuses some of them.
    assert _admission_failures(default)
    # GpuShare places each share on a device with room: nothing is refused, every pod ran.
    assert _admission_failures(fgd) == []
    assert fgd.summary["pods_scheduled"] == 24
    assert all(p["running"] is not None for p in fgd.pods)

    # GPU figures per arrival, with capacity 8 GPUs; allocation never exceeds it and ends with the pods that stay.
    assert len(fgd.gpu) == 24
    assert fgd.summary["gpu_capacity"] == 8
    assert all(0 <= row["used_gpu_milli"] <= 8000 for row in fgd.gpu)
    milli = [KINDS[i % len(KINDS)][1] for i in range(24)]
    assert fgd.gpu[-1]["arrived_gpu_milli"] == sum(milli)
    # At the end (360 s) run the pods that stay (every fourth) and those deleted after 360 s (created after 160 s).
    alive = [i for i in range(24) if i % 4 == 3 or 10 * i + 200 > 360]
    assert fgd.summary["gpu_alloc_pct"] == pytest.approx(sum(milli[i] for i in alive) / 8000 * 100)
    columns = {"gpu_alloc_pct", "gpu_unallocated", "gpu_frag_pct", "gpu_frag_ratio_pct"}
    assert columns <= set(fgd.timeseries[-1])
    assert max(row["gpu_alloc_pct"] for row in fgd.timeseries) > fgd.timeseries[-1]["gpu_alloc_pct"]

    # The same scenario and seed again: the same event log.
    again = run(scenario, label="fgd", scheduler_config=_fgd())
    assert again.summary["event_log_hash"] == fgd.summary["event_log_hash"]

    out = tmp_path / "out"
    paths = fgd.write(out)
    assert paths["gpu"].read_text().splitlines()[0].startswith("t,arrived_gpu_milli,used_gpu_milli,frag_milli")
    assert "GPU allocation and fragmentation" in paths["report"].read_text()

    # The GPU headline figures: the peak and means of the sampled series; the kubelet's refusals are pods that
    # ended rejected (Failed without running), the default scheduler's alone.
    for result in (default, fgd):
        alloc = [row["gpu_alloc_pct"] for row in result.timeseries]
        assert result.summary["gpu_alloc_pct_peak"] == max(alloc)
        assert result.summary["gpu_alloc_pct_mean"] == pytest.approx(sum(alloc) / len(alloc), abs=1e-4)
        frag = [row["gpu_frag_pct"] for row in result.timeseries]
        assert result.summary["gpu_frag_pct_mean"] == pytest.approx(sum(frag) / len(frag), abs=1e-4)
    assert default.summary["pods_rejected"] == len(_admission_failures(default)) > 0
    assert fgd.summary["pods_rejected"] == 0
