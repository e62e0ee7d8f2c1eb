"""GPU fragmentation as the FGD paper measures it (USENIX ATC'23, "Beware of Fragmentation").

A node's GPU capacity is *fragmented* for a pod type when it is idle but that type cannot use it. Against a
**target workload** M (the popular pod types with their probabilities, :func:`typical_pods`), a node's
fragmentation is the expected fragmented milli-GPU of a pod drawn from M (FGD-EXPERIMENT.md §2.2):

    F_n(M) = Σ_m p_m · f_n(m)

with ``f_n(m)``: every idle milli when m needs no GPU, when m's models exclude the node's model, or when m does not
fit (too few devices with ``idle >= m.milli``, or not enough CPU); otherwise only the slivers too small for m
(``Σ_g idle_g · [idle_g < m.milli]``). Memory is ignored, as in the artifact.

Invariant: :meth:`FragModel.node` is a pure function of ``(cpu_left, idle multiset, model)``, memoised on that key
(the artifact memoises the same way); the device order does not matter, so callers may pass any order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["DEFAULT_POPULARITY", "FragModel", "PodType", "TargetWorkload", "typical_pods"]

DEFAULT_POPULARITY: Final = 0.95


@dataclass(frozen=True, slots=True)
class PodType:
    """A pod's shape for fragmentation: CPU milli, milli-GPU per device, devices, acceptable models (None: any).

    A GPU-less pod has ``count == 0`` and ``milli == 0``.
    """

    cpu: int
    milli: int
    count: int
    models: frozenset[str] | None = None

    def sort_key(self) -> tuple[int, int, int, str]:
        return (self.cpu, self.milli, self.count, "|".join(sorted(self.models or ())))


TargetWorkload = tuple[tuple[PodType, float], ...]
"""Pod types with probabilities summing to 1, most popular first."""


def typical_pods(pods: Iterable[PodType], threshold: float = DEFAULT_POPULARITY) -> TargetWorkload:
    """The artifact's ``GetTypicalPods``: the most frequent types until they cover ``threshold`` of the pods.

    Types are taken one at a time by count, descending (ties: by (cpu, milli, count, models) descending, as the
    Go sort), until the cumulative count is at least ``threshold`` of all pods; the kept types' probabilities are
    renormalised to sum to 1. GPU-less types are included.
    """
    counts = Counter(pods)
    total = sum(counts.values())
    if total == 0:
        return ()
    ordered = sorted(counts.items(), key=lambda kv: (kv[1], kv[0].sort_key()), reverse=True)
    kept: list[tuple[PodType, int]] = []
    covered = 0
    for kind, count in ordered:
        kept.append((kind, count))
        covered += count
        if covered >= threshold * total:
            break
    return tuple((kind, count / covered) for kind, count in kept)


class FragModel:
    """Node and cluster fragmentation against one target workload, memoised per node state."""

    def __init__(self, workload: TargetWorkload) -> None:
        self.workload = workload
        self._cache: dict[tuple[int, tuple[int, ...], str], float] = {}
        # (probability, cpu, milli, count, models) flattened once: the loop below runs for every new node state.
        self._terms: Final = tuple((p, t.cpu, t.milli, t.count, t.models) for t, p in workload)

    def node(self, cpu_left: int, idle: Sequence[int], model: str) -> float:
        """F_n(M) in milli-GPU for a node with ``cpu_left`` CPU milli, per-device ``idle`` milli and ``model``."""
        key = (cpu_left, tuple(sorted(idle)), model)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        value = self._compute(cpu_left, key[1], model)
        self._cache[key] = value
        return value

    def _compute(self, cpu_left: int, idle: tuple[int, ...], model: str) -> float:
        if not idle:
            return 0.0
        idle_total = sum(idle)
        if idle_total == 0:
            return 0.0
        frag = 0.0
        for p, cpu, milli, count, models in self._terms:
            if count == 0 or (models is not None and model not in models):
                frag += p * idle_total
                continue
            fitting = 0
            slivers = 0
            for free in idle:
                if free >= milli:
                    fitting += 1
                else:
                    slivers += free
            if fitting >= count and cpu_left >= cpu:
                frag += p * slivers
            else:
                frag += p * idle_total
        return frag
