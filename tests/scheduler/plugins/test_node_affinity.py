"""NodeAffinity against upstream's node_affinity_test.go (v1.37) and the translated conformance cases."""

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
    NodeScore,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
    VectorFilterPlugin,
    VectorScorePlugin,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_affinity
from kubeplane.scheduler.plugins.node_affinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    NodeAffinity,
    pre_filter_node_names,
)

from .test_helper import (
    build_node_infos,
    check_filter_vector,
    check_score_vector,
    conformance_cases,
    node_selector,
    preferred_terms,
    random_nodes,
    random_pod,
    require_case,
    row_orders,
    run_conformance_filter,
    run_conformance_score,
)

POD_MISMATCH = Status.unresolvable(ERR_REASON_POD)
ENFORCED = Status.unresolvable(ERR_REASON_ENFORCED)


def make_node(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}}


def make_pod(
    *,
    node_selector: dict[str, str] | None = None,
    required: list[dict[str, Any]] | None = None,
    preferred: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    na: dict[str, Any] = {}
    if required is not None:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if na:
        spec["affinity"] = {"nodeAffinity": na}
    if affinity is not None:
        spec["affinity"] = affinity
    return {"metadata": {"name": "p", "namespace": "default", "uid": "p-uid"}, "spec": spec}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def plugin(args: dict[str, Any] | None = None) -> NodeAffinity:
    return node_affinity.new(args or {}, Handle())


def added_required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def test_plugin_shape() -> None:
    pl = plugin()
    assert pl.name() == NAME == "NodeAffinity"
    protocols = (FilterPlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions)
    for proto in (*protocols, VectorFilterPlugin, VectorScorePlugin):
        assert isinstance(pl, proto)
    assert pl.pre_filter_extensions() is None
    assert pl.score_extensions() is pl


FOO_BAR = {"foo": "bar"}

# (upstream name, pod, node labels, node name, args, PreFilterResult names, PreFilter status, Filter status)
FILTER_CASES: list[tuple[str, dict[str, Any], dict[str, str], str, dict[str, Any], Any, Status | None, Any]] = [
    ("missing labels", make_pod(node_selector=FOO_BAR), {}, "n", {}, None, None, POD_MISMATCH),
    ("same labels", make_pod(node_selector=FOO_BAR), FOO_BAR, "n", {}, None, None, None),
    (
        "node labels are superset",
        make_pod(node_selector=FOO_BAR),
        {"foo": "bar", "baz": "blah"},
        "n",
        {},
        None,
        None,
        None,
    ),
    (
        "node labels are subset",
        make_pod(node_selector={"foo": "bar", "baz": "blah"}),
        FOO_BAR,
        "n",
        {},
        None,
        None,
        POD_MISMATCH,
    ),
    (
        "Pod with matchExpressions using In operator that matches the existing node",
        make_pod(required=[{"matchExpressions": [expr("foo", "In", "bar", "value2")]}]),
        FOO_BAR,
        "n",
        {},
        None,
        None,
        None,
    ),
    (
        "Pod with matchExpressions using Gt operator that matches the existing node",
        make_pod(required=[{"matchExpressions": [expr("kernel-version", "Gt", "0204")]}]),
        {"kernel-version": "0206"},
        "n",
        {},
        None,
        None,
        None,
    ),
    (
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        make_pod(required=[{"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}]),
        {"mem-type": "DDR3"},
        "n",
        {},
        None,
        None,
        None,
    ),
    (
        "Pod with matchExpressions using Exists operator that matches the existing node",
        make_pod(required=[{"matchExpressions": [expr("GPU", "Exists")]}]),
        {"GPU": "NVIDIA-GRID-K1"},
        "n",
        {},
        None,
        None,
        None,
    ),
    (
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        make_pod(required=[{"matchExpressions": [expr("foo", "In", "value1", "value2")]}]),
        FOO_BAR,
        "n",
        {},
        None,
        None,
        POD_MISMATCH,
    ),
    (
        "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
        make_pod(required=[{"matchExpressions": []}]),
        FOO_BAR,
        "n",
        {},
        None,
        None,
        POD_MISMATCH,
    ),
    ("Pod with no Affinity will schedule onto a node", make_pod(), FOO_BAR, "n", {}, None, Status.skip(), None),
    (
        "Pod with Affinity but nil NodeSelector will schedule onto a node",
        make_pod(affinity={"nodeAffinity": {}}),
        FOO_BAR,
        "n",
        {},
        None,
        Status.skip(),
        None,
    ),
    (
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        make_pod(required=[{"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}]),
        {"GPU": "NVIDIA-GRID-K1"},
        "n",
        {},
        None,
        None,
        None,
    ),
    (
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        make_pod(required=[{"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}]),
        {"GPU": "NVIDIA-GRID-K1"},
        "n",
        {},
        None,
        None,
        POD_MISMATCH,
    ),
    (
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto it",
        make_pod(
            required=[
                {"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]},
            ]
        ),
        FOO_BAR,
        "n",
        {},
        None,
        None,
        None,
    ),
    (
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied",
        make_pod(node_selector=FOO_BAR, required=[{"matchExpressions": [expr("foo", "Exists")]}]),
        FOO_BAR,
        "n",
        {},
        None,
        None,
        None,
    ),
    (
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector is not satisfied",
        make_pod(node_selector=FOO_BAR, required=[{"matchExpressions": [expr("foo", "Exists")]}]),
        {"foo": "barrrrrr"},
        "n",
        {},
        None,
        None,
        POD_MISMATCH,
    ),
    (
        "Pod with an invalid value in Affinity term won't be scheduled onto the node",
        make_pod(required=[{"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]}]),
        FOO_BAR,
        "n",
        {},
        None,
        None,
        POD_MISMATCH,
    ),
    (
        "Pod with matchFields using In operator that matches the existing node",
        make_pod(required=[{"matchFields": [name_in("node1")]}]),
        {},
        "node1",
        {},
        {"node1"},
        None,
        None,
    ),
    (
        "Pod with matchFields using In operator that does not match the existing node",
        make_pod(required=[{"matchFields": [name_in("node1")]}]),
        {},
        "node2",
        {},
        {"node1"},
        None,
        POD_MISMATCH,
    ),
    (
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        make_pod(
            required=[{"matchFields": [name_in("node1")]}, {"matchExpressions": [expr("foo", "In", "bar")]}],
        ),
        FOO_BAR,
        "node2",
        {},
        None,
        None,
        None,
    ),
    (
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        make_pod(required=[{"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}]),
        FOO_BAR,
        "node2",
        {},
        {"node1"},
        None,
        POD_MISMATCH,
    ),
    (
        "Pod with one term: both matchFields and matchExpressions match",
        make_pod(required=[{"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}]),
        FOO_BAR,
        "node1",
        {},
        {"node1"},
        None,
        None,
    ),
    (
        "Pod with two terms: both matchFields and matchExpressions do not match",
        make_pod(
            required=[
                {"matchFields": [name_in("node1")]},
                {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]},
            ]
        ),
        FOO_BAR,
        "node2",
        {},
        None,
        None,
        POD_MISMATCH,
    ),
    (
        "Pod with two terms of node.Name affinity",
        make_pod(required=[{"matchFields": [name_in("node1")]}, {"matchFields": [name_in("node2")]}]),
        {},
        "node2",
        {},
        {"node1", "node2"},
        None,
        None,
    ),
    (
        "Pod with two conflicting mach field requirements",
        make_pod(required=[{"matchFields": [name_in("node1"), name_in("node2")]}]),
        {},
        "node2",
        {},
        None,
        Status.unresolvable(ERR_REASON_CONFLICT),
        POD_MISMATCH,
    ),
    (
        "Matches added affinity and Pod's node affinity",
        make_pod(required=[{"matchExpressions": [expr("zone", "In", "foo")]}]),
        {"zone": "foo"},
        "node2",
        added_required({"matchFields": [name_in("node2")]}),
        None,
        None,
        None,
    ),
    (
        "Matches added affinity but not Pod's node affinity",
        make_pod(required=[{"matchExpressions": [expr("zone", "In", "bar")]}]),
        {"zone": "foo"},
        "node2",
        added_required({"matchFields": [name_in("node2")]}),
        None,
        None,
        POD_MISMATCH,
    ),
    (
        "Doesn't match added affinity",
        make_pod(),
        {"zone": "foo"},
        "node2",
        added_required({"matchExpressions": [expr("zone", "In", "bar")]}),
        None,
        None,
        ENFORCED,
    ),
    (
        "Doesn't match added affinity nor the pod's: the scheduler-enforced reason wins",
        make_pod(node_selector={"zone": "baz"}),
        {"zone": "foo"},
        "node2",
        added_required({"matchExpressions": [expr("zone", "In", "bar")]}),
        None,
        None,
        ENFORCED,
    ),
]


@pytest.mark.parametrize(
    ("pod", "labels", "node_name", "args", "want_names", "want_pre", "want"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_pre_filter_and_filter(
    pod: dict[str, Any],
    labels: dict[str, str],
    node_name: str,
    args: dict[str, Any],
    want_names: set[str] | None,
    want_pre: Status | None,
    want: Status | None,
) -> None:
    """Upstream TestNodeAffinity: PreFilter's result and status, then Filter (run even when PreFilter failed)."""
    pl = plugin(args)
    info = NodeInfo(make_node(node_name, labels))
    pod_info = PodInfo(pod)
    state = CycleState()
    result, pre = pl.pre_filter(state, pod_info, [info])
    assert pre == want_pre
    assert result == (None if want_names is None else PreFilterResult(frozenset(want_names)))
    assert pl.filter(state, pod_info, info) == want
    if pre is None:
        assert pl.filter_vector(state, pod_info, NodeTable([info]), np.array([0])).tolist() == [want is None]


@pytest.mark.parametrize(
    "pod",
    [
        make_pod(node_selector=FOO_BAR),
        make_pod(required=[{"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}]),
    ],
    ids=[
        "Matches node selector correctly even if PreFilter is not called",
        "Matches node affinity correctly even if PreFilter is not called",
    ],
)
def test_filter_without_pre_filter(pod: dict[str, Any]) -> None:
    """Upstream's fallback: Filter computes the required affinity itself when PreFilter did not run."""
    info = NodeInfo(make_node("n", {"foo": "bar", "GPU": "NVIDIA-GRID-K1"}))
    pl = plugin()
    assert pl.filter(CycleState(), PodInfo(pod), info) is None
    assert pl.filter_vector(CycleState(), PodInfo(pod), NodeTable([info]), np.array([0])).tolist() == [True]


@pytest.mark.parametrize(
    ("required", "expected"),
    [
        (None, None),
        ({"nodeSelectorTerms": []}, None),
        ({"nodeSelectorTerms": [{"matchFields": [name_in("a", "b")]}]}, {"a", "b"}),
        ({"nodeSelectorTerms": [{"matchFields": [name_in("a", "b"), name_in("b", "c")]}]}, {"b"}),
        ({"nodeSelectorTerms": [{"matchFields": [name_in("a")]}, {"matchFields": [name_in("b")]}]}, {"a", "b"}),
        ({"nodeSelectorTerms": [{"matchFields": [name_in("a")]}, {"matchExpressions": [expr("x", "Exists")]}]}, None),
        (
            {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["a"]}]}]},
            None,
        ),
        ({"nodeSelectorTerms": [{"matchFields": [name_in("a"), name_in("b")]}]}, set()),
    ],
    ids=[
        "no required affinity: any node",
        "no terms: any node (Filter then matches nothing)",
        "one term with several names",
        "names ANDed within a term: intersection",
        "terms ORed: union",
        "a term without names allows every node",
        "NotIn does not narrow",
        "conflicting names: empty",
    ],
)
def test_pre_filter_node_names(required: dict[str, Any] | None, expected: set[str] | None) -> None:
    assert pre_filter_node_names(required) == (None if expected is None else frozenset(expected))


def pref(weight: int, *exprs: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": list(exprs)}}


AFFINITY1 = [pref(2, expr("foo", "In", "bar"))]
AFFINITY2 = [
    pref(2, expr("foo", "In", "bar")),
    pref(4, expr("key", "In", "value")),
    pref(5, expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")),
]
LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
ADDED_PREFERRED = {
    "addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(3, expr("key", "In", "value"))]}
}

SCORE_CASES: list[tuple[str, dict[str, Any], list[tuple[str, dict[str, str]]], dict[str, Any], list[int]]] = [
    (
        "all nodes are same priority as NodeAffinity is nil",
        make_pod(),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        {},
        [0, 0, 0],
    ),
    (
        "no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' priority is zero",
        make_pod(preferred=AFFINITY1),
        [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        {},
        [0, 0, 0],
    ),
    (
        "only node1 matches the preferred scheduling requirements of pod",
        make_pod(preferred=AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        {},
        [100, 0, 0],
    ),
    (
        "all nodes matches the preferred scheduling requirements of pod but with different priorities ",
        make_pod(preferred=AFFINITY2),
        [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        {},
        [18, 100, 36],
    ),
    (
        "added affinity",
        make_pod(),
        [("node1", LABEL1), ("node2", LABEL2)],
        ADDED_PREFERRED,
        [0, 100],
    ),
    (
        "added affinity and pod has default affinity",
        make_pod(preferred=AFFINITY1),
        [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        ADDED_PREFERRED,
        [40, 60, 100],
    ),
    (
        "zero weights and empty preferences are ignored",
        make_pod(preferred=[pref(0, expr("foo", "In", "bar")), {"weight": 7, "preference": {}}]),
        [("node1", LABEL1), ("node2", LABEL2)],
        {},
        [0, 0],
    ),
]


@pytest.mark.parametrize(
    ("pod", "nodes", "args", "expected"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(
    pod: dict[str, Any], nodes: list[tuple[str, dict[str, str]]], args: dict[str, Any], expected: list[int]
) -> None:
    """Upstream TestNodeAffinityPriority: PreScore (a Skip scores 0), Score, NormalizeScore."""
    pl = plugin(args)
    infos = build_node_infos([make_node(name, labels) for name, labels in nodes])
    pod_info = PodInfo(pod)
    state = CycleState()
    pre = pl.pre_score(state, pod_info, infos)
    if pre is not None:
        assert pre.is_skip()
        assert expected == [0] * len(infos)
        return
    scores = []
    for ni in infos:
        score, status = pl.score(state, pod_info, ni)
        assert status is None
        scores.append(NodeScore(ni.name, score))
    raw = pl.score_vector(state, pod_info, NodeTable(infos), np.arange(len(infos)))
    assert raw.tolist() == [s.score for s in scores]
    assert pl.normalize_score(state, pod_info, scores) is None
    assert [s.score for s in scores] == expected


def test_score_without_pre_score_computes_preferred_terms() -> None:
    info = NodeInfo(make_node("node5", LABEL5))
    assert plugin().score(CycleState(), PodInfo(make_pod(preferred=AFFINITY2)), info) == (11, None)


def test_pre_score_reports_invalid_preferred_terms() -> None:
    pod = PodInfo(make_pod(preferred=[pref(1, expr("foo", "Foo", "bar"))]))
    status = plugin().pre_score(CycleState(), pod, [])
    assert status is not None
    assert status.code == Code.ERROR
    assert "Unsupported value" in status.message()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            added_required({"matchExpressions": [expr("zone", "Foo", "a")]}),
            "parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: ",
        ),
        (
            {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [pref(1, expr("zone", "In"))]}},
            "parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: ",
        ),
    ],
    ids=["invalid added required terms", "invalid added preferred terms"],
)
def test_new_rejects_invalid_added_affinity(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plugin(args)


def test_added_affinity_alone_does_not_skip() -> None:
    """PreFilter runs for a pod without affinity when addedAffinity is set (upstream "Doesn't match added affinity")."""
    state = CycleState()
    assert plugin(added_required({"matchExpressions": [expr("zone", "Exists")]})).pre_filter(
        state, PodInfo(make_pod()), []
    ) == (None, None)
    assert plugin(ADDED_PREFERRED).pre_score(state, PodInfo(make_pod()), []) is None


HINT_CASES: list[tuple[str, dict[str, Any], dict[str, Any] | None, dict[str, Any], dict[str, Any], QueueingHint]] = [
    ("skip-queue-on-add", make_pod(node_selector=FOO_BAR), None, make_node("n"), {}, QueueingHint.QUEUE_SKIP),
    ("queue-on-add", make_pod(node_selector=FOO_BAR), None, make_node("n", FOO_BAR), {}, QueueingHint.QUEUE),
    (
        "skip-unrelated-changes",
        make_pod(node_selector=FOO_BAR),
        make_node("n"),
        make_node("n", {"zone": "a"}),
        {},
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-unrelated-changes-on-labels",
        make_pod(node_selector=FOO_BAR),
        make_node("n", FOO_BAR),
        make_node("n", {"foo": "bar", "zone": "a"}),
        {},
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "skip-labels-changes-on-node-from-suitable-to-unsuitable",
        make_pod(node_selector=FOO_BAR),
        make_node("n", FOO_BAR),
        make_node("n", {"foo": "baz"}),
        {},
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-labels-change-makes-pod-schedulable",
        make_pod(node_selector=FOO_BAR),
        make_node("n"),
        make_node("n", FOO_BAR),
        {},
        QueueingHint.QUEUE,
    ),
    (
        "skip-queue-on-add-scheduler-enforced-node-affinity",
        make_pod(node_selector=FOO_BAR),
        None,
        make_node("n", FOO_BAR),
        added_required({"matchExpressions": [expr("zone", "In", "z1")]}),
        QueueingHint.QUEUE_SKIP,
    ),
    (
        "queue-on-add-scheduler-enforced-node-affinity",
        make_pod(node_selector=FOO_BAR),
        None,
        make_node("n", {"foo": "bar", "zone": "z1"}),
        added_required({"matchExpressions": [expr("zone", "In", "z1")]}),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("pod", "old", "new", "args", "expected"), [c[1:] for c in HINT_CASES], ids=[c[0] for c in HINT_CASES]
)
def test_node_change_hint(
    pod: dict[str, Any], old: dict[str, Any] | None, new: dict[str, Any], args: dict[str, Any], expected: QueueingHint
) -> None:
    """Upstream Test_isSchedulableAfterNodeChange (node dicts and NodeInfos both accepted)."""
    (registration,) = plugin(args).events_to_register()
    assert registration.event.resource == "Node"
    assert registration.event.action_type == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    assert registration.hint is not None
    pod_info = PodInfo(pod)
    assert registration.hint(pod_info, old, new) == expected
    assert registration.hint(pod_info, None if old is None else NodeInfo(old), NodeInfo(new)) == expected


@pytest.mark.parametrize("case", conformance_cases("taints_affinity.json", NAME))
def test_conformance(case: dict[str, Any] | None) -> None:
    case = dict(require_case(case))
    expect = case["expect"]
    if "filter" in expect:
        assert run_conformance_filter(case, node_affinity.new) == expect["filter"]
    else:
        assert run_conformance_score(case, node_affinity.new) == expect["scores"]


@st.composite
def added_affinity_args(draw: st.DrawFn) -> dict[str, Any]:
    """NodeAffinityArgs with valid addedAffinity (the factory rejects invalid ones)."""
    added: dict[str, Any] = {}
    if draw(st.booleans()):
        selector = draw(node_selector())
        try:
            node_affinity.new({"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}, Handle())
            added["requiredDuringSchedulingIgnoredDuringExecution"] = selector
        except ValueError:
            pass
    if draw(st.booleans()):
        terms = draw(preferred_terms())
        try:
            node_affinity.new({"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}, Handle())
            added["preferredDuringSchedulingIgnoredDuringExecution"] = terms
        except ValueError:
            pass
    return {"addedAffinity": added} if added else {}


@settings(max_examples=400, deadline=None)
@given(nodes=random_nodes(), pod=random_pod(), args=added_affinity_args(), data=st.data())
def test_vector_paths_agree_with_reference(
    nodes: list[dict[str, Any]], pod: dict[str, Any], args: dict[str, Any], data: st.DataObject
) -> None:
    """filter_vector/score_vector equal Filter/Score on random clusters (labels, Gt/Lt, matchFields, bad terms)."""
    infos = build_node_infos(nodes)
    rows = data.draw(row_orders(len(infos)))
    check_filter_vector(plugin(args), pod, infos, rows)
    check_score_vector(plugin(args), pod, infos, rows)


def test_vector_filter_uses_label_columns_on_a_large_table() -> None:
    """A smoke check at scale: 5000 nodes, a selector and two ORed terms, compared with the reference."""
    nodes = [
        make_node(f"node-{i}", {"zone": f"z{i % 7}", **({"gpu": "true"} if i % 11 == 0 else {})}) for i in range(5000)
    ]
    infos = build_node_infos(nodes)
    pod = make_pod(
        node_selector={"zone": "z3"},
        required=[{"matchExpressions": [expr("gpu", "Exists")]}, {"matchFields": [name_in("node-3")]}],
    )
    check_filter_vector(plugin(), pod, infos, list(range(0, 5000, 3)))
