"""The FGD paper's fragmentation measure: the target workload and node/cluster fragmentation."""

from __future__ import annotations

import pytest

from kubeplane.gpu.frag import FragModel, PodType, typical_pods
from kubeplane.gpu.openb import load_nodes, load_pods
from kubeplane.gpu.repro import target_workload
from tests.gpu import OPENB

SHARE = PodType(cpu=4000, milli=500, count=1)
WHOLE = PodType(cpu=8000, milli=1000, count=1)
CPU = PodType(cpu=2000, milli=0, count=0)


def test_typical_pods_keeps_the_popular_types_until_the_threshold_and_renormalises() -> None:
    pods = [SHARE] * 60 + [WHOLE] * 30 + [CPU] * 6 + [PodType(1, 1, 1)] * 4
    workload = typical_pods(pods, threshold=0.95)
    assert [t for t, _ in workload] == [SHARE, WHOLE, CPU]  # 60+30+6 = 96 % >= 95 %
    assert [round(p, 6) for _, p in workload] == [round(60 / 96, 6), round(30 / 96, 6), round(6 / 96, 6)]
    assert typical_pods([]) == ()


def test_typical_pods_ties_go_to_the_larger_shape_first_as_the_go_sort() -> None:
    small, large = PodType(1000, 100, 1), PodType(2000, 100, 1)
    workload = typical_pods([small, large], threshold=0.5)
    assert [t for t, _ in workload] == [large]


def test_node_fragmentation_follows_the_four_cases() -> None:
    model = FragModel(((SHARE, 0.5), (WHOLE, 0.25), (CPU, 0.25)))
    # Two devices: 300 and 1000 idle, plenty of CPU. SHARE fits: only the 300 sliver is fragment (0.5 * 300);
    # WHOLE fits: the 300 sliver (0.25 * 300); CPU-only: every idle milli (0.25 * 1300).
    assert model.node(64000, [300, 1000], "T4") == pytest.approx(0.5 * 300 + 0.25 * 300 + 0.25 * 1300)
    # Not enough CPU for SHARE (4000) and WHOLE (8000): all idle is fragment for them.
    assert model.node(3000, [300, 1000], "T4") == pytest.approx(1300.0)
    # A node without GPUs has no GPU fragmentation; the device order does not matter.
    assert model.node(64000, [], "") == 0.0
    assert model.node(64000, [1000, 300], "T4") == model.node(64000, [300, 1000], "T4")


def test_a_type_whose_models_exclude_the_node_counts_all_idle() -> None:
    v100_only = PodType(1000, 500, 1, frozenset({"V100M16"}))
    model = FragModel(((v100_only, 1.0),))
    assert model.node(64000, [1000, 1000], "T4") == 2000.0
    assert model.node(64000, [1000, 1000], "V100M16") == 0.0


def test_empty_cluster_fragmentation_of_the_default_trace_is_13_945_percent() -> None:
    """FGD-EXPERIMENT.md §2.2 and §6.2: 866,233 milli = 13.945 % of the 6,212,000-milli capacity (±0.01 pp)."""
    nodes = load_nodes(OPENB / "openb_node_list_gpu_node.csv")
    workload = target_workload(load_pods(OPENB / "openb_pod_list_default.csv"))
    model = FragModel(workload)
    frag = sum(model.node(n.cpu_milli, [1000] * n.gpus, n.model) for n in nodes)
    capacity = sum(n.gpus for n in nodes) * 1000
    assert capacity == 6_212_000
    assert frag == pytest.approx(866_233, abs=1)
    assert frag / capacity * 100 == pytest.approx(13.945, abs=0.01)


def test_target_workload_facts_of_the_default_trace() -> None:
    """§6.1: K = 35 pod types covering ≥ 95 % of pods, CPU-only share 0.1360, the most common types."""
    workload = target_workload(load_pods(OPENB / "openb_pod_list_default.csv"))
    assert len(workload) == 35
    assert sum(p for _, p in workload) == pytest.approx(1.0)
    assert sum(p for t, p in workload if t.count == 0) == pytest.approx(0.1360, abs=0.00005)
    top = [((t.cpu, t.milli, t.count), round(p, 4)) for t, p in workload[:6]]
    assert top == [
        ((3152, 810, 1), 0.1348),
        ((11300, 1000, 1), 0.1125),
        ((11400, 1000, 1), 0.0771),
        ((3152, 1000, 1), 0.0605),
        ((11908, 470, 1), 0.0500),
        ((12500, 0, 0), 0.0471),
    ]
