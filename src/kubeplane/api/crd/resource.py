"""What a CustomResourceDefinition serves: one :class:`CustomResourceInfo` per served version.

A CRD's versions share one storage prefix (``<group>/<plural>``, upstream's etcd key) and so one watch cache;
objects are stored in the storage version (``spec.versions[].storage``) and presented at each served version by
rewriting ``apiVersion`` (conversion strategy ``None``: upstream's ``nopConverter``), each version with its own
schema (``schemas`` holds every version's, for reading objects stored in a former storage version). Versions
are registered in upstream's discovery order (``version.CompareKubeAwareVersionStrings``: GA before beta before
alpha, higher first), so the first is the preferred one. A deprecated version carries the warning every
request to it gets (``deprecationWarning``, or upstream's ``defaultDeprecationWarning``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.resources import STANDARD_VERBS, ResourceInfo, Subresource

__all__ = [
    "CRD_FINALIZER",
    "CustomResourceInfo",
    "PrinterColumn",
    "crd_versions",
    "deprecation_warning",
    "kube_version_key",
    "resources_for",
    "storage_version",
]

CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One ``additionalPrinterColumns`` entry (apiextensions v1 ``CustomResourceColumnDefinition``)."""

    name: str
    type: str
    json_path: str
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass(frozen=True, slots=True)
class CustomResourceInfo(ResourceInfo):
    """A custom resource at one served version, with what serving it needs from its CRD."""

    crd_name: str = ""
    storage_version: str = ""
    singular_name: str = ""
    schema: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    columns: tuple[PrinterColumn, ...] = ()
    scale: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    crd_uid: str = ""
    storage_served: bool = True
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, compare=False, hash=False)
    """Every version's ``openAPIV3Schema`` by version name (served or not)."""
    deprecation_warning: str = ""
    """The ``Warning`` header's text for a deprecated version; empty when the version is not deprecated."""

    @property
    def converts(self) -> bool:
        """Whether objects are stored in another version (the served storage version) than this one."""
        return self.storage_served and self.version != self.storage_version

    @property
    def singular(self) -> str:
        return self.singular_name or self.kind.lower()


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def kube_version_key(name: str) -> tuple[int, int, int, str]:
    """Sort key of upstream's ``CompareKubeAwareVersionStrings`` (ascending key = preferred first): GA, then
    beta, then alpha, each by major then minor version descending; other names last, alphabetically."""
    m = _VERSION.match(name)
    if m is None:
        return (3, 0, 0, name)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor, "")


def crd_versions(crd: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spec = crd.get("spec") or {}
    versions = spec.get("versions") or []
    return [v for v in versions if isinstance(v, Mapping)]


def storage_version(crd: Mapping[str, Any]) -> str:
    return next((str(v.get("name")) for v in crd_versions(crd) if v.get("storage")), "")


def _columns(version: Mapping[str, Any]) -> tuple[PrinterColumn, ...]:
    out = []
    for col in version.get("additionalPrinterColumns") or ():
        out.append(
            PrinterColumn(
                name=str(col.get("name", "")),
                type=str(col.get("type", "")),
                json_path=str(col.get("jsonPath", "")),
                format=str(col.get("format", "")),
                description=str(col.get("description", "")),
                priority=int(col.get("priority", 0) or 0),
            )
        )
    return tuple(out)


def deprecation_warning(crd: Mapping[str, Any], version: Mapping[str, Any]) -> str:
    """Upstream ``defaultDeprecationWarning`` (customresource_handler.go), or the version's own
    ``deprecationWarning``: ``<group>/<version> <Kind> is deprecated; use <group>/<newest> <Kind>``, naming the
    highest served, non-deprecated version that sorts after it (``CompareKubeAwareVersionStrings``)."""
    if not version.get("deprecated"):
        return ""
    if version.get("deprecationWarning") is not None:
        return str(version["deprecationWarning"])
    spec = crd.get("spec") or {}
    group, kind = spec.get("group", ""), (spec.get("names") or {}).get("kind", "")
    name = str(version.get("name", ""))
    msg = f"{group}/{name} {kind} is deprecated"
    newer = [
        str(v.get("name"))
        for v in crd_versions(crd)
        if v.get("served") and not v.get("deprecated") and kube_version_key(str(v.get("name"))) < kube_version_key(name)
    ]
    if not newer:
        return msg
    return f"{msg}; use {group}/{min(newer, key=kube_version_key)} {kind}"


def resources_for(crd: Mapping[str, Any]) -> list[CustomResourceInfo]:
    """The served versions of an accepted CRD, preferred first (names from ``status.acceptedNames``, as upstream
    serves only accepted names; spec names before the naming controller ran)."""
    spec = crd.get("spec") or {}
    names = (crd.get("status") or {}).get("acceptedNames") or {}
    if not names.get("plural") or not names.get("kind"):
        names = spec.get("names") or {}
    group = str(spec.get("group", ""))
    plural = str(names.get("plural", ""))
    namespaced = spec.get("scope") == "Namespaced"
    storage = storage_version(crd)
    meta = crd.get("metadata") or {}
    out = []
    storage_served = any(v.get("served") and v.get("name") == storage for v in crd_versions(crd))
    schemas = {str(v.get("name")): (v.get("schema") or {}).get("openAPIV3Schema") or {} for v in crd_versions(crd)}
    for version in crd_versions(crd):
        if not version.get("served"):
            continue
        name = str(version.get("name"))
        kind = str(names.get("kind", ""))
        subs = version.get("subresources") or {}
        subresources = []
        if isinstance(subs.get("scale"), Mapping):
            subresources.append(Subresource("scale", "Scale", group="autoscaling"))
        if isinstance(subs.get("status"), Mapping):
            subresources.append(Subresource("status", kind, group=group, version=name))
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        out.append(
            CustomResourceInfo(
                group,
                name,
                kind,
                plural,
                namespaced=namespaced,
                storage_prefix=f"{group}/{plural}",
                short_names=tuple(str(s) for s in names.get("shortNames") or ()),
                categories=tuple(str(c) for c in names.get("categories") or ()),
                subresources=tuple(subresources),
                verbs=STANDARD_VERBS,
                crd_name=str(meta.get("name", "")),
                storage_version=storage,
                singular_name=str(names.get("singular", "")),
                schema=schema,
                columns=_columns(version),
                scale=subs.get("scale") if isinstance(subs.get("scale"), Mapping) else None,
                crd_uid=str(meta.get("uid", "")),
                storage_served=storage_served,
                schemas=schemas,
                deprecation_warning=deprecation_warning(crd, version),
            )
        )
    out.sort(key=lambda i: kube_version_key(i.version))
    return out
