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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kubeplane.api import labels
from kubeplane.api.labels import Selector, SelectorError
from kubeplane.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeScore,
    PreFilterExtensions,
    PreFilterResult,
    ScoreExtensions,
    Status,
)
from kubeplane.scheduler.plugins.helper import do_not_schedule_taint, go_div

if TYPE_CHECKING:
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


def _controller_of(pod: PodInfo) -> Mapping[str, Any] | None:
    for ref in (pod.pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            found: Mapping[str, Any] = ref
            return found
    return None


def _named(objects: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    for obj in objects:
        if (obj.get("metadata") or {}).get("name") == name:
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
        svc_selector = (svc.get("spec") or {}).get("selector")
        if svc_selector is None:
            continue
        if labels.selector_from_set(svc_selector).matches(pod.labels):
            label_set.update(svc_selector)
    selector = labels.selector_from_set(label_set)
    owner = _controller_of(pod)
    if owner is None:
        return selector
    api_version, kind, name = owner.get("apiVersion"), owner.get("kind"), owner.get("name") or ""
    if api_version == "v1" and kind == "ReplicationController":
        rc = _named(handle.list_objects("replicationcontrollers", pod.namespace), name)
        if rc is not None:
            label_set.update((rc.get("spec") or {}).get("selector") or {})
            selector = labels.selector_from_set(label_set)
    elif api_version == "apps/v1" and kind in ("ReplicaSet", "StatefulSet"):
        plural = "replicasets" if kind == "ReplicaSet" else "statefulsets"
        obj = _named(handle.list_objects(plural, pod.namespace), name)
        if obj is not None:
            try:
                other = labels.label_selector_as_selector((obj.get("spec") or {}).get("selector"))
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


@dataclass(slots=True)
class _PreFilterState:
    constraints: list[TopologySpreadConstraint] = field(default_factory=list)
    critical_paths: list[_CriticalPaths] = field(default_factory=list)
    tp_value_to_match_num: list[dict[str, int]] = field(default_factory=list)

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
class _PreScoreState:
    constraints: list[TopologySpreadConstraint]
    ignored_nodes: set[str] = field(default_factory=set)
    topology_value_to_pod_counts: list[dict[str, int]] = field(default_factory=list)
    topology_normalizing_weight: list[float] = field(default_factory=list)

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


# --- the plugin -------------------------------------------------------------------------------------------


class PodTopologySpread:
    """PreFilter (with AddPod/RemovePod), Filter, PreScore, Score, NormalizeScore and EnqueueExtensions."""

    def __init__(
        self, handle: Handle, default_constraints: Sequence[Mapping[str, Any]] = (), *, system_defaulted: bool = False
    ) -> None:
        self._handle = handle
        self._default_constraints = tuple(default_constraints)
        self._system_defaulted = system_defaulted

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
        constraints = filter_constraints(self._default_constraints, pod.labels, action)
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
            return filter_constraints(own, pod.labels, action)
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
        s = _PreFilterState(constraints, [], [{} for _ in constraints])
        for node in nodes:
            if node.node is None or not node_labels_match_spread_constraints(node.labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not c.match_node_inclusion_policies(pod, node):
                    continue
                value = node.labels[c.topology_key]
                count = count_pods_match_selector(node.pods, c.selector, pod.namespace)
                counts = s.tp_value_to_match_num[i]
                counts[value] = counts.get(value, 0) + count
        for counts in s.tp_value_to_match_num:
            paths = _CriticalPaths()
            for value, num in counts.items():
                paths.update(value, num)
            s.critical_paths.append(paths)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

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

    # --- PreScore / Score / NormalizeScore ------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        all_nodes = self._handle.snapshot().list()
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
        sizes = [0] * len(constraints)
        for node in nodes:
            if require_all and not node_labels_match_spread_constraints(node.labels, constraints):
                s.ignored_nodes.add(node.name)
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME:
                    continue  # per-node counts are computed in Score
                value = node.labels.get(c.topology_key, "")
                if value not in s.topology_value_to_pod_counts[i]:
                    s.topology_value_to_pod_counts[i][value] = 0
                    sizes[i] += 1
        for i, c in enumerate(constraints):
            size = len(nodes) - len(s.ignored_nodes) if c.topology_key == LABEL_HOSTNAME else sizes[i]
            s.topology_normalizing_weight.append(topology_normalizing_weight(size))
        for node in all_nodes:
            if node.node is None:
                continue
            if require_all and not node_labels_match_spread_constraints(node.labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not c.match_node_inclusion_policies(pod, node):
                    continue
                counts = s.topology_value_to_pod_counts[i]
                value = node.labels.get(c.topology_key, "")
                if value not in counts:
                    continue
                counts[value] += count_pods_match_selector(node.pods, c.selector, pod.namespace)
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
