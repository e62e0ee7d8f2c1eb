"""The APIService Table (kube-aggregator pkg/registry/apiservice/etcd/etcd.go ``ConvertToTable``): NAME,
SERVICE (``Local`` or ``namespace/name``), AVAILABLE (the ``Available`` condition's status, with its reason in
parentheses unless True; ``Unknown`` without one), AGE."""

from __future__ import annotations

from typing import Any, Final

from kubeplane.api.views import meta_of
from kubeplane.apiserver.printers_workloads import AGE_COLUMN, NAME_COLUMN, Column, Obj, Printer, age

__all__ = ["APISERVICE_PRINTER"]


def apiservice_row(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    service = spec.get("service")
    where = "Local" if not isinstance(service, dict) else f"{service.get('namespace', '')}/{service.get('name', '')}"
    available = "Unknown"
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "Available":
            value, reason = str(condition.get("status", "")), str(condition.get("reason") or "")
            available = value if value == "True" or not reason else f"{value} ({reason})"
            break
    return [str(meta_of(obj).get("name", "")), where, available, age(obj, now)]


APISERVICE_PRINTER: Final = Printer(
    (
        NAME_COLUMN,
        Column("Service", "string", "The reference to the service that hosts this API endpoint."),
        Column("Available", "string", "Whether this service is available."),
        AGE_COLUMN,
    ),
    apiservice_row,
)
