"""PodTopologySpread and InterPodAffinity: the table-based PreFilter/PreScore (memoised per-node counts summed
per topology domain) and the vectorised Filter/Score against per-node oracles, on random clusters.

The oracles below are the plugins' original per-node loops (upstream's PreFilter/PreScore shape); the plugins'
per-node ``filter``/``score``/``normalize_score`` are the reference for ``filter_vector``/``score_vector``/
``normalize_vector``. The memo is exercised across "cycles": the same plugin instance sees the cluster again after
pods were added to or removed from some nodes (generations bumped, table rows refreshed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import FEASIBLE_ROWS_KEY, CycleState, FeasibleRows, NodeScore
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import inter_pod_affinity, pod_topology_spread
from kubeplane.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from kubeplane.scheduler.plugins.inter_pod_affinity_filtering import (
    PreFilterState,
    pod_terms,
    update_affinity,
    update_anti_affinity,
)
from kubeplane.scheduler.plugins.inter_pod_affinity_scoring import has_preferred, process_term, process_terms
from kubeplane.scheduler.plugins.pod_topology_spread import (
    DO_NOT_SCHEDULE,
    LABEL_HOSTNAME,
    SCHEDULE_ANYWAY,
    PodTopologySpread,
    count_pods_match_selector,
    node_labels_match_spread_constraints,
)

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
KEYS = (ZONE, LABEL_HOSTNAME, "rack")
NAMESPACES = ("ns1", "ns2")


# --- random clusters --------------------------------------------------------------------------------------


@st.composite
def selector(draw: st.DrawFn) -> Obj:
    sel: Obj = {}
    if draw(st.booleans()):
        sel["matchLabels"] = draw(
            st.dictionaries(st.sampled_from(("app", "tier")), st.sampled_from(("a", "b")), max_size=1)
        )
    if draw(st.integers(0, 3)) == 0:
        sel["matchExpressions"] = [{"key": "tier", "operator": draw(st.sampled_from(("Exists", "DoesNotExist")))}]
    return sel


@st.composite
def affinity_term(draw: st.DrawFn) -> Obj:
    term: Obj = {"labelSelector": draw(selector()), "topologyKey": draw(st.sampled_from(KEYS))}
    how = draw(st.integers(0, 3))
    if how == 1:
        term["namespaces"] = draw(st.lists(st.sampled_from(NAMESPACES), min_size=1, max_size=2, unique=True))
    elif how == 2:
        term["namespaceSelector"] = draw(st.sampled_from(({}, {"matchLabels": {"team": "x"}})))
    return term


@st.composite
def pod_affinity(draw: st.DrawFn) -> Obj:
    out: Obj = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        part: Obj = {}
        if draw(st.integers(0, 2)) == 0:
            part["requiredDuringSchedulingIgnoredDuringExecution"] = draw(
                st.lists(affinity_term(), min_size=1, max_size=2)
            )
        if draw(st.integers(0, 2)) == 0:
            part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": draw(st.integers(1, 100)), "podAffinityTerm": draw(affinity_term())}
                for _ in range(draw(st.integers(1, 2)))
            ]
        if part:
            out[kind] = part
    return out


@st.composite
def spread_constraint(draw: st.DrawFn) -> Obj:
    c: Obj = {
        "maxSkew": draw(st.integers(1, 3)),
        "topologyKey": draw(st.sampled_from(KEYS)),
        "whenUnsatisfiable": draw(st.sampled_from((DO_NOT_SCHEDULE, SCHEDULE_ANYWAY))),
        "labelSelector": draw(selector()),
    }
    if draw(st.booleans()):
        c["minDomains"] = draw(st.integers(1, 4))
    for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        if draw(st.booleans()):
            c[key] = draw(st.sampled_from(("Honor", "Ignore")))
    return c


def node_names(n: int) -> list[str]:
    return [f"n{i}" for i in range(n)]


@st.composite
def node(draw: st.DrawFn, name: str) -> Obj:
    labels = {}
    if draw(st.integers(0, 5)):
        labels[ZONE] = draw(st.sampled_from(("z1", "z2", "z3", "")))
    if draw(st.integers(0, 7)):
        labels[LABEL_HOSTNAME] = name
    if draw(st.booleans()):
        labels["rack"] = draw(st.sampled_from(("r1", "r2")))
    spec: Obj = {}
    if draw(st.integers(0, 4)) == 0:
        spec["taints"] = [{"key": "t", "effect": draw(st.sampled_from(("NoSchedule", "PreferNoSchedule")))}]
    return {"metadata": {"name": name, "labels": labels}, "spec": spec}


@st.composite
def pod(draw: st.DrawFn, name: str, node_name: str | None, *, incoming: bool = False) -> Obj:
    meta: Obj = {
        "name": name,
        "uid": name,
        "namespace": draw(st.sampled_from(NAMESPACES)),
        "labels": draw(st.dictionaries(st.sampled_from(("app", "tier")), st.sampled_from(("a", "b")), max_size=2)),
    }
    if not incoming and draw(st.integers(0, 9)) == 0:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    spec: Obj = {"containers": [{"name": "c"}]}
    if node_name:
        spec["nodeName"] = node_name
    if draw(st.integers(0, 2 if incoming else 3)) == 0 or incoming:
        aff = draw(pod_affinity())
        if aff:
            spec["affinity"] = aff
    if incoming:
        spec["topologySpreadConstraints"] = draw(st.lists(spread_constraint(), max_size=2))
        if draw(st.integers(0, 3)) == 0:
            spec["nodeSelector"] = {"rack": "r1"}
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
    return {"metadata": meta, "spec": spec}


@st.composite
def cluster(draw: st.DrawFn) -> tuple[list[Obj], list[Obj], Obj, list[Obj]]:
    names = node_names(draw(st.integers(1, 9)))
    nodes = [draw(node(n)) for n in names]
    existing = [draw(pod(f"e{j}", draw(st.sampled_from(names)))) for j in range(draw(st.integers(0, 14)))]
    incoming = draw(pod("p", None, incoming=True))
    later = [draw(pod(f"l{j}", draw(st.sampled_from(names)))) for j in range(draw(st.integers(0, 4)))]
    return nodes, existing, incoming, later


NS_OBJECTS = [
    {"kind": "Namespace", "metadata": {"name": "ns1", "labels": {"team": "x"}}},
    {"kind": "Namespace", "metadata": {"name": "ns2"}},
]


def list_objects(resource: str, namespace: str) -> Sequence[Mapping[str, Any]]:
    return NS_OBJECTS if resource == "namespaces" else ()


# --- oracles: the per-node loops --------------------------------------------------------------------------


def pts_pre_filter_oracle(plugin: PodTopologySpread, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[dict[str, int]]:
    constraints = plugin._constraints(pod, DO_NOT_SCHEDULE)
    out: list[dict[str, int]] = [{} for _ in constraints]
    for ni in nodes:
        if ni.node is None or not node_labels_match_spread_constraints(ni.labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if c.match_node_inclusion_policies(pod, ni):
                value = ni.labels[c.topology_key]
                out[i][value] = out[i].get(value, 0) + count_pods_match_selector(ni.pods, c.selector, pod.namespace)
    return out


def pts_pre_score_oracle(
    plugin: PodTopologySpread, pod: PodInfo, nodes: Sequence[NodeInfo], all_nodes: Sequence[NodeInfo]
) -> tuple[set[str], list[dict[str, int]], list[float]]:
    constraints = plugin._constraints(pod, SCHEDULE_ANYWAY)
    require_all = True  # the plugin is built with "List" defaulting: never system defaults
    ignored: set[str] = set()
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for ni in nodes:
        if require_all and not node_labels_match_spread_constraints(ni.labels, constraints):
            ignored.add(ni.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != LABEL_HOSTNAME:
                counts[i].setdefault(ni.labels.get(c.topology_key, ""), 0)
    weights = [
        math.log((len(nodes) - len(ignored) if c.topology_key == LABEL_HOSTNAME else len(counts[i])) + 2)
        for i, c in enumerate(constraints)
    ]
    for ni in all_nodes:
        if ni.node is None or (require_all and not node_labels_match_spread_constraints(ni.labels, constraints)):
            continue
        for i, c in enumerate(constraints):
            value = ni.labels.get(c.topology_key, "")
            if c.match_node_inclusion_policies(pod, ni) and value in counts[i]:
                counts[i][value] += count_pods_match_selector(ni.pods, c.selector, pod.namespace)
    return ignored, counts, weights


def ipa_pre_filter_oracle(s: PreFilterState, nodes: Sequence[NodeInfo]) -> tuple[dict[Any, int], ...]:
    existing: dict[Any, int] = {}
    affinity: dict[Any, int] = {}
    anti: dict[Any, int] = {}
    for ni in nodes:
        if ni.node is None:
            continue
        for p in ni.pods_with_required_anti_affinity:
            terms = pod_terms(p).required_anti_affinity
            update_anti_affinity(existing, terms, s.pod, s.namespace_labels, ni.labels, 1)
        if s.affinity_terms or s.anti_affinity_terms:
            for p in ni.pods:
                update_affinity(affinity, s.affinity_terms, p, ni.labels, 1)
                update_anti_affinity(anti, s.anti_affinity_terms, p, None, ni.labels, 1)
    return existing, affinity, anti


def ipa_pre_score_oracle(
    plugin: InterPodAffinity, pod: PodInfo, nodes: Sequence[NodeInfo]
) -> dict[str, dict[str, int]]:
    terms = pod_terms(pod)
    has_constraints = has_preferred(pod)
    namespaces = NS_OBJECTS
    affinity = [(plugin._merge_namespaces(w.term, namespaces), w.weight) for w in terms.preferred_affinity]
    anti = [(plugin._merge_namespaces(w.term, namespaces), w.weight) for w in terms.preferred_anti_affinity]
    ns_labels = plugin._namespace_labels(namespaces, pod.namespace)
    out: dict[str, dict[str, int]] = {}
    for ni in nodes:
        if ni.node is None or not ni.labels:
            continue
        for p in ni.pods if has_constraints else ni.pods_with_affinity:
            for t, w in affinity:
                process_term(out, t, w, p, None, ni.labels, 1)
            for t, w in anti:
                process_term(out, t, w, p, None, ni.labels, -1)
            et = pod_terms(p)
            if plugin.hard_pod_affinity_weight > 0:
                for t in et.required_affinity:
                    process_term(out, t, plugin.hard_pod_affinity_weight, pod, ns_labels, ni.labels, 1)
            process_terms(out, et.preferred_affinity, pod, ns_labels, ni.labels, 1)
            process_terms(out, et.preferred_anti_affinity, pod, ns_labels, ni.labels, -1)
    return out


# --- the properties ---------------------------------------------------------------------------------------


def cycles(nodes: list[Obj], existing: list[Obj], later: list[Obj]) -> list[Snapshot]:
    """The cluster, then again with ``later`` pods added and the first existing pod removed, keeping the
    NodeInfo objects (as the cache updates a snapshot in place) and refreshing the table's changed rows."""
    snapshot = Snapshot.from_objects(nodes, existing)
    states = [snapshot]
    by_name = snapshot.node_info_map
    for p in later:
        ni = by_name[p["spec"]["nodeName"]]
        ni.add_pod(PodInfo(p))
    if existing:
        first = existing[0]
        by_name[first["spec"]["nodeName"]].remove_pod(PodInfo(first))
    snapshot.node_table.sync()
    snapshot.rebuild_lists(None)
    states.append(snapshot)
    return states


def check_filter(plugin: Any, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> None:
    infos = snapshot.list()
    expected = [plugin.filter(state, pod, ni) is None for ni in infos]
    rows = np.arange(len(infos), dtype=np.int64)
    assert plugin.filter_vector(state, pod, snapshot.node_table, rows).tolist() == expected
    assert plugin.filter_vector(state, pod, snapshot.node_table, rows[::-1].copy()).tolist() == expected[::-1]


def check_scores(plugin: Any, pod: PodInfo, snapshot: Snapshot, subset: list[int]) -> None:
    infos = snapshot.list()
    nodes = [infos[r] for r in subset]
    state = CycleState()
    status = plugin.pre_score(state, pod, nodes)
    if status is not None:
        assert status.is_skip()
        return
    raw = [plugin.score(state, pod, ni)[0] for ni in nodes]
    got = plugin.score_vector(state, pod, snapshot.node_table, np.array(subset, dtype=np.int64))
    assert got.dtype == np.int64
    assert got.tolist() == raw
    scores = [NodeScore(ni.name, r) for ni, r in zip(nodes, raw, strict=True)]
    assert plugin.normalize_score(state, pod, scores) is None
    assert plugin.normalize_vector(state, pod, got).tolist() == [ns.score for ns in scores]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster(), st.data())
def test_pod_topology_spread_vector_matches_reference(
    c: tuple[list[Obj], list[Obj], Obj, list[Obj]], data: st.DataObject
) -> None:
    nodes, existing, incoming, later = c
    pod = PodInfo(incoming)
    plugin: PodTopologySpread | None = None
    for snapshot in cycles(nodes, existing, later):
        handle = Handle(snapshot_lister=snapshot, list_objects=list_objects)
        if plugin is None:
            plugin = pod_topology_spread.new({"defaultingType": "List"}, handle)
        infos = snapshot.list()
        state = CycleState()
        _, status = plugin.pre_filter(state, pod, infos)
        if status is None:
            s = state.read(pod_topology_spread.PRE_FILTER_STATE_KEY)
            oracle = pts_pre_filter_oracle(plugin, pod, infos)
            assert s.tp_value_to_match_num == oracle
            assert [list(m) for m in s.tp_value_to_match_num] == [list(m) for m in oracle]  # insertion order
            check_filter(plugin, state, pod, snapshot)
        subset = data.draw(st.lists(st.integers(0, len(infos) - 1), unique=True, min_size=1))
        nodes_subset = [infos[r] for r in subset]
        pre = CycleState()
        status = plugin.pre_score(pre, pod, nodes_subset)
        # The cycle hands PreScore the Filter stage's rows (FEASIBLE_ROWS_KEY): the same result as looking the
        # nodes up one by one.
        known = CycleState()
        rows = np.array(subset, dtype=np.int64)
        known.write(FEASIBLE_ROWS_KEY, FeasibleRows(nodes_subset, snapshot.node_table, rows))
        assert plugin.pre_score(known, pod, nodes_subset) == status
        if status is None:
            ps = pre.read(pod_topology_spread.PRE_SCORE_STATE_KEY)
            ignored, counts, weights = pts_pre_score_oracle(plugin, pod, nodes_subset, infos)
            assert (ps.ignored_nodes, ps.topology_value_to_pod_counts) == (ignored, counts)
            assert ps.topology_normalizing_weight == weights
            given_rows = known.read(pod_topology_spread.PRE_SCORE_STATE_KEY)
            assert (given_rows.ignored_nodes, given_rows.topology_value_to_pod_counts) == (ignored, counts)
            assert given_rows.topology_normalizing_weight == weights
        check_scores(plugin, pod, snapshot, subset)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster(), st.data(), st.integers(0, 3))
def test_inter_pod_affinity_vector_matches_reference(
    c: tuple[list[Obj], list[Obj], Obj, list[Obj]], data: st.DataObject, hard: int
) -> None:
    nodes, existing, incoming, later = c
    pod = PodInfo(incoming)
    plugin: InterPodAffinity | None = None
    for snapshot in cycles(nodes, existing, later):
        handle = Handle(snapshot_lister=snapshot, list_objects=list_objects)
        if plugin is None:
            plugin = inter_pod_affinity.new({"hardPodAffinityWeight": hard}, handle)
        infos = snapshot.list()
        state = CycleState()
        _, status = plugin.pre_filter(state, pod, infos)
        if status is None:
            # The vector Filter first, on the state and on a clone of it, before anything reads the counts'
            # dicts (PreFilter leaves only the per-domain arrays; the dicts are built on demand).
            rows = np.arange(len(infos), dtype=np.int64)
            cloned = CycleState()
            cloned.write(
                inter_pod_affinity.PRE_FILTER_STATE_KEY, state.read(inter_pod_affinity.PRE_FILTER_STATE_KEY).clone()
            )
            first = plugin.filter_vector(state, pod, snapshot.node_table, rows).tolist()
            first_of_clone = plugin.filter_vector(cloned, pod, snapshot.node_table, rows).tolist()
            s = state.read(inter_pod_affinity.PRE_FILTER_STATE_KEY)
            got = (s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts)
            assert got == ipa_pre_filter_oracle(s, infos)
            check_filter(plugin, state, pod, snapshot)
            assert first == first_of_clone == [plugin.filter(state, pod, ni) is None for ni in infos]
            # AddPod/RemovePod keep the vector path in step with the per-node one (preemption's use).
            for p in later:
                plugin.add_pod(state, pod, PodInfo(p), snapshot.node_info_map[p["spec"]["nodeName"]])
                check_filter(plugin, state, pod, snapshot)
        subset = data.draw(st.lists(st.integers(0, len(infos) - 1), unique=True, min_size=1))
        pre = CycleState()
        if plugin.pre_score(pre, pod, [infos[r] for r in subset]) is None:
            ps = pre.read(inter_pod_affinity.PRE_SCORE_STATE_KEY)
            assert ps.topology_score == ipa_pre_score_oracle(plugin, pod, infos)
        check_scores(plugin, pod, snapshot, subset)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster(), st.data(), st.integers(0, 2))
def test_inter_pod_affinity_skips_exactly_when_nothing_counts(
    c: tuple[list[Obj], list[Obj], Obj, list[Obj]], data: st.DataObject, hard: int
) -> None:
    """PreFilter and PreScore conclude SKIP early (no namespace listing) when no existing pod's term can match
    the incoming pod: upstream's PreFilter skips exactly when the pod has no required terms and no existing
    anti-affinity term matches it (existingAntiAffinityCounts empty), PreScore when no term touched a topology
    pair. The incoming pod is drawn without affinity as often as with (the MixedSchedulingBasePod shape)."""
    nodes, existing, _incoming, later = c
    incoming = data.draw(pod("p", None))
    pod_info = PodInfo(incoming)
    plugin: InterPodAffinity | None = None
    for snapshot in cycles(nodes, existing, later):
        handle = Handle(snapshot_lister=snapshot, list_objects=list_objects)
        if plugin is None:
            plugin = inter_pod_affinity.new({"hardPodAffinityWeight": hard}, handle)
        infos = snapshot.list()
        terms = pod_terms(pod_info)
        _, status = plugin.pre_filter(CycleState(), pod_info, infos)
        if not terms.required_affinity and not terms.required_anti_affinity:
            ns_labels = plugin._namespace_labels(NS_OBJECTS, pod_info.namespace)
            existing_counts, _, _ = ipa_pre_filter_oracle(PreFilterState(pod_info, (), (), ns_labels), infos)
            assert (status is not None and status.is_skip()) == (not existing_counts)
        status = plugin.pre_score(CycleState(), pod_info, infos)
        oracle = ipa_pre_score_oracle(plugin, pod_info, infos)
        assert (status is not None and status.is_skip()) == (not oracle)
