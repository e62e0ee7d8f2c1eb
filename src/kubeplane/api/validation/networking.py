"""networking.k8s.io/v1 IPAddress and ServiceCIDR validation, as kube-apiserver v1.37's
``pkg/apis/networking/validation`` (``ValidateIPAddress``/``ValidateIPAddressUpdate``,
``ValidateServiceCIDR``/``ValidateServiceCIDRUpdate``/``ValidateServiceCIDRStatusUpdate``).

The rules
    * IPAddress: the name is an IP in canonical form (``ValidateIPAddressName``, applied by the generic metadata
      check through :attr:`~kubeplane.api.meta.NameRule.IP_ADDRESS`); ``spec.parentRef`` is required, with a
      ``resource`` and a ``name`` (path-segment names), an optional ``namespace`` (a path-segment name) and an
      optional ``group`` (a DNS subdomain: the core group is empty). An update may not change ``parentRef``.
    * ServiceCIDR: ``spec.cidrs`` holds one or two CIDRs, each in strict canonical form (``IsValidCIDR``), two of
      different families. An update keeps every CIDR, except that a single-stack ServiceCIDR may gain a second
      CIDR (single to dual stack, issues.k8s.io/131261). The status subresource validates metadata only.

Invariants
    * Bad types in the body never raise: values that are not what the Go type holds read as absent.
    * Metadata is validated generically by the server; these functions return only the kind's own errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import meta
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import IMMUTABLE_MSG, CreateValidator, UpdateValidator, validate_immutable_field
from kubeplane.api.validation.field import ErrorList, Path

__all__ = [
    "CREATE_VALIDATORS",
    "STATUS_UPDATE_VALIDATORS",
    "UPDATE_VALIDATORS",
    "validate_ip_address",
    "validate_ip_address_update",
    "validate_service_cidr",
    "validate_service_cidr_update",
]

GROUP: Final = "networking.k8s.io"
_DUAL_STACK_MSG: Final = "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _path_segment(path: Path, value: str) -> ErrorList:
    return [field.invalid(path, value, detail=m) for m in meta.is_valid_path_segment_name(value)]


def validate_ip_address(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateIPAddress`` without the metadata: ``validateIPAddressParentReference``."""
    ref = _spec(obj).get("parentRef")
    spec_path = field.new_path("spec")
    if not isinstance(ref, Mapping):
        return [field.required(spec_path.child("parentRef"))]
    path = spec_path.child("parentRef")
    errs: ErrorList = []
    group = _str(ref.get("group"))
    if group:
        errs.extend(field.invalid(path.child("group"), group, detail=m) for m in names.is_dns1123_subdomain(group))
    for key in ("resource", "name"):
        value = _str(ref.get(key))
        if not value:
            errs.append(field.required(path.child(key)))
        else:
            errs.extend(_path_segment(path.child(key), value))
    namespace = _str(ref.get("namespace"))
    if namespace:
        errs.extend(_path_segment(path.child("namespace"), namespace))
    return errs


def validate_ip_address_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateIPAddressUpdate``: only ``spec.parentRef`` is checked, and only for immutability."""
    path = field.new_path("spec").child("parentRef")
    return validate_immutable_field(_spec(new).get("parentRef"), _spec(old).get("parentRef"), path)


def _cidrs(obj: Mapping[str, Any]) -> list[str]:
    value = _spec(obj).get("cidrs")
    return [_str(c) for c in value] if isinstance(value, list) else []


def _validate_spec(cidrs: list[str]) -> ErrorList:
    """Upstream ``validateServiceCIDRSpec`` at ``spec.cidrs``."""
    path = field.new_path("spec", "cidrs")
    if not cidrs:
        return [field.required(path, "at least one CIDR required")]
    if len(cidrs) > 2:
        return [field.invalid(path, {"cidrs": cidrs}, detail="may only hold up to 2 values")]
    errs: ErrorList = []
    for i, cidr in enumerate(cidrs):
        errs.extend(names.is_valid_cidr_strict(path.index(i), cidr))
    if len(cidrs) == 2:
        family = names.ip_family_of_cidr(cidrs[0])
        if family and family == names.ip_family_of_cidr(cidrs[1]):
            errs.append(field.invalid(path, cidrs, detail=_DUAL_STACK_MSG))
    return errs


def validate_service_cidr(obj: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateServiceCIDR`` without the metadata."""
    return _validate_spec(_cidrs(obj))


def validate_service_cidr_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateServiceCIDRUpdate``: the CIDRs stay, or one is added to a single-stack ServiceCIDR."""
    new_cidrs, old_cidrs = _cidrs(new), _cidrs(old)
    path = field.new_path("spec").child("cidrs")
    if len(new_cidrs) == len(old_cidrs):
        return [
            field.invalid(path.index(i), new_cidrs[i], detail=IMMUTABLE_MSG)
            for i, cidr in enumerate(old_cidrs)
            if cidr != new_cidrs[i]
        ]
    if len(old_cidrs) == 1 and len(new_cidrs) == 2:
        errs: ErrorList = []
        if new_cidrs[0] != old_cidrs[0]:
            errs.append(field.invalid(path.index(0), new_cidrs[0], detail=IMMUTABLE_MSG))
        return errs + _validate_spec(new_cidrs)
    return [field.invalid(path, new_cidrs, detail=IMMUTABLE_MSG)]


def _metadata_only(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateServiceCIDRStatusUpdate``: metadata only (checked generically)."""
    return []


CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    (GROUP, "IPAddress"): validate_ip_address,
    (GROUP, "ServiceCIDR"): validate_service_cidr,
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "IPAddress"): validate_ip_address_update,
    (GROUP, "ServiceCIDR"): validate_service_cidr_update,
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {(GROUP, "ServiceCIDR"): _metadata_only}
