"""PersistentVolume and PersistentVolumeClaim validation, as kube-apiserver's ``ValidatePersistentVolume`` and
``ValidatePersistentVolumeClaim`` (with their ``...Update`` and ``...StatusUpdate`` counterparts).

A volume has a storage capacity, access modes, exactly one source (checked shallowly: the fields upstream
requires), optional node affinity (required for ``local`` volumes), and keeps its source, volume mode and node
affinity for life. A claim asks for storage and may select volumes by label or name a data source; once bound,
only its storage request (and volume attributes class) may change, and never below the capacity the status
reports.

Invariants
    * Read through a :data:`~.reader.CORE_V1` reader, every validator ends with :func:`~.reader.finish`.
    * "Did the spec change" is core/v1 semantic equality (:func:`.common.normalize`), and a refusal shows the
      change as :func:`.common.spec_diff` lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import (
    IMMUTABLE_MSG,
    check_enum,
    invalid_each,
    normalize,
    spec_diff,
    validate_immutable_field,
)
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import CORE_V1, Reader, finish, parse_quantity
from kubeplane.api.validation.resources import validate_resource_quantity_value
from kubeplane.api.validation.selectors import check_label_selector, check_node_selector
from kubeplane.api.validation.storage_csi import validate_csi_driver_name

__all__ = [
    "validate_persistent_volume",
    "validate_persistent_volume_claim",
    "validate_persistent_volume_claim_status_update",
    "validate_persistent_volume_claim_update",
    "validate_persistent_volume_update",
]

_ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_VOLUME_MODES: Final = ("Block", "Filesystem")
_PV_SOURCES: Final = (
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("flexVolume", None),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
)  # fmt: skip  (flexVolume: upstream counts it without the "more than 1" check)


def _access_modes(spec: Reader, *, required_detail: str) -> None:
    modes = spec.strings("accessModes")
    if not modes:
        spec.errs.append(field.required(spec.at("accessModes"), required_detail))
    for mode in modes:
        if mode not in _ACCESS_MODES:
            spec.errs.append(field.not_supported(spec.at("accessModes"), mode, supported=_ACCESS_MODES))
    known = [m for m in modes if m in _ACCESS_MODES]
    if "ReadWriteOncePod" in known and any(m != "ReadWriteOncePod" for m in known):
        detail = "may not use ReadWriteOncePod with other access modes"
        spec.errs.append(field.forbidden(spec.at("accessModes"), detail))


def _class_name(spec: Reader, key: str) -> None:
    value = spec.string(key)
    if value:
        spec.errs.extend(invalid_each(spec.at(key), value, names.is_dns1123_subdomain(value)))


def validate_persistent_volume(pv: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePersistentVolumeSpec`` (not inline): capacity, access modes, one source, affinity."""
    errs: ErrorList = []
    spec = CORE_V1.root(pv, errs).child("spec")
    _access_modes(spec, required_detail="")
    capacity = spec.quantities("capacity")
    if not spec.data.get("capacity"):
        errs.append(field.required(spec.at("capacity")))
    if "storage" not in capacity or len(capacity) > 1:
        shown = {k: str(q) for k, q in capacity.items()}
        errs.append(field.not_supported(spec.at("capacity"), shown, supported=("storage",)))
    for name, q in capacity.items():
        at = spec.at("capacity").key(name)
        if q.value() < 0:
            errs.append(field.invalid(at, q.value(), detail="must be a valid resource quantity"))
        if q.sign() <= 0:
            errs.append(field.invalid(at, str(q), detail="must be greater than zero"))
    check_enum(spec, "persistentVolumeReclaimPolicy", ("Delete", "Recycle", "Retain"), required=False)
    affinity = spec.mapping("nodeAffinity")
    if affinity is not None:
        required = affinity.mapping("required")
        if required is None:
            errs.append(field.required(affinity.at("required"), "must specify required node constraints"))
        else:
            check_node_selector(required)
    count = 0
    for source_key, error_key in _PV_SOURCES:
        source = spec.mapping(source_key)
        if source is None:
            continue
        if count and error_key is not None:
            errs.append(field.forbidden(spec.at(error_key), "may not specify more than 1 volume type"))
            continue
        count += 1
        if source_key in ("hostPath", "local") and not source.string("path"):
            errs.append(field.required(source.at("path")))
        if source_key == "local" and affinity is None:
            errs.append(field.required(spec.at("nodeAffinity"), "Local volume requires node affinity"))
        if source_key == "csi":  # validateCSIPersistentVolumeSource: the driver name, then the handle
            errs.extend(validate_csi_driver_name(source.string("driver"), source.at("driver")))
            if not source.string("volumeHandle"):
                errs.append(field.required(source.at("volumeHandle")))
    if count == 0:
        errs.append(field.required(field.new_path("spec"), "must specify a volume type"))
    host_path = spec.child("hostPath").string("path")
    if host_path.rstrip("/") == "" and host_path and spec.string("persistentVolumeReclaimPolicy") == "Recycle":
        detail = "may not be 'recycle' for a hostPath mount of '/'"
        errs.append(field.forbidden(spec.at("persistentVolumeReclaimPolicy"), detail))
    _class_name(spec, "storageClassName")
    check_enum(spec, "volumeMode", _VOLUME_MODES, required=False)
    return finish(errs)


def validate_persistent_volume_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePersistentVolumeUpdate``: the source, volume mode and node affinity are fixed."""
    errs: ErrorList = []
    spec, old_spec = CORE_V1.root(new, errs).child("spec"), CORE_V1.root(old, []).child("spec")
    keys = [key for key, _ in _PV_SOURCES]
    new_source = normalize({k: spec.data.get(k) for k in keys})
    old_source = normalize({k: old_spec.data.get(k) for k in keys})
    csi, old_csi = new_source.get("csi"), old_source.get("csi")
    if isinstance(csi, dict) and isinstance(old_csi, dict) and "controllerExpandSecretRef" not in old_csi:
        csi.pop("controllerExpandSecretRef", None)  # may be set once
    if new_source != old_source:
        detail = "spec.persistentvolumesource is immutable after creation\n" + spec_diff(old_source, new_source, "spec")
        errs.append(field.forbidden(field.new_path("spec", "persistentvolumesource"), detail))
    errs.extend(
        validate_immutable_field(
            spec.data.get("volumeMode"), old_spec.data.get("volumeMode"), field.new_path("volumeMode")
        )
    )
    if old_spec.has("nodeAffinity") and normalize(spec.data.get("nodeAffinity")) != normalize(
        old_spec.data.get("nodeAffinity")
    ):
        detail = IMMUTABLE_MSG + ", except for updating from beta label to GA"
        errs.append(field.invalid(field.new_path("nodeAffinity"), spec.data.get("nodeAffinity"), detail=detail))
    return finish(errs + validate_persistent_volume(new))


def _data_source(spec: Reader, key: str) -> None:
    source = spec.mapping(key)
    if source is None:
        return
    for k in ("name", "kind"):
        if not source.string(k):
            spec.errs.append(field.required(source.at(k)))
    group = source.string("apiGroup")
    if not group and source.string("kind") != "PersistentVolumeClaim":
        detail = "must be 'PersistentVolumeClaim' when referencing the default apiGroup"
        spec.errs.append(field.invalid(source.path, source.string("kind"), detail=detail))
    if group:
        spec.errs.extend(invalid_each(source.at("apiGroup"), group, names.is_dns1123_subdomain(group)))


_REF_KEYS: Final = ("apiGroup", "kind", "name")


def _pvc_spec(spec: Reader) -> None:
    """Upstream ``ValidatePersistentVolumeClaimSpec``."""
    _access_modes(spec, required_detail="at least 1 access mode is required")
    selector = spec.mapping("selector")
    if selector is not None:
        check_label_selector(selector)
    at = spec.at("resources").key("storage")
    storage = spec.child("resources").quantities("requests").get("storage")
    if storage is None:
        spec.errs.append(field.required(at))
    elif storage.sign() <= 0:
        spec.errs.append(field.invalid(at, str(storage), detail="must be greater than zero"))
    else:
        spec.errs.extend(validate_resource_quantity_value("storage", storage, at))
    _class_name(spec, "storageClassName")
    check_enum(spec, "volumeMode", _VOLUME_MODES, required=False)
    _data_source(spec, "dataSource")
    _data_source(spec, "dataSourceRef")
    source, ref = spec.mapping("dataSource"), spec.mapping("dataSourceRef")
    if ref is not None and ref.string("namespace"):
        if source is not None:
            detail = "may not be specified when dataSourceRef.namespace is specified"
            spec.errs.append(field.invalid(spec.path, str(spec.at("dataSource")), detail=detail))
    elif source is not None and ref is not None and any(source.string(k) != ref.string(k) for k in _REF_KEYS):
        spec.errs.append(field.invalid(spec.path, str(spec.at("dataSource")), detail="must match dataSourceRef"))


def validate_persistent_volume_claim(pvc: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    _pvc_spec(CORE_V1.root(pvc, errs).child("spec"))
    return finish(errs)


def validate_persistent_volume_claim_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePersistentVolumeClaimUpdate`` (RecoverVolumeExpansionFailure on): the spec is fixed
    but for the storage request of a bound claim, a volume name set once, a class set from nil."""
    errs: ErrorList = []
    root, old_root = CORE_V1.root(new, errs), CORE_V1.root(old, [])
    spec, old_spec = root.child("spec"), old_root.child("spec")
    munged = {**spec.data}
    if not old_spec.string("volumeName"):
        munged["volumeName"] = old_spec.data.get("volumeName")
    if not old_spec.has("storageClassName") and spec.has("storageClassName"):
        annotations = old_root.child("metadata").child("annotations").data
        beta = annotations.get("volume.beta.kubernetes.io/storage-class")
        if beta is None or beta == spec.data["storageClassName"]:
            munged["storageClassName"] = None
    bound = root.child("status").string("phase") == "Bound"
    resources = spec.child("resources").data
    old_resources = old_spec.child("resources").data
    if bound and isinstance(resources.get("requests"), Mapping):
        requests = {**resources["requests"]}
        old_requests = old_resources.get("requests")
        requests["storage"] = old_requests.get("storage") if isinstance(old_requests, Mapping) else None
        munged["resources"] = {**resources, "requests": requests}
    if bound and spec.has("volumeAttributesClassName"):
        munged["volumeAttributesClassName"] = old_spec.data.get("volumeAttributesClassName")
    new_norm, old_norm = normalize(munged), normalize(old_spec.data)
    if new_norm != old_norm:
        detail = (
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
        )
        errs.append(field.forbidden(field.new_path("spec"), detail + "\n" + spec_diff(old_norm, new_norm, "spec")))
    size = spec.child("resources").quantities("requests").get("storage")
    old_size = old_spec.child("resources").quantities("requests").get("storage")
    status_size = old_root.child("status").child("capacity").data.get("storage")
    if size is not None and old_size is not None and size < old_size:
        status_q = parse_quantity(status_size)
        if size.sign() <= 0 if status_q is None else size <= status_q:  # a missing capacity reads as 0
            at = field.new_path("spec", "resources", "requests", "storage")
            errs.append(field.forbidden(at, "field can not be less than status.capacity"))
    errs.extend(
        validate_immutable_field(
            spec.data.get("volumeMode"), old_spec.data.get("volumeMode"), field.new_path("volumeMode")
        )
    )
    return finish(errs + validate_persistent_volume_claim(new))


def validate_persistent_volume_claim_status_update(new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidatePersistentVolumeClaimStatusUpdate``: access modes present, capacities not negative."""
    errs: ErrorList = []
    root = CORE_V1.root(new, errs)
    if not root.child("spec").strings("accessModes"):
        errs.append(field.required(field.new_path("Spec", "accessModes")))  # sic, upstream
    status = root.child("status")
    for name, q in status.quantities("capacity").items():
        if q.value() < 0:
            errs.append(
                field.invalid(status.at("capacity").key(name), q.value(), detail="must be a valid resource quantity")
            )
    return finish(errs)
