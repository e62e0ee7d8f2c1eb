"""NodeVolumeLimits (CSILimits): a node takes no more unique CSI volumes per driver than its CSINode allows
(upstream ``plugins/nodevolumelimits/csi.go``, v1.37).

A volume is ``<driver>/<handle>``: a claim bound to a PV with ``spec.csi`` gives its driver and handle; a PV of a
migrated in-tree plugin (AWS EBS, GCE PD, Azure Disk, Cinder: always once the node has a CSINode; Portworx when
the CSINode's migrated-plugins annotation names it) is translated as csi-translation-lib does; an unbound claim (or
one whose PV is missing) counts for its class's provisioner (translated likewise) under a handle made of a random
per-plugin prefix and ``namespace/name``, so two pods sharing the unbound claim count it once; a claim without a
class, or of a missing class, counts nothing. Generic ephemeral volumes are claims ``<pod>-<volume>`` that must be
controlled by the pod; migratable inline volumes translate directly.

PreFilter skips pods with no claim, ephemeral or migratable inline volume. Filter: the pod's new volumes minus those
the node's pods already use, plus the node's pods' volumes, plus the VolumeAttachments on the node for volumes no pod
there uses, must stay within ``spec.drivers[].allocatable.count`` of each driver that has one, else Unschedulable
``node(s) exceed max volume count``. A missing claim of the pod itself is UnschedulableAndUnresolvable
(``looking up PVC ns/name: ...``); a missing claim of a pod already on the node is not counted. VolumeLimitScaling
(beta, on): a driver whose CSIDriver sets ``preventPodSchedulingIfMissing`` must be on the node's CSINode.
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubeplane.api.volumes import claim_class, volume_claim_name, volume_is_for_pod
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
from kubeplane.scheduler.plugins.volume_util import (
    NotFoundError,
    StorageLister,
    csi_volume_handle,
    in_tree_plugin_by_name,
    in_tree_plugin_of,
    is_csi_migration_on,
)

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED", "NAME", "CSILimits", "NodeVolumeLimits", "new"]

NAME = "NodeVolumeLimits"
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
"""Upstream ``ErrReasonMaxVolumeCountExceeded``."""
_STATE_KEY = "PreFilter" + NAME
_UNSCHEDULABLE = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


class _VolumeError(Exception):
    """An error of ``filterAttachableVolumes``; ``not_found`` marks a lister NotFound (the pod's own claim)."""

    def __init__(self, message: str, not_found: bool = False) -> None:
        super().__init__(message)
        self.not_found = not_found


class _State:
    """The cycle's storage lister (objects indexed once, not per node); not changed by added/removed pods."""

    __slots__ = ("lister",)

    def __init__(self, lister: StorageLister) -> None:
        self.lister = lister

    def clone(self) -> _State:
        return self


def _counted(volume: Mapping[str, Any]) -> bool:
    """A claim, a generic ephemeral volume or a migratable inline volume (what PreFilter looks for)."""
    return (
        volume.get("persistentVolumeClaim") is not None
        or volume.get("ephemeral") is not None
        or in_tree_plugin_of(volume) is not None
    )


def _volume_limits(csi_node: Mapping[str, Any] | None) -> dict[str, int]:
    """``{driver: allocatable.count}`` over the CSINode's drivers that have a count (upstream
    ``getVolumeLimits``)."""
    limits: dict[str, int] = {}
    if csi_node is None:
        return limits
    for driver in (csi_node.get("spec") or {}).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name") or "")] = int(count)
    return limits


_PREFIX_SEED = 0x6B756265
"""Seed of the unbound-claim volume-ID prefix (see ``NodeVolumeLimits.__init__``)."""


class NodeVolumeLimits:
    """PreFilter, Filter and EnqueueExtensions (upstream type ``CSILimits``)."""

    def __init__(self, handle: Handle, random_volume_id_prefix: str | None = None) -> None:
        self._handle = handle
        # Its own fixed-seed stream, never the handle's: drawing from handle.rng would shift the scheduler's
        # tie-breaking sequence (a simulation's placements would change with the profile's plugin list). The
        # prefix only has to differ from real volume handles, so a constant seed is as good as upstream's rand.
        rng = random.Random(_PREFIX_SEED)
        self._prefix = random_volume_id_prefix or "".join(
            rng.choice(string.ascii_lowercase + string.digits) for _ in range(32)
        )

    def name(self) -> str:
        return NAME

    # --- events ---------------------------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            # Any new CSINode may carry room for the pod's volumes: no hint, as upstream.
            ClusterEventWithHint(ClusterEvent("CSINode", ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent("CSINode", ActionType.update()), self._is_schedulable_after_csi_node_updated
            ),
            ClusterEventWithHint(
                ClusterEvent("AssignedPod", ActionType.DELETE), self._is_schedulable_after_assigned_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD), self._is_schedulable_after_pvc_added
            ),
            ClusterEventWithHint(
                ClusterEvent("VolumeAttachment", ActionType.DELETE), self._is_schedulable_after_va_deleted
            ),
        )

    def _is_schedulable_after_csi_node_updated(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """A driver's allocatable count grew, or a driver stopped reporting one (no limit any more)."""
        if old is None or new is None:
            return QueueingHint.QUEUE
        before, after = _volume_limits(old), _volume_limits(new)
        for driver, limit in before.items():
            if driver not in after or after[driver] > limit:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _is_schedulable_after_assigned_pod_deleted(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """The deleted pod was placed (or nominated) and used a claim, an ephemeral or a migratable volume."""
        if old is None:
            return QueueingHint.QUEUE
        deleted = as_pod_info(old)
        volumes = deleted.spec.get("volumes") or ()
        if not volumes:
            return QueueingHint.QUEUE_SKIP
        if not deleted.node_name and not (deleted.status.get("nominatedNodeName") or ""):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if any(_counted(v) for v in volumes) else QueueingHint.QUEUE_SKIP

    def _is_schedulable_after_pvc_added(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPVCAdded``: the claim (or ephemeral claim) the pod names was created."""
        if new is None:
            return QueueingHint.QUEUE
        meta = new.get("metadata") or {}
        if (meta.get("namespace") or "") != pod.namespace:
            return QueueingHint.QUEUE_SKIP
        added = meta.get("name") or ""
        for volume in pod.spec.get("volumes") or ():
            if (claim := volume.get("persistentVolumeClaim")) is not None:
                name = claim.get("claimName") or ""
            elif volume.get("ephemeral") is not None:
                name = volume_claim_name(pod.pod, volume)
            else:
                continue
            if name == added:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _is_schedulable_after_va_deleted(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """A detached volume frees a slot for the pod when it is one of the pod's claims' PVs, or an inline
        attachment of the driver one of the pod's migratable inline volumes would use."""
        if old is None:
            return QueueingHint.QUEUE
        source = ((old.get("spec") or {}).get("source")) or {}
        pv_name = source.get("persistentVolumeName")
        inline_driver = ((source.get("inlineVolumeSpec") or {}).get("csi") or {}).get("driver")
        lister = StorageLister(self._handle)
        for volume in pod.spec.get("volumes") or ():
            claim = volume.get("persistentVolumeClaim")
            if claim is not None:
                if pv_name:
                    try:
                        pvc = lister.pvc(pod.namespace, claim.get("claimName") or "")
                    except NotFoundError:
                        continue
                    if (pvc.get("spec") or {}).get("volumeName") == pv_name:
                        return QueueingHint.QUEUE
                continue
            plugin = in_tree_plugin_of(volume)
            if plugin is not None and inline_driver and plugin.csi_driver == inline_driver:
                return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- PreFilter / Filter ---------------------------------------------------------------------------------

    def plans_pre_filter(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): a pod without counted volumes skips, whatever the cluster."""
        return not any(_counted(v) for v in pod.spec.get("volumes") or ())

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not any(_counted(v) for v in pod.spec.get("volumes") or ()):
            return None, Status.skip()
        state.write(_STATE_KEY, _State(StorageLister(self._handle)))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.spec.get("volumes"):
            return None
        s = state.get(_STATE_KEY)
        lister = s.lister if isinstance(s, _State) else StorageLister(self._handle)
        csi_node = lister.csi_node(node.name)
        new_volumes: dict[str, str] = {}
        try:
            self._filter_attachable_volumes(lister, pod.pod, csi_node, True, new_volumes)
        except _VolumeError as e:
            return Status.unresolvable(str(e)) if e.not_found else Status.from_error(str(e))
        if not new_volumes:
            return None
        for driver in set(new_volumes.values()):
            if not self._driver_on_node(lister, driver, csi_node):
                return Status.unschedulable(f"{driver} CSI driver is not installed on the node")
        limits = _volume_limits(csi_node)
        if not limits:
            return None
        attached: dict[str, str] = {}
        for existing in node.pods:
            try:
                self._filter_attachable_volumes(lister, existing.pod, csi_node, False, attached)
            except _VolumeError as e:
                return Status.from_error(str(e))
        attached_count: dict[str, int] = {}
        for unique, driver in attached.items():
            new_volumes.pop(unique, None)  # a volume shared with a pod already there counts once
            attached_count[driver] = attached_count.get(driver, 0) + 1
        for unique, driver in self._node_volume_attachments(lister, csi_node, node.name).items():
            if unique not in attached:
                attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in new_volumes.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return _UNSCHEDULABLE
        return None

    def _driver_on_node(self, lister: StorageLister, driver: str, csi_node: Mapping[str, Any] | None) -> bool:
        """VolumeLimitScaling: only a CSIDriver with ``preventPodSchedulingIfMissing: true`` must be installed."""
        csi_driver = lister.csi_driver(driver)
        if csi_driver is None or (csi_driver.get("spec") or {}).get("preventPodSchedulingIfMissing") is not True:
            return True
        if csi_node is None:
            return False
        return any(d.get("name") == driver for d in (csi_node.get("spec") or {}).get("drivers") or ())

    def _filter_attachable_volumes(
        self,
        lister: StorageLister,
        pod: Mapping[str, Any],
        csi_node: Mapping[str, Any] | None,
        new_pod: bool,
        result: dict[str, str],
    ) -> None:
        """Upstream ``filterAttachableVolumes``: ``result[<driver>/<handle>] = driver`` for the pod's volumes."""
        namespace = str((pod.get("metadata") or {}).get("namespace") or "")
        for volume in (pod.get("spec") or {}).get("volumes") or ():
            is_ephemeral = False
            if (claim := volume.get("persistentVolumeClaim")) is not None:
                claim_name = str(claim.get("claimName") or "")
            elif volume.get("ephemeral") is not None:
                claim_name = volume_claim_name(pod, volume)
                is_ephemeral = True
            else:
                self._check_attachable_inline_volume(volume, csi_node, result)
                continue
            if not claim_name:
                raise _VolumeError("PersistentVolumeClaim had no name")
            try:
                pvc = lister.pvc(namespace, claim_name)
            except NotFoundError as e:
                if new_pod:
                    raise _VolumeError(f"looking up PVC {namespace}/{claim_name}: {e}", not_found=True) from e
                continue  # not counted: nothing says it belongs to a running volume
            if is_ephemeral and (error := volume_is_for_pod(pod, pvc)) is not None:
                raise _VolumeError(error)
            driver, handle = self._csi_driver_info(lister, csi_node, pvc)
            if driver and handle:
                result[f"{driver}/{handle}"] = driver

    def _check_attachable_inline_volume(
        self, volume: Mapping[str, Any], csi_node: Mapping[str, Any] | None, result: dict[str, str]
    ) -> None:
        plugin = in_tree_plugin_of(volume)
        if plugin is None or not is_csi_migration_on(csi_node, plugin.in_tree_name):
            return
        handle = csi_volume_handle(plugin, volume[plugin.source])
        if handle is None:
            raise _VolumeError(f"converting volume({volume.get('name') or ''}) from inline to csi")
        result[f"{plugin.csi_driver}/{handle}"] = plugin.csi_driver

    def _csi_driver_info(
        self, lister: StorageLister, csi_node: Mapping[str, Any] | None, pvc: Mapping[str, Any]
    ) -> tuple[str, str]:
        """Upstream ``getCSIDriverInfo``: the driver and handle of the claim's PV, or of its class."""
        pv_name = str((pvc.get("spec") or {}).get("volumeName") or "")
        if not pv_name:
            return self._csi_driver_info_from_class(lister, csi_node, pvc)
        try:
            pv = lister.pv(pv_name)
        except NotFoundError:  # deleted, or the claim was pre-bound to a PV not created yet
            return self._csi_driver_info_from_class(lister, csi_node, pvc)
        return _pv_driver_info(pv, csi_node)

    def _csi_driver_info_from_class(
        self, lister: StorageLister, csi_node: Mapping[str, Any] | None, pvc: Mapping[str, Any]
    ) -> tuple[str, str]:
        """Upstream ``getCSIDriverInfoFromSC``: an unbound claim counts for its class's provisioner."""
        class_name = claim_class(pvc)
        if not class_name:
            return "", ""  # no class: Immediate binding, so it must be bound before scheduling
        try:
            storage_class = lister.storage_class(class_name)
        except NotFoundError:
            return "", ""
        meta = pvc.get("metadata") or {}
        handle = f"{self._prefix}-{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        provisioner = str(storage_class.get("provisioner") or "")
        plugin = in_tree_plugin_by_name(provisioner)
        if plugin is not None:
            if not is_csi_migration_on(csi_node, provisioner):
                return "", ""
            return plugin.csi_driver, handle
        return provisioner, handle

    def _node_volume_attachments(
        self, lister: StorageLister, csi_node: Mapping[str, Any] | None, node_name: str
    ) -> dict[str, str]:
        """The volumes attached to the node by VolumeAttachments: ``<attacher>/<handle>`` -> attacher, the handle
        read from the attachment's PV (translated for migrated in-tree PVs) or its inline spec."""
        out: dict[str, str] = {}
        for va in lister.volume_attachments_on(node_name):
            spec = va.get("spec") or {}
            attacher = str(spec.get("attacher") or "")
            source = spec.get("source") or {}
            if not attacher:
                continue
            handle = ""
            if source.get("persistentVolumeName"):
                try:
                    pv = lister.pv(str(source["persistentVolumeName"]))
                except NotFoundError:
                    continue
                _, handle = _pv_driver_info(pv, csi_node)
            elif (inline := source.get("inlineVolumeSpec")) is not None:
                handle = str((inline.get("csi") or {}).get("volumeHandle") or "")
            if handle:
                out[f"{attacher}/{handle}"] = attacher
        return out


def _pv_driver_info(pv: Mapping[str, Any], csi_node: Mapping[str, Any] | None) -> tuple[str, str]:
    """A PV's CSI driver and handle; a non-CSI PV only when migratable and migrated on the node."""
    spec = pv.get("spec") or {}
    csi = spec.get("csi")
    if csi is not None:
        return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
    plugin = in_tree_plugin_of(spec)
    if plugin is None or not is_csi_migration_on(csi_node, plugin.in_tree_name):
        return "", ""
    handle = csi_volume_handle(plugin, spec[plugin.source], pv)
    return (plugin.csi_driver, handle) if handle else ("", "")


CSILimits = NodeVolumeLimits
"""Upstream's name for the type."""


def new(args: Mapping[str, Any], handle: Handle) -> NodeVolumeLimits:
    """The plugin factory; NodeVolumeLimits has no args. The unbound-claim prefix is random per plugin
    (``rand.String(32)`` upstream); drawn from a private fixed-seed RNG so runs are reproducible and the
    scheduler's own RNG is untouched."""
    return NodeVolumeLimits(handle)
