"""Scoring extended resources backed by DRA by their devices (DRAExtendedResource, GA in v1.37).

The first table translates upstream v1.37 ``noderesources/resource_allocation_test.go``
``TestCalculateResourceAllocatableRequest`` case by case (its names as ids): what (allocatable, requested) the
scorer compares for one extended resource on one node, with the gate off and on, for device-plugin resources and
DeviceClass-backed ones (explicit ``extendedResourceName`` and implicit ``deviceclass.resource.kubernetes.io/``),
no slices, full and shared allocations, and per-device node selection with a CEL class selector. The rest pins
that the numpy path agrees with the per-node one and that NodeResourcesFit's PreScore gathers the DRA state only
when a configured resource is DeviceClass-backed, and that its score prefers the node with more free devices.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_resources_fit
from kubeplane.scheduler.plugins.resource_allocation import ResourceAllocationScorer, ResourceSpec, ScoreState
from kubeplane.scheduler.plugins.resource_allocation_dra import dra_score_state

NODE = "resource-node"
DRIVER = "test-driver"
CLASS_NAME = "device-class-name"
EXPLICIT = "example.com/gpu"
IMPLICIT = "deviceclass.resource.kubernetes.io/" + CLASS_NAME
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": CLASS_NAME},
    "spec": {"extendedResourceName": EXPLICIT},
}
IMPLICIT_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": CLASS_NAME}}
CEL = (
    'device.driver == "test-driver" && device.capacity["test-driver"].memory.compareTo(quantity("8Gi")) >= 0 && '
    'device.attributes["test-driver"].model.startsWith("SOME-")'
)


def node(name: str = NODE, *, gpus: int = 0, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110", **({EXPLICIT: str(gpus)} if gpus else {})}
    return {
        "metadata": {"name": name, "labels": dict(labels or {})},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def slice_(*devices: str, on: str = NODE) -> dict[str, Any]:
    return {
        "metadata": {"name": f"{on}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": on,
            "pool": {"name": on, "generation": 0, "resourceSliceCount": 1},
            "devices": [{"name": d} for d in devices],
        },
    }


def claim(name: str, device: str, *, pool: str = NODE, share: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"request": "req-1", "driver": DRIVER, "pool": pool, "device": device}
    if share is not None:
        result["shareID"] = share
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"devices": {"requests": [{"name": "req-1", "exactly": {"deviceClassName": CLASS_NAME}}]}},
        "status": {"allocation": {"devices": {"results": [result]}}},
    }


PER_DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": CLASS_NAME},
    "spec": {"extendedResourceName": EXPLICIT, "selectors": [{"cel": {"expression": CEL}}]},
}


def _gpu(name: str, model: str, memory: str, **where: Any) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {"model": {"string": model}},
        "capacity": {"memory": {"value": memory}},
        **where,
    }


PER_DEVICE_SLICE = {
    "metadata": {"name": "per-device-slice"},
    "spec": {
        "driver": DRIVER,
        "pool": {"name": "per-device-pool", "generation": 0, "resourceSliceCount": 1},
        "perDeviceNodeSelection": True,
        "devices": [
            _gpu("device-1", "SOME-XYZ", "16Gi", nodeName=NODE),
            _gpu("device-2", "SOME-ZYX", "12Gi", nodeName="other-node"),
            _gpu(
                "device-3",
                "SOME-XZY",
                "24Gi",
                nodeSelector={
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["us-east-1a"]}]}
                    ]
                },
            ),
        ],
    },
}


def handle_for(objects: Sequence[Mapping[str, Any]]) -> Handle:
    by_kind: dict[str, list[Mapping[str, Any]]] = {"deviceclasses": [], "resourceslices": [], "resourceclaims": []}
    for obj in objects:
        kind = "deviceclasses" if obj.get("kind") == "DeviceClass" else "resourceclaims" if "status" in obj else ""
        by_kind[kind or "resourceslices"].append(copy.deepcopy(obj))

    def list_objects(plural: str, namespace: str) -> Sequence[Mapping[str, Any]]:
        return by_kind.get(plural, [])

    return Handle(clock=FakeClock(), list_objects=list_objects)


class Recording:
    """A scoring strategy that records the (requested, allocatable) lists the scorer hands it."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[int], list[int]]] = []

    def score(self, requested: Any, allocated: Any, allocatable: Any, weights: Any) -> int:
        self.seen.append((list(requested), list(allocatable)))
        return 0

    def score_vector(self, requested: Any, allocated: Any, allocatable: Any, weights: Any) -> Any:
        raise NotImplementedError


def allocatable_requested(
    enabled: bool, the_node: dict[str, Any], resource: str, objects: Sequence[Mapping[str, Any]], pod_request: int
) -> tuple[int, int]:
    """What upstream's ``calculateResourceAllocatableRequest`` returns, read off the scorer's strategy input."""
    strategy = Recording()
    scorer = ResourceAllocationScorer("test", [ResourceSpec(resource, 1)], strategy, use_requested=False)
    dra = dra_score_state(handle_for(objects), [resource]) if enabled else None
    scorer.score(NodeInfo(the_node), scorer.terms([pod_request]), dra)
    ((requested, allocatable),) = strategy.seen
    return (allocatable[0], requested[0]) if allocatable else (0, 0)


CASES = {
    "device-plugin-resource-feature-disabled": (False, node(gpus=4), EXPLICIT, [], 4, 1),
    "device-plugin-resource-feature-enabled": (True, node(gpus=4), EXPLICIT, [], 4, 1),
    "DRA-backed-resource-explicit": (True, node(), EXPLICIT, [CLASS, slice_("device-1")], 1, 1),
    "DRA-backed-resource-implicit": (True, node(), IMPLICIT, [IMPLICIT_CLASS, slice_("device-1")], 1, 1),
    "DRA-backed-resource-no-slices": (True, node(), EXPLICIT, [CLASS], 0, 0),
    "DRA-backed-resource-with-allocated-device": (
        True,
        node(),
        EXPLICIT,
        [CLASS, slice_("device-1", "device-2"), claim("test-claim", "device-1")],
        2,
        2,
    ),
    "DRA-backed-resource-with-shared-device-allocation": (
        True,
        node(),
        EXPLICIT,
        [CLASS, slice_("device-1", "device-2"), claim("test-claim", "device-1", share="share-123")],
        2,
        2,
    ),
    "DRA-backed-resource-multiple-devices-mixed-allocation": (
        True,
        node(),
        EXPLICIT,
        [
            CLASS,
            slice_("device-1", "device-2", "device-3"),
            claim("test-claim-1", "device-1"),
            claim("test-claim-2", "device-2", share="share-456"),
        ],
        3,
        3,
    ),
    "DRA-backed-resource-with-per-device-node-selection": (
        True,
        node(labels={"zone": "us-east-1a"}),
        EXPLICIT,
        [PER_DEVICE_CLASS, PER_DEVICE_SLICE, claim("test-claim", "device-1", pool="per-device-pool")],
        2,
        2,
    ),
}


@pytest.mark.parametrize(
    ("enabled", "the_node", "resource", "objects", "want_allocatable", "want_requested"),
    [pytest.param(*case, id=name) for name, case in CASES.items()],
)
def test_calculate_resource_allocatable_request(
    enabled: bool,
    the_node: dict[str, Any],
    resource: str,
    objects: list[Mapping[str, Any]],
    want_allocatable: int,
    want_requested: int,
) -> None:
    got = allocatable_requested(enabled, the_node, resource, objects, 1)
    assert got == (want_allocatable, want_requested)


def test_dra_state_only_for_a_configured_resource_a_device_class_serves() -> None:
    """Upstream ``getDRAPreScoredParams``: nil unless a configured resource is DeviceClass-backed."""
    handle = handle_for([CLASS, slice_("device-1")])
    assert dra_score_state(handle, ["cpu", "memory"]) is None
    assert dra_score_state(handle, ["example.com/other"]) is None
    assert dra_score_state(None, [EXPLICIT]) is None
    state = dra_score_state(handle, ["cpu", EXPLICIT])
    assert state is not None
    assert state.serves(EXPLICIT)
    assert not state.serves("example.com/other")


def test_a_selector_that_fails_makes_the_resource_absent() -> None:
    selectors = [{"cel": {"expression": 'device.attributes["x"].y'}}]
    bad = {**CLASS, "spec": {"extendedResourceName": EXPLICIT, "selectors": selectors}}
    assert allocatable_requested(True, node(), EXPLICIT, [bad, slice_("device-1")], 1) == (0, 0)


def _fit(objects: Sequence[Mapping[str, Any]], strategy: str = "LeastAllocated") -> Any:
    args = {"scoringStrategy": {"type": strategy, "resources": [{"name": "cpu", "weight": 1}, {"name": EXPLICIT,
            "weight": 1}]}}  # fmt: skip
    return node_resources_fit.new(args, handle_for(objects))


GPU_POD = PodInfo(
    {
        "metadata": {"name": "p", "namespace": "default", "uid": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", EXPLICIT: "1"}}}]},
    }
)


@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated"])
def test_fit_scores_by_free_devices_and_the_vector_path_agrees(strategy: str) -> None:
    objects = [
        CLASS,
        slice_("g0", "g1", "g2", "g3", on="node-a"),
        slice_("g0", "g1", "g2", "g3", on="node-b"),
        claim("c1", "g0", pool="node-b"),
        claim("c2", "g1", pool="node-b"),
        claim("c3", "g2", pool="node-b"),
    ]
    plugin = _fit(objects, strategy)
    infos = [NodeInfo(node("node-a")), NodeInfo(node("node-b")), NodeInfo(node("node-c", gpus=2))]
    state = CycleState()
    assert plugin.pre_score(state, GPU_POD, infos) is None
    s = state.read(node_resources_fit.PRE_SCORE_STATE_KEY)
    assert isinstance(s, ScoreState)
    assert s.dra is not None
    scores = [plugin.score(state, GPU_POD, ni)[0] for ni in infos]
    # cpu is equal everywhere: node-a has 4 free devices, node-b 1 free, node-c 2 device-plugin GPUs.
    if strategy == "LeastAllocated":
        assert scores[0] > scores[2] > scores[1]
    else:
        assert scores[1] > scores[2] > scores[0]
    vector = plugin.score_vector(state, GPU_POD, NodeTable(infos), np.arange(len(infos), dtype=np.int64))
    assert vector.tolist() == scores


def test_fit_without_the_gate_scores_device_backed_resources_as_absent() -> None:
    objects = [CLASS, slice_("g0", on="node-a")]
    plugin = _fit(objects)
    plugin.dra_extended_resource = False
    state = CycleState()
    plugin.pre_score(state, GPU_POD, [])
    assert state.read(node_resources_fit.PRE_SCORE_STATE_KEY).dra is None
    with_gate = _fit(objects)
    on = CycleState()
    with_gate.pre_score(on, GPU_POD, [])
    a = NodeInfo(node("node-a"))
    assert plugin.score(state, GPU_POD, a) != with_gate.score(on, GPU_POD, a)
