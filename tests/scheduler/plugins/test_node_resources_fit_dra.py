"""NodeResourcesFit with extended resources backed by DRA (DRAExtendedResource, on in v1.37).

Pins upstream ``fit_test.go`` ``TestEnoughRequests`` cases "extended resource backed by DRA", "extended resource
backed by DRA not enabled", "extended resource NOT backed by DRA" and "extended resource was backed by Device
Plugin (Allocatable: 0)" (``shouldDelegateResourceToDRA``), the implicit ``deviceclass.resource.kubernetes.io/``
name, and ``isSchedulableAfterDeviceClassEvent``. ``filter_vector`` must agree with ``filter`` on every row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState, QueueingHint, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_resources_fit as fit

DRA = "extended.resource.dra.io/something"
OTHER = "example.com/bbb"
CLASS = {"metadata": {"name": "gpu-class"}, "spec": {"extendedResourceName": DRA}}


def _handle(classes: Sequence[Mapping[str, Any]], gates: Mapping[str, bool] | None = None) -> Handle:
    def list_objects(resource: str, namespace: str) -> Sequence[Mapping[str, Any]]:
        return list(classes) if resource == "deviceclasses" else []

    handle = Handle(list_objects=list_objects)
    if gates is not None:
        handle.extra["feature_gates"] = dict(gates)
    return handle


def _pod(requests: Mapping[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default", "uid": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": dict(requests)}}]},
    }


def _node(allocatable: Mapping[str, str]) -> NodeInfo:
    alloc = {"cpu": "10m", "memory": "20", "pods": "32", **allocatable}
    return NodeInfo({"metadata": {"name": "n"}, "status": {"capacity": alloc, "allocatable": alloc}})


def _filter(plugin: fit.NodeResourcesFit, pod: Mapping[str, Any], node: NodeInfo) -> Status | None:
    state = CycleState()
    info = PodInfo(pod)
    assert plugin.pre_filter(state, info, [node]) == (None, None)
    status = plugin.filter(state, info, node)
    mask = plugin.filter_vector(state, info, NodeTable([node]), np.arange(1, dtype=np.int64))
    assert mask.tolist() == [status is None]
    return status


UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


@pytest.mark.parametrize(
    ("name", "requests", "allocatable", "gates", "want"),
    [
        ("extended resource backed by DRA", {"cpu": "1m", "memory": "1", DRA: "1"}, {}, None, None),
        (
            "extended resource backed by DRA not enabled",
            {"cpu": "1m", "memory": "1", DRA: "1"},
            {},
            {"DRAExtendedResource": False},
            Status(UU, (f"Insufficient {DRA}",)),
        ),
        ("extended resource NOT backed by DRA", {OTHER: "1"}, {}, None, Status(UU, (f"Insufficient {OTHER}",))),
        ("extended resource was backed by Device Plugin (Allocatable: 0)", {DRA: "1"}, {DRA: "0"}, None, None),
        # kubeplane: a node whose device plugin advertises the resource keeps it (allocatable > 0: not delegated).
        ("device plugin advertises too little", {DRA: "2"}, {DRA: "1"}, None, Status(UU, (f"Insufficient {DRA}",))),
        ("implicit device class name", {"deviceclass.resource.kubernetes.io/gpu-class": "1"}, {}, None, None),
        (
            "implicit name of a class that does not exist",
            {"deviceclass.resource.kubernetes.io/nope": "1"},
            {},
            None,
            Status(UU, ("Insufficient deviceclass.resource.kubernetes.io/nope",)),
        ),
    ],
)
def test_enough_requests_dra(
    name: str,
    requests: Mapping[str, str],
    allocatable: Mapping[str, str],
    gates: Mapping[str, bool] | None,
    want: Status | None,
) -> None:
    plugin = fit.new({}, _handle([CLASS], gates))
    assert _filter(plugin, _pod(requests), _node(allocatable)) == want


def test_fits_request_with_dra_backed_names() -> None:
    """Upstream ``Fits(pod, nodeInfo, draManager, opts)``: the names DRA serves are skipped where allocatable is 0."""
    request = PodInfo(_pod({DRA: "1"})).requests
    node = _node({})
    assert [r.reason for r in fit.fits_request(request, node)] == [f"Insufficient {DRA}"]
    assert fit.fits_request(request, node, dra_backed=frozenset({DRA})) == []


def _class(name: str, extended: str | None = None) -> dict[str, Any]:
    spec = {"extendedResourceName": extended} if extended else {}
    return {"metadata": {"name": name}, "spec": spec}


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        # upstream TestIsSchedulableAfterDeviceClassEvent's shapes
        (None, _class("gpu-class", DRA), QueueingHint.QUEUE),
        (None, _class("other-class", "example.com/unrelated"), QueueingHint.QUEUE_SKIP),
        (_class("gpu-class", DRA), _class("gpu-class", DRA), QueueingHint.QUEUE_SKIP),
        (_class("gpu-class"), _class("gpu-class", DRA), QueueingHint.QUEUE),
        (_class("gpu-class", "example.com/x"), _class("gpu-class", "example.com/y"), QueueingHint.QUEUE_SKIP),
    ],
)
def test_device_class_event_hint(old: Any, new: Any, want: QueueingHint) -> None:
    plugin = fit.new({}, _handle([]))
    assert plugin.is_schedulable_after_device_class_event(PodInfo(_pod({DRA: "1"})), old, new) == want


def test_device_class_added_with_the_implicit_name_queues() -> None:
    plugin = fit.new({}, _handle([]))
    pod = PodInfo(_pod({"deviceclass.resource.kubernetes.io/new-class": "1"}))
    assert plugin.is_schedulable_after_device_class_event(pod, None, _class("new-class")) == QueueingHint.QUEUE


def test_node_change_hint_sees_dra_backed_resources() -> None:
    """Upstream ``isSchedulableAfterNodeChange`` with the DRA manager: a new node without the resource fits when a
    class serves it."""
    plugin = fit.new({}, _handle([CLASS]))
    node = {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}
    pod = PodInfo(_pod({DRA: "1"}))
    assert plugin.is_schedulable_after_node_change(pod, None, node) == QueueingHint.QUEUE
    no_class = fit.new({}, _handle([]))
    assert no_class.is_schedulable_after_node_change(pod, None, node) == QueueingHint.QUEUE_SKIP


def test_pods_without_extended_resources_do_not_list_classes() -> None:
    """The fast path: PreFilter of a cpu/memory pod never reads DeviceClasses."""
    calls: list[str] = []

    def list_objects(resource: str, namespace: str) -> Sequence[Mapping[str, Any]]:
        calls.append(resource)
        return []

    plugin = fit.new({}, Handle(list_objects=list_objects))
    plugin.pre_filter(CycleState(), PodInfo(_pod({"cpu": "1m"})), [])
    assert calls == []
