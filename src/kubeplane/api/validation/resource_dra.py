"""Validation of resource.k8s.io/v1: DeviceClass, ResourceClaim (and its status), ResourceClaimTemplate and
ResourceSlice, as kube-apiserver's ``pkg/apis/resource/validation/validation.go`` (v1.37) and the strategies of
``pkg/registry/resource/{deviceclass,resourceclaim,resourceclaimtemplate,resourceslice}/strategy.go`` call it.

The API server loads this module by name (``strategies._VALIDATION_MODULES``) and looks validators up by
``(group, kind)`` in the three tables at the bottom. Invariants:

* CEL selectors are compiled at admission through :mod:`kubeplane.api.dra.cel`: a compile error is upstream's
  ``spec...selectors[i].cel.expression: Invalid value: "<expr>": compilation failed: ERROR: ...``, an expression
  longer than CELSelectorExpressionMaxLength is ``Too long`` (not compiled), one whose estimated worst-case cost
  exceeds CELSelectorExpressionMaxCost is ``Forbidden: too complex, exceeds cost limit``;
* a ResourceClaim's and a ResourceClaimTemplate's spec are immutable after create (only that is checked on update);
* a claim's status: ``reservedFor`` entries complete and unique by uid, at most 256, and only with an allocation;
  an allocation, once set, is immutable;
* a ResourceSlice names exactly one of ``nodeName``, ``nodeSelector``, ``allNodes``, ``perDeviceNodeSelection``;
  each device attribute holds exactly one value; a device has at most 32 attributes and capacities.

Not checked here (left to the generic metadata checks or not modelled): declarative-only rules beyond those listed,
device taints' and tolerations' details. The admin-access namespace label is checked by the API server
(:mod:`kubeplane.apiserver.dra_admin`), which can read namespaces. Binding conditions, request policies
and share IDs are checked in :mod:`.resource_dra_devices`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.dra.cel import CEL_SELECTOR_EXPRESSION_MAX_COST, SelectorCompileError, compile_selector
from kubeplane.api.validation import field, names
from kubeplane.api.validation import resource_dra_devices as devices_
from kubeplane.api.validation.common import (
    IMMUTABLE_MSG,
    CreateValidator,
    UpdateValidator,
    invalid_each,
    normalize,
)
from kubeplane.api.validation.field import ErrorList, GoSyntax, Path
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader
from kubeplane.api.validation.resources import is_extended_resource_name
from kubeplane.api.validation.storage_csi import validate_csi_driver_name

__all__ = ["CREATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS", "UPDATE_VALIDATORS", "validate_cel_selector"]

GROUP: Final = "resource.k8s.io"
DEVICE_REQUESTS_MAX_SIZE: Final = 32
DEVICE_SELECTORS_MAX_SIZE: Final = 32
DEVICE_CONSTRAINTS_MAX_SIZE: Final = 32
DEVICE_CONFIG_MAX_SIZE: Final = 32
FIRST_AVAILABLE_MAX_SIZE: Final = 8
CEL_SELECTOR_EXPRESSION_MAX_LENGTH: Final = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH: Final = 10 * 1024
RESERVED_FOR_MAX_SIZE: Final = 256
SLICE_MAX_DEVICES: Final = 128
SLICE_MAX_DEVICES_ADVANCED: Final = 64  # ResourceSliceMaxDevicesWithAdvancedFeatures: taints or counters
MAX_ATTRIBUTES_AND_CAPACITIES: Final = 32
POOL_NAME_MAX_LENGTH: Final = 253
DEVICE_MAX_DOMAIN_LENGTH: Final = 63
DEVICE_MAX_ID_LENGTH: Final = 32
ATTRIBUTE_MAX_VALUE_LENGTH: Final = 64
DEVICE_TAINTS_MAX_LENGTH: Final = 16
SLICE_MAX_COUNTER_SETS: Final = 8
COUNTERS_PER_COUNTER_SET: Final = 32
COUNTER_CONSUMPTIONS_PER_DEVICE: Final = 2
ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS: Final = 8
_ALLOCATION_MODES: Final = ("All", "ExactCount")
_REQUEST_REF: Final = (
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
)
_NODE_FIELDS: Final = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
_SEMVER: Final = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


def _label(value: str, path: Path) -> ErrorList:
    """core ``ValidateDNS1123Label`` (device, request and counter names)."""
    return invalid_each(path, value, names.is_dns1123_label(value))


def _subdomain(value: str, path: Path) -> ErrorList:
    return invalid_each(path, value, names.is_dns1123_subdomain(value))


def _too_many(errs: ErrorList, r: Reader, key: str, maximum: int) -> None:
    count = len(r.array(key))
    if count > maximum:
        errs.append(field.too_many(r.at(key), actual=count, maximum=maximum))


# --- taints and tolerations -----------------------------------------------------------------------------------

_TOLERATION_OPERATORS: Final = ("Equal", "Exists")
_TAINT_EFFECTS: Final = ("NoExecute", "NoSchedule", "None")  # sets.List(validDeviceTaintEffects): sorted


def _label_name(key: str, path: Path) -> ErrorList:
    """metav1validation ``ValidateLabelName``: a qualified name."""
    return invalid_each(path, key, names.is_qualified_name(key))


def _label_value(value: str, path: Path) -> ErrorList:
    return invalid_each(path, value, names.is_valid_label_value(value))


def _tolerations(r: Reader) -> None:
    """``validateDeviceToleration`` for each of ``r``'s tolerations."""
    for toleration in r.each("tolerations"):
        errs = toleration.errs
        key, value = toleration.string("key"), toleration.string("value")
        if key:
            errs.extend(_label_name(key, toleration.at("key")))
        operator = toleration.string("operator")
        if operator == "Exists":
            if value:
                detail = "must be empty for operator `Exists`"
                errs.append(field.invalid(toleration.at("value"), value, detail=detail))
        elif operator == "Equal":
            errs.extend(_label_value(value, toleration.at("value")))
        elif not operator:
            errs.append(field.required(toleration.at("operator")))
        else:
            errs.append(field.not_supported(toleration.at("operator"), operator, supported=_TOLERATION_OPERATORS))
        effect = toleration.string("effect")
        if effect and effect not in _TAINT_EFFECTS:
            errs.append(field.not_supported(toleration.at("effect"), effect, supported=_TAINT_EFFECTS))


def _taints(device: Reader) -> None:
    """``validateDeviceTaint`` for each of a slice device's taints (at most 16)."""
    _too_many(device.errs, device, "taints", DEVICE_TAINTS_MAX_LENGTH)
    for taint in device.each("taints"):
        errs = taint.errs
        errs.extend(_label_name(taint.string("key"), taint.at("key")))
        value = taint.string("value")
        if value:
            errs.extend(_label_value(value, taint.at("value")))
        effect = taint.string("effect")
        if not effect:
            errs.append(field.required(taint.at("effect")))
        elif effect not in _TAINT_EFFECTS:
            errs.append(field.not_supported(taint.at("effect"), effect, supported=_TAINT_EFFECTS))


# --- selectors and CEL -----------------------------------------------------------------------------------------


def validate_cel_selector(expression: str, path: Path) -> ErrorList:
    """``validateCELExpression`` for a new expression (NewExpressions environment)."""
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [field.too_long(path, CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    try:
        compiled = compile_selector(expression)
    except SelectorCompileError as exc:
        return [field.invalid(path, expression, detail=exc.message)]
    if compiled.max_cost > CEL_SELECTOR_EXPRESSION_MAX_COST:
        return [field.forbidden(path, "too complex, exceeds cost limit")]
    return []


def _selectors(r: Reader, key: str) -> None:
    _too_many(r.errs, r, key, DEVICE_SELECTORS_MAX_SIZE)
    for selector in r.each(key):
        cel = selector.mapping("cel")
        if cel is None:
            r.errs.append(field.required(selector.at("cel")))
            continue
        r.errs.extend(validate_cel_selector(cel.string("expression"), cel.at("expression")))


def _device_class_name(r: Reader) -> None:
    name = r.string("deviceClassName")
    if not name:
        r.errs.append(field.required(r.at("deviceClassName")))
    else:
        r.errs.extend(_subdomain(name, r.at("deviceClassName")))


def _allocation_mode(r: Reader) -> None:
    mode = r.string("allocationMode")
    count = r.integer("count", 0, bits=64) or 0
    if mode == "All":
        if count != 0:
            detail = "must not be specified when allocationMode is 'All'"
            r.errs.append(field.invalid(r.at("count"), count, detail=detail))
    elif mode == "ExactCount":
        if count <= 0:
            r.errs.append(field.invalid(r.at("count"), count, detail="must be greater than zero"))
    else:
        r.errs.append(field.not_supported(r.at("allocationMode"), mode, supported=_ALLOCATION_MODES))


def _exact_request(r: Reader) -> None:
    """``validateExactDeviceRequest`` / ``validateDeviceSubRequest`` (after the sub-request's name)."""
    _device_class_name(r)
    _selectors(r, "selectors")
    _allocation_mode(r)
    _tolerations(r)
    _capacity_requests(r)


def _capacity_requests(r: Reader) -> None:
    """``capacity.requests`` of a request (consumable capacity): qualified names, parsable quantities."""
    capacity = r.mapping("capacity")
    if capacity is None:
        return
    for key in sorted(capacity.child("requests").data):
        r.errs.extend(_qualified_key(key, capacity.at("requests").key(key)))
    capacity.quantities("requests")


def _request_names(spec: Reader) -> dict[str, set[str] | None]:
    out: dict[str, set[str] | None] = {}
    for request in spec.with_errs([]).each("requests"):
        subs = [s.string("name") for s in request.each("firstAvailable")]
        out[request.string("name")] = set(subs) if subs else None
    return out


def _request_ref(name: str, path: Path, known: Mapping[str, set[str] | None]) -> ErrorList:
    """``validateRequestNameRef``."""
    segments = name.split("/")
    if len(segments) > 2:
        return [field.invalid(path, name, detail=_REQUEST_REF)]
    errs: ErrorList = []
    for segment in segments:
        errs.extend(_label(segment, path))
    subs = known.get(segments[0], ...)
    ok = subs is not ... and (len(segments) == 1 or (isinstance(subs, set) and segments[1] in subs))
    if not ok:
        errs.append(field.invalid(path, name, detail=_REQUEST_REF))
    return errs


def _request_refs(r: Reader, known: Mapping[str, set[str] | None]) -> None:
    _too_many(r.errs, r, "requests", DEVICE_REQUESTS_MAX_SIZE)
    seen: set[str] = set()
    for i, name in enumerate(r.strings("requests")):
        path = r.at("requests").index(i)
        r.errs.extend(_request_ref(name, path, known))
        if name in seen:
            r.errs.append(field.duplicate(path, name))
        seen.add(name)


def _opaque(r: Reader) -> None:
    """``validateDeviceConfiguration``: ``opaque`` required, its driver a CSI driver name, parameters bounded."""
    opaque = r.mapping("opaque")
    if opaque is None:
        r.errs.append(field.required(r.at("opaque")))
        return
    r.errs.extend(validate_csi_driver_name(opaque.string("driver"), opaque.at("driver")))
    parameters = opaque.raw("parameters")
    if parameters is None:
        r.errs.append(field.required(opaque.at("parameters")))
    elif len(json.dumps(parameters, separators=(",", ":"))) > OPAQUE_PARAMETERS_MAX_LENGTH:
        r.errs.append(field.too_long(opaque.at("parameters"), OPAQUE_PARAMETERS_MAX_LENGTH))


def _qualified_attribute(name: str, path: Path) -> ErrorList:
    """``validateFullyQualifiedName``: a domain (DNS subdomain of at most 63) and a C identifier of at most 32."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return [field.invalid(path, name, detail="must include a domain")]
    return _domain_and_id(domain, ident, path)


def _domain_and_id(domain: str, ident: str, path: Path) -> ErrorList:
    errs: ErrorList = []
    if not domain:
        errs.append(field.required(path, "the domain must not be empty"))
    else:
        errs.extend(invalid_each(path, domain, names.is_dns1123_subdomain(domain)))
        if len(domain) > DEVICE_MAX_DOMAIN_LENGTH:
            errs.append(field.too_long(path, DEVICE_MAX_DOMAIN_LENGTH))
    errs.extend(_identifier(ident, path))
    return errs


def _identifier(ident: str, path: Path) -> ErrorList:
    errs = invalid_each(path, ident, names.is_c_identifier(ident))
    if len(ident) > DEVICE_MAX_ID_LENGTH:
        errs.append(field.too_long(path, DEVICE_MAX_ID_LENGTH))
    return errs


def _device_claim(devices: Reader) -> None:
    """``validateDeviceClaim``: requests (exactly one of ``exactly``/``firstAvailable``), constraints, config."""
    errs = devices.errs
    known = _request_names(devices)
    _too_many(errs, devices, "requests", DEVICE_REQUESTS_MAX_SIZE)
    seen: set[str] = set()
    for request in devices.each("requests"):
        name = request.string("name")
        errs.extend(_label(name, request.at("name")))
        if name in seen:
            errs.append(field.duplicate(request.at("name"), name))
        seen.add(name)
        has_first = bool(request.array("firstAvailable"))
        exactly = request.mapping("exactly")
        if not has_first and exactly is None:
            errs.append(field.required(request.path, "exactly one of `exactly` or `firstAvailable` is required"))
        elif has_first and exactly is not None:
            detail = "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
            errs.append(field.invalid(request.path, None, detail=detail))
        elif has_first:
            _too_many(errs, request, "firstAvailable", FIRST_AVAILABLE_MAX_SIZE)
            sub_seen: set[str] = set()
            for sub in request.each("firstAvailable"):
                sub_name = sub.string("name")
                errs.extend(_label(sub_name, sub.at("name")))
                if sub_name in sub_seen:
                    errs.append(field.duplicate(sub.at("name"), sub_name))
                sub_seen.add(sub_name)
                _exact_request(sub)
        elif exactly is not None:
            _exact_request(exactly)
    _too_many(errs, devices, "constraints", DEVICE_CONSTRAINTS_MAX_SIZE)
    for constraint in devices.each("constraints"):
        _request_refs(constraint, known)
        match, distinct = constraint.opt_string("matchAttribute"), constraint.opt_string("distinctAttribute")
        if match is not None:
            errs.extend(_qualified_attribute(match, constraint.at("matchAttribute")))
        elif distinct is not None:
            errs.extend(_qualified_attribute(distinct, constraint.at("distinctAttribute")))
        else:
            detail = 'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set'
            errs.append(field.required(constraint.path, detail))
    _too_many(errs, devices, "config", DEVICE_CONFIG_MAX_SIZE)
    for config in devices.each("config"):
        _request_refs(config, known)
        _opaque(config)


# --- DeviceClass -----------------------------------------------------------------------------------------------


def _device_class(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> ErrorList:
    """``validateDeviceClassSpec``: selectors (compiled unless unchanged from ``old``: upstream's ``stored``),
    config (opaque), extendedResourceName."""
    errs: ErrorList = []
    spec = NAMED_GROUPS.root(obj, errs).child("spec")
    old_selectors = NAMED_GROUPS.root(old, []).child("spec").raw("selectors") if old is not None else None
    if old is not None and normalize(spec.raw("selectors")) == normalize(old_selectors):
        _too_many(errs, spec, "selectors", DEVICE_SELECTORS_MAX_SIZE)
    else:
        _selectors(spec, "selectors")
    _too_many(errs, spec, "config", DEVICE_CONFIG_MAX_SIZE)
    for config in spec.each("config"):
        _opaque(config)
    extended = spec.opt_string("extendedResourceName")
    if extended is not None and not is_extended_resource_name(extended):
        detail = "must be a valid extended resource name"
        errs.append(field.invalid(spec.at("extendedResourceName"), extended, detail=detail))
    return errs


def validate_device_class(obj: Mapping[str, Any]) -> ErrorList:
    return _device_class(obj, None)


def validate_device_class_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    return _device_class(new, old)


# --- ResourceClaim and ResourceClaimTemplate -------------------------------------------------------------------


def validate_resource_claim(obj: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    _device_claim(NAMED_GROUPS.root(obj, errs).child("spec").child("devices"))
    return errs


def _immutable_spec(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    if normalize(new.get("spec")) == normalize(old.get("spec")):
        return []
    return [field.invalid(field.new_path("spec"), new.get("spec"), detail=IMMUTABLE_MSG)]


def validate_resource_claim_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """``ValidateResourceClaimUpdate``: only the spec's immutability."""
    return _immutable_spec(new, old)


def validate_resource_claim_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """``validateResourceClaimStatusUpdate``: reservedFor entries and invariants, allocation immutability."""
    errs: ErrorList = []
    status = NAMED_GROUPS.root(new, errs).child("status")
    old_status = NAMED_GROUPS.root(old, []).child("status")
    _too_many(errs, status, "reservedFor", RESERVED_FOR_MAX_SIZE)
    uids: set[str] = set()
    for ref in status.each("reservedFor"):
        for key in ("resource", "name", "uid"):
            if not ref.string(key):
                errs.append(field.required(ref.at(key)))
        uid = ref.string("uid")
        if uid and uid in uids:
            errs.append(field.duplicate(ref.path, ref.raw("uid")))
        uids.add(uid)
    allocation, old_allocation = status.raw("allocation"), old_status.raw("allocation")
    _devices_status(status, allocation)
    if status.array("reservedFor") and allocation is None:
        errs.append(field.forbidden(status.at("reservedFor"), "may not be specified when `allocated` is not set"))
    if allocation is not None and old_allocation is not None:
        if normalize(allocation) != normalize(old_allocation):
            errs.append(field.invalid(status.at("allocation"), allocation, detail=IMMUTABLE_MSG))
    elif allocation is not None:
        known = _request_names(NAMED_GROUPS.root(new, []).child("spec").child("devices"))
        results = status.child("allocation").child("devices")
        for result in results.each("results"):
            errs.extend(_request_ref(result.string("request"), result.at("request"), known))
            errs.extend(validate_csi_driver_name(result.string("driver"), result.at("driver")))
            _pool_name(result, "pool")
            errs.extend(_label(result.string("device"), result.at("device")))
            devices_.binding_parameters(result)
            devices_.share_id(result)
    return errs


def _device_id(r: Reader) -> str:
    """structured ``SharedDeviceID.String()``: driver/pool/device, then /shareID when shared."""
    parts = [r.string("driver"), r.string("pool"), r.string("device")]
    share = r.opt_string("shareID")
    return "/".join(parts + ([share] if share else []))


def _devices_status(status: Reader, allocation: Any) -> None:
    """``validateDeviceStatus`` for each ``status.devices`` entry: a driver, pool and device that the
    allocation holds, unique, at most 8 conditions."""
    errs = status.errs
    allocated: set[str] = set()
    if isinstance(allocation, Mapping):
        results = NAMED_GROUPS.root(allocation, []).child("devices").each("results")
        allocated = {_device_id(result) for result in results}
    seen: set[str] = set()
    for device in status.each("devices"):
        errs.extend(validate_csi_driver_name(device.string("driver"), device.at("driver")))
        _pool_name(device, "pool")
        errs.extend(_label(device.string("device"), device.at("device")))
        devices_.share_id(device)
        ident = _device_id(device)
        if ident not in allocated:
            errs.append(field.invalid(device.path, GoSyntax(ident), detail="must be an allocated device in the claim"))
        if ident in seen:
            errs.append(field.duplicate(device.path, GoSyntax(ident)))
        seen.add(ident)
        conditions = len(device.array("conditions"))
        if conditions > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS:
            maximum = ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS
            errs.append(field.too_many(device.at("conditions"), actual=conditions, maximum=maximum))


def validate_resource_claim_template(obj: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    _device_claim(NAMED_GROUPS.root(obj, errs).child("spec").child("spec").child("devices"))
    return errs


# --- ResourceSlice ---------------------------------------------------------------------------------------------


def _pool_name(r: Reader, key: str) -> None:
    name = r.string(key)
    if not name:
        r.errs.append(field.required(r.at(key)))
        return
    if len(name) > POOL_NAME_MAX_LENGTH:
        r.errs.append(field.too_long(r.at(key), POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        r.errs.extend(_subdomain(part, r.at(key)))


def _attribute(attr: Reader, path: Path) -> None:
    """``validateDeviceAttribute``: exactly one of bool, int, string (at most 64), version (semver)."""
    present = [k for k in ("bool", "int", "string", "version") if attr.raw(k) is not None]
    if "string" in present and len(attr.string("string")) > ATTRIBUTE_MAX_VALUE_LENGTH:
        attr.errs.append(field.too_long(path.child("string"), ATTRIBUTE_MAX_VALUE_LENGTH))
    if "version" in present:
        version = attr.string("version")
        if not _SEMVER.match(version):
            detail = "must be a string compatible with semver.org spec 2.0.0"
            attr.errs.append(field.invalid(path.child("version"), version, detail=detail))
        if len(version) > ATTRIBUTE_MAX_VALUE_LENGTH:
            attr.errs.append(field.too_long(path.child("version"), ATTRIBUTE_MAX_VALUE_LENGTH))
    if not present:
        attr.errs.append(field.required(path, "exactly one value must be specified"))
    elif len(present) > 1:
        attr.errs.append(field.invalid(path, dict(attr.data), detail="exactly one value must be specified"))


def _qualified_key(name: str, path: Path) -> ErrorList:
    """``validateQualifiedName`` of an attribute or capacity key: an identifier, or a domain and identifier."""
    if not name:
        return [field.required(path, "name required")]
    parts = name.split("/")
    if len(parts) == 1:
        return _identifier(parts[0], path)
    if len(parts) == 2:
        return _domain_and_id(parts[0], parts[1], path)
    return [field.invalid(path, name, detail="must be either <domain>/<identifier> or a C identifier")]


def _device(device: Reader, per_device_node_selection: bool, old_device: object = None) -> None:
    """A slice device; ``old_device``: the stored slice's device of the same name (an update), else None."""
    errs = device.errs
    old_capacity = old_device.get("capacity") if isinstance(old_device, Mapping) else None
    if not isinstance(old_capacity, Mapping):
        old_capacity = {}
    errs.extend(_label(device.string("name"), device.at("name")))
    attributes = device.child("attributes")
    capacity = device.child("capacity")
    total = len(device.raw("attributes") or {}) + len(device.raw("capacity") or {})
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        detail = f"the total number of attributes and capacities must not exceed {MAX_ATTRIBUTES_AND_CAPACITIES}"
        errs.append(field.invalid(device.path, total, detail=detail))
    for key in sorted(attributes.data):
        path = device.at("attributes").key(key)
        errs.extend(_qualified_key(key, path))
        _attribute(attributes.child(key), path)
    for key in sorted(capacity.data):
        path = device.at("capacity").key(key)
        errs.extend(_qualified_key(key, path))
        entry = capacity.child(key)
        if entry.raw("value") is None:
            errs.append(field.required(path.child("value")))
        else:
            entry.quantity("value")
        old_entry = old_capacity.get(key)
        old_policy = old_entry.get("requestPolicy") if isinstance(old_entry, Mapping) else None
        multi = device.raw("allowMultipleAllocations") is True
        devices_.capacity_policy(entry, path, multi, old_policy=old_policy)
    _taints(device)
    _consumes_counters(device)
    if per_device_node_selection:
        _node_fields(
            device,
            ("nodeName", "nodeSelector", "allNodes"),
            "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required",
        )
    devices_.binding_parameters(device)


def _node_fields(r: Reader, keys: tuple[str, ...], message: str) -> list[str]:
    errs = r.errs
    chosen: list[str] = []
    node_name = r.opt_string("nodeName")
    if "nodeName" in keys and node_name is not None:
        if node_name:
            chosen.append("`nodeName`")
            errs.extend(_subdomain(node_name, r.at("nodeName")))
        else:
            detail = "must be either unset or set to a non-empty string"
            errs.append(field.invalid(r.at("nodeName"), node_name, detail=detail))
    selector = r.mapping("nodeSelector")
    if "nodeSelector" in keys and selector is not None:
        chosen.append("`nodeSelector`")
        terms = selector.raw("nodeSelectorTerms") or []
        if len(terms) != 1:
            detail = "must have exactly one node selector term"
            errs.append(field.invalid(selector.at("nodeSelectorTerms"), terms, detail=detail))
    for key in ("allNodes", "perDeviceNodeSelection"):
        value = r.boolean(key) if key in keys else None
        if value is True:
            chosen.append(f"`{key}`")
        elif value is False:
            errs.append(field.invalid(r.at(key), False, detail="must be either unset or set to true"))
    if not chosen:
        errs.append(field.required(r.path, message))
    elif len(chosen) > 1:
        errs.append(
            field.invalid(r.path, "{" + ", ".join(chosen) + "}", detail=message + ", but multiple fields are set")
        )
    return chosen


def _counters(r: Reader, maximum: int) -> None:
    """A map of counter name (DNS label) to ``{value: quantity}``: required, at most ``maximum`` entries."""
    counters = r.mapping("counters")
    if counters is None or not counters.data:
        r.errs.append(field.required(r.at("counters")))
        return
    if len(counters.data) > maximum:
        r.errs.append(field.too_many(r.at("counters"), actual=len(counters.data), maximum=maximum))
    for name in sorted(counters.data):
        path = r.at("counters").key(name)
        r.errs.extend(_label(name, path))
        entry = counters.child(name)
        if entry.raw("value") is None:
            r.errs.append(field.required(path.child("value")))
        else:
            entry.quantity("value")


def _named_counter_lists(parent: Reader, key: str, name_key: str, limit: int) -> None:
    """At most ``limit`` items of ``parent[key]``, each named by ``name_key`` (required, a DNS label, unique) and
    holding at most COUNTERS_PER_COUNTER_SET counters: what ``validateCounterSet`` and
    ``validateDeviceCounterConsumption`` both check."""
    _too_many(parent.errs, parent, key, limit)
    seen: set[str] = set()
    for item in parent.each(key):
        name = item.string(name_key)
        if not name:
            parent.errs.append(field.required(item.at(name_key)))
        else:
            parent.errs.extend(_label(name, item.at(name_key)))
            if name in seen:
                parent.errs.append(field.duplicate(item.at(name_key), name))
            seen.add(name)
        _counters(item, COUNTERS_PER_COUNTER_SET)


def _counter_sets(spec: Reader) -> None:
    """``validateCounterSet`` for each of ``sharedCounters`` (at most 8, unique names)."""
    _named_counter_lists(spec, "sharedCounters", "name", SLICE_MAX_COUNTER_SETS)


def _consumes_counters(device: Reader) -> None:
    """``validateDeviceCounterConsumption`` for each of a device's ``consumesCounters`` (at most 2)."""
    _named_counter_lists(device, "consumesCounters", "counterSet", COUNTER_CONSUMPTIONS_PER_DEVICE)


def _slice_spec(spec: Reader, old_spec: Reader | None) -> None:
    errs = spec.errs
    errs.extend(validate_csi_driver_name(spec.string("driver"), spec.at("driver")))
    pool = spec.child("pool")
    _pool_name(pool, "name")
    count = pool.integer("resourceSliceCount", 0, bits=64) or 0
    if count <= 0:
        errs.append(field.invalid(pool.at("resourceSliceCount"), count, detail="must be greater than zero"))
    generation = pool.integer("generation", 0, bits=64) or 0
    if generation < 0:
        detail = "must be greater than or equal to zero"
        errs.append(field.invalid(pool.at("generation"), generation, detail=detail))
    if old_spec is not None:
        for key, path in (
            (("pool", "name"), field.new_path("spec", "pool", "name")),
            (("driver",), field.new_path("spec", "driver")),
            (("nodeName",), field.new_path("spec", "nodeName")),
        ):
            new_value, old_value = _dig(spec, key), _dig(old_spec, key)
            if normalize(new_value) != normalize(old_value):
                errs.append(field.invalid(path, new_value, detail=IMMUTABLE_MSG))
    keys = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
    _node_fields(spec, keys, _NODE_FIELDS)
    if spec.raw("sharedCounters") is not None and spec.raw("devices") is not None:
        errs.append(field.invalid(spec.path, "", detail="only one of `sharedCounters` or `devices` is allowed"))
    advanced = any(
        isinstance(d, Mapping) and (d.get("taints") or d.get("consumesCounters")) for d in spec.array("devices")
    )
    _too_many(errs, spec, "devices", SLICE_MAX_DEVICES_ADVANCED if advanced else SLICE_MAX_DEVICES)
    per_device = spec.raw("perDeviceNodeSelection") is True
    old_devices = {
        d.get("name"): d for d in (old_spec.array("devices") if old_spec is not None else []) if isinstance(d, Mapping)
    }
    seen: set[str] = set()
    for device in spec.each("devices"):
        name = device.string("name")
        if name in seen:
            errs.append(field.duplicate(device.at("name"), name))
        seen.add(name)
        _device(device, per_device, old_devices.get(name))
    _counter_sets(spec)


def _dig(r: Reader, keys: tuple[str, ...]) -> Any:
    value: Any = r.raw(keys[0])
    for key in keys[1:]:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def validate_resource_slice(obj: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    _slice_spec(NAMED_GROUPS.root(obj, errs).child("spec"), None)
    return errs


def validate_resource_slice_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    errs: ErrorList = []
    _slice_spec(NAMED_GROUPS.root(new, errs).child("spec"), NAMED_GROUPS.root(old, []).child("spec"))
    return errs


CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    (GROUP, "DeviceClass"): validate_device_class,
    (GROUP, "ResourceClaim"): validate_resource_claim,
    (GROUP, "ResourceClaimTemplate"): validate_resource_claim_template,
    (GROUP, "ResourceSlice"): validate_resource_slice,
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "DeviceClass"): validate_device_class_update,
    (GROUP, "ResourceClaim"): validate_resource_claim_update,
    (GROUP, "ResourceClaimTemplate"): _immutable_spec,
    (GROUP, "ResourceSlice"): validate_resource_slice_update,
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "ResourceClaim"): validate_resource_claim_status_update,
}
