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

Invariants (upstream ``CapacityRequestPolicy`` / ``CapacityRequestPolicyRange`` docs): a policy needs
``allowMultipleAllocations``; at most one of ``validValues`` and ``validRange``, and with either a ``default``;
``validValues`` has 1 to 10 entries in strictly ascending order and contains the default; ``validRange.min`` is
required, ``0 <= min <= value``, ``max <= value``, ``min <= default <= max``, ``min + step <= value``, and default
and max are multiples of step (whole units, as the allocator counts them).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.quantity import Quantity, QuantityError, parse_quantity

__all__ = ["MAX_VALID_VALUES", "SharingError", "parse_capacity"]

MAX_VALID_VALUES: Final = 10
"""Upstream CapacityRequestPolicyDiscreteMaxOptions."""


class SharingError(ValueError):
    """A capacity entry that cannot be used (the caller prefixes the node group)."""


def _quantity(where: str, value: Any) -> Quantity:
    try:
        return parse_quantity(str(value))
    except QuantityError as exc:
        raise SharingError(f"{where}: {exc}") from None


def _range(where: str, raw: Any, total: Quantity, default: Quantity) -> dict[str, str]:
    if not isinstance(raw, Mapping) or set(raw) - {"min", "max", "step"}:
        raise SharingError(f"{where}: validRange takes min, max and step")
    if raw.get("min") is None:
        raise SharingError(f"{where}: validRange needs min")
    lo = _quantity(f"{where} validRange min", raw["min"])
    if lo < Quantity(0) or lo > total:
        raise SharingError(f"{where}: validRange min must be between 0 and the capacity value {total}")
    if default < lo:
        raise SharingError(f"{where}: default must be at least validRange min")
    out = {"min": str(raw["min"])}
    hi = None
    if raw.get("max") is not None:
        hi = _quantity(f"{where} validRange max", raw["max"])
        if hi > total or hi < lo or default > hi:
            raise SharingError(
                f"{where}: validRange max must be at most the capacity value and at least min and default"
            )
        out["max"] = str(raw["max"])
    if raw.get("step") is not None:
        step = _quantity(f"{where} validRange step", raw["step"])
        if step.value() <= 0 or lo + step > total:
            raise SharingError(f"{where}: validRange step must be positive and min + step at most the capacity value")
        for what, q in (("default", default), ("max", hi)):
            if q is not None and q.value() % step.value():
                raise SharingError(f"{where}: {what} must be a multiple of validRange step")
        out["step"] = str(raw["step"])
    return out


def _policy(where: str, raw: Any, total: Quantity) -> dict[str, Any]:
    if not isinstance(raw, Mapping) or set(raw) - {"default", "validValues", "validRange"}:
        raise SharingError(f"{where}: requestPolicy takes default, and validValues or validRange")
    if raw.get("validValues") is not None and raw.get("validRange") is not None:
        raise SharingError(f"{where}: requestPolicy takes validValues or validRange, not both")
    out: dict[str, Any] = {}
    default = None
    if raw.get("default") is not None:
        default = _quantity(f"{where} default", raw["default"])
        out["default"] = str(raw["default"])
    if (raw.get("validValues") is not None or raw.get("validRange") is not None) and default is None:
        raise SharingError(f"{where}: requestPolicy with validValues or validRange needs a default")
    if raw.get("validValues") is not None:
        values = raw["validValues"]
        if not isinstance(values, list) or not 1 <= len(values) <= MAX_VALID_VALUES:
            raise SharingError(f"{where}: validValues must list 1 to {MAX_VALID_VALUES} quantities")
        parsed = [_quantity(f"{where} validValues", v) for v in values]
        if any(b <= a for a, b in itertools.pairwise(parsed)):
            raise SharingError(f"{where}: validValues must be in ascending order without repeats")
        if default not in parsed:
            raise SharingError(f"{where}: default must be one of validValues")
        out["validValues"] = [str(v) for v in values]
    if raw.get("validRange") is not None:
        assert default is not None
        out["validRange"] = _range(where, raw["validRange"], total, default)
    return out


def parse_capacity(where: str, raw: Any, shared: bool) -> dict[str, Any]:
    """An API ``DeviceCapacity`` from a config value: a quantity, or ``{value, requestPolicy}``; ``where`` names
    the capacity in errors, ``shared`` is the group's ``allowMultipleAllocations``."""
    if not isinstance(raw, Mapping):
        _quantity(where, raw)
        return {"value": str(raw)}
    if set(raw) - {"value", "requestPolicy"} or raw.get("value") is None:
        raise SharingError(f"{where}: give a quantity, or value and an optional requestPolicy")
    total = _quantity(where, raw["value"])
    out: dict[str, Any] = {"value": str(raw["value"])}
    if raw.get("requestPolicy") is not None:
        if not shared:
            raise SharingError(f"{where}: requestPolicy needs allowMultipleAllocations: true")
        out["requestPolicy"] = _policy(where, raw["requestPolicy"], total)
    return out
