"""FGD places GPU shares requested through DRA consumable capacity, through the real Scheduler over the in-process
API server (DynamicResources allocates, FGD only scores: docs/gpu.md, "DRA GPUs").

Four nodes, each with one GPU of the driver gpu.example.com that takes several allocations
(``allowMultipleAllocations``, DRAConsumableCapacity: on in v1.37) and has 40Gi of memory. FGD's target workload is
whole GPUs, so a share leaves the rest of its device fragmented: after the first share lands anywhere, FGD puts the
next shares on that same device (using the fragment lowers fragmentation; opening another device raises it), until
it is full -- the FGD paper's behaviour for shares (FGD-EXPERIMENT.md §2.2), here with the devices the allocator
recorded in the claims' ``status.allocation`` (results with ``consumedCapacity``). A GPU-blind scheduler would
spread them (1/64 chance of this outcome at random).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.local import LocalClient
from kubeplane.gpu.dra import DraIndex, claim_usage
from kubeplane.scheduler.config import parse_config
from kubeplane.scheduler.scheduler import Scheduler

Obj = dict[str, Any]
DRIVER = "gpu.example.com"
NODES = ("n1", "n2", "n3", "n4")

WHOLE_GPU: Obj = {"cpu": "1", "gpuMilli": 1000, "gpuCount": 1, "weight": 1}
CONFIG: Obj = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 100,
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "preScore": {"enabled": [{"name": "FGD"}]},
                "score": {"disabled": [{"name": "*"}], "enabled": [{"name": "FGD"}]},
            },
            "pluginConfig": [
                {
                    "name": "FGD",
                    "args": {"targetWorkload": [{"cpu": "1", "gpuMilli": 1000, "gpuCount": 1, "weight": 1}]},
                }
            ],
        }
    ],
}


def node(name: str) -> Obj:
    allocatable = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def gpu_slice(name: str) -> Obj:
    device = {
        "name": "gpu-0",
        "allowMultipleAllocations": True,
        "attributes": {"model": {"string": "A100"}},
        "capacity": {"memory": {"value": "40Gi"}},
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-{DRIVER}"},
        "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                 "devices": [device]},
    }  # fmt: skip


def share_claim(name: str, memory: str) -> Obj:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpus", "capacity": {"requests": {"memory": memory}}}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [request]}},
    }


def pod(name: str) -> Obj:
    resources = {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}],
            "containers": [{"name": "c", "image": "x", "resources": resources}],
        },
    }


@pytest.fixture
async def client() -> AsyncIterator[LocalClient]:
    c = await LocalClient.in_memory()
    yield c
    await c.close()


async def _bound(client: LocalClient, name: str) -> str:
    for _ in range(1000):
        got = await client.get(client.resource("pods"), name, namespace="default")
        if got["spec"].get("nodeName"):
            return str(got["spec"]["nodeName"])
        await asyncio.sleep(0.01)
    raise AssertionError(f"pod {name} was not bound")


async def test_fgd_packs_dra_shares_onto_one_device(client: LocalClient) -> None:
    for name in NODES:
        await client.create(client.resource("nodes"), node(name))
        await client.create(client.resource("resourceslices"), gpu_slice(name))
    selector = {"cel": {"expression": f'device.driver == "{DRIVER}"'}}
    await client.create(
        client.resource("deviceclasses"),
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpus"},
         "spec": {"selectors": [selector]}},
    )  # fmt: skip
    scheduler = Scheduler(client, config=parse_config(CONFIG), rng=random.Random(3))
    task = asyncio.ensure_future(scheduler.run())
    try:
        placed = []
        for name, memory in (("a", "10Gi"), ("b", "10Gi"), ("c", "10Gi"), ("d", "10Gi")):
            await client.create(
                client.resource("resourceclaims"), share_claim(f"{name}-gpu", memory), namespace="default"
            )
            await client.create(client.resource("pods"), pod(name), namespace="default")
            placed.append(await _bound(client, name))  # one at a time: each sees the previous allocations
        assert len(set(placed)) == 1, placed
        claims = (await client.list(client.resource("resourceclaims"), namespace="default"))["items"]
        slices = (await client.list(client.resource("resourceslices")))["items"]
        index = DraIndex(slices, (await client.list(client.resource("deviceclasses")))["items"])
        uses = [claim_usage(c, index) for c in claims]
        assert all(u is not None and u[0] == placed[0] for u in uses)
        assert sum(req.total_milli for u in uses if u is not None for req, _ in u[1]) == 1000
        results = [c["status"]["allocation"]["devices"]["results"][0] for c in claims]
        assert {r["consumedCapacity"]["memory"] for r in results} == {"10Gi"}
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await scheduler.stop()
