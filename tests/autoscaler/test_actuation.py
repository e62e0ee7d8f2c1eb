"""Actuation (cluster-autoscaler core/scaledown/actuation, utils drain: evictPod): eviction through the Eviction API,
PodDisruptionBudget refusals retried every EvictionRetryTime until max-pod-eviction-time, and a failed drain
undone (taint removed, ScaleDownFailed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeplane.autoscaler.actuation import EVICTION_RETRY, Actuator
from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import NodeGroupSpec
from kubeplane.autoscaler.scaledown import TO_BE_DELETED_TAINT, NodeRemoval
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.events import EventRecorder
from kubeplane.client.local import LocalClient
from tests.autoscaler.fake_provider import FakeProvider
from tests.autoscaler.objects import pdb_object, pod_object

pytestmark = pytest.mark.asyncio


async def _settle() -> None:
    for _ in range(30):
        await asyncio.sleep(0)


async def _setup(allowed: int) -> tuple[LocalClient, FakeClock, FakeProvider, Actuator, dict[str, Any]]:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    provider = FakeProvider([NodeGroupSpec("g", 0, 3, {"cpu": "2", "memory": "4Gi"})], client=client)
    for node in provider.add_existing("g", 2):
        await client.create(client.resource("nodes"), node)
    pod = pod_object("web", node="g-0", labels={"app": "web"})
    pod["spec"]["terminationGracePeriodSeconds"] = 0
    pods = client.resource("pods")
    pod = await client.create(pods, pod, namespace="default")
    running = {**pod["status"], "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    pod = await client.update(pods, {**pod, "status": running}, namespace="default", subresource="status")
    await _set_allowed(client, allowed, create=True)
    recorder = EventRecorder(client, component="cluster-autoscaler", clock=clock)
    actuator = Actuator(client, provider=provider, recorder=recorder, clock=clock, options=AutoscalerOptions())
    return client, clock, provider, actuator, pod


async def _set_allowed(client: LocalClient, allowed: int, *, create: bool = False) -> None:
    pdbs = client.resource("poddisruptionbudgets")
    if create:
        body = pdb_object("web", labels={"app": "web"}, allowed=allowed)
        body.pop("status")
        await client.create(pdbs, body, namespace="default")
    current = await client.get(pdbs, "web", namespace="default")
    status = {
        "disruptionsAllowed": allowed,
        "currentHealthy": 1,
        "desiredHealthy": 1 - allowed,
        "expectedPods": 1,
        "observedGeneration": current["metadata"].get("generation", 1),
    }
    await client.update(pdbs, {**current, "status": status}, namespace="default", subresource="status")


async def _events(client: LocalClient, actuator: Actuator, reason: str) -> list[str]:
    await actuator._recorder.flush()
    listed = await client.list(client.resource("events"))
    return [e["message"] for e in listed["items"] if e.get("reason") == reason]


async def test_pdb_refusal_is_retried_until_the_budget_allows() -> None:
    client, clock, provider, actuator, pod = await _setup(allowed=0)
    try:
        actuator.start([NodeRemoval("g-0", "g", (pod,), (pod,))])
        await _settle()
        node = await client.get(client.resource("nodes"), "g-0")
        assert [t["key"] for t in node["spec"]["taints"]] == [TO_BE_DELETED_TAINT]
        await clock.advance(EVICTION_RETRY)
        await _settle()
        assert provider.deletions == []  # still refused
        await _set_allowed(client, 1)
        await clock.advance(EVICTION_RETRY)
        await actuator.wait()
        assert provider.deletions == [("g", ["g-0"])]
        with pytest.raises(NotFoundError):
            await client.get(client.resource("pods"), "web", namespace="default")
        assert actuator.last_delete == clock.now()
        assert actuator.deleting == {}
    finally:
        await actuator._recorder.close()
        await client.close()


async def test_refusals_past_max_pod_eviction_time_abort_the_scale_down() -> None:
    client, clock, provider, actuator, pod = await _setup(allowed=0)
    try:
        actuator.start([NodeRemoval("g-0", "g", (pod,), (pod,))])
        for _ in range(13):  # max-pod-eviction-time 2m, a retry every 10 s
            await _settle()
            await clock.advance(EVICTION_RETRY)
        await actuator.wait()
        assert provider.deletions == []
        node = await client.get(client.resource("nodes"), "g-0")
        assert node["spec"].get("taints") in (None, [])
        assert await _events(client, actuator, "ScaleDownFailed") == ["failed to drain the node, aborting ScaleDown"]
        assert actuator.last_failure is not None
        await client.get(client.resource("pods"), "web", namespace="default")  # still there
    finally:
        await actuator._recorder.close()
        await client.close()
