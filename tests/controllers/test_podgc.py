"""Pod GC: the terminated-pod ordering table-driven (upstream gc_controller_test.go TestGCTerminated), then the
passes end to end on a FakeClock: terminated over threshold, orphaned after quarantine, unscheduled
terminating, terminating on out-of-service nodes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api.resources import ResourceInfo
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.podgc import PodGCController, terminated_pods_to_delete
from tests.controllers import harness
from tests.controllers.harness import eventually, pod_obj


def _pod(name: str, phase: str, created: str = "2024-01-01T00:00:00Z", reason: str = "") -> Obj:
    status: Obj = {"phase": phase}
    if reason:
        status["reason"] = reason
    return {"metadata": {"name": name, "creationTimestamp": created}, "status": status}


@pytest.mark.parametrize(
    ("pods", "threshold", "deleted"),
    [
        ([_pod("a", "Failed"), _pod("b", "Succeeded")], 1, ["a"]),
        ([_pod("a", "Failed"), _pod("b", "Succeeded")], 2, []),
        ([_pod("a", "Failed"), _pod("b", "Running"), _pod("c", "Succeeded")], 1, ["a"]),
        ([_pod("a", "Running"), _pod("b", "Pending"), _pod("c", "Unknown")], 0, []),
        # oldest first, then names; evicted before anything else
        (
            [
                _pod("new", "Succeeded", "2024-01-03T00:00:00Z"),
                _pod("old", "Failed", "2024-01-01T00:00:00Z"),
                _pod("mid-b", "Failed", "2024-01-02T00:00:00Z"),
                _pod("mid-a", "Failed", "2024-01-02T00:00:00Z"),
                _pod("evicted", "Failed", "2024-01-04T00:00:00Z", reason="Evicted"),
            ],
            1,
            ["evicted", "old", "mid-a", "mid-b"],
        ),
    ],
)
def test_terminated_pods_to_delete(pods: list[Obj], threshold: int, deleted: list[str]) -> None:
    assert [p["metadata"]["name"] for p in terminated_pods_to_delete(pods, threshold)] == deleted


@dataclass
class Env(harness.Env[PodGCController]):
    @property
    def pods(self) -> ResourceInfo:
        return self.res("pods")

    @property
    def nodes(self) -> ResourceInfo:
        return self.res("nodes")

    async def add_node(self, name: str, ready: str = "True", taints: list[Obj] | None = None) -> None:
        node: Obj = {
            "kind": "Node",
            "apiVersion": "v1",
            "metadata": {"name": name},
            "spec": {"taints": taints} if taints else {},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }
        await self.client.create(self.nodes, node)

    async def add_pod(self, name: str, node: str = "", phase: str = "Running", finalizer: bool = False) -> None:
        body = pod_obj(name, node=node, finalizers=("example.com/hold",) if finalizer else ())
        pod = await self.client.create(self.pods, body, namespace="default")
        pod["status"]["phase"] = phase
        await self.client.update(self.pods, pod, namespace="default", subresource="status")

    async def names(self) -> list[str]:
        return sorted(p["metadata"]["name"] for p in (await self.client.list(self.pods, namespace="default"))["items"])

    async def wait_for(self, what: str, check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
        await eventually(check, what, timeout=timeout, interval=0.01)


@pytest.fixture
async def make_env() -> AsyncIterator[Callable[..., Any]]:
    """``await make_env(setup, **options)``: PodGC with ``options`` over objects ``setup(env)`` created first."""
    async with contextlib.AsyncExitStack() as stack:

        async def make(setup: Callable[[Env], Awaitable[None]], **options: Any) -> tuple[Env, PodGCController]:
            running = harness.running(
                PodGCController, env_cls=Env, setup=setup, options={"pod-garbage-collector": options}
            )
            env = await stack.enter_async_context(running)
            return env, env.controller

        yield make


async def test_terminated_over_threshold_deleted_oldest_first(make_env: Any) -> None:
    async def setup(env: Env) -> None:
        await env.add_node("node01")
        for i, phase in enumerate(["Succeeded", "Failed", "Running", "Succeeded", "Failed"]):
            await env.add_pod(f"p{i}", "node01", phase)
            await env.clock.advance(1)  # distinct creation timestamps

    env, _ = await make_env(setup, terminatedPodGCThreshold=2)
    await env.wait_for("two oldest terminated gone", lambda: _equals(env.names(), ["p2", "p3", "p4"]))


async def test_orphaned_pods_deleted_after_quarantine(make_env: Any) -> None:
    async def setup(env: Env) -> None:
        await env.add_node("node01")
        await env.add_pod("orphan", "gone-node")
        await env.add_pod("fine", "node01")

    env, _ = await make_env(setup)
    await asyncio.sleep(0.05)
    await env.clock.advance(39)
    await asyncio.sleep(0.05)
    assert await env.names() == ["fine", "orphan"]  # still in quarantine
    await env.clock.advance(2)
    await env.wait_for("orphan deleted", lambda: _equals(env.names(), ["fine"]))


async def test_orphan_is_marked_failed_with_disruption_target(make_env: Any) -> None:
    """With a finalizer holding the pod, the status PodGC wrote before deleting stays visible."""

    async def setup(env: Env) -> None:
        await env.add_pod("orphan", "gone-node", finalizer=True)

    env, _ = await make_env(setup)
    await asyncio.sleep(0.05)
    await env.clock.advance(41)

    async def failed() -> bool:
        pod = await env.client.get(env.pods, "orphan", namespace="default")
        return pod["status"]["phase"] == "Failed" and bool(pod["metadata"].get("deletionTimestamp"))

    await env.wait_for("orphan marked failed and deleting", failed)
    pod = await env.client.get(env.pods, "orphan", namespace="default")
    target = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (target["reason"], target["message"]) == ("DeletionByPodGC", "PodGC: node no longer exists")
    assert target["observedGeneration"] == 1  # PodObservedGenerationTracking: written before the deletion


async def test_node_reappearing_during_quarantine_saves_pods(make_env: Any) -> None:
    async def setup(env: Env) -> None:
        await env.add_pod("p", "late-node")

    env, _ = await make_env(setup)
    await asyncio.sleep(0.05)
    await env.add_node("late-node")
    await env.clock.advance(100)
    await asyncio.sleep(0.05)
    assert await env.names() == ["p"]


async def test_unscheduled_terminating_pods_force_deleted(make_env: Any) -> None:
    async def setup(env: Env) -> None:
        await env.add_pod("held", finalizer=True, phase="Pending")
        await env.client.delete(env.pods, "held", namespace="default")  # stays: the finalizer

    env, _ = await make_env(setup)

    async def failed() -> bool:
        pod = await env.client.get(env.pods, "held", namespace="default")
        return bool(pod["status"]["phase"] == "Failed")

    await env.wait_for("unscheduled terminating pod marked failed", failed)


async def test_terminating_on_out_of_service_node(make_env: Any) -> None:
    async def setup(env: Env) -> None:
        oos = [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]
        await env.add_node("down", ready="False", taints=oos)
        await env.add_node("up")
        await env.add_pod("stuck", "down")
        await env.add_pod("draining", "up")
        for name in ("stuck", "draining"):
            await env.client.delete(env.pods, name, namespace="default")  # graceful: both stay terminating

    env, _ = await make_env(setup)
    await env.wait_for("stuck force-deleted", lambda: _equals(env.names(), ["draining"]))
    with pytest.raises(NotFoundError):
        await env.client.get(env.pods, "stuck", namespace="default")


async def _equals(value: Any, wanted: Any) -> bool:
    return bool(await value == wanted)
