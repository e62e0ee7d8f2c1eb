"""The controller manager and the scheduler together over the local transport (issue 9's first acceptance
scenario): a Deployment of 3 replicas gets 3 pods; scaled to 5 and to 2; a new image rolls out keeping at least
replicas - maxUnavailable pods available at every step and ends with one new ReplicaSet; putting the old template
back (what ``kubectl rollout undo`` does) restores the old ReplicaSet. There are no kubelets yet: a small loop
plays them, marking bound pods Running and Ready and finishing graceful deletions."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.client.errors import ClientError
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.controllers.manager import ControllerManager
from kubeplane.scheduler.scheduler import Scheduler
from tests.controllers.harness import eventually, ready_status, stop_tasks
from tests.scheduler.test_e2e_local import node


class Env:
    def __init__(self, client: LocalClient) -> None:
        self.client = client
        self.pods = client.resource("pods")
        self.deployments = client.resource("deployments")
        self.replicasets = client.resource("replicasets")
        self.min_available_seen: int | None = None

    async def eventually(self, what: str, check: Callable[[], Any], timeout: float = 20.0) -> Any:
        return await eventually(check, what, timeout=timeout, interval=0.02)

    async def live_pods(self) -> list[Obj]:
        items = (await self.client.list(self.pods, namespace="default"))["items"]
        return [p for p in items if not p["metadata"].get("deletionTimestamp")]

    async def kubelet(self) -> None:
        """Bound pods become Running and Ready; deleting pods are removed (grace period over at once)."""
        while True:
            for pod in (await self.client.list(self.pods, namespace="default"))["items"]:
                name = pod["metadata"]["name"]
                try:
                    if pod["metadata"].get("deletionTimestamp"):
                        await self.client.delete(self.pods, name, namespace="default", grace_period_seconds=0)
                    elif pod["spec"].get("nodeName") and (pod.get("status") or {}).get("phase") != "Running":
                        status = {**(pod.get("status") or {}), **ready_status(pod["metadata"]["creationTimestamp"])}
                        await self.client.update(
                            self.pods, {**pod, "status": status}, namespace="default", subresource="status"
                        )
                except ClientError:
                    pass  # changed or gone meanwhile: next round
            await asyncio.sleep(0.02)

    async def deployment(self) -> Obj:
        return await self.client.get(self.deployments, "web", namespace="default")

    async def start_manager(self) -> None:
        """A fresh controller manager (new informers, nothing remembered), as after a process restart."""
        self.manager = ControllerManager(self.client, rng=random.Random(0))
        self.manager_task = asyncio.ensure_future(self.manager.run())

    async def stop_manager(self) -> None:
        await stop_tasks([self.manager_task])
        await self.manager.stop()

    async def replica_sets(self) -> list[Obj]:
        return list((await self.client.list(self.replicasets, namespace="default"))["items"])


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    client = await LocalClient.in_memory()
    for name in ("node01", "node02", "node03"):
        await client.create(client.resource("nodes"), node(name, cpu="8"))
    scheduler = Scheduler(client, rng=random.Random(0))
    e = Env(client)
    tasks = [asyncio.ensure_future(scheduler.run()), asyncio.ensure_future(e.kubelet())]
    await e.start_manager()
    try:
        yield e
    finally:
        await stop_tasks(tasks)
        await e.stop_manager()
        await scheduler.stop()


def deployment(replicas: int, image: str) -> Obj:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": image, "resources": {"requests": {"cpu": "100m"}}}]},
            },
        },
    }


async def _settled(env: Env, replicas: int, image: str) -> bool:
    d = await env.deployment()
    status = d.get("status") or {}
    pods = await env.live_pods()
    images = {p["spec"]["containers"][0]["image"] for p in pods}
    return (
        status.get("observedGeneration") == d["metadata"]["generation"]
        and status.get("updatedReplicas") == replicas
        and status.get("availableReplicas") == replicas
        and status.get("replicas") == replicas
        and len(pods) == replicas
        and images == {image}
    )


async def test_deployment_scales_rolls_out_and_rolls_back(env: Env) -> None:
    await env.client.create(env.deployments, deployment(3, "nginx:1.27"), namespace="default")
    await env.eventually("3 available pods", lambda: _settled(env, 3, "nginx:1.27"))
    assert all(p["spec"].get("nodeName") for p in await env.live_pods())

    for replicas in (5, 2):
        d = await env.deployment()
        d["spec"]["replicas"] = replicas
        await env.client.update(env.deployments, d, namespace="default")
        await env.eventually(f"{replicas} available pods", functools.partial(_settled, env, replicas, "nginx:1.27"))
    (first_rs,) = await env.replica_sets()

    # Rolling update to a new image: watch availability at every step.
    d = await env.deployment()
    d["spec"]["replicas"] = 4
    await env.client.update(env.deployments, d, namespace="default")
    await env.eventually("4 available pods", lambda: _settled(env, 4, "nginx:1.27"))
    d = await env.deployment()
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    await env.client.update(env.deployments, d, namespace="default")
    lowest = 4
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while not await _settled(env, 4, "nginx:1.28"):
        ready = [
            p
            for p in await env.live_pods()
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in (p.get("status") or {}).get("conditions") or []
            )
        ]
        lowest = min(lowest, len(ready))
        assert loop.time() < deadline, "rollout did not finish"
        await asyncio.sleep(0.01)
    assert lowest >= 4 - 1  # replicas - maxUnavailable
    sets = {rs["metadata"]["name"]: rs for rs in await env.replica_sets()}
    assert len(sets) == 2
    new = [rs for rs in sets.values() if rs["spec"]["replicas"] == 4]
    assert len(new) == 1
    assert new[0]["metadata"]["name"] != first_rs["metadata"]["name"]
    assert sets[first_rs["metadata"]["name"]]["spec"]["replicas"] == 0
    assert (await env.deployment())["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"

    # Rollback: the old template again reuses the first ReplicaSet, now revision 3.
    d = await env.deployment()
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    await env.client.update(env.deployments, d, namespace="default")
    await env.eventually("rolled back", lambda: _settled(env, 4, "nginx:1.27"))
    sets = {rs["metadata"]["name"]: rs for rs in await env.replica_sets()}
    assert sets[first_rs["metadata"]["name"]]["spec"]["replicas"] == 4
    assert sets[first_rs["metadata"]["name"]]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"


async def test_restarting_the_controller_manager_mid_rollout_finishes_it(env: Env) -> None:
    """Issue 9: a restart mid-rollout changes nothing that was already correct and finishes the rollout."""
    await env.client.create(env.deployments, deployment(4, "nginx:1.27"), namespace="default")
    await env.eventually("4 available pods", lambda: _settled(env, 4, "nginx:1.27"))
    d = await env.deployment()
    d["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    await env.client.update(env.deployments, d, namespace="default")

    async def mid_rollout() -> bool:
        pods = await env.live_pods()
        updated = sum(1 for p in pods if p["spec"]["containers"][0]["image"] == "nginx:1.28")
        return 0 < updated < 4

    await env.eventually("the rollout under way", mid_rollout)
    await env.stop_manager()
    sets_before = sorted(rs["metadata"]["name"] for rs in await env.replica_sets())
    await env.start_manager()
    await env.eventually("the rollout finished", lambda: _settled(env, 4, "nginx:1.28"))
    assert sorted(rs["metadata"]["name"] for rs in await env.replica_sets()) == sets_before  # no extra ReplicaSet
    assert (await env.deployment())["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
