"""Binding conditions, capacity request policies and share IDs (api/validation/resource_dra_devices.py) against
upstream v1.37's pkg/apis/resource/validation: ``validateDeviceBindingParameters`` (cases of
pkg/registry/resource/resourceslice/declarative_validation_test.go and validation_resourceclaim_test.go's
".Status.Allocation.Devices.Results[%d].BindingConditions" block), ``validateRequestPolicy`` (the integer-arithmetic
cases of validation_device_capacity_test.go ``TestValidateDeviceCapacity``, named) and ``validateUID``. Each case
goes through the real ResourceSlice / ResourceClaim status validators, so the hooks are pinned too."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.dra import capacity_range
from kubeplane.api.validation import resource_dra as v
from kubeplane.api.validation.field import ErrorList

Obj = dict[str, Any]
CAP = "spec.devices[0].capacity[memory]"
POLICY = f"{CAP}.requestPolicy"
VALUES = f"{POLICY}.validValues"
RANGE = f"{POLICY}.validRange"
UUID1 = "c94a4a64-4ac4-4d3d-9a44-d06e2cda8f2f"


def texts(errs: ErrorList) -> list[str]:
    return [str(e) for e in errs]


def slice_with(device: Obj) -> Obj:
    base = {"name": "gpu-0", **device}
    spec = {"driver": "gpu.example.com", "pool": {"name": "node01", "resourceSliceCount": 1}, "nodeName": "node01"}
    return {"metadata": {"name": "s"}, "spec": {**spec, "devices": [base]}}


def conditions(n: int, prefix: str = "ready") -> list[str]:
    return [f"example.com/{prefix}-{i}" for i in range(n)]


# -- bindingConditions / bindingFailureConditions on a slice device --------------------------------------------


@pytest.mark.parametrize(
    ("device", "want"),
    [
        # "valid: one binding condition" / "valid: at limit binding conditions" (BindingConditionsMaxSize 4)
        ({"bindingConditions": conditions(1), "bindingFailureConditions": conditions(1, "failed")}, []),
        ({"bindingConditions": conditions(4), "bindingFailureConditions": conditions(4, "failed")}, []),
        ({"bindingConditions": ["ready"], "bindingFailureConditions": ["failed"], "bindsToNode": True}, []),
        # "invalid: too many binding conditions": Too many, the entries themselves not checked further
        (
            {"bindingConditions": [*conditions(4), "Not Valid"], "bindingFailureConditions": ["failed"]},
            ["spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items"],
        ),
        # "invalid: too many binding failure conditions"
        (
            {"bindingConditions": ["ready"], "bindingFailureConditions": conditions(5, "failed")},
            ["spec.devices[0].bindingFailureConditions: Too many: 5: must have at most 4 items"],
        ),
        # each entry is a qualified name (metav1validation.ValidateLabelName)
        (
            {"bindingConditions": ["not valid"], "bindingFailureConditions": ["failed"]},
            [
                'spec.devices[0].bindingConditions[0]: Invalid value: "not valid": name part must consist of '
                "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ],
        ),
        # duplicates within a list, and an entry in both lists
        (
            {"bindingConditions": ["ready", "ready"], "bindingFailureConditions": ["failed", "failed", "ready"]},
            [
                'spec.devices[0].bindingConditions[1]: Duplicate value: "ready"',
                'spec.devices[0].bindingFailureConditions[1]: Duplicate value: "failed"',
                'spec.devices[0].bindingFailureConditions[2]: Invalid value: "ready": bindingFailureConditions '
                "must not overlap with bindingConditions",
            ],
        ),
        # one list requires the other: the rejected value is Go's nil slice (null) or the empty list given
        (
            {"bindingConditions": ["ready"]},
            [
                "spec.devices[0].bindingFailureConditions: Invalid value: null: bindingFailureConditions are "
                "required to use bindingConditions"
            ],
        ),
        (
            {"bindingConditions": [], "bindingFailureConditions": ["failed"]},
            [
                "spec.devices[0].bindingConditions: Invalid value: []: bindingConditions are required to use "
                "bindingFailureConditions"
            ],
        ),
    ],
)
def test_slice_device_binding_conditions(device: Obj, want: list[str]) -> None:
    """``validateDeviceBindingParameters`` called at the end of ``validateDevice``."""
    assert texts(v.validate_resource_slice(slice_with(device))) == want


# -- requestPolicy (validation_device_capacity_test.go TestValidateDeviceCapacity) -------------------------------


@pytest.fixture
def gate_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """DRAFractionalCapacityRange off, as ``SetFeatureGateDuringTest(..., false)``."""
    monkeypatch.setattr(capacity_range, "FRACTIONAL_CAPACITY_RANGE", False)


def policy_device(value: str, policy: Obj | None, multi: bool | None = True) -> Obj:
    capacity: Obj = {"value": value}
    if policy is not None:
        capacity["requestPolicy"] = policy
    device: Obj = {"capacity": {"memory": capacity}}
    if multi is not None:
        device["allowMultipleAllocations"] = multi
    return device


@pytest.mark.parametrize(
    ("name", "value", "policy", "want"),
    [
        ("no-policy", "1Gi", None, []),
        ("policy-without-default", "1Gi", {}, []),
        (
            "policy-with-valid-values-without-default",
            "1Gi",
            {"validValues": ["1Gi"]},
            [f"{POLICY}.default: Required value: required when validValues is defined"],
        ),
        (
            "policy-with-valid-range-without-default",
            "1Gi",
            {"validRange": {"min": "1Gi"}},
            [f"{POLICY}.default: Required value: required when validRange is defined"],
        ),
        (
            "policy-with-valid-range-without-min",
            "1Gi",
            {"default": "1Gi", "validRange": {}},
            [f"{RANGE}.min: Required value: required when validRange is defined"],
        ),
        ("valid-simple-range", "10Gi", {"default": "1Gi", "validRange": {"min": "1Gi"}}, []),
        ("valid-range-with-max", "10Gi", {"default": "1Gi", "validRange": {"min": "1Gi", "max": "10Gi"}}, []),
        ("valid-range-with-step", "10Gi", {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}, []),
        (
            "valid-range-with-max-and-step",
            "10Gi",
            {"default": "1Gi", "validRange": {"min": "1Gi", "max": "10Gi", "step": "1Gi"}},
            [],
        ),
        ("valid-single-option", "10Gi", {"default": "1Gi", "validValues": ["1Gi"]}, []),
        ("valid-two-options", "10Gi", {"default": "1Gi", "validValues": ["1Gi", "10Gi"]}, []),
        ("default-without-policy", "10Gi", {"default": "1Gi"}, []),
        (
            "more-than-one-policy",
            "10Gi",
            {"default": "1Gi", "validValues": ["1Gi"], "validRange": {"min": "1Gi"}},
            [
                f"{POLICY}: Forbidden: exactly one policy can be specified, cannot specify "
                '"validValues" and "validRange" at the same time'
            ],
        ),
        (
            "invalid-options",
            "10Gi",
            {"default": "1Gi", "validValues": ["20Gi"]},
            [
                f'{VALUES}[0]: Invalid value: "20Gi": option is larger than capacity value: 10Gi',
                f'{VALUES}: Invalid value: "1Gi": default value is not valid according to the requestPolicy',
            ],
        ),
        (
            "invalid-options-duplicate",
            "10Gi",
            {"default": "1Gi", "validValues": ["1Gi", "1Gi"]},
            [f'{VALUES}[1]: Duplicate value: "1073741824"'],
        ),
        (
            "invalid-options-duplicate-normalized",
            "10Gi",
            {"default": "1Ki", "validValues": ["1Ki", "1024"]},
            [f'{VALUES}[1]: Duplicate value: "1024"'],
        ),
        (
            "invalid-options-duplicate-decimal-point",
            "10Gi",
            {"default": "1", "validValues": ["1", "1.0"]},
            [f'{VALUES}[1]: Duplicate value: "1"'],
        ),
        (
            "options-too-many-identical (gate off)",
            "10Gi",
            {"default": "1", "validValues": ["1"] * 11},
            [
                f"{VALUES}: Too many: 11: must have at most 10 items",
                f'{VALUES}: Invalid value: "1": default value is not valid according to the requestPolicy',
            ],
        ),
        (
            "options-int64-max-and-plus-one",
            "9223372036854775808",
            {"default": "9223372036854775807", "validValues": ["9223372036854775807", "9223372036854775808"]},
            [f'{VALUES}[1]: Duplicate value: "9223372036854775807"'],
        ),
        (
            "invalid-options-unsort",
            "10Gi",
            {"default": "1Gi", "validValues": ["2Gi", "1Gi"]},
            [f'{VALUES}[1]: Invalid value: "1Gi": values must be sorted in ascending order'],
        ),
        (
            "invalid-range-large-min-small-max",
            "10Gi",
            {"default": "2Gi", "validRange": {"min": "20Gi", "max": "1Gi"}},
            [
                f'{RANGE}.min: Invalid value: "20Gi": min is larger than capacity value: 10Gi',
                f'{RANGE}.min: Invalid value: "2Gi": default is less than min: 20Gi',
                f'{RANGE}.max: Invalid value: "20Gi": min is larger than max: 1Gi',
                f'{RANGE}.max: Invalid value: "2Gi": default is more than max: 1Gi',
            ],
        ),
        (
            "invalid-range-large-max",
            "10Gi",
            {"default": "1Gi", "validRange": {"min": "1Gi", "max": "20Gi"}},
            [f'{RANGE}.max: Invalid value: "20Gi": max is larger than capacity value: 10Gi'],
        ),
        (
            "invalid-range-multiple-of-step",
            "10Gi",
            {"default": "2Gi", "validRange": {"min": "1Gi", "max": "10Gi", "step": "2Gi"}},
            [
                f'{RANGE}.step: Invalid value: "2Gi": value is not a multiple of a given step (2Gi) from (1Gi)',
                f'{RANGE}.step: Invalid value: "10Gi": value is not a multiple of a given step (2Gi) from (1Gi)',
            ],
        ),
        (
            "range-step-multiple-of-2^64",
            "18446744073709551616",
            {"default": "0", "validRange": {"min": "0", "step": "18446744073709551616"}},
            [f'{RANGE}.step: Invalid value: "18446744073709551616": must not be larger than 9223372036854775807'],
        ),
        (
            "range-step-at-int64-max",
            "9223372036854775807",
            {"default": "0", "validRange": {"min": "0", "step": "9223372036854775807"}},
            [],
        ),
        (
            "range-negative-min-with-step",
            "10Gi",
            {"default": "0", "validRange": {"min": "-1", "step": "1Gi"}},
            [f'{RANGE}.min: Invalid value: "-1": must be greater than or equal to 0'],
        ),
        ("range-no-step-negative-bounds-accepted", "10Gi", {"default": "-1", "validRange": {"min": "-1"}}, []),
        (
            "fractional-range-gate-disabled-misaligned (whole units: 250m and 200m both read 1)",
            "1",
            {"default": "250m", "validRange": {"min": "200m", "max": "1", "step": "100m"}},
            [],
        ),
        (
            "invalid-range-large-step",
            "10Gi",
            {"default": "1Gi", "validRange": {"min": "1Gi", "step": "10Gi"}},
            [f'{RANGE}.step: Invalid value: "10Gi": one step 11Gi is larger than capacity value: 10Gi'],
        ),
    ],
)
def test_request_policy(name: str, value: str, policy: Obj | None, want: list[str], gate_off: None) -> None:
    """``validateMultiAllocatableDeviceCapacity`` -> ``validateRequestPolicy`` (upstream case ``name``, which runs
    with DRAFractionalCapacityRange at the test's default, off)."""
    assert texts(v.validate_resource_slice(slice_with(policy_device(value, policy)))) == want, name


FRACTIONAL_RANGE: Obj = {"min": "200m", "max": "1", "step": "100m"}
BIG_RANGE: Obj = {"min": "10P", "step": "100m"}


FRACTIONAL_CASES: list[tuple[str, str, Obj, list[str]]] = [
    ("valid-fractional-values", "10Gi", {"default": "100m", "validValues": ["100m", "200m", "1"]}, []),
    ("valid-range-fractional-step", "1", {"default": "200m", "validRange": FRACTIONAL_RANGE}, []),
    (
        "invalid-range-fractional-step-not-aligned",
        "1",
        {"default": "250m", "validRange": FRACTIONAL_RANGE},
        [f'{RANGE}.step: Invalid value: "250m": value is not a multiple of a given step (100m) from (200m)'],
    ),
    (
        "fractional-range-overflow-min",
        "100P",
        {"default": "20P", "validRange": BIG_RANGE},
        [
            f'{RANGE}.default: Invalid value: "20P": value cannot be represented as a milli value',
            f'{RANGE}.min: Invalid value: "10P": value cannot be represented as a milli value',
        ],
    ),
    (
        "fractional-too-fine-precision",
        "1",
        {"default": "20u", "validRange": {"min": "10u"}},
        [
            f'{RANGE}.default: Invalid value: "20u": value cannot be represented as a milli value',
            f'{RANGE}.min: Invalid value: "10u": value cannot be represented as a milli value',
        ],
    ),
    ("whole-range-keeps-whole-units", "10", {"default": "2", "validRange": {"min": "1", "step": "1"}}, []),
]


@pytest.mark.parametrize(("name", "value", "policy", "want"), FRACTIONAL_CASES, ids=[c[0] for c in FRACTIONAL_CASES])
def test_fractional_request_policy(name: str, value: str, policy: Obj, want: list[str]) -> None:
    """DRAFractionalCapacityRange on (v1.37's default): upstream ``TestValidateDeviceCapacity``'s cases with
    ``fractionalCapacityRangeGate: true``, named."""
    assert texts(v.validate_resource_slice(slice_with(policy_device(value, policy)))) == want, name


def test_fractional_range_gate_disabled_valid(gate_off: None) -> None:
    """Upstream ``fractional-range-gate-disabled-valid``: with the gate off a fractional range counts whole units
    and is accepted (no milli checks)."""
    device = policy_device("1", {"default": "200m", "validRange": FRACTIONAL_RANGE})
    assert texts(v.validate_resource_slice(slice_with(device))) == []


@pytest.mark.parametrize(
    "default",
    ["10P", "20P"],
    ids=["identical-range-update-skips-validation", "fractional-range-stored-object-exemption"],
)
def test_unchanged_range_is_not_rechecked(default: str) -> None:
    """A range equal to the stored object's is not validated again (upstream returns at once), so a slice stored
    before the gate (a 10P min with a fractional step) stays updatable; a new slice with it is refused."""
    device = policy_device("100P", {"default": default, "validRange": BIG_RANGE})
    old = slice_with(device)
    new = copy.deepcopy(old)
    new["spec"]["devices"][0]["attributes"] = {"model": {"string": "x"}}
    assert texts(v.validate_resource_slice_update(new, old)) == []
    assert texts(v.validate_resource_slice(new)) != []


@pytest.mark.parametrize("multi", [None, False])
def test_request_policy_needs_allow_multiple_allocations(multi: bool | None) -> None:
    """``validateSingleAllocatableDeviceCapacity``: a policy on a device that is not multi-allocatable is
    Forbidden, whatever the policy (not validated further)."""
    device = policy_device("10Gi", {"default": "20Gi", "validValues": ["1Gi"]}, multi)
    assert texts(v.validate_resource_slice(slice_with(device))) == [
        f"{POLICY}: Forbidden: allowMultipleAllocations must be true"
    ]


def test_zero_step_is_refused_not_a_server_error() -> None:
    """Go would divide by zero here (a panic); kubeplane answers with the step rule's own message instead."""
    device = policy_device("10", {"default": "2", "validRange": {"min": "1", "step": "0"}})
    assert texts(v.validate_resource_slice(slice_with(device))) == [
        f'{RANGE}.step: Invalid value: "2": value is not a multiple of a given step (0) from (1)'
    ]


# -- the claim status: allocation results and device status ------------------------------------------------------


def claim_status(result: Obj, devices: list[Obj] | None = None) -> tuple[Obj, Obj]:
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
    old: Obj = {"metadata": {"name": "c"}, "spec": spec}
    base = {"request": "gpu", "driver": "gpu.example.com", "pool": "node01", "device": "gpu-0", **result}
    status: Obj = {"allocation": {"devices": {"results": [base]}}}
    if devices is not None:
        status["devices"] = devices
    return {**copy.deepcopy(old), "status": status}, old


def test_allocation_result_binding_conditions() -> None:
    """validation_resourceclaim_test.go: "valid binding conditions, max items", "invalid binding conditions,
    too many", "invalid binding failure conditions, too many" (paths under status.allocation.devices.results)."""
    new, old = claim_status({"bindingConditions": conditions(4), "bindingFailureConditions": ["failed"]})
    assert v.validate_resource_claim_status_update(new, old) == []
    new, old = claim_status({"bindingConditions": conditions(5), "bindingFailureConditions": ["failed"]})
    assert texts(v.validate_resource_claim_status_update(new, old)) == [
        "status.allocation.devices.results[0].bindingConditions: Too many: 5: must have at most 4 items"
    ]
    new, old = claim_status({"bindingConditions": ["ready"], "bindingFailureConditions": conditions(5, "f")})
    assert texts(v.validate_resource_claim_status_update(new, old)) == [
        "status.allocation.devices.results[0].bindingFailureConditions: Too many: 5: must have at most 4 items"
    ]


@pytest.mark.parametrize(
    ("share", "want"),
    [
        (UUID1, None),
        ("short", "error validating uid: invalid UUID length: 5"),
        ("c94a4a64x4ac4-4d3d-9a44-d06e2cda8f2f", "error validating uid: invalid UUID format"),
        ("c94a4a644ac44d3d9a44d06e2cda8f2f", "uid must be in RFC 4122 normalized form"),
        (UUID1.upper(), "uid must be in RFC 4122 normalized form"),
    ],
)
def test_share_id_is_a_normalized_uuid(share: str, want: str | None) -> None:
    """``validateUID`` on an allocation result's and a device status's ``shareID`` (google/uuid Validate texts)."""
    status = {"driver": "gpu.example.com", "pool": "node01", "device": "gpu-0", "shareID": share}
    new, old = claim_status({"shareID": share}, [status])
    out = texts(v.validate_resource_claim_status_update(new, old))
    if want is None:
        assert out == []
        return
    assert [line.split(": Invalid value: ")[0] for line in out] == [
        "status.devices[0].shareID",
        "status.allocation.devices.results[0].shareID",
    ]
    assert all(f'"{share}": {want}' in line for line in out)
