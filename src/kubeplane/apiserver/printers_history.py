"""The ControllerRevision Table (upstream ``pkg/printers/internalversion/printers.go``
``printControllerRevision``): NAME, CONTROLLER (``<kind>.<group>/<name>`` of the controller reference, lower
case, as ``formatResourceName`` with kind; ``<none>`` without one), REVISION (the number), AGE."""

from __future__ import annotations

from typing import Any, Final

from kubeplane.api.views import controller_ref_of, name_of
from kubeplane.apiserver.printers_workloads import AGE_COLUMN, NAME_COLUMN, Column, Obj, Printer, age

__all__ = ["CONTROLLER_REVISION_PRINTERS", "controller_revision_row"]


def _controller_name(obj: Obj) -> str:
    ref = controller_ref_of(obj)
    if ref is None:
        return "<none>"
    api_version = str(ref.get("apiVersion") or "")
    group = api_version.rpartition("/")[0] if "/" in api_version else ""
    kind = str(ref.get("kind") or "")
    name = str(ref.get("name") or "")
    if not group and not kind:
        return name  # an empty GroupKind prints the bare name
    group_kind = f"{kind}.{group}" if group else kind
    return f"{group_kind.lower()}/{name}"


def controller_revision_row(obj: Obj, now: float) -> list[Any]:
    revision = obj.get("revision")
    return [name_of(obj), _controller_name(obj), revision if isinstance(revision, int) else 0, age(obj, now)]


CONTROLLER_REVISION_PRINTERS: Final = {
    ("apps", "ControllerRevision"): Printer(
        (
            NAME_COLUMN,
            Column("Controller", "string", "Controller of the object"),
            Column("Revision", "string", "Revision indicates the revision of the state represented by Data."),
            AGE_COLUMN,
        ),
        controller_revision_row,
    )
}
