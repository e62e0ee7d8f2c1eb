"""One watch cache per resource: a single store watch, decoded once, fanned out to every API watcher.

The cache holds the resource's current objects and a ring of the most recent events, both as the store's own
``KeyValue`` objects (the same bytes objects the store keeps, no copy), and decodes on demand
(:mod:`kubeplane.apiserver.watchevent`). Invariants:

* A decoded object is kept only while someone holds it: the cache references the current objects and the
  ring's events weakly. A change is decoded once, when the cache hands it to its watchers (if it has none,
  not at all), and every watcher, and every reader of the cache while a watcher still holds it (an in-process
  informer keeps the object), gets that same object; once nobody holds it, a read decodes the bytes again.
  Decoded objects are shared read-only: never mutate them. A resource nobody keeps (core Events in a
  simulation) thus costs its stored bytes only, and the ring's older states their bytes, not their dicts.

* ``revision`` is the store revision up to which every event of this prefix has been applied. :meth:`sync`
  drains the store watch without waiting, so after it the cache is as fresh as the store (in-process fan-out
  is synchronous); consistent reads call it first (kube-apiserver's ConsistentListFromCache does the same by
  waiting for etcd's progress notification).
* The ring is complete for revisions in (``ring_floor``, ``revision``]: a watch from resourceVersion N with
  N >= ring_floor is served from it; an older N that the store still retains gets a dedicated store watch;
  an N the store compacted is 410 Expired.
* The cache's own store watch has a large buffer (:data:`CACHE_WATCH_BUFFER`: the cache drains it at every read
  and whenever the event loop runs its task, so it fills only in a burst of writes that never yields). If that
  watch overflows, the cache *resumes*: it re-opens the store watch just after ``revision`` (the store replays
  what the cache missed from its history) and goes on, no API watcher ended and nothing listed again, as
  upstream's reflector re-watches from the last resourceVersion it saw after any watch error but "too old
  resource version". :meth:`sync` resumes at once (the replay is read synchronously where the store allows),
  so a read after the burst sees every write.
* Only when the resume point was compacted (or the watch ended by compaction or a store error) the cache
  re-initialises as upstream's cacher does when its reflector's ListAndWatch fails ("unexpected ListAndWatch
  error ...; reinitializing..."): every API watcher is terminated, without a final bookmark (its client
  re-watches from the last resourceVersion it saw and, that being older than the new ring, gets 410 and
  re-lists), the objects are listed again and a new watch starts after that list. From the end of the watch
  until the new list is applied ``ready`` is False and :meth:`check_ready` refuses what needs the cache's state
  with upstream's 429 "storage is (re)initializing" (Retry-After 1). While the watch is not live :meth:`sync`
  does not claim the store's revision, so a read never presents stale objects as current.
* ``_keys`` is exactly the sorted list of ``_kvs``' keys, so a namespace's objects are one bisected slice
  (:meth:`items`): listing a namespace costs its own size, not the whole resource's.

Each API watcher (:class:`CacheWatcher`) hands out, in order, its *interval* and then its *queue*:

* The interval is what the watch starts with (upstream's ``watchCacheInterval``): the synthetic ADDED events of
  the current objects (resourceVersion unset or 0, or ``sendInitialEvents``) and the ring's events after the
  requested revision. It is a snapshot of references (16 bytes an object), turned into events only as the
  watcher sends them, and is not counted against the queue's bounds (upstream's initial events are not in the
  watcher's input channel either).
* The queue holds the live events, bounded in count (``capacity``) and, for HTTP watchers, in the bytes of
  their watch lines (``budget``). A watcher whose queue is full is terminated as kube-apiserver's
  ``cacheWatcher.add`` does ("Forcing watcher close due to unresponsiveness"): the cache drops it, its queue
  is freed and its stream ends; its client re-watches from the last resourceVersion it saw (a 410 then
  re-lists), so no event is lost, and a slow watcher never slows the cache or the other watchers.
* Every event of the ring is shared by all watchers that hold it, and so is its encoding:
  :meth:`WatchEvent.frame` encodes once per resourceVersion (and presentation) while a watcher holds the event,
  and a selector transition (ADDED or DELETED made from a MODIFIED) is made once per event, not once per
  watcher. An event no watcher holds any more is made again from the ring's store event when one replays it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import weakref
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import cast

from kubeplane.apiserver.errors import APIError, too_many_requests
from kubeplane.store.interface import Compacted, EventType, KeyValue, Store, StoreClosed, WatchOverflow
from kubeplane.store.interface import Event as StoreEvent
from kubeplane.store.keyindex import range_bounds
from kubeplane.store.watch import StoreWatch

from .watchevent import FRAME_OVERHEAD, Decoded, Obj, WatchEvent, decode, encode, load, tight, to_watch_event

__all__ = [
    "CACHE_WATCH_BUFFER", "DEFAULT_RING", "FRAME_OVERHEAD", "WATCHER_BUDGET", "WATCHER_QUEUE", "CacheWatcher",
    "Decoded", "Obj", "WatchCache", "WatchEvent", "decode", "encode", "load", "not_ready", "tight", "to_watch_event",
]  # fmt: skip

log = logging.getLogger("kubeplane.apiserver")

DEFAULT_RING = 10_000
CACHE_WATCH_BUFFER = 1_000_000
"""The buffer of the cache's own store watch (events not applied yet); see the module docstring."""
WATCHER_QUEUE = 10_000
"""The most live events a watcher may have queued (upstream bounds its input channel by a count too)."""
WATCHER_BUDGET = 8 * 1024 * 1024
"""The default byte budget of an HTTP watcher's queue: the watch lines of the live events it has not sent yet."""


Filter = Callable[[str, Obj], bool]  # (key, obj) -> matches


class CacheWatcher:
    """One API watch: its interval, then its queue of live events (see the module docstring).

    :meth:`pop` hands out the next event in order. ``capacity`` (events) and ``budget`` (bytes of watch lines;
    None for an in-process watcher, whose consumer takes everything queued at each step) bound the queue: an
    event that would pass either terminates the watcher (:meth:`terminate`). The first event is always queued,
    so one object larger than the budget is sent, not refused for ever."""

    def __init__(
        self,
        *,
        key_prefix: str,
        matches: Filter | None,
        capacity: int = WATCHER_QUEUE,
        budget: int | None = None,
        resource: str = "",
        identifier: str = "",
    ) -> None:
        """``resource`` (upstream's group-resource string, "pods", "deployments.apps") and ``identifier``
        (key and selectors) name the watcher in the termination log. ``matches`` None: every object under the
        prefix (no selector), so events pass unchanged and nothing is decoded to filter them."""
        self.key_prefix = key_prefix
        self.matches = matches
        self.capacity = capacity
        self.budget = budget
        self.resource = resource
        self.identifier = identifier
        self.queue: deque[WatchEvent] = deque()
        self.queued_bytes = 0
        """The summed ``size`` of the queue's events."""
        self.closed = False
        self.overflowed = False
        self.on_terminated: Callable[[], None] | None = None
        self._interval: Iterator[WatchEvent] | None = None
        self._next: WatchEvent | None = None  # the interval's next event, read ahead so `pending` costs nothing
        self._end_bookmark: WatchEvent | None = None  # WatchList's initial-events-end, until it is handed out
        self._waiter: asyncio.Future[None] | None = None
        self._room: asyncio.Future[None] | None = None
        self._source: StoreWatch | None = None  # a dedicated store watch for a start older than the ring

    @property
    def pending(self) -> bool:
        """Whether :meth:`pop` has an event to hand out."""
        return self._next is not None or bool(self.queue)

    @property
    def follows_cache(self) -> bool:
        """Whether the watcher is fed by the cache (so the cache's revision bounds what it has been offered);
        a watcher fed by a dedicated store watch is not, and gets no bookmark at the cache's revision."""
        return self._source is None

    def start_with(self, events: Iterable[WatchEvent], *, end_bookmark: WatchEvent | None = None) -> None:
        """Append ``events`` (consumed lazily) to the interval, then ``end_bookmark`` if given. Called before the
        watcher is registered, so every live event comes after the interval."""
        tail: Iterable[WatchEvent] = events if end_bookmark is None else itertools.chain(events, (end_bookmark,))
        if end_bookmark is not None:
            self._end_bookmark = end_bookmark
        if self._next is None:
            self._interval = iter(tail)
            self._next = next(self._interval, None)
        else:
            assert self._interval is not None
            self._interval = itertools.chain(self._interval, tail)

    def pop(self) -> WatchEvent | None:
        """The next event to send (the interval's, then the queue's), or None if nothing is pending."""
        event = self._next
        if event is not None:
            assert self._interval is not None
            self._next = next(self._interval, None)
            if self._next is None:
                self._interval = None
            if event is self._end_bookmark:
                self._end_bookmark = None
            return event
        if not self.queue:
            return None
        event = self.queue.popleft()
        self.queued_bytes -= event.size
        if self._room is not None and self._has_room():
            _resolve(self._room)
        return event

    def drain(self) -> list[WatchEvent]:
        """Every pending event, in order (an in-process consumer takes them all at once)."""
        events: list[WatchEvent] = []
        while (event := self.pop()) is not None:
            events.append(event)
        return events

    def transform(self, event: WatchEvent) -> WatchEvent | None:
        """``event`` as this watcher sees it, as kube-apiserver's ``convertToWatchEvent``: None if it concerns no
        object the watcher selects; transitions into and out of the selector become ADDED and DELETED."""
        if not event.key.startswith(self.key_prefix):
            return None
        matches = self.matches
        if matches is None:  # ADDED, MODIFIED (has a previous state), DELETED (had one): each passes as it is
            return event
        now = event.type != "DELETED" and matches(event.key, event.obj)
        before = event.has_prev and matches(event.key, event.prev)  # type: ignore[arg-type]
        if event.type == "DELETED":
            return event if before else None
        if now:
            return event if before else event.as_added()
        return event.as_deleted() if before else None

    def replay(self, events: Iterable[WatchEvent]) -> Iterator[WatchEvent]:
        """The ring's ``events`` (from a snapshot) as this watcher sees them, lazily: an interval."""
        for event in events:
            out = self.transform(event)
            if out is not None:
                yield out

    def offer(self, event: WatchEvent) -> None:
        """Queue a live event (filtered by :meth:`transform`); terminate the watcher if its queue is full."""
        if self.closed:
            return
        out = self.transform(event)
        if out is None:
            return
        queue = self.queue
        if queue and (
            len(queue) >= self.capacity or (self.budget is not None and self.queued_bytes + out.size > self.budget)
        ):
            self.terminate()
            return
        queue.append(out)
        self.queued_bytes += out.size
        self._wake()

    def terminate(self) -> None:
        """Upstream's ``cacheWatcher.add`` failing: log "Forcing ... watcher close due to unresponsiveness" and
        close. Graceful when WatchList's initial-events-end bookmark is still pending (upstream's
        ``cacheWatcherBookmarkReceived``): what is pending is still sent, so the client gets the bookmark and can
        resume from it. Otherwise the interval and the queue are dropped at once, their memory freed, and the
        stream ends after what was already handed out."""
        graceful = self._end_bookmark is not None
        log.info(
            "Forcing %s watcher close due to unresponsiveness: %s. len(c.input) = %d, len(c.result) = %d, "
            "graceful = %s",
            self.resource,
            self.identifier,
            len(self.queue),
            0,
            "true" if graceful else "false",
        )
        self.overflowed = True
        if not graceful:
            self.queue.clear()
            self.queued_bytes = 0
            self._interval = self._next = None
        if self.on_terminated is not None:
            self.on_terminated()
        self.close()

    def _has_room(self) -> bool:
        half = len(self.queue) <= self.capacity // 2
        return half and (self.budget is None or self.queued_bytes <= self.budget // 2)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            _resolve(waiter)

    def close(self) -> None:
        self.closed = True
        if self._source is not None:
            self._source.close()
        self._wake()
        if self._room is not None:
            _resolve(self._room)

    async def wait_for_room(self) -> bool:
        """Wait until the queue is at most half full; False if the watcher was closed instead. A dedicated store
        watch feeding this watcher waits here before each event, so catching up from an old revision never
        fills the queue faster than the client reads; what the client does not read then waits in the store
        watch's own bounded buffer, whose overflow ends the watch."""
        while not self.closed and not self._has_room():
            self._room = asyncio.get_running_loop().create_future()
            try:
                await self._room
            finally:
                self._room = None
        return not self.closed

    async def wait(self, timeout: float, *, sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        """Return when events are pending, the watcher is closed, or ``timeout`` seconds pass (on ``sleep``'s
        clock when given: an in-process client on a simulation's virtual clock)."""
        if self.pending or self.closed:
            return
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            # asyncio.wait, not wait_for(shield(...)): on Python 3.11 wait_for can swallow a cancellation that
            # arrives together with the wake-up, and a cancelled watch would then never end.
            if sleep is None:
                await asyncio.wait({self._waiter}, timeout=timeout)
            else:
                sleeper = asyncio.ensure_future(sleep(timeout))
                try:
                    await asyncio.wait({self._waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    sleeper.cancel()
        finally:
            self._waiter = None


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


REINITIALIZING = "storage is (re)initializing"
"""Upstream cacher's message while it is not ready (``errors.NewTooManyRequests(..., 1)``)."""


def not_ready() -> APIError:
    """429 TooManyRequests "storage is (re)initializing", retryAfterSeconds 1 (upstream cacher.go)."""
    return too_many_requests(REINITIALIZING, retry_after=1)


class WatchCache:
    def __init__(
        self, *, store: Store, prefix: str, ring_size: int = DEFAULT_RING, watch_buffer: int = CACHE_WATCH_BUFFER
    ) -> None:
        """``watch_buffer``: the buffer of the cache's own store watch (tests make it small to overflow it)."""
        self.store = store
        self.watch_buffer = watch_buffer
        self.reinitialisations = 0
        """How many times the store watch ended and the cache listed again (tests read it)."""
        self.resumes = 0
        """How many times the store watch overflowed and was re-opened after ``revision`` (tests read it)."""
        self.ready = True
        """False from the end of a store watch that cannot be resumed until the new list is applied."""
        self.prefix = prefix
        self._kvs: dict[str, KeyValue] = {}  # key -> the store's KeyValue of the current object (its bytes shared)
        self._live: dict[str, weakref.ref[Decoded]] = {}  # key -> the current object, decoded, while it lives
        self._keys: list[str] = []
        self.revision = 0
        self.ring: deque[RingEntry] = deque()
        self.ring_size = ring_size
        self.ring_floor = 0
        # insertion-ordered (a dict, not a set of id-hashed objects): every run delivers to watchers in the
        # same order, which a simulation's determinism relies on
        self.watchers: dict[CacheWatcher, None] = {}
        self._watch: StoreWatch | None = None
        self._task: asyncio.Task[None] | None = None
        self._decoded: dict[str, tuple[int, Decoded]] = {}  # key -> (revision, object): see :meth:`expect`

    async def start(self) -> None:
        await self._list_and_watch()
        self._task = asyncio.create_task(self._run(), name=f"watchcache {self.prefix}")

    async def _list_and_watch(self) -> None:
        """List the prefix at the store's revision, then watch from just after it (no await in between: no gap)."""
        revision = self.store.revision
        result = await self.store.range(self.prefix, revision=revision)
        self._kvs = {kv.key: kv for kv in result.kvs}
        self._live = {}
        self._keys = [kv.key for kv in result.kvs]  # range results are in key order
        self.revision = self.ring_floor = revision
        self.ring.clear()
        watch = self.store.watch(self.prefix, start_revision=revision + 1, buffer_size=self.watch_buffer)
        assert isinstance(watch, StoreWatch)
        self._watch = watch
        self.ready = True

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for watcher in list(self.watchers):
            watcher.close()

    async def _run(self) -> None:
        while True:
            watch = self._watch
            assert watch is not None
            try:
                batch = await watch.next_batch()
            except StoreClosed:
                return
            except Exception as exc:  # any end of the store watch: resume or reinitialise, as upstream
                if watch is self._watch and not (isinstance(exc, WatchOverflow) and self._resume()):
                    await self._reinitialise(exc)
                continue
            if watch is not self._watch:  # sync() resumed on a new watch meanwhile (this one gave its last)
                continue
            if not batch:
                return
            self._apply(batch)

    def _resume(self) -> bool:
        """The store watch overflowed: apply what it buffered, re-open it just after ``revision``. False if the
        store compacted that revision (the caller re-initialises): upstream's reflector re-watches from its
        last resourceVersion unless the watch failed with "too old resource version"."""
        old = self._watch
        if old is not None:
            rest = old.take_buffered()  # normally empty: the error comes after the buffered events
            if rest:
                self._apply(rest)
        try:
            watch = self.store.watch(self.prefix, start_revision=self.revision + 1, buffer_size=self.watch_buffer)
        except Compacted:
            self.ready = False  # the old watch stays: its error reaches the task, which re-initialises
            return False
        assert isinstance(watch, StoreWatch)
        self._watch = watch
        if old is not None:
            old.close()  # a task waiting on it gets nothing more and moves to the new watch
        self.resumes += 1
        log.info("cacher (%s): watch overflowed; resuming from resourceVersion %d", self.prefix, self.revision + 1)
        return True

    async def _reinitialise(self, error: BaseException) -> None:
        """The store watch ended with ``error``: terminate every API watcher, list again, watch again (upstream's
        ``Cacher.startCaching`` after a failed ``ListAndWatch``). Not ready until the list is applied."""
        log.error("cacher (%s): unexpected ListAndWatch error: %s; reinitializing...", self.prefix, error)
        self.ready = False
        self.reinitialisations += 1
        if self._watch is not None:
            buffered = self._watch.take_buffered()  # what reached the buffer before the error: in order, no gap
            if buffered:
                self._apply(buffered)
            self._watch.close()
        for watcher in list(self.watchers):
            self.watchers.pop(watcher, None)
            watcher.terminate()
            watcher.close()
        while True:
            try:
                await self._list_and_watch()
                return
            except StoreClosed:
                raise
            except Exception as exc:  # the store is failing: retry, as the reflector backs off
                log.error("cacher (%s): failed to list: %s", self.prefix, exc)
                await asyncio.sleep(1)

    def sync(self) -> None:
        """Apply every event already delivered by the store (see the module docstring), resuming an overflowed
        watch at once. The cache claims the store's revision only while its watch is live: otherwise events it
        has not seen may precede it. A watch ended otherwise leaves the cache not ready until its task lists."""
        watch = self._watch
        if watch is None:
            return
        try:
            batch = watch.take_available()
        except Exception:  # the replay found its history compacted: the cache's task re-initialises
            self.ready = False
            return
        if batch:
            self._apply(batch)
        if watch.live:
            self.revision = max(self.revision, self.store.revision)
            return
        error = watch.error
        if isinstance(error, WatchOverflow) and self.ready:
            if self._resume():
                self.sync()
        elif error is not None and not isinstance(error, StoreClosed):
            self.ready = False

    def check_ready(self) -> None:
        """Raise upstream's 429 "storage is (re)initializing" if the cache is re-initialising (call after
        :meth:`sync`): a list or watch served from the cache would otherwise see stale state."""
        if not self.ready:
            raise not_ready()

    def bookmark_revision(self, watcher: CacheWatcher) -> int | None:
        """The revision an idle bookmark may claim for ``watcher`` (None: send none): after a sync, only if the
        watcher is open, follows the cache, has nothing pending and the cache is ready. A watcher terminated by
        a re-initialisation never gets one (upstream closes it without): the cache's revision is then the new
        list's, which it did not receive."""
        self.sync()
        if watcher.closed or watcher.pending or not watcher.follows_cache or not self.ready:
            return None
        return self.revision

    def expect(self, key: str, revision: int, obj: Obj) -> None:
        """A trusted in-process writer's word that the put of ``key`` at ``revision`` stored ``obj``, exactly what
        decoding the stored value gives (``resourceVersion`` last in its metadata): the event is then applied
        with ``obj`` instead of decoding the value again (:meth:`LocalClient.put_prepared`, the fleet's Lease
        renewals). Shared read-only as every cached object (a :class:`Decoded` is kept as it is, another dict
        copied into one). A word is kept until the key's event of its revision (earlier events of the key pass it
        by); one whose revision was already applied is dropped at the key's next event."""
        self._decoded[key] = (revision, obj if isinstance(obj, Decoded) else Decoded(obj))

    def _apply(self, batch: list[StoreEvent]) -> None:
        ring = self.ring
        expected = self._decoded
        kvs = self._kvs
        live = self._live
        for store_event in batch:
            key = store_event.kv.key
            decoded: Decoded | None = None
            if expected and (word := expected.get(key)) is not None and word[0] <= store_event.revision:
                del expected[key]  # taken, or for a revision already applied: dropped
                if word[0] == store_event.revision and store_event.type is EventType.PUT:
                    decoded = word[1]
            entry = RingEntry(store_event)
            ring.append(entry)
            if len(ring) > self.ring_size:
                self.ring_floor = ring.popleft().revision
            self.revision = max(self.revision, store_event.revision)
            current = live.pop(key, None)
            if store_event.type is EventType.DELETE:
                if kvs.pop(key, None) is not None:
                    del self._keys[bisect_left(self._keys, key)]
            else:
                if key not in kvs:
                    insort(self._keys, key)
                kvs[key] = store_event.kv
            if not self.watchers:  # nobody to hand the change to: nothing decoded
                if decoded is not None:
                    live[key] = weakref.ref(decoded)
                continue
            event = to_watch_event(store_event, None if current is None else current(), decoded)
            entry.ref = weakref.ref(event)
            obj = event.obj  # decoded once here: every watcher, and every reader while one holds it, shares it
            if store_event.type is EventType.PUT:
                live[key] = weakref.ref(cast(Decoded, obj))  # what load() makes, or the writer's word
            for watcher in list(self.watchers):
                watcher.offer(event)
                if watcher.closed:
                    self.watchers.pop(watcher, None)

    def _event(self, entry: RingEntry) -> WatchEvent:
        """The ring entry's event: the one a watcher still holds, else made again (decoded on demand)."""
        ref = entry.ref
        event = None if ref is None else ref()
        if event is None:
            event = to_watch_event(entry.event)
            entry.ref = weakref.ref(event)
        return event

    def events_after(self, revision: int) -> list[WatchEvent] | None:
        """The ring's events newer than ``revision``, oldest first; None when the ring no longer holds them all."""
        if revision < self.ring_floor:
            return None
        return [self._event(entry) for entry in self._entries_after(revision)]

    def _entries_after(self, revision: int) -> list[RingEntry]:
        newer: list[RingEntry] = []
        for entry in reversed(self.ring):  # the ring is in revision order: walk back to ``revision``
            if entry.revision <= revision:
                break
            newer.append(entry)
        newer.reverse()
        return newer

    def object_at(self, key: str, kv: KeyValue) -> Obj:
        """``key``'s object as ``kv`` stores it: the decoded one someone still holds if ``kv`` is still current,
        else decoded now (and, if current, found again while its new holder keeps it)."""
        current = self._kvs.get(key) is kv
        ref = self._live.get(key) if current else None
        obj = None if ref is None else ref()
        if obj is None:
            obj = load(kv, kv.mod_revision)
            if current:
                self._live[key] = weakref.ref(obj)
        return obj

    @property
    def objects(self) -> Mapping[str, Obj]:
        """The current objects by key, decoded on demand (a read-only view; call :meth:`sync` first for fresh)."""
        return _Objects(self)

    @property
    def kvs(self) -> Mapping[str, KeyValue]:
        """The current objects' stored KeyValues by key (nothing decoded): their mod_revision, their bytes."""
        return self._kvs

    def items(self, prefix: str) -> Iterator[tuple[str, Obj]]:
        """``(key, object)`` for every key under ``prefix``, in key order (call :meth:`sync` first for fresh),
        each decoded as the iteration reaches it unless someone holds it decoded already."""
        return ((key, self.object_at(key, kv)) for key, kv in self.stored_items(prefix))

    def stored_items(self, prefix: str) -> list[tuple[str, KeyValue]]:
        """``(key, KeyValue)`` for every key under ``prefix``, in key order, now (a snapshot; nothing decoded)."""
        low, high = range_bounds(prefix, None)
        keys = self._keys
        lo = bisect_left(keys, low)
        hi = len(keys) if high is None else bisect_left(keys, high, lo)
        kvs = self._kvs
        return [(key, kvs[key]) for key in keys[lo:hi]]

    def add_watcher(self, watcher: CacheWatcher, *, after: int) -> bool:
        """Register ``watcher`` for events with revision > ``after`` (those already in the ring become its interval,
        made into events as the watcher reaches them); False if the ring cannot serve them."""
        self.sync()
        if after < self.ring_floor:
            return False
        newer = self._entries_after(after)
        if newer:
            watcher.start_with(watcher.replay(self._event(entry) for entry in newer))
        self.watchers[watcher] = None
        return True

    def remove_watcher(self, watcher: CacheWatcher) -> None:
        self.watchers.pop(watcher, None)
        watcher.close()


class RingEntry:
    """One change in the ring: the store's event (its KeyValues, bytes shared with the store) and, while a
    watcher holds it, the decoded :class:`WatchEvent` made from it (so its objects and frames stay shared)."""

    __slots__ = ("event", "ref")

    def __init__(self, event: StoreEvent) -> None:
        self.event = event
        self.ref: weakref.ref[WatchEvent] | None = None

    @property
    def revision(self) -> int:
        return self.event.revision


class _Objects(Mapping[str, Obj]):
    """:attr:`WatchCache.objects`: the current objects, decoded on demand (see :meth:`WatchCache.object_at`)."""

    __slots__ = ("_cache",)

    def __init__(self, cache: WatchCache) -> None:
        self._cache = cache

    def __getitem__(self, key: str) -> Obj:
        return self._cache.object_at(key, self._cache._kvs[key])

    def get(self, key: str, default: Obj | None = None) -> Obj | None:  # type: ignore[override]
        kv = self._cache._kvs.get(key)
        return default if kv is None else self._cache.object_at(key, kv)

    def __contains__(self, key: object) -> bool:
        return key in self._cache._kvs

    def __iter__(self) -> Iterator[str]:
        return iter(self._cache._kvs)

    def __len__(self) -> int:
        return len(self._cache._kvs)
