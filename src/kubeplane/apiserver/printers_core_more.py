"""Server-side Table columns of PersistentVolume, PersistentVolumeClaim, ReplicationController, IPAddress and
ServiceCIDR.

Upstream: ``pkg/printers/internalversion/printers.go`` (v1.37) ``AddHandlers`` (names, types, priorities) and
``printPersistentVolume``, ``printPersistentVolumeClaim``, ``printReplicationController``, ``printIPAddress``,
``printServiceCIDR``. Row rules kept from upstream:

* access modes print as ``helper.GetAccessModesAsString``: ``RWO``, ``ROX``, ``RWX``, ``RWOP`` in that order,
  each once, comma-joined, whatever the order given;
* the storage class is the ``volume.beta.kubernetes.io/storage-class`` annotation when present, else
  ``spec.storageClassName`` (``GetPersistentVolumeClass`` / ``GetPersistentVolumeClaimClass``);
* a PV or PVC being deleted shows the phase ``Terminating``; an unset volume mode or VolumeAttributesClass is
  ``<unset>``; a PVC's capacity and access modes show only once it is bound (``spec.volumeName`` set);
* quantities print in canonical form (``resource.Quantity.String()``; a missing one is ``0``);
* ``printIPAddress`` appends an age cell that has no column (two columns, three cells): kubectl drops it, and so
  does a Table client reading by column; the cell is kept as upstream sends it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.views import int_field, items, meta_of, name_of, section

from .printers_more import _doc
from .printers_workloads import (
    AGE_COLUMN,
    NAME_COLUMN,
    Column,
    Obj,
    Printer,
    age,
    format_labels,
    layout_container_cells,
)

__all__ = ["CORE_MORE_PRINTERS"]

_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
_ACCESS_MODES: Final = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)
_UNSET: Final = "<unset>"


def access_modes_string(modes: object) -> str:
    """Upstream ``helper.GetAccessModesAsString``."""
    given = set(modes) if isinstance(modes, list) else set()
    return ",".join(short for mode, short in _ACCESS_MODES if mode in given)


def _storage(resources: Mapping[str, Any]) -> str:
    """``resources["storage"].String()``: canonical, ``0`` when absent (Go's zero Quantity)."""
    value = resources.get("storage")
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            return str(Quantity.parse(value))
        except QuantityError:
            return str(value)
    return "0"


def _storage_class(obj: Obj) -> str:
    annotations = meta_of(obj).get("annotations")
    if isinstance(annotations, Mapping) and _STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[_STORAGE_CLASS_ANNOTATION])
    value = section(obj, "spec").get("storageClassName")
    return value if isinstance(value, str) else ""


def _phase(obj: Obj) -> str:
    if meta_of(obj).get("deletionTimestamp"):
        return "Terminating"
    return str(section(obj, "status").get("phase") or "")


def _opt(mapping: Mapping[str, Any], key: str) -> str:
    value = mapping.get(key)
    return value if isinstance(value, str) else _UNSET


def persistent_volume_row(obj: Obj, now: float) -> list[Any]:
    spec = section(obj, "spec")
    ref = section(obj, "spec", "claimRef")
    claim = f"{ref.get('namespace', '')}/{ref.get('name', '')}" if isinstance(spec.get("claimRef"), Mapping) else ""
    return [
        name_of(obj),
        _storage(section(obj, "spec", "capacity")),
        access_modes_string(spec.get("accessModes")),
        str(spec.get("persistentVolumeReclaimPolicy") or ""),
        _phase(obj),
        claim,
        _storage_class(obj),
        _opt(spec, "volumeAttributesClassName"),
        str(section(obj, "status").get("reason") or ""),
        age(obj, now),
        _opt(spec, "volumeMode"),
    ]


def persistent_volume_claim_row(obj: Obj, now: float) -> list[Any]:
    spec, status = section(obj, "spec"), section(obj, "status")
    volume = str(spec.get("volumeName") or "")
    capacity = _storage(section(obj, "status", "capacity")) if volume else ""
    modes = access_modes_string(status.get("accessModes")) if volume else ""
    return [
        name_of(obj),
        _phase(obj),
        volume,
        capacity,
        modes,
        _storage_class(obj),
        _opt(spec, "volumeAttributesClassName"),
        age(obj, now),
        _opt(spec, "volumeMode"),
    ]


def replication_controller_row(obj: Obj, now: float) -> list[Any]:
    """Upstream ``printReplicationController``: the selector is a plain label map (``labels.FormatLabels``)."""
    spec, status = section(obj, "spec"), section(obj, "status")
    names, images = layout_container_cells(items(section(obj, "spec", "template", "spec"), "containers"))
    selector = spec.get("selector")
    return [
        name_of(obj),
        int_field(spec, "replicas", 1),
        int_field(status, "replicas"),
        int_field(status, "readyReplicas"),
        age(obj, now),
        names,
        images,
        format_labels({str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) else None),
    ]


def ip_address_row(obj: Obj, now: float) -> list[Any]:
    """``<resource>[.<group>]/[<namespace>/]<name>`` lower-cased group/resource, ``<none>`` without a parentRef;
    then the age cell upstream sends without a column."""
    ref = section(obj, "spec", "parentRef")
    parent = "<none>"
    if isinstance(section(obj, "spec").get("parentRef"), Mapping):
        resource, group = str(ref.get("resource") or ""), str(ref.get("group") or "")
        parent = (f"{resource}.{group}" if group else resource).lower()
        if ref.get("namespace"):
            parent += f"/{ref['namespace']}"
        parent += f"/{ref.get('name') or ''}"
    return [name_of(obj), parent, age(obj, now)]


def service_cidr_row(obj: Obj, now: float) -> list[Any]:
    cidrs = section(obj, "spec").get("cidrs")
    joined = ",".join(str(c) for c in cidrs) if isinstance(cidrs, list) else ""
    return [name_of(obj), joined, age(obj, now)]


_PV: Final = "k8s.io/api/core/v1.PersistentVolumeSpec"
_PV_STATUS: Final = "k8s.io/api/core/v1.PersistentVolumeStatus"
_PVC: Final = "k8s.io/api/core/v1.PersistentVolumeClaimSpec"
_PVC_STATUS: Final = "k8s.io/api/core/v1.PersistentVolumeClaimStatus"
_RC: Final = "k8s.io/api/core/v1.ReplicationControllerSpec"
_RC_STATUS: Final = "k8s.io/api/core/v1.ReplicationControllerStatus"

CORE_MORE_PRINTERS: Final[Mapping[tuple[str, str], Printer]] = {
    ("", "PersistentVolume"): Printer(
        (
            NAME_COLUMN,
            Column("Capacity", "string", _doc(_PV, "capacity")),
            Column("Access Modes", "string", _doc(_PV, "accessModes")),
            Column("Reclaim Policy", "string", _doc(_PV, "persistentVolumeReclaimPolicy")),
            Column("Status", "string", _doc(_PV_STATUS, "phase")),
            Column("Claim", "string", _doc(_PV, "claimRef")),
            Column("StorageClass", "string", "StorageClass of the pv"),
            Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
            Column("Reason", "string", _doc(_PV_STATUS, "reason")),
            AGE_COLUMN,
            Column("VolumeMode", "string", _doc(_PV, "volumeMode"), priority=1),
        ),
        persistent_volume_row,
    ),
    ("", "PersistentVolumeClaim"): Printer(
        (
            NAME_COLUMN,
            Column("Status", "string", _doc(_PVC_STATUS, "phase")),
            Column("Volume", "string", _doc(_PVC, "volumeName")),
            Column("Capacity", "string", _doc(_PVC_STATUS, "capacity")),
            Column("Access Modes", "string", _doc(_PVC_STATUS, "accessModes")),
            Column("StorageClass", "string", "StorageClass of the pvc"),
            Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
            AGE_COLUMN,
            Column("VolumeMode", "string", _doc(_PVC, "volumeMode"), priority=1),
        ),
        persistent_volume_claim_row,
    ),
    ("", "ReplicationController"): Printer(
        (
            NAME_COLUMN,
            Column("Desired", "integer", _doc(_RC, "replicas")),
            Column("Current", "integer", _doc(_RC_STATUS, "replicas")),
            Column("Ready", "integer", _doc(_RC_STATUS, "readyReplicas")),
            AGE_COLUMN,
            Column("Containers", "string", "Names of each container in the template.", priority=1),
            Column("Images", "string", "Images referenced by each container in the template.", priority=1),
            Column("Selector", "string", _doc(_RC, "selector"), priority=1),
        ),
        replication_controller_row,
    ),
    ("networking.k8s.io", "IPAddress"): Printer(
        (NAME_COLUMN, Column("ParentRef", "string", _doc("k8s.io/api/networking/v1.IPAddressSpec", "parentRef"))),
        ip_address_row,
    ),
    ("networking.k8s.io", "ServiceCIDR"): Printer(
        (NAME_COLUMN, Column("CIDRs", "string", _doc("k8s.io/api/networking/v1.ServiceCIDRSpec", "cidrs")), AGE_COLUMN),
        service_cidr_row,
    ),
}
