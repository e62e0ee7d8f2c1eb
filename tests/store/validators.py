"""Watch validators in the spirit of etcd's robustness tests, shared by the store tests.

Each takes the events a watcher delivered and the reference history (every event of the store, in revision
order) and fails with a message saying which guarantee broke.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kubeplane.store.interface import Event, Watch


def expected_events(history: Sequence[Event], *, prefix: str, start: int) -> list[Event]:
    return [e for e in history if e.revision >= start and e.kv.key.startswith(prefix)]


def validate_ordered(events: Sequence[Event]) -> None:
    revisions = [e.revision for e in events]
    assert revisions == sorted(revisions), f"events out of revision order: {revisions}"


def validate_unique(events: Sequence[Event]) -> None:
    revisions = [e.revision for e in events]
    assert len(revisions) == len(set(revisions)), f"an event was delivered twice: {revisions}"


def validate_reliable(events: Sequence[Event], history: Sequence[Event], *, prefix: str, start: int) -> None:
    """No gaps and no strangers: exactly the history's events on the prefix from ``start``, equal in full."""
    want = expected_events(history, prefix=prefix, start=start)
    got_revs = [e.revision for e in events]
    want_revs = [e.revision for e in want][: len(events)]
    assert got_revs == want_revs, f"gap or extra event: got {got_revs}, want {want_revs}"
    for got, exp in zip(events, want, strict=False):
        assert got == exp, f"event at revision {got.revision} differs: {got} != {exp}"


def validate_all(events: Sequence[Event], history: Sequence[Event], *, prefix: str, start: int) -> None:
    validate_ordered(events)
    validate_unique(events)
    validate_reliable(events, history, prefix=prefix, start=start)
    want = len(expected_events(history, prefix=prefix, start=start))
    assert len(events) == want, f"watcher got {len(events)} events, history has {want}"


async def collect(watch: Watch, count: int, *, timeout: float = 5.0) -> list[Event]:
    """Exactly ``count`` events (failing after ``timeout``), then check that nothing more is pending."""
    events: list[Event] = []
    async with asyncio.timeout(timeout):
        while len(events) < count:
            batch = await watch.next_batch()
            assert batch, "watch ended early"
            events.extend(batch)
    try:
        async with asyncio.timeout(0.02):
            extra = await watch.next_batch()
    except TimeoutError:
        extra = []
    events.extend(extra)
    return events
