"""NodeResourcesBalancedAllocation against upstream's balanced_allocation_test.go (kube-scheduler v1.37, which
scores the change in balance the pod causes and skips best-effort pods), plus property tests holding
``score_vector`` to ``score``. The shared conformance cases run in test_node_resources_fit.py.

Each table row names the upstream case it pins; ``kubeplane`` rows are ours, with the arithmetic in a comment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_resources_balanced_allocation as balanced
from kubeplane.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation

GPU = "nvidia.com/gpu"
DEFAULT_RES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
GPU_RES = [*DEFAULT_RES, {"name": GPU, "weight": 1}]

_counter = iter(range(10**9))


def _pod(*requests: Mapping[str, str], node: str = "", bare_containers: int = 0) -> dict[str, Any]:
    """``st.MakePod().Req(...)``: one container per request list."""
    name = f"p-{next(_counter)}"
    containers: list[dict[str, Any]] = [
        {"name": f"con{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(requests)
    ]
    containers += [{"name": f"bare{i}"} for i in range(bare_containers)]
    spec: dict[str, Any] = {"containers": containers}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def _node(name: str, milli_cpu: int, memory: int, scalars: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Upstream test_util.go makeNode(name, milliCPU, memory, extendedResources): capacity = allocatable."""
    allocatable = {"cpu": f"{milli_cpu}m", "memory": str(memory), **(scalars or {})}
    return {"metadata": {"name": name}, "status": {"capacity": allocatable, "allocatable": allocatable}}


def _node_infos(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]) -> list[NodeInfo]:
    out = []
    for node in nodes:
        name = node["metadata"]["name"]
        out.append(NodeInfo(node, [PodInfo(p) for p in pods if p["spec"].get("nodeName") == name]))
    return out


def _new(args: Mapping[str, Any] | None = None) -> NodeResourcesBalancedAllocation:
    return balanced.new(args or {}, Handle())


def _cpu_only(node: str = "") -> dict[str, Any]:
    return _pod({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}, node=node)


def _cpu_and_memory(node: str = "") -> dict[str, Any]:
    return _pod({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}, node=node)


SKIP = "skip"

CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any], list[Any], list[Any], list[int] | str]] = [
    # (case, resources, pod, nodes, existing pods, scores or SKIP)
    (
        "nothing scheduled, nothing requested",
        DEFAULT_RES,
        _pod(),
        [_node("node1", 4000, 10000), _node("node2", 4000, 10000)],
        [],
        SKIP,
    ),
    (
        # node1: 3000/4000, 5000/10000: balance 100 -> 87, 50 + (50 + 87 - 100) / 2 = 68
        # node2: 3000/6000, 5000/10000: 100 -> 100, 75
        "nothing scheduled, resources requested, differently sized nodes",
        DEFAULT_RES,
        _cpu_and_memory(),
        [_node("node1", 4000, 10000), _node("node2", 6000, 10000)],
        [],
        [68, 75],
    ),
    (
        "no resources requested, pods scheduled",
        DEFAULT_RES,
        _pod(),
        [_node("node1", 4000, 10000), _node("node2", 4000, 10000)],
        [_pod(node="node1"), _pod(node="node1"), _pod(node="node2"), _pod(node="node2")],
        SKIP,
    ),
    (
        "no resources requested, pods scheduled with resources",
        DEFAULT_RES,
        _pod(),
        [_node("node1", 10000, 20000), _node("node2", 10000, 20000)],
        [_cpu_only("node1"), _cpu_only("node1"), _cpu_only("node2"), _cpu_and_memory("node2")],
        SKIP,
    ),
    (
        # node1: (.3, 0) -> (.6, .25): 85 -> 82, 50 + 47 / 2 = 73
        # node2: (.3, .25) -> (.6, .5): 97 -> 95, 50 + 48 / 2 = 74
        "resources requested, pods scheduled with resources",
        DEFAULT_RES,
        _cpu_and_memory(),
        [_node("node1", 10000, 20000), _node("node2", 10000, 20000)],
        [_cpu_only("node1"), _cpu_and_memory("node2")],
        [73, 74],
    ),
    (
        # node1 as above: 73; node2: (.3, .1) -> (.6, .2): 90 -> 80, 50 + 40 / 2 = 70
        "resources requested, pods scheduled with resources, differently sized nodes",
        DEFAULT_RES,
        _cpu_and_memory(),
        [_node("node1", 10000, 20000), _node("node2", 10000, 50000)],
        [_cpu_only("node1"), _cpu_and_memory("node2")],
        [73, 70],
    ),
    (
        # node1: (.5, 0) -> (1, 0): 75 -> 50, 50 + 25 / 2 = 62; node2: (.5, .5) -> (1, .5): 100 -> 75, 62
        "requested resources at node capacity",
        DEFAULT_RES,
        _cpu_only(),
        [_node("node1", 6000, 10000), _node("node2", 6000, 10000)],
        [_cpu_only("node1"), _cpu_and_memory("node2")],
        [62, 62],
    ),
    (
        # node1: (0, 0, 0) -> (3000/3500, 5000/40000, 1/4): std 0.3198, 100 -> 68, 50 + 18 / 2 = 59
        # node2 has no gpu, so only cpu and memory: 100 -> 63, 50 + 13 / 2 = 56
        "include scalar resource on a node for balanced resource allocation",
        GPU_RES,
        _pod({"cpu": "1000m", "memory": "2000", GPU: "1"}, {"cpu": "2000m", "memory": "3000"}),
        [_node("node1", 3500, 40000, {GPU: "4"}), _node("node2", 3500, 40000)],
        [],
        [59, 56],
    ),
    (
        # the pod requests no gpu, so the gpu is left out: (3000/3500, 5000/40000): 100 -> 63, 56
        "scalar resource is not included in the score computation if pod doesn't request the scalar resource",
        GPU_RES,
        _cpu_and_memory(),
        [_node("node1", 3500, 40000, {GPU: "8"}), _node("node2", 3500, 40000)],
        [],
        [56, 56],
    ),
    (
        # kubeplane: nothing is scored on nodes without allocatable: balance 100 -> 100, 75
        "kubeplane: zero node resources, resources requested",
        DEFAULT_RES,
        _cpu_and_memory(),
        [_node("node1", 0, 0), _node("node2", 0, 0)],
        [_cpu_only("node1"), _cpu_and_memory("node2")],
        [75, 75],
    ),
    (
        # kubeplane: node1 (.5, 0) -> (.5, .5): 75 -> 100, 50 + 75 / 2 = 87; node2 (0, 0) -> (0, .5): 100 -> 75, 62
        "kubeplane: the pod that evens out a node scores higher",
        DEFAULT_RES,
        _pod({"memory": "5000"}),
        [_node("node1", 4000, 10000), _node("node2", 4000, 10000)],
        [_pod({"cpu": "2000m"}, node="node1")],
        [87, 62],
    ),
    (
        # kubeplane: plain requests, not the non-zero defaults: the bare container counts 0 cpu, 0 memory
        "kubeplane: containers without requests count nothing",
        DEFAULT_RES,
        _pod({"cpu": "1000m"}, bare_containers=2),
        [_node("node1", 4000, 10000)],
        [_pod(bare_containers=3, node="node1")],
        [68],  # (0, 0) -> (.25, 0): 100 -> 87, 50 + 37 / 2 = 68 (non-zero defaults would have made it (.325, .06))
    ),
]


@pytest.mark.parametrize(
    ("resources", "pod", "nodes", "existing", "want"),
    [case[1:] for case in CASES],
    ids=[f"TestNodeResourcesBalancedAllocation/{case[0]}" for case in CASES],
)
def test_node_resources_balanced_allocation(
    resources: list[dict[str, Any]],
    pod: dict[str, Any],
    nodes: list[Any],
    existing: list[Any],
    want: list[int] | str,
) -> None:
    plugin = _new({"resources": resources})
    infos = _node_infos(nodes, existing)
    state, info = CycleState(), PodInfo(pod)
    status = plugin.pre_score(state, info, infos)
    if want == SKIP:
        assert status is not None
        assert status.code == Code.SKIP
        return
    assert status is None
    scores = []
    for ni in infos:
        score, score_status = plugin.score(state, info, ni)
        assert score_status is None
        scores.append(score)
    assert scores == want
    rows = np.arange(len(infos), dtype=np.int64)
    assert plugin.score_vector(state, info, NodeTable(infos), rows).tolist() == want


def test_best_effort_means_no_request_for_the_configured_resources() -> None:
    """Upstream isBestEffortPod looks only at the configured resources: a gpu-only pod is best effort for the
    default cpu/memory configuration, not for one that scores the gpu."""
    pod = PodInfo(_pod({GPU: "1"}))
    skip = _new().pre_score(CycleState(), pod, [])
    assert skip is not None
    assert skip.code == Code.SKIP
    assert _new({"resources": GPU_RES}).pre_score(CycleState(), pod, []) is None


def test_score_without_pre_score_state_recomputes() -> None:
    """Upstream Score computes the pod's requests itself when PreScore state is missing (no skip there)."""
    plugin = _new()
    infos = _node_infos([_node("node1", 4000, 10000)], [])
    state, pod = CycleState(), PodInfo(_cpu_and_memory())
    assert plugin.score(state, pod, infos[0]) == (68, None)
    assert plugin.score_vector(state, pod, NodeTable(infos), np.arange(1, dtype=np.int64)).tolist() == [68]
    assert plugin.score(state, PodInfo(_pod()), infos[0]) == (75, None)


def test_plugin_surface_and_defaults() -> None:
    plugin = _new()
    assert plugin.name() == balanced.NAME == "NodeResourcesBalancedAllocation"
    assert plugin.score_extensions() is None
    assert [(r.name, r.weight) for r in plugin.scorer.resources] == [("cpu", 1), ("memory", 1)]
    assert plugin.scorer.use_requested
    custom = _new({"resources": [{"name": "memory", "weight": 0}, {"name": GPU, "weight": 4}]})
    assert [(r.name, r.weight) for r in custom.scorer.resources] == [("memory", 1), (GPU, 4)]


# --- properties ---------------------------------------------------------------------------------------------

_QUANTITY = st.integers(min_value=0, max_value=6000)


@st.composite
def _requests(draw: st.DrawFn) -> dict[str, str]:
    out: dict[str, str] = {}
    if draw(st.booleans()):
        out["cpu"] = f"{draw(_QUANTITY)}m"
    if draw(st.booleans()):
        out["memory"] = f"{draw(_QUANTITY)}Mi"
    if draw(st.integers(0, 2)) == 0:
        out["ephemeral-storage"] = f"{draw(_QUANTITY)}Mi"
    if draw(st.integers(0, 2)) == 0:
        out[GPU] = str(draw(st.integers(0, 4)))
    return out


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[list[NodeInfo], dict[str, Any]]:
    count = draw(st.integers(1, 8))
    nodes = []
    for i in range(count):
        allocatable = {
            "cpu": f"{draw(st.integers(0, 8000))}m",
            "memory": f"{draw(st.integers(0, 8000))}Mi",
            "ephemeral-storage": f"{draw(st.integers(0, 8000))}Mi",
            "pods": "110",
        }
        if draw(st.booleans()):
            allocatable[GPU] = str(draw(st.integers(0, 8)))
        nodes.append({"metadata": {"name": f"node{i}"}, "status": {"allocatable": allocatable}})
    existing = []
    for _ in range(draw(st.integers(0, 10))):
        containers = draw(st.lists(_requests(), max_size=3))
        existing.append(
            _pod(*containers, node=f"node{draw(st.integers(0, count - 1))}", bare_containers=draw(st.integers(0, 1)))
        )
    pod = _pod(*draw(st.lists(_requests(), min_size=1, max_size=3)), bare_containers=draw(st.integers(0, 1)))
    return _node_infos(nodes, existing), pod


_RESOURCE_SETS = st.sampled_from(
    [
        DEFAULT_RES,
        GPU_RES,
        [{"name": "ephemeral-storage", "weight": 1}, *GPU_RES],
        [{"name": "memory", "weight": 1}],
        [{"name": GPU, "weight": 1}, {"name": "pods", "weight": 1}, {"name": "cpu", "weight": 2}],
    ]
)


@settings(max_examples=400, deadline=None)
@given(cluster=_cluster(), resources=_RESOURCE_SETS, data=st.data())
def test_score_vector_matches_score(
    cluster: tuple[list[NodeInfo], dict[str, Any]], resources: list[dict[str, Any]], data: st.DataObject
) -> None:
    infos, pod = cluster
    plugin = _new({"resources": resources})
    state, info = CycleState(), PodInfo(pod)
    status = plugin.pre_score(state, info, infos)
    assert status is None or status.code == Code.SKIP  # score_vector still has to agree (it recomputes)
    rows = np.array(data.draw(st.permutations(range(len(infos)))), dtype=np.int64)
    want = [plugin.score(state, info, infos[i])[0] for i in rows]
    assert plugin.score_vector(state, info, NodeTable(infos), rows).tolist() == want
    assert all(50 <= score <= 100 for score in want)


@settings(max_examples=200, deadline=None)
@given(
    stream=st.lists(st.lists(_requests(), min_size=1, max_size=2), min_size=1, max_size=12),
    resources=_RESOURCE_SETS,
)
def test_pre_score_state_shared_by_requests_is_the_pods_own(
    stream: list[list[dict[str, str]]], resources: list[dict[str, Any]]
) -> None:
    """The PreScore state is kept per pod requests (pods of one shape share it): every pod of a stream gets the
    state a plugin that never saw another pod computes for it (fails if the memo's key is coarser than the
    requests, or a state leaks between shapes)."""
    plugin = _new({"resources": resources})
    for containers in stream:
        info = PodInfo(_pod(*containers))
        state, fresh_state, fresh = CycleState(), CycleState(), _new({"resources": resources})
        assert plugin.pre_score(state, info, []) == fresh.pre_score(fresh_state, info, [])
        assert state.get(plugin.score_state_key) == fresh_state.get(plugin.score_state_key)
        assert plugin._score_state(info) == fresh._score_state(info)
