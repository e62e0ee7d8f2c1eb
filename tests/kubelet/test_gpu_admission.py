"""GPU devices in the simulated kubelet: the device manager's allocation at admission (recorded devices, first fit
for pods bound by hand, upstream's UnexpectedAdmissionError) and the fleet's per-node accounting, which annotates
pods bound without devices and frees devices when pods go."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.gpu.model import GPU_DEVICES_ANNOTATION, GPU_MILLI_ANNOTATION
from kubeplane.kubelet.admission import AdmitResult, admit_pod, allocate_gpus
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet, FleetOptions

Obj = dict[str, Any]

UNAVAILABLE = (
    "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
    "Requested: {}, Available: {}, which is unexpected"
)


def node(gpus: int | None = 2) -> Obj:
    allocatable = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    if gpus is not None:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {"metadata": {"name": "n1", "labels": {}}, "status": {"allocatable": allocatable}}


def gpu_pod(name: str, *, milli: int | None = None, whole: int = 0, devices: str | None = None) -> Obj:
    annotations: dict[str, str] = {}
    if milli is not None:
        annotations[GPU_MILLI_ANNOTATION] = str(milli)
    if devices is not None:
        annotations[GPU_DEVICES_ANNOTATION] = devices
    resources: Obj = {}
    if whole:
        resources = {"requests": {"nvidia.com/gpu": str(whole)}, "limits": {"nvidia.com/gpu": str(whole)}}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": name, "annotations": annotations},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx:1.27", "resources": resources}]},
    }


def rejected(requested: int, available: int) -> AdmitResult:
    return AdmitResult(False, "UnexpectedAdmissionError", UNAVAILABLE.format(requested, available))


# --- allocate_gpus / admit_pod ---------------------------------------------------------------------------------


def test_recorded_devices_are_used_when_they_have_room() -> None:
    assert allocate_gpus(gpu_pod("p", milli=500, devices="1"), node(), [1000, 500]) == AdmitResult(True, devices=(1,))
    assert allocate_gpus(gpu_pod("p", milli=600, devices="1"), node(), [1000, 500]) == rejected(1, 0)
    assert allocate_gpus(gpu_pod("p", whole=2, devices="0,1"), node(), [1000, 1000]) == AdmitResult(
        True, devices=(0, 1)
    )
    assert allocate_gpus(gpu_pod("p", whole=2, devices="0,1"), node(), [1000, 999]) == rejected(2, 1)


def test_pods_without_devices_get_first_fit() -> None:
    assert allocate_gpus(gpu_pod("p", milli=500), node(), [400, 600]) == AdmitResult(True, devices=(1,))
    assert allocate_gpus(gpu_pod("p", milli=700), node(), [400, 600]) == rejected(1, 0)
    assert allocate_gpus(gpu_pod("p", whole=1), node(), [400, 1000]) == AdmitResult(True, devices=(1,))
    assert allocate_gpus(gpu_pod("p", whole=2), node(), [400, 1000]) == rejected(2, 1)
    # an annotation naming a device the node does not have counts as no annotation
    assert allocate_gpus(gpu_pod("p", milli=100, devices="5"), node(), [1000, 1000]) == AdmitResult(True, devices=(0,))


def test_gpu_less_pods_and_nodes() -> None:
    assert allocate_gpus(gpu_pod("cpu"), node(), [1000]) == AdmitResult(True)
    # whole GPUs on a node that does not list the resource: not a device-plugin resource there (upstream)
    assert allocate_gpus(gpu_pod("p", whole=1), node(None), []) == AdmitResult(True)
    assert allocate_gpus(gpu_pod("p", whole=1), node(0), []) == rejected(1, 0)
    assert allocate_gpus(gpu_pod("p", milli=100), node(None), []) == rejected(1, 0)
    bad = gpu_pod("p", milli=100)
    bad["metadata"]["annotations"][GPU_MILLI_ANNOTATION] = "lots"
    result = allocate_gpus(bad, node(), [1000])
    assert result.reason == "UnexpectedAdmissionError"
    assert (
        result.message
        == "Allocate failed due to annotation gpu.kubeplane.io/milli: 'lots' is not an integer, which is unexpected"
    )


def test_admit_pod_allocates_between_the_eviction_and_predicate_handlers() -> None:
    p = gpu_pod("p", milli=500)
    assert admit_pod(p, node(), [], gpu_idle=[1000, 1000]) == AdmitResult(True, devices=(0,))
    assert admit_pod(p, node(), [], gpu_idle=[100, 100]) == rejected(1, 0)
    assert admit_pod(p, node(), []) == AdmitResult(True)  # no device accounting asked for
    # the eviction manager's handler comes first
    assert admit_pod(p, node(), [], gpu_idle=[100], under_disk_pressure=True).reason == "Evicted"
    # the predicate handler comes after: a pod whose devices fit can still fail there (no devices then)
    whole = gpu_pod("w", whole=1)
    others = [gpu_pod("o", whole=2)]
    result = admit_pod(whole, node(), others, gpu_idle=[1000, 1000, 1000])
    assert (result.reason, result.devices) == ("OutOfnvidia.com/gpu", None)


# --- the fleet --------------------------------------------------------------------------------------------------

NODES = [{"name": "n1", "capacity": {"cpu": "8", "memory": "16Gi", "pods": "20", "nvidia.com/gpu": "2"}}]


class Env:
    def __init__(self, client: LocalClient, clock: FakeClock, fleet: Fleet) -> None:
        self.client, self.clock, self.fleet = client, clock, fleet
        self.pods = client.resource("pods")

    async def until(self, check: Callable[[], Awaitable[bool]], what: str) -> None:
        for _ in range(500):
            if await check():
                return
            await asyncio.sleep(0.002)
            await self.clock.advance(0.5)
        raise AssertionError(f"timed out waiting for {what}")

    async def pod(self, name: str) -> Obj:
        return await self.client.get(self.pods, name, namespace="default")

    async def phase(self, name: str) -> str:
        try:
            return str((await self.pod(name)).get("status", {}).get("phase", ""))
        except NotFoundError:
            return "<gone>"

    async def is_phase(self, name: str, phase: str) -> bool:
        return await self.phase(name) == phase

    async def create(self, body: Obj) -> Obj:
        body = {**body, "apiVersion": "v1", "kind": "Pod"}
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "uid"}
        return await self.client.create(self.pods, body, namespace="default")


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    fleet = Fleet(
        client, parse_node_config(NODES), clock=clock, rng=random.Random(1), options=FleetOptions(status_workers=2)
    )
    await fleet.start()
    try:
        yield Env(client, clock, fleet)
    finally:
        await fleet.stop()
        await client.close()


async def test_fleet_accounts_devices_per_pod(env: Env) -> None:
    await env.create(gpu_pod("a", milli=600, devices="0"))
    await env.until(lambda: env.is_phase("a", "Running"), "a Running")
    assert env.fleet.nodes["n1"].gpus[(await env.pod("a"))["metadata"]["uid"]] == (600, (0,))

    await env.create(gpu_pod("b", milli=600, devices="0"))  # the scheduler would never: device 0 is full
    await env.until(lambda: env.is_phase("b", "Failed"), "b rejected")
    status = (await env.pod("b"))["status"]
    assert (status["reason"], status["message"]) == ("UnexpectedAdmissionError", UNAVAILABLE.format(1, 0))

    await env.create(gpu_pod("c", milli=600))  # bound by hand: first fit, and the kubelet records it
    await env.until(lambda: env.is_phase("c", "Running"), "c Running")

    async def annotated() -> bool:
        return bool((await env.pod("c"))["metadata"]["annotations"].get(GPU_DEVICES_ANNOTATION) == "1")

    await env.until(annotated, "c annotated with device 1")

    await env.create(gpu_pod("d", whole=1))  # both devices are partly used
    await env.until(lambda: env.is_phase("d", "Failed"), "d rejected")
    assert (await env.pod("d"))["status"]["message"] == UNAVAILABLE.format(1, 0)

    await env.client.delete(env.pods, "a", namespace="default")
    await env.until(lambda: env.is_phase("a", "<gone>"), "a gone")
    assert list(env.fleet.nodes["n1"].gpus.values()) == [(600, (1,))]
    await env.create(gpu_pod("e", milli=900, devices="0"))
    await env.until(lambda: env.is_phase("e", "Running"), "e Running on the freed device")
