"""Conversion between a stored object and another API version that shares its storage.

kube-apiserver stores events.k8s.io/v1 Events and core/v1 Events as one resource ("cohabitating"): both APIs
read and write the same objects, each in its own field names (upstream ``pkg/apis/events/v1/conversion.go``).
kubeplane stores the core/v1 form; the events.k8s.io/v1 form is produced on the way out and folded back on the
way in.

Built-in resources served at several versions over one storage (:data:`STORAGE_VERSIONS`) are stored in one
version, as kube-apiserver's storage factory encodes each resource in one version. Their other versions are
produced by rewriting ``apiVersion``: that is the whole conversion when the versions' Go types have the same
fields, which this table only admits. Every other resource is stored in its only version and passes through
unchanged.
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

STORAGE_VERSIONS: dict[tuple[str, str], str] = {
    # scheduling.k8s.io Workload and PodGroup, served at v1beta1 and v1alpha3 (CompositePodGroup: v1alpha3
    # only). v1.37's storage version is v1alpha3: ``emulatedStorageVersion`` (apiserver
    # ``pkg/server/storage/resource_encoding_config.go``) skips v1beta1, introduced in 1.37 (its
    # ``zz_generated.prerelease-lifecycle.go``), which a 1.36 server (the minimum compatibility version) could
    # not read, and takes v1alpha3, which has no lifecycle. The two versions' Workload and PodGroup types have
    # the same fields (``k8s.io/api`` ``scheduling/v1alpha3/types.go`` vs ``scheduling/v1beta1/types.go``: v1beta1
    # drops only the CompositePodGroup kind and the ``WorkloadPodGroup*`` building blocks no object embeds),
    # so upstream's generated conversions through the internal type copy every field and nothing is lost.
    ("scheduling.k8s.io", "workloads"): "v1alpha3",
    ("scheduling.k8s.io", "podgroups"): "v1alpha3",
}
"""(group, plural) of a built-in resource served at several versions -> the version its objects are stored in."""


def storage_version(info: ResourceInfo) -> str:
    """The version ``info``'s objects are stored in: a custom resource's storage version, a multi-version
    built-in's :data:`STORAGE_VERSIONS` entry, else its own version (events.k8s.io aside, stored as core v1)."""
    if isinstance(info, CustomResourceInfo):
        return info.storage_version or info.version
    return STORAGE_VERSIONS.get((info.group, info.plural), info.version)


def converts(info: ResourceInfo) -> bool:
    """events.k8s.io; a custom resource's served versions other than its (served) storage version, whose
    objects are stored in the storage version (conversion strategy None: only ``apiVersion`` changes); and a
    multi-version built-in's versions other than its :data:`STORAGE_VERSIONS` one."""
    if isinstance(info, CustomResourceInfo):
        return info.converts
    return _is_events_v1(info) or storage_version(info) != info.version


def _is_events_v1(info: ResourceInfo) -> bool:
    return info.group == "events.k8s.io" and not isinstance(info, CustomResourceInfo)


def from_storage(info: ResourceInfo, obj: Obj) -> Obj:
    """The stored (core/v1) object as ``info``'s version presents it (a new dict; ``obj`` is not changed)."""
    if not converts(info):
        return obj
    if not _is_events_v1(info):  # a custom resource or a multi-version built-in: the same fields
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
    if not _is_events_v1(info):
        return {**obj, "apiVersion": storage.api_version}
    fields = events_v1_fields_to_core({k: v for k, v in obj.items() if k not in ("apiVersion", "kind")})
    return {"apiVersion": storage.api_version, "kind": storage.kind, **fields}
