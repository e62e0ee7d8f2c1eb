"""Taint eviction controller: toleration arithmetic table-driven (upstream taint_eviction_test.go's
getMinTolerationTime / GetMatchingTolerations cases), then a manual NoExecute taint end to end on a FakeClock
(``kubectl taint node node02 check=mycheck:NoExecute``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api.resources import ResourceInfo
from kubeplane.client.interface import Obj
from kubeplane.controllers.podutil import pod_condition_patch
from kubeplane.controllers.taint_eviction import (
    TaintEvictionController,
    get_matching_tolerations,
    get_min_toleration_time,
)
from tests.controllers import harness
from tests.controllers.harness import eventually, pod_obj

CHECK = {"key": "check", "value": "mycheck", "effect": "NoExecute"}


def tol(key: str = "check", seconds: int | None = None, **extra: Any) -> Obj:
    t: Obj = {"key": key, "operator": "Exists", "effect": "NoExecute", **extra}
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ([], 0.0),
        ([tol()], -1.0),
        ([tol(seconds=10)], 10.0),
        ([tol(seconds=10), tol("other", 5)], 5.0),
        ([tol(seconds=10), tol("other")], 10.0),
        ([tol(seconds=-5)], 0.0),
        ([tol(seconds=0), tol("other", 5)], 0.0),
    ],
)
def test_min_toleration_time(tolerations: list[Obj], expected: float) -> None:
    assert get_min_toleration_time(tolerations) == expected


@pytest.mark.parametrize(
    ("taints", "tolerations", "tolerated", "used"),
    [
        ([], [], True, []),
        ([CHECK], [], False, []),  # a pod without tolerations: evicted at once
        ([CHECK], [tol("other")], False, []),
        ([CHECK], [tol(seconds=3600)], True, [3600]),
        # the first toleration matching each taint is the one used
        ([CHECK], [tol(seconds=30), {"operator": "Exists"}], True, [30]),
        ([CHECK, {"key": "b", "effect": "NoExecute"}], [tol(seconds=30)], False, []),
        ([CHECK], [{"key": "check", "operator": "Equal", "value": "other", "effect": "NoExecute"}], False, []),
    ],
)
def test_matching_tolerations(taints: list[Obj], tolerations: list[Obj], tolerated: bool, used: list[int]) -> None:
    ok, matched = get_matching_tolerations(taints, tolerations)
    assert ok is tolerated
    assert [t.get("tolerationSeconds") for t in matched] == used


def test_pod_condition_patch() -> None:
    cond = {"type": "DisruptionTarget", "status": "True", "reason": "R", "message": "m"}
    new = pod_condition_patch({"status": {}}, cond, 0.0)
    assert new == {**cond, "lastTransitionTime": "1970-01-01T00:00:00Z"}
    pod = {"status": {"conditions": [new]}}
    assert pod_condition_patch(pod, cond, 100.0) is None  # unchanged
    changed = pod_condition_patch(pod, {**cond, "message": "n"}, 100.0)
    assert changed is not None
    assert changed["lastTransitionTime"] == "1970-01-01T00:00:00Z"
    flipped = pod_condition_patch(pod, {"type": "DisruptionTarget", "status": "False"}, 100.0)
    assert flipped is not None
    assert flipped["lastTransitionTime"] == "1970-01-01T00:01:40Z"
    assert flipped["reason"] is None
    assert flipped["message"] is None


@dataclass
class Env(harness.Env[TaintEvictionController]):
    @property
    def pods(self) -> ResourceInfo:
        return self.res("pods")

    @property
    def nodes(self) -> ResourceInfo:
        return self.res("nodes")

    async def add_pod(self, name: str, node: str, tolerations: list[Obj] | None = None) -> None:
        await self.client.create(self.pods, pod_obj(name, node=node, tolerations=tolerations), namespace="default")

    async def taint(self, node_name: str, taints: list[Obj]) -> None:
        node = await self.client.get(self.nodes, node_name)
        node.setdefault("spec", {})["taints"] = taints
        await self.client.update(self.nodes, node)

    async def deleting(self, name: str) -> bool:
        pod = await self.client.get(self.pods, name, namespace="default")
        return bool(pod["metadata"].get("deletionTimestamp"))

    async def wait_for(self, what: str, check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
        await eventually(check, what, timeout=timeout, interval=0.01)

    async def settle(self) -> None:
        await asyncio.sleep(0.05)

    async def messages(self) -> list[str]:
        await self.ctx.recorder("taint-eviction-controller").flush()
        items = (await self.client.list(self.client.resource("events"), namespace="default"))["items"]
        return sorted(e["message"] for e in items if e["reason"] == "TaintManagerEviction")


async def _two_nodes(env: Env) -> None:
    for name in ("node01", "node02"):
        await env.client.create(env.nodes, {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name}})


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with harness.running(TaintEvictionController, env_cls=Env, setup=_two_nodes) as e:
        yield e


async def test_manual_no_execute_taint(env: Env) -> None:
    await env.add_pod("plain", "node02")
    await env.add_pod("tolerates-1h", "node02", [tol(seconds=3600)])
    await env.add_pod("tolerates-forever", "node02", [tol()])
    await env.add_pod("other-node", "node01")
    await env.settle()
    await env.taint("node02", [CHECK])

    await env.wait_for("plain evicted", lambda: env.deleting("plain"))
    pod = await env.client.get(env.pods, "plain", namespace="default")
    target = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert target["reason"] == "DeletionByTaintManager"
    assert target["message"] == "Taint manager: deleting due to NoExecute taint"
    assert target["observedGeneration"] == 1  # the generation before the deletion bumped it (GA tracking)
    assert "Marking for deletion Pod default/plain" in await env.messages()

    await env.clock.advance(3599)
    await env.settle()
    assert not await env.deleting("tolerates-1h")
    await env.clock.advance(2)
    await env.wait_for("tolerates-1h evicted", lambda: env.deleting("tolerates-1h"))
    await env.clock.advance(100_000)
    await env.settle()
    assert not await env.deleting("tolerates-forever")
    assert not await env.deleting("other-node")


async def test_removing_the_taint_cancels(env: Env) -> None:
    await env.add_pod("tolerates-1h", "node02", [tol(seconds=3600)])
    await env.settle()
    await env.taint("node02", [CHECK])
    await env.settle()
    await env.clock.advance(1000)
    await env.taint("node02", [])
    await env.wait_for("cancel event", lambda: _has(env.messages(), "Cancelling deletion of Pod default/tolerates-1h"))
    await env.clock.advance(5000)
    await env.settle()
    assert not await env.deleting("tolerates-1h")


async def test_schedule_keeps_its_start_and_pod_deletion_cancels(env: Env) -> None:
    """A scheduled deletion keeps its timer when the taints change (upstream keeps the existing work whenever it
    started earlier); a pod deleted meanwhile cancels its timer."""
    await env.add_pod("a", "node02", [tol(seconds=100), tol("second", 50)])
    await env.add_pod("b", "node02", [tol(seconds=100), tol("second")])
    await env.settle()
    await env.taint("node02", [CHECK])
    await env.settle()
    await env.clock.advance(60)
    await env.taint("node02", [CHECK, {"key": "second", "effect": "NoExecute"}])
    await env.settle()
    assert not await env.deleting("a")  # still the first timer (100 s), not restarted, not moved
    assert not await env.deleting("b")
    assert await env.messages() == []
    await env.client.delete(env.pods, "b", namespace="default", grace_period_seconds=0)
    await env.wait_for("cancel event", lambda: _has(env.messages(), "Cancelling deletion of Pod default/b"))
    await env.clock.advance(41)
    await env.wait_for("a evicted", lambda: env.deleting("a"))
    assert "Marking for deletion Pod default/b" not in await env.messages()


async def _has(messages: Any, wanted: str) -> bool:
    return wanted in await messages
