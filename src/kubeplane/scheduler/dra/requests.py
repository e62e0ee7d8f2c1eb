"""Uniform views of a claim's requests (upstream ``requestAccessor``: ``exactDeviceRequestAccessor`` and
``deviceSubRequestAccessor``). A subrequest never has admin access; defaults as the API applies them
(allocationMode ExactCount, count 1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Request", "exact", "sub_request"]


@dataclass(frozen=True, slots=True)
class Request:
    name: str
    device_class_name: str
    allocation_mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: tuple[Mapping[str, Any], ...]
    tolerations: tuple[Mapping[str, Any], ...]
    capacity: Mapping[str, Any] | None


def _of(name: str, body: Mapping[str, Any], admin: Any) -> Request:
    return Request(
        name=name,
        device_class_name=str(body.get("deviceClassName") or ""),
        allocation_mode=str(body.get("allocationMode") or "ExactCount"),
        count=int(body.get("count") or 0) if body.get("count") is not None else 1,
        admin_access=bool(admin),
        has_admin_access=admin is not None,
        selectors=tuple(body.get("selectors") or ()),
        tolerations=tuple(body.get("tolerations") or ()),
        capacity=(body.get("capacity") or {}).get("requests"),
    )


def exact(request: Mapping[str, Any]) -> Request:
    body = request.get("exactly") or {}
    return _of(str(request.get("name") or ""), body, body.get("adminAccess"))


def sub_request(sub: Mapping[str, Any]) -> Request:
    return _of(str(sub.get("name") or ""), sub, None)
