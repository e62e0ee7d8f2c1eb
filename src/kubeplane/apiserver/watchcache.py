"""One watch cache per resource: a single store watch, decoded once, fanned out to every API watcher.

The cache holds the resource's current objects (decoded, shared read-only: never mutate them) and a ring of the
most recent events. Invariants:

* ``revision`` is the store revision up to which every event of this prefix has been applied. :meth:`sync`
  drains the store watch without waiting, so after it the cache is as fresh as the store (in-process fan-out
  is synchronous); consistent reads call it first (kube-apiserver's ConsistentListFromCache does the same by
  waiting for etcd's progress notification).
* The ring is complete for revisions in (``ring_floor``, ``revision``]: a watch from resourceVersion N with
  N >= ring_floor is served from it; an older N that the store still retains gets a dedicated store watch;
  an N the store compacted is 410 Expired.
* ``_keys`` is exactly the sorted list of ``objects``' keys, so a namespace's objects are one bisected slice
  (:meth:`items`): listing a namespace costs its own size, not the whole resource's.
* Each API watcher has a bounded queue. A watcher that falls behind is closed (its client re-watches from the
  last resourceVersion it saw, as with kube-apiserver), never slowing the cache or the other watchers.
"""

from __future__ import annotations

import asyncio
import contextlib
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubeplane.store.interface import Event as StoreEvent
from kubeplane.store.interface import EventType, KeyValue, Store
from kubeplane.store.keyindex import range_bounds
from kubeplane.store.watch import StoreWatch

Obj = dict[str, Any]
DEFAULT_RING = 10_000
WATCHER_QUEUE = 10_000


def decode(kv: KeyValue) -> Obj:
    """A stored object with ``metadata.resourceVersion`` set from the key's mod_revision."""
    obj: Obj = orjson.loads(kv.value)
    obj["metadata"]["resourceVersion"] = str(kv.mod_revision)
    return obj


def encode(obj: Obj) -> bytes:
    """What the store keeps: the object without resourceVersion (the revision is the store's own)."""
    meta = obj["metadata"]
    rv = meta.pop("resourceVersion", None)
    try:
        return orjson.dumps(obj)
    finally:
        if rv is not None:
            meta["resourceVersion"] = rv


@dataclass(slots=True)
class WatchEvent:
    """A decoded change: ``obj`` is the new state (for DELETED, the last state with the delete's revision)."""

    type: str  # ADDED, MODIFIED, DELETED (BOOKMARK for WatchList's initial-events-end marker)
    key: str
    revision: int
    obj: Obj
    prev: Obj | None
    _frame: bytes | None = field(default=None, repr=False)

    def frame(self) -> bytes:
        """The watch line ``{"type":...,"object":...}\\n``, encoded once and shared by unfiltered watchers."""
        if self._frame is None:
            self._frame = orjson.dumps({"type": self.type, "object": self.obj}) + b"\n"
        return self._frame


def to_watch_event(event: StoreEvent) -> WatchEvent:
    if event.type is EventType.DELETE:
        assert event.prev_kv is not None
        last: Obj = orjson.loads(event.prev_kv.value)
        last["metadata"]["resourceVersion"] = str(event.revision)
        return WatchEvent("DELETED", event.kv.key, event.revision, last, decode(event.prev_kv))
    prev = decode(event.prev_kv) if event.prev_kv is not None else None
    return WatchEvent("ADDED" if prev is None else "MODIFIED", event.kv.key, event.revision, decode(event.kv), prev)


Filter = Callable[[str, Obj], bool]  # (key, obj) -> matches


class CacheWatcher:
    """One API watch. ``queue`` holds events already filtered and transformed for this watcher."""

    def __init__(self, *, key_prefix: str, matches: Filter, capacity: int = WATCHER_QUEUE) -> None:
        self.key_prefix = key_prefix
        self.matches = matches
        self.capacity = capacity
        self.queue: deque[WatchEvent] = deque()
        self.closed = False
        self.overflowed = False
        self._waiter: asyncio.Future[None] | None = None
        self._source: StoreWatch | None = None  # a dedicated store watch for a start older than the ring

    def offer(self, event: WatchEvent) -> None:
        """Filter ``event`` as kube-apiserver's cacheWatcher: transitions in and out of the selector become
        ADDED and DELETED."""
        if self.closed or not event.key.startswith(self.key_prefix):
            return
        now = event.type != "DELETED" and self.matches(event.key, event.obj)
        before = event.prev is not None and self.matches(event.key, event.prev)
        if event.type == "DELETED":
            out = event if before else None
        elif now and before:
            out = event
        elif now:
            out = event if event.type == "ADDED" else WatchEvent("ADDED", event.key, event.revision, event.obj, None)
        elif before:
            out = WatchEvent("DELETED", event.key, event.revision, event.obj, event.prev)
        else:
            out = None
        if out is None:
            return
        if len(self.queue) >= self.capacity:
            self.overflowed = True
            self.close()
            return
        self.queue.append(out)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def close(self) -> None:
        self.closed = True
        if self._source is not None:
            self._source.close()
        self._wake()

    async def wait(self, timeout: float, *, sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        """Return when events are queued, the watcher is closed, or ``timeout`` seconds pass (on ``sleep``'s
        clock when given: an in-process client on a simulation's virtual clock)."""
        if self.queue or self.closed:
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


class WatchCache:
    def __init__(self, *, store: Store, prefix: str, ring_size: int = DEFAULT_RING) -> None:
        self.store = store
        self.prefix = prefix
        self.objects: dict[str, Obj] = {}
        self._keys: list[str] = []
        self.revision = 0
        self.ring: deque[WatchEvent] = deque()
        self.ring_size = ring_size
        self.ring_floor = 0
        # insertion-ordered (a dict, not a set of id-hashed objects): every run delivers to watchers in the
        # same order, which a simulation's determinism relies on
        self.watchers: dict[CacheWatcher, None] = {}
        self._watch: StoreWatch | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        revision = self.store.revision
        result = await self.store.range(self.prefix, revision=revision)
        self.objects = {kv.key: decode(kv) for kv in result.kvs}
        self._keys = [kv.key for kv in result.kvs]  # range results are in key order
        self.revision = self.ring_floor = revision
        watch = self.store.watch(self.prefix, start_revision=revision + 1)
        assert isinstance(watch, StoreWatch)
        self._watch = watch
        self._task = asyncio.create_task(self._run(), name=f"watchcache {self.prefix}")

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
        assert self._watch is not None
        while True:
            batch = await self._watch.next_batch()
            if not batch:
                return
            self._apply(batch)

    def sync(self) -> None:
        """Apply every event already delivered by the store (see the module docstring)."""
        if self._watch is not None:
            batch = self._watch.take_buffered()
            if batch:
                self._apply(batch)
        self.revision = max(self.revision, self.store.revision)

    def _apply(self, batch: list[StoreEvent]) -> None:
        ring = self.ring
        for store_event in batch:
            event = to_watch_event(store_event)
            if event.type == "DELETED":
                if self.objects.pop(event.key, None) is not None:
                    del self._keys[bisect_left(self._keys, event.key)]
            else:
                if event.key not in self.objects:
                    insort(self._keys, event.key)
                self.objects[event.key] = event.obj
            ring.append(event)
            if len(ring) > self.ring_size:
                self.ring_floor = ring.popleft().revision
            self.revision = max(self.revision, event.revision)
            for watcher in list(self.watchers):
                watcher.offer(event)
                if watcher.closed:
                    self.watchers.pop(watcher, None)

    def items(self, prefix: str) -> Iterator[tuple[str, Obj]]:
        """``(key, object)`` for every key under ``prefix``, in key order (call :meth:`sync` first for fresh)."""
        low, high = range_bounds(prefix, None)
        keys = self._keys
        lo = bisect_left(keys, low)
        hi = len(keys) if high is None else bisect_left(keys, high, lo)
        objects = self.objects
        return ((key, objects[key]) for key in keys[lo:hi])

    def add_watcher(self, watcher: CacheWatcher, *, after: int) -> bool:
        """Register ``watcher`` for events with revision > ``after``; False if the ring cannot serve them."""
        self.sync()
        if after < self.ring_floor:
            return False
        for event in self.ring:
            if event.revision > after:
                watcher.offer(event)
        self.watchers[watcher] = None
        return True

    def remove_watcher(self, watcher: CacheWatcher) -> None:
        self.watchers.pop(watcher, None)
        watcher.close()
