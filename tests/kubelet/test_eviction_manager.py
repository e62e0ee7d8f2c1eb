"""The eviction manager's quiet check (kubeplane.kubelet.eviction_manager.EvictionManager.quiet): the fleet's
heartbeat passes over a node's eviction pass only when ``synchronize`` would change nothing.

Upstream behaviour pinned (``pkg/kubelet/eviction/eviction_manager.go`` ``synchronize``): a crossed
``memory.available`` threshold sets MemoryPressure and evicts; the condition stays for
``evictionPressureTransitionPeriod`` (5 min) after the threshold was last crossed, then clears.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubeplane.kubelet.eviction import PRESSURE_TRANSITION_PERIOD, USAGE_MEMORY_ANNOTATION
from kubeplane.kubelet.fleet import FleetOptions
from tests.kubelet.harness import Env, running_fleet

NODES = [{"count": 1, "namePattern": "n{index}", "capacity": {"cpu": "4", "memory": "4Gi", "pods": "110"}}]


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with running_fleet(NODES, FleetOptions(pull_delay=1.0)) as started:
        yield started


async def test_quiet_exactly_when_the_pass_would_change_nothing(env: Env) -> None:
    sim = env.fleet.nodes["n1"]
    manager = env.fleet.eviction
    now = env.clock.monotonic()
    assert manager.quiet(sim, now)  # no pods: nothing crossed, no pressure to clear
    await env.create_pod("hog", node="n1", annotations={USAGE_MEMORY_ANNOTATION: "4000Mi"})

    async def running() -> bool:
        return await env.phase("hog") == "Running"

    await env.until(running, "hog Running", step=0.5)
    assert not sim.memory_pressure
    assert not manager.quiet(sim, env.clock.monotonic())  # crossed: the pass sets pressure and evicts

    async def evicted() -> bool:
        return await env.phase("hog") == "Failed"

    await env.until(evicted, "hog evicted", step=1.0, tries=100)
    assert env.fleet.nodes["n1"].memory_pressure  # (a fresh read: the pass set it meanwhile)
    seen = sim.pressure_seen_at
    assert manager.quiet(sim, seen + 1.0)  # the pod is gone; pressure holds through the transition period
    assert manager.quiet(sim, seen + PRESSURE_TRANSITION_PERIOD - 1.0)
    assert not manager.quiet(sim, seen + PRESSURE_TRANSITION_PERIOD)  # the pass clears MemoryPressure then
