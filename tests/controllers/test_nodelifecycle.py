"""Node lifecycle controller: pure helpers table-driven (as upstream's node_lifecycle_controller_test.go), then
end to end in process on a FakeClock together with the taint eviction controller: a node that stops
heartbeating goes Unknown, is tainted unreachable, its pods are evicted per tolerationSeconds; heartbeats
resuming untaint it and cancel pending evictions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.api.meta import format_micro_time, format_time
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import zone_key
from kubeplane.client.clock import FakeClock
from kubeplane.client.interface import Obj
from kubeplane.controllers.nodelifecycle import (
    STATE_FULL_DISRUPTION,
    STATE_NORMAL,
    STATE_PARTIAL_DISRUPTION,
    NodeLifecycleController,
    RateLimitedTimedQueue,
    compute_zone_state,
)
from kubeplane.controllers.taint_eviction import TaintEvictionController
from tests.controllers import harness
from tests.controllers.harness import eventually, pod_obj, ready_status

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"

# --- pure helpers -----------------------------------------------------------------------------------------


def _cond(status: str) -> dict[str, str]:
    return {"type": "Ready", "status": status}


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        (["True", "True"], (0, STATE_NORMAL)),
        (["True", "Unknown"], (1, STATE_NORMAL)),
        (["Unknown", "False"], (2, STATE_FULL_DISRUPTION)),
        (["True", "False", "False", "Unknown"], (3, STATE_PARTIAL_DISRUPTION)),  # 75% >= 55%
        (["True", "True", "False", "False", "Unknown"], (3, STATE_PARTIAL_DISRUPTION)),  # 60%
        (["True", "True", "True", "False", "False", "Unknown"], (3, STATE_NORMAL)),  # 50% < 55%
        (["True", "False", "False"], (2, STATE_NORMAL)),  # needs more than 2 not ready
    ],
)
def test_compute_zone_state(statuses: list[str], expected: tuple[int, str]) -> None:
    assert compute_zone_state([_cond(s) for s in statuses], 0.55) == expected


def test_compute_zone_state_counts_missing_ready_as_not_ready() -> None:
    assert compute_zone_state([None, _cond("True")], 0.55) == (1, STATE_NORMAL)


def test_zone_key() -> None:
    assert zone_key({"metadata": {}}) == ""
    labels = {"topology.kubernetes.io/region": "r", "topology.kubernetes.io/zone": "z"}
    assert zone_key({"metadata": {"labels": labels}}) == "r:\x00:z"
    beta = {"failure-domain.beta.kubernetes.io/zone": "z"}
    assert zone_key({"metadata": {"labels": beta}}) == ":\x00:z"


async def test_rate_limited_timed_queue_one_per_ten_seconds() -> None:
    """0.1 qps, burst 1: the first node at once, the next after 10 s; a processed value stays known."""
    clock = FakeClock()
    queue = RateLimitedTimedQueue(0.1, clock)
    done: list[str] = []

    async def fn(value: Any) -> tuple[bool, float]:
        done.append(value.value)
        return True, 0.0

    assert queue.add("a", "1")
    assert queue.add("b", "2")
    assert not queue.add("a", "1")
    await queue.try_process(fn)
    assert done == ["a"]
    await clock.advance(5)
    await queue.try_process(fn)
    assert done == ["a"]
    await clock.advance(5)
    await queue.try_process(fn)
    assert done == ["a", "b"]
    assert not queue.add("a", "1")  # still known until removed
    assert queue.remove("a")
    assert queue.add("a", "1")
    queue.swap_limiter(0)
    await clock.advance(100)
    await queue.try_process(fn)
    assert done == ["a", "b"]  # qps 0 never accepts


# --- end to end ---------------------------------------------------------------------------------------------


@dataclass
class Env(harness.Env[NodeLifecycleController]):
    healthy: set[str] = field(default_factory=set)  # nodes whose "kubelets" renew their leases
    pods: ResourceInfo = field(init=False)
    nodes: ResourceInfo = field(init=False)
    leases: ResourceInfo = field(init=False)
    events: ResourceInfo = field(init=False)

    def __post_init__(self) -> None:
        self.pods, self.nodes, self.leases, self.events = map(self.res, ("pods", "nodes", "leases", "events"))

    async def add_node(self, name: str) -> None:
        now = format_time(self.clock.now())
        labels = {"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": "za"}
        ready = {"type": "Ready", "status": "True", "lastHeartbeatTime": now, "lastTransitionTime": now}
        await self.client.create(
            self.nodes,
            {
                "kind": "Node",
                "apiVersion": "v1",
                "metadata": {"name": name, "labels": labels},
                "status": {"conditions": [ready]},
            },
        )
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {
                "holderIdentity": name,
                "leaseDurationSeconds": 40,
                "renewTime": format_micro_time(self.clock.now()),
            },
        }
        await self.client.create(self.leases, lease, namespace="kube-node-lease")
        self.healthy.add(name)

    async def renew(self, name: str) -> None:
        lease = await self.client.get(self.leases, name, namespace="kube-node-lease")
        lease["spec"]["renewTime"] = format_micro_time(self.clock.now())
        await self.client.update(self.leases, lease, namespace="kube-node-lease")

    async def kubelet_ready(self, name: str) -> None:
        """What a kubelet posting status again does: Ready True with a fresh heartbeat."""
        node = await self.client.get(self.nodes, name)
        now = format_time(self.clock.now())
        node["status"]["conditions"] = [
            {"type": "Ready", "status": "True", "lastHeartbeatTime": now, "lastTransitionTime": now}
        ]
        await self.client.update(self.nodes, node, subresource="status")

    async def add_pod(self, name: str, node: str, tolerations: list[Obj] | None = None) -> None:
        pod = await self.client.create(
            self.pods, pod_obj(name, node=node, tolerations=tolerations), namespace="default"
        )
        pod["status"] |= ready_status(format_time(self.clock.now()))
        await self.client.update(self.pods, pod, namespace="default", subresource="status")

    async def pod(self, name: str) -> Obj:
        return await self.client.get(self.pods, name, namespace="default")

    async def node(self, name: str) -> Obj:
        return await self.client.get(self.nodes, name)

    async def advance(self, seconds: float, step: float = 1.0) -> None:
        """Move the fake clock in steps, renewing the healthy nodes' leases like their kubelets would."""
        while seconds > 1e-9:
            dt = min(step, seconds)
            for name in sorted(self.healthy):
                await self.renew(name)
            await self.clock.advance(dt)
            await asyncio.sleep(0.001)
            seconds -= dt

    async def wait_for(self, what: str, check: Callable[[], Awaitable[Any]], timeout: float = 5.0) -> Any:
        return await eventually(check, what, timeout=timeout, interval=0.01)

    async def event_messages(self, reason: str) -> list[str]:
        for component in ("node-controller", "taint-eviction-controller"):
            await self.ctx.recorder(component).flush()
        items = (await self.client.list(self.events, namespace="default"))["items"]
        return sorted(e["message"] for e in items if e["reason"] == reason)


def taint_keys(node: Obj, effect: str) -> list[str]:
    return sorted(t["key"] for t in (node.get("spec") or {}).get("taints") or () if t["effect"] == effect)


def condition(obj: Obj, kind: str) -> Obj | None:
    return next((c for c in obj["status"].get("conditions") or () if c["type"] == kind), None)


async def _two_nodes(env: Env) -> None:
    await env.add_node("node01")
    await env.add_node("node02")


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with harness.running(NodeLifecycleController, TaintEvictionController, env_cls=Env, setup=_two_nodes) as e:
        yield e


async def test_silent_node_goes_unknown_and_pods_are_evicted_per_toleration(env: Env) -> None:
    now_tolerant = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}]
    forever = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}]
    await env.add_pod("evict-now", "node01", now_tolerant)
    await env.add_pod("default-300s", "node01")  # admission: not-ready/unreachable tolerated for 300 s
    await env.add_pod("forever", "node01", forever)
    await env.add_pod("elsewhere", "node02")
    await env.advance(1)
    env.healthy.discard("node01")  # its kubelet stops: no lease renewals, no status posts

    await env.advance(45)
    assert condition(await env.node("node01"), "Ready")["status"] == "True"  # type: ignore[index]
    await env.advance(15)  # past the 50 s grace period and the next 5 s monitor pass
    node = await env.node("node01")
    for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
        cond = condition(node, kind)
        assert cond is not None, kind
        assert cond["status"] == "Unknown", kind
    ready = condition(node, "Ready")
    assert ready is not None
    assert ready["reason"] == "NodeStatusUnknown"
    assert ready["message"] == "Kubelet stopped posting node status."
    assert condition(node, "MemoryPressure")["reason"] == "NodeStatusNeverUpdated"  # type: ignore[index]

    async def tainted() -> bool:
        n = await env.node("node01")
        return taint_keys(n, "NoExecute") == [UNREACHABLE] and taint_keys(n, "NoSchedule") == [UNREACHABLE]

    await env.wait_for("unreachable taints", tainted)
    assert taint_keys(await env.node("node02"), "NoExecute") == []

    # pods on the node: marked not ready; the one tolerating 0 s is evicted at once
    async def evicted(name: str) -> bool:
        return bool((await env.pod(name))["metadata"].get("deletionTimestamp"))

    await env.wait_for("evict-now deleted", lambda: evicted("evict-now"))
    pod = await env.pod("evict-now")
    target = condition(pod, "DisruptionTarget")
    assert target is not None
    assert target["reason"] == "DeletionByTaintManager"
    assert condition(await env.pod("default-300s"), "Ready")["status"] == "False"  # type: ignore[index]
    assert condition(await env.pod("elsewhere"), "Ready")["status"] == "True"  # type: ignore[index]
    assert not await evicted("default-300s")
    assert "Marking for deletion Pod default/evict-now" in await env.event_messages("TaintManagerEviction")
    assert "Node node01 status is now: NodeNotReady" in await env.event_messages("NodeNotReady")
    assert "Node is not ready" in await env.event_messages("NodeNotReady")

    await env.advance(280, step=5)
    assert not await evicted("default-300s")
    await env.advance(30, step=5)
    await env.wait_for("default-300s deleted", lambda: evicted("default-300s"))
    assert not await evicted("forever")
    assert not await evicted("elsewhere")


async def test_heartbeat_resuming_removes_taints_and_cancels_evictions(env: Env) -> None:
    await env.add_pod("default-300s", "node01")
    await env.advance(1)
    env.healthy.discard("node01")
    await env.advance(60)

    async def tainted() -> bool:
        return taint_keys(await env.node("node01"), "NoExecute") == [UNREACHABLE]

    await env.wait_for("unreachable taint", tainted)
    await env.advance(30)

    env.healthy.add("node01")
    await env.kubelet_ready("node01")
    await env.advance(6)

    async def untainted() -> bool:
        n = await env.node("node01")
        return not (n.get("spec") or {}).get("taints")

    await env.wait_for("taints removed", untainted)
    await env.wait_for(
        "eviction cancelled",
        lambda: _contains(
            env.event_messages("TaintManagerEviction"), "Cancelling deletion of Pod default/default-300s"
        ),
    )
    await env.advance(400, step=10)
    assert not (await env.pod("default-300s"))["metadata"].get("deletionTimestamp")


async def _contains(messages: Any, wanted: str) -> bool:
    return wanted in await messages


async def test_all_nodes_silent_enters_disruption_mode_without_taints(env: Env) -> None:
    """Upstream's master disruption mode: when no node anywhere is Ready, nothing gets NoExecute taints."""
    env.healthy.clear()
    await env.advance(70)
    node = await env.node("node01")
    assert condition(node, "Ready")["status"] == "Unknown"  # type: ignore[index]
    await env.advance(20)
    for name in ("node01", "node02"):
        assert taint_keys(await env.node(name), "NoExecute") == []


async def test_unschedulable_mirrors_taint(env: Env) -> None:
    node = await env.node("node01")
    node.setdefault("spec", {})["unschedulable"] = True
    await env.client.update(env.nodes, node)

    async def has() -> bool:
        return taint_keys(await env.node("node01"), "NoSchedule") == ["node.kubernetes.io/unschedulable"]

    await env.wait_for("unschedulable taint", has)
    node = await env.node("node01")
    node.setdefault("spec", {})["unschedulable"] = False
    await env.client.update(env.nodes, node)

    async def gone() -> bool:
        return taint_keys(await env.node("node01"), "NoSchedule") == []

    await env.wait_for("unschedulable taint removed", gone)


async def test_not_ready_node_gets_not_ready_taints(env: Env) -> None:
    """A kubelet reporting Ready False (still heartbeating) gets the not-ready taints."""
    node = await env.node("node02")
    node["status"]["conditions"][0].update(
        status="False", lastHeartbeatTime=format_time(env.clock.now()), reason="KubeletNotReady"
    )
    await env.client.update(env.nodes, node, subresource="status")
    await env.advance(11)

    async def tainted() -> bool:
        n = await env.node("node02")
        return taint_keys(n, "NoExecute") == [NOT_READY] and taint_keys(n, "NoSchedule") == [NOT_READY]

    await env.wait_for("not-ready taints", tainted)
