"""Resource names and quantities, as upstream's ``pkg/apis/core/helper`` and ``validateResourceRequirements``.

Shared by containers (``resources``), the pod itself (pod-level ``resources`` and ``overhead``), nodes
(capacity and allocatable) and volumes (storage requests): which names are standard, native, extended or
integer-valued, whether a quantity is allowed for a name, and the requests-versus-limits rules.

Invariants
    * Quantities arrive parsed (:meth:`~.reader.Reader.quantities`); an unparsable one was already reported
      by the reader and never reaches these rules.
    * The name checks return every error upstream returns, in its order; an unknown bare container resource
      name gets both of upstream's errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.validation import field, names
from kubeplane.api.validation.common import NEGATIVE_MSG, invalid_each
from kubeplane.api.validation.field import Error, ErrorList, ErrorType, Path
from kubeplane.api.validation.reader import Reader

__all__ = [
    "HUGEPAGES_PREFIX",
    "is_extended_resource_name",
    "is_integer_resource",
    "is_overcommit_allowed",
    "is_standard_resource_name",
    "validate_container_resource_name",
    "validate_pod_resource_name",
    "validate_resource_name",
    "validate_resource_quantity_value",
    "validate_resource_requirements",
]

HUGEPAGES_PREFIX: Final = "hugepages-"

_STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_INTEGER_RESOURCES: Final = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
_STANDARD_RESOURCES: Final = (
    _STANDARD_CONTAINER_RESOURCES
    | _INTEGER_RESOURCES
    | frozenset(
        {
            "requests.cpu",
            "requests.memory",
            "requests.ephemeral-storage",
            "limits.cpu",
            "limits.memory",
            "limits.ephemeral-storage",
            "requests.storage",
        }
    )
)


def _is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    return not _is_native(name) and not name.startswith("requests.") and not names.is_qualified_name("requests." + name)


def is_extended_resource_name(name: str) -> bool:
    """Upstream ``IsExtendedResourceName``."""
    return _is_extended(name)


def is_overcommit_allowed(name: str) -> bool:
    """Native, non-hugepages resources may have requests below limits (upstream ``IsOvercommitAllowed``)."""
    return _is_native(name) and not name.startswith(HUGEPAGES_PREFIX)


def is_integer_resource(name: str) -> bool:
    """Counted resources and extended resources take whole numbers only (``IsIntegerResourceName``)."""
    return name in _INTEGER_RESOURCES or _is_extended(name)


def is_standard_resource_name(name: str) -> bool:
    """Upstream ``IsStandardResourceName`` (includes quota hugepages names)."""
    return name in _STANDARD_RESOURCES or name.startswith((HUGEPAGES_PREFIX, "requests." + HUGEPAGES_PREFIX))


def validate_resource_name(name: str, path: Path) -> ErrorList:
    """Upstream ``validateResourceName``: a qualified name, standard when not prefixed."""
    errs = invalid_each(path, name, names.is_qualified_name(name))
    if not errs and "/" not in name and not is_standard_resource_name(name):
        errs.append(field.invalid(path, name, detail="must be a standard resource type or fully qualified"))
    return errs


def validate_container_resource_name(name: str, path: Path) -> ErrorList:
    """Upstream ``validateContainerResourceName``; its two errors for an unknown bare name are both kept."""
    errs = validate_resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith(HUGEPAGES_PREFIX):
            errs.append(field.invalid(path, name, detail="must be a standard resource for containers"))
    elif not _is_native(name) and not _is_extended(name):
        errs.append(field.invalid(path, name, detail="doesn't follow extended resource name standard"))
    return errs


def validate_pod_resource_name(name: str, path: Path) -> ErrorList:
    """Upstream ``validatePodResourceName``: cpu, memory and hugepages only at pod level."""
    errs = validate_resource_name(name, path)
    if not errs and name not in ("cpu", "memory") and not name.startswith(HUGEPAGES_PREFIX):
        errs.append(field.not_supported(path, name, supported=("cpu", "memory")))
    return errs


def validate_resource_quantity_value(name: str, q: Quantity, path: Path) -> ErrorList:
    """Upstream ``ValidateResourceQuantityValue``: non-negative, and whole for integer resources."""
    errs: ErrorList = []
    if q.sign() < 0:
        errs.append(field.invalid(path, str(q), detail=NEGATIVE_MSG))
    if is_integer_resource(name) and q.milli_value() % 1000:
        errs.append(field.invalid(path, str(q), detail="must be an integer"))
    return errs


def _hugepage_error(name: str, q: Quantity) -> str | None:
    """Upstream ``validateResourceQuantityHugePageValue``: a whole number of pages of the named size."""
    try:
        page = Quantity.parse(name.removeprefix(HUGEPAGES_PREFIX))
    except QuantityError:
        page = None
    if page is None or page.sign() <= 0 or page.milli_value() % 1000 or q.value() % page.value():
        return f"{q} is not positive integer multiple of {name}"
    return None


def validate_resource_requirements(
    res: Reader, *, name_fn: Callable[[str, Path], ErrorList], claim_names: frozenset[str]
) -> None:
    """Upstream ``validateResourceRequirements``: names, quantities, requests <= limits, hugepages rules."""
    errs = res.errs
    limits, requests = res.quantities("limits"), res.quantities("requests")
    lim_path, req_path = res.at("limits"), res.at("requests")
    cpu_or_mem = hugepages = False
    for kind, values, path in (("limits", limits, lim_path), ("requests", requests, req_path)):
        for name, q in values.items():
            at = path.key(name)
            errs.extend(name_fn(name, at))
            errs.extend(validate_resource_quantity_value(name, q, at))
            if kind == "requests":
                limit = limits.get(name)
                if limit is not None:
                    if q != limit and not is_overcommit_allowed(name):
                        errs.append(field.invalid(req_path, str(q), detail=f"must be equal to {name} limit of {limit}"))
                    elif q > limit:
                        detail = f"must be less than or equal to {name} limit of {limit}"
                        errs.append(field.invalid(req_path, str(q), detail=detail))
                elif not is_overcommit_allowed(name):
                    errs.append(field.required(lim_path, "Limit must be set for non overcommitable resources"))
            if name.startswith(HUGEPAGES_PREFIX):
                hugepages = True
                msg = _hugepage_error(name, q)
                if msg:
                    errs.append(field.invalid(at, str(q), detail=msg))
            cpu_or_mem = cpu_or_mem or name in ("cpu", "memory")
    if hugepages and not cpu_or_mem:
        errs.append(field.forbidden(res.path, "HugePages require cpu or memory"))
    _validate_claim_refs(res, claim_names)


def _validate_claim_refs(res: Reader, claim_names: frozenset[str]) -> None:
    """Upstream ``validateResourceClaimNames``: each claim is named once and exists in the pod's claims."""
    seen: set[str] = set()
    for claim in res.items("claims"):
        at = claim.path
        assert at is not None
        name = claim.string("name")
        if not name:
            res.errs.append(field.required(at))
            continue
        if name in seen:
            res.errs.append(field.duplicate(at, name))
        else:
            key, request = name, claim.string("request")
            if request:
                res.errs.extend(invalid_each(claim.at("request"), request, names.is_dns1123_label(request)))
                key += "/" + request
            if key in seen:
                res.errs.append(field.duplicate(at, key))
            elif not request and any(k.partition("/")[0] == name for k in seen if "/" in k):
                res.errs.append(field.duplicate(at, name))
            seen.add(key)
        if name not in claim_names:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += ": " + ", ".join(sorted(claim_names)) if claim_names else " which is empty"
            res.errs.append(Error(ErrorType.NOT_FOUND, str(at), name, detail))
