"""NodeResourcesFit against upstream's fit_test.go, least/most_allocated_test.go and
requested_to_capacity_ratio_test.go (kube-scheduler v1.37), the shared conformance cases, and property tests
holding ``filter_vector``/``score_vector`` to ``filter``/``score``.

Each table row names the upstream test function and case it pins. Expectations follow the newest upstream:
a request larger than the node's whole allocatable is UnschedulableAndUnresolvable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, Resource
from kubeplane.scheduler.plugins import node_resources_balanced_allocation as balanced
from kubeplane.scheduler.plugins import node_resources_fit as fit
from kubeplane.scheduler.plugins.helper import go_div
from kubeplane.scheduler.plugins.node_resources_fit import (
    InsufficientResource,
    NodeResourcesFit,
    fits_request,
    is_extended_resource_name,
)
from kubeplane.scheduler.plugins.resource_allocation import (
    ShapePoint,
    broken_linear_vector,
    build_broken_linear_function,
    go_round,
)

from .test_helper import CONFORMANCE_DIR

CONFORMANCE = CONFORMANCE_DIR / "resources.json"

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_IO_A = "kubernetes.io/something"
K8S_IO_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"


# --- object builders (upstream's newResourcePod & co.) ---------------------------------------------------


def _res(cpu: int = 0, memory: int = 0, storage: int = 0, **scalars: int) -> dict[str, str]:
    """A container request as upstream's newResourcePod writes one: cpu (milli), memory, ephemeral-storage,
    plus scalars named by keyword (see :func:`_resource_name`)."""
    out = {"cpu": f"{cpu}m", "memory": str(memory), "ephemeral-storage": str(storage)}
    for key, value in scalars.items():
        out[_resource_name(key)] = str(value)
    return out


def _resource_name(keyword: str) -> str:
    """``example__com__aaa`` -> ``example.com/aaa``, ``hugepages_2Mi`` -> ``hugepages-2Mi``."""
    name = keyword.replace("__com__", ".com/").replace("__io__", ".io/").replace("__", ".")
    return name.replace("_", "-")


def _ext(cpu: int = 0, memory: int = 0, **scalars: int) -> dict[str, str]:
    return _res(cpu, memory, **scalars)


_counter = iter(range(10**9))


def _pod(
    *requests: Mapping[str, str],
    init: Sequence[Mapping[str, str]] = (),
    sidecars: Sequence[Mapping[str, str]] = (),
    overhead: Mapping[str, str] | None = None,
    pod_level: Mapping[str, str] | None = None,
    node: str = "",
    name: str | None = None,
    containers_without_requests: int = 0,
) -> dict[str, Any]:
    """A pod with one container per request list (``st.MakePod().Req(...)``)."""
    name = name or f"p-{next(_counter)}"
    containers: list[dict[str, Any]] = [
        {"name": f"con{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(requests)
    ]
    containers += [{"name": f"bare{i}"} for i in range(containers_without_requests)]
    spec: dict[str, Any] = {"containers": containers}
    init_containers = [
        {"name": f"sidecar{i}", "restartPolicy": "Always", "resources": {"requests": dict(r)}}
        for i, r in enumerate(sidecars)
    ]
    init_containers += [{"name": f"init{i}", "resources": {"requests": dict(r)}} for i, r in enumerate(init)]
    if init_containers:
        spec["initContainers"] = init_containers
    if overhead is not None:
        spec["overhead"] = dict(overhead)
    if pod_level is not None:
        spec["resources"] = {"requests": dict(pod_level)}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def _node(name: str, allocatable: Mapping[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"capacity": dict(allocatable), "allocatable": dict(allocatable)}}


def _make_resources(cpu: int, memory: int, pods: int, ext_a: int, storage: int, hugepages: int) -> dict[str, str]:
    """Upstream makeResources / makeAllocatableResources."""
    return {
        "cpu": f"{cpu}m",
        "memory": str(memory),
        "pods": str(pods),
        EXT_A: str(ext_a),
        "ephemeral-storage": str(storage),
        HUGE_A: str(hugepages),
    }


def _node_infos(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]]) -> list[NodeInfo]:
    out = []
    for node in nodes:
        name = node["metadata"]["name"]
        out.append(NodeInfo(node, [PodInfo(p) for p in pods if p["spec"].get("nodeName") == name]))
    return out


def _run_filter(plugin: NodeResourcesFit, pod: Mapping[str, Any], infos: Sequence[NodeInfo]) -> list[Status | None]:
    state = CycleState()
    info = PodInfo(pod)
    result, status = plugin.pre_filter(state, info, infos)
    assert (result, status) == (None, None)
    statuses = [plugin.filter(state, info, ni) for ni in infos]
    table = NodeTable(infos)
    mask = plugin.filter_vector(state, info, table, np.arange(len(infos), dtype=np.int64))
    assert mask.tolist() == [s is None for s in statuses]
    return statuses


def _run_score(plugin: Any, pod: Mapping[str, Any], infos: Sequence[NodeInfo]) -> list[int]:
    state = CycleState()
    info = PodInfo(pod)
    assert plugin.pre_score(state, info, infos) is None
    scores = []
    for ni in infos:
        score, status = plugin.score(state, info, ni)
        assert status is None
        scores.append(score)
    table = NodeTable(infos)
    assert plugin.score_vector(state, info, table, np.arange(len(infos), dtype=np.int64)).tolist() == scores
    return scores


def _new(args: Mapping[str, Any] | None = None) -> NodeResourcesFit:
    return fit.new(args or {}, Handle())


# --- Filter: TestEnoughRequests ----------------------------------------------------------------------------

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _insufficient(name: str, requested: int, used: int, capacity: int) -> InsufficientResource:
    reason = "Too many pods" if name == "pods" else f"Insufficient {name}"
    return InsufficientResource(name, reason, requested, used, capacity, requested > capacity and name != "pods")


ENOUGH_REQUESTS: list[tuple[str, dict[str, Any], dict[str, str], dict[str, Any], list[InsufficientResource]]] = [
    ("no resources requested always fits", _pod(), _res(10, 20), {}, []),
    (
        "too many resources fails",
        _pod(_res(1, 1)),
        _res(10, 20),
        {},
        [_insufficient("cpu", 1, 10, 10), _insufficient("memory", 1, 20, 20)],
    ),
    (
        "too many resources fails due to init container cpu",
        _pod(_res(1, 1), init=[_res(3, 1)]),
        _res(8, 19),
        {},
        [_insufficient("cpu", 3, 8, 10)],
    ),
    (
        "too many resources fails due to highest init container cpu",
        _pod(_res(1, 1), init=[_res(3, 1), _res(2, 1)]),
        _res(8, 19),
        {},
        [_insufficient("cpu", 3, 8, 10)],
    ),
    (
        "too many resources fails due to init container memory",
        _pod(_res(1, 1), init=[_res(1, 3)]),
        _res(9, 19),
        {},
        [_insufficient("memory", 3, 19, 20)],
    ),
    (
        "too many resources fails due to highest init container memory",
        _pod(_res(1, 1), init=[_res(1, 3), _res(1, 2)]),
        _res(9, 19),
        {},
        [_insufficient("memory", 3, 19, 20)],
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        _pod(_res(1, 1), init=[_res(1, 1)]),
        _res(9, 19),
        {},
        [],
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init containers",
        _pod(_res(1, 1), init=[_res(1, 1), _res(1, 1)]),
        _res(9, 19),
        {},
        [],
    ),
    ("both resources fit", _pod(_res(1, 1)), _res(5, 5), {}, []),
    ("one resource memory fits", _pod(_res(2, 1)), _res(9, 5), {}, [_insufficient("cpu", 2, 9, 10)]),
    ("one resource cpu fits", _pod(_res(1, 2)), _res(5, 19), {}, [_insufficient("memory", 2, 19, 20)]),
    ("equal edge case", _pod(_res(5, 1)), _res(5, 19), {}, []),
    ("equal edge case for init container", _pod(_res(4, 1), init=[_res(5, 1)]), _res(5, 19), {}, []),
    ("extended resource fits", _pod(_ext(example__com__aaa=1)), _res(), {}, []),
    ("extended resource fits for init container", _pod(_res(), init=[_ext(example__com__aaa=1)]), _res(), {}, []),
    (
        "extended resource capacity enforced",
        _pod(_ext(1, 1, example__com__aaa=10)),
        _ext(example__com__aaa=0),
        {},
        [_insufficient(EXT_A, 10, 0, 5)],
    ),
    (
        "extended resource capacity enforced for init container",
        _pod(_res(), init=[_ext(1, 1, example__com__aaa=10)]),
        _ext(example__com__aaa=0),
        {},
        [_insufficient(EXT_A, 10, 0, 5)],
    ),
    (
        "extended resource allocatable enforced",
        _pod(_ext(1, 1, example__com__aaa=1)),
        _ext(example__com__aaa=5),
        {},
        [_insufficient(EXT_A, 1, 5, 5)],
    ),
    (
        "extended resource allocatable enforced for init container",
        _pod(_res(), init=[_ext(1, 1, example__com__aaa=1)]),
        _ext(example__com__aaa=5),
        {},
        [_insufficient(EXT_A, 1, 5, 5)],
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        _pod(_ext(1, 1, example__com__aaa=3), _ext(1, 1, example__com__aaa=3)),
        _ext(example__com__aaa=2),
        {},
        [_insufficient(EXT_A, 6, 2, 5)],
    ),
    (
        "extended resource allocatable admits multiple init containers",
        _pod(_res(), init=[_ext(1, 1, example__com__aaa=3), _ext(1, 1, example__com__aaa=3)]),
        _ext(example__com__aaa=2),
        {},
        [],
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        _pod(_res(), init=[_ext(1, 1, example__com__aaa=6), _ext(1, 1, example__com__aaa=3)]),
        _ext(example__com__aaa=2),
        {},
        [_insufficient(EXT_A, 6, 2, 5)],
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        _pod(_ext(1, 1, example__com__bbb=1)),
        _res(),
        {},
        [_insufficient(EXT_B, 1, 0, 0)],
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        _pod(_res(), init=[_ext(1, 1, example__com__bbb=1)]),
        _res(),
        {},
        [_insufficient(EXT_B, 1, 0, 0)],
    ),
    (
        "kubernetes.io resource capacity enforced",
        _pod(_ext(1, 1, kubernetes__io__something=10)),
        _res(),
        {},
        [_insufficient(K8S_IO_A, 10, 0, 0)],
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        _pod(_res(), init=[_ext(1, 1, subdomain__kubernetes__io__something=10)]),
        _res(),
        {},
        [_insufficient(K8S_IO_B, 10, 0, 0)],
    ),
    (
        "hugepages resource capacity enforced",
        _pod(_ext(1, 1, hugepages_2Mi=10)),
        _ext(hugepages_2Mi=0),
        {},
        [_insufficient(HUGE_A, 10, 0, 5)],
    ),
    (
        "hugepages resource capacity enforced for init container",
        _pod(_res(), init=[_ext(1, 1, hugepages_2Mi=10)]),
        _ext(hugepages_2Mi=0),
        {},
        [_insufficient(HUGE_A, 10, 0, 5)],
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        _pod(_ext(1, 1, hugepages_2Mi=3), _ext(1, 1, hugepages_2Mi=3)),
        _ext(hugepages_2Mi=2),
        {},
        [_insufficient(HUGE_A, 6, 2, 5)],
    ),
    (
        "skip checking ignored extended resource",
        _pod(_ext(1, 1, example__com__bbb=2)),
        _res(),
        {"ignoredResources": [EXT_B]},
        [],
    ),
    (
        "resources + pod overhead fits",
        _pod(_res(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        _res(5, 5),
        {},
        [],
    ),
    (
        "requests + overhead does not fit for memory",
        _pod(_res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        _res(5, 5),
        {},
        [_insufficient("memory", 16, 5, 20)],
    ),
    (
        "skip checking ignored extended resource via resource groups",
        _pod(_ext(1, 1, example__com__bbb=1, kubernetes__io__something=1)),
        _res(),
        {"ignoredResourceGroups": ["example.com"]},
        [_insufficient(K8S_IO_A, 1, 0, 0)],
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        _pod(_ext(1, 1, example__com__aaa=0)),
        _ext(example__com__aaa=6),
        {},
        [],
    ),
    (
        "skip checking resource request with quantity zero",
        _pod(_ext(example__com__aaa=1)),
        _ext(20, 30, example__com__aaa=1),
        {},
        [],
    ),
    (
        "pod-level cpu resource not fit",
        _pod(_res(1, 1), pod_level={"cpu": "7m", "memory": "2"}),
        _res(5, 5),
        {},
        [_insufficient("cpu", 7, 5, 10)],
    ),
    (
        "kubeplane: pod-level memory resource not fit",
        _pod(_res(1, 1), pod_level={"cpu": "2m", "memory": "16"}),
        _res(5, 5),
        {},
        [_insufficient("memory", 16, 5, 20)],
    ),
    ("pod-level hugepages resource fit", _pod(pod_level={HUGE_A: "3"}), _res(), {}, []),
    (
        "pod-level hugepages resource not fit",
        _pod(pod_level={HUGE_A: "10"}),
        _res(),
        {},
        [_insufficient(HUGE_A, 10, 0, 5)],
    ),
    (
        # not upstream: every failing resource is reported, scalars in name order after the native ones
        "kubeplane: all failures in upstream order, scalars by name",
        _pod(_res(11, 1, 1, hugepages_2Mi=1, example__com__bbb=1, example__com__aaa=1)),
        _res(0, 20, 20, hugepages_2Mi=5, example__com__aaa=5),
        {},
        [
            _insufficient("cpu", 11, 0, 10),
            _insufficient("memory", 1, 20, 20),
            _insufficient("ephemeral-storage", 1, 20, 20),
            _insufficient(EXT_A, 1, 5, 5),
            _insufficient(EXT_B, 1, 0, 0),
            _insufficient(HUGE_A, 1, 5, 5),
        ],
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "args", "want"),
    [case[1:] for case in ENOUGH_REQUESTS],
    ids=[f"TestEnoughRequests/{case[0]}" for case in ENOUGH_REQUESTS],
)
def test_enough_requests(
    pod: dict[str, Any], existing: dict[str, str], args: dict[str, Any], want: list[InsufficientResource]
) -> None:
    node = _node("node1", _make_resources(10, 20, 32, 5, 20, 5))
    infos = _node_infos([node], [_pod(existing, node="node1")])
    (status,) = _run_filter(_new(args), pod, infos)
    ignored = args.get("ignoredResources"), args.get("ignoredResourceGroups")
    assert fits_request(PodInfo(pod).requests, infos[0], *ignored) == want
    if not want:
        assert status is None
    else:
        code = UU if any(r.unresolvable for r in want) else U
        assert status == Status(code, tuple(r.reason for r in want))


# --- Filter: TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers ---------------------

NOT_ENOUGH: list[tuple[str, dict[str, Any], dict[str, str], Status]] = [
    (
        "even without specified resources, predicate fails when there's no space for additional pod",
        _pod(),
        _res(10, 20),
        Status(U, ("Too many pods",)),
    ),
    (
        "even if both resources fit, predicate fails when there's no space for additional pod",
        _pod(_res(1, 1)),
        _res(5, 5),
        Status(U, ("Too many pods",)),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod",
        _pod(_res(5, 1)),
        _res(5, 19),
        Status(U, ("Too many pods",)),
    ),
    (
        "even for equal edge case, predicate fails when there's no space for additional pod due to init container",
        _pod(_res(5, 1), init=[_res(5, 1)]),
        _res(5, 19),
        Status(U, ("Too many pods",)),
    ),
    (
        "kubeplane: too many pods comes first and never makes the status unresolvable",
        _pod(_res(6, 1)),
        _res(5, 19),
        Status(U, ("Too many pods", "Insufficient cpu")),
    ),
    (
        "kubeplane: a request above allocatable makes it unresolvable",
        _pod(_res(11, 1)),
        _res(5, 19),
        Status(UU, ("Too many pods", "Insufficient cpu")),
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [case[1:] for case in NOT_ENOUGH],
    ids=[f"TestNotEnoughRequests/{case[0]}" for case in NOT_ENOUGH],
)
def test_not_enough_requests(pod: dict[str, Any], existing: dict[str, str], want: Status) -> None:
    node = _node("node1", {"cpu": "10m", "memory": "20", "pods": "1"})
    infos = _node_infos([node], [_pod(existing, node="node1")])
    assert _run_filter(_new(), pod, infos) == [want]


STORAGE: list[tuple[str, dict[str, Any], dict[str, str], Status | None]] = [
    ("empty storage requested, and pod fits", _pod(_res(1, 1)), _res(2, 10), None),
    (
        "storage ephemeral local storage request exceeds allocatable",
        _pod(_res(0, 0, 25)),
        _res(2, 2),
        Status(UU, ("Insufficient ephemeral-storage",)),
    ),
    ("ephemeral local storage is sufficient", _pod(_res(0, 0, 5)), _res(2, 2, 10), None),
    ("pod fits", _pod(_res(0, 0, 10)), _res(2, 2), None),
    (
        "kubeplane: a request above what is left is resolvable",
        _pod(_res(1, 1)),
        _res(10, 10),
        Status(U, ("Insufficient cpu",)),
    ),
    (
        "kubeplane: ephemeral storage in use leaves too little",
        _pod(_res(0, 0, 10)),
        _res(2, 2, 15),
        Status(U, ("Insufficient ephemeral-storage",)),
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [case[1:] for case in STORAGE],
    ids=[f"TestStorageRequests/{case[0]}" for case in STORAGE],
)
def test_storage_requests(pod: dict[str, Any], existing: dict[str, str], want: Status | None) -> None:
    node = _node("node1", _make_resources(10, 20, 32, 5, 20, 5))
    infos = _node_infos([node], [_pod(existing, node="node1")])
    assert _run_filter(_new(), pod, infos) == [want]


RESTARTABLE_INIT: list[tuple[str, dict[str, Any], Status | None]] = [
    (
        "allow pod with restartable init containers if sidecar containers is enabled",
        _pod({"cpu": "1m"}, sidecars=[{"cpu": "1m"}]),
        None,
    ),
    (
        "not allow pod if the total requested resources do exceed the node's allocatable resources",
        _pod({"cpu": "1m"}, sidecars=[{"cpu": "2m"}]),
        Status(UU, ("Insufficient cpu",)),
    ),
    (
        "kubeplane: a regular init container runs next to the sidecars started before it",
        _pod({"cpu": "1m"}, sidecars=[{"cpu": "1m"}], init=[{"cpu": "2m"}]),
        Status(UU, ("Insufficient cpu",)),
    ),
]


@pytest.mark.parametrize(
    ("pod", "want"),
    [case[1:] for case in RESTARTABLE_INIT],
    ids=[f"TestRestartableInitContainers/{case[0]}" for case in RESTARTABLE_INIT],
)
def test_restartable_init_containers(pod: dict[str, Any], want: Status | None) -> None:
    infos = _node_infos([_node("node1", {"cpu": "2m", "pods": "1"})], [])
    assert _run_filter(_new(), pod, infos) == [want]


def test_filter_without_pre_filter_state_is_an_error() -> None:
    """Upstream TestPreFilterDisabled: ``error reading "PreFilterNodeResourcesFit" from cycleState``; the vector
    form rejects every node."""
    plugin = _new()
    infos = _node_infos([_node("node1", _make_resources(10, 20, 32, 5, 20, 5))], [])
    state, pod = CycleState(), PodInfo(_pod(_res(1, 1)))
    status = plugin.filter(state, pod, infos[0])
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('error reading "PreFilterNodeResourcesFit" from cycleState: not found',)
    assert plugin.filter_vector(state, pod, NodeTable(infos), np.arange(1, dtype=np.int64)).tolist() == [False]


def test_pre_filter_state_survives_clone() -> None:
    plugin = _new()
    infos = _node_infos([_node("node1", _make_resources(10, 20, 32, 5, 20, 5))], [])
    state, pod = CycleState(), PodInfo(_pod(_res(11, 1)))
    plugin.pre_filter(state, pod, infos)
    assert plugin.filter(state.clone(), pod, infos[0]) == Status(UU, ("Insufficient cpu",))


@pytest.mark.parametrize(
    ("name", "extended"),
    [
        ("example.com/aaa", True),
        ("nvidia.com/gpu", True),
        ("kubernetes.io/something", False),
        ("subdomain.kubernetes.io/something", False),
        ("hugepages-2Mi", False),
        ("cpu", False),
        ("requests.example.com/x", False),
        ("Example.com/x", False),
        ("example.com/", False),
        ("a/b/c", False),
    ],
    ids=str,
)
def test_is_extended_resource_name(name: str, extended: bool) -> None:
    """Upstream v1helper.IsExtendedResourceName; only these can be ignored by ignoredResources(Groups)."""
    assert is_extended_resource_name(name) is extended


def test_ignored_resources_never_skip_native_or_hugepages() -> None:
    node = NodeInfo(_node("node1", {"pods": "10"}))
    request = Resource.from_natural({HUGE_A: 1, K8S_IO_A: 1})
    got = fits_request(request, node, {HUGE_A, K8S_IO_A}, {"kubernetes.io"})
    assert [r.reason for r in got] == [f"Insufficient {HUGE_A}", f"Insufficient {K8S_IO_A}"]


# --- plugin surface -----------------------------------------------------------------------------------------


def test_plugin_surface_and_defaults() -> None:
    plugin = _new()
    assert plugin.name() == fit.NAME == "NodeResourcesFit"
    assert plugin.pre_filter_extensions() is None
    assert plugin.score_extensions() is None
    assert plugin.scorer.name == "LeastAllocated"
    assert [(r.name, r.weight) for r in plugin.scorer.resources] == [("cpu", 1), ("memory", 1)]
    assert plugin.ignored_resources == frozenset()
    assert plugin.ignored_resource_groups == frozenset()


def test_factory_takes_v1_args_with_defaults_applied() -> None:
    args = {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 3}, {"name": "nvidia.com/gpu"}],
        },
        "ignoredResources": ["example.com/x"],
        "ignoredResourceGroups": ["example.org"],
    }
    plugin = _new(args)
    assert plugin.scorer.name == "MostAllocated"
    assert [(r.name, r.weight) for r in plugin.scorer.resources] == [("cpu", 3), ("nvidia.com/gpu", 1)]
    assert plugin.ignored_resources == {"example.com/x"}
    assert plugin.ignored_resource_groups == {"example.org"}


@pytest.mark.parametrize(
    "args",
    [
        {"scoringStrategy": {"type": "Bogus"}},
        {"scoringStrategy": {"type": "RequestedToCapacityRatio", "resources": [{"name": "cpu", "weight": 1}]}},
    ],
    ids=["unsupported strategy", "RequestedToCapacityRatio without shape"],
)
def test_factory_rejects_bad_args(args: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"scoring strategy|shape"):
        _new(args)


def test_events_to_register() -> None:
    """Upstream with queueing hints: Pod Delete|UpdatePodScaleDown, Node Add|UpdateNodeAllocatable, and with
    DRAExtendedResource (on in v1.37) DeviceClass Add|Update."""
    events = _new().events_to_register()
    assert [e.event for e in events] == [
        ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
        ClusterEvent("DeviceClass", ActionType.ADD | ActionType.update()),
    ]
    assert all(e.hint is not None for e in events)


def _hint_pod() -> PodInfo:
    return PodInfo(_pod({"cpu": "2", "memory": "1Gi"}, name="target"))


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (_pod({"cpu": "1"}, name="other"), None, QueueingHint.QUEUE_SKIP),
        (_pod({"cpu": "1"}, name="other", node="node1"), None, QueueingHint.QUEUE),
        (
            _pod({"cpu": "2"}, name="other", node="node1"),
            _pod({"cpu": "1"}, name="other", node="node1"),
            QueueingHint.QUEUE,
        ),
        (
            _pod({"nvidia.com/gpu": "2"}, name="other", node="node1"),
            _pod({"nvidia.com/gpu": "1"}, name="other", node="node1"),
            QueueingHint.QUEUE_SKIP,
        ),
        (_pod({"cpu": "2"}, name="other"), _pod({"cpu": "1"}, name="other"), QueueingHint.QUEUE_SKIP),
        (_pod({"cpu": "3"}, name="target"), _pod({"cpu": "2"}, name="target"), QueueingHint.QUEUE),
    ],
    ids=[
        "deleted unscheduled pod",
        "deleted scheduled pod",
        "scheduled pod scaled down a resource the pod requests",
        "scheduled pod scaled down a resource the pod does not request",
        "unscheduled pod scaled down",
        "the target pod itself scaled down",
    ],
)
def test_queueing_hint_pod_event(old: Any, new: Any, want: QueueingHint) -> None:
    """Upstream TestFitPodEventHints (isSchedulableAfterPodEvent)."""
    assert _new().is_schedulable_after_pod_event(_hint_pod(), old, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, _node("n", {"cpu": "4", "memory": "4Gi", "pods": "10"}), QueueingHint.QUEUE),
        (None, _node("n", {"cpu": "1", "memory": "4Gi", "pods": "10"}), QueueingHint.QUEUE_SKIP),
        (None, _node("n", {"cpu": "4", "memory": "4Gi", "pods": "0"}), QueueingHint.QUEUE_SKIP),
        (
            _node("n", {"cpu": "1", "memory": "4Gi", "pods": "10"}),
            _node("n", {"cpu": "4", "memory": "4Gi", "pods": "10"}),
            QueueingHint.QUEUE,
        ),
        (
            _node("n", {"cpu": "4", "memory": "4Gi", "pods": "10", "example.com/x": "1"}),
            _node("n", {"cpu": "4", "memory": "4Gi", "pods": "10", "example.com/x": "2"}),
            QueueingHint.QUEUE_SKIP,
        ),
        (
            _node("n", {"cpu": "4", "memory": "4Gi", "pods": "10"}),
            _node("n", {"cpu": "4", "memory": "4Gi", "pods": "11"}),
            QueueingHint.QUEUE,
        ),
    ],
    ids=[
        "node added that fits",
        "node added with too little cpu",
        "node added without pod slots",
        "node updated with more cpu",
        "node updated with more of a resource the pod does not request",
        "node updated with more pod slots",
    ],
)
def test_queueing_hint_node_change(old: Any, new: Any, want: QueueingHint) -> None:
    """Upstream TestFitNodeEventHints (isSchedulableAfterNodeChange)."""
    assert _new().is_schedulable_after_node_change(_hint_pod(), old, new) == want


# --- Score ----------------------------------------------------------------------------------------------------

DEFAULT_RES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXTENDED_RES = [*DEFAULT_RES, {"name": "intel.com/foo", "weight": 1}]


def _cap(name: str, **capacity: str) -> dict[str, Any]:
    """``st.MakeNode().Capacity(...)``: capacity = allocatable, plus 32 pod slots."""
    allocatable = {_resource_name(k): v for k, v in capacity.items()}
    return _node(name, {"pods": "32", **allocatable})


_REQ_A = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})  # the usual two-container pod

SCORE_CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], list[Any], list[Any], list[int]]] = [
    # (upstream test, case, scoringStrategy, pod, nodes, existing pods, scores)
    (
        "TestLeastAllocatedScoringStrategy",
        "nothing scheduled, nothing requested",
        {"type": "LeastAllocated", "resources": DEFAULT_RES},
        _pod(),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="4000", memory="10000")],
        [],
        [100, 100],
    ),
    (
        "TestLeastAllocatedScoringStrategy",
        "nothing scheduled, resources requested, differently sized nodes",
        {"type": "LeastAllocated", "resources": DEFAULT_RES},
        _pod(*_REQ_A),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="6000", memory="10000")],
        [],
        [37, 50],
    ),
    (
        "TestLeastAllocatedScoringStrategy",
        "no resources requested, pods scheduled with resources",
        {"type": "LeastAllocated", "resources": DEFAULT_RES},
        _pod(),
        [_cap("node1", cpu="10000", memory="20000"), _cap("node2", cpu="10000", memory="20000")],
        [
            _pod({"cpu": "3000", "memory": "0"}, node="node1"),
            _pod({"cpu": "3000", "memory": "0"}, node="node1"),
            _pod({"cpu": "3000", "memory": "0"}, node="node2"),
            _pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [70, 57],
    ),
    (
        "TestLeastAllocatedScoringStrategy",
        "resources requested, pods scheduled with resources, differently sized nodes",
        {"type": "LeastAllocated", "resources": DEFAULT_RES},
        _pod(*_REQ_A),
        [_cap("node1", cpu="10000", memory="20000"), _cap("node2", cpu="10000", memory="50000")],
        [_pod({"cpu": "3000", "memory": "0"}, node="node1"), _pod({"cpu": "3000", "memory": "5000"}, node="node2")],
        [57, 60],
    ),
    (
        "TestLeastAllocatedScoringStrategy",
        "requested resources exceed node capacity",
        {"type": "LeastAllocated", "resources": DEFAULT_RES},
        _pod({"cpu": "3000", "memory": "0"}),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="4000", memory="10000")],
        [_pod({"cpu": "3000", "memory": "0"}, node="node1"), _pod({"cpu": "3000", "memory": "5000"}, node="node2")],
        [50, 25],
    ),
    (
        "TestLeastAllocatedScoringStrategy",
        "zero node resources, pods scheduled with resources",
        {"type": "LeastAllocated", "resources": DEFAULT_RES},
        _pod(),
        [_cap("node1"), _cap("node2")],
        [_pod({"cpu": "3000", "memory": "0"}, node="node1"), _pod({"cpu": "3000", "memory": "5000"}, node="node2")],
        [0, 0],
    ),
    (
        "TestLeastAllocatedScoringStrategy",
        "nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
        {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]},
        _pod(*_REQ_A),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="6000", memory="10000")],
        [],
        [41, 50],
    ),
    (
        "TestLeastAllocatedScoringStrategy",
        "bypass extended resource if the pod does not request",
        {"type": "LeastAllocated", "resources": EXTENDED_RES},
        _pod(*_REQ_A),
        [_cap("node1", cpu="6000", memory="10000"), _cap("node2", cpu="6000", memory="10000", intel__com__foo="4")],
        [],
        [50, 50],
    ),
    (
        "TestLeastAllocatedScoringStrategy",
        "honor extended resource if the pod requests",
        {"type": "LeastAllocated", "resources": EXTENDED_RES},
        _pod({"cpu": "3000", "memory": "5000", "intel.com/foo": "2"}),
        [
            _cap("node1", cpu="6000", memory="10000", intel__com__foo="4"),
            _cap("node2", cpu="6000", memory="10000", intel__com__foo="10"),
        ],
        [],
        [50, 60],
    ),
    (
        "TestMostAllocatedScoringStrategy",
        "nothing scheduled, nothing requested",
        {"type": "MostAllocated", "resources": DEFAULT_RES},
        _pod(),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="4000", memory="10000")],
        [],
        [0, 0],
    ),
    (
        "TestMostAllocatedScoringStrategy",
        "nothing scheduled, resources requested, differently sized nodes",
        {"type": "MostAllocated", "resources": DEFAULT_RES},
        _pod(*_REQ_A),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="6000", memory="10000")],
        [],
        [62, 50],
    ),
    (
        "TestMostAllocatedScoringStrategy",
        "no resources requested, pods scheduled with resources",
        {"type": "MostAllocated", "resources": DEFAULT_RES},
        _pod(),
        [_cap("node1", cpu="10000", memory="20000"), _cap("node2", cpu="10000", memory="20000")],
        [
            _pod({"cpu": "3000", "memory": "0"}, node="node1"),
            _pod({"cpu": "3000", "memory": "0"}, node="node1"),
            _pod({"cpu": "3000", "memory": "0"}, node="node2"),
            _pod({"cpu": "3000", "memory": "5000"}, node="node2"),
        ],
        [30, 42],
    ),
    (
        "TestMostAllocatedScoringStrategy",
        "resources requested equal node capacity",
        {"type": "MostAllocated", "resources": DEFAULT_RES},
        _pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        [_cap("node1", cpu="5000", memory="10000"), _cap("node2", cpu="10000", memory="9000")],
        [],
        [95, 75],
    ),
    (
        "TestMostAllocatedScoringStrategy",
        "nothing scheduled, resources requested, differently sized nodes (weights memory 2, cpu 1)",
        {"type": "MostAllocated", "resources": [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}]},
        _pod(*_REQ_A),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="6000", memory="10000")],
        [],
        [58, 50],
    ),
    (
        "TestMostAllocatedScoringStrategy",
        "no resources requested, pods scheduled, nonzero request for resource",
        {"type": "MostAllocated", "resources": DEFAULT_RES},
        _pod(containers_without_requests=1),
        [_cap("node1", cpu="250m", memory="1000Mi"), _cap("node2", cpu="250m", memory="1000Mi")],
        [_pod(containers_without_requests=1, node="node1"), _pod(containers_without_requests=1, node="node1")],
        [80, 30],
    ),
    (
        "TestMostAllocatedScoringStrategy",
        "honor extended resource if the pod request",
        {"type": "MostAllocated", "resources": EXTENDED_RES},
        _pod({"cpu": "3000", "memory": "5000", "intel.com/foo": "2"}),
        [
            _cap("node1", cpu="6000", memory="10000", intel__com__foo="4"),
            _cap("node2", cpu="6000", memory="10000", intel__com__foo="10"),
        ],
        [],
        [50, 40],
    ),
    (
        "TestMostAllocatedScoringStrategy",
        "if the node doesn't have a resource",
        {
            "type": "MostAllocated",
            "resources": [{"name": "intel.com/foo", "weight": 2}, *DEFAULT_RES],
        },
        _pod({"cpu": "3000", "memory": "4000"}),
        [_cap("node1", cpu="6000", memory="10000"), _cap("node2", cpu="6000", memory="10000", intel__com__foo="4")],
        [],
        [45, 45],
    ),
    (
        "TestRequestedToCapacityRatioScoringStrategy",
        "nothing scheduled, nothing requested (default - least requested nodes have priority)",
        {
            "type": "RequestedToCapacityRatio",
            "resources": DEFAULT_RES,
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
        },
        _pod(),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="4000", memory="10000")],
        [_pod(node="node1"), _pod(node="node1")],
        [100, 100],
    ),
    (
        "TestRequestedToCapacityRatioScoringStrategy",
        "nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have "
        "priority)",
        {
            "type": "RequestedToCapacityRatio",
            "resources": DEFAULT_RES,
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
        },
        _pod(*_REQ_A),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="6000", memory="10000")],
        [_pod(node="node1"), _pod(node="node1")],
        [38, 50],
    ),
    (
        "TestRequestedToCapacityRatioScoringStrategy",
        "no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
        {
            "type": "RequestedToCapacityRatio",
            "resources": DEFAULT_RES,
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
        },
        _pod(),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="6000", memory="10000")],
        [_pod({"cpu": "3000", "memory": "5000"}, node="node1"), _pod({"cpu": "3000", "memory": "5000"}, node="node2")],
        [38, 50],
    ),
    (
        "TestResourceBinPackingSingleExtended",
        "resources requested, pods scheduled with less resources",
        {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "intel.com/foo", "weight": 1}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]},
        },
        _pod({"intel.com/foo": "2"}),
        [
            _node("node1", {"cpu": "4", "memory": f"{10000 * 1024 * 1024}", "intel.com/foo": "8"}),
            _node("node2", {"cpu": "4", "memory": f"{10000 * 1024 * 1024}", "intel.com/foo": "4"}),
        ],
        [_pod()],
        [2, 5],
    ),
    (
        "TestResourceBinPackingSingleExtended",
        "resources requested, pods scheduled with more resources",
        {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "intel.com/foo", "weight": 1}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]},
        },
        _pod({"intel.com/foo": "4"}),
        [
            _node("node1", {"cpu": "4", "memory": f"{10000 * 1024 * 1024}", "intel.com/foo": "8"}),
            _node("node2", {"cpu": "4", "memory": f"{10000 * 1024 * 1024}", "intel.com/foo": "4"}),
        ],
        [_pod()],
        [5, 10],
    ),
    (
        "TestResourceBinPackingMultipleExtended",
        "resources requested, pods scheduled with less resources",
        {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]},
        },
        _pod({"intel.com/foo": "2", "intel.com/bar": "2"}),
        [
            _node("node1", {"cpu": "4", "memory": "10000Mi", "intel.com/foo": "8", "intel.com/bar": "4"}),
            _node("node2", {"cpu": "4", "memory": "10000Mi", "intel.com/foo": "4", "intel.com/bar": "8"}),
        ],
        [_pod()],
        # node1: foo 25% -> 2 (x3), bar 50% -> 5 (x5): round(31/8) = 4; node2: foo 5 x3, bar 2 x5: round(25/8) = 3
        [4, 3],
    ),
    (
        "kubeplane",
        "MostAllocated caps a request above allocatable at 100",
        {"type": "MostAllocated", "resources": DEFAULT_RES},
        _pod({"cpu": "3000", "memory": "5000"}),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="6000", memory="10000")],
        [_pod({"cpu": "2000", "memory": "4000"}, node="node1"), _pod({"cpu": "1000", "memory": "2000"}, node="node2")],
        # node1: cpu 5000/4000 -> 100, mem 9000/10000 -> 90: 95; node2: 4000/6000 -> 66, 7000/10000 -> 70: 68
        [95, 68],
    ),
    (
        "kubeplane",
        "LeastAllocated scores a request above allocatable 0",
        {"type": "LeastAllocated", "resources": DEFAULT_RES},
        _pod({"cpu": "3000", "memory": "5000"}),
        [_cap("node1", cpu="4000", memory="10000"), _cap("node2", cpu="6000", memory="10000")],
        [_pod({"cpu": "2000", "memory": "4000"}, node="node1"), _pod({"cpu": "1000", "memory": "2000"}, node="node2")],
        # node1: cpu over capacity -> 0, mem 10: 5; node2: cpu 33, mem 30: 31
        [5, 31],
    ),
    (
        "kubeplane",
        "pod-level requests replace the containers' non-zero defaults for the resources they name",
        {"type": "MostAllocated", "resources": DEFAULT_RES},
        # cpu from the pod level (1); memory missing there, so each container counts 200Mi
        _pod(containers_without_requests=2, pod_level={"cpu": "1"}),
        [_cap("node1", cpu="4", memory="800Mi")],
        [],
        [37],  # cpu 25, memory 400Mi/800Mi = 50
    ),
    (
        "kubeplane",
        "ephemeral-storage is scored on plain requests; pods is never scored",
        {
            "type": "LeastAllocated",
            "resources": [{"name": "ephemeral-storage", "weight": 1}, {"name": "pods", "weight": 5}],
        },
        _pod({"ephemeral-storage": "25"}),
        [_cap("node1", ephemeral_storage="100"), _cap("node2")],
        [_pod({"ephemeral-storage": "25"}, node="node1")],
        [50, 0],
    ),
    (
        "kubeplane",
        "RequestedToCapacityRatio interpolates with Go's truncating division",
        {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 1}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 10}, {"utilization": 60, "score": 0}]},
        },
        _pod({"cpu": "1"}),
        [_cap("node1", cpu="10"), _cap("node2", cpu="3"), _cap("node3", cpu="1")],
        [],
        # 10%: 100 + (-100*10)/60 = 100 - 16 = 84 (floor division would say 83); 33%: 100 - 55 = 45; 100%: 0
        [84, 45, 0],
    ),
]


@pytest.mark.parametrize(
    ("strategy", "pod", "nodes", "existing", "want"),
    [case[2:] for case in SCORE_CASES],
    ids=[f"{case[0]}/{case[1]}" for case in SCORE_CASES],
)
def test_score(
    strategy: dict[str, Any], pod: dict[str, Any], nodes: list[Any], existing: list[Any], want: list[int]
) -> None:
    plugin = _new({"scoringStrategy": strategy})
    assert _run_score(plugin, pod, _node_infos(nodes, existing)) == want


def test_score_without_pre_score_state_recomputes() -> None:
    """Upstream Score falls back to computing the pod's requests when PreScore state is missing."""
    plugin = _new()
    infos = _node_infos([_cap("node1", cpu="4000", memory="10000")], [])
    pod = PodInfo(_pod(*_REQ_A))
    state = CycleState()
    assert plugin.score(state, pod, infos[0]) == (37, None)
    assert plugin.score_vector(state, pod, NodeTable(infos), np.arange(1, dtype=np.int64)).tolist() == [37]


# --- shape score and Go arithmetic ------------------------------------------------------------------------

BROKEN_LINEAR: list[tuple[list[tuple[int, int]], list[tuple[int, int]]]] = [
    (
        [(10, 1), (90, 9)],
        [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9), (100, 9), (110, 9)],
    ),
    (
        [(0, 2), (40, 10), (100, 0)],
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (50, 9), (70, 5), (100, 0), (110, 0)],
    ),
    ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
]


@pytest.mark.parametrize(
    ("points", "assertions"), BROKEN_LINEAR, ids=[f"TestBrokenLinearFunction/case_{i}" for i in range(3)]
)
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    shape = [ShapePoint(u, s) for u, s in points]
    fn = build_broken_linear_function(shape)
    assert [fn(p) for p, _ in assertions] == [want for _, want in assertions]
    vector = broken_linear_vector(shape, np.array([p for p, _ in assertions], dtype=np.int64))
    assert vector.tolist() == [want for _, want in assertions]


@pytest.mark.parametrize(("a", "b", "want"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)], ids=str)
def test_go_div_truncates_toward_zero(a: int, b: int, want: int) -> None:
    assert go_div(a, b) == want


@pytest.mark.parametrize(
    ("x", "want"), [(0.5, 1), (1.5, 2), (2.5, 3), (2.4999, 2), (-0.5, -1), (-2.5, -3), (3.0, 3)], ids=str
)
def test_go_round_half_away_from_zero(x: float, want: int) -> None:
    assert go_round(x) == want


# --- conformance --------------------------------------------------------------------------------------------


def _conformance_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(CONFORMANCE.read_text(encoding="utf-8"))["cases"]
    return [c for c in cases if c["plugin"] in (fit.NAME, balanced.NAME)]


def test_conformance_file_holds_the_expected_cases() -> None:
    """The upstream conformance file: 28 Fit filter, 19 Fit score and 4 BalancedAllocation score cases."""
    cases = _conformance_cases()
    counts = {
        (p, k): sum(1 for c in cases if (c["plugin"], c["kind"]) == (p, k))
        for p, k in [(fit.NAME, "filter"), (fit.NAME, "score"), (balanced.NAME, "score")]
    }
    assert counts == {(fit.NAME, "filter"): 28, (fit.NAME, "score"): 19, (balanced.NAME, "score"): 4}


_CONFORMANCE_CASES = _conformance_cases()


@pytest.mark.parametrize(
    "case",
    _CONFORMANCE_CASES,
    ids=[f"{c['id']}:{c['upstream_test']}/{c['upstream_name'].strip()}" for c in _CONFORMANCE_CASES],
)
def test_conformance_upstream_resources(case: dict[str, Any]) -> None:
    """Each NodeResourcesFit and NodeResourcesBalancedAllocation case of the shared conformance file, run through
    the plugin directly (PreFilter + Filter, or PreScore + Score; neither has NormalizeScore), vector forms too."""
    module = fit if case["plugin"] == fit.NAME else balanced
    plugin = module.new(case["pluginArgs"] or {}, Handle())
    infos = _node_infos(case["nodes"], case["existingPods"])
    if case["kind"] == "filter":
        assert isinstance(plugin, NodeResourcesFit)
        statuses = _run_filter(plugin, case["pod"], infos)
        got: dict[str, Any] = {
            ni.name: {"code": "Success"} if s is None else {"code": s.code.label, "reasons": list(s.reasons)}
            for ni, s in zip(infos, statuses, strict=True)
        }
        assert got == case["expect"]["filter"]
    else:
        got = dict(zip((ni.name for ni in infos), _run_score(plugin, case["pod"], infos), strict=True))
        assert got == case["expect"]["scores"]


# --- properties: the vector paths equal the reference ------------------------------------------------------

GPU = "example.com/gpu"
_QUANTITY = st.integers(min_value=0, max_value=5000)


@st.composite
def _requests(draw: st.DrawFn) -> dict[str, str]:
    out: dict[str, str] = {}
    if draw(st.booleans()):
        out["cpu"] = f"{draw(_QUANTITY)}m"
    if draw(st.booleans()):
        out["memory"] = f"{draw(_QUANTITY)}Mi"
    if draw(st.integers(0, 3)) == 0:
        out["ephemeral-storage"] = f"{draw(_QUANTITY)}Mi"
    if draw(st.integers(0, 2)) == 0:
        out[GPU] = str(draw(st.integers(0, 4)))
    return out


@st.composite
def _random_pod(draw: st.DrawFn, node: str = "") -> dict[str, Any]:
    containers = draw(st.lists(_requests(), max_size=3))
    init = draw(st.lists(_requests(), max_size=2))
    sidecars = draw(st.lists(_requests(), max_size=1))
    pod_level = draw(st.one_of(st.none(), st.fixed_dictionaries({"cpu": st.integers(1, 3000).map(lambda v: f"{v}m")})))
    overhead = draw(st.one_of(st.none(), st.just({"cpu": "10m", "memory": "10Mi"})))
    return _pod(
        *containers,
        init=init,
        sidecars=sidecars,
        pod_level=pod_level,
        overhead=overhead,
        node=node,
        containers_without_requests=draw(st.integers(0, 1)),
    )


@st.composite
def _cluster(draw: st.DrawFn) -> tuple[list[NodeInfo], dict[str, Any]]:
    count = draw(st.integers(1, 8))
    nodes = []
    for i in range(count):
        allocatable = {
            "cpu": f"{draw(st.integers(0, 8000))}m",
            "memory": f"{draw(st.integers(0, 8000))}Mi",
            "ephemeral-storage": f"{draw(st.integers(0, 8000))}Mi",
            "pods": str(draw(st.integers(0, 6))),
        }
        if draw(st.booleans()):
            allocatable[GPU] = str(draw(st.integers(0, 8)))
        nodes.append(_node(f"node{i}", allocatable))
    existing = [
        draw(_random_pod(node=f"node{draw(st.integers(0, count - 1))}")) for _ in range(draw(st.integers(0, 10)))
    ]
    return _node_infos(nodes, existing), draw(_random_pod())


_RESOURCE_SETS = st.sampled_from(
    [
        DEFAULT_RES,
        [{"name": "memory", "weight": 3}, {"name": "cpu", "weight": 1}],
        [*DEFAULT_RES, {"name": GPU, "weight": 2}],
        [{"name": GPU, "weight": 1}, {"name": "ephemeral-storage", "weight": 4}, {"name": "pods", "weight": 1}],
    ]
)
_SHAPES = st.sampled_from(
    [
        [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
        [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
        [{"utilization": 10, "score": 3}, {"utilization": 50, "score": 10}, {"utilization": 70, "score": 1}],
        [{"utilization": 30, "score": 7}],
    ]
)


@st.composite
def _strategy(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]))
    strategy: dict[str, Any] = {"type": kind, "resources": draw(_RESOURCE_SETS)}
    if kind == "RequestedToCapacityRatio":
        strategy["requestedToCapacityRatio"] = {"shape": draw(_SHAPES)}
    return strategy


@settings(max_examples=300, deadline=None)
@given(
    cluster=_cluster(),
    ignored=st.sampled_from([{}, {"ignoredResources": [GPU]}, {"ignoredResourceGroups": ["example.com"]}]),
    data=st.data(),
)
def test_filter_vector_matches_filter(
    cluster: tuple[list[NodeInfo], dict[str, Any]], ignored: dict[str, Any], data: st.DataObject
) -> None:
    infos, pod = cluster
    plugin = _new(ignored)
    state, info = CycleState(), PodInfo(pod)
    plugin.pre_filter(state, info, infos)
    rows = np.array(data.draw(st.permutations(range(len(infos)))), dtype=np.int64)
    table = NodeTable(infos)
    want = [plugin.filter(state, info, infos[i]) is None for i in rows]
    assert plugin.filter_vector(state, info, table, rows).tolist() == want


@settings(max_examples=300, deadline=None)
@given(cluster=_cluster(), strategy=_strategy(), data=st.data())
def test_score_vector_matches_score(
    cluster: tuple[list[NodeInfo], dict[str, Any]], strategy: dict[str, Any], data: st.DataObject
) -> None:
    infos, pod = cluster
    plugin = _new({"scoringStrategy": strategy})
    state, info = CycleState(), PodInfo(pod)
    assert plugin.pre_score(state, info, infos) is None
    rows = np.array(data.draw(st.permutations(range(len(infos)))), dtype=np.int64)
    want = [plugin.score(state, info, infos[i])[0] for i in rows]
    assert plugin.score_vector(state, info, NodeTable(infos), rows).tolist() == want
    assert all(0 <= score <= 100 for score in want)


@pytest.mark.parametrize("kind", ["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"])
def test_score_vector_matches_score_for_each_strategy(kind: str) -> None:
    """A fixed random cluster per strategy, so each strategy is exercised even when hypothesis is unlucky."""
    rng = np.random.default_rng(7)
    nodes = [
        _node(
            f"n{i}",
            {
                "cpu": f"{rng.integers(1, 9000)}m",
                "memory": f"{rng.integers(1, 9000)}Mi",
                "pods": "50",
                GPU: str(rng.integers(0, 5)),
            },
        )
        for i in range(40)
    ]
    existing = [
        _pod(
            {"cpu": f"{rng.integers(0, 2000)}m", "memory": f"{rng.integers(0, 2000)}Mi", GPU: str(rng.integers(0, 2))},
            node=f"n{rng.integers(0, 40)}",
        )
        for _ in range(80)
    ]
    strategy: dict[str, Any] = {"type": kind, "resources": [*DEFAULT_RES, {"name": GPU, "weight": 2}]}
    if kind == "RequestedToCapacityRatio":
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        }
    infos = _node_infos(nodes, existing)
    plugin = _new({"scoringStrategy": strategy})
    scores = _run_score(plugin, _pod({"cpu": "500m", "memory": "300Mi", GPU: "1"}), infos)
    assert len(set(scores)) > 1
