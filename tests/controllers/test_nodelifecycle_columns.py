"""The node health pass over columns decides exactly what the full pass over every node decides, visiting only the
nodes whose state can change.

Upstream behaviour pinned (``pkg/controller/nodelifecycle/node_lifecycle_controller.go``, ``monitorNodeHealth``
and ``tryUpdateNodeHealth``, as its ``TestMonitorNodeHealthUpdateNodeAndPodStatusWithLease``): a newer Lease
``renewTime`` moves a node's probe to the pass that sees it; a node silent past ``nodeMonitorGracePeriod`` goes
``Unknown`` ("Kubelet stopped posting node status.") on the first pass after it; a node posting Ready again is
untainted; a node added is registered (``RegisteredNode``), one removed forgotten (``RemovingNode``). Two
controllers run the same script, one on columns and one forced to the full pass every time; after every pass
their records, zone states, queues and the API's nodes are the same.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest

from kubeplane.api.meta import format_micro_time, format_time
from kubeplane.client.clock import FakeClock
from kubeplane.controllers.nodelifecycle import NodeLifecycleController
from kubeplane.controllers.nodelifecycle_columns import renew_time
from kubeplane.controllers.podutil import parse_timestamp
from tests.controllers import harness
from tests.controllers.test_nodelifecycle import Env

NAMES = [f"node{i:02d}" for i in range(6)]


async def _nodes(env: Env) -> None:
    for name in NAMES:
        await env.add_node(name)


def _health(controller: NodeLifecycleController) -> dict[str, Any]:
    return {
        name: (h.probe, h.ready_transition, h.lease_renew, h.status) for name, h in sorted(controller.health.items())
    }


async def _api_nodes(env: Env) -> list[Any]:
    items = (await env.client.list(env.nodes))["items"]
    return [(n["metadata"]["name"], n["status"].get("conditions"), (n.get("spec") or {}).get("taints")) for n in items]


async def _synced(env: Env) -> None:
    """Until the controller's node and Lease caches hold what the API server holds."""
    for _ in range(1000):
        nodes = {
            n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in (await env.client.list(env.nodes))["items"]
        }
        leases = (await env.client.list(env.leases, namespace="kube-node-lease"))["items"]
        cached_nodes = {
            n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in env.controller.node_lister.list()
        }
        cached = {
            le["metadata"]["name"]: le["metadata"]["resourceVersion"] for le in env.controller.lease_lister.list()
        }
        if cached_nodes == nodes and cached == {
            le["metadata"]["name"]: le["metadata"]["resourceVersion"] for le in leases
        }:
            return
        await asyncio.sleep(0.001)
    raise AssertionError("informers did not catch up")


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Env, Env, list[int]]]:
    async with AsyncExitStack() as stack:
        envs = [
            await stack.enter_async_context(
                harness.running(NodeLifecycleController, env_cls=Env, setup=_nodes, run=False, clock=FakeClock())
            )
            for _ in range(2)
        ]
        envs[1].controller._columns.plan = lambda **_: None  # type: ignore[method-assign]
        visits: list[int] = [0]
        columns = envs[0].controller
        visit = columns._visit

        async def counted(cached: Any, zone_conditions: Any) -> None:
            visits[0] += 1
            await visit(cached, zone_conditions)

        columns._visit = counted  # type: ignore[method-assign]
        yield envs[0], envs[1], visits


async def _step(envs: tuple[Env, Env], seconds: float, change: Callable[[Env], Any] | None = None) -> None:
    """Both clusters: renew the healthy Leases, apply ``change``, move the clock, run one pass, compare."""
    for env in envs:
        for name in sorted(env.healthy):
            await env.renew(name)
        if change is not None:
            await change(env)
        await env.clock.advance(seconds)
        await _synced(env)
        await env.controller.monitor_node_health()
        await env.controller.do_no_execute_tainting_pass()
        await _synced(env)
    a, b = (e.controller for e in envs)
    assert _health(a) == _health(b)
    assert a.zone_states == b.zone_states
    assert sorted(a.known_nodes) == sorted(b.known_nodes)
    assert {z: sorted(q._known) for z, q in a.zone_tainters.items()} == {
        z: sorted(q._known) for z, q in b.zone_tainters.items()
    }
    assert await _api_nodes(envs[0]) == await _api_nodes(envs[1])


async def test_columns_pass_equals_full_pass(pair: tuple[Env, Env, list[int]]) -> None:
    columns, full, visits = pair
    envs = (columns, full)
    for _ in range(3):
        await _step(envs, 5)
    visits[0] = 0
    for _ in range(4):
        await _step(envs, 5)
    assert visits[0] == 0  # idle and healthy: every node clean, none visited

    async def silence(env: Env) -> None:
        env.healthy.discard("node01")

    await _step(envs, 5, silence)
    for _ in range(13):  # past the 50 s grace period: Unknown, tainted unreachable
        await _step(envs, 5)
    assert (await columns.node("node01"))["status"]["conditions"][0]["status"] == "Unknown"
    assert "node.kubernetes.io/unreachable" in [t["key"] for t in (await columns.node("node01"))["spec"]["taints"]]

    async def comes_back(env: Env) -> None:
        await env.kubelet_ready("node01")
        env.healthy.add("node01")

    await _step(envs, 5, comes_back)
    for _ in range(3):
        await _step(envs, 5)
    assert not ((await columns.node("node01")).get("spec") or {}).get("taints")

    async def status_report(env: Env) -> None:  # a kubelet's status write: the node changes, its health not
        node = await env.node("node03")
        node["status"]["conditions"][0]["lastHeartbeatTime"] = format_time(env.clock.now())
        await env.client.update(env.nodes, node, subresource="status")

    visits[0] = 0
    await _step(envs, 5, status_report)
    assert visits[0] == 1  # node03 alone

    async def add_and_remove(env: Env) -> None:
        await env.add_node("node99")
        await env.client.delete(env.nodes, "node04")
        env.healthy.discard("node04")

    await _step(envs, 5, add_and_remove)
    for _ in range(3):
        await _step(envs, 5)
    assert "node04" not in columns.controller.known_nodes
    assert "node99" in columns.controller.known_nodes


@pytest.mark.parametrize(
    "value",
    [
        "2027-01-15T08:00:10.174028Z",
        "1969-12-31T23:59:59.500000Z",
        "2027-01-15T08:00:10Z",
        "2027-01-15T08:00:10.17402Z",
        "2027-01-15T08:00:10.1740\uff128Z",
        "2027-13-15T08:00:10.174028Z",
        "2027-01-15T09:00:10.174028+01:00",
        "junk",
        None,
    ],
    ids=["micro", "before-epoch", "time", "short-fraction", "fullwidth-digit", "bad-month", "offset", "junk", "none"],
)
def test_renew_time_is_parse_timestamp(value: Any) -> None:
    """upstream compares ``LeaseRenewTime`` as times (``metav1.MicroTime``): the cheap split of the canonical
    form gives the same instant, to the bit, as the general parse, and anything else goes the general way."""
    assert renew_time(value) == parse_timestamp(value)


def test_renew_time_matches_on_many_instants() -> None:
    rng = random.Random(7)
    for _ in range(20_000):
        value = format_micro_time(rng.uniform(-1e9, 4e9))
        assert renew_time(value) == parse_timestamp(value), value
