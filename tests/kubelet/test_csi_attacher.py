"""The simulated external-attacher (kubernetes-csi/external-attacher ``pkg/controller``: ``csi_handler.go``
``syncAttach`` / ``syncDetach`` / ``SyncNewOrUpdatedPersistentVolume``, ``util.go`` ``GetFinalizerName`` /
``SanitizeDriverName``), on the fake clock over the in-process API server."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.csi_attacher import SimAttacher, attachment_name, finalizer_name, sanitize_driver_name
from tests.controllers.harness import eventually, settle
from tests.kubelet.storage_objects import DRIVER, Obj


@dataclass
class AEnv:
    client: LocalClient
    clock: FakeClock
    attacher: SimAttacher

    async def va(self, name: str) -> Obj | None:
        try:
            return await self.client.get(self.client.resource("volumeattachments"), name)
        except NotFoundError:
            return None

    async def create_va(self, pv: str, node: str = "n1", driver: str = DRIVER) -> str:
        name = attachment_name(f"h-{pv}", driver, node)
        body = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": name},
                "spec": {"attacher": driver, "nodeName": node, "source": {"persistentVolumeName": pv}}}  # fmt: skip
        await self.client.create(self.client.resource("volumeattachments"), body)
        return name

    async def create_pv(self, name: str) -> None:
        body = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                         "csi": {"driver": DRIVER, "volumeHandle": f"h-{name}"}}}  # fmt: skip
        await self.client.create(self.client.resource("persistentvolumes"), body)


@pytest.fixture
async def env() -> AsyncIterator[AEnv]:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    informers = SharedInformerFactory(client, clock=clock, rng=random.Random(0))
    attacher = SimAttacher(client, informers, clock, attach_time=3.0, detach_time=2.0, drivers=[DRIVER],
                           publish_context={"devicePath": "/dev/sim0"})  # fmt: skip
    task = asyncio.create_task(attacher.run())
    try:
        yield AEnv(client, clock, attacher)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await settle()
        await informers.stop()
        await client.close()


def test_finalizer_names_as_upstream() -> None:
    assert finalizer_name("csi.kubeplane.io") == "external-attacher/csi-kubeplane-io"
    assert sanitize_driver_name("example.com/disk_") == "example-com-disk-X"  # must not end with "-"


async def test_attach_after_attach_time_then_detach(env: AEnv) -> None:
    """syncAttach: VA finalizer, PV finalizer, then (after attach_time) status.attached with the publish context;
    syncDetach: after detach_time the finalizer goes and the API server deletes the object."""
    await env.create_pv("pv1")
    name = await env.create_va("pv1")

    async def finalized() -> Obj | None:
        va = await env.va(name)
        return va if va and va["metadata"].get("finalizers") else None

    va = await eventually(finalized, "VA finalizer")
    assert va is not None
    assert va["metadata"]["finalizers"] == ["external-attacher/csi-kubeplane-io"]
    assert not (va.get("status") or {}).get("attached")

    async def pv_finalizers() -> list[str]:
        pv = await env.client.get(env.client.resource("persistentvolumes"), "pv1")
        found = list(pv["metadata"].get("finalizers") or [])
        return found if "external-attacher/csi-kubeplane-io" in found else []

    # the PV also has the StorageObjectInUseProtection admission's finalizer, added at creation
    assert await eventually(pv_finalizers, "PV finalizer") == [
        "kubernetes.io/pv-protection",
        "external-attacher/csi-kubeplane-io",
    ]
    await env.clock.advance(2.0)
    await settle()
    assert not ((await env.va(name)) or {}).get("status", {}).get("attached")
    await env.clock.advance(1.5)

    async def attached() -> Obj | None:
        found = await env.va(name)
        return found if found and (found.get("status") or {}).get("attached") else None

    va = await eventually(attached, "attached")
    assert va is not None
    assert va["status"]["attachmentMetadata"] == {"devicePath": "/dev/sim0"}
    await env.client.delete(env.client.resource("volumeattachments"), name)
    await settle()
    assert await env.va(name) is not None  # held by the finalizer while detaching
    await env.clock.advance(2.5)
    await eventually(lambda: _gone(env.va(name)), "VA deleted after detach")

    await env.client.delete(env.client.resource("persistentvolumes"), "pv1")

    async def attacher_let_go() -> bool:
        try:
            pv = await env.client.get(env.client.resource("persistentvolumes"), "pv1")
        except NotFoundError:
            return True
        # only the pv-protection finalizer remains (its controller does not run in this harness)
        return list(pv["metadata"].get("finalizers") or []) == ["kubernetes.io/pv-protection"]

    await eventually(attacher_let_go, "PV finalizer removed once no attachment names it")


async def _gone(value: object) -> bool:
    return await value is None  # type: ignore[misc]


async def test_other_drivers_are_left_alone(env: AEnv) -> None:
    name = await env.create_va("pv2", driver="other.example.com")
    await env.clock.advance(10.0)
    await settle()
    va = await env.va(name)
    assert va is not None
    assert not va["metadata"].get("finalizers")
    assert not (va.get("status") or {}).get("attached")


async def test_per_driver_times_override_the_defaults(env: AEnv) -> None:
    """The node config's csiDrivers[].attachTime (the fleet passes them as ``times``): this driver attaches
    after 0.5 s instead of the attacher's default 3 s."""
    env.attacher.times = {DRIVER: (0.5, 0.0)}
    await env.create_pv("pv9")
    name = await env.create_va("pv9")

    async def pv_finalized() -> bool:
        pv = await env.client.get(env.client.resource("persistentvolumes"), "pv9")
        return "external-attacher/csi-kubeplane-io" in (pv["metadata"].get("finalizers") or [])

    await eventually(pv_finalized, "the attacher's finalizers")
    await settle()
    await env.clock.advance(0.5)

    async def attached() -> Obj | None:
        found = await env.va(name)
        return found if found and (found.get("status") or {}).get("attached") else None

    assert await eventually(attached, "attached after 0.5 s") is not None
