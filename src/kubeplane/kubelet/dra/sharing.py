"""Shared devices in the node config (DRAConsumableCapacity, beta and on in v1.37): a device group's
``allowMultipleAllocations`` and its capacities' ``requestPolicy``, checked as upstream's ResourceSlice validation
and the ``CapacityRequestPolicy`` API rules check them, so a config the API would refuse fails at load with one
line instead of at publish time.

A capacity is either a quantity (``memory: 40Gi``) or ``{value, requestPolicy}``::

    allowMultipleAllocations: true       # the device may be allocated to several claims at once
    capacity:
      memory:
        value: 40Gi
        requestPolicy:                   # only with allowMultipleAllocations
          default: 10Gi                  # what a request without a memory entry consumes
          validRange: {min: 5Gi, step: 5Gi, max: 40Gi}   # or validValues: [10Gi, 20Gi, 40Gi]

Invariants: the policy rules are the API server's (:func:`kubeplane.api.validation.resource_dra_devices.
capacity_errors`, upstream ``validateRequestPolicy``), so a config loads iff the API would accept its slice; the
first error is reported, with upstream's path and message under the capacity's name. Only the shape (which keys
a policy and a range take) is checked here first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.quantity import Quantity, QuantityError, parse_quantity
from kubeplane.api.validation import field
from kubeplane.api.validation.resource_dra_devices import CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS, capacity_errors

__all__ = ["MAX_VALID_VALUES", "SharingError", "parse_capacity"]

MAX_VALID_VALUES: Final = CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS
"""Upstream CapacityRequestPolicyDiscreteMaxOptions."""


class SharingError(ValueError):
    """A capacity entry that cannot be used (the caller prefixes the node group)."""


def _quantity(where: str, value: Any) -> Quantity:
    try:
        return parse_quantity(str(value))
    except QuantityError as exc:
        raise SharingError(f"{where}: {exc}") from None


def _policy(where: str, raw: Any, total: Any, shared: bool) -> dict[str, Any]:
    """The policy as the API holds it, after upstream's rules (:func:`capacity_errors`, the API server's own)."""
    if not isinstance(raw, Mapping) or set(raw) - {"default", "validValues", "validRange"}:
        raise SharingError(f"{where}: requestPolicy takes default, and validValues or validRange")
    valid_range = raw.get("validRange")
    if valid_range is not None and (not isinstance(valid_range, Mapping) or set(valid_range) - {"min", "max", "step"}):
        raise SharingError(f"{where}: validRange takes min, max and step")
    values = raw.get("validValues")
    if values is not None and not isinstance(values, list):
        raise SharingError(f"{where}: validValues must list quantities")
    out: dict[str, Any] = {k: str(v) for k, v in raw.items() if k == "default" and v is not None}
    if values is not None:
        out["validValues"] = [str(v) for v in values]
    if valid_range is not None:
        out["validRange"] = {k: str(v) for k, v in valid_range.items() if v is not None}
    errs = capacity_errors(str(total), out, field.new_path("requestPolicy"), shared)
    if errs:
        raise SharingError(f"{where}: {errs[0]}")
    return out


def parse_capacity(where: str, raw: Any, shared: bool) -> dict[str, Any]:
    """An API ``DeviceCapacity`` from a config value: a quantity, or ``{value, requestPolicy}``; ``where`` names
    the capacity in errors, ``shared`` is the group's ``allowMultipleAllocations``."""
    if not isinstance(raw, Mapping):
        _quantity(where, raw)
        return {"value": str(raw)}
    if set(raw) - {"value", "requestPolicy"} or raw.get("value") is None:
        raise SharingError(f"{where}: give a quantity, or value and an optional requestPolicy")
    _quantity(where, raw["value"])
    out: dict[str, Any] = {"value": str(raw["value"])}
    if raw.get("requestPolicy") is not None:
        out["requestPolicy"] = _policy(where, raw["requestPolicy"], raw["value"], shared)
    return out
