"""Server-side Table columns of CSIDriver, CSIStorageCapacity and VolumeAttachment.

Upstream: ``pkg/printers/internalversion/printers.go`` (v1.37) ``AddHandlers`` and ``printCSIDriver``,
``printCSIStorageCapacity``, ``printVolumeAttachment``. Column descriptions that upstream takes from
``SwaggerDoc()`` come from the same Go comments (:mod:`kubeplane.api.openapi_docs`). StorageClass and CSINode are in
:mod:`.printers_more`, PersistentVolume and PersistentVolumeClaim in :mod:`.printers_core_more`.

Row rules (upstream's): a CSIDriver's unset attachRequired prints true and the other unset booleans false, its
token requests are the audiences joined by ``,`` (``<unset>`` when the list is nil), its modes joined by ``,``
(``<none>`` when empty); a CSIStorageCapacity has no Age column and prints its capacity canonically
(``<unset>`` when nil); a VolumeAttachment's PV column is empty for an inline volume.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.openapi_docs import load_docs
from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.views import name_of, section

from .printers_workloads import AGE_COLUMN, NAME_COLUMN, Column, Obj, Printer, age

__all__ = ["STORAGE_PRINTERS", "csi_driver_row", "csi_storage_capacity_row", "volume_attachment_row"]


def _doc(go_type: str, field: str) -> str:
    """``SwaggerDoc()[field]`` of a Go type (empty if unknown)."""
    fields: Mapping[str, Any] = load_docs()["types"].get(go_type, {}).get("fields", {})
    return str(fields.get(field, {}).get("description", ""))


def _flag(spec: Mapping[str, Any], key: str, unset: bool) -> bool:
    value = spec.get(key)
    return value if isinstance(value, bool) else unset


def csi_driver_row(obj: Obj, now: float) -> list[Any]:
    spec = section(obj, "spec")
    modes = ",".join(str(m) for m in spec.get("volumeLifecycleModes") or ()) or "<none>"
    requests = spec.get("tokenRequests")
    tokens = "<unset>"
    if isinstance(requests, list):
        tokens = ",".join(str(r.get("audience") or "") for r in requests if isinstance(r, Mapping))
    return [
        name_of(obj),
        _flag(spec, "attachRequired", True),
        _flag(spec, "podInfoOnMount", False),
        _flag(spec, "storageCapacity", False),
        tokens,
        _flag(spec, "requiresRepublish", False),
        modes,
        age(obj, now),
    ]


def _quantity(value: object) -> str:
    """``Quantity.String()``: canonical; ``<unset>`` for a nil pointer."""
    if value is None:
        return "<unset>"
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            return str(Quantity.parse(value))
        except QuantityError:
            return str(value)
    return str(value)


def csi_storage_capacity_row(obj: Obj, now: float) -> list[Any]:
    return [name_of(obj), str(obj.get("storageClassName") or ""), _quantity(obj.get("capacity"))]


def volume_attachment_row(obj: Obj, now: float) -> list[Any]:
    spec = section(obj, "spec")
    return [
        name_of(obj),
        str(spec.get("attacher") or ""),
        str(section(obj, "spec", "source").get("persistentVolumeName") or ""),
        str(spec.get("nodeName") or ""),
        section(obj, "status").get("attached") is True,
        age(obj, now),
    ]


_CSI_DRIVER_SPEC: Final = "k8s.io/api/storage/v1.CSIDriverSpec"
_CAPACITY: Final = "k8s.io/api/storage/v1.CSIStorageCapacity"
STORAGE_PRINTERS: Final[Mapping[tuple[str, str], Printer]] = {
    ("storage.k8s.io", "CSIDriver"): Printer(
        (
            NAME_COLUMN,
            Column("AttachRequired", "boolean", _doc(_CSI_DRIVER_SPEC, "attachRequired")),
            Column("PodInfoOnMount", "boolean", _doc(_CSI_DRIVER_SPEC, "podInfoOnMount")),
            Column("StorageCapacity", "boolean", _doc(_CSI_DRIVER_SPEC, "storageCapacity")),
            Column("TokenRequests", "string", _doc(_CSI_DRIVER_SPEC, "tokenRequests")),
            Column("RequiresRepublish", "boolean", _doc(_CSI_DRIVER_SPEC, "requiresRepublish")),
            Column("Modes", "string", _doc(_CSI_DRIVER_SPEC, "volumeLifecycleModes")),
            AGE_COLUMN,
        ),
        csi_driver_row,
    ),
    ("storage.k8s.io", "CSIStorageCapacity"): Printer(
        (
            NAME_COLUMN,
            Column("StorageClassName", "string", _doc(_CAPACITY, "storageClassName")),
            Column("Capacity", "string", _doc(_CAPACITY, "capacity")),
        ),
        csi_storage_capacity_row,
    ),
    ("storage.k8s.io", "VolumeAttachment"): Printer(
        (
            NAME_COLUMN,
            Column("Attacher", "string", _doc("k8s.io/api/storage/v1.VolumeAttachmentSpec", "attacher"), format="name"),
            Column("PV", "string", _doc("k8s.io/api/storage/v1.VolumeAttachmentSource", "persistentVolumeName")),
            Column("Node", "string", _doc("k8s.io/api/storage/v1.VolumeAttachmentSpec", "nodeName")),
            Column("Attached", "boolean", _doc("k8s.io/api/storage/v1.VolumeAttachmentStatus", "attached")),
            AGE_COLUMN,
        ),
        volume_attachment_row,
    ),
}
