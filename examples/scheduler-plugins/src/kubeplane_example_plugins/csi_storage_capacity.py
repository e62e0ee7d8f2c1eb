"""CheckCSIStorageCapacity: a pod's new volumes must fit the CSI storage capacity published for the node.

The seed 002 configuration enables this plugin at ``preFilter`` and ``filter``. It applies upstream
VolumeBinding's storage-capacity rule (``volume_binding.go`` ``hasEnoughCapacity`` / ``capacitySufficient`` /
``nodeHasAccess``) on its own, so that it also works in a profile without VolumeBinding, and it adds one thing
upstream does not do: several claims of the same class must fit *together*.

**Which claims.** The pod's unbound claims (``spec.volumeName`` empty; ``persistentVolumeClaim`` and
``ephemeral`` volumes) whose StorageClass's ``provisioner`` is a CSI driver with a CSIDriver object whose
``spec.storageCapacity`` is true. Claims without a class, of classes whose driver publishes no capacity, and
bound claims are not this plugin's business.

**PreFilter** reads the claims, classes, CSIDriver and CSIStorageCapacity objects once per cycle
(``handle.list_objects("persistentvolumeclaims", ns)``, ``("storageclasses", "")``, ``("csidrivers", "")``,
``("csistoragecapacities", "")``) and returns:

* ``Skip`` when the pod has no such claim (its Filter then does not run);
* ``UnschedulableAndUnresolvable`` when a claim is missing or being deleted (upstream VolumeBinding's messages:
  ``persistentvolumeclaim "<name>" not found``, ``waiting for ephemeral volume controller to create the
  persistentvolumeclaim "<name>"``, ``persistentvolumeclaim "<name>" is being deleted``), or an unbound claim's
  class is missing: ``storageclass.storage.k8s.io "<class>" not found``.

**Filter**, per node: the claims are grouped by class, in the order the pod names them. A CSIStorageCapacity
object (any namespace) *serves* the node for a class when its
``storageClassName`` is the class and its ``nodeTopology`` label selector matches the node's labels (an absent
selector matches no node, as upstream). One serving object must hold the whole group: every claim's request
(``requests.storage``, else ``limits.storage``) at most ``maximumVolumeSize`` when that is set, and the sum of
the requests at most ``capacity`` when that is set; an object with neither field holds nothing (upstream: no
limit known is not enough). When no serving object holds the group the node is rejected with
``Unschedulable`` and ``node(s) did not have enough CSI storage capacity for claim <ns>/<name>``, naming the
first claim that did not fit in the object that got furthest. ``Unschedulable`` rather than unresolvable: the
driver publishes more capacity when volumes are deleted.

Like upstream, capacity is the driver's report: claims selected for a node but not yet provisioned are not
subtracted from it (the driver's next report does). Requeueing: new or updated CSIStorageCapacity objects,
claims, classes, CSIDrivers and nodes (added, or labels changed) may make the pod fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.labels import Selector, SelectorError, label_selector_as_selector
from kubeplane.api.quantity import QuantityError, parse_value
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    PreFilterExtensions,
    PreFilterResult,
    Status,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane_example_plugins.claims import Claim, ClaimLookupError, by_name, pod_claims

__all__ = ["NAME", "STATE_KEY", "CapacityObject", "CheckCSIStorageCapacity", "group_fits", "reason"]

NAME: Final = "CheckCSIStorageCapacity"
STATE_KEY: Final = "PreFilter" + NAME


def reason(claim_key: str) -> str:
    """The Filter reason for a node without room for ``claim_key`` (``namespace/name``)."""
    return f"node(s) did not have enough CSI storage capacity for claim {claim_key}"


def _quantity(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return parse_value(value)
    except (QuantityError, TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class CapacityObject:
    """One CSIStorageCapacity: its class, compiled ``nodeTopology`` and limits in bytes (None when unset)."""

    class_name: str
    topology: Selector | None
    capacity: int | None
    maximum_volume_size: int | None

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> CapacityObject:
        raw = obj.get("nodeTopology")
        try:
            topology = None if raw is None else label_selector_as_selector(raw)
        except SelectorError:
            topology = None  # an invalid selector serves no node (upstream logs and skips it)
        return cls(
            str(obj.get("storageClassName") or ""),
            topology,
            _quantity(obj.get("capacity")),
            _quantity(obj.get("maximumVolumeSize")),
        )

    def serves(self, labels: Mapping[str, str]) -> bool:
        return self.topology is not None and self.topology.matches(labels)

    def fitting_prefix(self, sizes: Sequence[int]) -> int:
        """How many of ``sizes``, in order, this object holds together."""
        if self.capacity is None and self.maximum_volume_size is None:
            return 0
        total = 0
        for i, size in enumerate(sizes):
            total += size
            if self.maximum_volume_size is not None and size > self.maximum_volume_size:
                return i
            if self.capacity is not None and total > self.capacity:
                return i
        return len(sizes)


def group_fits(claims: Sequence[Claim], objects: Sequence[CapacityObject]) -> Claim | None:
    """None when one of ``objects`` holds all ``claims``; else the first claim the best object cannot hold."""
    sizes = [c.size for c in claims]
    best = max((o.fitting_prefix(sizes) for o in objects), default=0)
    return None if best == len(claims) else claims[best]


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    """The pod's capacity-tracked claims grouped by class (class name -> claims in volume order), and the
    CSIStorageCapacity objects of those classes, read once per cycle."""

    groups: Mapping[str, tuple[Claim, ...]]
    objects: tuple[CapacityObject, ...]

    def clone(self) -> _PreFilterState:
        return self  # does not depend on other pods


class CheckCSIStorageCapacity:
    """PreFilter, Filter and EnqueueExtensions (see the module docstring). No args."""

    NAME = NAME

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent("CSIStorageCapacity", ActionType.ADD | ActionType.update())),
            ClusterEventWithHint(ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.update())),
            ClusterEventWithHint(ClusterEvent("StorageClass", ActionType.ADD | ActionType.update())),
            ClusterEventWithHint(ClusterEvent("CSIDriver", ActionType.ADD | ActionType.update())),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        )

    def _capacity_classes(self) -> set[str]:
        """CSI drivers that publish storage capacity (``CSIDriver.spec.storageCapacity: true``)."""
        drivers = self.handle.list_objects("csidrivers", "")
        return {
            str((d.get("metadata") or {}).get("name") or "")
            for d in drivers
            if (d.get("spec") or {}).get("storageCapacity") is True
        }

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            claims = [c for c in pod_claims(self.handle, pod) if not c.bound and c.class_name]
        except ClaimLookupError as exc:
            return None, Status.unresolvable(str(exc))
        if not claims:
            return None, Status.skip()
        classes = by_name(self.handle.list_objects("storageclasses", ""))
        tracked = self._capacity_classes()
        groups: dict[str, list[Claim]] = {}
        for claim in claims:
            sc = classes.get(claim.class_name)
            if sc is None:
                return None, Status.unresolvable(f'storageclass.storage.k8s.io "{claim.class_name}" not found')
            if str(sc.get("provisioner") or "") in tracked:
                groups.setdefault(claim.class_name, []).append(claim)
        if not groups:
            return None, Status.skip()
        objects = tuple(
            o
            for o in map(CapacityObject.from_object, self.handle.list_objects("csistoragecapacities", ""))
            if o.class_name in groups
        )
        state.write(STATE_KEY, _PreFilterState({k: tuple(v) for k, v in groups.items()}, objects))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.from_error(f'reading "{STATE_KEY}" from cycleState: not found')
        labels = node.labels
        for class_name, claims in s.groups.items():
            serving = [o for o in s.objects if o.class_name == class_name and o.serves(labels)]
            short = group_fits(claims, serving)
            if short is not None:
                return Status.unschedulable(reason(short.key))
        return None
