"""The virtual clock of a simulation: time jumps to the next due timer as soon as every component is idle.

Every component of a simulation (API server registry, controllers, scheduler, kubelet fleet, the workload
driver) runs on one asyncio event loop over the in-process transport, and every wait of theirs that is about
time goes through :meth:`VirtualClock.sleep` (DESIGN.md decision 7). So "every component is idle" is exactly
"the event loop has nothing ready to run": every task is blocked on a virtual timer or on an event that only
another task could set. :meth:`VirtualClock.run` drives the loop: it yields until the loop is idle, then moves
time to the earliest timer and wakes every sleeper due then (in the order they went to sleep), and repeats.

Invariants:

* Time never moves while any callback is ready: a component always sees every consequence of an event before
  time passes (all queues drained, all watches delivered).
* Determinism: with the same inputs and seeds the sequence of wake-ups is the same, because the event loop runs
  ready callbacks first-in first-out and sleepers with equal deadlines wake in the order they slept.
* ``now()`` = ``start + monotonic()``; ``monotonic()`` starts at 0 and only grows.
* A sleeper of :meth:`VirtualClock.sleep_until_horizon` wakes at its deadline like any other and is told the
  *horizon*: the next deadline of any other sleeper (at most ``until``), read at the idle moment before the
  wake-up, when every consequence of what ran before is already a timer. Nothing else runs before the horizon, so
  the sleeper may do work stamped with later moments before it (the fleet's batched Lease renewals,
  :mod:`kubeplane.kubelet.heartbeat`). When another sleeper wakes at the same deadline the horizon is now.

Idleness is read from the default asyncio loop's ready queue (``loop._ready``, a CPython implementation
detail that has been stable for years); a simulation therefore runs on the default loop, never uvloop.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable
from typing import Any

from kubeplane.client.clock import FakeClock

DEFAULT_START = 1_800_000_000.0  # 2027-01-15T08:00:00Z: a fixed epoch, so timestamps are reproducible


class VirtualClock(FakeClock):
    """A :class:`~kubeplane.client.clock.Clock` whose time is moved by :meth:`run` when the loop is idle (the
    tests' :class:`~kubeplane.client.clock.FakeClock`, whose sleepers it shares, driven by idleness instead of
    by hand)."""

    def __init__(self, start: float = DEFAULT_START) -> None:
        super().__init__(start)
        self.wakeups = 0
        """How many timer deadlines :meth:`run` has jumped to (a progress measure)."""
        self._horizon_sleepers: set[asyncio.Future[Any]] = set()

    async def sleep_until_horizon(self, deadline: float) -> float:
        """Sleep until monotonic ``deadline``; return the horizon (see the module docstring)."""
        if deadline <= self._elapsed:
            await asyncio.sleep(0)
            return self._elapsed
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (deadline, next(self._order), future))
        self._horizon_sleepers.add(future)
        try:
            horizon = await future
        finally:
            self._horizon_sleepers.discard(future)
        return self._elapsed if horizon is None else float(horizon)

    def next_deadline(self) -> float | None:
        """The earliest deadline of a live sleeper (cancelled ones are dropped), or None."""
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    async def settle(self) -> None:
        """Return once the event loop has nothing ready to run but this task (every component is idle)."""
        loop: Any = asyncio.get_running_loop()
        ready = loop._ready
        quiet = 0
        while quiet < 2:  # twice in a row: a callback that only schedules another one is not idleness
            await asyncio.sleep(0)
            quiet = quiet + 1 if not ready else 0

    async def run(self, until: float | None = None, *, stop: Callable[[], bool] | None = None) -> None:
        """Advance time whenever the loop is idle, until ``until`` seconds of virtual time have passed (then the
        clock stands exactly at ``until``), ``stop()`` is true at an idle moment, or nothing is left to wait for."""
        while True:
            await self.settle()
            if stop is not None and stop():
                return
            deadline = self.next_deadline()
            if deadline is None:
                if until is not None:
                    self._elapsed = max(self._elapsed, until)
                return
            if until is not None and deadline > until:
                self._elapsed = max(self._elapsed, until)
                return
            self._elapsed = max(self._elapsed, deadline)
            self.wakeups += 1
            woken = []
            while self._sleepers and self._sleepers[0][0] <= self._elapsed:
                _, _, future = heapq.heappop(self._sleepers)
                if not future.done():
                    woken.append(future)
            horizon = self._elapsed
            if len(woken) == 1 and woken[0] in self._horizon_sleepers:
                following = self.next_deadline()
                horizon = min(
                    float("inf") if following is None else following, float("inf") if until is None else until
                )
            for future in woken:
                future.set_result(horizon if future in self._horizon_sleepers else None)


class RealTimeClock:
    """Real time with the same face as :class:`VirtualClock` (``run(until)`` just waits): the same scenario run
    in real time, to check that simulated and real-time runs reach the same placements."""

    def __init__(self) -> None:
        self._start_wall = time.time()
        self._start = time.monotonic()
        self.wakeups = 0

    def now(self) -> float:
        return self._start_wall + self.monotonic()

    def monotonic(self) -> float:
        return time.monotonic() - self._start

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))

    async def run(self, until: float | None = None, *, stop: Callable[[], bool] | None = None) -> None:
        while until is None or self.monotonic() < until:
            if stop is not None and stop():
                return
            await asyncio.sleep(min(0.05, max((until or 0.05) - self.monotonic(), 0.0)))
