"""DRAFractionalCapacityRange (beta and on in v1.37) in the allocator's consumable-capacity arithmetic
(scheduler/dra/capacity.py, api/dra/capacity_range.py) against upstream's
``structured/internal/incubating/consumable_capacity_test.go``: ``testUseMilli``, ``testCalculateConsumedCapacity``
and ``testViolateCapacityRequestPolicy``'s fractional cases, each id the upstream case name; then the allocator
sharing a device of capacity 1 by ``250m`` requests on a ``200m``/``100m`` grid, gate on and off.

The ``useMilli`` rule pinned is the v1.37 API's documented one (``CapacityRequestPolicyRange``: milli arithmetic
only when a bound is fractional); upstream's later ``all integer, fits in milli`` case (milli for whole ranges too)
is not v1.37's and gives the same results for whole requests anyway.
"""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.dra.capacity_range import decimal_key, is_milli_representable, use_milli
from kubeplane.api.quantity import Quantity
from kubeplane.scheduler.dra import capacity as cap
from kubeplane.scheduler.dra.allocated import AllocatedState
from kubeplane.scheduler.dra.allocator import Allocator
from kubeplane.scheduler.dra.features import DEFAULT_FEATURES, Features

Q = Quantity.parse
TOO_BIG_FOR_MILLI = "9224372036854776E3"
FRACTIONAL_POLICY: dict[str, Any] = {"default": "200m", "validRange": {"min": "200m", "max": "1", "step": "100m"}}


@pytest.mark.parametrize(
    ("lo", "hi", "step", "enabled", "want"),
    [
        ("200m", "1", "100m", False, False),
        ("200m", "1", "100m", True, True),
        ("1", "3", "1", True, False),
        (TOO_BIG_FOR_MILLI, None, "100m", True, False),
        ("100m", None, "0", True, False),
    ],
    ids=[
        "fractional disabled",
        "all fractional, fits in milli",
        "all integer (v1.37: no fractional bound, whole units)",
        "min overflows milli, falls back to integer",
        "step too small (sub-milli)",
    ],
)
def test_use_milli(lo: str, hi: str | None, step: str, enabled: bool, want: bool) -> None:
    assert use_milli(Q(lo), Q(hi) if hi else None, Q(step), enabled=enabled) is want


@pytest.mark.parametrize(
    ("q", "want"),
    [("1", True), ("100m", True), ("10u", False), ("10P", False), (TOO_BIG_FOR_MILLI, False)],
    ids=["whole number", "fractional milli", "too fine", "10P above MaxMilliValue", "too large for milli"],
)
def test_milli_representable(q: str, want: bool) -> None:
    """``safeMilliValue`` (and the API's ``value cannot be represented as a milli value``)."""
    assert is_milli_representable(Q(q)) is want


def test_decimal_key() -> None:
    assert [decimal_key(Q(q)) for q in ("100m", "1Ki", "1Gi", "-1500m", "0")] == [
        "0.1",
        "1024",
        "1073741824",
        "-1.5",
        "0",
    ]


@pytest.mark.parametrize(
    ("requested", "fractional", "want"),
    [("250m", True, "300m"), ("400m", True, "400m"), ("150m", True, "200m"), ("250m", False, "1")],
    ids=[
        "fractional step round up (0.25 to 0.3)",
        "fractional step already aligned (0.4 = min+2*step)",
        "less than min",
        "gate off: whole units (250m reads 1, min 200m reads 1)",
    ],
)
def test_calculate_consumed_capacity(requested: str, fractional: bool, want: str) -> None:
    capacity = {"memory": {"value": "1", "requestPolicy": FRACTIONAL_POLICY}}
    got = cap.consumed_capacity({"memory": requested}, capacity, fractional=fractional)["memory"]
    assert (got, str(got)) == (Q(want), want)


@pytest.mark.parametrize(
    ("requested", "fractional", "want"),
    [("300m", True, False), ("250m", True, True), ("250m", False, False), ("1100m", True, True)],
    ids=[
        "fractional step aligned (0.3 = min+1*step)",
        "fractional step not aligned (0.25 is not a multiple of 0.1 from 0.2)",
        "gate off: whole units see no misalignment",
        "more than maximum",
    ],
)
def test_violates_policy(requested: str, fractional: bool, want: bool) -> None:
    """``violatesPolicy`` on an already-rounded value (``_violates``), the allocator's check of each share."""
    assert cap._violates(Q(requested), FRACTIONAL_POLICY, fractional) is want


def _slice() -> dict[str, Any]:
    device = {
        "name": "gpu-0",
        "allowMultipleAllocations": True,
        "capacity": {"memory": {"value": "1", "requestPolicy": FRACTIONAL_POLICY}},
    }
    return {
        "metadata": {"name": "s"},
        "spec": {"driver": "gpu.example.com", "nodeName": "node-1", "pool": {"name": "p", "resourceSliceCount": 1},
                 "devices": [device]},
    }  # fmt: skip


def _claim(i: int) -> dict[str, Any]:
    request = {"name": "r", "exactly": {"deviceClassName": "c", "allocationMode": "ExactCount", "count": 1,
                                        "capacity": {"requests": {"memory": "250m"}}}}  # fmt: skip
    return {"metadata": {"name": f"claim-{i}", "namespace": "default", "uid": f"uid-{i}"},
            "spec": {"devices": {"requests": [request]}}}  # fmt: skip


@pytest.mark.parametrize(
    ("features", "shares", "consumed"),
    [(DEFAULT_FEATURES, 3, "300m"), (Features(fractional_capacity_range=False), 1, "1")],
    ids=["gate on: 3 shares of 300m fit in 1", "gate off: one share of 1"],
)
def test_allocator_shares_a_device_by_fractional_steps(features: Features, shares: int, consumed: str) -> None:
    """Each ``250m`` request consumes ``300m`` (rounded up on the 100m grid from 200m): three fit a capacity of 1,
    a fourth does not; with the gate off the range counts whole units and one request takes the whole device."""
    klass = {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": "true"}}]}}
    node = {"metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}}}
    state = AllocatedState()
    for i in range(shares + 1):
        got = Allocator(features, state, {"c": klass}, [_slice()]).allocate(node, [_claim(i)])
        if i == shares:
            assert got is None
            break
        assert got is not None
        (result,) = got[0]["devices"]["results"]
        assert result["consumedCapacity"] == {"memory": consumed}
        key = (result["driver"], result["pool"], result["device"])
        before = state.aggregated_capacity.get(key, {}).get("memory", Quantity(0))
        state.aggregated_capacity[key] = {"memory": before + Q(consumed)}
