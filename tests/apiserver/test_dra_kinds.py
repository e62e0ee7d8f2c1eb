"""resource.k8s.io/v1 through the in-process API server: strategies, defaults and admission validation.

Pins: pkg/registry/resource/deviceclass/strategy.go and resourceslice/strategy.go (generation 1 on create, one
more on a spec change), pkg/registry/resource/resourceclaim/strategy.go (status reset on create, kept by an
update of the main resource; spec kept on /status), pkg/apis/resource/validation (a failed write changes
nothing).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import InvalidError
from kubeplane.client.local import LocalClient

Obj = dict[str, Any]
T0 = 1_800_000_000.0


@pytest.fixture
async def client() -> AsyncIterator[LocalClient]:
    clock = FakeClock(T0)
    c = await LocalClient.in_memory(clock=clock, now=clock.now)
    yield c
    await c.close()


def device_class(expression: str = "true") -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


def claim() -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }


async def test_device_class_generation(client: LocalClient) -> None:
    res = client.resource("deviceclasses")
    created = await client.create(res, device_class())
    assert created["metadata"]["generation"] == 1
    same = await client.update(res, created)
    assert same["metadata"]["generation"] == 1
    created = same
    created["spec"]["selectors"][0]["cel"]["expression"] = "false"
    changed = await client.update(res, created)
    assert changed["metadata"]["generation"] == 2


async def test_bad_selector_changes_nothing(client: LocalClient) -> None:
    res = client.resource("deviceclasses")
    with pytest.raises(InvalidError) as err:
        await client.create(res, device_class("device.nope"))
    assert "spec.selectors[0].cel.expression: Invalid value" in str(err.value)
    assert "undefined field 'nope'" in str(err.value)
    created = await client.create(res, device_class())
    created["spec"]["selectors"][0]["cel"]["expression"] = "1 +"
    with pytest.raises(InvalidError):
        await client.update(res, created)
    stored = await client.get(res, "gpu.example.com")
    assert stored["spec"]["selectors"][0]["cel"]["expression"] == "true"


async def test_claim_status_split(client: LocalClient) -> None:
    res = client.resource("resourceclaims")
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node01", "device": "gpu-0"}]}
    }
    created = await client.create(res, {**claim(), "status": {"allocation": allocation}}, namespace="default")
    assert "allocation" not in (created.get("status") or {})  # PrepareForCreate resets the status
    exactly = created["spec"]["devices"]["requests"][0]["exactly"]
    assert (exactly["allocationMode"], exactly["count"]) == ("ExactCount", 1)
    created["status"] = {"allocation": allocation, "reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}
    allocated = await client.update(res, created, namespace="default", subresource="status")
    assert allocated["status"]["allocation"] == allocation
    allocated["status"] = {}
    kept = await client.update(res, allocated, namespace="default")  # the main resource keeps the status
    assert kept["status"]["allocation"] == allocation
    kept["spec"]["devices"]["requests"][0]["name"] = "other"
    with pytest.raises(InvalidError) as err:
        await client.update(res, kept, namespace="default")
    assert "field is immutable" in str(err.value)


async def test_resource_slice_generation(client: LocalClient) -> None:
    res = client.resource("resourceslices")
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node01-gpu"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "node01",
            "pool": {"name": "node01", "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "A100"}}}],
        },
    }
    created = await client.create(res, obj)
    assert created["metadata"]["generation"] == 1
    created["spec"]["devices"].append({"name": "gpu-1"})
    assert (await client.update(res, created))["metadata"]["generation"] == 2
