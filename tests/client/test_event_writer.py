"""client/event_writer.py: the recorders' bounded queue and single writer task (its module docstring's invariants)."""

from __future__ import annotations

import asyncio

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.event_writer import EventWriter
from kubeplane.client.interface import Obj

pytestmark = pytest.mark.timeout(20)


async def test_events_are_written_in_order_and_a_failing_one_is_dropped() -> None:
    written: list[str] = []

    async def write(event: Obj) -> None:
        if event["reason"] == "bad":
            raise RuntimeError("boom")
        written.append(str(event["reason"]))

    w = EventWriter(FakeClock(), max_queued=10, name="t", write=write)
    assert not w.started
    for reason in ("a", "bad", "b"):
        assert w.put({"reason": reason})
    await w.flush()
    assert written == ["a", "b"]
    await w.close()
    assert not w.put({"reason": "late"})  # closed: refused


async def test_a_full_queue_refuses_and_close_writes_what_is_queued() -> None:
    written: list[str] = []

    async def write(event: Obj) -> None:
        written.append(str(event["reason"]))

    w = EventWriter(FakeClock(), max_queued=2, name="t", write=write)
    assert w.put({"reason": "a"})
    assert w.put({"reason": "b"})
    assert not w.put({"reason": "c"})  # upstream's DropIfChannelFull
    assert len(w) == 2
    await w.close()
    assert written == ["a", "b"]


async def test_close_cuts_a_sleep_short() -> None:
    clock = FakeClock()
    w = EventWriter(clock, max_queued=2, name="t", write=lambda e: asyncio.sleep(0))
    sleeping = asyncio.ensure_future(w.sleep(3600))
    for _ in range(5):
        await asyncio.sleep(0)
    assert clock.pending == 1
    await w.close()
    await asyncio.wait_for(sleeping, 1)
    assert clock.monotonic() == 0  # the clock never moved
