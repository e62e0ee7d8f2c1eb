"""VolumeRestrictions: in-tree disks that cannot be shared, and ReadWriteOncePod claims (upstream
``plugins/volumerestrictions``, v1.37).

Filter (NoDiskConflict): the pod cannot go to a node where another pod mounts the same disk, unless both mount it
read-only: gcePersistentDisk (same pdName; fine when both are readOnly), awsElasticBlockStore (same volumeID:
always a conflict), iscsi (same iqn; fine when both readOnly), rbd (a common monitor, same pool and image; fine
when both readOnly). Rejection: Unschedulable ``node(s) had no available disk`` (preemption can free the disk).

ReadWriteOncePod: PreFilter reads every PVC the pod names (a missing one is UnschedulableAndUnresolvable with the
lister's NotFound message) and counts its ReadWriteOncePod claims some scheduled pod already uses (the snapshot's
used-PVC set, upstream ``StorageInfos().IsPVCUsedByPods``, fed by ``NodeInfo.PVCRefCounts``). A positive count
rejects every node as Unschedulable: preemption evaluates removing the user through the PreFilterExtensions, which
keep the count in step when pods are added or removed in what-ifs. PreFilter returns Skip when the pod has no
disk volume of the four kinds and no conflicting claim.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    PreFilterExtensions,
    PreFilterResult,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.plugins.helper import as_pod_info
from kubeplane.scheduler.plugins.volume_util import NotFoundError, StorageLister, claim_volumes

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "VolumeRestrictions",
    "is_volume_conflict",
    "new",
    "satisfy_volume_conflicts",
]

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
"""Upstream ``ErrReasonDiskConflict``."""
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)
"""Upstream ``ErrReasonReadWriteOncePodConflict`` (the fwk-era text; releases before it said "node has pod using
PersistentVolumeClaim with the same name and ReadWriteOncePod access mode")."""

_RESTRICTED = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


def _needs_restrictions_check(volume: Mapping[str, Any]) -> bool:
    """Upstream ``needsRestrictionsCheck``: the volume is one of the four disk kinds."""
    return any(volume.get(kind) is not None for kind in _RESTRICTED)


def _both_read_only(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return bool(a.get("readOnly")) and bool(b.get("readOnly"))


def _same(a: Mapping[str, Any], b: Mapping[str, Any], field: str) -> bool:
    return (a.get(field) or "") == (b.get(field) or "")


def _same_rbd_image(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """A common Ceph monitor, the same RADOS pool and the same image name."""
    overlap = bool(set(a.get("monitors") or ()) & set(b.get("monitors") or ()))
    return overlap and _same(a, b, "pool") and _same(a, b, "image")


def is_volume_conflict(volume: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Whether ``volume`` conflicts with a volume of ``pod`` (upstream ``isVolumeConflict``)."""
    gce, aws, iscsi, rbd = (volume.get(kind) for kind in ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd"))
    for existing in (pod.get("spec") or {}).get("volumes") or ():
        other = existing.get("gcePersistentDisk")
        if gce is not None and other is not None and _same(gce, other, "pdName") and not _both_read_only(gce, other):
            return True
        other = existing.get("awsElasticBlockStore")
        if aws is not None and other is not None and _same(aws, other, "volumeID"):
            return True
        other = existing.get("iscsi")
        if iscsi is not None and other is not None and _same(iscsi, other, "iqn") and not _both_read_only(iscsi, other):
            return True
        other = existing.get("rbd")
        if rbd is not None and other is not None and _same_rbd_image(rbd, other) and not _both_read_only(rbd, other):
            return True
    return False


def satisfy_volume_conflicts(pod: Mapping[str, Any], pods: Sequence[PodInfo]) -> bool:
    """No restricted volume of ``pod`` conflicts with one of ``pods`` (upstream ``satisfyVolumeConflicts``)."""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if not _needs_restrictions_check(volume):
            continue
        for existing in pods:
            if is_volume_conflict(volume, existing.pod):
                return False
    return True


@dataclass(slots=True)
class _PreFilterState:
    read_write_once_pod_pvcs: frozenset[str]
    """Names of the pod's claims with the ReadWriteOncePod access mode."""
    conflicting_pvc_ref_count: int
    """References to those claims by scheduled pods (at most one each outside what-ifs)."""

    def update_with_pod(self, pod: PodInfo, multiplier: int) -> None:
        conflicts = sum(1 for name in claim_volumes(pod.pod) if name in self.read_write_once_pod_pvcs)
        self.conflicting_pvc_ref_count += multiplier * conflicts

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.read_write_once_pod_pvcs, self.conflicting_pvc_ref_count)


class VolumeRestrictions:
    """PreFilter (with AddPod/RemovePod), Filter and EnqueueExtensions."""

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # With queueing hints on (kubeplane always), upstream registers Node/Add only: no preCheck can drop it.
        return (
            # Volumes are immutable, so only a deletion frees a disk or a ReadWriteOncePod claim.
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE), self._is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),
            # A missing claim (PreFilter's NotFound) may be created.
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD), self._is_schedulable_after_pvc_added
            ),
        )

    def _is_schedulable_after_pvc_added(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPersistentVolumeClaimAdded``: a claim of the pod's namespace it names."""
        if new is None:
            return QueueingHint.QUEUE
        meta = new.get("metadata") or {}
        if (meta.get("namespace") or "") != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        name = meta.get("name") or ""
        return QueueingHint.QUEUE if name in set(claim_volumes(pod.pod)) else QueueingHint.QUEUE_SKIP

    def _is_schedulable_after_pod_deleted(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodDeleted``: the deleted pod (same namespace) held a conflicting disk or
        one of the pod's claims (any access mode: reading the claim would cost more than the retry)."""
        if old is None:
            return QueueingHint.QUEUE
        deleted = as_pod_info(old)
        if deleted.namespace != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        if not satisfy_volume_conflicts(pod.pod, (deleted,)):
            return QueueingHint.QUEUE
        claims = set(claim_volumes(pod.pod))
        if any(name in claims for name in claim_volumes(deleted.pod)):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def plans_pre_filter(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): without claim volumes no PVC is read, so the pod's volumes
        alone decide (SKIP, or a state with no ReadWriteOncePod claim)."""
        return next(claim_volumes(pod.pod), None) is None

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        needs_check = any(_needs_restrictions_check(v) for v in pod.spec.get("volumes") or ())
        rwop: set[str] = set()
        lister: StorageLister | None = None  # built only for a pod with claims (most pods have none)
        for claim_name in claim_volumes(pod.pod):
            if lister is None:
                lister = StorageLister(self._handle)
            try:
                pvc = lister.pvc(pod.namespace, claim_name)
            except NotFoundError as e:
                return None, Status.unresolvable(str(e))
            if "ReadWriteOncePod" in ((pvc.get("spec") or {}).get("accessModes") or ()):
                rwop.add(str((pvc.get("metadata") or {}).get("name") or ""))
        s = _PreFilterState(frozenset(rwop), self._conflicting_ref_count(pod.namespace, rwop))
        if not needs_check and s.conflicting_pvc_ref_count == 0:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def _conflicting_ref_count(self, namespace: str, claims: set[str]) -> int:
        """Upstream ``calPreFilterState``: one per claim some scheduled pod uses."""
        if not claims:
            return 0
        snapshot = self._handle.snapshot()
        used = getattr(snapshot, "is_pvc_used_by_pods", None)
        count = 0
        for claim in claims:
            key = f"{namespace}/{claim}"
            if used is not None:
                count += bool(used(key))
            else:  # a lister without the used-PVC index: the NodeInfos' reference counts say the same
                count += any(key in ni.pvc_ref_counts for ni in snapshot.list())
        return count

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.from_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_add, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.from_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        s.update_with_pod(pod_to_remove, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not satisfy_volume_conflicts(pod.pod, node.pods):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.from_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if s.conflicting_pvc_ref_count > 0:
            return Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None


def new(args: Mapping[str, Any], handle: Handle) -> VolumeRestrictions:
    """The plugin factory; VolumeRestrictions has no args."""
    return VolumeRestrictions(handle)
