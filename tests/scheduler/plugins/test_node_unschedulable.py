"""NodeUnschedulable against upstream's node_unschedulable_test.go (v1.37) and the conformance cases."""

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
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    QueueingHint,
    Status,
    VectorFilterPlugin,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_unschedulable
from kubeplane.scheduler.plugins.node_unschedulable import ERR_REASON_UNSCHEDULABLE, NAME, NodeUnschedulable

from .test_helper import (
    build_node_infos,
    check_filter_vector,
    conformance_cases,
    random_nodes,
    random_pod,
    require_case,
    row_orders,
    run_conformance_filter,
)

TOLERATE_UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}


def make_pod(tolerations: list[dict[str, str]] | None = None, *, uid: str = "p") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default", "uid": uid}, "spec": {"tolerations": tolerations or []}}


def make_node(unschedulable: bool) -> dict[str, Any]:
    return {"metadata": {"name": "node1"}, "spec": {"unschedulable": unschedulable}}


def plugin() -> NodeUnschedulable:
    return node_unschedulable.new({}, Handle())


def test_plugin_shape() -> None:
    pl = plugin()
    assert pl.name() == NAME == "NodeUnschedulable"
    for proto in (FilterPlugin, VectorFilterPlugin, EnqueueExtensions):
        assert isinstance(pl, proto)


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "want"),
    [
        ([], True, Status.unresolvable(ERR_REASON_UNSCHEDULABLE)),
        ([], False, None),
        ([TOLERATE_UNSCHEDULABLE], True, None),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}], True,
         Status.unresolvable(ERR_REASON_UNSCHEDULABLE)),
        ([{"operator": "Exists"}], True, None),
    ],
    ids=[
        "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        "Schedule pod to normal node",
        "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        "a toleration of another effect does not tolerate the cordon",
        "a wildcard toleration tolerates the cordon",
    ],
)  # fmt: skip
def test_filter(tolerations: list[dict[str, str]], unschedulable: bool, want: Status | None) -> None:
    """Upstream TestNodeUnschedulable."""
    pod, info = PodInfo(make_pod(tolerations)), NodeInfo(make_node(unschedulable))
    assert plugin().filter(CycleState(), pod, info) == want
    assert plugin().filter_vector(CycleState(), pod, NodeTable([info]), np.array([0])).tolist() == [want is None]


def test_reason_is_upstream_text() -> None:
    status = plugin().filter(CycleState(), PodInfo(make_pod()), NodeInfo(make_node(True)))
    assert status is not None
    assert status.reasons == ("node(s) were unschedulable",)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, True, QueueingHint.QUEUE_SKIP),
        (None, False, QueueingHint.QUEUE),
        (False, False, QueueingHint.QUEUE_SKIP),
        (True, False, QueueingHint.QUEUE),
        (True, True, QueueingHint.QUEUE_SKIP),
        (False, True, QueueingHint.QUEUE_SKIP),
    ],
    ids=[
        "skip-queue-on-unschedulable-node-added",
        "queue-on-schedulable-node-added",
        "skip-unrelated-change",
        "queue-on-unschedulable-field-change",
        "skip-still-unschedulable",
        "skip-node-cordoned",
    ],
)
def test_node_change_hint(old: bool | None, new: bool, expected: QueueingHint) -> None:
    """Upstream TestIsSchedulableAfterNodeChange."""
    registration = plugin().events_to_register()[0]
    assert registration.event.resource == "Node"
    assert registration.event.action_type == ActionType.ADD | ActionType.UPDATE_NODE_TAINT
    assert registration.hint is not None
    pod = PodInfo(make_pod())
    old_node = None if old is None else make_node(old)
    assert registration.hint(pod, old_node, make_node(new)) == expected


@pytest.mark.parametrize(
    ("new_uid", "new_tolerations", "expected"),
    [
        ("p", [TOLERATE_UNSCHEDULABLE], QueueingHint.QUEUE),
        ("p", [{"key": "foo", "operator": "Exists"}], QueueingHint.QUEUE_SKIP),
        ("other", [TOLERATE_UNSCHEDULABLE], QueueingHint.QUEUE_SKIP),
    ],
    ids=[
        "queue-when-the-target-pod-tolerates-the-unschedulable-taint",
        "skip-unrelated-toleration-added",
        "skip-another-pod",
    ],
)
def test_toleration_change_hint(new_uid: str, new_tolerations: list[dict[str, str]], expected: QueueingHint) -> None:
    """Upstream TestIsSchedulableAfterTargetPodTolerationChange (pod dicts and PodInfos both accepted)."""
    registration = plugin().events_to_register()[1]
    assert registration.event.resource == "Pod"
    assert registration.event.action_type == ActionType.UPDATE_POD_TOLERATIONS
    assert registration.hint is not None
    pod = PodInfo(make_pod())
    new = make_pod(new_tolerations, uid=new_uid)
    assert registration.hint(pod, make_pod(uid=new_uid), new) == expected
    assert registration.hint(pod, PodInfo(make_pod(uid=new_uid)), PodInfo(new)) == expected


@pytest.mark.parametrize("case", conformance_cases("resources.json", NAME))
def test_conformance(case: dict[str, Any] | None) -> None:
    case = dict(require_case(case))
    assert run_conformance_filter(case, node_unschedulable.new) == case["expect"]["filter"]


@settings(max_examples=200, deadline=None)
@given(nodes=random_nodes(), pod=random_pod(), data=st.data())
def test_vector_filter_agrees_with_reference(
    nodes: list[dict[str, Any]], pod: dict[str, Any], data: st.DataObject
) -> None:
    infos = build_node_infos(nodes)
    check_filter_vector(plugin(), pod, infos, data.draw(row_orders(len(infos))))
