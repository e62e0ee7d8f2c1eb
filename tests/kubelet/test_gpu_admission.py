"""GPU devices in the simulated kubelet: the device manager's allocation at admission (recorded devices, first fit
for pods bound by hand, upstream's UnexpectedAdmissionError) and the fleet's per-node accounting, which annotates
pods bound without devices and frees devices when pods go."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubeplane.gpu.model import GPU_DEVICES_ANNOTATION, GPU_MILLI_ANNOTATION
from kubeplane.kubelet.admission import AdmitResult, admit_pod, allocate_gpus
from kubeplane.kubelet.fleet import FleetOptions
from tests.kubelet.harness import Env, Obj, running_fleet

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


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with running_fleet(NODES, FleetOptions(status_workers=2)) as started:
        yield started


async def test_fleet_accounts_devices_per_pod(env: Env) -> None:
    await env.create(gpu_pod("a", milli=600, devices="0"))
    await env.until(lambda: env.is_phase("a", "Running"), "a Running", step=0.5, tries=500)
    assert env.fleet.nodes["n1"].gpus[(await env.pod("a"))["metadata"]["uid"]] == (600, (0,))

    await env.create(gpu_pod("b", milli=600, devices="0"))  # the scheduler would never: device 0 is full
    await env.until(lambda: env.is_phase("b", "Failed"), "b rejected", step=0.5, tries=500)
    status = (await env.pod("b"))["status"]
    assert (status["reason"], status["message"]) == ("UnexpectedAdmissionError", UNAVAILABLE.format(1, 0))

    await env.create(gpu_pod("c", milli=600))  # bound by hand: first fit, and the kubelet records it
    await env.until(lambda: env.is_phase("c", "Running"), "c Running", step=0.5, tries=500)

    async def annotated() -> bool:
        return bool((await env.pod("c"))["metadata"]["annotations"].get(GPU_DEVICES_ANNOTATION) == "1")

    await env.until(annotated, "c annotated with device 1", step=0.5, tries=500)

    await env.create(gpu_pod("d", whole=1))  # both devices are partly used
    await env.until(lambda: env.is_phase("d", "Failed"), "d rejected", step=0.5, tries=500)
    assert (await env.pod("d"))["status"]["message"] == UNAVAILABLE.format(1, 0)

    await env.client.delete(env.pods, "a", namespace="default")
    await env.until(lambda: env.is_phase("a", "<gone>"), "a gone", step=0.5, tries=500)
    assert list(env.fleet.nodes["n1"].gpus.values()) == [(600, (1,))]
    await env.create(gpu_pod("e", milli=900, devices="0"))
    await env.until(lambda: env.is_phase("e", "Running"), "e Running on the freed device", step=0.5, tries=500)
