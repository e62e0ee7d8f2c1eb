"""InterPodAffinity's scoring helpers (upstream ``interpodaffinity/scoring.go``, v1.37): per-topology weight
sums and the min/max NormalizeScore; the plugin lives in :mod:`.inter_pod_affinity`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubeplane.scheduler.backend.node_table import BoolArray, Domains, IntArray, NodeTable
from kubeplane.scheduler.framework.interface import MAX_NODE_SCORE, NodeScore
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.inter_pod_affinity_filtering import AffinityTerm, WeightedAffinityTerm
from kubeplane.scheduler.plugins.topology_counts import at_rows, domain_sums

__all__ = [
    "PRE_SCORE_STATE_KEY",
    "DomainScores",
    "PreScoreState",
    "has_preferred",
    "normalize",
    "normalize_array",
    "process_term",
    "process_terms",
]

PRE_SCORE_STATE_KEY = "PreScoreInterPodAffinity"


@dataclass
class DomainScores:
    """The weight sums of one topology key per domain id of ``domains``; ``touched`` marks the domains some
    matching pod was counted in (the reference creates their entries even when the weights cancel)."""

    domains: Domains
    sums: IntArray
    touched: BoolArray

    def add(self, per_row: IntArray, include: BoolArray, weight: int) -> None:
        """Count ``weight`` per matching pod of ``per_row`` (pods per row) on the included rows."""
        self.add_counts(domain_sums(self.domains, per_row, include), weight)

    def add_counts(self, counts: IntArray, weight: int) -> None:
        """Count ``weight`` per matching pod of ``counts`` (matching pods per domain id)."""
        self.sums += counts * weight
        self.touched |= counts > 0


class PreScoreState:
    """PreScore's weight sums per topology key and value (upstream ``topologyScore``).

    Built either from ``topology_score`` (the dict form) or from per-key :class:`DomainScores` over a table,
    in which case the dict is materialised only when the per-node reference path asks for it.
    """

    def __init__(
        self,
        topology_score: dict[str, dict[str, int]] | None = None,
        by_key: dict[str, DomainScores] | None = None,
    ) -> None:
        self._topology_score = topology_score
        self.by_key = by_key or {}

    @property
    def topology_score(self) -> dict[str, dict[str, int]]:
        if self._topology_score is None:
            out: dict[str, dict[str, int]] = {}
            for key, ds in self.by_key.items():
                touched = np.flatnonzero(ds.touched)
                if len(touched):
                    values = ds.domains.values
                    out[key] = {values[d]: c for d, c in zip(touched.tolist(), ds.sums[touched].tolist(), strict=True)}
            self._topology_score = out
        return self._topology_score

    def empty(self) -> bool:
        if self._topology_score is not None:
            return not self._topology_score
        return not any(ds.touched.any() for ds in self.by_key.values())

    def scores_of(self, table: NodeTable, rows: IntArray) -> IntArray:
        """Score (the sum over keys of the node's value's weight) for ``rows`` of ``table``."""
        total: IntArray = np.zeros(len(rows), np.int64)
        if self._topology_score is None and all(table.domains(k) is ds.domains for k, ds in self.by_key.items()):
            per_key = [(ds.domains, ds.sums) for ds in self.by_key.values()]
        else:
            per_key = []
            for key, by_value in self.topology_score.items():
                d = table.domains(key)
                sums: IntArray = np.zeros(len(d.values), np.int64)
                for value, c in by_value.items():
                    k = d.id_of.get(value)
                    if k is not None:
                        sums[k] = c
                per_key.append((d, sums))
        for d, sums in per_key:
            total += at_rows(sums, d.ids[rows])
        return total

    def clone(self) -> PreScoreState:
        return self


def has_preferred(pod: PodInfo) -> bool:
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    return bool(pod.pod_affinity.get(pref) or pod.pod_anti_affinity.get(pref))


def process_term(
    scores: dict[str, dict[str, int]],
    term: AffinityTerm,
    weight: int,
    pod: PodInfo,
    ns_labels: Mapping[str, str] | None,
    node_labels: Mapping[str, str],
    multiplier: int,
) -> None:
    if term.matches(pod, ns_labels):
        tv = node_labels.get(term.topology_key)
        if tv is not None:
            by_value = scores.setdefault(term.topology_key, {})
            by_value[tv] = by_value.get(tv, 0) + weight * multiplier


def process_terms(
    scores: dict[str, dict[str, int]],
    terms: Sequence[WeightedAffinityTerm],
    pod: PodInfo,
    ns_labels: Mapping[str, str] | None,
    node_labels: Mapping[str, str],
    multiplier: int,
) -> None:
    for w in terms:
        process_term(scores, w.term, w.weight, pod, ns_labels, node_labels, multiplier)


def normalize_array(scores: IntArray) -> IntArray:
    """:func:`normalize` over an int64 array (the same float64 operations, truncated the same way)."""
    if not len(scores):
        return scores.copy()
    low, high = int(scores.min()), int(scores.max())
    diff = high - low
    if diff <= 0:
        return np.zeros(len(scores), np.int64)
    scaled: IntArray = (float(MAX_NODE_SCORE) * ((scores - low).astype(np.float64) / float(diff))).astype(np.int64)
    return scaled


def normalize(scores: list[NodeScore]) -> None:
    """Upstream ``NormalizeScore``: map ``[min, max]`` of the raw (possibly negative) scores to ``[0, 100]``."""
    if not scores:
        return
    max_count = max(ns.score for ns in scores)
    min_count = min(ns.score for ns in scores)
    diff = max_count - min_count
    for ns in scores:
        # float64 arithmetic and truncation toward zero, as upstream (the value is never negative).
        ns.score = int(float(MAX_NODE_SCORE) * (float(ns.score - min_count) / float(diff))) if diff > 0 else 0
