"""NodeName against upstream's node_name_test.go (v1.37) and the translated conformance cases."""

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
    PreFilterPlugin,
    PreFilterResult,
    Status,
    VectorFilterPlugin,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_name
from kubeplane.scheduler.plugins.node_name import ERR_REASON, NAME, NodeName, fits

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


def make_pod(node: str = "") -> PodInfo:
    spec = {"nodeName": node} if node else {}
    return PodInfo({"metadata": {"name": "p", "namespace": "default", "uid": "p"}, "spec": spec})


def make_node(name: str) -> NodeInfo:
    return NodeInfo({"metadata": {"name": name}})


def plugin() -> NodeName:
    return node_name.new({}, Handle())


def test_plugin_shape() -> None:
    pl = plugin()
    assert pl.name() == NAME == "NodeName"
    for proto in (PreFilterPlugin, FilterPlugin, VectorFilterPlugin, EnqueueExtensions):
        assert isinstance(pl, proto)
    assert pl.pre_filter_extensions() is None
    (registration,) = pl.events_to_register()
    assert registration.event.resource == "Node"
    assert registration.event.action_type == ActionType.ADD
    assert registration.hint is None


@pytest.mark.parametrize(
    ("pod_node", "node", "want"),
    [
        ("", "node1", None),
        ("foo", "foo", None),
        ("bar", "foo", Status.unresolvable(ERR_REASON)),
    ],
    ids=["no host specified", "host matches", "host doesn't match"],
)
def test_filter(pod_node: str, node: str, want: Status | None) -> None:
    """Upstream TestNodeName."""
    pod, info = make_pod(pod_node), make_node(node)
    assert plugin().filter(CycleState(), pod, info) == want
    assert fits(pod, info) is (want is None)
    assert plugin().filter_vector(CycleState(), pod, NodeTable([info]), np.array([0])).tolist() == [want is None]


def test_reason_is_upstream_text() -> None:
    status = plugin().filter(CycleState(), make_pod("bar"), make_node("foo"))
    assert status is not None
    assert status.reasons == ("node(s) didn't match the requested node name",)


@pytest.mark.parametrize(
    ("pod_node", "want"),
    [("node1", PreFilterResult(frozenset({"node1"}))), ("", None)],
    ids=["nodeName is set", "nodeName is not set"],
)
def test_pre_filter(pod_node: str, want: PreFilterResult | None) -> None:
    """Upstream TestNodeName_PreFilter: the named node is the only candidate."""
    assert plugin().pre_filter(CycleState(), make_pod(pod_node), []) == (want, None)


def test_vector_filter_with_a_node_missing_from_the_table() -> None:
    infos = [make_node("a"), make_node("b")]
    mask = plugin().filter_vector(CycleState(), make_pod("c"), NodeTable(infos), np.array([1, 0]))
    assert mask.tolist() == [False, False]


@pytest.mark.parametrize("case", conformance_cases("resources.json", NAME))
def test_conformance(case: dict[str, Any] | None) -> None:
    case = dict(require_case(case))
    assert run_conformance_filter(case, node_name.new) == case["expect"]["filter"]


@settings(max_examples=200, deadline=None)
@given(nodes=random_nodes(), pod=random_pod(), data=st.data())
def test_vector_filter_agrees_with_reference(
    nodes: list[dict[str, Any]], pod: dict[str, Any], data: st.DataObject
) -> None:
    infos = build_node_infos(nodes)
    check_filter_vector(plugin(), pod, infos, data.draw(row_orders(len(infos))))
