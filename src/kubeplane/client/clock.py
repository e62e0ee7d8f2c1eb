"""Injected time (DESIGN.md decision 7): every timer, sleep and timestamp of a component goes through a Clock.

:class:`SystemClock` is real time. :class:`FakeClock` is time a test advances by hand: ``sleep`` waits until
``advance`` moves the clock past its deadline, so lease durations and backoffs run in microseconds and in a
deterministic order. The simulation issue adds a virtual clock that advances itself when every component is idle.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Any, Protocol, runtime_checkable


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock seconds since the epoch (for timestamps written into objects)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for durations and deadlines)."""
        ...

    async def sleep(self, seconds: float) -> None: ...


@runtime_checkable
class HorizonClock(Protocol):
    """A clock that can tell a sleeper how far it may act ahead of time (a simulation's virtual clock).

    :meth:`sleep_until_horizon` sleeps until a monotonic deadline and returns the *horizon*: a monotonic time before
    which nothing else is due to run. Until then the sleeper may do work that belongs to a later moment ``t``
    (horizon > ``t`` >= now) as if time had moved to ``t``, provided the work's effects depend on ``t`` only
    through what it writes (e.g. a Lease's ``renewTime``) and wake nobody who reads the clock to decide what is
    observable. A clock that cannot promise anything is not a HorizonClock (the simulation's virtual clock is one;
    :class:`FakeClock`, moved by hand, is not)."""

    def now(self) -> float: ...

    def monotonic(self) -> float: ...

    def now_at(self, monotonic: float) -> float:
        """What :meth:`now` will read when :meth:`monotonic` reads ``monotonic``."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    async def sleep_until_horizon(self, deadline: float) -> float: ...


class SystemClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(seconds, 0.0))


class FakeClock:
    """Time that moves only when :meth:`advance` is called. ``now`` and ``monotonic`` move together."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._start = start
        self._elapsed = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[Any]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        return self._start + self._elapsed

    def now_at(self, monotonic: float) -> float:
        return self._start + monotonic

    def monotonic(self) -> float:
        return self._elapsed

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._elapsed + seconds, next(self._order), future))
        await future

    async def sleep_until(self, deadline: float) -> None:
        """Sleep until :meth:`monotonic` reads exactly ``deadline`` (a float computed by the caller, not
        ``monotonic() + (deadline - monotonic())``, which may round to a neighbouring float)."""
        if deadline <= self._elapsed:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (deadline, next(self._order), future))
        await future

    @property
    def pending(self) -> int:
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking sleepers in deadline order and letting each run before the next wakes."""
        target = self._elapsed + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self._elapsed = max(self._elapsed, deadline)
            if not future.done():
                future.set_result(None)
            for _ in range(5):  # let the woken task and what it schedules run
                await asyncio.sleep(0)
        self._elapsed = target
        for _ in range(5):
            await asyncio.sleep(0)


async def sleep_until(clock: Clock, deadline: float) -> None:
    """Sleep on ``clock`` until its monotonic time is ``deadline``: exactly that float on a :class:`FakeClock` (and
    so a simulation's virtual clock), ``sleep(deadline - monotonic())`` on any other."""
    if isinstance(clock, FakeClock):
        await clock.sleep_until(deadline)
    else:
        await clock.sleep(deadline - clock.monotonic())
