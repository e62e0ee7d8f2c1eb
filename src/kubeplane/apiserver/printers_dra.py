"""Server-side Table columns of resource.k8s.io/v1: DeviceClass, ResourceClaim, ResourceClaimTemplate,
ResourceSlice.

Upstream: ``pkg/printers/internalversion/printers.go`` (v1.37) ``AddHandlers`` (``deviceClassColumnDefinitions``,
``resourceClaimColumnDefinitions``, ``resourceClaimTemplateColumnDefinitions``, ``resourceSliceColumnDefinitions``)
and ``printResourceClaim``/``resourceClaimState``, ``printResourceSlice``. A claim's STATE joins, with ``,``:
``deleted`` when it has a deletionTimestamp; ``pending`` when not allocated (and not deleted); ``allocated``, then
``reserved`` when ``reservedFor`` is not empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.openapi_docs import load_docs
from kubeplane.api.views import meta_of, name_of, section

from .printers_workloads import AGE_COLUMN, NAME_COLUMN, Column, Obj, Printer, age

__all__ = ["DRA_PRINTERS", "resource_claim_row", "resource_claim_state", "resource_slice_row"]

GROUP: Final = "resource.k8s.io"


def _doc(go_type: str, field: str) -> str:
    fields: Mapping[str, Any] = load_docs()["types"].get(go_type, {}).get("fields", {})
    return str(fields.get(field, {}).get("description", ""))


def resource_claim_state(obj: Obj) -> str:
    """``resourceClaimState``."""
    status = section(obj, "status")
    deleted = bool(meta_of(obj).get("deletionTimestamp"))
    states: list[str] = ["deleted"] if deleted else []
    if status.get("allocation") is None:
        if not deleted:
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


def resource_claim_row(obj: Obj, now: float) -> list[Any]:
    return [name_of(obj), resource_claim_state(obj), age(obj, now)]


def name_age_row(obj: Obj, now: float) -> list[Any]:
    return [name_of(obj), age(obj, now)]


def resource_slice_row(obj: Obj, now: float) -> list[Any]:
    spec = section(obj, "spec")
    return [
        name_of(obj),
        str(spec.get("nodeName") or ""),
        str(spec.get("driver") or ""),
        str(section(obj, "spec", "pool").get("name") or ""),
        age(obj, now),
    ]


_SLICE_SPEC: Final = "k8s.io/api/resource/v1.ResourceSliceSpec"
DRA_PRINTERS: Final[Mapping[tuple[str, str], Printer]] = {
    (GROUP, "DeviceClass"): Printer((NAME_COLUMN, AGE_COLUMN), name_age_row),
    (GROUP, "ResourceClaim"): Printer(
        (
            NAME_COLUMN,
            Column("State", "string", "A summary of the current state (allocated, pending, reserved, etc.)."),
            AGE_COLUMN,
        ),
        resource_claim_row,
    ),
    (GROUP, "ResourceClaimTemplate"): Printer((NAME_COLUMN, AGE_COLUMN), name_age_row),
    (GROUP, "ResourceSlice"): Printer(
        (
            NAME_COLUMN,
            Column("Node", "string", _doc(_SLICE_SPEC, "nodeName")),
            Column("Driver", "string", _doc(_SLICE_SPEC, "driver")),
            Column("Pool", "string", _doc("k8s.io/api/resource/v1.ResourcePool", "name")),
            AGE_COLUMN,
        ),
        resource_slice_row,
    ),
}
