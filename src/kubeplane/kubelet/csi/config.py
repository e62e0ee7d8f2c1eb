"""The simulated CSI drivers' configuration: the node config's top-level ``csiDrivers:`` and each group's
``csiCapacity:`` (parsed here, called from :mod:`kubeplane.kubelet.config`)::

    csiDrivers:                      # absent: one default driver csi.kubeplane.io, node-local, unlimited
    - name: csi.kubeplane.io
      topology: node                 # node -> topology.csi.kubeplane.io/node; zone -> topology.kubernetes.io/zone
      attachRequired: false          # CSIDriver spec.attachRequired
      provisionTime: 2s              # CreateVolume takes this long (Go duration, on the injected clock)
      deleteTime: 1s                 # DeleteVolume takes this long
      attachTime: 500ms              # external-attacher: ControllerPublishVolume takes this long (attachRequired)
      detachTime: 0s                 # ControllerUnpublishVolume takes this long
      maxVolumesPerNode: 16          # CSINode drivers[].allocatable.count; absent: not set (unlimited)
      storageClasses:                # optional: StorageClasses the fleet creates for this driver if missing
      - {name: fast, volumeBindingMode: Immediate, reclaimPolicy: Retain, default: false}
    nodes:
    - count: 3
      csiCapacity: {csi.kubeplane.io: 100Gi}   # per node (node topology); summed over a zone's nodes (zone)

``csiDrivers: []`` runs no driver at all. A driver is *capacity-tracked* when some group gives it a
``csiCapacity``: then it publishes CSIStorageCapacity objects (CSIDriver ``storageCapacity: true``) and a node
(or zone) without a configured capacity has none (0); an untracked driver has unlimited capacity everywhere.

Invariants: driver names are unique DNS subdomains; every error is one line (raised by the node config as its
``NodeConfigError``, naming ``csiDrivers[i]`` or the group).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.durations import parse_duration
from kubeplane.api.quantity import QuantityError, parse_quantity
from kubeplane.api.validation import names

__all__ = [
    "DEFAULT_DRIVER",
    "DEFAULT_DRIVER_NAME",
    "NODE_TOPOLOGY_KEY",
    "ZONE_TOPOLOGY_KEY",
    "CSIConfigError",
    "CSIDriverSpec",
    "parse_csi_capacity",
    "parse_csi_drivers",
]

DEFAULT_DRIVER_NAME = "csi.kubeplane.io"
NODE_TOPOLOGY_KEY = "topology.csi.kubeplane.io/node"
ZONE_TOPOLOGY_KEY = "topology.kubernetes.io/zone"
TOPOLOGY_KEYS: Mapping[str, str] = {"node": NODE_TOPOLOGY_KEY, "zone": ZONE_TOPOLOGY_KEY}

_DRIVER_KEYS = {
    "name",
    "topology",
    "attachRequired",
    "provisionTime",
    "deleteTime",
    "attachTime",
    "detachTime",
    "maxVolumesPerNode",
    "storageClasses",
}
_CLASS_KEYS = {
    "name",
    "default",
    "volumeBindingMode",
    "reclaimPolicy",
    "allowVolumeExpansion",
    "parameters",
    "mountOptions",
    "allowedTopologies",
}


class CSIConfigError(ValueError):
    """A CSI part of the node config that cannot be used; the message is one line."""


@dataclass(frozen=True, slots=True)
class CSIDriverSpec:
    """One simulated CSI driver (controller side: external-provisioner; node side: the node plugin)."""

    name: str = DEFAULT_DRIVER_NAME
    topology: str = "node"
    attach_required: bool = False
    provision_time: float = 0.0
    """Seconds CreateVolume takes."""
    delete_time: float = 0.0
    """Seconds DeleteVolume takes."""
    attach_time: float = 0.0
    """Seconds the simulated external-attacher takes to attach a volume (drivers with attachRequired)."""
    detach_time: float = 0.0
    """Seconds it takes to detach one."""
    max_volumes_per_node: int | None = None
    storage_classes: tuple[Mapping[str, Any], ...] = field(default=())
    """StorageClass objects (complete, ``provisioner`` = this driver) the fleet creates when missing."""

    @property
    def topology_key(self) -> str:
        return TOPOLOGY_KEYS[self.topology]


DEFAULT_DRIVER = CSIDriverSpec()


def _duration(where: str, key: str, value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        raise CSIConfigError(f"{where}: {key} must be a duration such as 500ms or 2s")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        try:
            seconds = parse_duration(str(value).strip()) / 1e9
        except ValueError:
            raise CSIConfigError(f"{where}: {key} {value!r} is not a duration (use e.g. 500ms, 2s or 1m)") from None
    if seconds < 0:
        raise CSIConfigError(f"{where}: {key} must not be negative")
    return seconds


def _storage_class(where: str, driver: str, entry: Any) -> dict[str, Any]:
    """A StorageClass object from a ``storageClasses`` entry (defaults: WaitForFirstConsumer, Delete)."""
    if not isinstance(entry, Mapping) or not entry.get("name"):
        raise CSIConfigError(f"{where}: every storageClasses entry needs a name")
    name = str(entry["name"])
    unknown = set(entry) - _CLASS_KEYS
    if unknown:
        raise CSIConfigError(f"{where}: storage class {name}: unknown field(s) {', '.join(sorted(unknown))}")
    if names.is_dns1123_subdomain(name):
        raise CSIConfigError(f"{where}: storage class {name!r} is not a valid name (a DNS-1123 subdomain)")
    mode = str(entry.get("volumeBindingMode", "WaitForFirstConsumer"))
    if mode not in ("Immediate", "WaitForFirstConsumer"):
        raise CSIConfigError(
            f"{where}: storage class {name}: volumeBindingMode must be Immediate or WaitForFirstConsumer"
        )
    reclaim = str(entry.get("reclaimPolicy", "Delete"))
    if reclaim not in ("Delete", "Retain"):
        raise CSIConfigError(f"{where}: storage class {name}: reclaimPolicy must be Delete or Retain")
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": driver,
        "reclaimPolicy": reclaim,
        "volumeBindingMode": mode,
    }
    if entry.get("default"):
        obj["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    if "allowVolumeExpansion" in entry:
        obj["allowVolumeExpansion"] = bool(entry["allowVolumeExpansion"])
    if entry.get("parameters"):
        obj["parameters"] = {str(k): str(v) for k, v in dict(entry["parameters"]).items()}
    if entry.get("mountOptions"):
        obj["mountOptions"] = [str(o) for o in entry["mountOptions"]]
    if entry.get("allowedTopologies"):
        obj["allowedTopologies"] = list(entry["allowedTopologies"])
    return obj


def _driver(index: int, entry: Any) -> CSIDriverSpec:
    where = f"node config: csiDrivers[{index}]"
    if not isinstance(entry, Mapping) or not entry.get("name"):
        raise CSIConfigError(f"{where}: every CSI driver needs a name")
    name = str(entry["name"])
    where = f"node config: CSI driver {name}"
    unknown = set(entry) - _DRIVER_KEYS
    if unknown:
        raise CSIConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    if names.is_dns1123_subdomain(name):
        raise CSIConfigError(f"{where}: the name must be a DNS-1123 subdomain (as a CSIDriver's)")
    topology = str(entry.get("topology", "node"))
    if topology not in TOPOLOGY_KEYS:
        raise CSIConfigError(f"{where}: topology must be node or zone, not {topology!r}")
    attach = entry.get("attachRequired", False)
    if not isinstance(attach, bool):
        raise CSIConfigError(f"{where}: attachRequired must be true or false")
    limit = entry.get("maxVolumesPerNode")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise CSIConfigError(f"{where}: maxVolumesPerNode must be a non-negative integer")
    classes = entry.get("storageClasses") or []
    if not isinstance(classes, list):
        raise CSIConfigError(f"{where}: storageClasses must be a list")
    return CSIDriverSpec(
        name=name,
        topology=topology,
        attach_required=attach,
        provision_time=_duration(where, "provisionTime", entry.get("provisionTime")),
        delete_time=_duration(where, "deleteTime", entry.get("deleteTime")),
        attach_time=_duration(where, "attachTime", entry.get("attachTime")),
        detach_time=_duration(where, "detachTime", entry.get("detachTime")),
        max_volumes_per_node=limit,
        storage_classes=tuple(_storage_class(where, name, c) for c in classes),
    )


def parse_csi_drivers(value: Any, *, present: bool) -> tuple[CSIDriverSpec, ...]:
    """The ``csiDrivers`` list; ``present=False`` (the key is absent): the default driver alone."""
    if not present:
        return (DEFAULT_DRIVER,)
    if value is None:
        value = []
    if not isinstance(value, list):
        raise CSIConfigError("node config: csiDrivers must be a list of drivers")
    drivers = tuple(_driver(i, entry) for i, entry in enumerate(value))
    seen: set[str] = set()
    classes: set[str] = set()
    for driver in drivers:
        if driver.name in seen:
            raise CSIConfigError(f"node config: CSI driver {driver.name} is defined twice")
        seen.add(driver.name)
        for cls in driver.storage_classes:
            cls_name = cls["metadata"]["name"]
            if cls_name in classes:
                raise CSIConfigError(f"node config: storage class {cls_name} is declared twice")
            classes.add(cls_name)
    return drivers


def parse_csi_capacity(group: str, value: Any, drivers: Sequence[CSIDriverSpec]) -> dict[str, str]:
    """A group's ``csiCapacity`` (driver name -> quantity); names must be configured drivers."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CSIConfigError(f"node group {group}: csiCapacity must be a mapping of CSI driver name to quantity")
    known = {d.name for d in drivers}
    out: dict[str, str] = {}
    for name, qty in value.items():
        if str(name) not in known:
            raise CSIConfigError(f"node group {group}: csiCapacity names {name}, which is not a configured CSI driver")
        text = str(qty)
        try:
            amount = parse_quantity(text)
        except QuantityError as exc:
            raise CSIConfigError(f"node group {group}: csiCapacity.{name}: {exc}") from None
        if amount.sign() < 0:
            raise CSIConfigError(f"node group {group}: csiCapacity.{name} must not be negative")
        out[str(name)] = text
    return out
