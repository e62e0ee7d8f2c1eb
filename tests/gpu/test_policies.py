"""The six FGD-paper policies: scores and device choices exactly as FGD-EXPERIMENT.md §1.6 and §3 state them."""

from __future__ import annotations

import math
import random

import pytest

from kubeplane.gpu.frag import FragModel, PodType
from kubeplane.gpu.model import GpuRequest
from kubeplane.gpu.policies import (
    POLICIES,
    BestFit,
    DotProduct,
    Fgd,
    GpuClustering,
    GpuPacking,
    NodeView,
    PodDemand,
    RandomFit,
    devices_best,
    devices_random,
    gpu_fits,
    make_policy,
    normalize,
)

SHARE = PodDemand(cpu=4000, memory=1, count=1, milli=500)
WHOLE2 = PodDemand(cpu=8000, memory=1, count=2, milli=1000)
CPU_ONLY = PodDemand(cpu=2000, memory=1)


def node(idle: tuple[int, ...], cpu: int = 64000, model: str = "T4", tags: frozenset[str] = frozenset()) -> NodeView:
    return NodeView(cpu, 1 << 40, idle, model, tags)


def test_pod_demand_of_a_request() -> None:
    assert PodDemand.of(100, 5, None) == PodDemand(100, 5)
    demand = PodDemand.of(100, 5, GpuRequest(1, 300, frozenset({"A10"})))
    assert (demand.count, demand.milli, demand.models, demand.tag) == (1, 300, frozenset({"A10"}), "share-gpu")
    assert (WHOLE2.tag, CPU_ONLY.tag) == ("2-gpu", "")
    assert demand.pod_type() == PodType(100, 300, 1, frozenset({"A10"}))


def test_gpu_fits_checks_model_and_devices() -> None:
    assert gpu_fits(node(()), CPU_ONLY)
    assert not gpu_fits(node(()), SHARE)
    assert gpu_fits(node((400, 600)), SHARE)
    assert not gpu_fits(node((400, 450)), SHARE)
    assert not gpu_fits(node((1000, 600)), WHOLE2)  # whole GPUs need fully free devices
    assert gpu_fits(node((1000, 1000)), WHOLE2)
    typed = PodDemand(1, 1, 1, 500, frozenset({"V100M16"}))
    assert not gpu_fits(node((1000,)), typed)
    assert gpu_fits(node((1000,), model="V100M16"), typed)


def test_device_choice_best_fit_and_random() -> None:
    assert devices_best((1000, 600, 520, 520), SHARE) == (2,)  # tightest, lowest index on ties
    assert devices_best((1000, 300, 1000), WHOLE2) == (0, 2)
    assert devices_best((1000,), CPU_ONLY) == ()
    rng = random.Random(1)
    seen = {devices_random((1000, 400, 600, 1000), SHARE, rng) for _ in range(200)}
    assert seen == {(0,), (2,), (3,)}
    assert devices_random((1000, 1000, 1000), WHOLE2, rng) == (0, 1)


def test_best_fit_score_and_normalisation() -> None:
    # int(100 · (1 − [0.5 · (64000 − 4000)/128000 + 0.5 · (1500 − 500)/8000])) = int(100 · (1 − 0.296875)) = 70
    assert BestFit().score(node((1000, 500)), SHARE) == 70
    assert BestFit.normalize
    assert normalize([10, 20, 40]) == [0, 33, 100]
    assert normalize([7, 7]) == [0, 0]


def test_dot_product_prefers_the_smallest_dot_product() -> None:
    full = node((1000, 1000))
    used = node((500, 1000))
    dot = (64000 / 128000) * (4000 / 128000) + (2000 / 8000) * (500 / 8000)
    assert DotProduct().score(full, SHARE) == int(100 * (1 - dot / 2))
    assert DotProduct().score(used, SHARE) >= DotProduct().score(full, SHARE)
    assert DotProduct().score(node((1000,), cpu=100), SHARE) == 0


def test_gpu_packing_prefers_shared_devices_then_partly_used_nodes_then_idle_ones() -> None:
    packing = GpuPacking()
    assert packing.score(node((1000, 1000)), CPU_ONLY) == 0
    assert packing.score(node((1000,) * 8), SHARE) == 25  # idle node: max(33 − 8, 8)
    assert packing.score(node((1000, 1000)), SHARE) == 31
    assert packing.score(node((1000, 300, 1000)), WHOLE2) == 48  # partly used: max(50 − 2, 33)
    # already-shared device with 600 idle: max(100 − int(600·100/1000)/10, 50) = 94
    assert packing.score(node((1000, 600)), SHARE) == 94
    scores = [packing.score(n, SHARE) for n in (node((1000, 600)), node((1000, 300, 1000)), node((1000,) * 8))]
    assert scores == sorted(scores, reverse=True)


def test_gpu_clustering_groups_pods_of_one_kind() -> None:
    clustering = GpuClustering()
    idle = (1000, 500)  # base = 25 · (8000 − 1500) // 8000 = 20
    assert clustering.score(node(idle), CPU_ONLY) == 0
    assert clustering.score(node(idle), SHARE) == 20 + 25
    assert clustering.score(node(idle, tags=frozenset({"share-gpu"})), SHARE) == 20 + 75
    assert clustering.score(node(idle, tags=frozenset({"share-gpu", "1-gpu"})), SHARE) == 20 + 50
    assert clustering.score(node(idle, tags=frozenset({"1-gpu"})), SHARE) == 20


def test_random_fit_scores_one_drawn_node() -> None:
    policy = RandomFit()
    policy.pre_score(5, random.Random(3))
    scores = [policy.score_at(i, node((1000,)), SHARE) for i in range(5)]
    assert sorted(scores) == [0, 0, 0, 0, 100]
    assert scores.index(100) == random.Random(3).randrange(5)


def _sigmoid_score(delta: float) -> int:
    return int(100 / (1 + math.exp(-delta / 1000)))


def test_fgd_scores_the_drop_of_fragmentation_and_picks_the_best_device() -> None:
    workload = ((PodType(1000, 500, 1), 0.5), (PodType(1000, 1000, 1), 0.5))
    fgd = Fgd(workload)
    frag = FragModel(workload)
    view = node((1000, 700))
    before = frag.node(64000, [1000, 700], "T4")
    # Placing on device 1 (700 → 200) vs device 0 (1000 → 500): the score is the larger quantised sigmoid.
    after1 = frag.node(60000, [1000, 200], "T4")
    after0 = frag.node(60000, [500, 700], "T4")
    expected = max(_sigmoid_score(before - after0), _sigmoid_score(before - after1))
    score, devices = fgd.evaluate(view, SHARE)
    assert score == expected
    chosen = 0 if _sigmoid_score(before - after0) >= _sigmoid_score(before - after1) else 1
    assert devices == (chosen,)
    assert fgd.devices(view, SHARE, random.Random(0)) == devices
    # Whole GPUs: lowest-index free devices, score from the state with them taken.
    score2, devices2 = fgd.evaluate(node((1000, 300, 1000)), PodDemand(1000, 1, 1, 1000))
    assert devices2 == (0,)
    assert score2 == _sigmoid_score(frag.node(64000, [1000, 300, 1000], "T4") - frag.node(63000, [0, 300, 1000], "T4"))


def test_fgd_quantisation_makes_small_differences_ties() -> None:
    assert [_sigmoid_score(d) for d in (-30, 0, 39)] == [49, 50, 50]


def test_make_policy() -> None:
    assert [make_policy(n, ((PodType(1, 1, 1), 1.0),)).name for n in POLICIES] == list(POLICIES)
    with pytest.raises(ValueError, match="unknown GPU policy 'Foo'"):
        make_policy("Foo")
    with pytest.raises(ValueError, match="target workload"):
        make_policy("FGD")
