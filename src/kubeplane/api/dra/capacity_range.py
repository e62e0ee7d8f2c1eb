"""DRAFractionalCapacityRange (beta and on in v1.37): when a consumable capacity's ``requestPolicy.validRange``
counts in thousandths instead of whole units. Shared by the API server's request-policy checks
(:mod:`kubeplane.api.validation.resource_dra_devices`) and the scheduler's allocator
(:mod:`kubeplane.scheduler.dra.capacity`), so both decide alike.

Invariants (upstream ``useMilli`` in ``structured/internal/incubating/consumable_capacity.go`` and the API type's
documentation of ``CapacityRequestPolicyRange``):

* milli-unit arithmetic is used iff the gate is on, at least one of ``min``/``max``/``step`` is fractional (its
  ``MilliValue()`` is not a multiple of 1000 -- ``10u`` rounds up to ``1m`` and counts as fractional), none of them
  is above ``MaxMilliValue`` (``MaxInt64 / 1000`` whole units) and ``step``, when set, is at least ``1m``;
  otherwise whole units (``Value()``, rounded away from zero) are used, as with the gate off;
* a value is representable in milli units iff it is a whole number of thousandths no larger than
  ``MaxMilliValue`` whole units (the API refuses the others in a milli range: ``value cannot be represented as a
  milli value``).
"""

from __future__ import annotations

from typing import Final

from kubeplane.api.quantity import NANO, Quantity

__all__ = [
    "FRACTIONAL_CAPACITY_RANGE",
    "MAX_MILLI_VALUE",
    "decimal_key",
    "is_milli_representable",
    "use_milli",
]

FRACTIONAL_CAPACITY_RANGE = True
"""The DRAFractionalCapacityRange gate of the API server's validation: v1.37's default (beta, on). Read at each
call, so a test can switch it off as upstream's tests switch the gate."""
INT64_MAX: Final = (1 << 63) - 1
MAX_MILLI_VALUE: Final = INT64_MAX // 1000
"""``resource.MaxMilliValue``: the largest whole-unit value whose milli value fits int64."""
_MILLI_NANOS: Final = NANO // 1000


def _fractional(q: Quantity) -> bool:
    return q.milli_value() % 1000 != 0


def use_milli(lo: Quantity | None, hi: Quantity | None, step: Quantity | None, *, enabled: bool) -> bool:
    """Whether a range of ``min`` ``lo``, ``max`` ``hi`` and ``step`` counts in thousandths (upstream ``useMilli``)."""
    if not enabled:
        return False
    bounds = [q for q in (lo, hi, step) if q is not None]
    if any(q.value() > MAX_MILLI_VALUE for q in bounds):
        return False
    if not any(_fractional(q) for q in bounds):
        return False
    return step is None or step.milli_value() >= 1


def is_milli_representable(q: Quantity) -> bool:
    """``q`` is a whole number of thousandths within the milli-value range."""
    return q.nanos % _MILLI_NANOS == 0 and abs(q.value()) <= MAX_MILLI_VALUE


def decimal_key(q: Quantity) -> str:
    """The exact decimal value of ``q`` (``0.1`` for ``100m``, ``1024`` for ``1Ki``): the key a fractional
    ``validValues`` list is de-duplicated by (whole-unit values would merge ``100m`` and ``200m``)."""
    whole, rest = divmod(abs(q.nanos), NANO)
    sign = "-" if q.nanos < 0 else ""
    if not rest:
        return f"{sign}{whole}"
    return f"{sign}{whole}." + f"{rest:09d}".rstrip("0")
