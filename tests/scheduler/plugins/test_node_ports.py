"""NodePorts against upstream's node_ports_test.go (v1.37) and the translated conformance cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_ports
from kubeplane.scheduler.plugins.node_ports import ERR_REASON, NAME, NodePorts, fits

from .test_helper import conformance_cases, require_case, run_conformance_filter

CONFLICT = Status.unschedulable(ERR_REASON)


def _ports(specs: tuple[str, ...]) -> list[dict[str, Any]]:
    """``"PROTO/hostIP/hostPort"`` as upstream's newPod helper writes them."""
    ports = []
    for spec in specs:
        proto, ip, port = spec.split("/")
        ports.append({"protocol": proto, "hostIP": ip, "hostPort": int(port), "containerPort": int(port)})
    return ports


def new_pod(
    *ports: str, name: str = "p", node: str = "", init: tuple[str, ...] = (), sidecar: bool = False
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "container", "image": "pause", "ports": _ports(ports)}]}
    if node:
        spec["nodeName"] = node
    if init:
        container: dict[str, Any] = {"name": "init", "image": "pause", "ports": _ports(init)}
        if sidecar:
            container["restartPolicy"] = "Always"
        spec["initContainers"] = [container]
    return {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}


def node_with(*existing: dict[str, Any]) -> NodeInfo:
    return NodeInfo({"metadata": {"name": "m1"}}, [PodInfo(p) for p in existing])


def plugin() -> NodePorts:
    return node_ports.new({}, Handle())


def test_plugin_shape() -> None:
    pl = plugin()
    assert pl.name() == NAME == "NodePorts"
    for proto in (PreFilterPlugin, FilterPlugin, EnqueueExtensions):
        assert isinstance(pl, proto)
    assert pl.pre_filter_extensions() is None


CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], Status | None, Status | None]] = [
    ("nothing running", new_pod(), [], Status.skip(), None),
    ("other port", new_pod("UDP/127.0.0.1/8080"), [new_pod("UDP/127.0.0.1/9090", name="e")], None, None),
    ("same udp port", new_pod("UDP/127.0.0.1/8080"), [new_pod("UDP/127.0.0.1/8080", name="e")], None, CONFLICT),
    ("same tcp port", new_pod("TCP/127.0.0.1/8080"), [new_pod("TCP/127.0.0.1/8080", name="e")], None, CONFLICT),
    ("different host ip", new_pod("TCP/127.0.0.1/8080"), [new_pod("TCP/127.0.0.2/8080", name="e")], None, None),
    ("different protocol", new_pod("UDP/127.0.0.1/8080"), [new_pod("TCP/127.0.0.1/8080", name="e")], None, None),
    (
        "second udp port conflict",
        new_pod("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        [new_pod("UDP/127.0.0.1/8080", name="e")],
        None,
        CONFLICT,
    ),
    (
        "first tcp port conflict",
        new_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        [new_pod("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081", name="e")],
        None,
        CONFLICT,
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        new_pod("TCP/0.0.0.0/8001"),
        [new_pod("TCP/127.0.0.1/8001", name="e")],
        None,
        CONFLICT,
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        [new_pod("TCP/127.0.0.1/8001", name="e")],
        None,
        CONFLICT,
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        new_pod("TCP/127.0.0.1/8001"),
        [new_pod("TCP/0.0.0.0/8001", name="e")],
        None,
        CONFLICT,
    ),
    ("second different protocol", new_pod("UDP/127.0.0.1/8001"), [new_pod("TCP/0.0.0.0/8001", name="e")], None, None),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("UDP/127.0.0.1/8001"),
        [new_pod("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001", name="e")],
        None,
        CONFLICT,
    ),
    (
        "non-sidecar initContainer using hostPort",
        new_pod(init=("TCP/0.0.0.0/8001",)),
        [new_pod("TCP/0.0.0.0/8001", name="e")],
        Status.skip(),
        None,
    ),
    (
        "sidecar initContainer using hostPort",
        new_pod(init=("TCP/0.0.0.0/8001",), sidecar=True),
        [new_pod("TCP/0.0.0.0/8001", name="e")],
        None,
        CONFLICT,
    ),
    (
        "an empty hostIP means 0.0.0.0 and an empty protocol TCP",
        {"metadata": {"name": "p", "uid": "p"}, "spec": {"containers": [{"name": "c", "ports": [{"hostPort": 80}]}]}},
        [new_pod("TCP/127.0.0.1/80", name="e")],
        None,
        CONFLICT,
    ),
]


@pytest.mark.parametrize(("pod", "existing", "want_pre", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pre_filter_and_filter(
    pod: dict[str, Any], existing: list[dict[str, Any]], want_pre: Status | None, want: Status | None
) -> None:
    """Upstream TestNodePorts: PreFilter Skips pods without host ports; Filter is Unschedulable on a conflict."""
    pl = plugin()
    info = node_with(*existing)
    pod_info = PodInfo(pod)
    state = CycleState()
    assert pl.pre_filter(state, pod_info, [info]) == (None, want_pre)
    assert fits(pod_info, info) is (want is None)
    if want_pre is None:
        assert pl.filter(state, pod_info, info) == want
        assert pl.filter_vector(state, pod_info, NodeTable([info]), np.array([0])).tolist() == [want is None]


def test_filter_without_pre_filter_is_an_error() -> None:
    """Upstream TestPreFilterDisabled."""
    status = plugin().filter(CycleState(), PodInfo(new_pod("TCP/127.0.0.1/80")), node_with())
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('reading "PreFilterNodePorts" from cycleState: not found',)


def test_reason_is_upstream_text() -> None:
    assert ERR_REASON == "node(s) didn't have free ports for the requested pod ports"


HINT_CASES: list[tuple[str, dict[str, Any], dict[str, Any], QueueingHint]] = [
    (
        "skip-queue-on-unscheduled",
        new_pod("TCP/127.0.0.1/8080"),
        new_pod("TCP/127.0.0.1/8080", name="d"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-non-hostport",
        new_pod("TCP/127.0.0.1/8080"),
        new_pod(name="d", node="m1"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-queue-on-unrelated-hostport",
        new_pod("TCP/127.0.0.1/8080"),
        new_pod("TCP/127.0.0.1/8081", name="d", node="m1"),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-released-hostport",
        new_pod("TCP/127.0.0.1/8080"),
        new_pod("TCP/127.0.0.1/8080", name="d", node="m1"),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-released-wildcard-hostport",
        new_pod("TCP/127.0.0.1/8080"),
        new_pod("TCP/0.0.0.0/8080", name="d", node="m1"),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(("pod", "deleted", "expected"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES])
def test_assigned_pod_deleted_hint(pod: dict[str, Any], deleted: dict[str, Any], expected: QueueingHint) -> None:
    """Upstream TestIsSchedulableAfterAssignedPodDeleted (pod dicts and PodInfos both accepted)."""
    registration, node_add = plugin().events_to_register()
    assert registration.event.resource == "AssignedPod"
    assert registration.event.action_type == ActionType.DELETE
    assert (node_add.event.resource, node_add.event.action_type, node_add.hint) == ("Node", ActionType.ADD, None)
    assert registration.hint is not None
    assert registration.hint(PodInfo(pod), deleted, None) == expected
    assert registration.hint(PodInfo(pod), PodInfo(deleted), None) == expected


def test_nominated_deleted_pod_counts() -> None:
    registration = plugin().events_to_register()[0]
    assert registration.hint is not None
    deleted = new_pod("TCP/127.0.0.1/8080", name="d")
    deleted["status"] = {"nominatedNodeName": "m1"}
    assert registration.hint(PodInfo(new_pod("TCP/127.0.0.1/8080")), deleted, None) == QueueingHint.QUEUE


@pytest.mark.parametrize("case", conformance_cases("resources.json", NAME))
def test_conformance(case: dict[str, Any] | None) -> None:
    case = dict(require_case(case))
    assert run_conformance_filter(case, node_ports.new) == case["expect"]["filter"]


_port = st.sampled_from(
    ("TCP/127.0.0.1/80", "TCP/0.0.0.0/80", "UDP/127.0.0.1/80", "TCP/10.0.0.1/81", "SCTP/0.0.0.0/80")
)


@settings(max_examples=200, deadline=None)
@given(
    existing=st.lists(st.lists(_port, max_size=2), max_size=6),
    wanted=st.lists(_port, min_size=1, max_size=2),
    data=st.data(),
)
def test_vector_filter_agrees_with_reference(existing: list[list[str]], wanted: list[str], data: st.DataObject) -> None:
    infos = [
        NodeInfo({"metadata": {"name": f"n{i}"}}, [PodInfo(new_pod(*ports, name=f"e{i}"))])
        for i, ports in enumerate(existing)
    ]
    pl = plugin()
    pod = PodInfo(new_pod(*wanted))
    state = CycleState()
    assert pl.pre_filter(state, pod, infos) == (None, None)
    expected = [pl.filter(state, pod, ni) is None for ni in infos]
    rows = data.draw(st.permutations(range(len(infos))))
    mask = pl.filter_vector(state, pod, NodeTable(infos), np.array(rows, dtype=np.int64))
    assert mask.tolist() == [expected[r] for r in rows]
