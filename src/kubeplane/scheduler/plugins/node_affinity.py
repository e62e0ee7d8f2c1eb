"""NodeAffinity: ``spec.nodeSelector``, required and preferred node affinity, and the profile's ``addedAffinity``
(upstream ``plugins/nodeaffinity``, v1.37).

* PreFilter skips pods with no node selector, no required node affinity and no ``addedAffinity`` required terms;
  otherwise it stores the pod's :class:`~kubeplane.api.nodeaffinity.RequiredNodeAffinity` (compiled once per
  pod version by PodInfo) and, when every required term names nodes with ``matchFields metadata.name In``,
  returns those names as a PreFilterResult (intersection within a term, union across terms; an empty union is
  "pod affinity terms conflict").
* Filter checks ``addedAffinity`` first (reason "node(s) didn't match scheduler-enforced node affinity"), then
  the pod's selector and terms ("node(s) didn't match Pod's node affinity/selector"); both unresolvable.
  Terms that failed to parse never match and their errors are ignored, as upstream.
* PreScore skips when neither the pod nor ``addedAffinity`` has preferred terms; Score sums the weights of the
  matching preferred terms of both; NormalizeScore scales to [0, 100] by the maximum.

Vectorised paths: requirements ``In``/``NotIn``/``Exists``/``DoesNotExist`` (and the ``=`` of nodeSelector) are
evaluated on ``NodeTable.label(key)`` columns, ``matchFields`` on node names; a term with ``Gt``/``Lt`` is
evaluated per node with the reference matcher, so results agree with Filter/Score exactly. The required affinity
is compiled once per distinct spec (:mod:`.node_affinity_memo`), and its Filter verdicts are kept per spec as a
whole-table column across cycles (:class:`~kubeplane.scheduler.backend.row_memo.RowMemo`: a function of the
node alone, refreshed on the rows refilled since with the per-node Filter).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.api import labels
from kubeplane.api.labels import Operator, SelectorError
from kubeplane.api.nodeaffinity import (
    NodeSelector,
    NodeSelectorTerm,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    new_node_selector,
    new_preferred_scheduling_terms,
)
from kubeplane.api.views import labels_of, name_of
from kubeplane.scheduler.backend.row_memo import RowMemo
from kubeplane.scheduler.framework.interface import (
    MAX_NODE_SCORE,
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
from kubeplane.scheduler.framework.types import NodeInfo
from kubeplane.scheduler.plugins.helper import default_normalize_score, default_normalize_vector
from kubeplane.scheduler.plugins.node_affinity_memo import MAX_SPECS, required_node_affinity
from kubeplane.scheduler.plugins.shape_memo import ShapeMemo

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import PodInfo

__all__ = [
    "ERR_REASON_CONFLICT",
    "ERR_REASON_ENFORCED",
    "ERR_REASON_POD",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "NodeAffinity",
    "new",
    "pre_filter_node_names",
]

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
"""Upstream ``ErrReasonPod``."""
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
"""Upstream ``errReasonEnforced`` (``addedAffinity`` not matched)."""
ERR_REASON_CONFLICT = "pod affinity terms conflict"
"""Upstream ``errReasonConflict`` (PreFilter: the terms' ``metadata.name`` sets have an empty union)."""

_POD_MISMATCH = Status.unresolvable(ERR_REASON_POD)
_ENFORCED_MISMATCH = Status.unresolvable(ERR_REASON_ENFORCED)
_CONFLICT = Status.unresolvable(ERR_REASON_CONFLICT)
_NAME_FIELD = "metadata.name"


def _node_affinity(pod: PodInfo) -> Mapping[str, Any]:
    na: Mapping[str, Any] = pod.affinity.get("nodeAffinity") or {}
    return na


def pre_filter_node_names(required: Mapping[str, Any] | None) -> frozenset[str] | None:
    """The only nodes the required terms can match, or None for "any node" (upstream's PreFilter logic).

    Each term ANDs its ``metadata.name In`` field requirements (intersection); terms are ORed (union). A term
    without such a requirement allows every node. An empty result means no node can match.
    """
    terms = (required.get("nodeSelectorTerms") if required else None) or ()
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        term_names: set[str] | None = None
        for req in term.get("matchFields") or ():
            if req.get("key") == _NAME_FIELD and req.get("operator") == "In":
                values = set(req.get("values") or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


def _pod_preferred_terms(pod: PodInfo) -> PreferredSchedulingTerms | None:
    """The pod's compiled preferred terms; None when the field is absent. Raises SelectorError on bad terms."""
    terms = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")
    if terms is None:
        return None
    return new_preferred_scheduling_terms(terms)


def _node_labels_and_name(obj: Any) -> tuple[Mapping[str, str], str]:
    if isinstance(obj, NodeInfo):
        return obj.labels, obj.name
    return labels_of(obj), name_of(obj)


# --- vectorised matching ----------------------------------------------------------------------------------


_NONE = np.array(None, dtype=object)  # what a label column holds for a node without the label


class _Kind(enum.Enum):
    IN = 0
    NOT_IN = 1
    EXISTS = 2
    DOES_NOT_EXIST = 3


_KINDS: Mapping[Operator, _Kind] = {
    Operator.IN: _Kind.IN,
    Operator.EQUALS: _Kind.IN,
    Operator.DOUBLE_EQUALS: _Kind.IN,
    Operator.NOT_IN: _Kind.NOT_IN,
    Operator.NOT_EQUALS: _Kind.NOT_IN,
    Operator.EXISTS: _Kind.EXISTS,
    Operator.DOES_NOT_EXIST: _Kind.DOES_NOT_EXIST,
}


@dataclass(frozen=True, slots=True)
class _LabelCheck:
    key: str
    kind: _Kind
    values: tuple[str, ...]


def _label_checks(selector: labels.Selector) -> tuple[_LabelCheck, ...] | None:
    """The selector as column checks; None when a requirement (Gt/Lt) or *nothing* has no column form."""
    if not selector.selectable:
        return None
    checks: list[_LabelCheck] = []
    for req in selector.requirements:
        kind = _KINDS.get(req.operator)
        if kind is None:
            return None
        checks.append(_LabelCheck(req.key, kind, req.values))
    return tuple(checks)


def _apply_checks(mask: BoolArray, checks: tuple[_LabelCheck, ...], table: NodeTable, rows: IntArray) -> None:
    """``mask &=`` every check, reading one label column per check (a missing label reads as None)."""
    for check in checks:
        if not mask.any():
            return
        col = table.label(check.key)[rows]
        if check.kind is _Kind.EXISTS:
            mask &= np.not_equal(col, _NONE)
        elif check.kind is _Kind.DOES_NOT_EXIST:
            mask &= np.equal(col, _NONE)
        else:
            hit: BoolArray = np.zeros(len(rows), np.bool_)
            for value in check.values:
                hit |= col == value
            mask &= hit if check.kind is _Kind.IN else ~hit


def _per_node(pred: Callable[[Mapping[str, str], str], bool], table: NodeTable, rows: IntArray) -> BoolArray:
    infos = table.node_infos
    return np.fromiter((pred(infos[i].labels, infos[i].name) for i in rows.tolist()), np.bool_, len(rows))


@dataclass(frozen=True, slots=True)
class _VecTerm:
    term: NodeSelectorTerm
    checks: tuple[_LabelCheck, ...] | None  # None: evaluate ``term.matches`` per node

    @classmethod
    def of(cls, term: NodeSelectorTerm) -> _VecTerm:
        checks = () if term.match_labels is None else _label_checks(term.match_labels)
        return cls(term, checks)

    def mask(self, table: NodeTable, rows: IntArray) -> BoolArray:
        term = self.term
        if term.parse_errors:
            return np.zeros(len(rows), np.bool_)
        if self.checks is None:
            return _per_node(term.matches, table, rows)
        mask: BoolArray = np.ones(len(rows), np.bool_)
        _apply_checks(mask, self.checks, table, rows)
        if term.match_fields is not None and mask.any():
            infos = table.node_infos
            names = np.array([infos[i].name for i in rows.tolist()], dtype=object)
            ok: BoolArray = np.ones(len(rows), np.bool_)
            for is_name, value, equal in term.name_checks:
                if is_name:
                    ok &= (names == value) if equal else (names != value)
                elif (value == "") is not equal:
                    ok[:] = False
            mask &= ok | (names == "")  # as upstream, a node without a name skips matchFields
        return mask


def _selector_mask(terms: tuple[_VecTerm, ...], table: NodeTable, rows: IntArray) -> BoolArray:
    """The OR of the terms (a selector without terms matches nothing)."""
    mask: BoolArray = np.zeros(len(rows), np.bool_)
    for term in terms:
        if mask.all():
            break
        mask |= term.mask(table, rows)
    return mask


@dataclass(frozen=True, slots=True)
class _VecRequired:
    """A RequiredNodeAffinity in column form."""

    required: RequiredNodeAffinity
    label_checks: tuple[_LabelCheck, ...] | None
    terms: tuple[_VecTerm, ...] | None

    @classmethod
    def of(cls, required: RequiredNodeAffinity) -> _VecRequired:
        sel = required.label_selector
        checks = () if sel is None else _label_checks(sel)
        ns = required.node_selector
        return cls(required, checks, None if ns is None else tuple(_VecTerm.of(t) for t in ns.terms))

    def mask(self, table: NodeTable, rows: IntArray) -> BoolArray:
        mask: BoolArray = np.ones(len(rows), np.bool_)
        sel = self.required.label_selector
        if sel is not None:
            if self.label_checks is None:
                matcher = sel.matcher
                mask &= _per_node(lambda node_labels, _name: matcher(node_labels), table, rows)
            else:
                _apply_checks(mask, self.label_checks, table, rows)
        if self.terms is not None and mask.any():
            mask &= _selector_mask(self.terms, table, rows)
        return mask


def _weighted_terms(terms: PreferredSchedulingTerms | None) -> tuple[tuple[int, _VecTerm], ...]:
    return () if terms is None else tuple((w, _VecTerm.of(t)) for w, t in terms.terms)


def _weights(terms: tuple[tuple[int, _VecTerm], ...], table: NodeTable, rows: IntArray, out: IntArray) -> None:
    for weight, term in terms:
        out += term.mask(table, rows).astype(np.int64) * weight


# --- cycle state ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _PreFilterState:
    required: RequiredNodeAffinity
    vector: _VecRequired | None = None  # compiled on first use by filter_vector
    key: bytes | None = None  # node_affinity_memo's key of ``required``: keys the Filter column (None: no column)

    def clone(self) -> _PreFilterState:
        return self  # not affected by pod additions or removals, as upstream

    def vec(self) -> _VecRequired:
        if self.vector is None:
            self.vector = _VecRequired.of(self.required)
        return self.vector


_VEC_REQUIRED: ShapeMemo[_VecRequired] = ShapeMemo(MAX_SPECS)
"""Column forms of the shared compiled affinities, by ``id``: an entry keeps its RequiredNodeAffinity alive
(``_VecRequired.required``), so while it is held its id names that object and no other; bounded like
node_affinity_memo's table of compiled specs."""


def _shared_vec(required: RequiredNodeAffinity) -> _VecRequired:
    return _VEC_REQUIRED.get(id(required), lambda: _VecRequired.of(required))


@dataclass(slots=True)
class _PreScoreState:
    preferred: PreferredSchedulingTerms | None
    vector: tuple[tuple[int, _VecTerm], ...] | None = None

    def clone(self) -> _PreScoreState:
        return self

    def vec(self) -> tuple[tuple[int, _VecTerm], ...]:
        if self.vector is None:
            self.vector = _weighted_terms(self.preferred)
        return self.vector


# --- the plugin -------------------------------------------------------------------------------------------


class NodeAffinity:
    """PreFilter, Filter, PreScore, Score, NormalizeScore and EnqueueExtensions, with vectorised Filter/Score."""

    def __init__(
        self,
        handle: Handle | None = None,
        *,
        added_node_selector: NodeSelector | None = None,
        added_preferred: PreferredSchedulingTerms | None = None,
    ) -> None:
        self._handle = handle
        self._added_node_selector = added_node_selector
        self._added_preferred = added_preferred
        self._added_vec = None if added_node_selector is None else tuple(map(_VecTerm.of, added_node_selector.terms))
        self._added_pref_vec = _weighted_terms(added_preferred)
        self._filter_columns = RowMemo()

    def name(self) -> str:
        return NAME

    # --- EnqueueExtensions ----------------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        event = ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
        return (ClusterEventWithHint(event, self._is_schedulable_after_node_change),)

    def _is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue when an added node matches, or an updated node went from not matching to matching."""
        if new is None:
            return QueueingHint.QUEUE
        new_labels, new_name = _node_labels_and_name(new)
        added = self._added_node_selector
        if added is not None and not added.matches_parts(new_labels, new_name):
            return QueueingHint.QUEUE_SKIP
        required = pod.required_node_affinity
        is_matched, err = required.match_parts(new_labels, new_name)
        if err is not None:
            return QueueingHint.QUEUE
        if not is_matched:
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        was_matched, err = required.match_parts(*_node_labels_and_name(old))
        if err is not None or not was_matched:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- PreFilter / Filter ---------------------------------------------------------------------------------

    def plans_pre_filter(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): the pod's nodeSelector and required affinity and this
        plugin's added affinity decide (the state's column form is derived from them, the same for every pod)."""
        return True

    def plans_pre_score(self, pod: PodInfo) -> bool:
        """Per-shape plans: the pod's preferred terms and the added preferred terms decide."""
        return True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
        if required is None and self._added_node_selector is None and pod.spec.get("nodeSelector") is None:
            return None, Status.skip()
        key, compiled = required_node_affinity(pod.pod, pod.spec, required)
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(compiled, _shared_vec(compiled), key))
        names = pre_filter_node_names(required)
        if names is None:
            return None, None
        if not names:
            return None, _CONFLICT
        return PreFilterResult(names), None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def _required(self, state: CycleState, pod: PodInfo) -> _PreFilterState:
        s = state.get(PRE_FILTER_STATE_KEY)
        # Without PreFilter (disabled), compute it here as upstream's fallback does.
        return s if isinstance(s, _PreFilterState) else _PreFilterState(pod.required_node_affinity)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return self._filter_node(self._required(state, pod), node)

    def _filter_node(self, s: _PreFilterState, node: NodeInfo) -> Status | None:
        node_labels, node_name = node.labels, node.name
        added = self._added_node_selector
        if added is not None and not added.matches_parts(node_labels, node_name):
            return _ENFORCED_MISMATCH
        matched, _ = s.required.match_parts(node_labels, node_name)
        return None if matched else _POD_MISMATCH

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        s = self._required(state, pod)
        if s.key is None:
            return self._mask(s, table, rows)
        # A function of the node's labels and name for this key: kept as a column across cycles (RowMemo), the
        # rows refilled since brought up to date with the per-node Filter.
        infos = table.node_infos
        mask: BoolArray = self._filter_columns.get(
            table,
            s.key,
            lambda at: self._mask(s, table, at),
            rows,
            one=lambda r: self._filter_node(s, infos[r]) is None,
        )
        return mask

    def _mask(self, s: _PreFilterState, table: NodeTable, rows: IntArray) -> BoolArray:
        if self._added_vec is not None:
            mask = _selector_mask(self._added_vec, table, rows)
            if mask.any():
                mask &= s.vec().mask(table, rows)
            return mask
        return s.vec().mask(table, rows)

    # --- PreScore / Score / NormalizeScore ------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        try:
            preferred = _pod_preferred_terms(pod)
        except SelectorError as exc:
            return Status.from_error(exc)
        if preferred is None and self._added_preferred is None:
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return None

    def _preferred(self, state: CycleState, pod: PodInfo) -> _PreScoreState:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            return s
        return _PreScoreState(_pod_preferred_terms(pod))  # PreScore disabled: upstream's fallback

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        count = 0
        if self._added_preferred is not None:
            count += self._added_preferred.score_parts(node.labels, node.name)
        try:
            preferred = self._preferred(state, pod).preferred
        except SelectorError as exc:
            return 0, Status.from_error(exc)
        if preferred is not None:
            count += preferred.score_parts(node.labels, node.name)
        return count, None

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        scores: IntArray = np.zeros(len(rows), np.int64)
        try:
            pod_terms = self._preferred(state, pod).vec()
        except SelectorError:
            return scores
        _weights(self._added_pref_vec, table, rows, scores)
        _weights(pod_terms, table, rows, scores)
        return scores

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        """:meth:`normalize_score` over the raw scores of the vectorised path."""
        return default_normalize_vector(MAX_NODE_SCORE, False, scores)

    def score_extensions(self) -> ScoreExtensions | None:
        return self


def new(args: Mapping[str, Any], handle: Handle) -> NodeAffinity:
    """The plugin factory; ``args`` is NodeAffinityArgs (``{"addedAffinity": v1.NodeAffinity}``).

    Raises ValueError (upstream's message) when ``addedAffinity`` does not parse.
    """
    added: Mapping[str, Any] = args.get("addedAffinity") or {}
    node_selector: NodeSelector | None = None
    preferred: PreferredSchedulingTerms | None = None
    required = added.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        try:
            node_selector = new_node_selector(required)
        except SelectorError as exc:
            raise ValueError(f"parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: {exc}") from exc
    terms = added.get("preferredDuringSchedulingIgnoredDuringExecution")
    if terms:
        try:
            preferred = new_preferred_scheduling_terms(terms)
        except SelectorError as exc:
            raise ValueError(f"parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: {exc}") from exc
    return NodeAffinity(handle, added_node_selector=node_selector, added_preferred=preferred)
