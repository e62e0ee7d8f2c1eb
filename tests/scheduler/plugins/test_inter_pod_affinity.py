"""InterPodAffinity against upstream's filtering_test.go / scoring_test.go (v1.37) and the conformance cases."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
)
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins import inter_pod_affinity
from kubeplane.scheduler.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    InterPodAffinity,
    pod_terms,
)

from .test_helper import CONFORMANCE_DIR, pre_score_and_score

CONFORMANCE = CONFORMANCE_DIR / "interpod_affinity.json"

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


# --- builders ---------------------------------------------------------------------------------------------


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}, "spec": {}, "status": {}}


def pod(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    node_name: str = "",
    namespace: str = "default",
    affinity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if node_name:
        spec["nodeName"] = node_name
    if affinity:
        spec["affinity"] = affinity
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": f"{namespace}/{name}", "labels": dict(labels or {})},
        "spec": spec,
    }


def term(
    topology_key: str, op: str = "In", key: str = "service", values: Sequence[str] = ("S1",), **extra: Any
) -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": op}
    if values:
        expr["values"] = list(values)
    return {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology_key, **extra}


def weighted(weight: int, t: Mapping[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def make_plugin(
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    namespaces: Sequence[Mapping[str, Any]] = (),
    args: Mapping[str, Any] | None = None,
) -> tuple[InterPodAffinity, Snapshot]:
    snapshot = Snapshot.from_objects(nodes, pods)
    ns = list(namespaces)

    def list_objects(resource: str, namespace: str) -> Sequence[Mapping[str, Any]]:
        assert resource == "namespaces"
        return ns

    handle = Handle(snapshot_lister=snapshot, list_objects=list_objects)
    return inter_pod_affinity.new(args or {}, handle), snapshot


def run_filter(plugin: InterPodAffinity, snapshot: Snapshot, incoming: PodInfo) -> dict[str, Status | None]:
    state = CycleState()
    nodes = snapshot.list()
    _, status = plugin.pre_filter(state, incoming, nodes)
    if status is not None and status.is_skip():
        return {ni.name: None for ni in nodes}
    if status is not None:
        return {ni.name: status for ni in nodes}
    return {ni.name: plugin.filter(state, incoming, ni) for ni in nodes}


def run_score(plugin: InterPodAffinity, snapshot: Snapshot, incoming: PodInfo) -> dict[str, int]:
    return pre_score_and_score(plugin, incoming, snapshot.list())


def summary(status: Status | None) -> tuple[str, tuple[str, ...]]:
    if status is None:
        return ("Success", ())
    return (status.code.label, status.reasons)


# --- protocol ---------------------------------------------------------------------------------------------


def test_protocols_and_name() -> None:
    plugin, _ = make_plugin([], [])
    assert plugin.name() == NAME == "InterPodAffinity"
    for proto in (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, EnqueueExtensions):
        assert isinstance(plugin, proto)
    assert plugin.pre_filter_extensions() is plugin
    assert plugin.score_extensions() is plugin


def test_args_defaults_and_validation() -> None:
    plugin, _ = make_plugin([], [])
    assert plugin.hard_pod_affinity_weight == 1
    assert plugin.ignore_preferred_terms_of_existing_pods is False
    handle = Handle()
    p = inter_pod_affinity.new({"hardPodAffinityWeight": 5, "ignorePreferredTermsOfExistingPods": True}, handle)
    assert (p.hard_pod_affinity_weight, p.ignore_preferred_terms_of_existing_pods) == (5, True)
    with pytest.raises(ValueError, match=r"not in valid range \[0-100\]"):
        inter_pod_affinity.new({"hardPodAffinityWeight": 101}, handle)


# --- Filter (upstream TestRequiredAffinitySingleNode / MultipleNodes, abridged) ---------------------------

N1 = node("node1", region="r1", zone="z11", hostname="node1")
AFF_S1 = {"podAffinity": {REQ: [term("region")]}}
ANTI_S1 = {"podAntiAffinity": {REQ: [term("zone")]}}

FILTER_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]] = [
    (
        "a pod with no required pod affinity can schedule onto a node with no existing pods",
        pod("p"),
        [N1],
        [],
        {"node1": ("Success", ())},
    ),
    (
        "satisfies required pod affinity with In operator matching an existing pod",
        pod("p", affinity=AFF_S1),
        [N1],
        [pod("e", {"service": "S1"}, node_name="node1")],
        {"node1": ("Success", ())},
    ),
    (
        "does not satisfy required pod affinity when no existing pod matches",
        pod("p", affinity=AFF_S1),
        [N1],
        [pod("e", {"service": "S2"}, node_name="node1")],
        {"node1": ("UnschedulableAndUnresolvable", (ERR_REASON_AFFINITY_RULES_NOT_MATCH,))},
    ),
    (
        "self-affine first pod of a series is allowed when nothing in the cluster matches",
        pod("p", {"service": "S1"}, affinity=AFF_S1),
        [N1],
        [],
        {"node1": ("Success", ())},
    ),
    (
        "self-affine pod still needs the topology key on the node",
        pod("p", {"service": "S1"}, affinity={"podAffinity": {REQ: [term("rack")]}}),
        [N1],
        [],
        {"node1": ("UnschedulableAndUnresolvable", (ERR_REASON_AFFINITY_RULES_NOT_MATCH,))},
    ),
    (
        "affinity term in another namespace does not match",
        pod("p", affinity=AFF_S1),
        [N1],
        [pod("e", {"service": "S1"}, node_name="node1", namespace="other")],
        {"node1": ("UnschedulableAndUnresolvable", (ERR_REASON_AFFINITY_RULES_NOT_MATCH,))},
    ),
    (
        "incoming pod anti-affinity rejects the node of a matching existing pod",
        pod("p", affinity=ANTI_S1),
        [N1],
        [pod("e", {"service": "S1"}, node_name="node1")],
        {"node1": ("Unschedulable", (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,))},
    ),
    (
        "existing pod anti-affinity rejects the incoming pod",
        pod("p", {"service": "S1"}),
        [N1],
        [pod("e", node_name="node1", affinity=ANTI_S1)],
        {"node1": ("Unschedulable", (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,))},
    ),
    (
        "anti-affinity is per topology: other zone is fine",
        pod("p", {"service": "S1"}),
        [N1, node("node2", region="r1", zone="z12")],
        [pod("e", node_name="node1", affinity=ANTI_S1)],
        {
            "node1": ("Unschedulable", (ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,)),
            "node2": ("Success", ()),
        },
    ),
    (
        "affinity by region admits every node of the region",
        pod("p", affinity=AFF_S1),
        [N1, node("node2", region="r1", zone="z12"), node("node3", region="r2")],
        [pod("e", {"service": "S1"}, node_name="node1")],
        {
            "node1": ("Success", ()),
            "node2": ("Success", ()),
            "node3": ("UnschedulableAndUnresolvable", (ERR_REASON_AFFINITY_RULES_NOT_MATCH,)),
        },
    ),
    (
        "namespaceSelector selects the existing pod's namespace",
        pod("p", affinity={"podAffinity": {REQ: [term("region", namespaceSelector={"matchLabels": {"team": "a"}})]}}),
        [N1],
        [pod("e", {"service": "S1"}, node_name="node1", namespace="ns-a")],
        {"node1": ("Success", ())},
    ),
    (
        "matchLabelKeys narrows the selector with the incoming pod's label value",
        pod("p", {"app": "x"}, affinity={"podAntiAffinity": {REQ: [term("zone", matchLabelKeys=["app"])]}}),
        [N1],
        [pod("e", {"service": "S1", "app": "y"}, node_name="node1")],
        {"node1": ("Success", ())},
    ),
    (
        "mismatchLabelKeys excludes pods with the same label value",
        pod("p", {"app": "x"}, affinity={"podAntiAffinity": {REQ: [term("zone", mismatchLabelKeys=["app"])]}}),
        [N1],
        [pod("e", {"service": "S1", "app": "y"}, node_name="node1")],
        {"node1": ("Unschedulable", (ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,))},
    ),
    (
        "bad selector operator fails PreFilter as unresolvable",
        pod("p", affinity={"podAffinity": {REQ: [term("region", op="Bogus")]}}),
        [N1],
        [],
        {
            "node1": (
                "UnschedulableAndUnresolvable",
                ('parsing pod: requiredAffinityTerms: "Bogus" is not a valid pod selector operator',),
            )
        },
    ),
]


@pytest.mark.parametrize(
    ("incoming", "nodes", "pods", "want"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(
    incoming: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], want: dict[str, Any]
) -> None:
    plugin, snapshot = make_plugin(nodes, pods, [namespace("default"), namespace("ns-a", team="a")])
    got = {name: summary(st) for name, st in run_filter(plugin, snapshot, PodInfo(incoming)).items()}
    assert got == want


def test_pre_filter_skip_and_filter_without_state() -> None:
    plugin, snapshot = make_plugin([N1], [pod("e", {"service": "S2"}, node_name="node1", affinity=ANTI_S1)])
    state = CycleState()
    incoming = PodInfo(pod("p", {"service": "S3"}))
    _, status = plugin.pre_filter(state, incoming, snapshot.list())
    assert status is not None
    assert status.code == Code.SKIP
    st = plugin.filter(state, incoming, snapshot.list()[0])
    assert st is not None
    assert st.code == Code.ERROR


# --- PreFilterExtensions ----------------------------------------------------------------------------------

NODES3 = [node("node1", zone="z1"), node("node2", zone="z1"), node("node3", zone="z2")]
EXT_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, Any]]] = [
    (
        "added pod satisfies incoming affinity",
        pod("p", affinity={"podAffinity": {REQ: [term("zone")]}}),
        [pod("x", {"service": "S2"}, node_name="node3")],
        pod("a", {"service": "S1"}, node_name="node1"),
    ),
    (
        "added pod violates incoming anti-affinity",
        pod("p", affinity={"podAntiAffinity": {REQ: [term("zone")]}}),
        [pod("x", {"service": "S1"}, node_name="node3")],
        pod("a", {"service": "S1"}, node_name="node2"),
    ),
    (
        "added pod with anti-affinity rejects incoming pod",
        pod("p", {"service": "S1"}, affinity={"podAffinity": {REQ: [term("zone", values=["S9"])]}}),
        [pod("x", {"service": "S9"}, node_name="node3")],
        pod("a", node_name="node3", affinity={"podAntiAffinity": {REQ: [term("zone")]}}),
    ),
]


@pytest.mark.parametrize(("incoming", "pods", "extra"), [c[1:] for c in EXT_CASES], ids=[c[0] for c in EXT_CASES])
def test_add_pod_and_remove_pod_match_snapshot(
    incoming: dict[str, Any], pods: list[dict[str, Any]], extra: dict[str, Any]
) -> None:
    p = PodInfo(incoming)
    extra_info = PodInfo(extra)
    plugin_without, snap_without = make_plugin(NODES3, pods)
    plugin_with, snap_with = make_plugin(NODES3, [*pods, extra])
    expected_with = run_filter(plugin_with, snap_with, p)
    expected_without = run_filter(plugin_without, snap_without, p)
    assert expected_with != expected_without

    # add_pod on a state computed without the pod == a snapshot that has it.
    state = CycleState()
    _, st = plugin_without.pre_filter(state, p, snap_without.list())
    assert st is None
    target = snap_without.get(extra_info.node_name)
    assert target is not None
    assert plugin_without.add_pod(state, p, extra_info, target) is None
    got = {ni.name: plugin_without.filter(state, p, ni) for ni in snap_without.list()}
    assert got == expected_with

    # remove_pod on a state computed with the pod == a snapshot without it; the clone is independent.
    state = CycleState()
    _, st = plugin_with.pre_filter(state, p, snap_with.list())
    assert st is None
    before = state.clone()
    target = snap_with.get(extra_info.node_name)
    assert target is not None
    assert plugin_with.remove_pod(state, p, extra_info, target) is None
    got = {ni.name: plugin_with.filter(state, p, ni) for ni in snap_with.list()}
    assert got == expected_without
    assert {ni.name: plugin_with.filter(before, p, ni) for ni in snap_with.list()} == expected_with


def test_extensions_without_state_error() -> None:
    plugin, snapshot = make_plugin([N1], [])
    p = PodInfo(pod("p"))
    st = plugin.add_pod(CycleState(), p, p, snapshot.list()[0])
    assert st is not None
    assert st.code == Code.ERROR
    st = plugin.remove_pod(CycleState(), p, p, snapshot.list()[0])
    assert st is not None
    assert st.code == Code.ERROR


# --- Score (upstream TestPreferredAffinity, abridged) -----------------------------------------------------

SCORE_NODES = [node("node1", region="r1"), node("node2", region="r2"), node("node3", region="r3")]
SCORE_CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]], dict[str, Any], dict[str, int]]] = [
    (
        "no affinity anywhere: PreScore skips",
        pod("p", {"service": "S1"}),
        [pod("e", node_name="node1")],
        {},
        {"node1": 0, "node2": 0, "node3": 0},
    ),
    (
        "preferred affinity favours the region with a matching pod",
        pod("p", affinity={"podAffinity": {PREF: [weighted(5, term("region"))]}}),
        [pod("e", {"service": "S1"}, node_name="node1")],
        {},
        {"node1": 100, "node2": 0, "node3": 0},
    ),
    (
        "preferred anti-affinity gives negative raw scores, min/max normalised",
        pod("p", affinity={"podAntiAffinity": {PREF: [weighted(5, term("region"))]}}),
        [pod("e", {"service": "S1"}, node_name="node1")],
        {},
        {"node1": 0, "node2": 100, "node3": 100},
    ),
    (
        "existing pod's required affinity counts with hardPodAffinityWeight",
        pod("p", {"service": "S1"}),
        [pod("e", node_name="node2", affinity={"podAffinity": {REQ: [term("region")]}})],
        {},
        {"node1": 0, "node2": 100, "node3": 0},
    ),
    (
        "hardPodAffinityWeight 0 ignores existing required affinity: skip",
        pod("p", {"service": "S1"}),
        [pod("e", node_name="node2", affinity={"podAffinity": {REQ: [term("region")]}})],
        {"hardPodAffinityWeight": 0},
        {"node1": 0, "node2": 0, "node3": 0},
    ),
    (
        "ignorePreferredTermsOfExistingPods skips when the pod has no preferred terms",
        pod("p", {"service": "S1"}),
        [pod("e", node_name="node2", affinity={"podAffinity": {PREF: [weighted(3, term("region"))]}})],
        {"ignorePreferredTermsOfExistingPods": True},
        {"node1": 0, "node2": 0, "node3": 0},
    ),
    (
        "existing pod's preferred anti-affinity lowers its region",
        pod("p", {"service": "S1"}),
        [pod("e", node_name="node2", affinity={"podAntiAffinity": {PREF: [weighted(3, term("region"))]}})],
        {},
        {"node1": 100, "node2": 0, "node3": 100},
    ),
]


@pytest.mark.parametrize(
    ("incoming", "pods", "args", "want"), [c[1:] for c in SCORE_CASES], ids=[c[0] for c in SCORE_CASES]
)
def test_score(
    incoming: dict[str, Any], pods: list[dict[str, Any]], args: dict[str, Any], want: dict[str, int]
) -> None:
    plugin, snapshot = make_plugin(SCORE_NODES, pods, args=args)
    assert run_score(plugin, snapshot, PodInfo(incoming)) == want


def test_pre_score_no_nodes_skips_and_score_without_state_errors() -> None:
    plugin, snapshot = make_plugin(SCORE_NODES, [])
    p = PodInfo(pod("p", affinity={"podAffinity": {PREF: [weighted(5, term("region"))]}}))
    st = plugin.pre_score(CycleState(), p, [])
    assert st is not None
    assert st.code == Code.SKIP
    _, st = plugin.score(CycleState(), p, snapshot.list()[0])
    assert st is not None
    assert st.code == Code.ERROR


def test_pod_terms_cached_and_namespaces_default() -> None:
    p = PodInfo(pod("p", namespace="ns1", affinity={"podAffinity": {REQ: [term("zone")]}}))
    terms = pod_terms(p)
    assert terms is pod_terms(p)
    assert terms.required_affinity[0].namespaces == frozenset({"ns1"})


# --- EnqueueExtensions ------------------------------------------------------------------------------------


def test_events_and_hints() -> None:
    plugin, _ = make_plugin([], [])
    events = plugin.events_to_register()
    assert [e.event.resource for e in events] == ["AssignedPod", "Node"]
    assert events[0].event.action_type == ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE
    assert events[1].event.action_type == ActionType.ADD | ActionType.UPDATE_NODE_LABEL
    pod_hint, node_hint = events[0].hint, events[1].hint
    assert pod_hint is not None
    assert node_hint is not None
    target = PodInfo(pod("p", affinity={"podAffinity": {REQ: [term("zone")]}}))
    matching = pod("e", {"service": "S1"}, node_name="n1")
    other = pod("e", {"service": "S2"}, node_name="n1")
    assert pod_hint(target, None, matching) == QueueingHint.QUEUE
    assert pod_hint(target, None, other) == QueueingHint.QUEUE_SKIP
    assert pod_hint(target, other, matching) == QueueingHint.QUEUE
    assert pod_hint(target, None, pod("u", {"service": "S1"})) == QueueingHint.QUEUE_SKIP
    anti = PodInfo(pod("p", affinity={"podAntiAffinity": {REQ: [term("zone")]}}))
    assert pod_hint(anti, matching, None) == QueueingHint.QUEUE
    assert pod_hint(anti, other, None) == QueueingHint.QUEUE_SKIP
    assert node_hint(target, None, node("n2", zone="z")) == QueueingHint.QUEUE
    assert node_hint(target, node("n2"), node("n2", zone="z")) == QueueingHint.QUEUE
    assert node_hint(target, node("n2", a="1"), node("n2", a="2")) == QueueingHint.QUEUE_SKIP


# --- conformance ------------------------------------------------------------------------------------------


def _conformance_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(CONFORMANCE.read_text())["cases"]  # absent: collection fails
    return cases


_CASES = _conformance_cases()


_PARAMS: list[dict[str, Any] | None] = [*_CASES] if _CASES else [None]


@pytest.mark.parametrize("case", _PARAMS, ids=[c["id"] for c in _CASES] or ["absent"])
def test_conformance(case: dict[str, Any] | None) -> None:
    if case is None:
        pytest.fail(f"no case in {CONFORMANCE}")
    plugin, snapshot = make_plugin(
        case["nodes"], case["existingPods"], case.get("namespaces") or [], case["pluginArgs"]
    )
    incoming = PodInfo(case["pod"])
    if case["kind"] == "filter":
        got = {}
        for name, st in run_filter(plugin, snapshot, incoming).items():
            code, reasons = summary(st)
            got[name] = {"code": code, **({"reasons": list(reasons)} if reasons else {})}
        want = {
            n: {"code": e["code"], **({"reasons": e["reasons"]} if e.get("reasons") else {})}
            for n, e in case["expect"]["filter"].items()
        }
        assert got == want
    else:
        assert run_score(plugin, snapshot, incoming) == case["expect"]["scores"]
