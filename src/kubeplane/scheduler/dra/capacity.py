"""Consumable capacity (DRAConsumableCapacity, upstream ``consumable_capacity.go``): a request's
``capacity.requests`` against a device's ``capacity`` entries and their ``requestPolicy``.

Invariants: a request naming a capacity the device lacks does not fit the device (skip, not error); an unset request
consumes the policy's ``default`` or the whole value; ``validRange`` rounds up to ``min`` then to ``min + k*step``,
``validValues`` rounds up to the next listed value; a result outside the policy does not fit; the sum of what the
device already has consumed, what this search has tentatively consumed and the request must not exceed the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.quantity import Quantity

__all__ = ["consumed_capacity", "fits_capacity", "qualify"]


def qualify(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _resolve(request_name: str, driver: str, capacity: Mapping[str, Any]) -> str | None:
    """The device's capacity key a request name refers to (short names are the driver's domain)."""
    if request_name in capacity:
        return request_name
    domain, sep, ident = request_name.partition("/")
    if sep:
        return ident if domain == driver and ident in capacity else None
    qualified = f"{driver}/{request_name}"
    return qualified if qualified in capacity else None


def _round_up(requested: Quantity, policy: Mapping[str, Any]) -> Quantity:
    valid_range = policy.get("validRange")
    if valid_range and valid_range.get("min") is not None:
        lo = Quantity.parse(valid_range["min"])
        if requested <= lo:
            return lo
        step = valid_range.get("step")
        if step is None:
            return requested
        s = Quantity.parse(step).nanos
        k = -(-(requested.nanos - lo.nanos) // s)
        return Quantity(lo.nanos + k * s, lo.format)
    values = policy.get("validValues")
    if values:
        for v in sorted(Quantity.parse(x) for x in values):
            if v >= requested:
                return v
    return requested


def _violates(value: Quantity, policy: Mapping[str, Any] | None) -> bool:
    if not policy:
        return False
    values = policy.get("validValues")
    if values:
        return value not in {Quantity.parse(v) for v in values}
    valid_range = policy.get("validRange")
    if valid_range:
        if valid_range.get("min") is not None and value < Quantity.parse(valid_range["min"]):
            return True
        if valid_range.get("max") is not None and value > Quantity.parse(valid_range["max"]):
            return True
    return False


def consumed_capacity(
    requests: Mapping[str, Any] | None, driver: str, capacity: Mapping[str, Any]
) -> dict[str, Quantity] | None:
    """What allocating the device for ``requests`` consumes, keyed by the device's capacity names; None when the
    device lacks a requested capacity."""
    resolved: dict[str, Quantity] = {}
    for name, value in (requests or {}).items():
        key = _resolve(str(name), driver, capacity)
        if key is None:
            return None
        resolved[key] = Quantity.parse(value)
    out: dict[str, Quantity] = {}
    for name, cap in capacity.items():
        policy = cap.get("requestPolicy") or {}
        total = Quantity.parse(cap.get("value", "0"))
        if name in resolved:
            out[name] = _round_up(resolved[name], policy) if policy else resolved[name]
        elif policy.get("default") is not None:
            out[name] = Quantity.parse(policy["default"])
        else:
            out[name] = total
    return out


def fits_capacity(
    requests: Mapping[str, Any] | None,
    driver: str,
    device: Mapping[str, Any],
    consumed_before: Mapping[str, Quantity],
    allocating: Mapping[str, Quantity],
) -> bool:
    """Upstream ``CmpRequestOverCapacity``."""
    capacity = device.get("capacity") or {}
    consumed = consumed_capacity(requests, driver, capacity)
    if consumed is None:
        return False
    for name, cap in capacity.items():
        value = consumed[name]
        if _violates(value, cap.get("requestPolicy")):
            return False
        total = value + consumed_before.get(name, Quantity(0)) + allocating.get(name, Quantity(0))
        if total > Quantity.parse(cap.get("value", "0")):
            return False
    return True
