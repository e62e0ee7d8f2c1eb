"""Conversion between a stored object and another API version that shares its storage.

kube-apiserver stores events.k8s.io/v1 Events and core/v1 Events as one resource ("cohabitating"): both APIs
read and write the same objects, each in its own field names (upstream ``pkg/apis/events/v1/conversion.go``).
kubeplane stores the core/v1 form; the events.k8s.io/v1 form is produced on the way out and folded back on the
way in. Custom resources are stored in their CRD's storage version and read as upstream's CRD storage codec
reads them (apiextensions-apiserver customresource_handler.go ``crdConversionRESTOptionsGetter``): pruned and
defaulted with the schema of the version they are stored in (``schemaCoercingDecoder``, ``unstructuredDefaulter``:
so a default added to the schema later shows on every read), converted by rewriting ``apiVersion``
(``nopConverter``), then pruned with the read version's schema (``schemaCoercingConverter``); written converted
to the storage version and pruned with its schema (the same converter on encode).

Built-in resources served at several versions over one storage (:data:`STORAGE_VERSIONS`) are stored in one
version, as kube-apiserver's storage factory encodes each resource in one version. Their other versions are
produced by rewriting ``apiVersion``: that is the whole conversion when the versions' Go types have the same
fields, which this table only admits. Every other resource is stored in its only version and passes through
unchanged.
"""

from __future__ import annotations

from typing import Any

from kubeplane.api.crd import prune as crdprune
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
    """Built-ins whose objects are stored as another resource row's: events.k8s.io (as core/v1 Events) and a
    multi-version built-in's versions other than its :data:`STORAGE_VERSIONS` one. Custom resources are written
    through their own version's strategy and stored under the same key: :func:`stored_custom`."""
    if isinstance(info, CustomResourceInfo):
        return False
    return _is_events_v1(info) or storage_version(info) != info.version


def _is_events_v1(info: ResourceInfo) -> bool:
    return info.group == "events.k8s.io" and not isinstance(info, CustomResourceInfo)


def presents(info: ResourceInfo) -> bool:
    """Whether a stored object is shown otherwise than stored: those of :func:`converts` and every custom
    resource."""
    return isinstance(info, CustomResourceInfo) or converts(info)


def read_custom(info: CustomResourceInfo, obj: Obj) -> Obj:
    """A stored custom resource as read at ``info``'s version (a new object; ``obj`` is not changed): pruned and
    defaulted with its stored version's schema, ``apiVersion`` and ``kind`` set, pruned with ``info``'s schema
    and cleared of ``null``s the schema does not allow. An object whose stored version the CRD no longer has is
    only relabelled."""
    stored_version = str(obj.get("apiVersion") or "").rpartition("/")[2]
    stored_schema = info.schemas.get(stored_version)
    out = obj
    if stored_schema:
        out, _ = crdprune.prune(obj, stored_schema)
        crdprune.apply_defaults(out, stored_schema)
    out = {**out, "apiVersion": info.api_version, "kind": info.kind}
    if info.schema and stored_version != info.version:
        out, _ = crdprune.prune(out, info.schema)
        crdprune.drop_nulls_without_defaults(out, info.schema)
    return out


def stored_custom(info: CustomResourceInfo, obj: Obj) -> Obj:
    """A custom resource written at ``info``'s version in its stored form: converted to the storage version
    (upstream's encoder version, served or not) and pruned with its schema (``schemaCoercingConverter`` on
    encode), so fields only the request's version has are not stored."""
    if not info.storage_version or info.storage_version == info.version:
        return obj
    out: Obj = {**obj, "apiVersion": f"{info.group}/{info.storage_version}"}
    storage_schema = info.schemas.get(info.storage_version)
    if storage_schema:
        out, _ = crdprune.prune(out, storage_schema)
        crdprune.drop_nulls_without_defaults(out, storage_schema)
    return out


def from_storage(info: ResourceInfo, obj: Obj) -> Obj:
    """The stored object as ``info``'s version presents it (a new dict; ``obj`` is not changed)."""
    if isinstance(info, CustomResourceInfo):
        return read_custom(info, obj)
    if not converts(info):
        return obj
    if not _is_events_v1(info):  # a multi-version built-in: the same fields
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
