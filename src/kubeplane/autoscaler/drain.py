"""What blocks draining a node, pod by pod (cluster-autoscaler's simulator/drainability/rules and utils/drain).

:func:`drainability` runs upstream's default rules in upstream's order and returns the first decided outcome:

1. mirror pods (``kubernetes.io/config.mirror``): skipped -- the kubelet owns them;
2. long-terminating pods (deleting for longer than their grace period + 30 s): skipped;
3. DaemonSet pods: skipped (not moved; the DaemonSet controller ignores a node that is going away);
4. ``cluster-autoscaler.kubernetes.io/safe-to-evict: "true"``: drainable, whatever follows;
5. terminal pods (Succeeded/Failed): drainable, nothing to move;
6. not replicated (no controller; with skip-nodes-with-custom-controller-pods only ReplicationController,
   ReplicaSet, Job and StatefulSet count as replicating): ``NotReplicated``;
7. kube-system pods no PodDisruptionBudget selects (skip-nodes-with-system-pods): ``UnmovableKubeSystemPod``;
8. ``safe-to-evict: "false"``: ``NotSafeToEvictAnnotation``;
9. local storage (a ``hostPath``, or an ``emptyDir`` not backed by memory, not named in
   ``cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes``) with skip-nodes-with-local-storage:
   ``LocalStorageRequested``;
10. a matching PDB with ``status.disruptionsAllowed`` < 1: ``NotEnoughPdb``.

Anything no rule decided is drainable and must be moved (:attr:`Outcome.DRAIN`). Not implemented: the
``replicacount`` rule's ``--min-replica-count`` and the controller-exists lookups of the legacy custom-controller
check (this core has no listers for ReplicationControllers, Jobs and StatefulSets).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.labels import label_selector_as_selector
from kubeplane.api.meta import parse_time
from kubeplane.api.views import (
    annotations_of,
    controller_ref_of,
    labels_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
)

__all__ = [
    "SAFE_TO_EVICT_ANNOTATION",
    "SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION",
    "BlockingReason",
    "DrainOptions",
    "DrainStatus",
    "Outcome",
    "drainability",
    "matching_pdbs",
    "pods_to_move",
]

Obj = Mapping[str, Any]

SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
LONG_TERMINATING_EXTRA = 30.0
"""Seconds past its grace period after which a deleting pod is ignored (upstream PodLongTerminatingExtraThreshold)."""
_REPLICATING = frozenset({"ReplicationController", "ReplicaSet", "Job", "StatefulSet"})


class Outcome(enum.Enum):
    DRAIN = "drain"
    """Evict and reschedule elsewhere."""
    DRAINABLE = "drainable"
    """Evict; nothing needs a new place (terminal pods)."""
    SKIP = "skip"
    """Leave alone (mirror, DaemonSet, long-terminating)."""
    BLOCK = "block"


class BlockingReason(enum.StrEnum):
    """Upstream ``drain.BlockingPodReason`` names."""

    NOT_REPLICATED = "NotReplicated"
    UNMOVABLE_KUBE_SYSTEM_POD = "UnmovableKubeSystemPod"
    NOT_SAFE_TO_EVICT_ANNOTATION = "NotSafeToEvictAnnotation"
    LOCAL_STORAGE_REQUESTED = "LocalStorageRequested"
    NOT_ENOUGH_PDB = "NotEnoughPdb"


@dataclass(frozen=True, slots=True)
class DrainStatus:
    outcome: Outcome
    reason: BlockingReason | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class DrainOptions:
    """The flags the rules read (upstream ``NodeDeleteOptions``)."""

    skip_nodes_with_system_pods: bool = True
    skip_nodes_with_local_storage: bool = True
    skip_nodes_with_custom_controller_pods: bool = True


def _blocked(reason: BlockingReason, message: str) -> DrainStatus:
    return DrainStatus(Outcome.BLOCK, reason, message)


def matching_pdbs(pod: Obj, pdbs: Sequence[Obj]) -> list[Obj]:
    """PDBs of the pod's namespace whose selector selects it (an empty selector selects every pod, a
    missing one none, as policy/v1)."""
    out = []
    for pdb in pdbs:
        if namespace_of(pdb) != namespace_of(pod):
            continue
        selector = spec_of(pdb).get("selector")
        if selector is None:
            continue
        if label_selector_as_selector(selector).matches(labels_of(pod)):
            out.append(pdb)
    return out


def _is_daemonset_pod(pod: Obj) -> bool:
    ref = controller_ref_of(pod)
    return ref is not None and ref.get("kind") == "DaemonSet"


def _is_long_terminating(pod: Obj, now: float) -> bool:
    deleted = time_of(meta_of(pod).get("deletionTimestamp"))
    if deleted is None:
        return False
    grace = spec_of(pod).get("terminationGracePeriodSeconds")
    grace_s = float(grace) if grace is not None else 30.0
    return now - deleted > grace_s + LONG_TERMINATING_EXTRA


def time_of(value: Any) -> float | None:
    """A ``metav1.Time`` as Unix seconds (None when absent or malformed)."""
    if not value:
        return None
    try:
        return parse_time(str(value)).timestamp()
    except ValueError:
        return None


def _has_blocking_local_storage(pod: Obj) -> bool:
    safe = {v.strip() for v in annotations_of(pod).get(SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION, "").split(",")}
    for volume in spec_of(pod).get("volumes") or ():
        empty_dir = volume.get("emptyDir")
        local = volume.get("hostPath") is not None or (
            empty_dir is not None and (empty_dir or {}).get("medium") != "Memory"
        )
        if local and volume.get("name") not in safe:
            return True
    return False


def drainability(pod: Obj, *, pdbs: Sequence[Obj], options: DrainOptions, now: float) -> DrainStatus:
    """The first decided outcome of upstream's default rules (module docstring)."""
    annotations = annotations_of(pod)
    ns, name = namespace_of(pod), name_of(pod)
    if MIRROR_ANNOTATION in annotations or _is_long_terminating(pod, now) or _is_daemonset_pod(pod):
        return DrainStatus(Outcome.SKIP)
    if annotations.get(SAFE_TO_EVICT_ANNOTATION) == "true":
        return DrainStatus(Outcome.DRAIN)
    if status_of(pod).get("phase") in ("Succeeded", "Failed"):
        return DrainStatus(Outcome.DRAINABLE)
    ref = controller_ref_of(pod)
    replicated = ref is not None
    if options.skip_nodes_with_custom_controller_pods and ref is not None:
        replicated = ref.get("kind") in _REPLICATING
    if not replicated:
        return _blocked(BlockingReason.NOT_REPLICATED, f"{ns}/{name} is not replicated")
    matching = matching_pdbs(pod, pdbs)
    if options.skip_nodes_with_system_pods and ns == "kube-system" and not matching:
        return _blocked(
            BlockingReason.UNMOVABLE_KUBE_SYSTEM_POD,
            f"non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: {name}",
        )
    if annotations.get(SAFE_TO_EVICT_ANNOTATION) == "false":
        return _blocked(
            BlockingReason.NOT_SAFE_TO_EVICT_ANNOTATION, f"pod annotated as not safe to evict present: {name}"
        )
    if options.skip_nodes_with_local_storage and _has_blocking_local_storage(pod):
        return _blocked(BlockingReason.LOCAL_STORAGE_REQUESTED, f"pod with local storage present: {name}")
    for pdb in matching:
        if int(status_of(pdb).get("disruptionsAllowed") or 0) < 1:
            return _blocked(BlockingReason.NOT_ENOUGH_PDB, f"not enough pod disruption budget to move {ns}/{name}")
    return DrainStatus(Outcome.DRAIN)


def pods_to_move(
    pods: Sequence[Obj], *, pdbs: Sequence[Obj], options: DrainOptions, now: float
) -> tuple[list[Obj], list[Obj], DrainStatus | None]:
    """``(to_move, to_evict_only, blocking)`` for a node's pods: the pods that need a new place, the
    terminal ones evicted without one, and the first blocking status (then the node cannot be drained).

    Every PDB is charged once per pod it covers across the node (upstream's RemainingPdbTracker): two pods of
    one budget with ``disruptionsAllowed: 1`` block the node."""
    remaining = {f"{namespace_of(p)}/{name_of(p)}": int(status_of(p).get("disruptionsAllowed") or 0) for p in pdbs}
    move: list[Obj] = []
    evict: list[Obj] = []
    for pod in pods:
        status = drainability(pod, pdbs=pdbs, options=options, now=now)
        if status.outcome is Outcome.BLOCK:
            return move, evict, status
        if status.outcome is Outcome.SKIP:
            continue
        if status.outcome is Outcome.DRAINABLE:
            evict.append(pod)
            continue
        for pdb in matching_pdbs(pod, pdbs):
            key = f"{namespace_of(pdb)}/{name_of(pdb)}"
            remaining[key] -= 1
            if remaining[key] < 0:
                ns, name = namespace_of(pod), name_of(pod)
                return (
                    move,
                    evict,
                    _blocked(BlockingReason.NOT_ENOUGH_PDB, f"not enough pod disruption budget to move {ns}/{name}"),
                )
        move.append(pod)
    return move, evict, None
