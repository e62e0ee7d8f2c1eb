"""DRA GPUs shared through consumable capacity in a simulation (issue 27: the simulation's GPU metrics count DRA
GPUs shared by capacity as they count ``gpu-milli`` shares of extended-resource GPUs).

examples/sim/dra-gpu-share.yaml, by hand. Two GPUs, each ``memory: 40Gi`` (default 10Gi, 5Gi steps) and
``cores: 1`` (default 200m, 100m steps from 100m). What each claim consumes (upstream ``calculateConsumedCapacity``,
the fractional cores range in thousandths) and its own dominant share:

=========  ============  =========  ==========  =====
pod        memory        cores      dominant    at
=========  ============  =========  ==========  =====
quarter×3  10Gi          200m dflt  250         5, 10, 15 s
odd        12Gi -> 15Gi  200m dflt  375         30 s
compute    10Gi dflt     450m->500m 500         35 s
plain      10Gi dflt     200m dflt  250         40 s
=========  ============  =========  ==========  =====

The allocator takes the first GPU with room: the quarters on gpu-0 (30Gi, 600m); odd does not fit there (45Gi) and
takes gpu-1 (15Gi, 200m); compute does not fit gpu-0's cores (1100m) and takes gpu-1 (25Gi, 700m); plain fits gpu-0
(40Gi, 800m). A shared GPU uses the dominant share of its claims' sum: gpu-0 1000, gpu-1 max(625, 700) = 700.

Each arrival's reading is taken before that pod is placed. Target workload (FGD's M, from the declared pods): the
250 type 4/6, 375 and 500 1/6 each; fragmentation of idle devices ``[a, b]`` is, per type, the idle on devices with
less than its milli (all idle when none fits): at odd [250, 1000] -> 250/6 + 250/6 = 83.333; at compute [250, 625]
-> 83.333; at plain [250, 300] -> 550/6 + 550/6 = 183.333; at the end [0, 300] -> 300/6 + 300/6 = 100 (5 % of
2000, 33.33 % of the idle 300).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeplane.sim.runner import SimResult, run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sim" / "dra-gpu-share.yaml"
FIELDS = ("pod", "arrived_gpu_milli", "used_gpu_milli", "frag_milli", "idle_milli")


@pytest.fixture(scope="module")
def result() -> SimResult:
    return run(EXAMPLE)


def test_every_arrival_against_the_hand_computation(result: SimResult) -> None:
    assert [tuple(row[f] for f in FIELDS) for row in result.gpu] == [
        ("default/quarter-0", 250, 0, 0.0, 2000),
        ("default/quarter-1", 500, 250, 0.0, 1750),
        ("default/quarter-2", 750, 500, 0.0, 1500),
        ("default/odd-0", 1125, 750, 83.333, 1250),
        ("default/compute-0", 1625, 1125, 83.333, 875),
        ("default/plain-0", 1875, 1450, 183.333, 550),
    ]


def test_the_final_figures(result: SimResult) -> None:
    summary = result.summary
    assert (summary["pods_running_at_end"], summary["pods_pending_at_end"]) == (6, 0)
    assert summary["gpu_capacity"] == 2
    assert summary["gpu_alloc_pct"] == 85.0  # 1000 + 700 of 2000
    assert summary["gpu_unallocated"] == 0.3
    assert summary["gpu_frag_pct"] == 5.0
    assert summary["gpu_frag_ratio_pct"] == 33.3333
    # the pods asked for 1875 (their own dominant shares); gpu-1's two shares, heavy on different capacities, took
    # 700 of it together, not 375 + 500
    assert summary["gpu_arrived_pct"] == 93.75
