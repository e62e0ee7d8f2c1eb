"""A node failure with the whole control plane on one fake clock: the scheduler, every controller and the kubelet
fleet. The kubelet of one node dies (no Lease, no status, no pod progress) → the node lifecycle controller marks
it Ready=Unknown and taints it unreachable → after the pods' default 300 s toleration they are evicted (left
Terminating: nobody on the node confirms) and the ReplicaSet replaces them elsewhere → the kubelet comes back:
Ready again, the taint goes, and the kubelet finishes the terminating pods."""

from __future__ import annotations

import asyncio
import random

from kubeplane.client.clock import FakeClock
from kubeplane.client.local import LocalClient
from kubeplane.controllers.manager import ControllerManager
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from kubeplane.scheduler.scheduler import Scheduler
from tests.controllers.harness import stop_tasks

RS = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 6,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]},
        },
    },
}


async def test_a_dead_kubelet_then_its_return() -> None:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    specs = parse_node_config([{"count": 3, "namePattern": "node{index:02d}", "capacity": {"cpu": "8"}}])
    fleet = Fleet(client, specs, clock=clock, rng=random.Random(0), options=FleetOptions(pull_delay=0.0))
    await fleet.start()
    scheduler = Scheduler(client, clock=clock, rng=random.Random(0))
    manager = ControllerManager(client, clock=clock, rng=random.Random(0))
    tasks = [asyncio.ensure_future(scheduler.run()), asyncio.ensure_future(manager.run())]
    pods, nodes = client.resource("pods"), client.resource("nodes")

    async def tick(seconds: int) -> None:
        for _ in range(seconds):
            await clock.advance(1.0)
            await asyncio.sleep(0.001)

    async def web() -> list[dict]:  # type: ignore[type-arg]
        return list((await client.list(pods, namespace="default", label_selector="app=web"))["items"])

    async def ready(name: str) -> str:
        node = await client.get(nodes, name)
        return str(next(c for c in node["status"]["conditions"] if c["type"] == "Ready")["status"])

    async def taints(name: str) -> set[str]:
        return {t["key"] for t in (await client.get(nodes, name))["spec"].get("taints") or []}

    try:
        await client.create(client.resource("replicasets"), RS, namespace="default")
        await tick(5)
        running = [p for p in await web() if p["status"].get("phase") == "Running"]
        assert len(running) == 6
        victim = running[0]["spec"]["nodeName"]
        victims = {p["metadata"]["name"] for p in running if p["spec"]["nodeName"] == victim}

        fleet.stop_node(victim)
        await tick(70)  # 50 s grace period + monitor period
        assert await ready(victim) == "Unknown"
        assert "node.kubernetes.io/unreachable" in await taints(victim)
        await tick(320)  # past the 300 s toleration: evicted, but nobody on the node finishes the deletion
        current = await web()
        terminating = {p["metadata"]["name"] for p in current if p["metadata"].get("deletionTimestamp")}
        assert terminating == victims
        live = [p for p in current if not p["metadata"].get("deletionTimestamp")]
        assert len(live) == 6
        assert all(p["spec"]["nodeName"] != victim and p["status"].get("phase") == "Running" for p in live)

        fleet.resume_node(victim)
        await tick(15)
        assert await ready(victim) == "True"
        assert "node.kubernetes.io/unreachable" not in await taints(victim)
        await tick(35)  # the kubelet kills the evicted pods within their 30 s grace period, then deletes them
        assert {p["metadata"]["name"] for p in await web()} & victims == set()
    finally:
        await stop_tasks(tasks)
        await manager.stop()
        await scheduler.stop()
        await fleet.stop()
        await client.close()
