"""The scoring machinery NodeResourcesFit and NodeResourcesBalancedAllocation share.

Mirrors upstream ``pkg/scheduler/framework/plugins/noderesources/resource_allocation.go`` (the
``resourceAllocationScorer`` and ``calculateResourceAllocatableRequest``), ``least_allocated.go``,
``most_allocated.go``, ``requested_to_capacity_ratio.go`` and ``pkg/scheduler/framework/plugins/helper/shape_score.go``
(kube-scheduler v1.37). Rules that decide scores:

* The pod's request per configured resource is computed once (PreScore) as upstream's
  ``calculatePodResourceRequestList``: with ``use_requested`` (BalancedAllocation) the pod's effective requests;
  otherwise (NodeResourcesFit) the *non-zero* requests, where a container naming no cpu (memory) request counts
  as 100m (200Mi).
* Per node and resource (``calculateResourceAllocatableRequest``): cpu and memory compare node allocatable with
  ``NodeInfo.non_zero_requested`` (``requested`` with ``use_requested``), ephemeral-storage and scalar resources
  with ``NodeInfo.requested``. A scalar resource the pod does not request, a resource the node does not have,
  and any resource whose allocatable is 0 is left out of the score altogether; so are names that are neither
  cpu, memory, ephemeral-storage nor scalar (``pods``), which upstream resolves to ``(0, 0)`` as well.
* Each strategy receives ``requested`` (node usage plus the pod), ``allocated`` (node usage without the pod) and
  ``allocatable`` for the resources left, in configuration order, and returns an int64 score. All integer
  arithmetic is Go's: division truncates toward zero (:func:`.helper.go_div`), rounding is ``math.Round`` (half
  away from zero, :func:`go_round`); float arithmetic is IEEE double in the same operation order as upstream, so the
  numpy paths give bit-identical results.

Invariants: every ``score_vector`` returns exactly what ``score`` returns for each row (property tests pin it);
``score_vector`` is pure numpy over the selected rows; nothing here allocates a dict per node.
A scalar resource the node's allocatable lacks but a DeviceClass serves (DRAExtendedResource) is scored by its
devices on the node (:mod:`.resource_allocation_dra`) when PreScore found such a configured resource.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, cast

import numpy as np

from kubeplane.api.pods import NON_ZERO_DEFAULTS, is_pod_level_requests_set, pod_requests
from kubeplane.scheduler.backend.node_table import IntArray, NodeTable
from kubeplane.scheduler.backend.row_memo import RowMemo
from kubeplane.scheduler.framework.interface import MAX_NODE_SCORE, CycleState, ScoreExtensions, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, is_scalar_resource_name
from kubeplane.scheduler.plugins.helper import go_div, go_div_vector
from kubeplane.scheduler.plugins.resource_allocation_dra import DraScoreState, dra_score_state
from kubeplane.scheduler.plugins.shape_memo import ShapeMemo

__all__ = [
    "DEFAULT_RESOURCES",
    "LEAST_ALLOCATED",
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MAX_UTILIZATION",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "BalancedStrategy",
    "LeastAllocatedStrategy",
    "MostAllocatedStrategy",
    "RequestedToCapacityRatioStrategy",
    "ResourceAllocationScorer",
    "ResourceSpec",
    "ScoreTerm",
    "ScoringStrategy",
    "ShapePoint",
    "broken_linear_vector",
    "build_broken_linear_function",
    "go_round",
    "go_round_vector",
    "parse_resource_specs",
]

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"

MAX_CUSTOM_PRIORITY_SCORE: Final = 10
"""The top of the v1 API's shape score range (``config.MaxCustomPriorityScore``); scaled to MAX_NODE_SCORE."""
MAX_UTILIZATION: Final = 100


# --- Go arithmetic ---------------------------------------------------------------------------------------


def go_round(x: float) -> int:
    """Go's ``math.Round``: to the nearest integer, halves away from zero (Python's ``round`` is half-even)."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return t


def go_round_vector(x: np.ndarray[Any, np.dtype[np.float64]]) -> IntArray:
    """:func:`go_round` elementwise."""
    t = np.trunc(x)
    rounded: np.ndarray[Any, np.dtype[np.float64]] = np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)
    return rounded.astype(np.int64)


# --- configuration ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """One scored resource and its weight (``config.ResourceSpec``)."""

    name: str
    weight: int


@dataclass(frozen=True, slots=True)
class ShapePoint:
    """One point of a RequestedToCapacityRatio shape, score already scaled to [0, MAX_NODE_SCORE]."""

    utilization: int
    score: int


DEFAULT_RESOURCES: Final = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
"""Upstream's ``defaultResourceSpec``: cpu and memory, weight 1 each."""


def parse_resource_specs(raw: Iterable[Mapping[str, Any]] | None) -> tuple[ResourceSpec, ...]:
    """v1 ``resources`` (``[{"name": ..., "weight": ...}]``) with upstream's defaulting: an empty or missing list
    means :data:`DEFAULT_RESOURCES`, a missing or zero weight means 1."""
    specs = tuple(ResourceSpec(str(r["name"]), int(r.get("weight") or 0) or 1) for r in raw or ())
    return specs or DEFAULT_RESOURCES


# --- shape score (helper/shape_score.go) -----------------------------------------------------------------


def build_broken_linear_function(shape: Sequence[ShapePoint]) -> Callable[[int], int]:
    """Upstream ``BuildBrokenLinearFunction``: ``shape[0].score`` up to the first utilization, linear between
    points (Go integer arithmetic), ``shape[-1].score`` past the last one."""
    points = tuple((p.utilization, p.score) for p in shape)

    def fn(p: int) -> int:
        for i, (utilization, score) in enumerate(points):
            if p <= utilization:
                if i == 0:
                    return score
                prev_u, prev_s = points[i - 1]
                return prev_s + go_div((score - prev_s) * (p - prev_u), utilization - prev_u)
        return points[-1][1]

    return fn


def broken_linear_vector(shape: Sequence[ShapePoint], p: IntArray) -> IntArray:
    """:func:`build_broken_linear_function` over an array of utilizations."""
    result: IntArray = np.full(p.shape, shape[-1].score, np.int64)
    for i in range(len(shape) - 1, -1, -1):  # the first point with p <= utilization wins
        point = shape[i]
        if i == 0:
            value: IntArray = np.full(p.shape, point.score, np.int64)
        else:
            prev = shape[i - 1]
            # A zero width never selects this segment (p <= prev.utilization matched first); avoid dividing by 0.
            width = np.full(p.shape, (point.utilization - prev.utilization) or 1, np.int64)
            value = prev.score + go_div_vector((point.score - prev.score) * (p - prev.utilization), width)
        result = np.where(p <= point.utilization, value, result)
    return result


# --- strategies ------------------------------------------------------------------------------------------


class ScoringStrategy(Protocol):
    """A ``scorer func(requested, allocated, allocatable []int64) int64`` with its vectorised twin.

    ``score`` gets only the resources with a non-zero allocatable (upstream's scorers skip ``allocatable == 0``
    and the resource allocation scorer zeroes those entries). ``score_vector`` gets one array per resource over
    the rows and must itself leave out the rows where that resource's allocatable is 0.
    """

    def score(
        self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]
    ) -> int:
        """One node: parallel lists over the resources the node has, in configuration order."""
        ...

    def score_vector(
        self,
        requested: Sequence[IntArray],
        allocated: Sequence[IntArray],
        allocatable: Sequence[IntArray],
        weights: Sequence[int],
    ) -> IntArray: ...


def _weighted_mean(node_score: int, weight_sum: int) -> int:
    return 0 if weight_sum == 0 else go_div(node_score, weight_sum)


def _weighted_mean_vector(node_score: IntArray, weight_sum: IntArray) -> IntArray:
    return np.where(weight_sum == 0, 0, go_div_vector(node_score, np.where(weight_sum == 0, 1, weight_sum)))


def _mean_of(
    requested: Sequence[int],
    allocatable: Sequence[int],
    weights: Sequence[int],
    resource_score: Callable[[int, int], int],
) -> int:
    """The weighted mean of ``resource_score(requested, allocatable)`` over the scored resources (Least and
    Most allocated share it; only the per-resource formula differs)."""
    node_score = weight_sum = 0
    for req, cap, weight in zip(requested, allocatable, weights, strict=True):
        node_score += resource_score(req, cap) * weight
        weight_sum += weight
    return _weighted_mean(node_score, weight_sum)


def _mean_of_vector(
    requested: Sequence[IntArray],
    allocatable: Sequence[IntArray],
    weights: Sequence[int],
    resource_score: Callable[[IntArray, IntArray], IntArray],
) -> IntArray:
    """:func:`_mean_of` per row; a row whose allocatable of a resource is 0 leaves that resource out, as the
    per-node path (which never scores such a resource). ``resource_score`` sees a divisor-safe allocatable."""
    node_score, weight_sum = _zeros_like(requested), _zeros_like(requested)
    for req, cap, weight in zip(requested, allocatable, weights, strict=True):
        present = cap != 0
        node_score += np.where(present, resource_score(req, np.where(present, cap, 1)) * weight, 0)
        weight_sum += np.where(present, weight, 0)
    return _weighted_mean_vector(node_score, weight_sum)


class LeastAllocatedStrategy:
    """``leastResourceScorer``: the weighted mean of ``(allocatable - requested) * 100 / allocatable`` (0 when the
    request exceeds the allocatable)."""

    def score(
        self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]
    ) -> int:
        return _mean_of(requested, allocatable, weights, _least_score)

    def score_vector(
        self,
        requested: Sequence[IntArray],
        allocated: Sequence[IntArray],
        allocatable: Sequence[IntArray],
        weights: Sequence[int],
    ) -> IntArray:
        if weights and all(w > 0 for w in weights) and all(bool((cap > 0).all()) for cap in allocatable):
            # Every resource present with a positive allocatable on every row: all quotients are of non-negative
            # numbers by positive ones, where Go's truncation equals floor division.
            total: IntArray | None = None
            for req, cap, weight in zip(requested, allocatable, weights, strict=True):
                term = np.where(req > cap, 0, (cap - req) * MAX_NODE_SCORE // cap) * weight
                total = term if total is None else total + term
            assert total is not None
            return total // sum(weights)
        return _mean_of_vector(requested, allocatable, weights, _least_score_vector)


def _least_score(req: int, cap: int) -> int:
    return 0 if req > cap else go_div((cap - req) * MAX_NODE_SCORE, cap)


def _least_score_vector(req: IntArray, cap: IntArray) -> IntArray:
    scores: IntArray = np.where(req > cap, 0, go_div_vector((cap - req) * MAX_NODE_SCORE, cap))
    return scores


class MostAllocatedStrategy:
    """``mostResourceScorer``: the weighted mean of ``requested * 100 / allocatable`` with the request capped at
    the allocatable (non-zero defaults can push it above)."""

    def score(
        self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]
    ) -> int:
        return _mean_of(requested, allocatable, weights, _most_score)

    def score_vector(
        self,
        requested: Sequence[IntArray],
        allocated: Sequence[IntArray],
        allocatable: Sequence[IntArray],
        weights: Sequence[int],
    ) -> IntArray:
        return _mean_of_vector(requested, allocatable, weights, _most_score_vector)


def _most_score(req: int, cap: int) -> int:
    return go_div(min(req, cap) * MAX_NODE_SCORE, cap)


def _most_score_vector(req: IntArray, cap: IntArray) -> IntArray:
    return go_div_vector(np.minimum(req, cap) * MAX_NODE_SCORE, cap)


class RequestedToCapacityRatioStrategy:
    """``requestedToCapacityRatioScorer``: the shape applied to ``requested * 100 / allocatable`` (to 100 when the
    request exceeds it); only resources scoring above 0 enter the weighted mean, which is rounded (``math.Round``).
    """

    def __init__(self, shape: Sequence[ShapePoint]) -> None:
        if not shape:
            raise ValueError("requestedToCapacityRatio shape must not be empty")
        self.shape = tuple(shape)
        self._fn = build_broken_linear_function(self.shape)

    @classmethod
    def from_v1(cls, shape: Iterable[Mapping[str, Any]]) -> RequestedToCapacityRatioStrategy:
        """From v1 shape points, whose scores (0..10) are scaled to the scheduler's 0..100."""
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        return cls(
            [ShapePoint(int(p.get("utilization") or 0), int(p.get("score") or 0) * scale) for p in shape],
        )

    def score(
        self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]
    ) -> int:
        node_score = weight_sum = 0
        fn = self._fn
        for req, cap, weight in zip(requested, allocatable, weights, strict=True):
            resource_score = fn(MAX_UTILIZATION) if req > cap else fn(go_div(req * MAX_UTILIZATION, cap))
            if resource_score > 0:
                node_score += resource_score * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return go_round(float(node_score) / float(weight_sum))

    def score_vector(
        self,
        requested: Sequence[IntArray],
        allocated: Sequence[IntArray],
        allocatable: Sequence[IntArray],
        weights: Sequence[int],
    ) -> IntArray:
        node_score, weight_sum = _zeros_like(requested), _zeros_like(requested)
        for req, cap, weight in zip(requested, allocatable, weights, strict=True):
            present = cap != 0
            safe = np.where(present, cap, 1)
            utilization = np.where(req > cap, MAX_UTILIZATION, go_div_vector(req * MAX_UTILIZATION, safe))
            resource_score = broken_linear_vector(self.shape, utilization)
            counted = present & (resource_score > 0)
            node_score += np.where(counted, resource_score * weight, 0)
            weight_sum += np.where(counted, weight, 0)
        ratio = node_score.astype(np.float64) / np.where(weight_sum == 0, 1, weight_sum).astype(np.float64)
        return np.where(weight_sum == 0, 0, go_round_vector(ratio))


def _balance(values: Sequence[int], allocatable: Sequence[int]) -> int:
    """How balanced the fractions ``values / allocatable`` (capped at 1) are: ``int64((1 - std) * 100)`` where std
    is their standard deviation, ``|f0 - f1| / 2`` for two of them and 0 for fewer."""
    fractions: list[float] = []
    total = 0.0
    for value, cap in zip(values, allocatable, strict=True):
        fraction = float(value) / float(cap)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / float(len(fractions))
        acc = 0.0
        for fraction in fractions:
            acc = acc + (fraction - mean) * (fraction - mean)
        std = math.sqrt(acc / float(len(fractions)))
    return int((1 - std) * float(MAX_NODE_SCORE))


def _balance_vector(values: Sequence[IntArray], allocatable: Sequence[IntArray]) -> IntArray:
    if len(values) == 2:
        cap0, cap1 = allocatable
        if cap0.all() and cap1.all():
            # Both resources present on every row (the usual cpu + memory): std = |f0 - f1| / 2, the same float
            # operations as the general path below.
            f0 = np.minimum(values[0].astype(np.float64) / cap0.astype(np.float64), 1.0)
            f1 = np.minimum(values[1].astype(np.float64) / cap1.astype(np.float64), 1.0)
            std2 = np.abs((f0 - f1) / 2)
            return ((1 - std2) * float(MAX_NODE_SCORE)).astype(np.int64)
    rows = values[0].shape if values else (0,)
    count: IntArray = np.zeros(rows, np.int64)
    total = np.zeros(rows, np.float64)
    first = np.zeros(rows, np.float64)
    second = np.zeros(rows, np.float64)
    fractions: list[np.ndarray[Any, np.dtype[np.float64]]] = []
    present_masks = []
    for value, cap in zip(values, allocatable, strict=True):
        present = cap != 0
        fraction = value.astype(np.float64) / np.where(present, cap, 1).astype(np.float64)
        fraction = np.where(present, np.minimum(fraction, 1.0), 0.0)
        first = np.where(present & (count == 0), fraction, first)
        second = np.where(present & (count == 1), fraction, second)
        total = total + fraction  # absent entries add 0.0, which leaves the sum exact
        count += present
        fractions.append(fraction)
        present_masks.append(present)
    safe_count = np.where(count == 0, 1, count).astype(np.float64)
    mean = total / safe_count
    acc = np.zeros(rows, np.float64)
    for fraction, present in zip(fractions, present_masks, strict=True):
        deviation = fraction - mean
        acc = acc + np.where(present, deviation * deviation, 0.0)
    std = np.where(
        count == 2,
        np.abs((first - second) / 2),
        np.where(count > 2, np.sqrt(acc / safe_count), 0.0),
    )
    return ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


class BalancedStrategy:
    """``balancedResourceScorer`` (v1.37): rewards the change in balance the pod causes,
    ``50 + (50 + balance_with_pod - balance_without_pod) / 2`` in Go integer arithmetic, so an unchanged balance
    scores 75, perfect -> worst 50, worst -> perfect 100. Weights are not used."""

    def score(
        self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int], weights: Sequence[int]
    ) -> int:
        with_pod = _balance(requested, allocatable)
        without_pod = _balance(allocated, allocatable)
        half = MAX_NODE_SCORE // 2
        return half + go_div(half + with_pod - without_pod, 2)

    def score_vector(
        self,
        requested: Sequence[IntArray],
        allocated: Sequence[IntArray],
        allocatable: Sequence[IntArray],
        weights: Sequence[int],
    ) -> IntArray:
        if len(allocatable) == 2 and bool(allocatable[0].all()) and bool(allocatable[1].all()):
            # The usual cpu + memory on nodes having both: _balance_vector's two-resource case, fused.
            cap0, cap1 = allocatable[0].astype(np.float64), allocatable[1].astype(np.float64)
            req0, req1 = requested
            use0, use1 = allocated
            with_std = np.abs((np.minimum(req0 / cap0, 1.0) - np.minimum(req1 / cap1, 1.0)) / 2)
            without_std = np.abs((np.minimum(use0 / cap0, 1.0) - np.minimum(use1 / cap1, 1.0)) / 2)
            with_pod = ((1 - with_std) * float(MAX_NODE_SCORE)).astype(np.int64)
            without_pod = ((1 - without_std) * float(MAX_NODE_SCORE)).astype(np.int64)
        else:
            with_pod = _balance_vector(requested, allocatable)
            without_pod = _balance_vector(allocated, allocatable)
        half = MAX_NODE_SCORE // 2
        diff: IntArray = half + with_pod - without_pod
        # Go's truncating division by 2: floor division, plus one where an odd negative value was rounded down.
        out: IntArray = half + (diff // 2 + ((diff < 0) & (diff % 2 != 0)))
        return out


def _zeros_like(arrays: Sequence[IntArray]) -> IntArray:
    return np.zeros(arrays[0].shape if arrays else (0,), np.int64)


# --- the resource allocation scorer ----------------------------------------------------------------------

_CPU, _MEMORY, _EPHEMERAL, _SCALAR = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class ScoreTerm:
    """One configured resource that may contribute for this pod: its kind, name, the pod's request, its weight.

    Resources that can never contribute (a scalar the pod does not request, ``pods`` and other non-scalar names)
    are dropped when the terms are built, which is what upstream's ``(0, 0)`` result amounts to.
    """

    kind: int
    name: str
    pod_request: int
    weight: int


class ResourceAllocationScorer:
    """Upstream's ``resourceAllocationScorer``: a strategy plus the resources it scores and which requests it uses.

    ``use_requested`` selects ``NodeInfo.requested`` and the pod's plain requests for cpu and memory
    (BalancedAllocation); otherwise the non-zero variants are used (NodeResourcesFit).
    """

    __slots__ = ("name", "resources", "strategy", "use_requested")

    def __init__(
        self, name: str, resources: Sequence[ResourceSpec], strategy: ScoringStrategy, *, use_requested: bool
    ) -> None:
        self.name = name
        self.resources = tuple(resources)
        self.strategy = strategy
        self.use_requested = use_requested

    # -- PreScore -------------------------------------------------------------------------------------

    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        """The pod's request for each configured resource (``calculatePodResourceRequestList``)."""
        requests = pod.requests
        full: dict[str, int] | None = None  # upstream's PodRequests list, computed only when needed
        non_zero_cpu, non_zero_memory = pod.non_zero_cpu, pod.non_zero_memory
        if not self.use_requested and is_pod_level_requests_set(pod.pod):
            # NodeInfo's non-zero requests treat pod-level requests differently from the scorer's
            # NonMissingContainerRequests; compute the scorer's own.
            full = pod_requests(pod.pod, non_missing=NON_ZERO_DEFAULTS, use_status_resources=True)
            non_zero_cpu, non_zero_memory = full.get("cpu", 0), full.get("memory", 0)
        out: list[int] = []
        for spec in self.resources:
            name = spec.name
            if name == "cpu":
                out.append(requests.milli_cpu if self.use_requested else non_zero_cpu)
            elif name == "memory":
                out.append(requests.memory if self.use_requested else non_zero_memory)
            elif name == "ephemeral-storage":
                out.append(requests.ephemeral_storage)
            elif is_scalar_resource_name(name):
                out.append(requests.scalar.get(name, 0))
            else:
                if full is None:
                    non_missing = None if self.use_requested else NON_ZERO_DEFAULTS
                    full = pod_requests(pod.pod, non_missing=non_missing, use_status_resources=True)
                out.append(full.get(name, 0))
        return tuple(out)

    def terms(self, pod_requests: Sequence[int]) -> tuple[ScoreTerm, ...]:
        """The resources that may contribute for a pod with these requests, in configuration order."""
        out: list[ScoreTerm] = []
        for spec, request in zip(self.resources, pod_requests, strict=True):
            name = spec.name
            if name == "cpu":
                kind = _CPU
            elif name == "memory":
                kind = _MEMORY
            elif name == "ephemeral-storage":
                kind = _EPHEMERAL
            elif is_scalar_resource_name(name):
                if request == 0:
                    continue  # an extended resource the pod does not request is bypassed
                kind = _SCALAR
            else:
                continue  # e.g. "pods": never among the node's scalar resources, so (0, 0) upstream
            out.append(ScoreTerm(kind, name, request, spec.weight))
        return tuple(out)

    # -- Score ----------------------------------------------------------------------------------------

    def score(self, node: NodeInfo, terms: Sequence[ScoreTerm], dra: DraScoreState | None = None) -> int:
        """The strategy's score of one node; ``dra`` scores the scalars a DeviceClass serves by devices."""
        allocatable = node.allocatable
        requested = node.requested
        used = requested if self.use_requested else node.non_zero_requested
        req_list: list[int] = []
        used_list: list[int] = []
        alloc_list: list[int] = []
        weights: list[int] = []
        for term in terms:
            kind = term.kind
            if kind == _CPU:
                alloc, in_use = allocatable.milli_cpu, used.milli_cpu
            elif kind == _MEMORY:
                alloc, in_use = allocatable.memory, used.memory
            elif kind == _EPHEMERAL:
                alloc, in_use = allocatable.ephemeral_storage, requested.ephemeral_storage
            else:
                alloc = allocatable.scalar.get(term.name, 0)
                in_use = requested.scalar.get(term.name, 0)
                if alloc == 0 and dra is not None and node.node is not None:
                    alloc, in_use = dra.allocatable_allocated(node.node, term.name)
            if alloc == 0:
                continue  # only resources the node has are scored
            req_list.append(in_use + term.pod_request)
            used_list.append(in_use)
            alloc_list.append(alloc)
            weights.append(term.weight)
        return self.strategy.score(req_list, used_list, alloc_list, weights)

    def score_vector(
        self, table: NodeTable, rows: IntArray, terms: Sequence[ScoreTerm], dra: DraScoreState | None = None
    ) -> IntArray:
        """:meth:`score` for ``rows`` of ``table``."""
        req_cols: list[IntArray] = []
        used_cols: list[IntArray] = []
        alloc_cols: list[IntArray] = []
        weights: list[int] = []
        for term in terms:
            kind = term.kind
            if kind == _CPU:
                used_col = table.requested["cpu"] if self.use_requested else table.non_zero_cpu
            elif kind == _MEMORY:
                used_col = table.requested["memory"] if self.use_requested else table.non_zero_memory
            else:
                used_col = table.requested_of(term.name)
            alloc = table.allocatable_of(term.name)[rows]
            in_use = used_col[rows]
            if term.kind == _SCALAR and dra is not None and dra.serves(term.name):
                alloc, in_use = _with_devices(table, rows, term.name, alloc, in_use, dra)
            req_cols.append(in_use + term.pod_request)
            used_cols.append(in_use)
            alloc_cols.append(alloc)
            weights.append(term.weight)
        if not terms:
            return self._empty_vector(rows)
        return self.strategy.score_vector(req_cols, used_cols, alloc_cols, weights)

    def _empty_vector(self, rows: IntArray) -> IntArray:
        value = self.strategy.score((), (), (), ())
        return np.full(rows.shape, value, np.int64)


def _with_devices(
    table: NodeTable, rows: IntArray, name: str, alloc: IntArray, in_use: IntArray, dra: DraScoreState
) -> tuple[IntArray, IntArray]:
    """The rows whose allocatable lacks ``name`` take the DeviceClass's device counts (one lookup per such row)."""
    alloc, in_use = alloc.copy(), in_use.copy()
    for i in np.flatnonzero(alloc == 0):
        node = table.node_infos[int(rows[i])].node
        if node is not None:
            alloc[i], in_use[i] = dra.allocatable_allocated(node, name)
    return alloc, in_use


_MAX_STATES = 256
"""PreScore states kept per plugin (all dropped when full): pod shapes in use at once."""


@dataclass(frozen=True, slots=True)
class ScoreState:
    """PreScore state of the NodeResources scoring plugins: the pod's request per configured resource (upstream's
    ``podRequests``), the resources that may contribute, and the DRA state when a configured resource is backed
    by a DeviceClass (upstream's ``draPreScoreState``)."""

    pod_requests: tuple[int, ...]
    terms: tuple[ScoreTerm, ...]
    dra: DraScoreState | None = None

    def clone(self) -> ScoreState:
        return self


class AllocationScorePlugin:
    """Score, score_vector and score_extensions shared by NodeResourcesFit and NodeResourcesBalancedAllocation:
    read the PreScore state under ``score_state_key`` (or compute it when PreScore did not run, as upstream's
    getPreScoreState fallback) and delegate to ``scorer``."""

    scorer: ResourceAllocationScorer
    score_state_key: str = ""
    handle: Any = None
    dra_extended_resource: bool = False
    """The DRAExtendedResource gate (set by the plugin): score DeviceClass-backed scalars by their devices."""
    _row_memo: RowMemo | None = None
    """Scores of pod shapes in steady use (:mod:`.backend.row_memo`), made on first use."""

    _states: ShapeMemo[ScoreState] | None = None
    """ScoreStates without DRA state by the pod's requests (:meth:`_score_state`), made on first use."""

    def _score_state(self, pod: PodInfo) -> ScoreState:
        """The PreScore state. Without a DeviceClass-backed scalar it is a function of the pod's requests alone
        (the terms follow from the requests and this plugin's fixed configuration; ScoreState is immutable), so
        pods with the same requests share one: built once per shape, not per pod. Device counts are cluster
        state: a state with them is built every time (on the shape's terms)."""
        requests = self.scorer.pod_requests(pod)
        states = self._states
        if states is None:
            states = self._states = ShapeMemo(_MAX_STATES)
        s = states.get(requests, lambda: ScoreState(requests, self.scorer.terms(requests)))
        if self.dra_extended_resource and any(t.kind == _SCALAR for t in s.terms):
            dra = dra_score_state(self.handle, [spec.name for spec in self.scorer.resources])
            return ScoreState(requests, s.terms, dra)
        return s

    def plans_pre_score(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): the PreScore state (or the best-effort SKIP) is a function of
        the pod's requests, unless it carries device counts (cluster state)."""
        return self._score_state(pod).dra is None

    def _state(self, state: CycleState, pod: PodInfo) -> ScoreState:
        s = state.get(self.score_state_key)
        return s if isinstance(s, ScoreState) else self._score_state(pod)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        s = self._state(state, pod)
        if not self.scorer.resources:
            return 0, Status.from_error("resources not found")
        return self.scorer.score(node, s.terms, s.dra), None

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        s = self._state(state, pod)
        if s.dra is not None:  # device counts come from the DRA state, not the row alone
            return self.scorer.score_vector(table, rows, s.terms, s.dra)
        # Elementwise in the row and a function of the terms only: kept as a column across cycles.
        memo = self._row_memo
        if memo is None:
            memo = self._row_memo = RowMemo()
        scorer, terms, infos = self.scorer, s.terms, table.node_infos
        fn = functools.partial(scorer.score_vector, table, terms=terms)
        # Keyed by the requests (a tuple of ints hashes in C), which determine the terms for this plugin.
        key = s.pod_requests
        return cast(IntArray, memo.get(table, key, fn, rows, one=lambda r: scorer.score(infos[r], terms)))

    def score_extensions(self) -> ScoreExtensions | None:
        return None
