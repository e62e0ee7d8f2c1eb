"""GPUs shared by capacity from the node config (DRAConsumableCapacity, beta and on in v1.37): the fleet publishes a
device with ``allowMultipleAllocations`` and a memory ``requestPolicy``, a running Scheduler allocates shares of it
and the kubelet prepares both claims on the one device.

Pins upstream's allocator behaviour for shared devices (allocator_testing.go "consumable-capacity-multi-allocatable-
device-without-policy-with-capacity-request" / "...-with-range-policy-with-capacity-request" / "...-with-allocated-
capacity-next-device"): every share has its own ``shareID`` and ``consumedCapacity``, the shares of one device
never exceed its value, a request is rounded up by the policy, and a share that no longer fits goes to the next
device.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import pytest

from kubeplane.kubelet.config import NodeConfigError, parse_node_config
from kubeplane.kubelet.dra.slices import wanted_slices
from kubeplane.kubelet.fleet import FleetOptions
from kubeplane.scheduler.scheduler import Scheduler
from tests.kubelet.harness import Env, running_fleet

DRIVER = "gpu.example.com"
POLICY = {"default": "10Gi", "validRange": {"min": "5Gi", "step": "5Gi", "max": "40Gi"}}
CONFIG: dict[str, Any] = {
    "csiDrivers": [],
    "nodes": [
        {
            "name": "node01",
            "devices": [
                {
                    "driver": DRIVER,
                    "count": 2,
                    "allowMultipleAllocations": True,
                    "attributes": {"model": "A100"},
                    "capacity": {"memory": {"value": "40Gi", "requestPolicy": POLICY}},
                }
            ],
        }
    ],
}
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "shared-gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}" && device.allowMultipleAllocations'}}]},
}


def claim(name: str, memory: str) -> dict[str, Any]:
    request = {"deviceClassName": "shared-gpu", "capacity": {"requests": {"memory": memory}}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
    }


def test_the_node_config_publishes_shared_devices_with_their_policy() -> None:
    (node,) = parse_node_config(CONFIG)
    ((content,),) = wanted_slices(node).values()
    device = content["devices"][0]
    assert device["allowMultipleAllocations"] is True
    assert device["capacity"] == {"memory": {"value": "40Gi", "requestPolicy": POLICY}}


@pytest.mark.parametrize(
    ("capacity", "multi", "message"),
    [
        ({"memory": {"value": "40Gi", "requestPolicy": POLICY}}, False,
         "requestPolicy: Forbidden: allowMultipleAllocations must be true"),
        ({"memory": {"value": "40Gi", "requestPolicy": {"validRange": {"min": "1Gi"}}}}, True,
         "requestPolicy.default: Required value: required when validRange is defined"),
        ({"memory": {"value": "40Gi", "requestPolicy": {"default": "3Gi", "validValues": ["2Gi", "4Gi"]}}}, True,
         r'requestPolicy.validValues: Invalid value: "3Gi": default value is not valid according to the requestPolicy'),
        ({"memory": {"value": "40Gi", "requestPolicy": {"default": "4Gi", "validValues": ["4Gi", "2Gi"]}}}, True,
         r'requestPolicy.validValues\[1\]: Invalid value: "2Gi": values must be sorted in ascending order'),
        ({"memory": {"value": "40Gi", "requestPolicy": {"default": "8Gi", "validRange": {"min": "4Gi",
                                                                                         "max": "80Gi"}}}}, True,
         r'requestPolicy.validRange.max: Invalid value: "80Gi": max is larger than capacity value: 40Gi'),
        ({"memory": {"value": "40Gi", "requestPolicy": {"default": "6Gi", "validRange": {"min": "4Gi",
                                                                                         "step": "4Gi"}}}}, True,
         r'validRange.step: Invalid value: "6Gi": value is not a multiple of a given step \(4Gi\) from \(4Gi\)'),
    ],
)  # fmt: skip
def test_request_policies_the_api_would_refuse_fail_at_load(capacity: Any, multi: bool, message: str) -> None:
    """Upstream CapacityRequestPolicy rules, with the API server's own messages (validateRequestPolicy in
    pkg/apis/resource/validation/validation.go: the node config calls the same rule), one line naming the group."""
    group = {"driver": DRIVER, "allowMultipleAllocations": multi, "capacity": capacity}
    with pytest.raises(NodeConfigError, match=message) as info:
        parse_node_config([{"name": "node01", "devices": [group]}])
    assert "\n" not in str(info.value)
    assert "node group node01" in str(info.value)


async def _allocation(env: Env, name: str) -> dict[str, Any] | None:
    claim = await env.client.get(env.client.resource("resourceclaims"), name, namespace="default")
    status = claim.get("status") or {}
    return status["allocation"] if status.get("allocation") and status.get("reservedFor") else None


async def test_two_pods_with_half_a_gpu_each_share_one_device() -> None:
    async with running_fleet(CONFIG, FleetOptions()) as env:
        scheduler = Scheduler(env.client, clock=env.clock, rng=random.Random(0))
        task = asyncio.ensure_future(scheduler.run())
        try:
            await env.client.create(env.client.resource("deviceclasses"), CLASS)
            for name, memory in (("half-a", "20Gi"), ("half-b", "20Gi"), ("more", "12Gi")):
                await env.client.create(env.client.resource("resourceclaims"), claim(name, memory), namespace="default")
            results: dict[str, dict[str, Any]] = {}
            for name in ("half-a", "half-b", "more"):  # one after another: the allocation order is fixed
                await env.create_pod(
                    name,
                    node="",
                    containers=[{"name": "app", "image": "nginx:1.27", "resources": {"claims": [{"name": "gpu"}]}}],
                    resourceClaims=[{"name": "gpu", "resourceClaimName": name}],
                )

                async def allocated(claim_name: str = name) -> bool:
                    allocation = await _allocation(env, claim_name)
                    if allocation is None:
                        return False
                    results[claim_name] = allocation["devices"]["results"][0]
                    return True

                await env.until(allocated, f"{name}'s claim allocated", step=0.1)
            a, b, more = results["half-a"], results["half-b"], results["more"]
            assert a["device"] == b["device"]  # two halves of one GPU
            assert a["consumedCapacity"] == b["consumedCapacity"] == {"memory": "20Gi"}
            assert uuid.UUID(a["shareID"]) != uuid.UUID(b["shareID"])
            # 12Gi rounds up to 15Gi by the policy's step; the first GPU has nothing left, so the second.
            assert more["device"] != a["device"]
            assert more["consumedCapacity"] == {"memory": "15Gi"}

            async def running() -> bool:
                return all([await env.is_phase(n, "Running") for n in ("half-a", "half-b", "more")])

            await env.until(running, "the three pods running", step=1.0)
            prepared = env.fleet.dra.prepared_devices("node01")
            assert prepared["default/half-a"] == prepared["default/half-b"] == [(DRIVER, "node01", a["device"])]
        finally:
            await scheduler.stop()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
