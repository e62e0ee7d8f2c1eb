"""The node lifecycle controller's cheap health pass for unchanged Ready nodes changes nothing it decides.

Upstream behaviour pinned (``pkg/controller/nodelifecycle/node_lifecycle_controller.go``, ``tryUpdateNodeHealth``
and ``monitorNodeHealth``, as in its ``TestMonitorNodeHealthUpdateStatus`` and
``TestMonitorNodeHealthUpdateNodeAndPodStatusWithLease`` cases): a node's probe moves when its Lease's
``renewTime`` is newer; it goes Unknown ("Kubelet stopped posting node status.") on the first pass after
``nodeMonitorGracePeriod`` without one; a node posting Ready again is untainted. Every answer of the cheap pass
is checked against the full evaluation on the same state.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.controllers.nodelifecycle import NodeLifecycleController, _working_copy
from kubeplane.controllers.taint_eviction import TaintEvictionController
from tests.controllers import harness
from tests.controllers.test_nodelifecycle import Env, _two_nodes, condition, taint_keys


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with harness.running(NodeLifecycleController, TaintEvictionController, env_cls=Env, setup=_two_nodes) as e:
        yield e


def _record(health: Any) -> Any:
    return None if health is None else (health.probe, health.ready_transition, health.lease_renew, health.status)


def _complete(coro: Any) -> Any:
    """Run a coroutine that never suspends (the full evaluation of a node that needs no write) to its result."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise AssertionError("the full evaluation wanted to write for a node the cheap pass judged unchanged")


async def test_every_cheap_decision_equals_the_full_evaluation(env: Env) -> None:
    """Each time the cheap pass answers for a node, the full ``try_update_node_health`` is run on a copy of the
    node from the controller's state before it: same Ready condition observed and current, same record."""
    controller = env.controller
    cheap = controller._unchanged_health
    decisions = 0
    mismatches: list[Any] = []  # collected: an exception in the pass would only be logged by the controller

    def shadowed(node: Any) -> Any:
        nonlocal decisions
        name = node["metadata"]["name"]
        before = copy.deepcopy(controller.health.get(name))
        answer = cheap(node)
        if answer is None:
            return None
        decisions += 1
        after = copy.deepcopy(controller.health[name])
        assert before is not None  # the cheap pass answers only for nodes with a record
        controller.health[name] = copy.deepcopy(before)
        observed, current = _complete(controller.try_update_node_health(_working_copy(node)))
        if not observed == current == dict(answer):
            mismatches.append((name, observed, current, answer))
        if _record(controller.health[name]) != _record(after):
            mismatches.append((name, _record(controller.health[name]), _record(after)))
        controller.health[name] = after
        return answer

    controller._unchanged_health = shadowed  # type: ignore[method-assign]
    # a full pass each time: every node visited, so every cheap answer checked (the columns' own answers:
    # tests/controllers/test_nodelifecycle_columns.py)
    controller._columns.plan = lambda **_: None  # type: ignore[method-assign]
    await env.add_pod("on-node01", "node01")
    await env.advance(1)
    env.healthy.discard("node01")  # its kubelet stops
    await env.advance(45, step=5)
    assert (condition(await env.node("node01"), "Ready") or {}).get("status") == "True"
    await env.advance(15, step=5)  # past the 50 s grace period and the next 5 s monitor pass
    node = await env.node("node01")
    assert (condition(node, "Ready") or {}).get("reason") == "NodeStatusUnknown"

    async def tainted() -> bool:
        return taint_keys(await env.node("node01"), "NoExecute") == ["node.kubernetes.io/unreachable"]

    await env.wait_for("unreachable taint", tainted)
    await env.kubelet_ready("node01")
    env.healthy.add("node01")
    await env.advance(20, step=5)

    async def untainted() -> bool:
        return taint_keys(await env.node("node01"), "NoExecute") == []

    await env.wait_for("taint removed", untainted)
    assert (condition(await env.node("node01"), "Ready") or {}).get("status") == "True"
    assert (condition(await env.node("node02"), "Ready") or {}).get("status") == "True"
    assert mismatches == []
    assert decisions >= 10  # node02 all along, node01 before it fell silent and after it came back
