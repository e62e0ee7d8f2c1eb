"""Following etcd: the key and revision mapping, the one background watch (the *feed*), the ring of recent
events and the watchers it serves (:class:`EtcdWatch`). :class:`EtcdFeed` is the half of
:class:`~kubeplane.store.etcd.EtcdStore` that owns the store's state: its revision, compacted revision, watch
hub and lifecycle; the other half (:mod:`kubeplane.store.etcd`) reads and writes through it.

Invariants (docs/store.md, "The etcd backend"):

* The feed, one etcd watch on the whole ``key_prefix`` range with ``prev_kv`` and progress notifications, is the
  only source of events. :attr:`EtcdFeed.revision` advances only when the feed has delivered every event up to
  it (or a progress notification says so), so it never runs ahead of what watchers can see; a write waits for
  its own event (:meth:`EtcdFeed._wait_for`) before it returns.
* The feed survives member loss: on a broken stream it reconnects (next endpoint) and resumes from the last
  delivered revision + 1, so watchers see neither a gap nor a duplicate. If its resume point was compacted
  meanwhile, every watcher ends with :class:`Compacted` and the feed restarts at etcd's current revision.
* A watch whose start is within the ring (the last ``ring_size`` events) replays from memory; an older start
  replays from etcd with a temporary etcd watch that hands over to the hub at the first live revision. Both are
  lazy (inside ``next_batch``) and re-check compaction first, as the in-process backends do.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

import grpc
import grpc.aio
from aetcd import rpc

from .etcd_client import (
    Connection,
    EtcdCompacted,
    EtcdOptions,
    EtcdUnavailable,
    WatchStream,
    prefix_end,
    supports_request_watch_progress,
)
from .interface import Compacted, Event, EventType, KeyValue, StoreClosed
from .watch import StoreWatch, WatchHub

log = logging.getLogger("kubeplane.store.etcd")


class EtcdWatch(StoreWatch):
    """A watcher of an :class:`EtcdStore`: a hub watcher plus a lazy replay from the ring or from etcd.

    Live events (> ``catchup_to``) are pushed by the hub into the inherited buffer from registration on; the
    replay of [``start``, ``catchup_to``] runs inside :meth:`next_batch` and is always delivered first.
    """

    __slots__ = ("_next", "_store", "_stream", "_to")

    def __init__(self, *, store: EtcdFeed, prefix: str, buffer_size: int, start: int, catchup_to: int) -> None:
        super().__init__(hub=store._hub, prefix=prefix, buffer_size=buffer_size, min_revision=catchup_to + 1)
        self._store: EtcdFeed | None = store
        self._next = start
        self._to = catchup_to
        self._stream: WatchStream | None = None

    @property
    def replaying(self) -> bool:
        return self._next <= self._to

    @property
    def live(self) -> bool:
        """Not while replaying: events up to ``catchup_to`` have not all reached the buffer yet."""
        return not self.replaying and super().live

    def take_buffered(self) -> list[Event]:
        if self.replaying:
            return []
        return super().take_buffered()

    def close(self) -> None:
        self._end_replay()
        super().close()

    def _end_replay(self) -> None:
        self._next = self._to + 1
        if self._stream is not None:
            self._stream.cancel()
            self._stream = None

    async def next_batch(self, max_events: int = 1_000) -> list[Event]:
        while self.replaying and not self.closed:
            try:
                batch = await self._replay(max_events)
            except BaseException as error:
                self._end_replay()
                if not isinstance(error, asyncio.CancelledError):
                    self._buffer.clear()  # nothing after the error may be delivered
                    self._fail(error)
                raise
            if batch:
                return batch
        return await super().next_batch(max_events)

    async def _replay(self, max_events: int) -> list[Event]:
        store = self._store
        assert store is not None
        if store._closed:
            raise StoreClosed()
        if self._next <= store._compacted:
            raise Compacted(self._next, store._compacted)
        if self._stream is None:
            if store._etcd_range(self.prefix) is None:  # no store key can match: nothing to replay
                self._end_replay()
                return []
            events = store._ring_events(self.prefix, self._next, self._to, max_events)
            if events is not None:
                if not events:
                    self._end_replay()
                    return []
                self._next = events[-1].revision + 1
                return events
            try:
                self._stream = await store._open_history(self.prefix, self._next)
            except (EtcdUnavailable, grpc.aio.AioRpcError, TimeoutError):
                await asyncio.sleep(0.05)  # the next attempt goes to the next endpoint
                return []
        try:
            response = await self._stream.read()
        except EtcdCompacted as error:
            raise store._learn_compacted(self._next, error.compact_revision) from None
        except (EtcdUnavailable, grpc.aio.AioRpcError):
            # resume the replay on another member from the first event not yet delivered
            store._connection.rotate(self._stream.channel)
            self._stream.cancel()
            self._stream = None
            await asyncio.sleep(0.05)
            return []
        events = store._events(response.events)
        keep = [e for e in events if e.revision <= self._to]
        if len(keep) < len(events) or (keep and keep[-1].revision == self._to):
            self._end_replay()
        elif not events and store._offset_revision(response.header.revision) >= self._to:
            self._end_replay()  # a progress notification: etcd sent everything up to its header revision
        if keep:
            self._next = max(self._next, keep[-1].revision + 1)
        return keep


class EtcdFeed:
    """The store's state and its feed from etcd; see the module docstring. Subclassed by EtcdStore only."""

    def __init__(self, options: EtcdOptions | None = None, **overrides: Any) -> None:
        if options is None:
            options = EtcdOptions(**overrides)
        elif overrides:
            raise TypeError("pass either options or keyword overrides, not both")
        if options.ring_size < 0:
            raise ValueError("ring_size must not be negative")
        self.options = options
        self._connection = Connection(options)
        self._root = options.store_root
        self._prefix = options.key_prefix
        self._prefix_bytes = options.key_prefix.encode()
        self._offset = options.revision_offset
        self._revision = 0
        self._compacted = 0
        self._hub = WatchHub()
        self._ring: deque[Event] = deque()
        self._ring_floor = 0  # the ring holds every event with revision in (floor, revision]
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._waiter_ids = itertools.count()
        self._feed_task: asyncio.Task[None] | None = None
        self._feed_stream: WatchStream | None = None
        self._feed_ready: asyncio.Future[None] | None = None
        self._progress: asyncio.Future[None] | None = None
        self._checked_endpoints: set[str] = set()
        self.progress_requests_supported: bool | None = None
        """Whether RequestProgress may be used (every checked member's version supports it); None until one
        member answered. Unsupported: the revision advances only by events and periodic progress notifications."""
        self.progress_requests_sent = 0
        self._start_lock = asyncio.Lock()
        self._started = False
        self._closed = False

    # -- mapping -----------------------------------------------------------------------------------------------

    def _etcd_key(self, key: str) -> bytes:
        if not key.startswith(self._root):
            raise ValueError(f"key {key!r} is outside the store root {self._root!r}")
        return (self._prefix + key[len(self._root) :]).encode()

    def _store_key(self, key: bytes) -> str:
        return self._root + key.decode()[len(self._prefix) :]

    def _etcd_range(self, prefix: str) -> tuple[bytes, bytes] | None:
        """The etcd [key, range_end) of store keys starting with ``prefix`` (None: no store key can match)."""
        if prefix.startswith(self._root):
            key = self._etcd_key(prefix)
        elif self._root.startswith(prefix):
            key = self._prefix_bytes
        else:
            return None
        return (key or b"\0"), prefix_end(key)

    def _offset_revision(self, etcd_revision: int) -> int:
        return max(etcd_revision - self._offset, 0)

    def _kv(self, pb: Any) -> KeyValue:
        return KeyValue(
            self._store_key(pb.key),
            bytes(pb.value),
            pb.create_revision - self._offset,
            pb.mod_revision - self._offset,
            pb.version,
        )

    def _events(self, pbs: Sequence[Any]) -> list[Event]:
        """etcd watch events as Store events; a missing prev_kv means its history was compacted away."""
        events = []
        for pb in pbs:
            revision = pb.kv.mod_revision - self._offset
            prev = self._kv(pb.prev_kv) if pb.HasField("prev_kv") else None
            if pb.type == rpc.Event.EventType.DELETE:
                if prev is None:
                    raise Compacted(revision, max(self._compacted, revision))
                key = self._store_key(pb.kv.key)
                events.append(Event(EventType.DELETE, KeyValue(key, b"", 0, revision, 0), prev))
            else:
                kv = self._kv(pb.kv)
                if prev is None and kv.version > 1:
                    raise Compacted(revision, max(self._compacted, revision))
                events.append(Event(EventType.PUT, kv, prev))
        return events

    def _learn_compacted(self, requested: int, etcd_compact_revision: int) -> Compacted:
        self._compacted = max(self._compacted, etcd_compact_revision - self._offset)
        return Compacted(requested, self._compacted)

    # -- lifecycle ---------------------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        """The revision up to which the feed has delivered every event (see the module docstring)."""
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    @property
    def watcher_count(self) -> int:
        return len(self._hub)

    @property
    def started(self) -> bool:
        return self._started

    async def start(self) -> None:
        """Connect, read etcd's current revision and start the feed. Idempotent; every call does it lazily."""
        if self._started:
            return
        async with self._start_lock:
            if self.started:  # another task started it while this one waited for the lock
                return
            self._check_open()
            self._revision = self._ring_floor = await self._etcd_revision()
            self._feed_ready = asyncio.get_running_loop().create_future()
            self._feed_task = asyncio.create_task(self._feed(), name=f"etcd feed {self._prefix}")
            try:
                await asyncio.shield(self._feed_ready)
            except BaseException:
                self._feed_task.cancel()
                raise
            self._started = True

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed()

    async def _ready(self) -> None:
        self._check_open()
        if not self._started:
            await self.start()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._feed_task is not None:
            self._feed_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._feed_task
        self._hub.close_all()
        for _, _, waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(StoreClosed())
        self._waiters.clear()
        await self._connection.close()

    # -- the feed ----------------------------------------------------------------------------------------------

    async def _feed(self) -> None:
        """Follow etcd from revision + 1 forever, reconnecting and resuming after every failure."""
        key, end = self._prefix_bytes or b"\0", prefix_end(self._prefix_bytes)
        delay = 0.05
        while not self._closed:
            stream = WatchStream(self._connection)
            try:
                await stream.open(key, end, self._revision + self._offset + 1, timeout=self.options.request_timeout)
                await self._check_progress_support(stream)
                self._feed_stream = stream
                if self._feed_ready is not None and not self._feed_ready.done():
                    self._feed_ready.set_result(None)
                delay = 0.05
                while True:
                    response = await stream.read()
                    self._deliver(response)
            except asyncio.CancelledError:
                stream.cancel()
                raise
            except EtcdCompacted as error:
                stream.cancel()
                self._restart_after_compaction(error.compact_revision)
            except Exception as error:
                stream.cancel()
                self._connection.rotate(stream.channel)
                if self._feed_ready is not None and not self._feed_ready.done() and delay > 2:
                    self._feed_ready.set_exception(EtcdUnavailable(f"cannot watch etcd: {error}"))
                log.info("etcd feed interrupted at revision %d (%s); resuming", self._revision, error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.5)
            finally:
                self._feed_stream = None

    async def _check_progress_support(self, stream: WatchStream) -> None:
        """Learn whether the member behind ``stream`` answers RequestProgress in order (its version, once per
        endpoint, as kube-apiserver's feature support checker: one member without it turns it off for good; a
        member that cannot say is asked again at the next reconnection)."""
        endpoint = self._connection.endpoint
        if endpoint in self._checked_endpoints or stream.channel is None:
            return
        try:
            version = await self._connection.server_version(stream.channel)
        except (grpc.aio.AioRpcError, TimeoutError) as error:
            log.info("cannot check etcd %s's version (%s): RequestProgress stays off until it answers", endpoint, error)
            return
        self._checked_endpoints.add(endpoint)
        if not supports_request_watch_progress(version):
            if self.progress_requests_supported is not False:
                log.info("RequestWatchProgress feature is not supported by %r endpoint (etcd %s)", endpoint, version)
            self.progress_requests_supported = False
        elif self.progress_requests_supported is None:
            self.progress_requests_supported = True

    def _deliver(self, response: Any) -> None:
        if response.created:
            return
        if not response.events:
            revision = self._offset_revision(response.header.revision)
            if revision > self._revision:
                self._revision = revision
                self._wake(revision)
            progress = self._progress
            if progress is not None and not progress.done():
                progress.set_result(None)
            return
        try:
            events = self._events(response.events)
        except Compacted as error:
            raise EtcdCompacted(error.compacted_revision + self._offset) from None
        ring = self._ring
        ring.extend(events)
        while len(ring) > self.options.ring_size:
            self._ring_floor = ring.popleft().revision
        if not ring:
            self._ring_floor = events[-1].revision
        self._revision = max(self._revision, events[-1].revision)
        self._hub.publish(events)
        self._wake(self._revision)

    def _restart_after_compaction(self, etcd_compact_revision: int) -> None:
        """The feed's resume point was compacted: end every watcher (they re-list) and follow from now on."""
        error = self._learn_compacted(self._revision + 1, etcd_compact_revision)
        log.warning("etcd feed lost history (%s); every watcher ends with Compacted", error)
        for watchers in list(self._hub._by_prefix.values()):
            for watch in list(watchers):
                watch._fail(Compacted(error.requested, error.compacted_revision))
        self._hub._by_prefix.clear()
        self._ring.clear()
        self._revision = max(self._revision, self._compacted)
        self._ring_floor = self._revision

    def _wake(self, revision: int) -> None:
        waiters = self._waiters
        while waiters and waiters[0][0] <= revision:
            _, _, waiter = heapq.heappop(waiters)
            if not waiter.done():
                waiter.set_result(None)

    async def _wait_for(self, revision: int) -> None:
        """Wait until the feed has delivered ``revision`` (a write returns only after its own event)."""
        if self._revision >= revision:
            return
        self._check_open()
        waiter = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (revision, next(self._waiter_ids), waiter))
        await waiter

    async def request_progress(self, *, timeout: float | None = None) -> int:
        """Ask etcd for a progress notification on the feed and wait for it; return the new :attr:`revision`.

        After it returns, every write acknowledged by etcd before the call is in :attr:`revision` (a bookmark
        or a consistent read from the watch cache can rely on it). Gives up quietly after ``timeout``.
        """
        await self._ready()
        if not self.progress_requests_supported:
            return await self._await_etcd_revision(timeout or self.options.progress_timeout)
        stream = self._feed_stream
        if stream is None:  # the feed is reconnecting: give it time (a caller looping on us must not spin)
            await asyncio.sleep(0.01)
            return self._revision
        if self._progress is None or self._progress.done():
            # One request per pending notification, shielded: a caller's timeout cancelling a write on the
            # shared watch stream would make grpc.aio cancel the whole watch call (every watcher's feed).
            self._progress = asyncio.get_running_loop().create_future()
            self.progress_requests_sent += 1
            with contextlib.suppress(Exception):
                await asyncio.shield(stream.request_progress())
        progress = self._progress
        with contextlib.suppress(Exception):  # TimeoutError, the stream failing (the feed reconnects), ...
            await asyncio.wait_for(asyncio.shield(progress), timeout or self.options.progress_timeout)
        return self._revision

    async def _await_etcd_revision(self, timeout: float) -> int:
        """Without RequestProgress: wait (up to ``timeout``) until the feed has delivered etcd's current revision,
        carried there by events and by the periodic progress notifications etcd sends an idle watch (in order
        with its events on every version; etcd's ``--experimental-watch-progress-notify-interval``)."""
        target = await self._etcd_revision()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wait_for(target), timeout)
        return self._revision

    async def _etcd_revision(self) -> int:
        """etcd's current revision (in store terms), from a count-only read of the prefix (a quorum read)."""
        response = await self._connection.call(
            "Range", rpc.RangeRequest(key=self._prefix_bytes or b"\0", count_only=True), idempotent=True
        )
        return self._offset_revision(response.header.revision)

    async def _catch_up_to(self, revision: int) -> None:
        """Make :attr:`revision` reach a revision etcd reported (another store's writes), within the bound."""
        if revision <= self._revision:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.options.progress_timeout):
                if not self.progress_requests_supported:
                    await self._wait_for(revision)  # events and periodic notifications carry it there
                    return
                while self._revision < revision:
                    await self.request_progress()

    # -- ring --------------------------------------------------------------------------------------------------

    def _ring_events(self, prefix: str, first: int, last: int, limit: int) -> list[Event] | None:
        """Events on ``prefix`` with first <= revision <= last from memory, or None if the ring lacks some."""
        if first <= self._ring_floor or last > self._revision:
            return None
        out: list[Event] = []
        for event in self._ring:
            revision = event.revision
            if revision < first:
                continue
            if revision > last or len(out) >= limit:
                break
            if event.kv.key.startswith(prefix):
                out.append(event)
        return out

    async def _open_history(self, prefix: str, first: int) -> WatchStream:
        bounds = self._etcd_range(prefix)
        assert bounds is not None
        stream = WatchStream(self._connection)
        try:
            await stream.open(bounds[0], bounds[1], first + self._offset, timeout=self.options.request_timeout)
        except EtcdCompacted as error:
            stream.cancel()
            raise self._learn_compacted(first, error.compact_revision) from None
        except asyncio.CancelledError:
            stream.cancel()
            raise
        except Exception:
            stream.cancel()
            self._connection.rotate(stream.channel)
            raise
        return stream
