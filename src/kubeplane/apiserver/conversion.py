"""Conversion between a stored object and another API version that shares its storage.

kube-apiserver stores events.k8s.io/v1 Events and core/v1 Events as one resource ("cohabitating"): both APIs
read and write the same objects, each in its own field names (upstream ``pkg/apis/events/v1/conversion.go``).
kubeplane stores the core/v1 form; the events.k8s.io/v1 form is produced on the way out and folded back on the
way in. Every other resource is stored in its only version and passes through unchanged.
"""

from __future__ import annotations

from typing import Any

from kubeplane.api.crd.resource import CustomResourceInfo
from kubeplane.api.resources import ResourceInfo

Obj = dict[str, Any]

# events.k8s.io/v1 field -> core/v1 field
_EVENTS_V1 = {
    "regarding": "involvedObject",
    "note": "message",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
    "reportingController": "reportingComponent",
}
_CORE_TO_EVENTS_V1 = {core: v1 for v1, core in _EVENTS_V1.items()}


def converts(info: ResourceInfo) -> bool:
    """events.k8s.io, and a custom resource's served versions other than its (served) storage version, whose
    objects are stored in the storage version (conversion strategy None: only ``apiVersion`` changes)."""
    if isinstance(info, CustomResourceInfo):
        return info.converts
    return info.group == "events.k8s.io"


def from_storage(info: ResourceInfo, obj: Obj) -> Obj:
    """The stored (core/v1) object as ``info``'s version presents it (a new dict; ``obj`` is not changed)."""
    if not converts(info):
        return obj
    if isinstance(info, CustomResourceInfo):
        return {**obj, "apiVersion": info.api_version}
    out: Obj = {"apiVersion": info.api_version, "kind": info.kind}
    for key, value in obj.items():
        if key in ("apiVersion", "kind"):
            continue
        out[_CORE_TO_EVENTS_V1.get(key, key)] = value
    return out


def events_v1_fields_to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event's fields under their core/v1 names (apiVersion and kind untouched)."""
    return {_EVENTS_V1.get(key, key): value for key, value in obj.items()}


def to_storage(info: ResourceInfo, storage: ResourceInfo, obj: Obj) -> Obj:
    """An object written through ``info`` in the stored form of ``storage``."""
    if not converts(info):
        return obj
    if isinstance(info, CustomResourceInfo):
        return {**obj, "apiVersion": storage.api_version}
    fields = events_v1_fields_to_core({k: v for k, v in obj.items() if k not in ("apiVersion", "kind")})
    return {"apiVersion": storage.api_version, "kind": storage.kind, **fields}
