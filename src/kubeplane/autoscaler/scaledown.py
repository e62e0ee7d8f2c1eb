"""Scale-down planning (cluster-autoscaler's core/scaledown/{eligibility,unneeded,planner}, simulator/cluster.go,
utilization/info.go).

Each loop, for every node a group owns and that is not already being deleted:

1. **eligibility**: annotation ``cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`` ->
   ``ScaleDownDisabledAnnotation``; utilisation at or above the threshold -> ``NotUnderutilized``. Utilisation
   is the larger of the cpu and memory requests of the node's pods over its allocatable; a node with a GPU
   (``nvidia.com/gpu`` or any ``*/gpu`` allocatable) is judged by GPU requests alone against
   ``scale-down-gpu-utilization-threshold``. DaemonSet and mirror pods count unless
   ``ignore-daemonsets-utilization`` / ``ignore-mirror-pods-utilization``.
2. **removal simulation**, eligible nodes in order (empty nodes first, then the nodes unneeded in the previous
   loop, then by utilisation, then name), of the non-empty ones only the first
   ``scale-down-non-empty-candidates-count`` (30; <= 0: all): the pods to move by :mod:`.drain`'s rules (a
   blocking pod -> ``BlockedByPod``; expendable pods, of priority below ``expendable-pods-priority-cutoff``, are
   evicted without a new place), each placed by the scheduler's filters on the first other node (node-tree
   order) that is neither being removed nor already found unneeded (``NoPlaceToMovePods`` otherwise). A node
   found unneeded keeps its pods' new places for the next candidate, so two nodes never count on each other's
   room.
3. :class:`UnneededTracker` keeps since when each node has been unneeded; :func:`select_for_deletion` takes
   those unneeded for ``scale-down-unneeded-time`` (``scale-down-unready-time`` for a NotReady node): empty
   ones up to the empty batch limit, plus up to ``max-drain-parallelism`` that need a drain, never taking a group
   below its ``min_size`` (``NodeGroupMinSizeReached``).
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.pods import pod_requests
from kubeplane.api.taints import EFFECT_NO_SCHEDULE
from kubeplane.api.views import NodeView, annotations_of, controller_ref_of, is_pod_terminal, spec_of
from kubeplane.autoscaler.drain import MIRROR_ANNOTATION, DrainOptions, pods_to_move
from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import CloudProvider
from kubeplane.autoscaler.simulator import ClusterSimulator
from kubeplane.scheduler.framework.types import Resource

__all__ = [
    "SCALE_DOWN_DISABLED_ANNOTATION",
    "TO_BE_DELETED_TAINT",
    "NodeRemoval",
    "ScaleDownPlan",
    "UnneededTracker",
    "UnremovableReason",
    "is_being_deleted",
    "is_node_ready",
    "plan_scale_down",
    "select_for_deletion",
    "utilization",
]

Obj = Mapping[str, Any]

SCALE_DOWN_DISABLED_ANNOTATION = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"


class UnremovableReason(enum.StrEnum):
    """Upstream ``simulator.UnremovableReason`` names."""

    SCALE_DOWN_DISABLED_ANNOTATION = "ScaleDownDisabledAnnotation"
    NOT_AUTOSCALED = "NotAutoscaled"
    NOT_UNDERUTILIZED = "NotUnderutilized"
    CURRENTLY_BEING_DELETED = "CurrentlyBeingDeleted"
    BLOCKED_BY_POD = "BlockedByPod"
    NO_PLACE_TO_MOVE_PODS = "NoPlaceToMovePods"
    NODE_GROUP_MIN_SIZE_REACHED = "NodeGroupMinSizeReached"


@dataclass(frozen=True, slots=True)
class NodeRemoval:
    node: str
    group: str
    pods_to_move: tuple[Obj, ...]
    pods_to_evict: tuple[Obj, ...]
    """Every pod the drain evicts: those to move and the terminal ones."""
    ready: bool = True

    @property
    def empty(self) -> bool:
        return not self.pods_to_move


@dataclass
class ScaleDownPlan:
    unneeded: dict[str, NodeRemoval] = field(default_factory=dict)
    unremovable: dict[str, str] = field(default_factory=dict)
    """node -> UnremovableReason (and for BlockedByPod the blocking message after ``: ``)."""
    utilization: dict[str, float] = field(default_factory=dict)


_NOT_READY_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})


def is_node_ready(node: Obj) -> bool:
    """Upstream GetReadinessState: the Ready condition True and no not-ready/unreachable taint (a node the
    kubelet reports Ready keeps the taint until the node lifecycle controller removes it; until then nothing
    schedules there)."""
    view = NodeView(node)
    return view.is_ready and not any(t.get("key") in _NOT_READY_TAINTS for t in view.taints)


def is_being_deleted(node: Obj) -> bool:
    return any(t.get("key") == TO_BE_DELETED_TAINT for t in NodeView(node).taints)


def _gpu_resource(allocatable: Resource) -> str | None:
    for name, amount in allocatable.scalar.items():
        if name.endswith("/gpu") and amount > 0:
            return name
    return None


def utilization(node: Obj, pods: Sequence[Obj], options: AutoscalerOptions) -> tuple[float, bool]:
    """``(utilisation, is_gpu_node)`` (module docstring)."""
    allocatable = Resource.from_resource_list(NodeView(node).allocatable)
    gpu = _gpu_resource(allocatable)
    cpu = memory = gpus = 0
    for pod in pods:
        if is_pod_terminal(pod):
            continue
        ref = controller_ref_of(pod)
        if options.ignore_daemonsets_utilization and ref is not None and ref.get("kind") == "DaemonSet":
            continue
        if options.ignore_mirror_pods_utilization and MIRROR_ANNOTATION in annotations_of(pod):
            continue
        requests = pod_requests(pod)
        cpu += requests.get("cpu", 0)
        memory += requests.get("memory", 0)
        if gpu is not None:
            gpus += requests.get(gpu, 0)
    if gpu is not None:
        return gpus / allocatable.scalar[gpu], True
    cpu_util = cpu / allocatable.milli_cpu if allocatable.milli_cpu > 0 else 0.0
    mem_util = memory / allocatable.memory if allocatable.memory > 0 else 0.0
    return max(cpu_util, mem_util), False


def plan_scale_down(
    sim: ClusterSimulator,
    nodes: Sequence[Obj],
    *,
    provider: CloudProvider,
    options: AutoscalerOptions,
    pdbs: Sequence[Obj],
    now: float,
    previous: Collection[str] = (),
) -> ScaleDownPlan:
    """Which nodes are unneeded now, and why the others are not (module docstring). ``sim`` holds the cluster
    as the scheduler sees it (nodes being deleted already left out); it is forked, not changed. ``previous``: the
    nodes unneeded in the last loop (checked first, so their unneeded time keeps running)."""
    plan = ScaleDownPlan()
    drain_options = DrainOptions(
        skip_nodes_with_system_pods=options.skip_nodes_with_system_pods,
        skip_nodes_with_local_storage=options.skip_nodes_with_local_storage,
        skip_nodes_with_custom_controller_pods=options.skip_nodes_with_custom_controller_pods,
    )
    candidates: list[tuple[bool, bool, float, str, str, bool]] = []
    for node in nodes:
        view = NodeView(node)
        name = view.name
        group = provider.node_group_for(name)
        if group is None:
            continue
        if is_being_deleted(node):
            plan.unremovable[name] = UnremovableReason.CURRENTLY_BEING_DELETED
            continue
        if annotations_of(node).get(SCALE_DOWN_DISABLED_ANNOTATION) == "true":
            plan.unremovable[name] = UnremovableReason.SCALE_DOWN_DISABLED_ANNOTATION
            continue
        pods = sim.pods_on(name)
        util, is_gpu = utilization(node, pods, options)
        plan.utilization[name] = util
        threshold = options.scale_down_gpu_utilization_threshold if is_gpu else options.scale_down_utilization_threshold
        if util >= threshold:
            plan.unremovable[name] = UnremovableReason.NOT_UNDERUTILIZED
            continue
        move, _evict, blocking = pods_to_move(pods, pdbs=pdbs, options=drain_options, now=now)
        empty = not move and blocking is None
        candidates.append((not empty, name not in previous, util, name, group, is_node_ready(node)))
    work = sim.fork()
    limit = options.scale_down_non_empty_candidates_count
    non_empty = 0
    for busy, _, _, name, group, ready in sorted(candidates):
        if busy:
            non_empty += 1
            if 0 < limit < non_empty:
                break
        pods = work.pods_on(name)
        move, evict, blocking = pods_to_move(pods, pdbs=pdbs, options=drain_options, now=now)
        if blocking is not None:
            plan.unremovable[name] = f"{UnremovableReason.BLOCKED_BY_POD}: {blocking.message}"
            continue
        cutoff = options.expendable_pods_priority_cutoff
        expendable = [p for p in move if int(spec_of(p).get("priority") or 0) < cutoff]
        move = [p for p in move if int(spec_of(p).get("priority") or 0) >= cutoff]
        trial = work.fork()
        trial.remove_node(name)
        destinations = [n for n in trial.node_names() if n not in plan.unneeded]
        if all(trial.place(pod, only=destinations) is not None for pod in move):
            work = trial
            evicted = (*move, *expendable, *evict)
            plan.unneeded[name] = NodeRemoval(name, group, tuple(move), evicted, ready)
        else:
            plan.unremovable[name] = UnremovableReason.NO_PLACE_TO_MOVE_PODS
    return plan


class UnneededTracker:
    """Since when each node has been unneeded without a break (upstream ``unneeded.Nodes``)."""

    def __init__(self) -> None:
        self.since: dict[str, float] = {}

    def update(self, unneeded: Sequence[str], now: float) -> None:
        self.since = {name: self.since.get(name, now) for name in unneeded}

    def drop(self, name: str) -> None:
        self.since.pop(name, None)


def select_for_deletion(
    plan: ScaleDownPlan,
    tracker: UnneededTracker,
    *,
    provider: CloudProvider,
    options: AutoscalerOptions,
    now: float,
    deleting: Mapping[str, int],
) -> list[NodeRemoval]:
    """The nodes to delete this loop (module docstring); ``deleting`` counts nodes per group whose deletion is
    under way. Nodes a group's min size keeps get ``NodeGroupMinSizeReached`` in ``plan.unremovable``."""
    min_sizes = {g.name: g.min_size for g in provider.node_groups()}
    taken: dict[str, int] = {}
    empty: list[NodeRemoval] = []
    drain: list[NodeRemoval] = []
    for name, removal in plan.unneeded.items():
        since = tracker.since.get(name, now)
        if removal.ready:
            needed = options.scale_down_unneeded_time
        elif options.scale_down_unready_enabled:
            needed = options.scale_down_unready_time
        else:
            continue
        if now - since < needed:
            continue
        group = removal.group
        remaining = provider.target_size(group) - deleting.get(group, 0) - taken.get(group, 0)
        if remaining <= min_sizes.get(group, 0):
            plan.unremovable[name] = UnremovableReason.NODE_GROUP_MIN_SIZE_REACHED
            continue
        batch = empty if removal.empty else drain
        limit = options.empty_bulk_limit() if removal.empty else options.max_drain_parallelism
        if len(batch) >= limit or len(empty) + len(drain) >= options.max_scale_down_parallelism:
            continue
        batch.append(removal)
        taken[group] = taken.get(group, 0) + 1
    return empty + drain


def to_be_deleted_taint(now: float) -> dict[str, Any]:
    """The taint the actuator puts on a node it deletes (value: Unix seconds, as upstream)."""
    return {"key": TO_BE_DELETED_TAINT, "value": str(int(now)), "effect": EFFECT_NO_SCHEDULE}


def node_spec_taints(node: Obj) -> list[Any]:
    return list(spec_of(node).get("taints") or ())
