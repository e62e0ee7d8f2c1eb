"""Validation of the CSI kinds of storage.k8s.io/v1: CSIDriver, CSINode, CSIStorageCapacity and VolumeAttachment,
as kube-apiserver's ``pkg/apis/storage/validation/validation.go`` (v1.37) and the registry strategies of
``pkg/registry/storage/{csidriver,csinode,csistoragecapacity,volumeattachment}/strategy.go`` call it.

StorageClass is in :mod:`.cluster`; PersistentVolume and PersistentVolumeClaim in :mod:`.storage`. The API server
loads this module by name (``strategies._VALIDATION_MODULES``) and looks validators up by ``(group, kind)`` in the
three tables at the bottom.

Invariants
    * Read through a :data:`~.reader.NAMED_GROUPS` reader: a wrong type is one ``TypeInvalid`` error, errors come
      in upstream's order; metadata is left to the API server's generic checks.
    * Gates at their v1.37 values: SELinuxMountReadWriteOncePod and MutableCSINodeAllocatableCount on (so
      ``seLinuxMount`` is required -- the defaulter sets it -- and a CSINode driver's ``allocatable`` may change).
    * Path quirks are upstream's: a CSIDriver's attachRequired is reported at ``spec.attachedRequired``.
    * A bad value that upstream passes as an internal struct (a CSINode driver, a VolumeAttachment spec) is shown
      as Go's json.Marshal shows it: Go field names, no JSON tags.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import (
    IMMUTABLE_MSG,
    CreateValidator,
    UpdateValidator,
    invalid_each,
    normalize,
    validate_nonnegative_field,
)
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader
from kubeplane.api.validation.selectors import read_label_selector, validate_label_selector

__all__ = [
    "CREATE_VALIDATORS",
    "STATUS_UPDATE_VALIDATORS",
    "UPDATE_VALIDATORS",
    "validate_csi_driver_name",
]

GROUP: Final = "storage.k8s.io"
CSI_NODE_ID_MAX_LENGTH: Final = 192
CSI_NODE_ID_LONGER_MAX_LENGTH: Final = 256
MAX_ATTACHED_VOLUME_METADATA_SIZE: Final = 256 * (1 << 10)
MAX_VOLUME_ERROR_MESSAGE_SIZE: Final = 1024
_FS_GROUP_POLICIES: Final = ("File", "None", "ReadWriteOnceWithFSType")  # sets.NewString(...).List(): sorted
_LIFECYCLE_MODES: Final = ("Persistent", "Ephemeral")
_NEGATIVE_QUANTITY: Final = "must be greater than or equal to 0"


def validate_csi_driver_name(name: str, path: Path) -> ErrorList:
    """core ``ValidateCSIDriverName``: required, at most 63 characters, a DNS-1123 subdomain once lower-cased."""
    errs: ErrorList = []
    if not name:
        errs.append(field.required(path))
    if len(name) > 63:
        errs.append(field.too_long(path, 63))
    errs.extend(invalid_each(path, name, names.is_dns1123_subdomain(name.lower())))
    return errs


def _qualified_name(value: str, path: Path) -> ErrorList:
    """core ``ValidateQualifiedName``."""
    return invalid_each(path, value, names.is_qualified_name(value))


# --- CSIDriver -----------------------------------------------------------------------------------------------


def _csi_driver_spec(spec: Reader) -> None:
    """Upstream ``validateCSIDriverSpec``."""
    errs = spec.errs
    for key, path_key in (("attachRequired", "attachedRequired"), ("podInfoOnMount", None), ("storageCapacity", None)):
        if spec.boolean(key) is None:
            errs.append(field.required(spec.at(path_key or key)))
    policy = spec.opt_string("fsGroupPolicy")
    if policy is not None and policy not in _FS_GROUP_POLICIES:
        errs.append(field.not_supported(spec.at("fsGroupPolicy"), policy, supported=_FS_GROUP_POLICIES))
    audiences: set[str] = set()
    for request in spec.each("tokenRequests"):
        audience = request.string("audience")
        if audience in audiences:
            errs.append(field.duplicate(request.at("audience"), audience))
            continue
        audiences.add(audience)
        seconds = request.integer("expirationSeconds", None, bits=64)
        if seconds is None:
            continue
        if seconds < 600:
            detail = "may not specify a duration less than 10 minutes"
            errs.append(field.invalid(request.at("expirationSeconds"), seconds, detail=detail))
        if seconds > 1 << 32:
            detail = "may not specify a duration larger than 2^32 seconds"
            errs.append(field.invalid(request.at("expirationSeconds"), seconds, detail=detail))
    for mode in spec.strings("volumeLifecycleModes"):
        if mode not in _LIFECYCLE_MODES:
            errs.append(field.not_supported(spec.at("volumeLifecycleModes"), mode, supported=_LIFECYCLE_MODES))
    if spec.boolean("seLinuxMount") is None:
        errs.append(field.required(spec.at("seLinuxMount")))
    period = spec.integer("nodeAllocatableUpdatePeriodSeconds", None, bits=64)
    if period is not None and period < 10:
        detail = "must be greater than or equal to 10 seconds"
        errs.append(field.invalid(spec.at("nodeAllocatableUpdatePeriodSeconds"), period, detail=detail))
    spec.boolean("requiresRepublish")


def _csi_driver(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateCSIDriver`` (the name is a DNS subdomain: the generic metadata check)."""
    errs: ErrorList = []
    _csi_driver_spec(NAMED_GROUPS.root(obj, errs).child("spec"))
    return errs


def validate_csi_driver(obj: Mapping[str, Any]) -> ErrorList:
    """The strategy's Validate, which runs ``ValidateCSIDriver`` twice (so each error is a cause twice; the
    message's aggregate shows it once)."""
    return _csi_driver(obj) * 2


def validate_csi_driver_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The strategy's ``ValidateCSIDriver`` + ``ValidateCSIDriverUpdate``: the spec checks twice over (upstream
    runs validateCSIDriverSpec in both), then attachRequired and volumeLifecycleModes are immutable."""
    errs = _csi_driver(new) * 2
    spec, old_spec = NAMED_GROUPS.root(new, []).child("spec"), NAMED_GROUPS.root(old, []).child("spec")
    for key, path_key in (("attachRequired", "attachedRequired"), ("volumeLifecycleModes", None)):
        value = spec.raw(key)
        if normalize(value) != normalize(old_spec.raw(key)):
            errs.append(field.invalid(field.new_path("spec", path_key or key), value, detail=IMMUTABLE_MSG))
    return errs


# --- CSINode -------------------------------------------------------------------------------------------------


def _long_node_id(node_id: str) -> bool:
    """Upstream ``CSINodeLongerID``: longer than the old 128-character limit."""
    return len(node_id) > 128


def _csi_node_driver(driver: Reader, seen: set[str], *, allow_long_node_id: bool) -> None:
    """Upstream ``validateCSINodeDriver``."""
    errs = driver.errs
    name = driver.string("name")
    errs.extend(validate_csi_driver_name(name, driver.at("name")))
    node_id = driver.string("nodeID")
    if not node_id:
        errs.append(field.required(driver.at("nodeID")))
    max_length = CSI_NODE_ID_LONGER_MAX_LENGTH if allow_long_node_id else CSI_NODE_ID_MAX_LENGTH
    if len(node_id) > max_length:
        errs.append(field.invalid(driver.at("nodeID"), node_id, detail=f"must be {max_length} characters or less"))
    allocatable = driver.mapping("allocatable")
    count = allocatable.integer("count", None, bits=32) if allocatable is not None else None
    if allocatable is not None and count is not None:
        errs.extend(validate_nonnegative_field(count, allocatable.at("count")))
    if name in seen:
        errs.append(field.duplicate(driver.at("name"), name))
    seen.add(name)
    keys: set[str] = set()
    for key in driver.strings("topologyKeys"):
        if not key:
            errs.append(field.required(driver.path))
        if key in keys:
            errs.append(field.duplicate(driver.path, key))
        keys.add(key)
        errs.extend(_qualified_name(key, driver.path or field.new_path("spec")))


def _internal_driver(driver: Reader) -> dict[str, Any]:
    """The bad value upstream prints: json.Marshal of the internal ``storage.CSINodeDriver`` (no JSON tags, so Go
    field names) with ``Allocatable`` cleared for the comparison."""
    return {
        "Name": driver.string("name"),
        "NodeID": driver.string("nodeID"),
        "TopologyKeys": driver.raw("topologyKeys"),
        "Allocatable": None,
    }


def _validate_csi_node(obj: Mapping[str, Any], *, allow_long_node_id: bool) -> ErrorList:
    errs: ErrorList = []
    seen: set[str] = set()
    for driver in NAMED_GROUPS.root(obj, errs).child("spec").each("drivers"):
        _csi_node_driver(driver, seen, allow_long_node_id=allow_long_node_id)
    return errs


def validate_csi_node(obj: Mapping[str, Any]) -> ErrorList:
    """The strategy's create: ``ValidateCSINode`` with AllowLongNodeID false (node IDs of at most 192)."""
    return _validate_csi_node(obj, allow_long_node_id=False)


def validate_csi_node_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The strategy's update: long node IDs (256) allowed only if the old object already had one; then
    ``ValidateCSINodeUpdate``: a driver present before and after keeps every field but ``allocatable``
    (MutableCSINodeAllocatableCount), reported as ``spec.drivers: Invalid value: ...: field is immutable``."""
    old_drivers = NAMED_GROUPS.root(old, []).child("spec").items("drivers")
    allow_long = any(_long_node_id(d.string("nodeID")) for d in old_drivers)
    errs = _validate_csi_node(new, allow_long_node_id=allow_long) * 2  # the strategy's, then the update's own
    new_drivers = NAMED_GROUPS.root(new, []).child("spec").items("drivers")
    for old_driver in old_drivers:
        for new_driver in new_drivers:
            if old_driver.string("name") != new_driver.string("name"):
                continue
            before = {k: v for k, v in old_driver.data.items() if k != "allocatable"}
            after = {k: v for k, v in new_driver.data.items() if k != "allocatable"}
            if normalize(before) != normalize(after):
                path = field.new_path("spec", "drivers")
                errs.append(field.invalid(path, _internal_driver(new_driver), detail=IMMUTABLE_MSG))
    return errs


# --- CSIStorageCapacity --------------------------------------------------------------------------------------


def _validate_capacity(obj: Mapping[str, Any], *, allow_invalid_label_value: bool) -> ErrorList:
    """Upstream ``ValidateCSIStorageCapacity``: nodeTopology a label selector, storageClassName a class name (a
    DNS subdomain, required by it: an empty name is invalid), capacity not negative."""
    errs: ErrorList = []
    root = NAMED_GROUPS.root(obj, errs)
    selector = read_label_selector(root, "nodeTopology")
    errs.extend(
        validate_label_selector(
            selector, field.new_path("nodeTopology"), allow_invalid_label_value=allow_invalid_label_value
        )
    )
    class_name = root.string("storageClassName")
    errs.extend(invalid_each(root.at("storageClassName"), class_name, names.is_dns1123_subdomain(class_name)))
    capacity = root.quantity("capacity")
    if capacity is not None and capacity.sign() < 0:
        errs.append(field.invalid(root.at("capacity"), str(capacity), detail=_NEGATIVE_QUANTITY))
    root.quantity("maximumVolumeSize")
    return errs


def validate_csi_storage_capacity(obj: Mapping[str, Any]) -> ErrorList:
    return _validate_capacity(obj, allow_invalid_label_value=False)


def _has_invalid_label_value(selector: Mapping[str, Any] | None) -> bool:
    """``ValidationOptionsForStorage``: the old selector already held a label value that is not valid now."""
    if not selector:
        return False
    values = list((selector.get("matchLabels") or {}).values())
    for expr in selector.get("matchExpressions") or ():
        values.extend(expr.get("values") or ())
    return any(names.is_valid_label_value(str(v)) for v in values)


def validate_csi_storage_capacity_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """``ValidateCSIStorageCapacity`` then ``ValidateCSIStorageCapacityUpdate``: the inputs of CSI GetCapacity
    (nodeTopology, storageClassName) are immutable."""
    old_root = NAMED_GROUPS.root(old, [])
    old_selector = read_label_selector(old_root, "nodeTopology")
    errs = _validate_capacity(new, allow_invalid_label_value=_has_invalid_label_value(old_selector))
    root = NAMED_GROUPS.root(new, [])
    if normalize(root.raw("nodeTopology")) != normalize(old_root.raw("nodeTopology")):
        shown = read_label_selector(root, "nodeTopology")  # Go's JSON form of the *metav1.LabelSelector
        errs.append(field.invalid(field.new_path("nodeTopology"), shown, detail=IMMUTABLE_MSG))
    if root.string("storageClassName") != old_root.string("storageClassName"):
        value = root.string("storageClassName")
        errs.append(field.invalid(field.new_path("storageClassName"), value, detail=IMMUTABLE_MSG))
    return errs


# --- VolumeAttachment ----------------------------------------------------------------------------------------


def _inline_volume_spec(inline: Reader) -> None:
    """``ValidatePersistentVolumeSpec`` with validateInlinePersistentVolumeSpec: access modes required, no
    claimRef, no capacity, a ``csi`` source."""
    errs = inline.errs
    if not inline.strings("accessModes"):
        errs.append(field.required(inline.at("accessModes")))
    if inline.has("claimRef"):
        errs.append(field.forbidden(inline.at("claimRef"), "may not be specified in the context of inline volumes"))
    if inline.raw("capacity"):
        errs.append(field.forbidden(inline.at("capacity"), "may not be specified in the context of inline volumes"))
    csi = inline.mapping("csi")
    if csi is None:
        errs.append(field.required(inline.at("csi"), "has to be specified in the context of inline volumes"))
    else:
        errs.extend(validate_csi_driver_name(csi.string("driver"), csi.at("driver")))
        if not csi.string("volumeHandle"):
            errs.append(field.required(csi.at("volumeHandle")))


def _volume_error(status: Reader, key: str) -> None:
    """Upstream ``validateVolumeError`` (the TooLong bound shown is upstream's: the metadata size)."""
    error = status.mapping(key)
    if error is None:
        return
    if len(error.string("message").encode()) > MAX_VOLUME_ERROR_MESSAGE_SIZE:
        status.errs.append(field.too_long(error.at("message"), MAX_ATTACHED_VOLUME_METADATA_SIZE))
    code = error.integer("errorCode", None, bits=32)
    if code is not None and code < 0:
        detail = names.inclusive_range_error(0, 2**31 - 1)
        status.errs.append(field.invalid(error.at("errorCode"), code, detail=detail))
    error.time("time")


def _volume_attachment(obj: Mapping[str, Any], errs: ErrorList) -> None:
    """Upstream ``ValidateVolumeAttachment``: spec (attacher, source, nodeName) and status."""
    root = NAMED_GROUPS.root(obj, errs)
    spec = root.child("spec")
    if not spec.string("attacher"):
        errs.append(field.required(spec.at("attacher")))
    source = spec.child("source")
    inline, pv_name = source.mapping("inlineVolumeSpec"), source.opt_string("persistentVolumeName")
    exactly_one = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    if inline is None and pv_name is None:
        errs.append(field.required(source.path, exactly_one))
    elif inline is not None and pv_name is not None:
        errs.append(field.forbidden(source.path, exactly_one))
    elif pv_name is not None:
        if not pv_name:
            detail = "must specify non empty persistentVolumeName"
            errs.append(field.required(source.at("persistentVolumeName"), detail))
    elif inline is not None:
        _inline_volume_spec(inline)
    node = spec.string("nodeName")
    errs.extend(invalid_each(spec.at("nodeName"), node, names.is_dns1123_subdomain(node)))
    status = root.child("status")
    metadata = status.string_map("attachmentMetadata")
    if sum(len(k.encode()) + len(v.encode()) for k, v in metadata.items()) > MAX_ATTACHED_VOLUME_METADATA_SIZE:
        errs.append(field.too_long(status.at("attachmentMetadata"), MAX_ATTACHED_VOLUME_METADATA_SIZE))
    _volume_error(status, "attachError")
    _volume_error(status, "detachError")
    status.boolean("attached")


def validate_volume_attachment(obj: Mapping[str, Any]) -> ErrorList:
    """The strategy's create: ``ValidateVolumeAttachment`` then ``ValidateVolumeAttachmentV1`` (the attacher a
    CSI driver name, a PV name a DNS subdomain)."""
    errs: ErrorList = []
    _volume_attachment(obj, errs)
    spec = NAMED_GROUPS.root(obj, []).child("spec")
    errs.extend(validate_csi_driver_name(spec.string("attacher"), field.new_path("spec.attacher")))
    pv_name = spec.child("source").opt_string("persistentVolumeName")
    if pv_name is not None:
        path = field.new_path("spec.source.persistentVolumeName")
        errs.extend(invalid_each(path, pv_name, names.is_dns1123_subdomain(pv_name)))
    return errs


def _internal_spec(obj: Mapping[str, Any]) -> dict[str, Any]:
    """json.Marshal of the internal ``storage.VolumeAttachmentSpec`` (Go field names; an inline volume spec is
    shown in its JSON form, not rebuilt)."""
    spec = NAMED_GROUPS.root(obj, []).child("spec")
    source = spec.child("source")
    return {
        "Attacher": spec.string("attacher"),
        "Source": {
            "PersistentVolumeName": source.opt_string("persistentVolumeName"),
            "InlineVolumeSpec": source.raw("inlineVolumeSpec"),
        },
        "NodeName": spec.string("nodeName"),
    }


def validate_volume_attachment_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """``ValidateVolumeAttachment`` (twice: the strategy's and ValidateVolumeAttachmentUpdate's own) and the
    read-only spec: ``spec: Invalid value: ...: field is immutable``."""
    errs: ErrorList = []
    _volume_attachment(new, errs)
    errs *= 2
    spec, old_spec = new.get("spec"), old.get("spec")
    if normalize(spec) != normalize(old_spec):
        errs.append(field.invalid(field.new_path("spec"), _internal_spec(new), detail=IMMUTABLE_MSG))
    return errs


def validate_volume_attachment_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """The status strategy embeds the main one and so keeps its ValidateUpdate; the spec is the stored one
    (PrepareForUpdate), so only the status checks can fail."""
    return validate_volume_attachment_update(new, old)


# --- the registry's tables -----------------------------------------------------------------------------------

CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    (GROUP, "CSIDriver"): validate_csi_driver,
    (GROUP, "CSINode"): validate_csi_node,
    (GROUP, "CSIStorageCapacity"): validate_csi_storage_capacity,
    (GROUP, "VolumeAttachment"): validate_volume_attachment,
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "CSIDriver"): validate_csi_driver_update,
    (GROUP, "CSINode"): validate_csi_node_update,
    (GROUP, "CSIStorageCapacity"): validate_csi_storage_capacity_update,
    (GROUP, "VolumeAttachment"): validate_volume_attachment_update,
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "VolumeAttachment"): validate_volume_attachment_status_update,
}
