"""InterPodAffinity's terms and filtering state (upstream ``interpodaffinity/filtering.go`` and
``framework/types.go`` ``AffinityTerm``, v1.37); the plugin lives in :mod:`.inter_pod_affinity`."""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubeplane.api import labels
from kubeplane.api.labels import Operator, SelectorError
from kubeplane.api.validation.field import aggregate_text
from kubeplane.scheduler.backend.node_table import BoolArray, Domains, IntArray, NodeTable
from kubeplane.scheduler.framework.interface import Status
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.topology_counts import at_rows, domain_sums

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "AffinityTerm",
    "Counts",
    "PodTerms",
    "PreFilterState",
    "WeightedAffinityTerm",
    "check_node",
    "check_rows",
    "matches_all",
    "pod_terms",
    "satisfy_pod_affinity",
    "update_affinity",
    "update_anti_affinity",
]

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
"""Upstream ``ErrReasonExistingAntiAffinityRulesNotMatch`` (Unschedulable)."""
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
"""Upstream ``ErrReasonAffinityRulesNotMatch`` (UnschedulableAndUnresolvable)."""
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"
"""Upstream ``ErrReasonAntiAffinityRulesNotMatch`` (Unschedulable)."""

_AFFINITY_MISMATCH = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH)
_ANTI_AFFINITY_MISMATCH = Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
_EXISTING_ANTI_AFFINITY_MISMATCH = Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)

TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]


# --- terms ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A compiled ``PodAffinityTerm`` (upstream ``framework.AffinityTerm``).

    Hashable by value, the hash computed once: terms key the censuses of existing pods' terms, which hash every
    term of every pod on each node that changed since the previous cycle (the generated ``__hash__`` would
    rehash the namespaces and both selectors each time)."""

    namespaces: frozenset[str]
    selector: labels.Selector
    topology_key: str
    namespace_selector: labels.Selector
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "_hash", hash((self.namespaces, self.selector, self.topology_key, self.namespace_selector))
        )

    def __hash__(self) -> int:
        return self._hash

    def may_match_without_labels(self, pod: PodInfo) -> bool:
        """:meth:`matches` when the answer does not depend on the labels of ``pod``'s namespace; True (maybe) when
        it does (the pod is outside the named namespaces and the namespaceSelector has requirements). So False
        means "matches for no namespace labels": a cycle may conclude that without listing namespaces."""
        sel = self.namespace_selector
        if pod.namespace not in self.namespaces and sel.selectable and sel.requirements:
            return True  # the namespace's labels decide: the caller must look them up
        return self.matches(pod, None)

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str] | None) -> bool:
        """True when ``pod`` is in the term's namespaces (by name, or its namespace's ``ns_labels`` match the
        namespaceSelector) and its labels match the selector."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(ns_labels or {}):
            return self.selector.matches(pod.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodTerms:
    """A pod's compiled terms; ``errors`` names the lists dropped because a selector did not parse."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    errors: tuple[str, ...] = ()
    scoring: tuple[tuple[AffinityTerm, int | None], ...] = field(init=False, repr=False, compare=False)
    """The terms that score an incoming pod, as InterPodAffinity's census keys: ``(term, None)`` for a required
    affinity term (weighted by hardPodAffinityWeight), ``(term, ±weight)`` for the preferred ones."""

    def __post_init__(self) -> None:
        scoring: list[tuple[AffinityTerm, int | None]] = [(t, None) for t in self.required_affinity]
        scoring += [(w.term, w.weight) for w in self.preferred_affinity]
        scoring += [(w.term, -w.weight) for w in self.preferred_anti_affinity]
        object.__setattr__(self, "scoring", tuple(scoring))

    def error_message(self) -> str:
        """Upstream's aggregate error text: the single error, or ``[e1, e2]``."""
        return aggregate_text(self.errors)


def _new_term(pod: PodInfo, term: Mapping[str, Any]) -> AffinityTerm:
    label_selector = term.get("labelSelector")
    selector = labels.label_selector_as_selector(label_selector)
    if label_selector is not None:
        extra: list[labels.Requirement] = []
        for key_field, op in (("matchLabelKeys", Operator.IN), ("mismatchLabelKeys", Operator.NOT_IN)):
            for key in term.get(key_field) or ():
                value = pod.labels.get(key)
                if value is not None:
                    extra.append(labels.new_requirement(key, op, [value]))
        if extra:
            selector = selector.add(*extra)
    names = term.get("namespaces") or ()
    ns_selector_src = term.get("namespaceSelector")
    namespaces = frozenset((pod.namespace,)) if not names and ns_selector_src is None else frozenset(names)
    ns_selector = labels.label_selector_as_selector(ns_selector_src)
    return AffinityTerm(namespaces, selector, term.get("topologyKey") or "", ns_selector)


def _parse_list(
    pod: PodInfo, terms: Sequence[Mapping[str, Any]], what: str, errors: list[str], weighted: bool
) -> tuple[Any, ...]:
    out: list[Any] = []
    try:
        for term in terms:
            if weighted:
                out.append(WeightedAffinityTerm(_new_term(pod, term.get("podAffinityTerm") or {}), int(term["weight"])))
            else:
                out.append(_new_term(pod, term))
    except (SelectorError, KeyError, TypeError, ValueError) as exc:
        errors.append(f"{what}: {exc}")
        return ()
    return tuple(out)


def _compute_terms(pod: PodInfo) -> PodTerms:
    affinity, anti = pod.pod_affinity, pod.pod_anti_affinity
    if not affinity and not anti:
        return _NO_TERMS
    errors: list[str] = []
    req = "requiredDuringSchedulingIgnoredDuringExecution"
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    return PodTerms(
        _parse_list(pod, affinity.get(req) or (), "requiredAffinityTerms", errors, False),
        _parse_list(pod, anti.get(req) or (), "requiredAntiAffinityTerms", errors, False),
        _parse_list(pod, affinity.get(pref) or (), "preferredAffinityTerms", errors, True),
        _parse_list(pod, anti.get(pref) or (), "preferredAntiAffinityTerms", errors, True),
        tuple(errors),
    )


_NO_TERMS = PodTerms()
_TERMS_CACHE: weakref.WeakKeyDictionary[PodInfo, PodTerms] = weakref.WeakKeyDictionary()


def pod_terms(pod: PodInfo) -> PodTerms:
    """The pod's compiled terms, computed once per PodInfo (upstream ``PodInfo.Required*Terms`` etc.)."""
    terms = _TERMS_CACHE.get(pod)
    if terms is None:
        terms = _compute_terms(pod)
        _TERMS_CACHE[pod] = terms
    return terms


def matches_all(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """Upstream ``podMatchesAllAffinityTerms`` (false for no terms); namespaceSelectors already merged."""
    if not terms:
        return False
    return all(t.matches(pod, None) for t in terms)


def _update(counts: Counts, node_labels: Mapping[str, str], key: str, value: int) -> None:
    tv = node_labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    n = counts.get(pair, 0) + value
    if n == 0:
        counts.pop(pair, None)
    else:
        counts[pair] = n


def update_affinity(
    counts: Counts, terms: Sequence[AffinityTerm], pod: PodInfo, node_labels: Mapping[str, str], value: int
) -> None:
    if matches_all(terms, pod):
        for t in terms:
            _update(counts, node_labels, t.topology_key, value)


def update_anti_affinity(
    counts: Counts,
    terms: Sequence[AffinityTerm],
    pod: PodInfo,
    ns_labels: Mapping[str, str] | None,
    node_labels: Mapping[str, str],
    value: int,
) -> None:
    for t in terms:
        if t.matches(pod, ns_labels):
            _update(counts, node_labels, t.topology_key, value)


# --- cycle state ------------------------------------------------------------------------------------------


_COUNTS = ("existing_anti_affinity_counts", "affinity_counts", "anti_affinity_counts")


class PreFilterState:
    """PreFilter's counts per topology pair (upstream's ``preFilterState``; updated by AddPod/RemovePod).

    Two forms of the same counts: ``dense``, per (counts name, topology key), the counts of that key as an array
    over one table's domain ids (keyed by the Domains object), and the dicts ``existing_anti_affinity_counts``,
    ``affinity_counts``, ``anti_affinity_counts`` (positive entries only, as the reference's +1 updates make).
    PreFilter fills ``dense`` alone (summing per domain with numpy); the dicts are built from it only when
    something reads them (the per-node Filter, AddPod/RemovePod, tests): with a hostname topology key they hold
    an entry per node, thousands of Python insertions a cycle that the vector Filter never needs. Once built,
    the dicts are the truth: ``update_with_pod`` updates them and clears ``dense``, which ``dense_counts``
    rebuilds from them, so the two never disagree.
    """

    __slots__ = ("_dicts", "affinity_terms", "anti_affinity_terms", "dense", "namespace_labels", "pod")

    def __init__(
        self,
        pod: PodInfo,
        affinity_terms: tuple[AffinityTerm, ...],
        anti_affinity_terms: tuple[AffinityTerm, ...],
        namespace_labels: Mapping[str, str],
        existing_anti_affinity_counts: Counts | None = None,
        affinity_counts: Counts | None = None,
        anti_affinity_counts: Counts | None = None,
    ) -> None:
        self.pod = pod
        self.affinity_terms = affinity_terms
        self.anti_affinity_terms = anti_affinity_terms
        self.namespace_labels = namespace_labels
        self.dense: dict[tuple[str, str], tuple[Domains, IntArray]] = {}
        self._dicts: dict[str, Counts] | None = {
            "existing_anti_affinity_counts": existing_anti_affinity_counts or {},
            "affinity_counts": affinity_counts or {},
            "anti_affinity_counts": anti_affinity_counts or {},
        }

    # --- the dict form (built on demand) --------------------------------------------------------------------

    def counts(self, which: str) -> Counts:
        """The counts named ``which`` as a dict of topology pair to count (built from ``dense`` if needed)."""
        dicts = self._dicts
        if dicts is None:
            dicts = self._dicts = {name: {} for name in _COUNTS}
            for (name, key), (domains, sums) in self.dense.items():
                target = dicts[name]
                values = domains.values
                nz = np.flatnonzero(sums)
                for d, c in zip(nz.tolist(), sums[nz].tolist(), strict=True):
                    pair = (key, values[d])
                    target[pair] = target.get(pair, 0) + c
        return dicts[which]

    @property
    def existing_anti_affinity_counts(self) -> Counts:
        return self.counts("existing_anti_affinity_counts")

    @property
    def affinity_counts(self) -> Counts:
        return self.counts("affinity_counts")

    @property
    def anti_affinity_counts(self) -> Counts:
        return self.counts("anti_affinity_counts")

    def has_counts(self, which: str) -> bool:
        """Whether the counts named ``which`` have any (positive) entry, without building the dicts."""
        if self._dicts is not None:
            return bool(self._dicts[which])
        return any(name == which and sums.any() for (name, _key), (_d, sums) in self.dense.items())

    def count_keys(self, which: str) -> list[str]:
        """The topology keys with an entry in the counts named ``which``, in first-seen order."""
        if self._dicts is not None:
            return list(dict.fromkeys(k for k, _ in self._dicts[which]))
        return [key for (name, key), (_d, sums) in self.dense.items() if name == which and sums.any()]

    # --- the dense form -------------------------------------------------------------------------------------

    def add_domain_sums(self, which: str, domains: Domains, key: str, per_row: IntArray, include: BoolArray) -> None:
        """Add ``per_row`` summed per domain of ``key`` (over included rows carrying it) to the counts named
        ``which``: to ``dense`` alone while the dicts are not built (PreFilter's case)."""
        self.add_sums(which, key, domains, domain_sums(domains, per_row, include))

    def add_sums(self, which: str, key: str, domains: Domains, sums: IntArray) -> None:
        """Add ``sums`` (counts per domain id of ``domains``, topology ``key``; owned by the state from now on)
        to the counts named ``which``, as :meth:`add_domain_sums`."""
        dicts = self._dicts
        if dicts is not None and any(dicts.values()):  # the dicts are the truth already: add to them too
            target, values = dicts[which], domains.values
            nz = np.flatnonzero(sums)
            for d, c in zip(nz.tolist(), sums[nz].tolist(), strict=True):
                pair = (key, values[d])
                target[pair] = target.get(pair, 0) + c
            self.dense.clear()
            return
        self._dicts = None
        cached = self.dense.get((which, key))
        if cached is None or cached[0] is not domains:
            self.dense[(which, key)] = (domains, sums)
        else:
            cached[1][:] += sums

    def dense_counts(self, which: str, key: str, domains: Domains) -> IntArray:
        """The counts named ``which`` of topology ``key`` per domain id of ``domains`` (0 where absent)."""
        cached = self.dense.get((which, key))
        if cached is not None and cached[0] is domains:
            return cached[1]
        out: IntArray = np.zeros(len(domains.values), np.int64)
        id_of = domains.id_of
        for (k, value), c in self.counts(which).items():
            if k == key:
                d = id_of.get(value)
                if d is not None:
                    out[d] = c
        self.dense[(which, key)] = (domains, out)
        return out

    def clone(self) -> PreFilterState:
        out = PreFilterState(self.pod, self.affinity_terms, self.anti_affinity_terms, self.namespace_labels)
        if self._dicts is None:
            out._dicts = None
            out.dense = {k: (d, sums.copy()) for k, (d, sums) in self.dense.items()}
        else:
            out._dicts = {name: dict(c) for name, c in self._dicts.items()}
        return out

    def update_with_pod(self, other: PodInfo, node_labels: Mapping[str, str], multiplier: int) -> None:
        """Upstream ``updateWithPod``: account for ``other`` added (+1) to or removed (-1) from a node."""
        existing = self.existing_anti_affinity_counts  # the dicts become the truth
        self.dense.clear()
        update_anti_affinity(
            existing,
            pod_terms(other).required_anti_affinity,
            self.pod,
            self.namespace_labels,
            node_labels,
            multiplier,
        )
        update_affinity(self.affinity_counts, self.affinity_terms, other, node_labels, multiplier)
        update_anti_affinity(self.anti_affinity_counts, self.anti_affinity_terms, other, None, node_labels, multiplier)


def satisfy_pod_affinity(s: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    """Upstream ``satisfyPodAffinity``, including the "first pod of a self-affine series" exception."""
    pods_exist = True
    for t in s.affinity_terms:
        tv = node_labels.get(t.topology_key)
        if tv is None:
            return False
        if s.affinity_counts.get((t.topology_key, tv), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        return not s.affinity_counts and matches_all(s.affinity_terms, s.pod)
    return True


def check_rows(s: PreFilterState, table: NodeTable, rows: IntArray) -> BoolArray:
    """:func:`check_node` over ``rows`` of ``table``: True where it returns success."""
    ok: BoolArray = np.ones(len(rows), np.bool_)
    if s.affinity_terms:
        exist: BoolArray = np.ones(len(rows), np.bool_)
        for t in s.affinity_terms:
            d = table.domains(t.topology_key)
            ids = d.ids[rows]
            has = ids >= 0
            ok &= has
            exist &= at_rows(s.dense_counts("affinity_counts", t.topology_key, d), ids) > 0
        if not exist.all() and not (not s.has_counts("affinity_counts") and matches_all(s.affinity_terms, s.pod)):
            ok &= exist
    for which, terms_keys in (
        ("anti_affinity_counts", list(dict.fromkeys(t.topology_key for t in s.anti_affinity_terms))),
        ("existing_anti_affinity_counts", s.count_keys("existing_anti_affinity_counts")),
    ):
        if not s.has_counts(which):
            continue
        for key in terms_keys:
            d = table.domains(key)
            ids = d.ids[rows]
            ok &= at_rows(s.dense_counts(which, key, d), ids) <= 0
    return ok


def check_node(s: PreFilterState, node_labels: Mapping[str, str]) -> Status | None:
    """Upstream ``Filter`` on a node with ``node_labels``: affinity, then anti-affinity, then existing pods'."""
    if not satisfy_pod_affinity(s, node_labels):
        return _AFFINITY_MISMATCH
    if s.anti_affinity_counts:
        for t in s.anti_affinity_terms:
            tv = node_labels.get(t.topology_key)
            if tv is not None and s.anti_affinity_counts.get((t.topology_key, tv), 0) > 0:
                return _ANTI_AFFINITY_MISMATCH
    if s.existing_anti_affinity_counts:
        for pair in node_labels.items():
            if s.existing_anti_affinity_counts.get(pair, 0) > 0:
                return _EXISTING_ANTI_AFFINITY_MISMATCH
    return None
