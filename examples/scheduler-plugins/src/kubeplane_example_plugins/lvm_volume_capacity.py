"""LvmVolumeCapacity: a pod's new LVM volumes must fit the free space of the node's LVM volume groups.

The seed 002 configuration enables this plugin at ``filter``. It implements the LVM part of open-local's
scheduler extender (github.com/alibaba/open-local, ``pkg/scheduler/algorithm/predicates/capacity.go`` and
``algo.ProcessLVMPVCPredicate``): node-local logical volumes carved out of volume groups whose sizes the node
declares. The subset implemented:

**LVM classes.** A StorageClass whose ``parameters.volumeType`` is ``LVM`` and whose ``provisioner`` is one of
the args' ``provisioners`` (default ``[local.csi.aliyun.com]``, open-local's driver name; add
``csi.kubeplane.io`` to use kubeplane's simulated driver). Its optional ``parameters.vgName`` pins its volumes
to that volume group (open-local's ``GetVGNameFromPVC``).

**Volume groups** are declared on the Node (annotation ``kubeplane.io/lvm-volume-groups``, see
:mod:`~kubeplane_example_plugins.lvm_volume_groups`): ``'{"vg0": "100Gi"}'`` or open-local's
NodeLocalStorage ``volumeGroups`` list.

**Used space** on a node, per volume group:

* every LVM PersistentVolume whose ``spec.nodeAffinity.required`` matches the node (a PV is LVM when its
  ``spec.csi.driver`` is a listed provisioner and ``spec.csi.volumeAttributes.volumeType`` is ``LVM``, or its
  ``storageClassName`` is an LVM class): ``spec.capacity.storage`` in the group its
  ``volumeAttributes.vgName`` (else its class's ``vgName``) names;
* every unbound LVM claim already headed for the node: a claim of a pod bound or assumed on the node (the
  scheduler's snapshot includes the pods assumed in earlier cycles), or a claim annotated
  ``volume.kubernetes.io/selected-node: <node>``, unless a PV already claims it (counted above);
* usage without a known group is charged where the packing below would have put it.

**Filter** takes the pod's unbound LVM claims (``persistentVolumeClaim`` and ``ephemeral`` volumes; sizes from
``requests.storage``, else ``limits.storage``) and packs them as open-local does: first those whose class names
a ``vgName`` (that group must hold each), then the others, each into the group with the least free space that
holds it. Reasons, ``Unschedulable`` (deleting volumes frees space) unless noted:

* ``node(s) had no LVM volume group`` - the node declares none;
* ``node(s) had no LVM volume group "<vg>" for claim <ns>/<name>`` - the class's ``vgName`` is not on the node;
* ``node(s) did not have enough free LVM volume group space for claim <ns>/<name>`` - the first claim that did
  not fit;
* ``node(s) had an invalid kubeplane.io/lvm-volume-groups annotation: <why>`` - ``UnschedulableAndUnresolvable``.

A pod without unbound LVM claims passes every node. Claims or classes that cannot be read are not judged here
(VolumeBinding and CheckCSIStorageCapacity report them). open-local's mount-point, device, inline-volume,
snapshot and spread-strategy paths are not implemented. The cluster-wide reads (classes, PVs, claims) happen
once per scheduling cycle, on the first node filtered, and are kept in the cycle state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubeplane.api.nodeaffinity import NodeSelector, new_lazy_error_node_selector
from kubeplane.api.quantity import QuantityError, parse_value
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Status,
)
from kubeplane.scheduler.framework.plugin_args import InvalidArgs
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane_example_plugins.claims import (
    SELECTED_NODE_ANNOTATION,
    claim_names,
    claim_request,
    pod_claims,
)
from kubeplane_example_plugins.lvm_volume_groups import VOLUME_GROUPS_ANNOTATION, InvalidVolumeGroups, VolumeGroups

__all__ = [
    "NAME",
    "NO_VOLUME_GROUP",
    "OPEN_LOCAL_PROVISIONER",
    "LvmVolumeCapacity",
    "LvmVolumeCapacityArgs",
    "insufficient",
    "missing_group",
]

NAME: Final = "LvmVolumeCapacity"
OPEN_LOCAL_PROVISIONER: Final = "local.csi.aliyun.com"
STATE_KEY: Final = "Filter" + NAME
NO_VOLUME_GROUP: Final = "node(s) had no LVM volume group"


def insufficient(claim_key: str) -> str:
    return f"node(s) did not have enough free LVM volume group space for claim {claim_key}"


def missing_group(vg: str, claim_key: str) -> str:
    return f'node(s) had no LVM volume group "{vg}" for claim {claim_key}'


@dataclass(frozen=True, slots=True)
class LvmVolumeCapacityArgs:
    """``provisioners``: the CSI driver names whose ``volumeType: LVM`` classes are LVM classes."""

    provisioners: list[str] = field(default_factory=lambda: [OPEN_LOCAL_PROVISIONER])

    def __post_init__(self) -> None:
        if not self.provisioners:
            raise InvalidArgs("provisioners", list(self.provisioners), "must name at least one provisioner")
        if any(not p for p in self.provisioners):
            raise InvalidArgs("provisioners", list(self.provisioners), "provisioner names must not be empty")


def _bytes(value: Any) -> int:
    try:
        return parse_value(value) if value is not None else 0
    except (QuantityError, TypeError, ValueError):
        return 0


@dataclass(frozen=True, slots=True)
class _Volume:
    """Space on a node: ``vg`` None when no group is known."""

    vg: str | None
    size: int


@dataclass(frozen=True, slots=True)
class _CycleView:
    """What one cycle reads once: the pod's claims to place and the LVM usage of the cluster."""

    wanted: tuple[tuple[str, _Volume], ...]
    """The pod's unbound LVM claims (key, volume), pinned ones first, then in volume order."""
    pvs: tuple[tuple[NodeSelector, _Volume], ...]
    pending: Mapping[str, tuple[_Volume, str]]
    """Unbound LVM claims no PV claims yet: key -> (volume, selected-node annotation or "")."""

    def clone(self) -> _CycleView:
        return self


class LvmVolumeCapacity:
    """Filter and EnqueueExtensions (see the module docstring)."""

    NAME = NAME
    Args = LvmVolumeCapacityArgs

    def __init__(self, args: LvmVolumeCapacityArgs, handle: Handle) -> None:
        self.provisioners = frozenset(args.provisioners)
        self.handle = handle

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Space frees when a volume or claim goes, or a pod leaves; a node gains groups by annotation.
        return (
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ANNOTATION)),
            ClusterEventWithHint(ClusterEvent("PersistentVolume", ActionType.DELETE | ActionType.update())),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.all())),
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD | ActionType.update())),
            ClusterEventWithHint(ClusterEvent("AssignedPod", ActionType.DELETE)),
        )

    # --- the cycle's reads ---------------------------------------------------------------------------------

    def _lvm_classes(self) -> dict[str, str | None]:
        """LVM class name -> its ``vgName`` parameter (None when unset)."""
        out: dict[str, str | None] = {}
        for sc in self.handle.list_objects("storageclasses", ""):
            params = sc.get("parameters") or {}
            if params.get("volumeType") == "LVM" and sc.get("provisioner") in self.provisioners:
                out[str((sc.get("metadata") or {}).get("name") or "")] = params.get("vgName") or None
        return out

    def _view(self, state: CycleState, pod: PodInfo) -> _CycleView:
        cached = state.get(STATE_KEY)
        if isinstance(cached, _CycleView):
            return cached
        classes = self._lvm_classes()
        view = _CycleView(self._wanted(pod, classes), *self._usage(classes))
        state.write(STATE_KEY, view)
        return view

    def _wanted(self, pod: PodInfo, classes: Mapping[str, str | None]) -> tuple[tuple[str, _Volume], ...]:
        if not classes or not any(True for _ in claim_names(pod.pod)):
            return ()
        claims = pod_claims(self.handle, pod, strict=False)  # missing ones: not this plugin's to report
        wanted = [
            (c.key, _Volume(classes[c.class_name], c.size)) for c in claims if not c.bound and c.class_name in classes
        ]
        return tuple(sorted(wanted, key=lambda kv: kv[1].vg is None))  # stable: pinned first, then volume order

    def _usage(
        self, classes: Mapping[str, str | None]
    ) -> tuple[tuple[tuple[NodeSelector, _Volume], ...], dict[str, tuple[_Volume, str]]]:
        pvs: list[tuple[NodeSelector, _Volume]] = []
        claimed: set[str] = set()
        for pv in self.handle.list_objects("persistentvolumes", ""):
            spec = pv.get("spec") or {}
            csi = spec.get("csi") or {}
            attrs = csi.get("volumeAttributes") or {}
            class_name = spec.get("storageClassName") or ""
            by_driver = csi.get("driver") in self.provisioners and attrs.get("volumeType") == "LVM"
            if not by_driver and class_name not in classes:
                continue
            ref = spec.get("claimRef") or {}
            if ref.get("name"):
                claimed.add(f"{ref.get('namespace') or 'default'}/{ref['name']}")
            required = (spec.get("nodeAffinity") or {}).get("required")
            if not required:
                continue  # not node-local: it uses no node's volume group
            vg = attrs.get("vgName") or classes.get(class_name)
            size = _bytes((spec.get("capacity") or {}).get("storage"))
            pvs.append((new_lazy_error_node_selector(required), _Volume(vg, size)))
        pending: dict[str, tuple[_Volume, str]] = {}
        for pvc in self.handle.list_objects("persistentvolumeclaims", ""):
            meta = pvc.get("metadata") or {}
            spec = pvc.get("spec") or {}
            class_name = spec.get("storageClassName") or ""
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
            if class_name not in classes or spec.get("volumeName") or key in claimed:
                continue
            selected = str((meta.get("annotations") or {}).get(SELECTED_NODE_ANNOTATION) or "")
            pending[key] = (_Volume(classes[class_name], claim_request(pvc)), selected)
        return tuple(pvs), pending

    # --- Filter -------------------------------------------------------------------------------------------

    def _headed_for(self, view: _CycleView, pod: PodInfo, node: NodeInfo) -> list[_Volume]:
        """Unbound LVM claims already on their way to ``node`` (module docstring), the pod's own excluded."""
        own = {key for key, _ in view.wanted}
        keys = {key for key, (_, selected) in view.pending.items() if selected == node.name}
        for placed in node.pods:
            if placed.uid == pod.uid:
                continue
            keys.update(f"{placed.namespace or 'default'}/{name}" for name, _ in claim_names(placed.pod))
        return [view.pending[k][0] for k in sorted(keys - own) if k in view.pending]

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        view = self._view(state, pod)
        if not view.wanted:
            return None
        try:
            groups = VolumeGroups.of_node(node.node or {})
        except InvalidVolumeGroups as exc:
            return Status.unresolvable(f"node(s) had an invalid {VOLUME_GROUPS_ANNOTATION} annotation: {exc}")
        if not groups.free:
            return Status.unschedulable(NO_VOLUME_GROUP)
        labels, name = node.labels, node.name
        used = [v for selector, v in view.pvs if selector.matches_parts(labels, name)]
        used += self._headed_for(view, pod, node)
        for volume in sorted(used, key=lambda v: v.vg is None):  # known groups first, then the rest packed
            groups.charge(volume.vg, volume.size)
        for key, volume in view.wanted:
            if volume.vg is not None:
                if volume.vg not in groups.free:
                    return Status.unschedulable(missing_group(volume.vg, key))
                if not groups.take(volume.vg, volume.size):
                    return Status.unschedulable(insufficient(key))
                continue
            target = groups.best_fit(volume.size)
            if target is None:
                return Status.unschedulable(insufficient(key))
            groups.take(target, volume.size)
        return None
