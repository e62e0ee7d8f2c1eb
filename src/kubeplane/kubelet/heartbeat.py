"""The fleet's heartbeat: every node's Lease renewal, eviction pass and status check, kept as columns and run by
one task per group of nodes (upstream: each kubelet's ``nodelease`` controller and ``syncNodeStatus`` loop).

Each node ticks every ``period`` (``min(lease_renew_interval, status_update_frequency)``, 10 s) from a random
offset drawn when its group starts (a thousand nodes spread their writes). A tick renews the node's Lease, runs
the eviction manager every ``eviction_monitoring_period`` and reports the node's status when it changed or the
report period passed. A group keeps its nodes' next tick times and last eviction passes as columns (lists
indexed by the node's place in the group) and a heap of ``(next tick, place)``.

Batching ahead of time. On a :class:`~kubeplane.client.clock.HorizonClock` (the simulation's virtual clock) the
group wakes at its earliest tick, runs it, and then also runs every later tick before the clock's *horizon* (the
next moment anything else is due) that would only renew a Lease: no eviction to do (:meth:`EvictionManager.quiet`),
no status to report (:meth:`NodeStatus.report_quiet`), and a Lease the cheap renewal reproduces. Those Leases are
written ahead, each with the ``renewTime`` and managed-fields time of its own tick, in tick order
(:meth:`NodeStatus.renew_leases_ahead`: a run of them as one store batch, each at its own revision), so the store
holds exactly the objects, in the order, that ticking at each moment writes; the only difference is when the
watchers receive them, which is before the horizon, so before anyone who reads Leases (the node lifecycle
controller's pass) looks. A hundred renewals per simulated second then cost a few wake-ups of one task instead of a
hundred wake-ups of the whole event loop. Every tick that does more than renew runs at its own moment, as does every
tick on another clock.

Invariants: a node's tick times are ``offset, offset + period, ...`` (repeated float addition, as sleeping
``period`` from each tick gives); ticks run in time order; a stopped node (``SimNode.running`` false) ticks
without doing anything. Without a horizon (a clock moved by hand or real time) the fleet runs one group per node:
each node its own task, as before groups existed.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import random
from collections.abc import Sequence

from kubeplane.client.clock import Clock, HorizonClock

from .eviction_manager import EvictionManager
from .node_status import NodeStatus
from .state import FleetOptions, SimNode

log = logging.getLogger("kubeplane.kubelet.fleet")

EVICTION_SLACK = 1e-9
"""Float tolerance of "an eviction period has passed" (ticks and eviction periods are both 10 s by default)."""


class Heartbeat:
    """The ticks of one group of nodes (see the module docstring); :meth:`run` until cancelled."""

    def __init__(
        self,
        sims: Sequence[SimNode],
        *,
        clock: Clock,
        rng: random.Random,
        options: FleetOptions,
        node_status: NodeStatus,
        eviction: EvictionManager,
    ) -> None:
        self.sims = list(sims)
        self._clock, self._rng, self._options = clock, rng, options
        self._node_status, self._eviction = node_status, eviction
        self.period = min(options.lease_renew_interval, options.status_update_frequency)
        self.next_tick: list[float] = []
        """Column: each node's next tick (monotonic seconds); filled when :meth:`run` starts."""
        self.last_eviction: list[float] = [float("-inf")] * len(self.sims)
        """Column: each node's last eviction pass (monotonic seconds)."""
        self.ahead = 0
        """Ticks run ahead of their moment (tests and benchmarks read it)."""

    async def run(self) -> None:
        clock = self._clock
        if not isinstance(clock, HorizonClock):
            await self._run_alone()
            return
        start = clock.monotonic()
        # one draw per node in node order, at the group's first step: the sequence per-node tasks drew
        self.next_tick = [start + self._rng.uniform(0, self.period) for _ in self.sims]
        heap = [(t, i) for i, t in enumerate(self.next_tick)]
        heapq.heapify(heap)
        horizon = start
        while heap:
            t, i = heap[0]
            now = clock.monotonic()
            if t > now:
                if t < horizon and await self._ahead(heap, horizon):
                    continue
                horizon = await clock.sleep_until_horizon(t)
                horizon = min(horizon, clock.monotonic() + self.period)  # at most one round ahead
                continue
            quiet = self._quiet(i, t)
            if quiet and t == now < horizon and await self._ahead(heap, horizon):
                continue  # due now and quiet: written with the quiet ticks after it, as one batch
            await self._tick(i, t)
            heapq.heapreplace(heap, self._advance(i, t))
            if not quiet:
                horizon = now  # what the tick wrote may wake others before the horizon

    async def _run_alone(self) -> None:
        """Without a horizon: one node (the fleet makes a group per node), sleeping ``period`` after each tick."""
        assert len(self.sims) == 1
        clock = self._clock
        await clock.sleep(self._rng.uniform(0, self.period))
        while True:
            await self._tick(0, clock.monotonic())
            await clock.sleep(self.period)

    def _advance(self, i: int, t: float) -> tuple[float, int]:
        self.next_tick[i] = t + self.period
        return self.next_tick[i], i

    def _eviction_due(self, i: int, t: float) -> bool:
        return t - self.last_eviction[i] >= self._options.eviction_monitoring_period - EVICTION_SLACK

    def _quiet(self, i: int, t: float) -> bool:
        """Whether node ``i``'s tick at ``t`` would only renew its Lease through the cheap renewal."""
        sim = self.sims[i]
        if sim.stopped_by:  # not running
            return True
        return self._node_status.renews_quietly(sim, t) and (
            not self._eviction_due(i, t) or self._eviction.quiet(sim, t)
        )

    async def _ahead(self, heap: list[tuple[float, int]], horizon: float) -> int:
        """Run the quiet ticks at the top of ``heap`` before ``horizon`` now, ahead of their moments, their Lease
        renewals as one store batch (:meth:`NodeStatus.renew_leases_ahead`); how many ran (0: the first is not
        quiet, or its renewal needs the full path: it runs at its moment). A tick whose renewal was refused and
        those after it go back to the heap untouched."""
        batch: list[tuple[float, int]] = []
        while heap and heap[0][0] < horizon and self._quiet(heap[0][1], heap[0][0]):
            batch.append(heapq.heappop(heap))  # distinct nodes: a node's next tick is a period later, past horizon
        running = [(k, self.sims[i], t) for k, (t, i) in enumerate(batch) if not self.sims[i].stopped_by]
        renewed = await self._node_status.renew_leases_ahead([(sim, t) for _, sim, t in running])
        done = running[renewed][0] if renewed < len(running) else len(batch)
        for t, i in batch[:done]:
            if not self.sims[i].stopped_by and self._eviction_due(i, t):
                self.last_eviction[i] = t
            heapq.heappush(heap, self._advance(i, t))
        for entry in batch[done:]:
            heapq.heappush(heap, entry)
        self.ahead += done
        return done

    async def _tick(self, i: int, t: float) -> None:
        """Node ``i``'s tick at its moment ``t`` (now): Lease, eviction pass, status."""
        sim = self.sims[i]
        if not sim.running:
            return
        try:
            await self._node_status.renew_lease(sim)
            if self._eviction_due(i, t):
                self.last_eviction[i] = t
                await self._eviction.synchronize(sim)
            await self._node_status.maybe_report(sim)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("kubelet %s: heartbeat failed: %s", sim.name, exc)
