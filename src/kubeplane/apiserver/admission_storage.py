"""The storage admission plugins of kube-apiserver (v1.37), on the kinds they handle:

* **DefaultStorageClass** (``plugin/pkg/admission/storage/storageclass/setdefault``, mutating, CREATE of
  persistentvolumeclaims): a claim with no class -- neither ``spec.storageClassName`` (even ``""``, which asks for
  no class) nor the beta annotation ``volume.beta.kubernetes.io/storage-class`` -- gets the default StorageClass.
  A class is default when its annotation ``storageclass.kubernetes.io/is-default-class`` (or the beta
  ``storageclass.beta.kubernetes.io/is-default-class``) is ``"true"``; among several the newest
  ``creationTimestamp`` wins, ties to the smallest name (``GetDefaultClass`` in ``pkg/volume/util``). None: the
  claim is left alone.
* **StorageObjectInUseProtection** (``plugin/pkg/admission/storage/storageobjectinuseprotection``, mutating,
  CREATE): a new PersistentVolume gets the finalizer ``kubernetes.io/pv-protection`` and a new claim
  ``kubernetes.io/pvc-protection``, once (not added again when present). The pv-protection and pvc-protection
  controllers remove them when the object is no longer in use.
* **PersistentVolumeClaimResize** (``plugin/pkg/admission/storage/persistentvolume/resize``, validating, UPDATE of
  the main resource): growing ``spec.resources.requests.storage`` is 403 unless the old claim is Bound
  ("Only bound persistent volume claims can be expanded") and its class -- the same before and after, not empty --
  exists with ``allowVolumeExpansion: true`` ("only dynamically provisioned pvc can be resized and the
  storageclass that provisions the pvc must support resize").

Lookups read the API server's watch cache of StorageClasses, as upstream's plugins read their informers' listers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from kubeplane.api.meta import parse_time
from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.resources import ResourceInfo

from . import errors

if TYPE_CHECKING:
    from .registry import Registry

__all__ = [
    "BETA_STORAGE_CLASS_ANNOTATION",
    "IS_DEFAULT_CLASS_ANNOTATION",
    "PVC_PROTECTION_FINALIZER",
    "PV_PROTECTION_FINALIZER",
    "admit_create",
    "default_class",
    "validate_update",
]

PVC_PROTECTION_FINALIZER: Final = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER: Final = "kubernetes.io/pv-protection"
IS_DEFAULT_CLASS_ANNOTATION: Final = "storageclass.kubernetes.io/is-default-class"
BETA_IS_DEFAULT_CLASS_ANNOTATION: Final = "storageclass.beta.kubernetes.io/is-default-class"
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
_NOT_BOUND: Final = "Only bound persistent volume claims can be expanded"
_NO_RESIZE: Final = (
    "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"
)


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def _is_default(storage_class: Mapping[str, Any]) -> bool:
    """``IsDefaultAnnotation``."""
    annotations = _annotations(storage_class)
    return "true" in (annotations.get(IS_DEFAULT_CLASS_ANNOTATION), annotations.get(BETA_IS_DEFAULT_CLASS_ANNOTATION))


def _created(obj: Mapping[str, Any]) -> float:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    try:
        return parse_time(stamp).timestamp() if isinstance(stamp, str) else 0.0
    except ValueError:
        return 0.0


def default_class(classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """``GetDefaultClass``: of the default classes, the newest; equal times go to the smaller name."""
    defaults = [c for c in classes if _is_default(c)]
    if not defaults:
        return None
    return min(defaults, key=lambda c: (-_created(c), str((c.get("metadata") or {}).get("name") or "")))


def _has_class(claim: Mapping[str, Any]) -> bool:
    """``PersistentVolumeClaimHasClass``: a class name set (even empty) or the beta annotation present."""
    spec = claim.get("spec")
    return (isinstance(spec, Mapping) and spec.get("storageClassName") is not None) or (
        BETA_STORAGE_CLASS_ANNOTATION in _annotations(claim)
    )


def _add_finalizer(obj: dict[str, Any], finalizer: str) -> None:
    meta = obj["metadata"]
    finalizers = meta.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = []
    if finalizer not in finalizers:
        meta["finalizers"] = [*finalizers, finalizer]


async def admit_create(registry: Registry, info: ResourceInfo, obj: dict[str, Any]) -> None:
    """The two mutating plugins, in upstream's plugin order (DefaultStorageClass, StorageObjectInUseProtection)."""
    if info.group != "":
        return
    if info.kind == "PersistentVolumeClaim":
        if not _has_class(obj):
            found = default_class(_classes(registry))
            spec = obj.get("spec")
            if found is not None and isinstance(spec, dict):
                spec["storageClassName"] = found["metadata"]["name"]
        _add_finalizer(obj, PVC_PROTECTION_FINALIZER)
    elif info.kind == "PersistentVolume":
        _add_finalizer(obj, PV_PROTECTION_FINALIZER)


def _class_info(registry: Registry) -> ResourceInfo | None:
    try:
        return registry.resource("storage.k8s.io", "storageclasses")
    except KeyError:  # a registry serving a table without StorageClasses
        return None


def _classes(registry: Registry) -> list[Mapping[str, Any]]:
    info = _class_info(registry)
    if info is None:
        return []
    cache = registry.cache(info)
    cache.sync()
    return list(cache.objects.values())


def _section(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _requested(claim: Mapping[str, Any]) -> Quantity:
    """``spec.resources.requests[storage]``; Go's zero Quantity when absent or unreadable."""
    value = _section(_section(_section(claim, "spec"), "resources"), "requests").get("storage")
    try:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return Quantity.parse(value)
    except QuantityError:
        pass
    return Quantity.parse("0")


def _claim_class(claim: Mapping[str, Any]) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then ``spec.storageClassName``."""
    annotations = _annotations(claim)
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    spec = claim.get("spec")
    name = spec.get("storageClassName") if isinstance(spec, Mapping) else None
    return name if isinstance(name, str) else ""


def validate_update(
    registry: Registry, info: ResourceInfo, new: Mapping[str, Any], old: Mapping[str, Any], subresource: str | None
) -> None:
    """PersistentVolumeClaimResize; raises the 403 upstream's plugin returns."""
    if (info.group, info.kind) != ("", "PersistentVolumeClaim") or subresource:
        return
    if _requested(new).cmp(_requested(old)) <= 0:
        return
    name = str((new.get("metadata") or {}).get("name") or "")
    if _section(old, "status").get("phase") != "Bound":
        raise errors.forbidden("", "persistentvolumeclaims", name, _NOT_BOUND)
    new_class, old_class = _claim_class(new), _claim_class(old)
    allowed = False
    if new_class and old_class and new_class == old_class:
        class_info = _class_info(registry)
        found = registry.get_cached(class_info, None, new_class) if class_info is not None else None
        allowed = found is not None and found.get("allowVolumeExpansion") is True
    if not allowed:
        raise errors.forbidden("", "persistentvolumeclaims", name, _NO_RESIZE)
