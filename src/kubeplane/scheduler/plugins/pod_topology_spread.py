"""PodTopologySpread: spread pods across topology domains (upstream ``plugins/podtopologyspread``, v1.37).

* Constraints come from ``spec.topologySpreadConstraints`` (DoNotSchedule ones for filtering, ScheduleAnyway ones
  for scoring) or, for a pod without any, from the profile's default constraints ("System": hostname maxSkew 3 and
  zone maxSkew 5, ScheduleAnyway; "List": ``args.defaultConstraints``) with a selector built from the Services,
  and the controlling ReplicationController, ReplicaSet or StatefulSet, that select the pod.
* ``matchLabelKeys`` values of the pod are ANDed into the selector; ``minDomains`` (default 1) makes the global
  minimum 0 while fewer domains exist; ``nodeAffinityPolicy`` (default Honor) and ``nodeTaintsPolicy`` (default
  Ignore) decide which nodes count.
* PreFilter counts matching pods (same namespace, not terminating) per topology value over the nodes that carry
  every constraint's key, and keeps the two smallest counts per constraint (upstream's critical paths) so
  AddPod/RemovePod can update it. Filter rejects a node without a topology key as UnschedulableAndUnresolvable
  and one where ``count + self-match - global minimum > maxSkew`` as Unschedulable.
* PreScore/Score/NormalizeScore: ``score = sum(count * log(domains + 2) + maxSkew - 1)`` rounded, reversed by
  NormalizeScore to ``100 * (max + min - score) / max``; nodes missing a topology key (except with system
  defaults) score 0.
* Speed (DESIGN decision 6): the per-node matching-pod counts are memoised across cycles per (namespace,
  selector) by NodeInfo generation (:mod:`.topology_counts`) and summed per topology domain with numpy over the
  snapshot's NodeTable; the states keep the reference's dicts (same insertion order, so the same critical paths
  for AddPod/RemovePod), and ``filter_vector``/``score_vector``/``normalize_vector`` read them as per-domain
  arrays. Property tests (tests/scheduler/plugins/test_topology_vector.py) hold them to the per-node loops.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kubeplane.api import labels
from kubeplane.api.labels import Selector, SelectorError
from kubeplane.api.views import controller_ref_of, name_of, spec_of
from kubeplane.scheduler.framework.interface import (
    FEASIBLE_ROWS_KEY,
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    FeasibleRows,
    NodeScore,
    PreFilterExtensions,
    PreFilterResult,
    ScoreExtensions,
    Status,
)
from kubeplane.scheduler.plugins.helper import do_not_schedule_taint, go_div
from kubeplane.scheduler.plugins.node_affinity import _VecRequired
from kubeplane.scheduler.plugins.shape_memo import ShapeMemo, json_key
from kubeplane.scheduler.plugins.topology_counts import DomainSums, RowCounts, at_rows, domain_sums, table_for

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, Domains, IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = [
    "DO_NOT_SCHEDULE",
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "LABEL_HOSTNAME",
    "LABEL_TOPOLOGY_ZONE",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "PodTopologySpread",
    "TopologySpreadConstraint",
    "default_selector",
    "new",
]

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
"""Upstream ``ErrReasonConstraintsNotMatch`` (plugin.go); Filter's Unschedulable reason."""
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
"""Upstream ``ErrReasonNodeLabelNotMatch`` (plugin.go); Filter's UnschedulableAndUnresolvable reason."""

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
_HONOR = "Honor"
_IGNORE = "Ignore"
_MAX_INT32 = 2**31 - 1
_INVALID_SCORE = -1

SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)
"""Upstream ``systemDefaultConstraints`` (plugin.go)."""

_LABEL_MISSING = Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
_SKEW_TOO_BIG = Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


# --- constraints (common.go) ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    """A v1 TopologySpreadConstraint with its selector compiled and upstream's defaults applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = _HONOR
    node_taints_policy: str = _IGNORE

    def match_node_inclusion_policies(self, pod: PodInfo, node: NodeInfo) -> bool:
        """Whether ``node`` counts for this constraint (``matchNodeInclusionPolicies``)."""
        if self.node_affinity_policy == _HONOR:
            matched, _ = pod.required_node_affinity.match_parts(node.labels, node.name)  # errors ignored
            if not matched:
                return False
        return not (
            self.node_taints_policy == _HONOR
            and node.taints
            and pod.tolerations.find_untolerated(node.taints, include=do_not_schedule_taint) is not None
        )


def _merge_label_set(match_labels: Mapping[str, str], selector: Selector) -> Selector:
    merged = labels.selector_from_set(match_labels)
    if selector.selectable:
        merged = merged.add(*selector.requirements)
    return merged


def filter_constraints(
    constraints: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> list[TopologySpreadConstraint]:
    """The constraints with ``whenUnsatisfiable == action``, compiled (``filterTopologySpreadConstraints``).

    Raises SelectorError when a label selector does not parse.
    """
    result: list[TopologySpreadConstraint] = []
    for c in constraints:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = labels.label_selector_as_selector(c.get("labelSelector"))
        keys = c.get("matchLabelKeys") or ()
        if keys:
            match_labels = {k: pod_labels[k] for k in keys if k in pod_labels}
            if match_labels:
                selector = _merge_label_set(match_labels, selector)
        min_domains = c.get("minDomains")
        result.append(
            TopologySpreadConstraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=c.get("topologyKey") or "",
                selector=selector,
                min_domains=1 if min_domains is None else int(min_domains),
                node_affinity_policy=c.get("nodeAffinityPolicy") or _HONOR,
                node_taints_policy=c.get("nodeTaintsPolicy") or _IGNORE,
            )
        )
    return result


def node_labels_match_spread_constraints(
    node_labels: Mapping[str, str], constraints: Sequence[TopologySpreadConstraint]
) -> bool:
    """True when the node has every constraint's topology key."""
    return all(c.topology_key in node_labels for c in constraints)


def count_pods_match_selector(pods: Sequence[PodInfo], selector: Selector, namespace: str) -> int:
    """Pods in ``namespace``, not terminating, whose labels ``selector`` matches."""
    matcher = selector.matcher
    return sum(1 for p in pods if not p.is_terminating and p.namespace == namespace and matcher(p.labels))


def _named(objects: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    for obj in objects:
        if name_of(obj) == name:
            return obj
    return None


def default_selector(pod: PodInfo, handle: Handle) -> Selector:
    """The selector of what manages the pod (upstream ``helper.DefaultSelector``).

    The union of the selectors of the pod's namespace's Services that select it (a Service without a selector
    selects nothing), plus the selector of its controlling ReplicationController (merged as a label set) or
    ReplicaSet/StatefulSet (requirements added). Lookup errors and bad selectors are ignored, as upstream.
    """
    label_set: dict[str, str] = {}
    for svc in handle.list_objects("services", pod.namespace):
        svc_selector = spec_of(svc).get("selector")
        if svc_selector is None:
            continue
        if labels.selector_from_set(svc_selector).matches(pod.labels):
            label_set.update(svc_selector)
    selector = labels.selector_from_set(label_set)
    owner = controller_ref_of(pod.pod)
    if owner is None:
        return selector
    api_version, kind, name = owner.get("apiVersion"), owner.get("kind"), owner.get("name") or ""
    if api_version == "v1" and kind == "ReplicationController":
        rc = _named(handle.list_objects("replicationcontrollers", pod.namespace), name)
        if rc is not None:
            label_set.update(spec_of(rc).get("selector") or {})
            selector = labels.selector_from_set(label_set)
    elif api_version == "apps/v1" and kind in ("ReplicaSet", "StatefulSet"):
        plural = "replicasets" if kind == "ReplicaSet" else "statefulsets"
        obj = _named(handle.list_objects(plural, pod.namespace), name)
        if obj is not None:
            try:
                other = labels.label_selector_as_selector(spec_of(obj).get("selector"))
            except SelectorError:
                return selector
            if other.selectable:
                selector = selector.add(*other.requirements)
    return selector


# --- cycle state ------------------------------------------------------------------------------------------


class _CriticalPaths:
    """The two smallest (topology value, match count) pairs seen; ``paths[0]`` always holds the minimum."""

    __slots__ = ("paths",)

    def __init__(self, paths: list[tuple[str, int]] | None = None) -> None:
        self.paths: list[tuple[str, int]] = paths if paths is not None else [("", _MAX_INT32), ("", _MAX_INT32)]

    def update(self, value: str, num: int) -> None:
        p = self.paths
        i = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if i >= 0:
            p[i] = (value, num)
            if p[0][1] > p[1][1]:
                p[0], p[1] = p[1], p[0]
        elif num < p[0][1]:
            p[1] = p[0]
            p[0] = (value, num)
        elif num < p[1][1]:
            p[1] = (value, num)

    def clone(self) -> _CriticalPaths:
        return _CriticalPaths(list(self.paths))


def _dense(cache: dict[int, tuple[Domains, IntArray]], i: int, counts: Mapping[str, int], domains: Domains) -> IntArray:
    """``counts`` (topology value -> count) as an array over the domain ids of ``domains`` (0 where absent),
    memoised in ``cache[i]`` for that Domains object (a table's domains of one key, until its labels change)."""
    cached = cache.get(i)
    if cached is not None and cached[0] is domains:
        return cached[1]
    out: IntArray = np.zeros(len(domains.values), np.int64)
    id_of = domains.id_of
    for value, num in counts.items():
        d = id_of.get(value)
        if d is not None:
            out[d] = num
    cache[i] = (domains, out)
    return out


@dataclass(slots=True)
class _PreFilterState:
    """PreFilter's counts. ``dense`` caches ``tp_value_to_match_num[i]`` as arrays over one table's domains for
    filter_vector, keyed by the Domains object; AddPod/RemovePod clear it (the dicts are the truth)."""

    constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    critical_paths: list[_CriticalPaths] = field(default_factory=list)
    tp_value_to_match_num: list[dict[str, int]] = field(default_factory=list)
    dense: dict[int, tuple[Domains, IntArray]] = field(default_factory=dict)

    def dense_counts(self, i: int, domains: Domains) -> IntArray:
        return _dense(self.dense, i, self.tp_value_to_match_num[i], domains)

    def min_match_num(self, i: int, min_domains: int) -> int:
        """The global minimum for constraint ``i``; 0 while fewer than ``min_domains`` domains exist."""
        if len(self.tp_value_to_match_num[i]) < min_domains:
            return 0
        return self.critical_paths[i].paths[0][1]

    def clone(self) -> _PreFilterState:
        return _PreFilterState(
            self.constraints,
            [p.clone() for p in self.critical_paths],
            [dict(m) for m in self.tp_value_to_match_num],
        )


@dataclass(slots=True)
class _VectorScores:
    """What score_vector leaves for normalize_vector: the raw array it returned and its ignored rows."""

    raw: IntArray
    ignored: BoolArray


@dataclass(slots=True)
class _PreScoreState:
    """PreScore's counts; ``dense`` as in :class:`_PreFilterState`; ``last_vector`` is what the last
    score_vector returned, for normalize_vector (which is given only the raw scores)."""

    constraints: list[TopologySpreadConstraint]
    ignored_nodes: set[str] = field(default_factory=set)
    topology_value_to_pod_counts: list[dict[str, int]] = field(default_factory=list)
    topology_normalizing_weight: list[float] = field(default_factory=list)
    dense: dict[int, tuple[Domains, IntArray]] = field(default_factory=dict)
    last_vector: _VectorScores | None = None

    def dense_counts(self, i: int, domains: Domains) -> IntArray:
        return _dense(self.dense, i, self.topology_value_to_pod_counts[i], domains)

    def clone(self) -> _PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    """``log(size + 2)``: the weight of a constraint with ``size`` topology values."""
    return math.log(size + 2)


def score_for_count(count: int, max_skew: int, weight: float) -> float:
    return count * weight + (max_skew - 1)


def _go_round(x: float) -> int:
    """Go's ``math.Round``: half away from zero."""
    return math.floor(x + 0.5) if x >= 0 else -math.floor(-x + 0.5)


def _go_round_vector(x: npt.NDArray[np.float64]) -> IntArray:
    """:func:`_go_round` elementwise (the same float operations, so the same results)."""
    rounded: IntArray = np.where(x >= 0, np.floor(x + 0.5), -np.floor(-x + 0.5)).astype(np.int64)
    return rounded


def _includes_all(c: TopologySpreadConstraint, pod: PodInfo, table: NodeTable) -> bool:
    """The node inclusion policies keep every row with a Node (what ``_included`` then returns), known without
    looking at the rows: no required node affinity to honour, no tainted node to honour."""
    if c.node_affinity_policy == _HONOR:
        required = pod.required_node_affinity
        if required.label_selector is not None or required.node_selector is not None:
            return False
    return c.node_taints_policy != _HONOR or table.tainted_count == 0


def _first_seen_order(domains: Domains, include: BoolArray) -> list[int]:
    """The domain ids of the included rows carrying the key, in row order of first appearance: the insertion
    order of the reference's per-node loop (it decides the critical paths among equal counts)."""
    carrying = domains.ids >= 0
    if np.array_equal(include & carrying, carrying):
        # Every row carrying the key is included: every domain appears, and ids are numbered by first appearance.
        return list(range(len(domains.values)))
    ids = domains.ids[np.flatnonzero(include & carrying)]
    uniq, first = np.unique(ids, return_index=True)
    ordered: list[int] = uniq[np.argsort(first, kind="stable")].tolist()
    return ordered


def _rows_of(table: NodeTable, nodes: Sequence[NodeInfo]) -> IntArray | None:
    """The rows of ``table`` holding ``nodes`` (these very objects), or None when some is not in it."""
    index, infos = table.index, table.node_infos
    rows: list[int] = []
    for ni in nodes:
        r = index.get(ni.name)
        if r is None or infos[r] is not ni:
            return None
        rows.append(r)
    return np.array(rows, dtype=np.int64)


# --- the plugin -------------------------------------------------------------------------------------------


class PodTopologySpread:
    """PreFilter (with AddPod/RemovePod), Filter, PreScore, Score, NormalizeScore and EnqueueExtensions."""

    def __init__(
        self, handle: Handle, default_constraints: Sequence[Mapping[str, Any]] = (), *, system_defaulted: bool = False
    ) -> None:
        self._handle = handle
        self._default_constraints = tuple(default_constraints)
        self._compiled_defaults: dict[str, list[TopologySpreadConstraint]] = {}
        """The default constraints compiled per whenUnsatisfiable (read-only: the selector is the pod's)."""
        self._compiled_own: ShapeMemo[tuple[TopologySpreadConstraint, ...]] = ShapeMemo()
        """The pod's own constraints compiled, by their JSON, the labels matchLabelKeys reads and the action."""
        self._system_defaulted = system_defaulted
        self._counts = RowCounts()
        self._sums = DomainSums()

    def name(self) -> str:
        return NAME

    # --- EnqueueExtensions ----------------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        """Any pod change, and node add/delete/label/taint changes; no queueing hints (always queue)."""
        node_actions = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        return (
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.all())),
            ClusterEventWithHint(ClusterEvent("Node", node_actions)),
        )

    # --- constraints ----------------------------------------------------------------------------------------

    def _build_default_constraints(self, pod: PodInfo, action: str) -> list[TopologySpreadConstraint]:
        constraints = self._compiled_defaults.get(action)
        if constraints is None:
            constraints = filter_constraints(self._default_constraints, pod.labels, action)
            if not any(c.get("matchLabelKeys") for c in self._default_constraints):  # else they depend on the pod
                self._compiled_defaults[action] = constraints
        if not constraints:
            return []
        selector = default_selector(pod, self._handle)
        if selector.empty():
            return []
        return [
            TopologySpreadConstraint(
                c.max_skew, c.topology_key, selector, c.min_domains, c.node_affinity_policy, c.node_taints_policy
            )
            for c in constraints
        ]

    def _constraints(self, pod: PodInfo, action: str) -> list[TopologySpreadConstraint]:
        own = pod.spec.get("topologySpreadConstraints") or ()
        if own:
            key = json_key([action, own, [pod.labels.get(k) for c in own for k in c.get("matchLabelKeys") or ()]])
            if key is None:
                return filter_constraints(own, pod.labels, action)
            return list(self._compiled_own.get(key, lambda: tuple(filter_constraints(own, pod.labels, action))))
        return self._build_default_constraints(pod, action)

    # --- PreFilter / Filter ---------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as exc:
            return None, Status.from_error(f"get constraints from pod: {exc}")
        if not constraints:
            return None, Status.skip()
        table = table_for(self._handle.snapshot(), nodes)
        domains = [table.domains(c.topology_key) for c in constraints]
        carrying = table.has_node.copy()  # nodes without every constraint's key are not counted
        for d in domains:
            carrying &= d.ids >= 0
        s = _PreFilterState(constraints)
        policies: dict[tuple[bool, bool], BoolArray] = {}
        every_node = table.nodeless_count == 0
        for i, c in enumerate(constraints):
            d = domains[i]
            per_row = self._match_counts(table, pod.namespace, c.selector)
            if every_node and _includes_all(c, pod, table) and all(o is d or o.complete for o in domains):
                # Every row carrying the key counts: the sums are kept across cycles, all domains appear, in id order.
                sums = self._sums.get(table, (pod.namespace, c.selector, c.topology_key), d, per_row)
                order: Sequence[int] = range(len(d.values))
            else:
                include = carrying & self._included(c, pod, table, policies)
                sums = domain_sums(d, per_row, include)
                order = _first_seen_order(d, include)
            values = d.values
            counts = {values[k]: int(sums[k]) for k in order}
            s.tp_value_to_match_num.append(counts)
            s.dense[i] = (d, sums)  # zero for unseen domains, as the dict's .get
            paths = _CriticalPaths()
            for value, num in counts.items():
                paths.update(value, num)
            s.critical_paths.append(paths)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def _match_counts(self, table: NodeTable, namespace: str, selector: Selector) -> IntArray:
        """Per row, :func:`count_pods_match_selector` of its pods (memoised across cycles; read-only)."""
        return self._counts.get(
            table, (namespace, selector), lambda ni: count_pods_match_selector(ni.pods, selector, namespace)
        )

    @staticmethod
    def _included(
        c: TopologySpreadConstraint, pod: PodInfo, table: NodeTable, memo: dict[tuple[bool, bool], BoolArray]
    ) -> BoolArray:
        """Rows with a Node that count for ``c``: :meth:`TopologySpreadConstraint.match_node_inclusion_policies`
        over the table (memoised per policy pair in ``memo`` for one pod)."""
        key = (c.node_affinity_policy == _HONOR, c.node_taints_policy == _HONOR)
        mask = memo.get(key)
        if mask is None:
            mask = table.has_node.copy()
            required = pod.required_node_affinity
            if key[0] and (required.label_selector is not None or required.node_selector is not None):
                mask &= _VecRequired.of(required).mask(table, np.arange(table.size, dtype=np.int64))
            if key[1]:
                infos, tolerations = table.node_infos, pod.tolerations
                for r in np.flatnonzero(mask & table.has_taints).tolist():
                    if tolerations.find_untolerated(infos[r].taints, include=do_not_schedule_taint) is not None:
                        mask[r] = False
            memo[key] = mask
        return mask

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        return self._update_with_pod(state, pod_to_add, pod, node, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        return self._update_with_pod(state, pod_to_remove, pod, node, -1)

    def _update_with_pod(
        self, state: CycleState, updated: PodInfo, preemptor: PodInfo, node: NodeInfo, delta: int
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.from_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        if updated.namespace != preemptor.namespace or node.node is None:
            return None
        if not node_labels_match_spread_constraints(node.labels, s.constraints):
            return None
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(updated.labels):
                continue
            if not c.match_node_inclusion_policies(preemptor, node):
                continue
            value = node.labels[c.topology_key]
            counts = s.tp_value_to_match_num[i]
            counts[value] = counts.get(value, 0) + delta
            s.critical_paths[i].update(value, counts[value])
            s.dense.pop(i, None)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.from_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        for i, c in enumerate(s.constraints):
            value = node.labels.get(c.topology_key)
            if value is None:
                return _LABEL_MISSING
            min_match = s.min_match_num(i, c.min_domains)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            skew = s.tp_value_to_match_num[i].get(value, 0) + self_match - min_match
            if skew > c.max_skew:
                return _SKEW_TOO_BIG
        return None

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        """:meth:`filter` over ``rows``: a row passes when it has every key and no skew exceeds maxSkew."""
        s = state.get(PRE_FILTER_STATE_KEY)
        ok: BoolArray = np.ones(len(rows), np.bool_)
        if not isinstance(s, _PreFilterState):
            return ~ok
        for i, c in enumerate(s.constraints):
            d = table.domains(c.topology_key)
            ids = d.ids[rows]
            has = ids >= 0
            ok &= has
            self_match = 1 if c.selector.matches(pod.labels) else 0
            counts = at_rows(s.dense_counts(i, d), ids)
            ok &= counts + (self_match - s.min_match_num(i, c.min_domains)) <= c.max_skew
        return ok

    # --- PreScore / Score / NormalizeScore ------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        lister = self._handle.snapshot()
        all_nodes = lister.list()
        if not all_nodes:
            return Status.skip()
        own = pod.spec.get("topologySpreadConstraints") or ()
        require_all = bool(own) or not self._system_defaulted
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as exc:
            which = "obtaining pod's soft" if own else "setting default soft"
            return Status.from_error(f"calculating preScoreState: {which} topology spread constraints: {exc}")
        if not constraints:
            return Status.skip()
        s = _PreScoreState(constraints, set(), [{} for _ in constraints])
        table = table_for(lister, all_nodes)
        # Domains present among the nodes to score, and the nodes ignored for lacking a key.
        known = state.get(FEASIBLE_ROWS_KEY)
        rows = known.rows_for(table, nodes) if isinstance(known, FeasibleRows) else None
        if rows is None:
            rows = _rows_of(table, nodes)
        scored = table if rows is not None else table_for(None, nodes)
        if rows is None:
            rows = np.arange(len(nodes), dtype=np.int64)
        complete = all(scored.domains(c.topology_key).complete for c in constraints)
        carrying: BoolArray = np.ones(len(rows), np.bool_)
        for c in constraints if not complete else ():
            carrying &= scored.domains(c.topology_key).ids[rows] >= 0
        if require_all and not complete and not carrying.all():
            names = scored.names
            s.ignored_nodes = {names[r] for r in rows[~carrying].tolist()}
            rows = rows[carrying]
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:  # per-node counts are computed in Score
                s.topology_normalizing_weight.append(topology_normalizing_weight(len(rows)))
                continue
            ids, id_of = scored.domains(c.topology_key).missing_as_empty()
            present = set(np.flatnonzero(np.bincount(ids[rows], minlength=len(id_of))).tolist())  # no sort
            s.topology_value_to_pod_counts[i] = {v: 0 for v, d in id_of.items() if d in present}
            s.topology_normalizing_weight.append(topology_normalizing_weight(len(present)))
        # Matching pods over all nodes, per domain present.
        every_row = table.nodeless_count == 0 and all(table.domains(c.topology_key).complete for c in constraints)
        valid = table.has_node.copy()
        if require_all and not every_row:
            for c in constraints:
                valid &= table.domains(c.topology_key).ids >= 0
        policies: dict[tuple[bool, bool], BoolArray] = {}
        for i, c in enumerate(constraints):
            counts = s.topology_value_to_pod_counts[i]
            if not counts:
                continue
            dom = table.domains(c.topology_key)
            ids, id_of = dom.missing_as_empty()
            per_row = self._match_counts(table, pod.namespace, c.selector)
            if every_row and _includes_all(c, pod, table):
                # Every row counts (no key missing, so ids are the domains'): the sums PreFilter keeps too.
                sums = self._sums.get(table, (pod.namespace, c.selector, c.topology_key), dom, per_row)
            else:
                include = np.flatnonzero(valid & self._included(c, pod, table, policies))
                sums = np.bincount(ids[include], weights=per_row[include], minlength=len(id_of)).astype(np.int64)
            for value in counts:
                d = id_of.get(value)
                if d is not None:
                    counts[value] = int(sums[d])
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return 0, Status.from_error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        if node.name in s.ignored_nodes:
            return 0, None
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = node.labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                count = count_pods_match_selector(node.pods, c.selector, pod.namespace)
            else:
                count = s.topology_value_to_pod_counts[i].get(value, 0)
            total += score_for_count(count, c.max_skew, s.topology_normalizing_weight[i])
        return _go_round(total), None

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        """:meth:`score` over ``rows`` (the same float operations in the same order, so the same rounding)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return np.zeros(len(rows), np.int64)
        total = np.zeros(len(rows), np.float64)
        for i, c in enumerate(s.constraints):
            d = table.domains(c.topology_key)
            ids = d.ids[rows]
            has = ids >= 0
            if c.topology_key == LABEL_HOSTNAME:
                count = self._match_counts(table, pod.namespace, c.selector)[rows]
            else:
                count = at_rows(s.dense_counts(i, d), ids)
            # score_for_count elementwise: count * weight + (maxSkew - 1) in float64, as the reference.
            total += np.where(has, count * s.topology_normalizing_weight[i] + (c.max_skew - 1), 0.0)
        scores = _go_round_vector(total)
        ignored: BoolArray = np.zeros(len(rows), np.bool_)
        if s.ignored_nodes:
            names = table.names
            ignored = np.fromiter((names[r] in s.ignored_nodes for r in rows.tolist()), np.bool_, len(rows))
            scores[ignored] = 0
        s.last_vector = _VectorScores(scores, ignored)
        return scores

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return Status.from_error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        min_score = 2**63 - 1
        max_score = 0
        for ns in scores:
            if ns.name in s.ignored_nodes:
                ns.score = _INVALID_SCORE
                continue
            min_score = min(min_score, ns.score)
            max_score = max(max_score, ns.score)
        for ns in scores:
            if ns.score == _INVALID_SCORE:
                ns.score = 0
            elif max_score == 0:
                ns.score = MAX_NODE_SCORE
            else:
                ns.score = go_div(MAX_NODE_SCORE * (max_score + min_score - ns.score), max_score)
        return None

    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        """:meth:`normalize_score` over the array score_vector returned (whose ignored rows it recorded)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        out: IntArray = np.zeros(len(scores), np.int64)
        if not isinstance(s, _PreScoreState):
            return out
        last = s.last_vector
        ignored = last.ignored if last is not None and last.raw is scores else np.zeros(len(scores), np.bool_)
        counted = scores[~ignored]
        if not len(counted):
            return out
        max_score = max(int(counted.max()), 0)
        if max_score == 0:
            out[:] = MAX_NODE_SCORE
        else:
            num = MAX_NODE_SCORE * (max_score + int(counted.min()) - scores)
            out = np.sign(num) * (np.abs(num) // max_score)  # Go's truncating division
        out[ignored | (scores == _INVALID_SCORE)] = 0
        return out

    def score_extensions(self) -> ScoreExtensions | None:
        return self


def new(args: Mapping[str, Any], handle: Handle) -> PodTopologySpread:
    """The plugin factory; ``args`` is v1 PodTopologySpreadArgs (``defaultingType`` "System" when absent).

    Raises ValueError when ``defaultingType`` is unknown, or "System" with non-empty ``defaultConstraints``.
    """
    defaulting_type = args.get("defaultingType") or "System"
    default_constraints: Sequence[Mapping[str, Any]] = args.get("defaultConstraints") or ()
    if defaulting_type == "System":
        if default_constraints:
            raise ValueError('defaultConstraints: Invalid value: when .defaultingType is "System", must be empty')
        return PodTopologySpread(handle, SYSTEM_DEFAULT_CONSTRAINTS, system_defaulted=True)
    if defaulting_type != "List":
        raise ValueError(f'defaultingType: Unsupported value: "{defaulting_type}": supported values: "List", "System"')
    return PodTopologySpread(handle, default_constraints)
