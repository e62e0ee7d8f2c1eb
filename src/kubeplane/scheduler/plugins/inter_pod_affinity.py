"""InterPodAffinity: required and preferred pod affinity / anti-affinity (upstream ``plugins/interpodaffinity``,
v1.37: ``filtering.go``, ``scoring.go``, ``plugin.go``; terms as ``framework/types.go`` ``AffinityTerm``).

* Terms: a pod's terms are compiled once per PodInfo (weakly cached). A term's namespaces are its
  ``namespaces``, or the owning pod's namespace when neither ``namespaces`` nor ``namespaceSelector`` is set.
  ``matchLabelKeys`` / ``mismatchLabelKeys`` are merged into a non-nil ``labelSelector`` as ``key in (v)`` /
  ``key notin (v)`` with ``v`` the owning pod's label (what the v1.37 API server stores; idempotent if already
  merged). A list with a bad selector is dropped whole, as upstream ``NewPodInfo``.
* PreFilter counts, per topology pair, existing pods whose required anti-affinity matches the incoming pod, and
  existing pods matching the incoming pod's required (anti-)affinity (its namespaceSelector merged into names
  via ``list_objects("namespaces", "")``). SKIP when the pod has no required terms and no existing anti-affinity
  term matches it. A selector parse error of the incoming pod is UnschedulableAndUnresolvable ("parsing pod").
* Filter: affinity (UnschedulableAndUnresolvable), then anti-affinity, then existing anti-affinity (both
  Unschedulable), reasons verbatim from upstream.
* PreScore sums term weights per topology pair (SKIP with no nodes, with ``ignorePreferredTermsOfExistingPods``
  and no preferred terms of the pod, or when nothing scored); Score sums the node's pairs; NormalizeScore maps
  ``[min, max]`` to ``[0, 100]`` (scores may be negative).
* Speed (DESIGN decision 6): PreFilter/PreScore do not walk every pod each cycle. Per-node counts of pods
  matching a term, and per-node multisets of the existing pods' terms (:class:`topology_counts.Census`), are
  memoised across cycles by NodeInfo generation; each distinct existing term is matched against the incoming pod
  once and its per-node counts summed per topology domain with numpy. The resulting states are the reference's
  dicts (AddPod/RemovePod and the per-node Filter/Score work on them unchanged); ``filter_vector``,
  ``score_vector`` and ``normalize_vector`` read the same counts as per-domain arrays. Property tests
  (tests/scheduler/plugins/test_topology_vector.py) hold all of it to the per-node loops.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.api import labels
from kubeplane.api.views import labels_of, name_of
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeScore,
    PreFilterExtensions,
    PreFilterResult,
    QueueingHint,
    ScoreExtensions,
    Status,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.helper import as_pod_info
from kubeplane.scheduler.plugins.inter_pod_affinity_filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    AffinityTerm,
    PodTerms,
    PreFilterState,
    WeightedAffinityTerm,
    check_node,
    check_rows,
    matches_all,
    pod_terms,
)
from kubeplane.scheduler.plugins.inter_pod_affinity_scoring import (
    PRE_SCORE_STATE_KEY,
    DomainScores,
    PreScoreState,
    has_preferred,
    normalize,
    normalize_array,
)
from kubeplane.scheduler.plugins.topology_counts import Census, DomainSums, RowCounts, table_for

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, Domains, IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "AffinityTerm",
    "InterPodAffinity",
    "PodTerms",
    "WeightedAffinityTerm",
    "new",
    "pod_terms",
]


# --- plugin -----------------------------------------------------------------------------------------------


class InterPodAffinity:
    """PreFilter (with add/remove extensions), Filter, PreScore, Score, NormalizeScore, EnqueueExtensions."""

    def __init__(
        self,
        handle: Handle,
        *,
        hard_pod_affinity_weight: int = 1,
        ignore_preferred_terms_of_existing_pods: bool = False,
    ) -> None:
        self._handle = handle
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods
        self._counts = RowCounts()
        self._domain_sums = DomainSums()
        self._anti_census: Census[AffinityTerm] = Census(_required_anti_affinity_terms)
        self._affinity_census: Census[tuple[AffinityTerm, int | None]] = Census(_scoring_terms)

    def name(self) -> str:
        return NAME

    # --- namespaces -----------------------------------------------------------------------------------------

    def _namespaces(self) -> Sequence[Mapping[str, Any]]:
        return self._handle.list_objects("namespaces", "")

    @staticmethod
    def _namespace_labels(namespaces: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, str]:
        """Upstream ``GetNamespaceLabelsSnapshot``: the labels of namespace ``name`` ({} when unknown)."""
        for ns in namespaces:
            if name_of(ns) == name:
                return dict(labels_of(ns))
        return {}

    @staticmethod
    def _merge_namespaces(term: AffinityTerm, namespaces: Sequence[Mapping[str, Any]]) -> AffinityTerm:
        """Upstream ``mergeAffinityTermNamespacesIfNotEmpty``: a non-empty namespaceSelector becomes names."""
        if term.namespace_selector.empty():
            return term
        names = set(term.namespaces)
        if not labels.matches_nothing(term.namespace_selector):
            for ns in namespaces:
                if term.namespace_selector.matches(labels_of(ns)):
                    names.add(name_of(ns))
        return AffinityTerm(frozenset(names), term.selector, term.topology_key, labels.nothing())

    # --- PreFilter / Filter ---------------------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        lister = self._handle.snapshot()
        all_nodes = lister.list()
        terms = pod_terms(pod)
        if terms.errors:
            return None, Status.unresolvable(f"parsing pod: {terms.error_message()}")
        table = table_for(lister, all_nodes)
        no_terms = not terms.required_affinity and not terms.required_anti_affinity
        if no_terms and _none_on_any_node(lister, table, "have_pods_with_required_anti_affinity_list"):
            # Upstream's own SKIP: no existing pod has required anti-affinity (its list of such nodes is empty);
            # the census is not even brought up to date (a later cycle catches up on the rows changed since).
            return None, Status.skip()
        anti_census = self._anti_census.get(table)
        if no_terms and not _any_may_match(anti_census, pod):
            # No existing anti-affinity term can match the pod: every count below would stay empty and the full
            # path would SKIP too; concluded without listing namespaces or building the state.
            return None, Status.skip()
        namespaces = self._namespaces()
        s = PreFilterState(
            pod,
            tuple(self._merge_namespaces(t, namespaces) for t in terms.required_affinity),
            tuple(self._merge_namespaces(t, namespaces) for t in terms.required_anti_affinity),
            self._namespace_labels(namespaces, pod.namespace),
        )
        sums = self._sums_of
        # Existing pods' required anti-affinity terms, grouped: each distinct term is matched against the pod once.
        for term, per_row in anti_census.items():
            if term.matches(pod, s.namespace_labels):
                key = term.topology_key
                s.add_sums("existing_anti_affinity_counts", key, *sums(table, ("anti", term), key, per_row))
        if s.affinity_terms:
            per_row = self._pods_matching(table, s.affinity_terms, all_terms=True)
            for t in s.affinity_terms:
                key = t.topology_key
                s.add_sums("affinity_counts", key, *sums(table, ("all", s.affinity_terms), key, per_row))
        for t in s.anti_affinity_terms:
            per_row = self._pods_matching(table, (t,), all_terms=False)
            key = t.topology_key
            s.add_sums("anti_affinity_counts", key, *sums(table, ("one", t), key, per_row))
        if not s.has_counts("existing_anti_affinity_counts") and not s.affinity_terms and not s.anti_affinity_terms:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    @staticmethod
    def _pre_filter_state(state: CycleState) -> PreFilterState | Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return Status.from_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return s

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_add, node.labels, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        s.update_with_pod(pod_to_remove, node.labels, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.node is None:
            return Status.from_error("node not found")
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return s
        return check_node(s, node.labels)

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        """:meth:`filter` over ``rows`` (every table row has a Node: the snapshot never holds ghosts)."""
        s = self._pre_filter_state(state)
        if isinstance(s, Status):
            return np.zeros(len(rows), np.bool_)
        ok = check_rows(s, table, rows)
        ok &= table.has_node[rows]
        return ok

    # --- memoised per-node counts ---------------------------------------------------------------------------

    def _sums_of(self, table: NodeTable, column: Hashable, key: str, per_row: IntArray) -> tuple[Domains, IntArray]:
        """``per_row`` (the memoised column named ``column``, just brought up to date) summed per domain of
        ``key`` over the rows with a Node: kept across cycles (DomainSums), refreshed on the rows changed since."""
        domains = table.domains(key)
        return domains, self._domain_sums.get(table, (column, key), domains, per_row)

    def _pods_matching(self, table: NodeTable, terms: tuple[AffinityTerm, ...], *, all_terms: bool) -> IntArray:
        """Per row, the pods matching every one of ``terms`` (``all_terms``, upstream
        ``podMatchesAllAffinityTerms``) or its single term (namespaceSelectors already merged)."""
        if all_terms:
            return self._counts.get(table, ("all", terms), lambda ni: sum(1 for p in ni.pods if matches_all(terms, p)))
        (term,) = terms
        return self._counts.get(table, ("one", term), lambda ni: sum(1 for p in ni.pods if term.matches(p, None)))

    # --- PreScore / Score -----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        if not nodes:
            return Status.skip()
        terms = pod_terms(pod)
        has_constraints = has_preferred(pod)
        if self.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip()
        lister = self._handle.snapshot()
        if terms.errors:
            return Status.from_error(f"failed to parse pod: {terms.error_message()}")
        table = table_for(lister, lister.list())
        if not has_constraints and _none_on_any_node(lister, table, "have_pods_with_affinity_list"):
            return Status.skip()  # no existing pod has any (anti-)affinity term: nothing can score the pod
        affinity_census = self._affinity_census.get(table)
        hard = self.hard_pod_affinity_weight
        if not has_constraints and not _any_may_match(
            affinity_census, pod, scores=lambda k: k[1] is not None or hard > 0
        ):
            # No existing pod's term can score the pod: nothing would be touched and the full path would SKIP
            # too; concluded without listing namespaces.
            return Status.skip()
        namespaces = self._namespaces()
        affinity = tuple(
            WeightedAffinityTerm(self._merge_namespaces(w.term, namespaces), w.weight) for w in terms.preferred_affinity
        )
        anti = tuple(
            WeightedAffinityTerm(self._merge_namespaces(w.term, namespaces), w.weight)
            for w in terms.preferred_anti_affinity
        )
        ns_labels = self._namespace_labels(namespaces, pod.namespace)
        by_key: dict[str, DomainScores] = {}

        def add(term: AffinityTerm, weight: int, column: Hashable, per_row: IntArray) -> None:
            d, counts = self._sums_of(table, column, term.topology_key, per_row)
            ds = by_key.get(term.topology_key)
            if ds is None:
                ds = by_key[term.topology_key] = DomainScores(
                    d, np.zeros(len(d.values), np.int64), np.zeros(len(d.values), np.bool_)
                )
            ds.add_counts(counts, weight)

        if has_constraints:  # the pod's preferred terms against every existing pod
            for w in affinity:
                add(w.term, w.weight, ("one", w.term), self._pods_matching(table, (w.term,), all_terms=False))
            for w in anti:
                add(w.term, -w.weight, ("one", w.term), self._pods_matching(table, (w.term,), all_terms=False))
        for census_key, per_row in affinity_census.items():
            # None: an existing pod's required affinity term, weighted by hardPodAffinityWeight (when > 0).
            term, signed_weight = census_key
            weight = hard if signed_weight is None else signed_weight
            if (signed_weight is not None or hard > 0) and term.matches(pod, ns_labels):
                add(term, weight, ("score", census_key), per_row)
        s = PreScoreState(by_key=by_key)
        if s.empty():
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return 0, Status.from_error(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        total = 0
        for key, values in s.topology_score.items():
            tv = node.labels.get(key)
            if tv is not None:
                total += values.get(tv, 0)
        return total, None

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return np.zeros(len(rows), np.int64)
        return s.scores_of(table, rows)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return Status.from_error(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        if not s.topology_score or not scores:
            return None
        normalize(scores)
        return None

    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        """:meth:`normalize_score` over the array score_vector returned."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState) or s.empty():
            return scores
        return normalize_array(scores)

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    # --- EnqueueExtensions ----------------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        pod_event = ClusterEvent("AssignedPod", ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE)
        node_event = ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
        return (
            ClusterEventWithHint(pod_event, self._is_schedulable_after_pod_change),
            ClusterEventWithHint(node_event, self._is_schedulable_after_node_change),
        )

    def _is_schedulable_after_pod_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        old_pod = None if old is None else as_pod_info(old)
        new_pod = None if new is None else as_pod_info(new)
        if (new_pod is not None and not new_pod.node_name) or (old_pod is not None and not old_pod.node_name):
            return QueueingHint.QUEUE_SKIP
        terms = pod_terms(pod)
        if terms.errors:
            return QueueingHint.QUEUE
        affinity, anti = terms.required_affinity, terms.required_anti_affinity
        if old_pod is not None and new_pod is not None:
            if not _matches_all_ns(affinity, old_pod) and _matches_all_ns(affinity, new_pod):
                return QueueingHint.QUEUE
            if _matches_any_ns(anti, old_pod) and not _matches_any_ns(anti, new_pod):
                return QueueingHint.QUEUE
            return QueueingHint.QUEUE_SKIP
        if new_pod is not None:
            return QueueingHint.QUEUE if _matches_all_ns(affinity, new_pod) else QueueingHint.QUEUE_SKIP
        assert old_pod is not None
        # Deleted: it may have matched the pod's anti-affinity, or its own anti-affinity may have rejected the pod.
        if _matches_any_ns(anti, old_pod) or pod_terms(old_pod).required_anti_affinity:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if new is None:
            return QueueingHint.QUEUE_SKIP
        new_labels = _node_labels(new)
        if old is None:
            # A new node has no pods: it may satisfy anti-affinity, and may carry a matching topology.
            return QueueingHint.QUEUE
        old_labels = _node_labels(old)
        if old_labels == new_labels:
            return QueueingHint.QUEUE_SKIP
        terms = pod_terms(pod)
        if terms.errors or not (terms.required_affinity or terms.required_anti_affinity):
            # Rejected by existing pods' anti-affinity (or unparsable): any label change may help.
            return QueueingHint.QUEUE
        for t in terms.required_affinity:
            if t.topology_key in new_labels:
                return QueueingHint.QUEUE
        for t in terms.required_anti_affinity:
            if old_labels.get(t.topology_key) != new_labels.get(t.topology_key):
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP


_NONE: Mapping[Any, int] = {}


def _required_anti_affinity_terms(ni: NodeInfo) -> Mapping[AffinityTerm, int]:
    """The required anti-affinity terms of the node's pods, with multiplicities (for the PreFilter census)."""
    if not ni.pods_with_required_anti_affinity:
        return _NONE
    return Counter(t for p in ni.pods_with_required_anti_affinity for t in pod_terms(p).required_anti_affinity)


def _scoring_terms(ni: NodeInfo) -> Mapping[tuple[AffinityTerm, int | None], int]:
    """The node's pods' terms that score the incoming pod, with multiplicities (:attr:`PodTerms.scoring`)."""
    if not ni.pods_with_affinity:
        return _NONE
    return Counter(key for p in ni.pods_with_affinity for key in pod_terms(p).scoring)


def _none_on_any_node(lister: Any, table: NodeTable, which: str) -> bool:
    """True when the snapshot's list ``which`` (of nodes with pods with affinity, or with required anti-affinity)
    is empty; only trusted for the snapshot's own table, whose lists the cache keeps with its rows."""
    if table is not getattr(lister, "node_table", None):
        return False
    have = getattr(lister, which, None)
    return have is not None and not have()


def _any_may_match(
    census: Mapping[Any, IntArray], pod: PodInfo, *, scores: Callable[[Any], bool] | None = None
) -> bool:
    """Whether some census key (an :class:`AffinityTerm`, or ``(term, weight)``) held by a pod still on a node
    may match ``pod`` (see :meth:`AffinityTerm.may_match_without_labels`); ``scores(key)`` False leaves a key
    out (a required affinity term when hardPodAffinityWeight is 0)."""
    for key, per_row in census.items():
        if scores is not None and not scores(key):
            continue
        term: AffinityTerm = key if isinstance(key, AffinityTerm) else key[0]
        if term.may_match_without_labels(pod) and per_row.any():
            return True
    return False


def _node_labels(obj: Any) -> Mapping[str, str]:
    if isinstance(obj, NodeInfo):
        return obj.labels
    return labels_of(obj)


def _matches_all_ns(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """All terms match ``pod`` ignoring namespaceSelectors' labels (hints have no namespace lister)."""
    return bool(terms) and all(t.matches(pod, None) for t in terms)


def _matches_any_ns(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    return any(t.matches(pod, None) for t in terms)


def new(args: Mapping[str, Any], handle: Handle) -> InterPodAffinity:
    """The plugin factory; ``args`` is v1 InterPodAffinityArgs (``hardPodAffinityWeight`` default 1,
    ``ignorePreferredTermsOfExistingPods`` default false). Raises ValueError when the weight is outside [0, 100]
    (upstream ``ValidateInterPodAffinityArgs``)."""
    raw_weight = args.get("hardPodAffinityWeight")
    weight = 1 if raw_weight is None else int(raw_weight)
    if not 0 <= weight <= 100:
        raise ValueError(f"hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0-100]")
    ignore = bool(args.get("ignorePreferredTermsOfExistingPods") or False)
    return InterPodAffinity(handle, hard_pod_affinity_weight=weight, ignore_preferred_terms_of_existing_pods=ignore)
