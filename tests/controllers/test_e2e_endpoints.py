"""Issue 23's endpoints acceptance, end to end with what ``kubeplane up`` runs in one process: the API server
(in-memory), the whole controller manager, the scheduler and the simulated kubelet fleet, on one fake clock.

A Deployment of 3 behind a Service (what ``kubectl expose deployment`` creates: the Deployment's selector, its
port) gets an EndpointSlice and an Endpoints object listing exactly the 3 Running pods' IPs, ready; scaled to 1,
the removed pods go from both (through the terminating state) and only the remaining pod's IP is left. Upstream
behaviour pinned: ``pkg/controller/endpoint`` syncService and ``k8s.io/endpointslice`` Reconcile, fed by the
kubelet's Ready condition and pod IPs."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.controllers.manager import ControllerManager
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from kubeplane.scheduler.scheduler import Scheduler
from tests.controllers.harness import stop_tasks

Obj = dict[str, Any]
NS = "default"
NODES = [{"name": n, "capacity": {"cpu": "8", "memory": "16Gi", "pods": "20"}, "images": {"nginx:1.27": "180Mi"}}
         for n in ("node01", "node02")]  # fmt: skip


class Cluster:
    def __init__(self, client: LocalClient, clock: FakeClock) -> None:
        self.client, self.clock = client, clock

    async def until(self, what: str, check: Any, *, tries: int = 2000) -> Any:
        """Poll ``check`` while moving the fake clock half a second per miss (pulls, grace periods, retries)."""
        for _ in range(tries):
            value = await check()
            if value:
                return value
            await asyncio.sleep(0.002)
            await self.clock.advance(0.5)
        raise AssertionError(f"timed out waiting for {what}")

    async def running_ips(self) -> set[str]:
        pods = (await self.client.list(self.client.resource("pods"), namespace=NS))["items"]
        return {
            p["status"]["podIP"]
            for p in pods
            if not p["metadata"].get("deletionTimestamp") and (p.get("status") or {}).get("phase") == "Running"
        }

    async def slice_ips(self) -> dict[str, bool]:
        items = (await self.client.list(self.client.resource("endpointslices"), namespace=NS))["items"]
        mine = [s for s in items if s["metadata"]["labels"].get("kubernetes.io/service-name") == "web"]
        return {e["addresses"][0]: e["conditions"]["ready"] for s in mine for e in s.get("endpoints") or []}

    async def endpoints_ips(self) -> set[str]:
        try:
            ep = await self.client.get(self.client.resource("endpoints"), "web", namespace=NS)
        except NotFoundError:
            return set()
        return {a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or []}


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    fleet = Fleet(client, parse_node_config(NODES), clock=clock, rng=random.Random(1), options=FleetOptions())
    manager = ControllerManager(client, clock=clock, rng=random.Random(2))
    scheduler = Scheduler(client, clock=clock, rng=random.Random(3))
    started: list[Any] = []
    tasks: list[asyncio.Task[Any]] = []
    try:
        for component in (fleet, manager, scheduler):
            await component.start()
            started.append(component)
        tasks = [asyncio.create_task(c.run()) for c in started]
        yield Cluster(client, clock)
    finally:
        await stop_tasks(tasks)
        for component in reversed(started):
            await component.stop()
        await client.close()


def deployment(replicas: int) -> Obj:
    labels = {"app": "web"}
    container = {"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}
    return {
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def exposed_service() -> Obj:
    """What ``kubectl expose deployment web --port 80`` sends."""
    return {
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "selector": {"app": "web"}},
    }


async def test_deployment_pods_appear_in_endpoints_and_leave_when_scaled_down(cluster: Cluster) -> None:
    c = cluster.client
    await c.create(c.resource("deployments"), deployment(3), namespace=NS)
    await c.create(c.resource("services"), exposed_service(), namespace=NS)

    async def three_running() -> set[str] | None:
        ips = await cluster.running_ips()
        return ips if len(ips) == 3 else None

    ips = await cluster.until("3 running pods", three_running)

    async def published() -> bool:
        return await cluster.slice_ips() == dict.fromkeys(ips, True) and await cluster.endpoints_ips() == ips

    await cluster.until("the pods' IPs in the EndpointSlice and the Endpoints", published)
    ep = await c.get(c.resource("endpoints"), "web", namespace=NS)
    assert ep["subsets"][0]["ports"] == [{"name": "", "port": 80, "protocol": "TCP"}]

    d = await c.get(c.resource("deployments"), "web", namespace=NS)
    d["spec"]["replicas"] = 1
    await c.update(c.resource("deployments"), d, namespace=NS)

    async def one_left() -> set[str] | None:
        left = await cluster.running_ips()
        if len(left) != 1 or await cluster.endpoints_ips() != left:
            return None
        return left if await cluster.slice_ips() == dict.fromkeys(left, True) else None

    left = await cluster.until("only the remaining pod in both", one_left)
    assert left < ips
