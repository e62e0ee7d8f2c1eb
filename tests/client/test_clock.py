"""FakeClock.sleep_until (kubeplane.client.clock): a sleep to an exact monotonic float."""

from __future__ import annotations

import asyncio

from kubeplane.client.clock import FakeClock, SystemClock, sleep_until


async def test_sleep_until_wakes_at_exactly_the_deadline_float() -> None:
    """0.1 added thirty times is not 3.0: a sleeper of the summed float wakes at that float, where
    sleep(deadline - monotonic()) could round to a neighbour."""
    clock = FakeClock()
    deadline = 0.0
    for _ in range(30):
        deadline += 0.1
    woke: list[float] = []

    async def sleeper() -> None:
        await sleep_until(clock, deadline)
        woke.append(clock.monotonic())
        await sleep_until(clock, deadline)  # already past: returns at once
        woke.append(clock.monotonic())

    task = asyncio.ensure_future(sleeper())
    await asyncio.sleep(0)
    await clock.advance(2.5)
    assert woke == []
    await clock.advance(1.0)
    await task
    assert clock.monotonic() == 3.5  # advance ends at its target; the sleeper saw the deadline itself
    assert len(woke) == 2


async def test_sleep_until_on_a_real_clock_sleeps_the_difference() -> None:
    clock = SystemClock()
    await sleep_until(clock, clock.monotonic() - 1.0)  # already past: no wait
