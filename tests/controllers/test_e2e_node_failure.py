"""Issue 9's node-failure scenario on one fake clock, with the real scheduler and every controller: a node stops
heartbeating → after the grace period it is Ready=Unknown with the unreachable taints → its pods are evicted once
their default 300 s toleration has passed → the ReplicaSet's replacements are scheduled on the other nodes →
heartbeats resume → the taints are removed. A stand-in kubelet renews the node Leases and runs bound pods."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.api.meta import format_micro_time, format_time
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import ClientError, NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.controllers.manager import ControllerManager
from kubeplane.scheduler.scheduler import Scheduler
from tests.controllers.harness import ready_status, stop_tasks
from tests.scheduler.test_e2e_local import node

NODES = ("node01", "node02", "node03")


class Cluster:
    def __init__(self, client: LocalClient, clock: FakeClock) -> None:
        self.client = client
        self.clock = clock
        self.pods = client.resource("pods")
        self.nodes = client.resource("nodes")
        self.leases = client.resource("leases.coordination.k8s.io")
        self.dead: set[str] = set()

    async def heartbeat(self) -> None:
        """Renew the Lease of every live node (what each kubelet does every 10 s)."""
        for name in NODES:
            if name in self.dead:
                continue
            spec = {
                "holderIdentity": name,
                "leaseDurationSeconds": 40,
                "renewTime": format_micro_time(self.clock.now()),
            }
            try:
                lease = await self.client.get(self.leases, name, namespace="kube-node-lease")
                await self.client.update(self.leases, {**lease, "spec": spec}, namespace="kube-node-lease")
            except NotFoundError:
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": name},
                    "spec": spec,
                }
                await self.client.create(self.leases, body, namespace="kube-node-lease")

    async def run_pods(self) -> None:
        """Bound pods on live nodes become Running and Ready; their graceful deletions finish."""
        for pod in (await self.client.list(self.pods, namespace="default"))["items"]:
            where = pod["spec"].get("nodeName")
            if not where or where in self.dead:
                continue
            try:
                if pod["metadata"].get("deletionTimestamp"):
                    await self.client.delete(
                        self.pods, pod["metadata"]["name"], namespace="default", grace_period_seconds=0
                    )
                elif (pod.get("status") or {}).get("phase") != "Running":
                    status = ready_status(pod["metadata"]["creationTimestamp"], ready=True)
                    await self.client.update(
                        self.pods,
                        {**pod, "status": {**pod.get("status", {}), **status}},
                        namespace="default",
                        subresource="status",
                    )
            except ClientError:
                pass

    async def tick(self, seconds: float) -> None:
        """Advance the fake clock second by second, the stand-in kubelet working in between."""
        for _ in range(int(seconds)):
            await self.clock.advance(1.0)
            if int(self.clock.monotonic()) % 10 == 0:
                await self.heartbeat()
            await self.run_pods()
            await asyncio.sleep(0.002)

    async def live_web_pods(self) -> list[Obj]:
        items = (await self.client.list(self.pods, namespace="default"))["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    async def taint_keys(self, name: str) -> set[str]:
        return {t["key"] for t in (await self.client.get(self.nodes, name))["spec"].get("taints") or []}


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    for name in NODES:
        await client.create(client.resource("nodes"), node(name, cpu="8"))
    c = Cluster(client, clock)
    await c.heartbeat()
    scheduler = Scheduler(client, clock=clock, rng=random.Random(0))
    manager = ControllerManager(client, clock=clock, rng=random.Random(0))
    tasks = [asyncio.ensure_future(scheduler.run()), asyncio.ensure_future(manager.run())]
    try:
        yield c
    finally:
        await stop_tasks(tasks)
        await manager.stop()
        await scheduler.stop()


def _replicaset(replicas: int) -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}},
        },
    }


async def test_silent_node_is_tainted_its_pods_evicted_and_replaced_then_untainted(cluster: Cluster) -> None:
    c = cluster
    await c.client.create(c.client.resource("replicasets"), _replicaset(6), namespace="default")
    await c.tick(5)
    pods = await c.live_web_pods()
    assert len(pods) == 6
    on = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}
    victim_node = next(n for n in NODES if n in on.values())
    victims = {name for name, n in on.items() if n == victim_node}

    c.dead.add(victim_node)  # the kubelet stops: no more Lease renewals or pod updates
    await c.tick(70)  # grace period (50 s) + a monitor period + the zone queue
    ready = next(x for x in (await c.client.get(c.nodes, victim_node))["status"]["conditions"] if x["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusUnknown")
    assert "node.kubernetes.io/unreachable" in await c.taint_keys(victim_node)
    assert {p["metadata"]["name"] for p in await c.live_web_pods()} >= victims  # still tolerated (300 s)

    await c.tick(320)  # past the 300 s default toleration
    live = await c.live_web_pods()
    assert not victims & {p["metadata"]["name"] for p in live}
    assert len(live) == 6
    assert all(p["spec"].get("nodeName") not in (None, victim_node) for p in live)

    c.dead.discard(victim_node)  # the kubelet is back: it renews its Lease and posts Ready=True again
    await c.heartbeat()
    back = await c.client.get(c.nodes, victim_node)
    now = format_time(c.clock.now())
    back["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "KubeletReady",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }
    ]
    await c.client.update(c.nodes, back, subresource="status")
    await c.tick(15)
    assert "node.kubernetes.io/unreachable" not in await c.taint_keys(victim_node)
