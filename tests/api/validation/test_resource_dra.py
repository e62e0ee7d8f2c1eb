"""resource.k8s.io/v1 validation (api/validation/resource_dra.py) against upstream's
pkg/apis/resource/validation tests (v1.37): validation_deviceclass_test.go, validation_resourceclaim_test.go,
validation_resourceclaimtemplate_test.go, validation_resourceslice_test.go - each case named after the upstream
case it follows - and the pod's spec.resourceClaims (core validation ``validatePodResourceClaim``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.validation import resource_dra as v
from kubeplane.api.validation.field import ErrorList, new_path
from kubeplane.api.validation.pod_claims import validate_pod_resource_claims
from kubeplane.api.validation.reader import CORE_V1

Obj = dict[str, Any]
GOOD_SELECTOR = 'device.attributes["gpu.example.com"].model == "A100"'


def texts(errs: ErrorList) -> list[str]:
    return [str(e) for e in errs]


def claim(**exactly: Any) -> Obj:
    request = {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1, **exactly}
    return {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}}}


def slice_(**spec: Any) -> Obj:
    base: Obj = {
        "driver": "gpu.example.com",
        "pool": {"name": "node01", "resourceSliceCount": 1},
        "nodeName": "node01",
        "devices": [
            {"name": "gpu-0", "attributes": {"model": {"string": "A100"}}, "capacity": {"memory": {"value": "80Gi"}}}
        ],
    }
    base.update(spec)
    return {"metadata": {"name": "s"}, "spec": {k: val for k, val in base.items() if val is not None}}


# -- DeviceClass (validation_deviceclass_test.go) ----------------------------------------------------------------


def test_device_class_good_and_bad_selector() -> None:
    """ "good-class" and "bad-selector": a CEL compile error is Invalid with cel-go's detail."""
    good = {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": GOOD_SELECTOR}}]}}
    assert v.validate_device_class(good) == []
    bad = {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": "noSuchVar"}}]}}
    assert texts(v.validate_device_class(bad)) == [
        'spec.selectors[0].cel.expression: Invalid value: "noSuchVar": compilation failed: ERROR: <input>:1:1: '
        "undeclared reference to 'noSuchVar' (in container '')\n | noSuchVar\n | ^"
    ]


def test_device_class_missing_cel_and_opaque() -> None:
    """ "missing-cel" (Required spec.selectors[0].cel) and config without opaque (Required)."""
    obj = {"metadata": {"name": "c"}, "spec": {"selectors": [{}], "config": [{}]}}
    assert texts(v.validate_device_class(obj)) == [
        "spec.selectors[0].cel: Required value",
        "spec.config[0].opaque: Required value",
    ]


def test_device_class_too_many_selectors() -> None:
    """ "too-many-selectors": at most DeviceSelectorsMaxSize (32)."""
    obj = {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": "true"}}] * 33}}
    assert texts(v.validate_device_class(obj))[0] == "spec.selectors: Too many: 33: must have at most 32 items"


def test_cel_too_long_and_too_expensive() -> None:
    """ "CEL-length" (Too long, not compiled) and "CEL-cost" (Forbidden: too complex, exceeds cost limit)."""
    path = new_path("x")
    long = "true && " * 1300 + "true"
    assert texts(v.validate_cel_selector(long, path)) == ["x: Too long: may not be more than 10240 bytes"]
    nested = "[1,2,3,4,5,6,7,8,9,10]"
    expensive = "".join(f"{nested}.all(x{i}, " for i in range(7)) + "true" + ")" * 7
    assert texts(v.validate_cel_selector(expensive, path)) == ["x: Forbidden: too complex, exceeds cost limit"]


# -- ResourceClaim (validation_resourceclaim_test.go) --------------------------------------------------------------


def test_claim_good() -> None:
    assert v.validate_resource_claim(claim(selectors=[{"cel": {"expression": GOOD_SELECTOR}}])) == []


def test_claim_bad_requests() -> None:
    """ "missing-device-class-name", "invalid-allocation-mode", "count-must-be-positive", "all-with-count",
    "invalid-request-name" and "duplicate-request"."""
    assert texts(v.validate_resource_claim(claim(deviceClassName=""))) == [
        "spec.devices.requests[0].exactly.deviceClassName: Required value"
    ]
    assert texts(v.validate_resource_claim(claim(allocationMode="Some"))) == [
        'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", '
        '"ExactCount"'
    ]
    assert texts(v.validate_resource_claim(claim(count=0))) == [
        "spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero"
    ]
    assert texts(v.validate_resource_claim(claim(allocationMode="All", count=2))) == [
        "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"
    ]
    obj = claim()
    obj["spec"]["devices"]["requests"].append(copy.deepcopy(obj["spec"]["devices"]["requests"][0]))
    obj["spec"]["devices"]["requests"][0]["name"] = "Bad_Name"
    obj["spec"]["devices"]["requests"][1]["name"] = "Bad_Name"
    out = texts(v.validate_resource_claim(obj))
    assert out[0].startswith('spec.devices.requests[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label')
    assert 'spec.devices.requests[1].name: Duplicate value: "Bad_Name"' in out


def test_claim_exactly_one_of_exactly_or_first_available() -> None:
    """ "missing-exactly-or-first-available" and "both-exactly-and-first-available"."""
    obj: Obj = {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [{"name": "gpu"}]}}}
    assert texts(v.validate_resource_claim(obj)) == [
        "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"
    ]
    request = obj["spec"]["devices"]["requests"][0]
    request["exactly"] = {"deviceClassName": "g", "allocationMode": "ExactCount", "count": 1}
    request["firstAvailable"] = [{"name": "s", "deviceClassName": "g", "allocationMode": "ExactCount", "count": 1}]
    assert texts(v.validate_resource_claim(obj)) == [
        "spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
        "but multiple fields are set"
    ]


def test_claim_first_available_subrequests() -> None:
    """ "prioritized-list-valid" and a bad selector in a subrequest."""
    sub = {"name": "s", "deviceClassName": "g", "allocationMode": "ExactCount", "count": 1}
    obj: Obj = {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [{"name": "r", "firstAvailable": [sub]}]}}}
    assert v.validate_resource_claim(obj) == []
    sub["selectors"] = [{"cel": {"expression": "1"}}]
    assert texts(v.validate_resource_claim(obj)) == [
        'spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression: Invalid value: "1": must evaluate '
        "to bool or the unknown type, not int"
    ]


def test_claim_constraints_and_config() -> None:
    """ "invalid-constraint-requests", "missing-match-attribute", "match-attribute-without-domain", config with a
    request reference that does not exist."""
    obj = claim()
    obj["spec"]["devices"]["constraints"] = [
        {"requests": ["gpu"], "matchAttribute": "gpu.example.com/model"},
        {"requests": ["nope"]},
        {"matchAttribute": "model"},
    ]
    obj["spec"]["devices"]["config"] = [
        {"requests": ["gpu/sub"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}
    ]
    ref = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"
    assert texts(v.validate_resource_claim(obj)) == [
        f'spec.devices.constraints[1].requests[0]: Invalid value: "nope": {ref}',
        'spec.devices.constraints[1]: Required value: exactly one of "matchAttribute" or "distinctAttribute" is '
        "required, but multiple fields are set",
        'spec.devices.constraints[2].matchAttribute: Invalid value: "model": must include a domain',
        f'spec.devices.config[0].requests[0]: Invalid value: "gpu/sub": {ref}',
    ]


def test_claim_spec_immutable() -> None:
    """ValidateResourceClaimUpdate "invalid-update": the spec is immutable."""
    old = claim()
    new = claim(count=2)
    out = texts(v.validate_resource_claim_update(new, old))
    assert len(out) == 1
    assert out[0].startswith("spec: Invalid value: ")
    assert out[0].endswith("field is immutable")
    assert v.validate_resource_claim_update(claim(), old) == []


def test_claim_status_reserved_for() -> None:
    """ "invalid-reserved-for-too-large", "invalid-reserved-for-duplicate", "invalid-reserved-for-no-allocation",
    "invalid-allocation-modification"."""
    old = claim()
    ref = {"resource": "pods", "name": "p", "uid": "u1"}
    new = {**claim(), "status": {"reservedFor": [ref]}}
    assert texts(v.validate_resource_claim_status_update(new, old)) == [
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"
    ]
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node01", "device": "gpu-0"}]}
    }
    new["status"] = {"allocation": allocation, "reservedFor": [ref, ref]}
    assert texts(v.validate_resource_claim_status_update(new, old)) == ['status.reservedFor[1]: Duplicate value: "u1"']
    many = [{"resource": "pods", "name": f"p{i}", "uid": f"u{i}"} for i in range(257)]
    new["status"] = {"allocation": allocation, "reservedFor": many}
    assert texts(v.validate_resource_claim_status_update(new, old)) == [
        "status.reservedFor: Too many: 257: must have at most 256 items"
    ]
    stored = {**claim(), "status": {"allocation": allocation}}
    changed = copy.deepcopy(stored)
    changed["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-1"
    out = texts(v.validate_resource_claim_status_update(changed, stored))
    assert len(out) == 1
    assert out[0].startswith("status.allocation: Invalid value: ")
    bad = copy.deepcopy(stored)
    bad["status"]["allocation"]["devices"]["results"][0]["request"] = "other"
    assert texts(v.validate_resource_claim_status_update(bad, old))[0].startswith(
        'status.allocation.devices.results[0].request: Invalid value: "other": must be the name of a request'
    )


def test_claim_template() -> None:
    """ValidateResourceClaimTemplate: the claim spec's rules under spec.spec; the spec is immutable."""
    tmpl = {"metadata": {"name": "t"}, "spec": {"spec": claim(count=0)["spec"]}}
    assert texts(v.validate_resource_claim_template(tmpl)) == [
        "spec.spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero"
    ]


# -- ResourceSlice (validation_resourceslice_test.go) --------------------------------------------------------------


def test_slice_good() -> None:
    assert v.validate_resource_slice(slice_()) == []


def test_slice_node_fields() -> None:
    """ "missing-node-selection", "multiple-node-selection", "empty-node-name", "all-nodes-false"."""
    node_msg = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    assert texts(v.validate_resource_slice(slice_(nodeName=None))) == [f"spec: Required value: {node_msg}"]
    assert texts(v.validate_resource_slice(slice_(allNodes=True))) == [
        f'spec: Invalid value: "{{`nodeName`, `allNodes`}}": {node_msg}, but multiple fields are set'
    ]
    assert texts(v.validate_resource_slice(slice_(nodeName="", allNodes=True))) == [
        'spec.nodeName: Invalid value: "": must be either unset or set to a non-empty string'
    ]
    assert texts(v.validate_resource_slice(slice_(nodeName=None, allNodes=False)))[0] == (
        "spec.allNodes: Invalid value: false: must be either unset or set to true"
    )


def test_slice_pool_and_driver() -> None:
    """ "bad-pool", "zero-slice-count", "negative-generation", "bad-driver"."""
    out = texts(
        v.validate_resource_slice(slice_(driver="", pool={"name": "", "resourceSliceCount": 0, "generation": -1}))
    )
    assert out[0] == "spec.driver: Required value"
    assert out[1].startswith('spec.driver: Invalid value: "": a lowercase RFC 1123 subdomain')  # ValidateCSIDriverName
    assert out[2:] == [
        "spec.pool.name: Required value",
        "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
        "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
    ]


def test_slice_device_attributes() -> None:
    """ "bad-attribute-zero-values", "bad-attribute-two-values", "bad-attribute-version", "too-many-attributes",
    "duplicate-device-name"."""
    device: Obj = {"name": "d", "attributes": {"none": {}, "two": {"int": 1, "string": "x"}, "v": {"version": "1.x"}}}
    out = texts(v.validate_resource_slice(slice_(devices=[device])))
    assert out == [
        "spec.devices[0].attributes[none]: Required value: exactly one value must be specified",
        'spec.devices[0].attributes[two]: Invalid value: {"int":1,"string":"x"}: exactly one value must be specified',
        'spec.devices[0].attributes[v].version: Invalid value: "1.x": must be a string compatible with semver.org '
        "spec 2.0.0",
    ]
    many: Obj = {"name": "d", "attributes": {f"a{i}": {"int": i} for i in range(33)}}
    assert texts(v.validate_resource_slice(slice_(devices=[many]))) == [
        "spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"
    ]
    twice = [{"name": "d"}, {"name": "d"}]
    assert texts(v.validate_resource_slice(slice_(devices=twice))) == ['spec.devices[1].name: Duplicate value: "d"']


def test_slice_update_immutables() -> None:
    """ValidateResourceSliceUpdate: pool name, driver and nodeName are immutable."""
    old = slice_()
    new = slice_(nodeName="node02")
    assert texts(v.validate_resource_slice_update(new, old)) == [
        'spec.nodeName: Invalid value: "node02": field is immutable'
    ]


# -- pods (core validatePodResourceClaim) ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ([{"name": "gpu", "resourceClaimTemplateName": "a100"}], []),
        ([{"name": "gpu"}], ["spec.resourceClaims[0]: Invalid value: {\"name\":\"gpu\"}: must specify one of: "
                             "`resourceClaimName`, `resourceClaimTemplateName`"]),
        ([{"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}],
         ['spec.resourceClaims[0]: Invalid value: {"name":"gpu","resourceClaimName":"a","resourceClaimTemplateName":'
          '"b"}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified']),
        ([{"name": "gpu", "resourceClaimName": "a"}, {"name": "gpu", "resourceClaimName": "b"}],
         ['spec.resourceClaims[1].name: Duplicate value: "gpu"']),
        ([{"resourceClaimName": "a"}], ["spec.resourceClaims[0].name: Required value"]),
    ],
)  # fmt: skip
def test_pod_resource_claims(claims: list[Obj], expected: list[str]) -> None:
    errs: ErrorList = []
    validate_pod_resource_claims(CORE_V1.root({"spec": {"resourceClaims": claims}}, errs).child("spec"))
    assert texts(errs) == expected


def test_tolerations_and_taints() -> None:
    """validateDeviceToleration ("invalid-toleration-operator", "toleration-value-with-exists") and
    validateDeviceTaint ("missing-taint-effect", "invalid-taint-effect")."""
    obj = claim(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}, {"operator": "Gt", "effect": "Bad"}])
    assert texts(v.validate_resource_claim(obj)) == [
        'spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator '
        "`Exists`",
        'spec.devices.requests[0].exactly.tolerations[1].operator: Unsupported value: "Gt": supported values: '
        '"Equal", "Exists"',
        'spec.devices.requests[0].exactly.tolerations[1].effect: Unsupported value: "Bad": supported values: '
        '"NoExecute", "NoSchedule", "None"',
    ]
    device: Obj = {"name": "d", "taints": [{"key": "k"}, {"key": "k", "effect": "Bad"}]}
    assert texts(v.validate_resource_slice(slice_(devices=[device]))) == [
        "spec.devices[0].taints[0].effect: Required value",
        'spec.devices[0].taints[1].effect: Unsupported value: "Bad": supported values: "NoExecute", "NoSchedule", '
        '"None"',
    ]


def test_device_status_must_be_allocated() -> None:
    """validateDeviceStatus "invalid-device-status-not-allocated" and a duplicate entry; the value printed is
    SharedDeviceID.String()."""
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d0"}]}
    }
    old = {**claim(), "status": {"allocation": allocation}}
    entry = {"driver": "gpu.example.com", "pool": "p", "device": "d0"}
    other = {"driver": "gpu.example.com", "pool": "p", "device": "d1"}
    new = {**claim(), "status": {"allocation": allocation, "devices": [entry, other, entry]}}
    assert texts(v.validate_resource_claim_status_update(new, old)) == [
        "status.devices[1]: Invalid value: gpu.example.com/p/d1: must be an allocated device in the claim",
        "status.devices[2]: Duplicate value: gpu.example.com/p/d0",
    ]


def test_shared_counters_and_consumption() -> None:
    """validateCounterSet and validateDeviceCounterConsumption: names required, counters required; a slice has
    sharedCounters or devices, not both ("only one of `sharedCounters` or `devices` is allowed")."""
    shared = slice_(devices=None, sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}, {}])
    assert texts(v.validate_resource_slice(shared)) == [
        "spec.sharedCounters[1].name: Required value",
        "spec.sharedCounters[1].counters: Required value",
    ]
    device: Obj = {"name": "d", "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "1Gi"}}}]}
    assert v.validate_resource_slice(slice_(devices=[device])) == []
    both = slice_(sharedCounters=[{"name": "gpu-0", "counters": {"memory": {"value": "80Gi"}}}])
    assert texts(v.validate_resource_slice(both)) == [
        'spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed'
    ]


def test_capacity_requests() -> None:
    """A request's consumable capacity: qualified names, quantities."""
    good = claim(capacity={"requests": {"memory": "10Gi"}})
    assert v.validate_resource_claim(good) == []
    bad = texts(v.validate_resource_claim(claim(capacity={"requests": {"a/b/c": "10Gi", "memory": "ten"}})))
    assert bad[0] == (
        'spec.devices.requests[0].exactly.capacity.requests[a/b/c]: Invalid value: "a/b/c": must be either '
        "<domain>/<identifier> or a C identifier"
    )
    assert bad[1].startswith('spec.devices.requests[0].exactly.capacity.requests[memory]: Invalid value: "ten"')


def test_device_limits() -> None:
    """ "too-many-devices": 128, or ResourceSliceMaxDevicesWithAdvancedFeatures (64) once a device has taints."""
    plain = [{"name": f"d{i}"} for i in range(129)]
    assert texts(v.validate_resource_slice(slice_(devices=plain))) == [
        "spec.devices: Too many: 129: must have at most 128 items"
    ]
    tainted: list[Obj] = [{"name": f"d{i}"} for i in range(65)]
    tainted[0]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    assert texts(v.validate_resource_slice(slice_(devices=tainted))) == [
        "spec.devices: Too many: 65: must have at most 64 items"
    ]


def test_device_class_extended_resource_name_and_stored_selectors() -> None:
    """validateDeviceClassSpec: extendedResourceName must be an extended resource name; on update, selectors equal
    to the stored ones are not compiled again (``stored``)."""
    obj: Obj = {"metadata": {"name": "c"}, "spec": {"extendedResourceName": "example.com/gpu"}}
    assert v.validate_device_class(obj) == []
    obj["spec"]["extendedResourceName"] = "gpu"
    assert texts(v.validate_device_class(obj)) == [
        'spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name'
    ]
    stored = {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {"expression": "?!"}}]}}
    assert v.validate_device_class_update(stored, stored) == []
    assert len(v.validate_device_class(stored)) == 1
