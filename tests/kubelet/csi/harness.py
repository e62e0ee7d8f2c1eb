"""A kubelet fleet with simulated CSI drivers over the in-process API server on a fake clock."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet

Obj = dict[str, Any]
DRIVER = "csi.kubeplane.io"


class CSIEnv:
    def __init__(self, client: LocalClient, clock: FakeClock, fleet: Fleet) -> None:
        self.client, self.clock, self.fleet = client, clock, fleet

    async def until(self, check: Callable[[], Awaitable[bool]], what: str, *, step: float = 0.0) -> None:
        for _ in range(500):
            if await check():
                return
            await asyncio.sleep(0.002)
            if step:
                await self.clock.advance(step)
        raise AssertionError(f"timed out waiting for {what}")

    async def get(self, resource: str, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return await self.client.get(self.client.resource(resource), name, namespace=namespace)
        except NotFoundError:
            return None

    async def items(self, resource: str, namespace: str | None = None) -> list[Obj]:
        return list((await self.client.list(self.client.resource(resource), namespace=namespace))["items"])

    async def capacities(self) -> dict[tuple[str, str], str]:
        """(class, segment) -> capacity of the published CSIStorageCapacity objects (one per pair asserted)."""
        out: dict[tuple[str, str], str] = {}
        for obj in await self.items("csistoragecapacities", "kube-system"):
            (seg,) = obj["nodeTopology"]["matchLabels"].values()
            key = (obj["storageClassName"], seg)
            assert key not in out, f"two CSIStorageCapacity objects for {key}"
            out[key] = obj["capacity"]
        return out

    async def create_class(self, name: str, mode: str = "WaitForFirstConsumer", **extra: Any) -> Obj:
        body = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name},
            "provisioner": DRIVER,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": mode,
            **extra,
        }
        return await self.client.create(self.client.resource("storageclasses"), body)

    async def create_claim(self, name: str, size: str, *, cls: str = "local", node: str | None = None) -> Obj:
        annotations = {"volume.kubernetes.io/storage-provisioner": DRIVER}
        if node:
            annotations["volume.kubernetes.io/selected-node"] = node
        body = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": size}},
                "storageClassName": cls,
            },
        }
        return await self.client.create(self.client.resource("persistentvolumeclaims"), body, namespace="default")

    async def events(self, name: str) -> list[tuple[str, str, str]]:
        await self.fleet.csi.flush_events()
        return [
            (e["type"], e["reason"], e["message"])
            for e in await self.items("events", "default")
            if e["involvedObject"].get("name") == name
        ]


def config(capacity: str | None = "10Gi", **driver: Any) -> Obj:
    group: Obj = {"count": 2, "namePattern": "n{index}"}
    if capacity is not None:
        group["csiCapacity"] = {DRIVER: capacity}
    return {"csiDrivers": [{"name": DRIVER, **driver}], "nodes": [group]}


@contextlib.asynccontextmanager
async def csi_fleet(
    data: Obj, *, client: LocalClient | None = None, clock: FakeClock | None = None
) -> AsyncIterator[CSIEnv]:
    clock = clock or FakeClock()
    own = client is None
    client = client or await LocalClient.in_memory(now=clock.now)
    fleet = Fleet(client, parse_node_config(data), clock=clock, rng=random.Random(1))
    await fleet.start()
    try:
        yield CSIEnv(client, clock, fleet)
    finally:
        await fleet.stop()
        if own:
            await client.close()
