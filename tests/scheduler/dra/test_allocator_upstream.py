"""The structured allocator against upstream's shared allocator table (``staging/src/k8s.io/dynamic-resource-
allocation/structured/internal/allocatortesting/allocator_testing.go`` ``TestAllocator``), a representative set
translated case by case; each test id is the upstream case name.

Builders expanded as upstream: ``node(name, region)`` has labels region/planet; ``class(name, driver)`` selects
``device.driver == "<driver>"``; ``sliceWithDevices(name, node, pool, driver, ...)`` has ``spec.nodeName`` and a pool
of generation 1, one slice; ``localNodeSelector(node)`` is a metadata.name In [node] matchFields term. Upstream
ignores nothing in results here except the order-free NodeSelector values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from kubeplane.scheduler.dra.allocated import AllocatedState, gather_allocated_state
from kubeplane.scheduler.dra.allocator import AllocationError, Allocator, FailedOnNode
from kubeplane.scheduler.dra.features import DEFAULT_FEATURES

NODE1, NODE2 = "node-1", "node-2"
A, B = "driver-a", "driver-b"
CLASS_A, CLASS_B = "class-a", "class-b"
TAINT_NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
TAINT_NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOLERATE_NO_EXECUTE = {"operator": "Equal", "key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}


def node(name: str, region: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"region": region, "planet": "earth"}}}


def klass(name: str, driver: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def device(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def slice_(name: str, node_name: str, pool: str, driver: str, *devices: Mapping[str, Any], count: int = 1,
           **spec: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
            "devices": list(devices),
            **spec,
        },
    }


def one_device(name: str, node_name: str, pool: str, driver: str) -> dict[str, Any]:
    return slice_(name, node_name, pool, driver, device("device-1"))


def request(name: str, cls: str, count: int = 1, **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount", "count": count, **fields}}


def all_request(name: str, cls: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "All", **fields}}


def first_available(name: str, *subs: tuple[str, str, int]) -> dict[str, Any]:
    return {
        "name": name,
        "firstAvailable": [
            {"name": s, "deviceClassName": c, "allocationMode": "ExactCount", "count": n} for s, c, n in subs
        ],
    }


def claim(name: str, *requests: Mapping[str, Any], constraints: list[Any] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name}, "spec": {"devices": devices}}


def result(req: str, driver: str, pool: str, dev: str, admin: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"request": req, "driver": driver, "pool": pool, "device": dev}
    if admin:
        out["adminAccess"] = True
    return out


def allocation(node_name: str, *results: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "devices": {"results": list(results)},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]
        },
    }


def allocated(*ids: tuple[str, str, str]) -> AllocatedState:
    return gather_allocated_state(
        [{"status": {"allocation": {"devices": {"results": [result("r", *i) for i in ids]}}}}]
    )


ATTRS = {
    "driverVersion": {"version": "1.0.0"},
    "numa": {"int": 1},
    "stringAttribute": {"string": "stringAttributeValue"},
    "boolAttribute": {"bool": True},
}
MATCH_ALL = [{"matchAttribute": f"{A}/{n}"} for n in ("numa", "driverVersion", "stringAttribute", "boolAttribute")]

CASES: dict[str, dict[str, Any]] = {
    "simple": {
        "claims": [claim("claim-0", request("req-0", CLASS_A))],
        "classes": [klass(CLASS_A, A)],
        "slices": [one_device("slice-1", NODE1, "pool-1", A)],
        "node": node(NODE1, "region-1"),
        "want": [allocation(NODE1, result("req-0", A, "pool-1", "device-1"))],
    },
    "other-node": {
        "claims": [claim("claim-0", request("req-0", CLASS_A))],
        "classes": [klass(CLASS_A, A)],
        "slices": [one_device("slice-1", NODE1, "pool-1", B), one_device("slice-2", NODE2, "pool-2", A)],
        "node": node(NODE2, "region-2"),
        "want": [allocation(NODE2, result("req-0", A, "pool-2", "device-1"))],
    },
    "small-and-large-backtrack-requests": {
        "claims": [
            claim(
                "claim-0",
                request("req-0", CLASS_A, selectors=[
                    {"cel": {"expression": f'device.capacity["{A}"].memory.compareTo(quantity("1Gi")) >= 0'}}]),
                request("req-1", CLASS_A, selectors=[
                    {"cel": {"expression": f'device.capacity["{A}"].memory.compareTo(quantity("2Gi")) >= 0'}}]),
            )
        ],
        "classes": [klass(CLASS_A, A)],
        "slices": [
            slice_("slice-1", NODE1, "pool-1", A,
                   device("device-2", capacity={"memory": {"value": "2Gi"}}),
                   device("device-1", capacity={"memory": {"value": "1Gi"}}))
        ],
        "node": node(NODE1, "region-1"),
        "want": [allocation(NODE1, result("req-0", A, "pool-1", "device-1"), result("req-1", A, "pool-1", "device-2"))],
    },
    "devices-split-across-different-slices": {
        "claims": [claim("claim-0", request("req-0", CLASS_A, 2))],
        "classes": [klass(CLASS_A, A)],
        "slices": [one_device("slice-1", NODE1, "pool-1", A), one_device("slice-2", NODE1, "pool-2", A)],
        "node": node(NODE1, "region-1"),
        "want": [allocation(NODE1, result("req-0", A, "pool-1", "device-1"), result("req-0", A, "pool-2", "device-1"))],
    },
    "no-slices": {
        "claims": [claim("claim-0", request("req-0", CLASS_A))],
        "classes": [klass(CLASS_A, A)],
        "slices": [],
        "node": node(NODE1, "region-1"),
        "want": None,
    },
    "not-enough-suitable-devices": {
        "claims": [claim("claim-0", request("req-0", CLASS_A)), claim("claim-0", request("req-1", CLASS_A))],
        "classes": [klass(CLASS_A, A)],
        "slices": [one_device("slice-1", NODE1, "pool-1", A)],
        "node": node(NODE1, "region-1"),
        "want": None,
    },
    "unknown-class": {
        "claims": [claim("claim-0", request("req-0", "unknown-class"))],
        "classes": [klass(CLASS_A, A)],
        "slices": [one_device("slice-1", NODE1, "pool-1", A)],
        "node": node(NODE1, "region-1"),
        "error": "could not retrieve device class unknown-class",
    },
    "all-devices-many": {
        "claims": [claim("claim-0", all_request("req-0", CLASS_A))],
        "classes": [klass(CLASS_A, A)],
        "slices": [one_device("slice-1", NODE1, "pool-1", A), one_device("slice-1", NODE1, "pool-2", A)],
        "node": node(NODE1, "region-1"),
        "want": [allocation(NODE1, result("req-0", A, "pool-1", "device-1"), result("req-0", A, "pool-2", "device-1"))],
    },
    "all-devices-of-the-incomplete-pool": {
        "claims": [claim("claim-0", all_request("req-0", CLASS_A, count=1))],
        "classes": [klass(CLASS_A, A)],
        "slices": [slice_("slice-1", NODE1, "pool-1", A, device("device-1"), count=2)],
        "node": node(NODE1, "region-1"),
        "error": "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently "
        "being updated",
    },
    "all-devices-some-allocated": {
        "claims": [claim("claim-0", all_request("req-0", CLASS_A))],
        "allocated": [(A, "pool-1", "device-1")],
        "classes": [klass(CLASS_A, A)],
        "slices": [slice_("slice-1", NODE1, "pool-1", A, device("device-1"), device("device-2"))],
        "node": node(NODE1, "region-1"),
        "want": None,
    },
    "all-devices-some-allocated-admin-access": {
        "claims": [claim("claim-0", all_request("req-0", CLASS_A, adminAccess=True))],
        "allocated": [(A, "pool-1", "device-1")],
        "classes": [klass(CLASS_A, A)],
        "slices": [slice_("slice-1", NODE1, "pool-1", A, device("device-1"), device("device-2"))],
        "node": node(NODE1, "region-1"),
        "want": [
            allocation(
                NODE1, result("req-0", A, "pool-1", "device-1", True), result("req-0", A, "pool-1", "device-2", True)
            )
        ],
    },
    "separate-claims-share-device-admin-access": {
        "claims": [
            claim("claim-0", request("req-0", CLASS_A, adminAccess=True)),
            claim("claim-1", request("req-0", CLASS_A, adminAccess=True)),
        ],
        "classes": [klass(CLASS_A, A)],
        "slices": [slice_("slice-1", NODE1, "pool-1", A, device("device-1"), device("device-2"))],
        "node": node(NODE1, "region-1"),
        "want": [
            allocation(NODE1, result("req-0", A, "pool-1", "device-1", True)),
            allocation(NODE1, result("req-0", A, "pool-1", "device-1", True)),
        ],
    },
    "prioritized-list-first-unavailable": {
        "claims": [claim("claim-0", first_available("req-0", ("subReq-0", CLASS_B, 1), ("subReq-1", CLASS_A, 1)))],
        "classes": [klass(CLASS_A, A), klass(CLASS_B, B)],
        "slices": [one_device("slice-1", NODE1, "pool-1", A)],
        "node": node(NODE1, "region-1"),
        "want": [allocation(NODE1, result("req-0/subReq-1", A, "pool-1", "device-1"))],
    },
    "prioritized-list-too-many-in-first-subrequest": {
        "claims": [claim("claim-0", first_available("req-0", ("subReq-0", CLASS_B, 500), ("subReq-1", CLASS_A, 1)))],
        "classes": [klass(CLASS_A, A), klass(CLASS_B, B)],
        "slices": [one_device("slice-1", NODE1, "pool-1", A)],
        "node": node(NODE1, "region-1"),
        "want": [allocation(NODE1, result("req-0/subReq-1", A, "pool-1", "device-1"))],
    },
    "with-constraint": {
        "claims": [claim("claim-0", request("req-0", CLASS_A), request("req-1", CLASS_A), constraints=MATCH_ALL)],
        "classes": [klass(CLASS_A, A)],
        "slices": [
            slice_("slice-1", NODE1, "pool-1", A, device("device-1", attributes=ATTRS),
                   device("device-2", attributes=ATTRS))
        ],
        "node": node(NODE1, "region-1"),
        "want": [allocation(NODE1, result("req-0", A, "pool-1", "device-1"), result("req-1", A, "pool-1", "device-2"))],
    },
    "tainted-two-devices": {
        "claims": [claim("claim-0", request("req-0", CLASS_A))],
        "classes": [klass(CLASS_A, A)],
        "slices": [
            slice_("slice-1", NODE1, "pool-1", A, device("device-1", taints=[TAINT_NO_SCHEDULE]),
                   device("device-2", taints=[TAINT_NO_EXECUTE]))
        ],
        "node": node(NODE1, "region-1"),
        "want": None,
    },
    "tainted-one-device-two-taints": {
        "claims": [claim("claim-0", request("req-0", CLASS_A))],
        "classes": [klass(CLASS_A, A)],
        "slices": [slice_("slice-1", NODE1, "pool-1", A, device("device-1", taints=[TAINT_NO_SCHEDULE,
                                                                                      TAINT_NO_EXECUTE]))],
        "node": node(NODE1, "region-1"),
        "want": None,
    },
    "tainted-two-devices-tolerated": {
        "claims": [claim("claim-0", request("req-0", CLASS_A, tolerations=[TOLERATE_NO_EXECUTE]))],
        "classes": [klass(CLASS_A, A)],
        "slices": [
            slice_("slice-1", NODE1, "pool-1", A, device("device-1", taints=[TAINT_NO_SCHEDULE]),
                   device("device-2", taints=[TAINT_NO_EXECUTE]))
        ],
        "node": node(NODE1, "region-1"),
        "want": [
            allocation(
                NODE1, {**result("req-0", A, "pool-1", "device-2"), "tolerations": [TOLERATE_NO_EXECUTE]}
            )
        ],
    },
    "partitionable-devices-single-device": {
        "claims": [claim("claim-0", request("req-0", CLASS_A))],
        "classes": [klass(CLASS_A, A)],
        "slices": [
            slice_("slice-1", NODE1, "pool-1", A,
                   device("device-1", consumesCounters=[{"counterSet": "counter-set-1",
                                                          "counters": {"memory": {"value": "4Gi"}}}]), count=2),
            {"metadata": {"name": "slice-2"}, "spec": {
                "driver": A, "nodeName": NODE1, "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "counter-set-1", "counters": {"memory": {"value": "8Gi"}}}]}},
        ],
        "node": node(NODE1, "region-1"),
        "want": [allocation(NODE1, result("req-0", A, "pool-1", "device-1"))],
    },
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_allocator(name: str) -> None:
    """Upstream TestAllocator case ``name`` with v1.37's features (all the features these cases need are on)."""
    case = CASES[name]
    state = allocated(*case.get("allocated", ()))
    classes = {c["metadata"]["name"]: c for c in case["classes"]}
    allocator = Allocator(DEFAULT_FEATURES, state, classes, case["slices"])
    if "error" in case:
        with pytest.raises((AllocationError, FailedOnNode)) as info:
            allocator.allocate(case["node"], case["claims"])
        assert case["error"] in str(info.value)
        return
    got = allocator.allocate(case["node"], case["claims"])
    assert got == case["want"]
