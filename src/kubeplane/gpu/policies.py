"""The FGD paper's six GPU scheduling policies as pure functions: feasibility, node score, device choice.

Exactly the artifact's semantics (FGD-EXPERIMENT.md §1.5, §1.6, §3): integer scores in 0..100, higher wins;
``FGD`` scores by the drop in the node's fragmentation with ``int(100 · sigmoid(Δ / 1000))`` (its quantisation is
part of the behaviour: ties then fall to node order); ``BestFit`` is min–max normalised over the scored nodes;
``RandomFit`` draws one feasible node per pod. Device choice: FGD takes, for a GPU share, the device whose use
lowers fragmentation most (lowest index on ties); RandomFit a uniformly random device with room; the others the
tightest device (smallest idle that fits, lowest index). Whole GPUs are always the lowest-index fully free devices.

Both the scheduler plugins (:mod:`kubeplane.gpu.plugins`) and the fast replay (:mod:`kubeplane.gpu.repro`) call
these, so a policy means the same thing everywhere. Invariant: nothing here mutates its arguments; only
:meth:`Policy.pre_score` and :meth:`Policy.devices` of RandomFit consume the RNG.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Final

from kubeplane.gpu.frag import FragModel, PodType, TargetWorkload
from kubeplane.gpu.model import MILLI_PER_GPU, GpuRequest

__all__ = [
    "MAX_SPEC_CPU",
    "MAX_SPEC_GPU",
    "POLICIES",
    "BestFit",
    "DotProduct",
    "Fgd",
    "GpuClustering",
    "GpuPacking",
    "NodeView",
    "PodDemand",
    "Policy",
    "RandomFit",
    "devices_best",
    "devices_first_free",
    "devices_random",
    "gpu_fits",
    "make_policy",
]

MAX_SPEC_CPU: Final = 128_000
"""The artifact's fixed normaliser for CPU milli (``MaxSpecCpu``), not a node's capacity."""
MAX_SPEC_GPU: Final = 8_000
"""The artifact's fixed normaliser for milli-GPU (``MaxSpecGpu``)."""


@dataclass(frozen=True, slots=True)
class PodDemand:
    """What a pod asks: CPU milli, memory (any unit, consistent with :attr:`NodeView.mem_left`), devices.

    ``count`` devices with ``milli`` each; a GPU-less pod has ``count == milli == 0``.
    """

    cpu: int
    memory: int
    count: int = 0
    milli: int = 0
    models: frozenset[str] | None = None

    @classmethod
    def of(cls, cpu: int, memory: int, request: GpuRequest | None) -> PodDemand:
        if request is None:
            return cls(cpu, memory)
        return cls(cpu, memory, request.count, request.milli, request.models)

    @property
    def is_share(self) -> bool:
        return self.count == 1 and self.milli < MILLI_PER_GPU

    @property
    def gpu_total(self) -> int:
        return self.count * self.milli

    @property
    def tag(self) -> str:
        """GpuClustering's tag: ``share-gpu`` for a share, ``<n>-gpu`` for whole GPUs, "" without GPUs."""
        if self.count == 0:
            return ""
        return "share-gpu" if self.is_share else f"{self.count}-gpu"

    def pod_type(self) -> PodType:
        return PodType(self.cpu, self.milli, self.count, self.models)


@dataclass(frozen=True, slots=True)
class NodeView:
    """A node as the policies see it: free CPU milli and memory, free milli per device in index order, model.

    ``tags`` are the GpuClustering tags of the GPU pods on the node.
    """

    cpu_left: int
    mem_left: int
    idle: tuple[int, ...]
    model: str = ""
    tags: frozenset[str] = frozenset()

    @property
    def idle_total(self) -> int:
        return sum(self.idle)


def gpu_fits(node: NodeView, pod: PodDemand) -> bool:
    """The GPU part of feasibility (``Open-Gpu-Share``'s Filter): model accepted and ``count`` devices with room."""
    if pod.count == 0:
        return True
    if not node.idle or (pod.models is not None and node.model not in pod.models):
        return False
    return sum(1 for free in node.idle if free >= pod.milli) >= pod.count


def devices_first_free(idle: Sequence[int], pod: PodDemand) -> tuple[int, ...]:
    """The lowest-index devices with room: for whole GPUs the lowest-index fully free ones."""
    return tuple(i for i, free in enumerate(idle) if free >= pod.milli)[: pod.count]


def devices_best(idle: Sequence[int], pod: PodDemand) -> tuple[int, ...]:
    """Best fit: a share goes to the tightest device (smallest idle that fits, lowest index); whole GPUs first free."""
    if pod.count == 0:
        return ()
    if not pod.is_share:
        return devices_first_free(idle, pod)
    best = -1
    for i, free in enumerate(idle):
        if free >= pod.milli and (best < 0 or free < idle[best]):
            best = i
    return () if best < 0 else (best,)


def devices_random(idle: Sequence[int], pod: PodDemand, rng: random.Random) -> tuple[int, ...]:
    """A share on a uniformly random device with room; whole GPUs first free."""
    if not pod.is_share:
        return devices_first_free(idle, pod) if pod.count else ()
    candidates = [i for i, free in enumerate(idle) if free >= pod.milli]
    return (candidates[rng.randrange(len(candidates))],) if candidates else ()


def _take_ascending(idle: Sequence[int], pod: PodDemand) -> list[int]:
    """The devices ``NodeResource.Sub`` takes: in stable ascending-idle order among those with room."""
    fitting = sorted((i for i, free in enumerate(idle) if free >= pod.milli), key=lambda i: idle[i])
    return fitting[: pod.count]


class Policy:
    """A scoring policy. ``score`` is the raw score of a feasible node; ``devices`` the devices it would use.

    ``normalize`` tells the caller to min–max rescale the raw scores over the scored nodes (:func:`normalize`).
    """

    name: ClassVar[str] = ""
    normalize: ClassVar[bool] = False

    def pre_score(self, feasible: int, rng: random.Random) -> None:
        """Called once per pod with the number of feasible nodes, before any :meth:`score`."""

    def score(self, node: NodeView, pod: PodDemand) -> int:
        raise NotImplementedError

    def score_at(self, index: int, node: NodeView, pod: PodDemand) -> int:
        """The score of the ``index``-th feasible node in node order (only RandomFit looks at the index)."""
        return self.score(node, pod)

    def devices(self, node: NodeView, pod: PodDemand, rng: random.Random) -> tuple[int, ...]:
        return devices_best(node.idle, pod)


def normalize(scores: Sequence[int]) -> list[int]:
    """The artifact's ``NormalizeScore``: ``(s − min) · 100 / (max − min)`` in integers, all 0 when max = min."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [0] * len(scores)
    return [(s - low) * 100 // (high - low) for s in scores]


def _sigmoid_score(delta: float) -> int:
    """``int64(100 · sigmoid(Δ / 1000))``: truncation quantises Δ into ~40-milli steps near 0."""
    x = delta / 1000.0
    if x < -700:
        return 0
    return int(100.0 / (1.0 + math.exp(-x)))


class Fgd(Policy):
    """Fragmentation Gradient Descent: the node (and device) whose use lowers fragmentation against M the most."""

    name = "FGD"

    def __init__(self, workload: TargetWorkload) -> None:
        self.frag = FragModel(workload)
        # (cpu_left, idle in index order, model, pod cpu, milli, count) -> (score, devices)
        self._cache: dict[tuple[int, tuple[int, ...], str, int, int, int], tuple[int, tuple[int, ...]]] = {}

    def evaluate(self, node: NodeView, pod: PodDemand) -> tuple[int, tuple[int, ...]]:
        """(score, devices) for a feasible node."""
        key = (node.cpu_left, node.idle, node.model, pod.cpu, pod.milli, pod.count)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        frag = self.frag
        before = frag.node(node.cpu_left, node.idle, node.model)
        cpu_after = node.cpu_left - pod.cpu
        result: tuple[int, tuple[int, ...]]
        if pod.is_share:
            best, chosen = -1, -1
            idle = list(node.idle)
            for i, free in enumerate(node.idle):
                if free < pod.milli:
                    continue
                idle[i] = free - pod.milli
                s = _sigmoid_score(before - frag.node(cpu_after, idle, node.model))
                idle[i] = free
                if s > best:
                    best, chosen = s, i
            result = (max(best, 0), () if chosen < 0 else (chosen,))
        else:
            taken = _take_ascending(node.idle, pod)
            idle = list(node.idle)
            for i in taken:
                idle[i] -= pod.milli
            score = _sigmoid_score(before - frag.node(cpu_after, idle, node.model))
            result = (score, devices_first_free(node.idle, pod) if pod.count else ())
        self._cache[key] = result
        return result

    def score(self, node: NodeView, pod: PodDemand) -> int:
        return self.evaluate(node, pod)[0]

    def devices(self, node: NodeView, pod: PodDemand, rng: random.Random) -> tuple[int, ...]:
        return self.evaluate(node, pod)[1]


class BestFit(Policy):
    """Least remaining CPU and GPU after placement, against the fixed max-spec normalisers; min–max normalised."""

    name = "BestFit"
    normalize = True

    def score(self, node: NodeView, pod: PodDemand) -> int:
        cpu = 0.5 * (node.cpu_left - pod.cpu) / MAX_SPEC_CPU
        gpu = 0.5 * (node.idle_total - pod.gpu_total) / MAX_SPEC_GPU
        return int(100 * (1 - (cpu + gpu)))


class DotProduct(Policy):
    """The artifact's "Tetris" (dimext merge, norm max): the smallest dot product of node-free and pod vectors."""

    name = "DotProduct"

    def score(self, node: NodeView, pod: PodDemand) -> int:
        if node.cpu_left < pod.cpu:
            return 0
        dot = (node.cpu_left / MAX_SPEC_CPU) * (pod.cpu / MAX_SPEC_CPU) + (node.idle_total / MAX_SPEC_GPU) * (
            pod.gpu_total / MAX_SPEC_GPU
        )
        return int(100 * (1 - dot / 2))


class GpuPacking(Policy):
    """Already-shared devices first, then free devices of partly used nodes, then idle nodes (fewer GPUs first)."""

    name = "GpuPacking"

    def score(self, node: NodeView, pod: PodDemand) -> int:
        if pod.count == 0:
            return 0
        if all(free == MILLI_PER_GPU for free in node.idle):
            return max(33 - len(node.idle), len(node.idle))
        used = _take_ascending(node.idle, pod)
        full = sum(1 for i in used if node.idle[i] == MILLI_PER_GPU)
        if full:
            return max(50 - full, 33)
        return max(100 - sum(node.idle[i] * 100 // MILLI_PER_GPU for i in used) // 10, 50)


class GpuClustering(Policy):
    """Pods of one kind (share, 1-GPU, 2-GPU, …) together; among equals, the fuller node."""

    name = "GpuClustering"

    def score(self, node: NodeView, pod: PodDemand) -> int:
        if pod.count == 0:
            return 0
        base = 25 * (MAX_SPEC_GPU - node.idle_total) // MAX_SPEC_GPU
        tag = pod.tag
        if not node.tags:
            return base + 25
        if tag in node.tags:
            return base + (75 if len(node.tags) == 1 else 50)
        return base


class RandomFit(Policy):
    """One feasible node drawn uniformly per pod scores 100, every other 0; a share on a random device."""

    name = "RandomFit"

    def __init__(self) -> None:
        self.chosen = -1

    def pre_score(self, feasible: int, rng: random.Random) -> None:
        self.chosen = rng.randrange(feasible) if feasible > 0 else -1

    def score(self, node: NodeView, pod: PodDemand) -> int:
        return 0

    def score_at(self, index: int, node: NodeView, pod: PodDemand) -> int:
        return 100 if index == self.chosen else 0

    def devices(self, node: NodeView, pod: PodDemand, rng: random.Random) -> tuple[int, ...]:
        return devices_random(node.idle, pod, rng)


POLICIES: Final = ("FGD", "BestFit", "GpuPacking", "GpuClustering", "DotProduct", "RandomFit")
"""The paper's six policies, by the names of their scheduler plugins."""


def make_policy(name: str, workload: TargetWorkload | None = None) -> Policy:
    """A fresh policy by plugin name; FGD needs the target workload. Raises ValueError for an unknown name."""
    if name == "FGD":
        if workload is None:
            raise ValueError("FGD needs a target workload")
        return Fgd(workload)
    simple: dict[str, type[Policy]] = {
        "BestFit": BestFit,
        "GpuPacking": GpuPacking,
        "GpuClustering": GpuClustering,
        "DotProduct": DotProduct,
        "RandomFit": RandomFit,
    }
    if name not in simple:
        raise ValueError(f"unknown GPU policy {name!r}; known: {', '.join(POLICIES)}")
    return simple[name]()
