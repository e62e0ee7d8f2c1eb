"""In-memory watch fan-out: one hub per store, one bounded buffer per watcher.

Delivery rules (the guarantees of :mod:`kubeplane.store.interface`):

* The store publishes events to the hub in revision order, after they are durable, from the event loop's
  thread. The hub appends each to the buffer of every watcher whose prefix matches; it never awaits, so a slow
  watcher cannot delay a writer or another watcher.
* A watcher that starts in the past first replays history lazily, in chunks, from ``start_revision`` up to the
  revision that was current when it registered (``catchup_to``); live events published after registration are
  all > ``catchup_to``, so the two phases neither overlap nor leave a gap. Replay re-checks compaction at each
  chunk and ends the watch with :class:`Compacted` if history it still needs was discarded.
* When a buffer already holds ``buffer_size`` events the watcher is detached from the hub and its pending error
  becomes :class:`WatchOverflow` naming the first revision it missed; the consumer still receives everything
  buffered before that, then the error. Errors are always raised after the events that precede them.

Watchers are grouped by prefix so an event costs one ``startswith`` per distinct prefix, not per watcher.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence

from .interface import Event, StoreClosed, WatchOverflow

DEFAULT_BUFFER_SIZE = 10_000
CATCHUP_CHUNK = 1_000

# fetch(prefix, from_revision, to_revision_inclusive, limit) -> events in revision order (may raise Compacted)
HistoryFetch = Callable[[str, int, int, int], list[Event]]


class StoreWatch:
    """One watcher. Implements the :class:`~kubeplane.store.interface.Watch` protocol."""

    __slots__ = (
        "_buffer",
        "_buffer_size",
        "_catchup_next",
        "_catchup_to",
        "_closed",
        "_error",
        "_fetch",
        "_hub",
        "_min_revision",
        "_ready",
        "_waiter",
        "prefix",
    )

    def __init__(
        self,
        *,
        hub: WatchHub,
        prefix: str,
        buffer_size: int,
        fetch: HistoryFetch | None = None,
        catchup_from: int = 0,
        catchup_to: int = 0,
        min_revision: int = 0,
    ) -> None:
        self.prefix = prefix
        self._min_revision = min_revision  # a watch from a future revision skips earlier live events
        self._hub: WatchHub | None = hub
        self._buffer: deque[Event] = deque()
        self._buffer_size = buffer_size
        self._fetch = fetch
        self._catchup_next = catchup_from
        self._catchup_to = catchup_to
        self._error: BaseException | None = None
        self._closed = False
        self._waiter: asyncio.Future[None] | None = None
        self._ready: deque[Event] = deque()  # a batch taken for one-at-a-time iteration

    # -- producer side (the hub) --------------------------------------------------------------------------

    def _push(self, event: Event) -> bool:
        """Buffer ``event``; False if the buffer is full (the hub then detaches this watcher)."""
        if event.revision < self._min_revision:
            return True
        if len(self._buffer) >= self._buffer_size:
            if self._error is None:
                self._error = WatchOverflow(event.revision, self._buffer_size)
            self._hub = None
            self._wake()
            return False
        self._buffer.append(event)
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)
        return True

    def _fail(self, error: BaseException) -> None:
        if self._error is None:
            self._error = error
        self._detach()
        self._wake()

    def _detach(self) -> None:
        hub = self._hub
        if hub is not None:
            self._hub = None
            hub.remove(self)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # -- consumer side ------------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop the watch; iteration ends and buffered events are dropped. Idempotent."""
        self._closed = True
        self._buffer.clear()
        self._ready.clear()
        self._detach()
        self._wake()

    @property
    def live(self) -> bool:
        """Whether every event up to the store's current revision has reached this watcher's buffer: not
        replaying history, not ended by an error (overflow, compaction), not closed."""
        return self._fetch is None and self._error is None and not self._closed

    @property
    def error(self) -> BaseException | None:
        """What ended the watch (overflow, compaction, a store error), raised by :meth:`next_batch` once the
        events buffered before it are taken; None while the watch runs."""
        return self._error

    def take_available(self) -> list[Event]:
        """:meth:`take_buffered`, after reading the rest of a history replay synchronously (this class's replay
        reads memory or a local database). Raises what the replay raises (:class:`Compacted`), after which the
        watch is ended. A subclass whose replay must await returns nothing until it is done, as take_buffered."""
        events: list[Event] = []
        if self._closed:
            return events
        while self._fetch is not None:
            events.extend(self._catchup(CATCHUP_CHUNK))
        events.extend(self.take_buffered())
        return events

    def take_buffered(self) -> list[Event]:
        """Every live event buffered now, without waiting (empty while replaying history).

        In-process fan-out is synchronous, so after this returns the caller has seen every event up to the
        store's current revision: the API server's watch cache uses it to serve consistent reads.
        """
        if self._fetch is not None or not self._buffer:
            return []
        batch = list(self._buffer)
        self._buffer.clear()
        return batch

    async def next_batch(self, max_events: int = 1_000) -> list[Event]:
        while True:
            if self._closed:
                return []
            if self._fetch is not None:
                batch = self._catchup(max_events)
                if batch:
                    return batch
                continue
            buffer = self._buffer
            if buffer:
                if len(buffer) <= max_events:
                    batch = list(buffer)
                    buffer.clear()
                    return batch
                return [buffer.popleft() for _ in range(max_events)]
            if self._error is not None:
                raise self._error
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                if self._waiter is waiter:
                    self._waiter = None

    def _catchup(self, max_events: int) -> list[Event]:
        """The next replayed chunk; clears ``_fetch`` when replay reaches ``catchup_to``."""
        fetch = self._fetch
        assert fetch is not None
        if self._catchup_next > self._catchup_to:
            self._fetch = None
            return []
        try:
            events = fetch(self.prefix, self._catchup_next, self._catchup_to, min(max_events, CATCHUP_CHUNK))
        except BaseException as error:
            self._fetch = None
            self._buffer.clear()  # events after the error must not be delivered
            self._fail(error)
            raise
        if not events:
            self._fetch = None
            return []
        self._catchup_next = events[-1].revision + 1
        return events

    def __aiter__(self) -> StoreWatch:
        return self

    async def __anext__(self) -> Event:
        ready = self._ready
        if not ready:
            batch = await self.next_batch()
            if not batch:
                raise StopAsyncIteration
            ready.extend(batch)
        return ready.popleft()


class WatchHub:
    """Fan-out of published events to registered watchers (see the module docstring)."""

    __slots__ = ("_by_prefix", "_candidates")

    def __init__(self) -> None:
        self._by_prefix: dict[str, list[StoreWatch]] = {}
        # key head ("/registry/leases/") -> the prefixes that may match a key under it (those the head starts
        # with, and those longer than it that start with it): a write is checked against those alone, not
        # against every resource's watch; rebuilt whenever a watcher comes or goes
        self._candidates: dict[str, list[tuple[str, list[StoreWatch]]]] = {}

    def __len__(self) -> int:
        return sum(len(ws) for ws in self._by_prefix.values())

    def add(self, watch: StoreWatch) -> None:
        self._by_prefix.setdefault(watch.prefix, []).append(watch)
        self._candidates.clear()

    def remove(self, watch: StoreWatch) -> None:
        watchers = self._by_prefix.get(watch.prefix)
        if watchers is None:
            return
        try:
            watchers.remove(watch)
        except ValueError:
            return
        self._candidates.clear()
        if not watchers:
            del self._by_prefix[watch.prefix]

    def _groups(self, key: str) -> list[tuple[str, list[StoreWatch]]]:
        """The (prefix, watchers) groups whose prefix may match ``key`` (each still checked)."""
        second = key.find("/", key.find("/", 1) + 1)
        head = key if second < 0 else key[: second + 1]
        groups = self._candidates.get(head)
        if groups is None:
            groups = [(p, ws) for p, ws in self._by_prefix.items() if head.startswith(p) or p.startswith(head)]
            self._candidates[head] = groups
        return groups

    def publish(self, events: Sequence[Event]) -> None:
        if not self._by_prefix:
            return
        overflowed: list[StoreWatch] = []
        for event in events:
            key = event.kv.key
            for prefix, watchers in self._groups(key):
                if key.startswith(prefix):
                    for watch in watchers:
                        if not watch._push(event):
                            overflowed.append(watch)
            if overflowed:
                for watch in overflowed:
                    self.remove(watch)
                overflowed.clear()

    def close_all(self) -> None:
        """End every watcher with :class:`StoreClosed` (after what is already buffered)."""
        for watchers in list(self._by_prefix.values()):
            for watch in list(watchers):
                watch._fail(StoreClosed())
        self._by_prefix.clear()


def new_watch(
    *,
    hub: WatchHub,
    prefix: str,
    buffer_size: int | None,
    fetch: HistoryFetch,
    start_revision: int | None,
    current_revision: int,
) -> StoreWatch:
    """Register a watcher; if ``start_revision`` is in the past it replays [start, current] first."""
    size = DEFAULT_BUFFER_SIZE if buffer_size is None else buffer_size
    if size < 1:
        raise ValueError(f"buffer_size must be at least 1, got {size}")
    if start_revision is not None and start_revision <= current_revision:
        watch = StoreWatch(
            hub=hub,
            prefix=prefix,
            buffer_size=size,
            fetch=fetch,
            catchup_from=start_revision,
            catchup_to=current_revision,
        )
    else:
        watch = StoreWatch(hub=hub, prefix=prefix, buffer_size=size, min_revision=start_revision or 0)
    hub.add(watch)
    return watch
