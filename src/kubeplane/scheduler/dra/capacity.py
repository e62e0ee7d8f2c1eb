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

DRAFractionalCapacityRange (beta, on in v1.37; ``fractional``): a range with a fractional ``min``, ``max`` or
``step`` (:func:`kubeplane.api.dra.capacity_range.use_milli`, the API server's own test) rounds and checks the step
grid in thousandths (``MilliValue()``, rounded up): ``250m`` on ``min 200m, step 100m`` consumes ``300m``; the
result takes the step's format, as a whole number when it is one (``NewQuantity``), else in milli units
(``NewMilliQuantity``). Other ranges count whole units as with the gate off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.dra.capacity_range import use_milli
from kubeplane.api.quantity import Quantity

__all__ = ["consumed_capacity", "fits_capacity"]


def _q(value: Any) -> Quantity:
    return value if isinstance(value, Quantity) else Quantity.parse(value)


def _opt(valid_range: Mapping[str, Any], key: str) -> Quantity | None:
    return _q(valid_range[key]) if valid_range.get(key) is not None else None


def _bounds(valid_range: Mapping[str, Any]) -> tuple[Quantity | None, Quantity | None, Quantity | None]:
    return _opt(valid_range, "min"), _opt(valid_range, "max"), _opt(valid_range, "step")


def _round_up_range(requested: Quantity, valid_range: Mapping[str, Any], fractional: bool) -> Quantity:
    lo = _q(valid_range["min"])
    if requested < lo:
        return lo
    if valid_range.get("step") is None:
        return requested
    step = _q(valid_range["step"])
    if use_milli(*_bounds(valid_range), enabled=fractional):
        step_milli, min_milli = step.milli_value(), lo.milli_value()
        added = requested.milli_value() - min_milli
        n = added // step_milli + (1 if added % step_milli else 0)
        total = min_milli + step_milli * n
        if total % 1000 == 0:
            return Quantity.from_int(total // 1000, step.format)
        return Quantity.from_milli(total, step.format)
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


def _calculate(requested: Quantity | None, capacity: Mapping[str, Any], fractional: bool) -> Quantity:
    policy = capacity.get("requestPolicy")
    if requested is None:
        if policy and policy.get("default") is not None:
            return _q(policy["default"])
        return _q(capacity.get("value", "0"))
    if not policy:
        return requested
    valid_range = policy.get("validRange")
    if valid_range and valid_range.get("min") is not None:
        return _round_up_range(requested, valid_range, fractional)
    if policy.get("validValues") is not None:
        return _round_up_valid_values(requested, policy["validValues"])
    return requested


def _violates(value: Quantity, policy: Mapping[str, Any] | None, fractional: bool) -> bool:
    if not policy:
        return False
    if policy.get("default") is not None and value == _q(policy["default"]):
        return False
    valid_range = policy.get("validRange")
    if valid_range is not None:
        if valid_range.get("max") is not None and value > _q(valid_range["max"]):
            return True
        if valid_range.get("step") is not None:
            lo_q = _q(valid_range["min"]) if valid_range.get("min") is not None else Quantity(0)
            step = _q(valid_range["step"])
            if use_milli(*_bounds(valid_range), enabled=fractional):
                return (value.milli_value() - lo_q.milli_value()) % step.milli_value() != 0
            return (value.value() - lo_q.value()) % step.value() != 0
        return False
    values = policy.get("validValues")
    if values:
        return all(value != _q(v) for v in values)
    return False


def consumed_capacity(
    requests: Mapping[str, Any] | None, capacity: Mapping[str, Any], *, fractional: bool = True
) -> dict[str, Quantity]:
    """Upstream ``GetConsumedCapacityFromRequest``: what allocating a share of the device consumes, for every
    capacity of the device (requests naming other capacities are ignored here; :func:`fits_capacity` refuses
    them first)."""
    requests = requests or {}
    return {
        name: _calculate(_q(requests[name]) if name in requests else None, cap, fractional)
        for name, cap in capacity.items()
    }


def fits_capacity(
    requests: Mapping[str, Any] | None,
    device: Mapping[str, Any],
    consumed_before: Mapping[str, Quantity],
    allocating: Mapping[str, Quantity],
    *,
    fractional: bool = True,
) -> bool:
    """Upstream ``CmpRequestOverCapacity``; ``fractional``: the DRAFractionalCapacityRange gate."""
    capacity = device.get("capacity") or {}
    requests = requests or {}
    if any(name not in capacity for name in requests):
        return False
    for name, cap in capacity.items():
        value = _calculate(_q(requests[name]) if name in requests else None, cap, fractional)
        if _violates(value, cap.get("requestPolicy"), fractional):
            return False
        total = value + consumed_before.get(name, Quantity(0)) + allocating.get(name, Quantity(0))
        if total > _q(cap.get("value", "0")):
            return False
    return True
