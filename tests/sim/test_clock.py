"""The virtual clock's horizon: what a sleeper of ``sleep_until_horizon`` may do ahead of time."""

from __future__ import annotations

import asyncio

import pytest

from kubeplane.client.clock import FakeClock, HorizonClock
from kubeplane.sim.clock import VirtualClock


async def _horizons(clock: VirtualClock, deadlines: list[float], until: float) -> list[tuple[float, float]]:
    """(now, horizon) at each wake-up of one sleeper sleeping to ``deadlines`` in turn."""
    seen: list[tuple[float, float]] = []

    async def sleeper() -> None:
        for deadline in deadlines:
            horizon = await clock.sleep_until_horizon(deadline)
            seen.append((clock.monotonic(), horizon))

    task = asyncio.create_task(sleeper())
    await clock.run(until=until)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return seen


async def test_the_horizon_is_the_next_deadline_of_anyone_else() -> None:
    clock = VirtualClock()
    other = asyncio.create_task(clock.sleep(7.5))
    seen = await _horizons(clock, [2.0, 3.0, 9.0], until=100)
    await other
    # woken at exactly its deadline; nothing else is due before 7.5, then nothing at all before `until`
    assert seen == [(2.0, 7.5), (3.0, 7.5), (9.0, 100.0)]


async def test_a_sleeper_woken_with_another_gets_no_horizon() -> None:
    """Another sleeper due at the same moment may schedule anything: nothing may be done ahead."""
    clock = VirtualClock()
    other = asyncio.create_task(clock.sleep(4.0))
    seen = await _horizons(clock, [4.0], until=50)
    await other
    assert seen == [(4.0, 4.0)]


async def test_the_horizon_never_passes_the_end_of_the_run() -> None:
    clock = VirtualClock()
    seen = await _horizons(clock, [1.0], until=30)
    assert seen == [(1.0, 30.0)]


async def test_a_deadline_already_passed_returns_now() -> None:
    clock = VirtualClock()
    await clock.run(until=5)
    assert await clock.sleep_until_horizon(3.0) == 5.0


@pytest.mark.parametrize(
    ("clock", "horizon"),
    [(VirtualClock(), True), (FakeClock(), False)],
    ids=["virtual-clock-has-a-horizon", "clock-moved-by-hand-has-none"],
)
def test_which_clocks_promise_a_horizon(clock: object, horizon: bool) -> None:
    assert isinstance(clock, HorizonClock) is horizon


def test_now_at_is_what_now_reads_then() -> None:
    clock = VirtualClock(start=1_800_000_000.0)
    assert clock.now_at(12.25) == 1_800_000_012.25
