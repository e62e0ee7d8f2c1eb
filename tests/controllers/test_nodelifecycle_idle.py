"""The NoExecute tainting loop of an idle cluster: it waits for a queued node instead of waking every 100 ms, and
runs its passes at exactly the moments upstream's 100 ms loop would.

Upstream behaviour pinned (``pkg/controller/nodelifecycle/node_lifecycle_controller.go``, ``Run``:
``wait.UntilWithContext(ctx, nc.doNoExecuteTaintingPass, scheduler.NodeEvictionPeriod)``, 100 ms): a node queued
for tainting is processed by the first pass after it was queued, and passes follow each other 100 ms apart while a
queue holds nodes (the zone's rate limiter refusing, a node not yet due). A pass over empty queues does nothing, so
skipping it changes nothing but how often the loop wakes.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from kubeplane.controllers.nodelifecycle import NODE_EVICTION_PERIOD, NodeLifecycleController
from kubeplane.sim.clock import VirtualClock


class _Queue:
    """A zone queue of ``pending`` nodes: each pass takes one (the controller's queue holds them until tainted)."""

    def __init__(self) -> None:
        self.pending = 0

    def __len__(self) -> int:
        return self.pending


class _Stub:
    """What ``_no_execute_tainting`` uses of the controller: a pass that records when it found work."""

    name = "node-lifecycle"

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.zone_tainters = {"zone": _Queue()}
        self._queued = asyncio.Event()
        self.passes = 0
        self.worked: list[float] = []  # monotonic moments of passes that found a queued node

    async def do_no_execute_tainting_pass(self) -> None:
        self.passes += 1
        queue = self.zone_tainters["zone"]
        if queue.pending:
            queue.pending -= 1
            self.worked.append(self.clock.monotonic())

    def queue(self, count: int) -> None:
        self.zone_tainters["zone"].pending += count
        self._queued.set()


async def _every(stub: _Stub) -> None:
    """The reference: upstream's loop as ``_every`` runs it (pass, sleep 100 ms, forever)."""
    while True:
        await stub.do_no_execute_tainting_pass()
        await stub.clock.sleep(NODE_EVICTION_PERIOD)


async def _run(loop: str, arrivals: list[tuple[float, int]], until: float) -> _Stub:
    clock = VirtualClock()
    stub = _Stub(clock)
    if loop == "idle-aware":
        task = asyncio.ensure_future(NodeLifecycleController._no_execute_tainting(cast(Any, stub)))
    else:
        task = asyncio.ensure_future(_every(stub))

    async def arrive() -> None:
        for at, count in arrivals:
            await clock.sleep(at - clock.monotonic())
            stub.queue(count)

    feeder = asyncio.ensure_future(arrive())
    await clock.run(until=until)
    for t in (task, feeder):
        t.cancel()
    await asyncio.gather(task, feeder, return_exceptions=True)
    return stub


ARRIVALS = {
    "one-node": [(3.37, 1)],
    "three-nodes-at-once": [(12.01, 3)],  # the queue stays non-empty: passes 100 ms apart, as the plain loop's
    "spread": [(0.05, 1), (7.123, 2), (7.15, 1), (42.0, 1), (99.99, 1)],
}


@pytest.mark.parametrize("arrivals", ARRIVALS.values(), ids=ARRIVALS.keys())
async def test_passes_that_find_a_node_run_at_the_moments_of_the_100ms_loop(arrivals: list[tuple[float, int]]) -> None:
    reference = await _run("every-100ms", arrivals, until=120.0)
    idle = await _run("idle-aware", arrivals, until=120.0)
    assert idle.worked == reference.worked  # the same floats: the grid is the same sums of 0.1
    assert len(reference.worked) == sum(count for _, count in arrivals)
    assert reference.passes > 1000  # ten a second
    assert idle.passes < 5 * len(arrivals) + 5  # only around the moments a node was queued
