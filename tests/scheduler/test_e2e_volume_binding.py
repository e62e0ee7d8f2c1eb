"""VolumeBinding end to end: the in-process Scheduler over the local transport, the test playing the PV controller
(upstream's integration tests ``test/integration/volumescheduling``: ``TestVolumeProvision`` /
``TestVolumeBinding`` with a fake PV controller).

* A pod with a WaitForFirstConsumer claim of a provisioning class: PreBind sets
  ``volume.kubernetes.io/selected-node`` on the PVC and the pod stays unbound (in PreBind) until the claim is
  bound; once the "PV controller" binds it, the pod is bound to the selected node.
* A static PV whose node affinity names only node-b: the pod lands on node-b, PreBind writes the PV's claimRef,
  and the pod is bound once the claim is.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.scheduler import Scheduler

SELECTED_NODE = "volume.kubernetes.io/selected-node"


def node(name: str) -> Obj:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def storage_class(name: str, provisioner: str) -> Obj:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }


def claim(name: str, cls: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def pod(name: str, claim_name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
        },
    }


def volume(name: str, cls: str, on_node: str) -> Obj:
    terms = [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [on_node]}]}]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": cls,
            "csi": {"driver": "csi.kubeplane.io", "volumeHandle": name},
            "nodeAffinity": {"required": {"nodeSelectorTerms": terms}},
        },
    }


class Env:
    def __init__(self, client: LocalClient) -> None:
        self.client = client
        self.pods = client.resource("pods")
        self.pvcs = client.resource("persistentvolumeclaims")
        self.pvs = client.resource("persistentvolumes")

    async def create(self, obj: Obj) -> Obj:
        namespaced = obj["kind"] in ("Pod", "PersistentVolumeClaim")
        return await self.client.create(
            self.client.resource(obj["kind"]), obj, namespace="default" if namespaced else None
        )

    async def wait_for(self, what: str, check: Callable[[], Awaitable[Any]], timeout: float = 20.0) -> Any:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            value = await check()
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.02)

    async def node_of(self, name: str) -> str:
        return str((await self.client.get(self.pods, name, namespace="default"))["spec"].get("nodeName") or "")

    async def bind_claim(self, claim_name: str, pv_name: str) -> None:
        """What the PV controller does once a PV is found or provisioned: PV Bound with a claimRef, the PVC's
        volumeName and bind-completed annotation, PVC Bound."""
        pvc = await self.client.get(self.pvcs, claim_name, namespace="default")
        pv = await self.client.get(self.pvs, pv_name)
        meta = pvc["metadata"]
        pv["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default",
                                  "name": claim_name, "uid": meta["uid"]}  # fmt: skip
        pv = await self.client.update(self.pvs, pv)
        pv["status"] = {"phase": "Bound"}
        await self.client.update(self.pvs, pv, subresource="status")
        pvc["spec"]["volumeName"] = pv_name
        meta["annotations"] = {**(meta.get("annotations") or {}), "pv.kubernetes.io/bind-completed": "yes"}
        pvc = await self.client.update(self.pvcs, pvc, namespace="default")
        pvc["status"] = {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "5Gi"}}
        await self.client.update(self.pvcs, pvc, namespace="default", subresource="status")


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    client = await LocalClient.in_memory()
    for n in ("node-a", "node-b"):
        await client.create(client.resource("nodes"), node(n))
    scheduler = Scheduler(client, rng=random.Random(0))
    task = asyncio.ensure_future(scheduler.run())
    try:
        yield Env(client)
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_wait_for_first_consumer_claim_gets_selected_node_and_the_pod_waits_in_pre_bind(env: Env) -> None:
    await env.create(storage_class("wffc", "csi.kubeplane.io"))
    await env.create(claim("data", "wffc"))
    await env.create(pod("web", "data"))

    async def selected() -> str:
        pvc = await env.client.get(env.pvcs, "data", namespace="default")
        return str((pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE) or "")

    chosen = await env.wait_for("the PVC's selected-node", selected)
    assert chosen in ("node-a", "node-b")
    # The pod is held in PreBind: no binding while the claim is unbound (upstream BindPodVolumes' wait).
    for _ in range(20):
        await asyncio.sleep(0.05)
        assert await env.node_of("web") == ""
    # Play the provisioner + PV controller: a PV on the selected node, bound to the claim.
    await env.create(volume("pvc-data", "wffc", chosen))
    await env.bind_claim("data", "pvc-data")

    async def bound() -> str:
        return await env.node_of("web")

    assert await env.wait_for("the pod to be bound", bound) == chosen


async def test_static_pv_with_node_affinity_on_node_b_puts_the_pod_on_node_b(env: Env) -> None:
    await env.create(storage_class("local", "kubernetes.io/no-provisioner"))
    pv = await env.create(volume("local-b", "local", "node-b"))
    pv["status"] = {"phase": "Available"}
    await env.client.update(env.pvs, pv, subresource="status")
    await env.create(claim("local-data", "local"))
    await env.create(pod("db", "local-data"))

    async def claim_ref() -> Any:
        return (await env.client.get(env.pvs, "local-b"))["spec"].get("claimRef")

    ref = await env.wait_for("PreBind to write the PV's claimRef", claim_ref)
    assert (ref["namespace"], ref["name"], ref["kind"]) == ("default", "local-data", "PersistentVolumeClaim")
    annotations = (await env.client.get(env.pvs, "local-b"))["metadata"].get("annotations") or {}
    assert annotations.get("pv.kubernetes.io/bound-by-controller") == "yes"
    assert await env.node_of("db") == ""
    await env.bind_claim("local-data", "local-b")

    async def bound() -> str:
        return await env.node_of("db")

    assert await env.wait_for("the pod to be bound", bound) == "node-b"
