"""VolumeBinding's EventsToRegister and queueing hints (upstream ``volume_binding.go``, v1.37).

The events, in upstream's order:

* StorageClass Add|Update - :func:`is_schedulable_after_storage_class_change` (a new class, or changed
  ``allowedTopologies``);
* PersistentVolumeClaim Add|Update - :func:`is_schedulable_after_pvc_change` (a claim of the pod, same namespace);
* PersistentVolume Add|Update - no hint (always Queue);
* Node Add|UpdateNodeLabel - no hint (SchedulerQueueingHints is GA, so upstream drops UpdateNodeTaint);
* CSINode Add|Update - :func:`is_schedulable_after_csi_node_change` (creation, or a changed
  ``storage.alpha.kubernetes.io/migrated-plugins`` annotation);
* CSIDriver Update - :func:`is_schedulable_after_csi_driver_change` (a CSI inline volume's driver turned
  ``storageCapacity`` off);
* CSIStorageCapacity Add|Update - :func:`is_schedulable_after_csi_storage_capacity_change` (creation, or the
  volume limit - ``maximumVolumeSize`` else ``capacity`` - grew).

Hints take ``(pod, old, new)`` with ``old`` None for an add; a pod argument may be a PodInfo or a pod dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubeplane.api.volumes import pod_claim_names
from kubeplane.scheduler.framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.volume_binding_binder import volume_limit

__all__ = [
    "MIGRATED_PLUGINS_ANNOTATION",
    "events_to_register",
    "is_schedulable_after_csi_driver_change",
    "is_schedulable_after_csi_node_change",
    "is_schedulable_after_csi_storage_capacity_change",
    "is_schedulable_after_pvc_change",
    "is_schedulable_after_storage_class_change",
]

MIGRATED_PLUGINS_ANNOTATION: Final = "storage.alpha.kubernetes.io/migrated-plugins"
"""Upstream ``v1.MigratedPluginsAnnotationKey``."""


def _pod_dict(pod: Any) -> Mapping[str, Any]:
    if isinstance(pod, PodInfo):
        return pod.pod
    result: Mapping[str, Any] = pod
    return result


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = (obj or {}).get("metadata") or {}
    return meta


def is_schedulable_after_csi_node_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterCSINodeChange``."""
    if old is None:
        return QueueingHint.QUEUE
    old_ann = (_meta(old).get("annotations") or {}).get(MIGRATED_PLUGINS_ANNOTATION, "")
    new_ann = (_meta(new).get("annotations") or {}).get(MIGRATED_PLUGINS_ANNOTATION, "")
    return QueueingHint.QUEUE if old_ann != new_ann else QueueingHint.QUEUE_SKIP


def is_schedulable_after_pvc_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterPersistentVolumeClaimChange``: any add or update of a claim the pod uses
    (a PVC volume, or a generic ephemeral volume's ``<pod>-<volume>`` claim) in the pod's namespace."""
    pod_obj = _pod_dict(pod)
    if (_meta(pod_obj).get("namespace") or "") != (_meta(new).get("namespace") or ""):
        return QueueingHint.QUEUE_SKIP
    name = _meta(new).get("name")
    if any(claim == name for claim, _ephemeral in pod_claim_names(pod_obj)):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_storage_class_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterStorageClassChange`` (``volumeBindingMode`` is immutable)."""
    if old is None:
        return QueueingHint.QUEUE
    if (old.get("allowedTopologies") or None) != (new.get("allowedTopologies") or None):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_csi_storage_capacity_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterCSIStorageCapacityChange`` (nodeTopology and class are immutable)."""
    if old is None:
        return QueueingHint.QUEUE
    old_limit, new_limit = volume_limit(old), volume_limit(new)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def is_schedulable_after_csi_driver_change(pod: Any, old: Any, new: Any) -> QueueingHint:
    """Upstream ``isSchedulableAfterCSIDriverChange``: only a pod's CSI inline volume of that driver, and only
    when ``storageCapacity`` went from true to false/unset."""
    driver = _meta(new).get("name")
    for vol in (_pod_dict(pod).get("spec") or {}).get("volumes") or ():
        csi = vol.get("csi")
        if csi is None or csi.get("driver") != driver:
            continue
        was = bool((old.get("spec") or {}).get("storageCapacity"))
        now = bool((new.get("spec") or {}).get("storageCapacity"))
        if was and not now:
            return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


def events_to_register() -> Sequence[ClusterEventWithHint]:
    """Upstream ``EventsToRegister`` with SchedulerQueueingHints on (module docstring)."""
    add_update = ActionType.ADD | ActionType.update()
    return (
        ClusterEventWithHint(ClusterEvent("StorageClass", add_update), is_schedulable_after_storage_class_change),
        ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", add_update), is_schedulable_after_pvc_change),
        ClusterEventWithHint(ClusterEvent("PersistentVolume", add_update)),
        ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ClusterEventWithHint(ClusterEvent("CSINode", add_update), is_schedulable_after_csi_node_change),
        ClusterEventWithHint(ClusterEvent("CSIDriver", ActionType.update()), is_schedulable_after_csi_driver_change),
        ClusterEventWithHint(
            ClusterEvent("CSIStorageCapacity", add_update), is_schedulable_after_csi_storage_capacity_change
        ),
    )
