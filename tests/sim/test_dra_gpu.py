"""GPUs through DRA in a simulation (issue 27: "the GPU policies (FGD and the others) can score DRA GPUs as they score
extended-resource GPUs today, and the simulation's GPU metrics count both").

examples/sim/dra-gpu.yaml asks for GPUs through ResourceClaimTemplates of the simulated driver gpu.example.com;
examples/sim/extended-gpu.yaml is the same cluster and workload with ``nvidia.com/gpu``. Under FGD (fgd-dra.yaml)
both runs place every pod on the same node and their GPU metrics (per arrival and the summary) are equal: FGD scores
DRA GPUs as it scores extended-resource ones, and the metrics count DRA-allocated GPUs from the claims' status.
Under the default configuration (upstream's NodeResourcesFit LeastAllocated + DynamicResources' score) the DRA run
places the pods differently: the placement above is FGD's doing, not the allocator's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubeplane.sim.runner import SimResult, run
from kubeplane.sim.scenario import Scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sim"
GPU_FIELDS = ("arrived_gpu_milli", "used_gpu_milli", "frag_milli", "idle_milli", "gpu_alloc_pct", "gpu_frag_pct")


def _placements(result: SimResult) -> dict[str, str]:
    return {f"{p['namespace']}/{p['name']}": str(p.get("node") or "") for p in result.pods}


@pytest.fixture(scope="module")
def dra() -> SimResult:
    return run(EXAMPLES / "dra-gpu.yaml")


@pytest.fixture(scope="module")
def extended() -> SimResult:
    return run(EXAMPLES / "extended-gpu.yaml")


def test_dra_gpu_metrics_are_counted(dra: SimResult) -> None:
    """12 DRA GPUs (2×4 A100 + 2×2 T4); 7 one-GPU pods (running 2-4 min) and 3 two-GPU pods ask for 13: all 12
    allocated at the peak, the last pod waits for a finished pod's claim to be deallocated, then runs."""
    assert dra.summary["gpu_capacity"] == 12
    assert dra.summary["gpu_alloc_pct_peak"] == 100.0
    assert dra.gpu[-1]["arrived_gpu_milli"] == 13_000
    assert dra.gpu[-1]["used_gpu_milli"] == 12_000
    assert any(row["frag_milli"] > 0 for row in dra.gpu)
    # the one-GPU pods finished: their generated claims were deleted and their GPUs count as free again
    assert dra.summary["pods_completed"] == 7
    assert dra.summary["pods_pending_at_end"] == 0
    assert dra.summary["gpu_alloc_pct"] == 50.0  # the three two-GPU pods still run: 6 of 12


def test_dra_gpus_are_scored_and_counted_like_extended_resources(dra: SimResult, extended: SimResult) -> None:
    assert _placements(dra) == _placements(extended)
    assert [{k: a[k] for k in GPU_FIELDS} for a in dra.gpu] == [{k: a[k] for k in GPU_FIELDS} for a in extended.gpu]
    for key in ("gpu_capacity", "gpu_alloc_pct", "gpu_frag_pct", "gpu_unallocated", "gpu_arrived_pct",
                "gpu_alloc_pct_peak", "gpu_alloc_pct_mean", "gpu_frag_pct_mean"):  # fmt: skip
        assert dra.summary[key] == extended.summary[key], key
    columns = ("t", "gpu_alloc_pct", "gpu_unallocated", "gpu_frag_pct", "pods_running", "pods_succeeded")
    assert [{c: r[c] for c in columns} for r in dra.timeseries] == [
        {c: r[c] for c in columns} for r in extended.timeseries
    ]


def test_fgd_and_not_the_allocator_decides_the_nodes(dra: SimResult) -> None:
    scenario = Scenario.load(EXAMPLES / "dra-gpu.yaml")
    default = run(scenario, scheduler_config=yaml.safe_load((EXAMPLES / "default.yaml").read_text()))
    assert default.summary["gpu_capacity"] == 12
    assert _placements(default) != _placements(dra)
    # FGD keeps whole A100 nodes free for the two-GPU pods; the default spreads and leaves more fragments
    assert default.summary["gpu_frag_pct"] >= dra.summary["gpu_frag_pct"]
