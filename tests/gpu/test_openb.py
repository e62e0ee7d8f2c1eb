"""The openb trace loader: the published facts of the trace (FGD-EXPERIMENT.md §1.1, §6.1), the artifact's
normalisation, one-line errors, the paper's arrival sequence (shuffle, tune up with the per-GPU stop quirk, tune
down) and the node specs / Pod manifests built from trace rows."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kubeplane.api.pods import pod_requests
from kubeplane.gpu.model import GPU_MILLI_ANNOTATION, GPU_MODEL_LABEL, GPU_RESOURCE, GpuRequest, gpu_request
from kubeplane.gpu.openb import (
    TraceError,
    TraceNode,
    TracePod,
    gpu_capacity_milli,
    load_nodes,
    load_pods,
    node_specs,
    paper_sequence,
    pod_manifest,
)
from tests.gpu import OPENB

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def _csv(tmp_path: Path, name: str, *lines: str) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


# --- the published trace ----------------------------------------------------------------------------------------


def test_the_gpu_node_list_has_the_papers_cluster() -> None:
    nodes = load_nodes(OPENB / "openb_node_list_gpu_node.csv")
    assert len(nodes) == 1213
    assert sum(n.gpus for n in nodes) == 6212
    assert gpu_capacity_milli(nodes) == 6_212_000
    assert sum(n.cpu_milli for n in nodes) == 107_018_000
    assert Counter(n.gpus for n in nodes) == {8: 617, 2: 518, 4: 54, 1: 24}
    kinds = Counter((n.model, n.gpus, n.cpu_milli, n.memory_mib) for n in nodes)
    assert kinds == {
        ("G2", 8, 96000, 393216): 549,
        ("T4", 2, 104000, 524288): 387,
        ("P100", 2, 16000, 122880): 107,
        ("G3", 8, 128000, 786432): 39,
        ("V100M16", 4, 32000, 131072): 28,
        ("P100", 2, 64000, 262144): 22,
        ("V100M32", 8, 96000, 786432): 21,
        ("V100M16", 1, 8000, 32768): 19,
        ("T4", 4, 96000, 393216): 17,
        ("V100M32", 4, 48000, 376832): 9,
        ("V100M16", 8, 64000, 262144): 7,
        ("P100", 1, 8000, 61440): 3,
        ("P100", 2, 8000, 61440): 2,
        ("A10", 1, 128000, 1048576): 2,
        ("V100M16", 8, 82000, 344064): 1,
    }


def test_the_all_node_list_adds_cpu_only_nodes_without_a_model() -> None:
    nodes = load_nodes(OPENB / "openb_node_list_all_node.csv")
    cpu_only = [n for n in nodes if n.gpus == 0]
    assert (len(nodes), len(cpu_only), sum(n.gpus for n in nodes)) == (1523, 310, 6212)
    assert {n.model for n in cpu_only} == {""}


def test_the_default_pod_list_has_the_papers_workload() -> None:
    pods = load_pods(OPENB / "openb_pod_list_default.csv")
    assert len(pods) == 8152
    assert sum(p.gpu_total_milli for p in pods) == 6_086_800
    kinds = Counter(
        "cpu" if p.gpu_total_milli == 0 else "share" if p.gpu_milli < 1000 else f"{p.num_gpu}-gpu" for p in pods
    )
    assert kinds == {"1-gpu": 3911, "share": 3078, "cpu": 1088, "8-gpu": 44, "2-gpu": 16, "4-gpu": 15}
    assert all(p.gpu_milli == 1000 for p in pods if p.num_gpu > 1)
    assert not any(p.gpu_spec for p in pods)
    assert all(p.creation_time is not None and p.deletion_time is not None for p in pods)
    assert pods[1] == TracePod("openb-pod-0001", 6000, 12288, 1, 460, (), 427061, 12902960)


def test_every_published_pod_list_loads_and_multigpu30_has_no_times() -> None:
    for variant in ("gpushare40", "multigpu30", "cpu050"):
        pods = load_pods(OPENB / f"openb_pod_list_{variant}.csv")
        assert pods
        if variant == "multigpu30":
            assert len(pods) == 8508
            assert all(p.creation_time is None and p.deletion_time is None and p.gpu_spec == () for p in pods)


def test_the_paper_sequence_of_the_default_trace_reaches_130_percent() -> None:
    pods = load_pods(OPENB / "openb_pod_list_default.csv")
    rng = random.Random(42)
    sequence = paper_sequence(pods, rng, capacity_milli=6_212_000)
    originals, clones = sequence[:8152], sequence[8152:]
    assert sorted(p.name for p in originals) == [p.name for p in pods]  # a permutation of the trace...
    assert [p.name for p in originals] != [p.name for p in pods]  # ...shuffled
    assert [p.name.rpartition("-tuned-")[2] for p in clones] == [str(i) for i in range(len(clones))]
    total = sum(p.gpu_total_milli for p in sequence)
    # the stopping draw had gpu_milli <= 1000 and did not fit; a multi-GPU clone may overshoot by 7 GPUs
    assert 1.3 * 6_212_000 - 1000 < total <= 1.3 * 6_212_000 + 7000
    assert 2000 < len(clones) < 3500
    assert paper_sequence(pods, random.Random(42), capacity_milli=6_212_000) == sequence


# --- normalisation and errors -----------------------------------------------------------------------------------


def test_gpu_milli_is_clipped_as_the_artifact_does(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        "pods.csv",
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli",
        "big,1000,1024,1,1500",  # > 1000 -> 1000
        "neg,1000,1024,1,-5",  # < 0 -> 0
        "zero,1000,1024,2,0",  # num_gpu without milli: asks for no GPU
        "cpu,1000,1024,0,300",  # milli without num_gpu: 0
        "share,1000,1024,1,999",
        "whole,1000,1024,4,1000",
    )
    got = {p.name: (p.num_gpu, p.gpu_milli, p.gpu_total_milli) for p in load_pods(path)}
    assert got == {
        "big": (1, 1000, 1000),
        "neg": (1, 0, 0),
        "zero": (2, 0, 0),
        "cpu": (0, 0, 0),
        "share": (1, 999, 999),
        "whole": (4, 1000, 4000),
    }


def test_columns_are_found_by_name_and_optional_ones_may_be_empty(tmp_path: Path) -> None:
    path = _csv(
        tmp_path,
        "pods.csv",
        "deletion_time,gpu_milli,name,num_gpu,memory_mib,cpu_milli,gpu_spec,creation_time",
        "20,500,p1,1,2048,4000,T4|V100M16,10",
        ",0,p2,0,1024,1000,,",
    )
    assert load_pods(path) == [
        TracePod("p1", 4000, 2048, 1, 500, ("T4", "V100M16"), 10, 20),
        TracePod("p2", 1000, 1024, 0, 0, (), None, None),
    ]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["openb-pod-0000,1,1,x,0,,,,1,2,"], "pods.csv line 2: num_gpu: 'x' is not an integer"),
        (["a,1,1,1,0,,,,1,2,", "b,-1,1,1,0,,,,1,2,"], "pods.csv line 3: cpu_milli: -1 must not be negative"),
        (["a,1,,1,0,,,,1,2,"], "pods.csv line 2: memory_mib: missing value"),
        (["Bad_Name,1,1,1,0,,,,1,2,"], "pods.csv line 2: name: 'Bad_Name' is not a valid object name"),
        (["a,1,1,1,0,,,,1,2,", "a,1,1,1,0,,,,1,2,"], "pods.csv line 3: a appears twice"),
        (["a,1,1,1,0,,,,5,2,"], "pods.csv line 2: deletion_time: 2 is before creation_time 5"),
        (["a,1,1,1,0,,,,1,2,,extra"], "pods.csv line 2: 12 fields, the header has 11"),
    ],
)
def test_bad_pod_rows_are_one_line_errors(tmp_path: Path, lines: list[str], message: str) -> None:
    path = _csv(tmp_path, "pods.csv", HEADER, *lines)
    with pytest.raises(TraceError) as caught:
        load_pods(path)
    assert str(caught.value).startswith(message), str(caught.value)
    assert "\n" not in str(caught.value)


def test_bad_files_are_one_line_errors(tmp_path: Path) -> None:
    cases: list[tuple[Path, str]] = [
        (tmp_path / "absent.csv", "cannot read"),
        (_csv(tmp_path, "empty.csv", ""), "empty.csv: empty file"),
        (
            _csv(tmp_path, "cols.csv", "name,cpu_milli,memory_mib"),
            "cols.csv line 1: missing column(s) num_gpu, gpu_milli",
        ),
    ]
    for path, message in cases:
        with pytest.raises(TraceError) as caught:
            load_pods(path)
        assert message in str(caught.value)
        assert "\n" not in str(caught.value)
    nodes = _csv(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model", "n1,1000,1024,2,")
    with pytest.raises(TraceError, match=r"^nodes.csv line 2: model: empty on a node with 2 GPUs$"):
        load_nodes(nodes)
    nodes = _csv(tmp_path, "nodes.csv", "sn,cpu_milli,memory_mib,gpu,model", "n1,1000,1024,two,T4")
    with pytest.raises(TraceError, match=r"^nodes.csv line 2: gpu: 'two' is not an integer$"):
        load_nodes(nodes)


# --- the paper's sequence ---------------------------------------------------------------------------------------


class Scripted(random.Random):
    """An RNG whose shuffle reverses and whose randrange answers from a script, recording every call."""

    def __init__(self, draws: Sequence[int]) -> None:
        super().__init__(0)
        self.draws = list(draws)
        self.calls: list[tuple[str, int]] = []

    def shuffle(self, x: Any) -> None:
        self.calls.append(("shuffle", len(x)))
        x.reverse()

    def randrange(self, start: int, *args: Any, **kwargs: Any) -> int:
        self.calls.append(("randrange", start))
        return self.draws.pop(0)


# name-sorted: a (1 whole GPU), b (a share of 500), c (8 whole GPUs), d (CPU only); in the file unsorted
POOL = [
    TracePod("d", 100, 10, 0, 0),
    TracePod("c", 100, 10, 8, 1000),
    TracePod("a", 100, 10, 1, 1000),
    TracePod("b", 100, 10, 1, 500),
]  # total GPU demand 9500


def _names(pods: Sequence[TracePod]) -> list[str]:
    return [p.name for p in pods]


def test_tune_up_samples_the_name_sorted_originals_and_appends_clones() -> None:
    # capacity 10000, ratio 1.3: target 13000. Draws index the name-sorted list a, b, c, d.
    rng = Scripted([3, 1, 0, 0, 1, 0, 2])
    sequence = paper_sequence(POOL, rng, ratio=1.3, capacity_milli=10_000)
    # shuffled originals first (the scripted shuffle reverses the name-sorted list), then the clones:
    # d +0 = 9500, b +500 = 10000, a = 11000, a = 12000, b = 12500; a would make 13500 > 13000: stop
    assert _names(sequence) == ["d", "c", "b", "a", "d-tuned-0", "b-tuned-1", "a-tuned-2", "a-tuned-3", "b-tuned-4"]
    assert sum(p.gpu_total_milli for p in sequence) == 12_500
    assert rng.calls == [("shuffle", 4)] + [("randrange", 4)] * 6  # the stopping draw is consumed, no more
    assert rng.draws == [2]
    assert sequence[5] == TracePod("b-tuned-1", 100, 10, 1, 500)


def test_tune_up_stops_on_the_per_gpu_milli_so_a_multi_gpu_clone_overshoots() -> None:
    # 9500 + c's per-GPU 1000 <= 13000 passes (its total 8000 would not): c is cloned and the total is 17500
    rng = Scripted([2, 0])
    sequence = paper_sequence(POOL, rng, ratio=1.3, capacity_milli=10_000)
    assert _names(sequence) == ["d", "c", "b", "a", "c-tuned-0"]
    assert sum(p.gpu_total_milli for p in sequence) == 17_500


def test_tune_down_removes_random_pods_of_the_shuffled_list_until_at_or_below_the_target() -> None:
    # capacity 5000, ratio 1.3: target 6500 < 9500. Shuffled: d, c, b, a
    rng = Scripted([3, 0, 0, 0])
    sequence = paper_sequence(POOL, rng, ratio=1.3, capacity_milli=5000)
    # remove a (8500), d (8500), c (500 <= 6500): stop
    assert _names(sequence) == ["b"]
    assert rng.calls == [("shuffle", 4), ("randrange", 4), ("randrange", 3), ("randrange", 2)]


def test_a_trace_exactly_at_the_target_is_only_shuffled() -> None:
    rng = Scripted([])
    assert _names(paper_sequence(POOL, rng, ratio=0.95, capacity_milli=10_000)) == ["d", "c", "b", "a"]
    assert rng.calls == [("shuffle", 4)]


def test_the_same_seed_gives_the_same_sequence_and_leaves_the_rng_in_the_same_state() -> None:
    first_rng, second_rng = random.Random(7), random.Random(7)
    first = paper_sequence(POOL, first_rng, capacity_milli=10_000)
    second = paper_sequence(POOL, second_rng, capacity_milli=10_000)
    assert first == second
    assert first_rng.random() == second_rng.random()
    others = {tuple(_names(paper_sequence(POOL, random.Random(seed), capacity_milli=10_000))) for seed in range(20)}
    assert len(others) > 1


def test_tuning_that_cannot_end_is_an_error() -> None:
    with pytest.raises(TraceError, match="no pod asks for a GPU"):
        paper_sequence([TracePod("x", 1, 1, 0, 0)], random.Random(1), capacity_milli=1000)
    with pytest.raises(TraceError, match="no GPU capacity"):
        paper_sequence(POOL, random.Random(1), capacity_milli=0)


# --- nodes and pods as Kubernetes objects ------------------------------------------------------------------------


def test_node_specs_carry_the_trace_resources_and_the_gpu_model_label() -> None:
    gpu, cpu = node_specs([TraceNode("openb-node-0001", 64000, 262144, 2, "P100"), TraceNode("c1", 32000, 1024, 0, "")])
    assert gpu.capacity == gpu.allocatable
    assert {k: gpu.capacity[k] for k in ("cpu", "memory", "pods", GPU_RESOURCE)} == {
        "cpu": "64000m",
        "memory": "262144Mi",
        "pods": "1001",
        GPU_RESOURCE: "2",
    }
    assert gpu.labels[GPU_MODEL_LABEL] == "P100"
    assert gpu.labels["kubernetes.io/hostname"] == "openb-node-0001"
    assert (gpu.pod_cidr, cpu.pod_cidr) == ("10.244.0.0/24", "10.244.1.0/24")
    assert gpu.address != cpu.address
    assert GPU_RESOURCE not in cpu.capacity
    assert GPU_MODEL_LABEL not in cpu.labels


def _container(manifest: dict[str, Any]) -> dict[str, Any]:
    (container,) = manifest["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def test_pod_manifests_ask_for_whole_gpus_shares_and_models_as_the_gpu_model_reads_them() -> None:
    whole = pod_manifest(TracePod("w", 12000, 16384, 2, 1000, ("V100M16", "V100M32")), scheduler_name="gpu")
    assert whole["metadata"] == {"name": "w", "namespace": "default"}
    resources = _container(whole)["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "12000m", "memory": "16384Mi", GPU_RESOURCE: "2"}
    assert whole["spec"]["schedulerName"] == "gpu"
    assert whole["spec"]["restartPolicy"] == "Always"  # runs until the trace deletes it (no batch run time)
    assert gpu_request(whole) == GpuRequest(2, 1000, frozenset({"V100M16", "V100M32"}))
    terms = whole["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms == {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": ["V100M16", "V100M32"]}]}
        ]
    }

    share = pod_manifest(TracePod("s", 6000, 12288, 1, 460), namespace="trace")
    assert share["metadata"] == {"name": "s", "namespace": "trace", "annotations": {GPU_MILLI_ANNOTATION: "460"}}
    assert GPU_RESOURCE not in _container(share)["resources"]["limits"]
    assert "affinity" not in share["spec"]
    assert "schedulerName" not in share["spec"]
    assert gpu_request(share) == GpuRequest(1, 460, None)

    cpu = pod_manifest(TracePod("c", 8000, 30517, 0, 0))
    assert gpu_request(cpu) is None
    assert pod_requests(cpu) == {"cpu": 8000, "memory": 30517 * 2**20}
    assert "annotations" not in cpu["metadata"]

    with pytest.raises(TraceError, match="needs num_gpu 1"):
        pod_manifest(TracePod("m", 1, 1, 2, 500))
