"""TaintToleration against upstream's taint_toleration_test.go (v1.37) and the translated conformance cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    ActionType,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    NodeScore,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import taint_toleration
from kubeplane.scheduler.plugins.taint_toleration import ERR_REASON_NOT_MATCH, NAME, TaintToleration

from .test_helper import (
    build_node_infos,
    check_filter_vector,
    check_score_vector,
    conformance_cases,
    random_nodes,
    random_pod,
    require_case,
    row_orders,
    run_conformance_filter,
    run_conformance_score,
)


def node_with_taints(name: str, taints: list[dict[str, str]]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"taints": taints}}


def pod_with_tolerations(tolerations: list[dict[str, str]], *, uid: str = "pod1") -> dict[str, Any]:
    return {"metadata": {"name": "pod1", "namespace": "default", "uid": uid}, "spec": {"tolerations": tolerations}}


def plugin() -> TaintToleration:
    return taint_toleration.new({}, Handle())


def test_plugin_shape() -> None:
    pl = plugin()
    assert pl.name() == NAME == "TaintToleration"
    for proto in (FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions, VectorFilterPlugin, VectorScorePlugin):
        assert isinstance(pl, proto)
    assert pl.score_extensions() is pl


UNTOLERATED = Status.unresolvable(ERR_REASON_NOT_MATCH)

FILTER_CASES: list[tuple[str, list[dict[str, str]], list[dict[str, str]], Status | None]] = [
    (
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        [],
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        UNTOLERATED,
    ),
    (
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        None,
    ),
    (
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        UNTOLERATED,
    ),
    (
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates the taints",
        [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        None,
    ),
    (
        "A pod has multiple tolerations, node has multiple taints, all the taints are tolerated",
        [
            {"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "operator": "Exists", "effect": "NoSchedule"},
        ],
        [
            {"key": "dedicated", "value": "user2", "effect": "NoSchedule"},
            {"key": "foo", "value": "bar", "effect": "NoSchedule"},
        ],
        None,
    ),
    (
        "A pod has a toleration that keys and values match the taint, but (non-empty) effect doesn't match",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        UNTOLERATED,
    ),
    (
        "The pod has a toleration that keys and values match the taint, the effect of toleration is empty",
        [{"key": "foo", "operator": "Equal", "value": "bar"}],
        [{"key": "foo", "value": "bar", "effect": "NoSchedule"}],
        None,
    ),
    (
        "The pod has a toleration that doesn't match, but the effect of taint on node is PreferNoSchedule",
        [{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}],
        [{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}],
        None,
    ),
    (
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule",
        [],
        [{"key": "dedicated", "value": "user1", "effect": "PreferNoSchedule"}],
        None,
    ),
    (
        "NoExecute taints are enforced like NoSchedule ones",
        [{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": "foo", "value": "bar", "effect": "NoExecute"}],
        UNTOLERATED,
    ),
    (
        "Pod with Gt toleration cannot be scheduled when feature gate is disabled",
        [{"key": "node.kubernetes.io/sla", "operator": "Gt", "value": "750", "effect": "NoSchedule"}],
        [{"key": "node.kubernetes.io/sla", "value": "950", "effect": "NoSchedule"}],
        UNTOLERATED,
    ),
    (
        "An empty key with operator Exists tolerates every taint",
        [{"operator": "Exists"}],
        [{"key": "a", "value": "b", "effect": "NoSchedule"}, {"key": "c", "effect": "NoExecute"}],
        None,
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "taints", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(tolerations: list[dict[str, str]], taints: list[dict[str, str]], want: Status | None) -> None:
    """Upstream TestTaintTolerationFilter; the reason is v1.37's fixed text, not the old per-taint one."""
    node = NodeInfo(node_with_taints("nodeA", taints))
    pod = PodInfo(pod_with_tolerations(tolerations))
    pl = plugin()
    assert pl.filter(CycleState(), pod, node) == want
    assert pl.filter_vector(CycleState(), pod, NodeTable([node]), np.array([0])).tolist() == [want is None]


def test_filter_reason_is_upstream_v137_text() -> None:
    status = plugin().filter(
        CycleState(),
        PodInfo(pod_with_tolerations([])),
        NodeInfo(node_with_taints("nodeA", [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}])),
    )
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("node(s) had untolerated taint(s)",)


CPU = {"key": "cpu-type", "value": "arm64", "effect": "PreferNoSchedule"}
DISK = {"key": "disk-type", "value": "ssd", "effect": "PreferNoSchedule"}

SCORE_CASES: list[tuple[str, list[dict[str, str]], list[list[dict[str, str]]], list[int]]] = [
    (
        "node with taints tolerated by the pod, gets a higher score than those node with intolerable taints",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [
            [{"key": "foo", "value": "bar", "effect": "PreferNoSchedule"}],
            [{"key": "foo", "value": "blah", "effect": "PreferNoSchedule"}],
        ],
        [MAX_NODE_SCORE, 0],
    ),
    (
        "the nodes that all of their taints are tolerated by the pod, get the same score",
        [
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "PreferNoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"},
        ],
        [[], [CPU], [CPU, DISK]],
        [MAX_NODE_SCORE, MAX_NODE_SCORE, MAX_NODE_SCORE],
    ),
    (
        "the more intolerable taints a node has, the lower score it gets.",
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [[], [CPU], [CPU, DISK]],
        [MAX_NODE_SCORE, 50, 0],
    ),
    (
        "only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations priority",
        [
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"},
        ],
        [[], [{"key": "cpu-type", "value": "arm64", "effect": "NoSchedule"}], [CPU, DISK]],
        [MAX_NODE_SCORE, MAX_NODE_SCORE, 0],
    ),
    (
        "Default behaviour No taints and tolerations, lands on node with no taints",
        [],
        [[], [CPU]],
        [MAX_NODE_SCORE, 0],
    ),
    (
        "a toleration with an empty effect also tolerates PreferNoSchedule taints",
        [{"key": "cpu-type", "operator": "Exists"}],
        [[], [CPU], [CPU, DISK]],
        [MAX_NODE_SCORE, MAX_NODE_SCORE, 0],
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "node_taints", "expected"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(tolerations: list[dict[str, str]], node_taints: list[list[dict[str, str]]], expected: list[int]) -> None:
    """Upstream TestTaintTolerationScore: PreScore, Score per node, reverse NormalizeScore."""
    infos = build_node_infos([node_with_taints(f"node{i}", t) for i, t in enumerate(node_taints)])
    pod = PodInfo(pod_with_tolerations(tolerations))
    pl = plugin()
    state = CycleState()
    assert pl.pre_score(state, pod, infos) is None
    scores = []
    for ni in infos:
        score, status = pl.score(state, pod, ni)
        assert status is None
        scores.append(NodeScore(ni.name, score))
    raw = pl.score_vector(state, pod, NodeTable(infos), np.arange(len(infos)))
    assert raw.tolist() == [s.score for s in scores]
    assert pl.normalize_score(state, pod, scores) is None
    assert [s.score for s in scores] == expected


def test_score_without_pre_score_is_an_error() -> None:
    score, status = plugin().score(CycleState(), PodInfo(pod_with_tolerations([])), NodeInfo(node_with_taints("a", [])))
    assert score == 0
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('failed to read "PreScoreTaintToleration" from cycleState: not found',)


NODE_HINT_CASES: list[tuple[str, list[dict[str, str]] | None, list[dict[str, str]], QueueingHint]] = [
    (
        "skip-queue-on-untoleratedtaint-node-added",
        None,
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-toleratedtaint-node-added",
        None,
        [{"key": "dedicated", "value": "user2", "effect": "NoSchedule"}],
        QueueingHint.QUEUE,
    ),
    (
        "skip-unrelated-change",
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        [
            {"key": "dedicated", "value": "user1", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "user3", "effect": "NoSchedule"},
        ],
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-taint-change",
        [{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}],
        [{"key": "dedicated", "value": "user2", "effect": "NoSchedule"}],
        QueueingHint.QUEUE,
    ),
    (
        "skip-when-already-tolerated",
        [],
        [{"key": "dedicated", "value": "user2", "effect": "NoSchedule"}],
        QueueingHint.QUEUE_SKIP,
    ),
]


@pytest.mark.parametrize(
    ("old_taints", "new_taints", "expected"), [c[1:] for c in NODE_HINT_CASES], ids=[c[0] for c in NODE_HINT_CASES]
)
def test_node_change_hint(
    old_taints: list[dict[str, str]] | None, new_taints: list[dict[str, str]], expected: QueueingHint
) -> None:
    """Upstream TestIsSchedulableAfterNodeChange."""
    pod = PodInfo(
        pod_with_tolerations([{"key": "dedicated", "operator": "Equal", "value": "user2", "effect": "NoSchedule"}])
    )
    node_event = plugin().events_to_register()[0]
    assert node_event.event.resource == "Node"
    assert node_event.event.action_type == ActionType.ADD | ActionType.UPDATE_NODE_TAINT
    assert node_event.hint is not None
    old = None if old_taints is None else node_with_taints("nodeA", old_taints)
    assert node_event.hint(pod, old, node_with_taints("nodeA", new_taints)) == expected
    # NodeInfo objects are accepted as well as node dicts.
    old_info = None if old is None else NodeInfo(old)
    assert node_event.hint(pod, old_info, NodeInfo(node_with_taints("nodeA", new_taints))) == expected


@pytest.mark.parametrize(
    ("new_uid", "expected"),
    [("uid0", QueueingHint.QUEUE), ("uid1", QueueingHint.QUEUE_SKIP)],
    ids=["queue-on-the-target-pod's-update", "skip-updates-other-pod"],
)
def test_pod_toleration_change_hint(new_uid: str, expected: QueueingHint) -> None:
    """Upstream Test_isSchedulableAfterPodChange."""
    pod = PodInfo(pod_with_tolerations([], uid="uid0"))
    pod_event = plugin().events_to_register()[1]
    assert pod_event.event.resource == "Pod"
    assert pod_event.event.action_type == ActionType.UPDATE_POD_TOLERATIONS
    assert pod_event.hint is not None
    new = pod_with_tolerations([{"key": "foo", "operator": "Exists"}], uid=new_uid)
    assert pod_event.hint(pod, pod_with_tolerations([], uid=new_uid), new) == expected


@pytest.mark.parametrize("case", conformance_cases("taints_affinity.json", NAME))
def test_conformance(case: dict[str, Any] | None) -> None:
    case = dict(require_case(case))
    expect = case["expect"]
    if "filter" in expect:
        assert run_conformance_filter(case, taint_toleration.new) == expect["filter"]
    else:
        assert run_conformance_score(case, taint_toleration.new) == expect["scores"]


@settings(max_examples=300, deadline=None)
@given(nodes=random_nodes(), pod=random_pod(), data=st.data())
def test_vector_paths_agree_with_reference(
    nodes: list[dict[str, Any]], pod: dict[str, Any], data: st.DataObject
) -> None:
    infos = build_node_infos(nodes)
    rows = data.draw(row_orders(len(infos)))
    check_filter_vector(plugin(), pod, infos, rows)
    check_score_vector(plugin(), pod, infos, rows)
