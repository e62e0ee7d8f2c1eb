"""InterPodAffinity's scoring helpers (upstream ``interpodaffinity/scoring.go``, v1.37): per-topology weight
sums and the min/max NormalizeScore; the plugin lives in :mod:`.inter_pod_affinity`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubeplane.scheduler.framework.interface import MAX_NODE_SCORE, NodeScore
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.inter_pod_affinity_filtering import AffinityTerm, WeightedAffinityTerm

__all__ = [
    "PRE_SCORE_STATE_KEY",
    "PreScoreState",
    "has_preferred",
    "normalize",
    "process_term",
    "process_terms",
]

PRE_SCORE_STATE_KEY = "PreScoreInterPodAffinity"


@dataclass
class PreScoreState:
    topology_score: dict[str, dict[str, int]]

    def clone(self) -> PreScoreState:
        return self


def has_preferred(pod: PodInfo) -> bool:
    pref = "preferredDuringSchedulingIgnoredDuringExecution"
    return bool(
        ((pod.affinity.get("podAffinity") or {}).get(pref)) or ((pod.affinity.get("podAntiAffinity") or {}).get(pref))
    )


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
