"""End to end over the local transport: the seeds' 3-node cluster (master with the control-plane NoSchedule
taint, node01, node02), a running Scheduler, and pods created through the API as a user would."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.scheduler import Scheduler

CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def node(name: str, *, cpu: str = "4", zone: str = "zone-a", taints: list[dict[str, str]] | None = None) -> Obj:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "topology.kubernetes.io/region": "region-1",
        "topology.kubernetes.io/zone": zone,
    }
    if name == "master":
        labels["node-role.kubernetes.io/control-plane"] = ""
    capacity = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": capacity, "allocatable": capacity, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(name: str, *, cpu: str = "100m", **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}],
            **spec,
        },
    }


class Cluster:
    def __init__(self, client: LocalClient, scheduler: Scheduler) -> None:
        self.client = client
        self.scheduler = scheduler
        self.pods = client.resource("pods")
        self.nodes = client.resource("nodes")

    async def create(self, obj: Obj) -> Obj:
        res = self.pods if obj["kind"] == "Pod" else self.nodes
        return await self.client.create(res, obj, namespace="default" if obj["kind"] == "Pod" else None)

    async def get_pod(self, name: str) -> Obj:
        return await self.client.get(self.pods, name, namespace="default")

    async def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 10.0) -> Any:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            value = await check()
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.01)

    async def node_of(self, name: str) -> str:
        async def bound() -> str:
            return str((await self.get_pod(name))["spec"].get("nodeName") or "")

        return str(await self.wait_for(f"{name} to be bound", bound))

    async def events_for(self, name: str) -> list[Obj]:
        items = (await self.client.list(self.client.resource("events"), namespace="default"))["items"]
        return [e for e in items if e["involvedObject"]["name"] == name]

    async def failed_message(self, name: str) -> str:
        async def condition() -> str:
            conds = (await self.get_pod(name)).get("status", {}).get("conditions") or []
            for c in conds:
                if c["type"] == "PodScheduled" and c["status"] == "False":
                    return str(c["message"])
            return ""

        return str(await self.wait_for(f"{name} PodScheduled=False", condition))


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    client = await LocalClient.in_memory()
    for n in (node("master", taints=[CONTROL_PLANE_TAINT]), node("node01"), node("node02", zone="zone-b")):
        await client.create(client.resource("nodes"), n)
    scheduler = Scheduler(client, rng=random.Random(0))
    task = asyncio.ensure_future(scheduler.run())
    try:
        yield Cluster(client, scheduler)
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_node_selector(cluster: Cluster) -> None:
    await cluster.create(pod("sel", nodeSelector={"kubernetes.io/hostname": "node02"}))
    assert await cluster.node_of("sel") == "node02"

    async def scheduled_event() -> list[Obj]:
        return [e for e in await cluster.events_for("sel") if e["reason"] == "Scheduled"]

    events = await cluster.wait_for("Scheduled event", scheduled_event)
    assert events[0]["message"] == "Successfully assigned default/sel to node02"
    assert events[0]["type"] == "Normal"


async def test_required_and_preferred_node_affinity(cluster: Cluster) -> None:
    required = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}
                        ]
                    }
                ]
            }
        }
    }
    await cluster.create(pod("req", affinity=required))
    assert await cluster.node_of("req") == "node02"

    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "preference": {
                        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node01"]}]
                    },
                }
            ]
        }
    }
    await cluster.create(pod("pref", affinity=preferred))
    assert await cluster.node_of("pref") == "node01"

    # A preference for a node that does not exist is only a preference: the pod still runs (not on master).
    missing = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {
                        "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["node09"]}]
                    },
                }
            ]
        }
    }
    await cluster.create(pod("pref-missing", affinity=missing))
    assert await cluster.node_of("pref-missing") in ("node01", "node02")


async def test_toleration_lets_a_pod_onto_the_master(cluster: Cluster) -> None:
    await cluster.create(
        pod(
            "tol",
            nodeSelector={"kubernetes.io/hostname": "master"},
            tolerations=[
                {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
            ],
        )
    )
    assert await cluster.node_of("tol") == "master"


async def test_too_big_stays_pending_with_upstreams_message_then_fits_on_a_new_node(cluster: Cluster) -> None:
    await cluster.create(pod("big", cpu="10"))
    message = await cluster.failed_message("big")
    assert message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.."
    )
    got = (await cluster.get_pod("big"))["status"]["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in got] == [("PodScheduled", "False", "Unschedulable")]
    assert got[0]["observedGeneration"] == 1  # PodObservedGenerationTracking: the pod's generation (GA, v1.35)

    async def failed_event() -> list[Obj]:
        return [e for e in await cluster.events_for("big") if e["reason"] == "FailedScheduling"]

    events = await cluster.wait_for("FailedScheduling event", failed_event)
    assert events[0]["message"] == message
    assert events[0]["type"] == "Warning"

    await cluster.create(node("node03", cpu="16"))
    assert await cluster.node_of("big") == "node03"


async def test_pending_until_the_master_is_untainted(cluster: Cluster) -> None:
    await cluster.create(pod("on-master", nodeSelector={"kubernetes.io/hostname": "master"}))
    message = await cluster.failed_message("on-master")
    assert message.startswith("0/3 nodes are available: 1 node(s) had untolerated taint")
    assert "2 node(s) didn't match Pod's node affinity/selector" in message
    master = await cluster.client.get(cluster.nodes, "master")
    master["spec"]["taints"] = []
    await cluster.client.update(cluster.nodes, master)
    assert await cluster.node_of("on-master") == "master"


async def test_spec_node_name_bypasses_the_scheduler(cluster: Cluster) -> None:
    await cluster.create(pod("direct", nodeName="node01"))
    await cluster.create(pod("after", nodeSelector={"kubernetes.io/hostname": "node01"}))
    assert await cluster.node_of("after") == "node01"
    await cluster.scheduler.wait_for_bindings()
    await asyncio.sleep(0.05)
    assert [e["reason"] for e in await cluster.events_for("direct")] == []


async def test_other_scheduler_names_are_left_alone(cluster: Cluster) -> None:
    await cluster.create(pod("mine", schedulerName="my-scheduler"))
    await cluster.create(pod("ours"))
    await cluster.node_of("ours")
    await asyncio.sleep(0.05)
    assert not (await cluster.get_pod("mine"))["spec"].get("nodeName")


async def test_cordoned_node_is_skipped(cluster: Cluster) -> None:
    node01 = await cluster.client.get(cluster.nodes, "node01")
    node01["spec"]["unschedulable"] = True
    await cluster.client.update(cluster.nodes, node01)
    await asyncio.sleep(0.05)
    await cluster.create(pod("c1", nodeSelector={"kubernetes.io/hostname": "node01"}))
    message = await cluster.failed_message("c1")
    assert "1 node(s) were unschedulable" in message
    for i in range(4):
        await cluster.create(pod(f"spread-{i}"))
    for i in range(4):
        assert await cluster.node_of(f"spread-{i}") == "node02"
