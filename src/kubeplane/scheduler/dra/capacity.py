"""Consumable capacity (DRAConsumableCapacity, beta and on in v1.37; upstream ``internal/incubating/
consumable_capacity.go``): a request's ``capacity.requests`` against a device's ``capacity`` entries and their
``requestPolicy``.

Invariants (each as upstream's function of the same name):

* ``requestsContainNonExistCapacity``: a request naming a capacity the device lacks -- by its exact key, no
  domain resolution -- does not fit the device (skip the device, not an error);
* ``calculateConsumedCapacity``: an unset request consumes the policy's ``default``, else the whole value; a set
  one without policy consumes itself; ``validRange`` (with ``min``) rounds up to ``min``, then to ``min + k*step``
  in whole units (``Quantity.Value()``, which rounds up; the result takes the step's format); ``validValues``
  rounds up to the first listed value at or above the request (the API keeps the list sorted);
* ``violatesPolicy``: the policy's ``default`` never violates; above ``validRange.max`` or off the step grid
  violates (``min`` is not checked: rounding already lifted the value); not one of ``validValues`` violates;
* ``CmpRequestOverCapacity``: what the device already has consumed, what this search has tentatively consumed and
  the request together must not exceed the value, for every capacity of the device.

Not modelled: v1.37's milli-unit range arithmetic for fractional ``min``/``max``/``step`` (DRAFractionalCapacityRange,
beta; its default is on only at compatibility version 1.37): ranges count whole units, which agrees with it
whenever the bounds are whole numbers (every quantity with a binary suffix is).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.quantity import Quantity

__all__ = ["consumed_capacity", "fits_capacity"]


def _q(value: Any) -> Quantity:
    return value if isinstance(value, Quantity) else Quantity.parse(value)


def _round_up_range(requested: Quantity, valid_range: Mapping[str, Any]) -> Quantity:
    lo = _q(valid_range["min"])
    if requested < lo:
        return lo
    if valid_range.get("step") is None:
        return requested
    step = _q(valid_range["step"])
    step_int, min_int = step.value(), lo.value()
    added = requested.value() - min_int
    n = added // step_int + (1 if added % step_int else 0)
    return Quantity.from_int(min_int + step_int * n, step.format)


def _round_up_valid_values(requested: Quantity, values: Any) -> Quantity:
    for v in values:
        q = _q(v)
        if requested <= q:
            return q
    return requested


def _calculate(requested: Quantity | None, capacity: Mapping[str, Any]) -> Quantity:
    policy = capacity.get("requestPolicy")
    if requested is None:
        if policy and policy.get("default") is not None:
            return _q(policy["default"])
        return _q(capacity.get("value", "0"))
    if not policy:
        return requested
    valid_range = policy.get("validRange")
    if valid_range and valid_range.get("min") is not None:
        return _round_up_range(requested, valid_range)
    if policy.get("validValues") is not None:
        return _round_up_valid_values(requested, policy["validValues"])
    return requested


def _violates(value: Quantity, policy: Mapping[str, Any] | None) -> bool:
    if not policy:
        return False
    if policy.get("default") is not None and value == _q(policy["default"]):
        return False
    valid_range = policy.get("validRange")
    if valid_range is not None:
        if valid_range.get("max") is not None and value > _q(valid_range["max"]):
            return True
        if valid_range.get("step") is not None:
            lo = _q(valid_range["min"]).value() if valid_range.get("min") is not None else 0
            return (value.value() - lo) % _q(valid_range["step"]).value() != 0
        return False
    values = policy.get("validValues")
    if values:
        return all(value != _q(v) for v in values)
    return False


def consumed_capacity(requests: Mapping[str, Any] | None, capacity: Mapping[str, Any]) -> dict[str, Quantity]:
    """Upstream ``GetConsumedCapacityFromRequest``: what allocating a share of the device consumes, for every
    capacity of the device (requests naming other capacities are ignored here; :func:`fits_capacity` refuses
    them first)."""
    requests = requests or {}
    return {name: _calculate(_q(requests[name]) if name in requests else None, cap) for name, cap in capacity.items()}


def fits_capacity(
    requests: Mapping[str, Any] | None,
    device: Mapping[str, Any],
    consumed_before: Mapping[str, Quantity],
    allocating: Mapping[str, Quantity],
) -> bool:
    """Upstream ``CmpRequestOverCapacity``."""
    capacity = device.get("capacity") or {}
    requests = requests or {}
    if any(name not in capacity for name in requests):
        return False
    for name, cap in capacity.items():
        value = _calculate(_q(requests[name]) if name in requests else None, cap)
        if _violates(value, cap.get("requestPolicy")):
            return False
        total = value + consumed_before.get(name, Quantity(0)) + allocating.get(name, Quantity(0))
        if total > _q(cap.get("value", "0")):
            return False
    return True
