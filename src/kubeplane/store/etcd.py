"""The Store protocol on a real etcd v3 cluster (docs/store.md, "The etcd backend").

The wire protocol is etcd's gRPC API through the generated stubs that ship with ``aetcd`` (``aetcd.rpc``) on
``grpc.aio``; aetcd's high-level client is not used because it cannot range with a limit or at a revision,
request watch progress, use TLS or fail over between endpoints.

Layout and mapping
------------------

* A store key ``K`` (which must start with ``store_root``, default ``/registry``, as the API server's keys do)
  is the etcd key ``key_prefix + K[len(store_root):]``. The defaults make that the identity, so the API server's
  ``/registry/pods/default/x`` is etcd's ``/registry/pods/default/x`` exactly as kube-apiserver writes it (with
  ``--etcd-prefix=/registry``); ``key_prefix="/cluster2"`` gives ``/cluster2/pods/default/x`` so two clusters
  share one etcd (no prefix may be a prefix of another's). Values are the bytes given (JSON from the API server,
  where kube-apiserver writes protobuf).
* Store revision = etcd revision - ``revision_offset``. The default 0 exposes etcd's numbers verbatim, so a
  resourceVersion is the object's etcd ``mod_revision`` exactly as with kube-apiserver (a fresh etcd is at
  revision 1). ``revision_offset=1`` makes a fresh cluster look like a fresh store at revision 0 (the backend-
  neutral store tests use it). Every store on one etcd must use the same offset.

Writes, reads and the revision
------------------------------

* create/update/delete are single transactions comparing the key's ``create_revision`` (exists or not) and, when
  given, its ``mod_revision``; the failure branch ranges the key, so Conflict/KeyExists carry the current value
  without another round trip (kube-apiserver's GuaranteedUpdate does the same).
* One background etcd watch (the *feed*) on the whole ``key_prefix`` range, with ``prev_kv`` and progress
  notifications, is the only source of events: it fills a local :class:`~kubeplane.store.watch.WatchHub` and a
  ring of recent events. :attr:`revision` advances only when the feed has delivered every event up to it (or a
  progress notification says so), so ``revision`` never runs ahead of what watchers and ``take_buffered`` can
  see. A write returns only after the feed delivered its event: when ``create`` returns, ``revision`` covers it
  and every watcher registered before has it buffered, as with the in-process backends.
* Staleness bound: writes made through *another* store on the same etcd show up in this store's ``revision``
  after one watch delivery (normally a few milliseconds); a ``range`` at the current revision is linearizable
  (etcd's quorum read) and, if etcd is ahead of the feed, asks for a progress notification and waits (up to
  ``progress_timeout``) so that afterwards ``revision >= result.revision``. :meth:`request_progress` does the
  same on demand (for bookmarks).
* ``compacted_revision`` tracks compactions made through this store and every compaction etcd reports (a
  compacted range read or watch). Another store's compaction is only learned when it is hit.

Watches
-------

* A watch whose start is within the ring (the last ``ring_size`` events) replays from memory; an older start
  replays from etcd with a temporary etcd watch that hands over to the hub at the first live revision. Both are
  lazy (done inside ``next_batch``) and re-check compaction first, as the in-process backends do.
* The feed survives member loss: on a broken stream it reconnects (next endpoint) and resumes from the last
  delivered revision + 1, so watchers see neither a gap nor a duplicate. If the feed cannot resume because its
  revision was compacted meanwhile, every watcher ends with :class:`Compacted` and the feed restarts at etcd's
  current revision (the API server re-lists, as kube-apiserver's watch cache does).

Failover: endpoints are tried in turn. Reads retry on the next endpoint on any connection error; a write is
retried only when the connection failed before the request was sent. A write whose outcome is unknown (the
member died while it was in flight) raises :class:`EtcdUnavailable`, as kube-apiserver returns an error for an
etcd timeout; the caller re-reads before retrying.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import grpc.aio
from aetcd import rpc

from .interface import (
    Compacted,
    Conflict,
    Deleted,
    Event,
    EventType,
    FutureRevision,
    KeyExists,
    KeyValue,
    NotFound,
    RangeResult,
    StoreClosed,
    StoreError,
)
from .watch import DEFAULT_BUFFER_SIZE, StoreWatch, WatchHub

log = logging.getLogger(__name__)

ERR_COMPACTED = "required revision has been compacted"
ERR_FUTURE = "required revision is a future revision"
ERR_BAD_TOKEN = "invalid auth token"
DEFAULT_ENDPOINTS = ("http://127.0.0.1:2379",)


class EtcdRequestError(StoreError):
    """etcd refused a request (auth, permission, a bad argument): its gRPC error, as a StoreError."""

    def __init__(self, error: grpc.aio.AioRpcError) -> None:
        super().__init__(f"etcd: {error.details() or error.code().name}")
        self.rpc_error = error


class EtcdUnavailable(StoreError):
    """No etcd member answered, or a write's outcome is unknown because its member failed mid-request."""


@dataclass(frozen=True)
class EtcdOptions:
    """How to reach etcd. ``endpoints`` are URLs (``http://`` or ``https://``), tried in order on failure."""

    endpoints: Sequence[str] = DEFAULT_ENDPOINTS
    key_prefix: str = "/registry"
    store_root: str = "/registry"
    revision_offset: int = 0
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    username: str | None = None
    password: str | None = None
    dial_timeout: float = 5.0
    request_timeout: float = 10.0
    progress_timeout: float = 5.0
    ring_size: int = 1_000
    physical_compaction: bool = False


def _prefix_end(prefix: bytes) -> bytes:
    """etcd's range_end for "every key starting with prefix" (b"\\0" = to the end of the key space)."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


def _not_sent(error: grpc.aio.AioRpcError) -> bool:
    """True if the call failed while connecting, so the server never saw it (safe to retry a write)."""
    details = (error.details() or "").lower()
    return "failed to connect" in details or "connection refused" in details or "no address" in details


class _Connection:
    """One gRPC channel at a time to one endpoint; rotates to the next endpoint when that channel fails."""

    def __init__(self, options: EtcdOptions) -> None:
        if not options.endpoints:
            raise ValueError("at least one etcd endpoint is required")
        if (options.username is None) != (options.password is None):
            raise ValueError("etcd username and password go together")
        self._options = options
        self._index = 0
        self._channel: grpc.aio.Channel | None = None
        self._retired: list[grpc.aio.Channel] = []
        self._metadata: tuple[tuple[str, str], ...] | None = None
        self._lock = asyncio.Lock()
        self.kv: Any = None
        self.watch_stub: Any = None

    def _credentials(self) -> grpc.ChannelCredentials:
        o = self._options
        root = o.ca_file.read_bytes() if o.ca_file else None
        cert = o.cert_file.read_bytes() if o.cert_file else None
        key = o.key_file.read_bytes() if o.key_file else None
        return grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=cert)

    async def channel(self) -> grpc.aio.Channel:
        if self._channel is not None:
            return self._channel
        async with self._lock:
            current = self._current()  # another task may have connected while this one waited
            if current is not None:
                return current
            endpoint = self._options.endpoints[self._index % len(self._options.endpoints)]
            url = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
            target = url.netloc
            secure = url.scheme == "https" or self._options.ca_file is not None
            if secure:
                channel = grpc.aio.secure_channel(target, self._credentials())
            else:
                channel = grpc.aio.insecure_channel(target)
            try:
                await asyncio.wait_for(channel.channel_ready(), self._options.dial_timeout)
                kv = rpc.KVStub(channel)
                metadata = None
                if self._options.username is not None:
                    auth = rpc.AuthStub(channel)
                    request = rpc.AuthenticateRequest(name=self._options.username, password=self._options.password)
                    response = await auth.Authenticate(request, timeout=self._options.dial_timeout)
                    metadata = (("token", response.token),)
            except (TimeoutError, grpc.aio.AioRpcError):
                self._index += 1
                self._retired.append(channel)
                raise
            self._channel = channel
            self._metadata = metadata
            self.kv = kv
            self.watch_stub = rpc.WatchStub(channel)
            return channel

    def _current(self) -> grpc.aio.Channel | None:
        return self._channel

    @property
    def metadata(self) -> tuple[tuple[str, str], ...] | None:
        return self._metadata

    def rotate(self, failed: grpc.aio.Channel | None) -> None:
        """Give up on ``failed`` (if it is still the current channel) and move to the next endpoint."""
        if failed is not None and failed is self._channel:
            self._retired.append(failed)
            self._channel = None
            self._index += 1

    async def call(self, method: str, request: Any, *, idempotent: bool) -> Any:
        """A unary call with failover; see the module docstring for which failures are retried."""
        attempts = 3 * len(self._options.endpoints)
        last: BaseException | None = None
        for attempt in range(attempts):
            if attempt and attempt % len(self._options.endpoints) == 0:
                await asyncio.sleep(0.2 * attempt)
            try:
                channel = await self.channel()
            except (TimeoutError, grpc.aio.AioRpcError) as error:
                last = error
                continue
            try:
                return await getattr(self.kv, method)(
                    request, timeout=self._options.request_timeout, metadata=self._metadata
                )
            except grpc.aio.AioRpcError as error:
                code = error.code()
                if code is grpc.StatusCode.UNAUTHENTICATED or ERR_BAD_TOKEN in (error.details() or ""):
                    self.rotate(channel)  # re-authenticates on the next channel
                    last = error
                    continue
                if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
                    self.rotate(channel)
                    last = error
                    if idempotent or _not_sent(error):
                        continue
                    raise EtcdUnavailable(f"etcd {method} outcome unknown: {error.details()}") from error
                raise EtcdRequestError(error) from None
        raise EtcdUnavailable(f"no etcd endpoint of {list(self._options.endpoints)} answered: {last}") from last

    async def close(self) -> None:
        channels = [*self._retired, *([self._channel] if self._channel is not None else [])]
        self._channel = None
        self._retired = []
        for channel in channels:
            with contextlib.suppress(Exception):
                await channel.close(grace=None)


class _EtcdWatchStream:
    """One etcd watch on its own gRPC stream; yields lists of raw events (one response each)."""

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection
        self._call: Any = None
        self.channel: grpc.aio.Channel | None = None

    async def open(self, key: bytes, range_end: bytes, start_revision: int, *, timeout: float) -> None:
        self.channel = await self._connection.channel()
        self._call = self._connection.watch_stub.Watch(metadata=self._connection.metadata)
        create = rpc.WatchCreateRequest(
            key=key, range_end=range_end, start_revision=start_revision, prev_kv=True, progress_notify=True
        )
        await self._call.write(rpc.WatchRequest(create_request=create))
        response = await asyncio.wait_for(self._call.read(), timeout)
        if response is grpc.aio.EOF:
            raise EtcdUnavailable("etcd closed the watch stream")
        if response.compact_revision:
            raise _EtcdCompacted(response.compact_revision)
        if response.canceled:
            raise EtcdUnavailable(f"etcd refused the watch: {response.cancel_reason}")

    async def request_progress(self) -> None:
        if self._call is not None:
            await self._call.write(rpc.WatchRequest(progress_request=rpc.WatchProgressRequest()))

    async def read(self) -> Any:
        response = await self._call.read()
        if response is grpc.aio.EOF:
            raise EtcdUnavailable("etcd closed the watch stream")
        if response.compact_revision:
            raise _EtcdCompacted(response.compact_revision)
        if response.canceled:
            raise EtcdUnavailable(f"etcd cancelled the watch: {response.cancel_reason}")
        return response

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None


class _EtcdCompacted(Exception):
    def __init__(self, compact_revision: int) -> None:
        super().__init__(f"etcd compacted at {compact_revision}")
        self.compact_revision = compact_revision


class EtcdWatch(StoreWatch):
    """A watcher of an :class:`EtcdStore`: a hub watcher plus a lazy replay from the ring or from etcd.

    Live events (> ``catchup_to``) are pushed by the hub into the inherited buffer from registration on; the
    replay of [``start``, ``catchup_to``] runs inside :meth:`next_batch` and is always delivered first.
    """

    __slots__ = ("_next", "_store", "_stream", "_to")

    def __init__(self, *, store: EtcdStore, prefix: str, buffer_size: int, start: int, catchup_to: int) -> None:
        super().__init__(hub=store._hub, prefix=prefix, buffer_size=buffer_size, min_revision=catchup_to + 1)
        self._store: EtcdStore | None = store
        self._next = start
        self._to = catchup_to
        self._stream: _EtcdWatchStream | None = None

    @property
    def replaying(self) -> bool:
        return self._next <= self._to

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
        except _EtcdCompacted as error:
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


class EtcdStore:
    """The Store protocol on etcd v3; see the module docstring for the mapping and the guarantees."""

    def __init__(self, options: EtcdOptions | None = None, **overrides: Any) -> None:
        if options is None:
            options = EtcdOptions(**overrides)
        elif overrides:
            raise TypeError("pass either options or keyword overrides, not both")
        if options.ring_size < 0:
            raise ValueError("ring_size must not be negative")
        self.options = options
        self._connection = _Connection(options)
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
        self._feed_stream: _EtcdWatchStream | None = None
        self._feed_ready: asyncio.Future[None] | None = None
        self._progress: asyncio.Future[None] | None = None
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
        return (key or b"\0"), _prefix_end(key)

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
            response = await self._connection.call(
                "Range", rpc.RangeRequest(key=self._prefix_bytes or b"\0", count_only=True), idempotent=True
            )
            self._revision = self._ring_floor = self._offset_revision(response.header.revision)
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
        key, end = self._prefix_bytes or b"\0", _prefix_end(self._prefix_bytes)
        delay = 0.05
        while not self._closed:
            stream = _EtcdWatchStream(self._connection)
            try:
                await stream.open(key, end, self._revision + self._offset + 1, timeout=self.options.request_timeout)
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
            except _EtcdCompacted as error:
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
            raise _EtcdCompacted(error.compacted_revision + self._offset) from None
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
        stream = self._feed_stream
        if stream is None:  # the feed is reconnecting: give it time (a caller looping on us must not spin)
            await asyncio.sleep(0.01)
            return self._revision
        if self._progress is None or self._progress.done():
            # One request per pending notification, shielded: a caller's timeout cancelling a write on the
            # shared watch stream would make grpc.aio cancel the whole watch call (every watcher's feed).
            self._progress = asyncio.get_running_loop().create_future()
            with contextlib.suppress(Exception):
                await asyncio.shield(stream.request_progress())
        progress = self._progress
        with contextlib.suppress(Exception):  # TimeoutError, the stream failing (the feed reconnects), ...
            await asyncio.wait_for(asyncio.shield(progress), timeout or self.options.progress_timeout)
        return self._revision

    async def _catch_up_to(self, revision: int) -> None:
        """Make :attr:`revision` reach a revision etcd reported (another store's writes), within the bound."""
        if revision <= self._revision:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.options.progress_timeout):
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

    async def _open_history(self, prefix: str, first: int) -> _EtcdWatchStream:
        bounds = self._etcd_range(prefix)
        assert bounds is not None
        stream = _EtcdWatchStream(self._connection)
        try:
            await stream.open(bounds[0], bounds[1], first + self._offset, timeout=self.options.request_timeout)
        except _EtcdCompacted as error:
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

    # -- errors ------------------------------------------------------------------------------------------------

    def _revision_error(self, error: grpc.aio.AioRpcError, requested: int) -> StoreError | None:
        details = error.details() or ""
        if ERR_COMPACTED in details:
            self._compacted = max(self._compacted, requested + 1)
            return Compacted(requested, self._compacted)
        if ERR_FUTURE in details:
            return FutureRevision(requested, self._revision)
        return None

    # -- reads -------------------------------------------------------------------------------------------------

    async def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        await self._ready()
        etcd_key = self._etcd_key(key)
        result = await self._range(etcd_key, b"", revision, 1)
        kvs = result[0]
        return self._kv(kvs[0]) if kvs else None

    async def _range(self, key: bytes, end: bytes, revision: int | None, limit: int) -> tuple[Any, int, bool, int]:
        if revision is not None and revision < self._compacted:
            raise Compacted(revision, self._compacted)
        request = rpc.RangeRequest(
            key=key, range_end=end, limit=limit, revision=0 if revision is None else revision + self._offset
        )
        try:
            response = await self._connection.call("Range", request, idempotent=True)
        except EtcdRequestError as error:
            mapped = self._revision_error(error.rpc_error, -1 if revision is None else revision)
            if mapped is not None:
                raise mapped from None
            raise
        served = self._offset_revision(response.header.revision) if revision is None else revision
        if revision is None:
            await self._catch_up_to(served)
        return response.kvs, served, response.more, response.count

    async def range(
        self,
        prefix: str,
        *,
        revision: int | None = None,
        limit: int = 0,
        start_key: str | None = None,
    ) -> RangeResult:
        await self._ready()
        if limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        bounds = self._etcd_range(prefix)
        if bounds is not None and start_key is not None:
            if start_key.startswith(self._root):
                bounds = (max(bounds[0], self._etcd_key(start_key)), bounds[1])
            elif start_key > self._root:  # every store key starts with the root, so sorts before start_key
                bounds = None
        if bounds is None or (bounds[1] != b"\0" and bounds[0] >= bounds[1]):
            # nothing can match; still check the revision as a read would
            kvs, served, _, _ = await self._range(self._prefix_bytes + b"\xff\xff", b"", revision, 1)
            return RangeResult([], served, False, 0)
        kvs, served, more, count = await self._range(bounds[0], bounds[1], revision, limit)
        return RangeResult([self._kv(kv) for kv in kvs], served, more, count)

    # -- writes ------------------------------------------------------------------------------------------------

    def _compare(self, key: bytes, target: str, result: str, **value: int) -> Any:
        return rpc.Compare(
            key=key,
            target=rpc.Compare.CompareTarget.Value(target),
            result=rpc.Compare.CompareResult.Value(result),
            **value,
        )

    async def _txn(self, key: bytes, compares: list[Any], success: Any) -> tuple[Any, KeyValue | None, int]:
        """Run one compare-and-write; return (response, current kv on failure, the store revision)."""
        failure = rpc.RequestOp(request_range=rpc.RangeRequest(key=key))
        request = rpc.TxnRequest(compare=compares, success=[success], failure=[failure])
        response = await self._connection.call("Txn", request, idempotent=False)
        revision = self._offset_revision(response.header.revision)
        if response.succeeded:
            await self._wait_for(revision)
            return response, None, revision
        kvs = response.responses[0].response_range.kvs
        return response, (self._kv(kvs[0]) if kvs else None), revision

    async def create(self, key: str, value: bytes) -> KeyValue:
        await self._ready()
        etcd_key = self._etcd_key(key)
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=etcd_key, value=value))
        response, current, revision = await self._txn(
            etcd_key, [self._compare(etcd_key, "CREATE", "EQUAL", create_revision=0)], put
        )
        if not response.succeeded:
            assert current is not None
            raise KeyExists(key, current)
        return KeyValue(key, value, revision, revision, 1)

    def _existing(self, etcd_key: bytes, expected_mod_revision: int | None) -> list[Any]:
        compares = [self._compare(etcd_key, "CREATE", "GREATER", create_revision=0)]
        if expected_mod_revision is not None:
            etcd_revision = expected_mod_revision + self._offset
            compares.append(self._compare(etcd_key, "MOD", "EQUAL", mod_revision=etcd_revision))
        return compares

    def _failed(self, key: str, current: KeyValue | None, expected_mod_revision: int | None) -> StoreError:
        if current is None:
            return NotFound(key)
        message = f"mod_revision of {key} is {current.mod_revision}, expected {expected_mod_revision}"
        return Conflict(key, current, message)

    async def update(self, key: str, value: bytes, *, expected_mod_revision: int | None = None) -> KeyValue:
        await self._ready()
        etcd_key = self._etcd_key(key)
        put = rpc.RequestOp(request_put=rpc.PutRequest(key=etcd_key, value=value, prev_kv=True))
        response, current, revision = await self._txn(etcd_key, self._existing(etcd_key, expected_mod_revision), put)
        if not response.succeeded:
            raise self._failed(key, current, expected_mod_revision)
        prev = response.responses[0].response_put.prev_kv
        return KeyValue(key, value, prev.create_revision - self._offset, revision, prev.version + 1)

    async def delete(self, key: str, *, expected_mod_revision: int | None = None) -> Deleted:
        await self._ready()
        etcd_key = self._etcd_key(key)
        op = rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=etcd_key, prev_kv=True))
        response, current, revision = await self._txn(etcd_key, self._existing(etcd_key, expected_mod_revision), op)
        if not response.succeeded:
            raise self._failed(key, current, expected_mod_revision)
        prev = response.responses[0].response_delete_range.prev_kvs[0]
        return Deleted(revision, self._kv(prev))

    # -- watch and compaction ----------------------------------------------------------------------------------

    def watch(self, prefix: str, *, start_revision: int | None = None, buffer_size: int | None = None) -> EtcdWatch:
        self._check_open()
        size = DEFAULT_BUFFER_SIZE if buffer_size is None else buffer_size
        if size < 1:
            raise ValueError(f"buffer_size must be at least 1, got {size}")
        if start_revision is not None:
            if start_revision < 1:
                raise ValueError(f"start_revision must be at least 1, got {start_revision}")
            if start_revision <= self._compacted:
                raise Compacted(start_revision, self._compacted)
        current = self._revision
        if start_revision is None or start_revision > current:
            start = current + 1 if start_revision is None else start_revision
            watch = EtcdWatch(store=self, prefix=prefix, buffer_size=size, start=start, catchup_to=start - 1)
        else:
            watch = EtcdWatch(store=self, prefix=prefix, buffer_size=size, start=start_revision, catchup_to=current)
        self._hub.add(watch)
        return watch

    async def compact(self, revision: int) -> None:
        """etcd's Compact at ``revision`` (non-physical unless configured); errors as the other backends."""
        await self._ready()
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)
        if revision <= self._compacted:
            raise Compacted(revision, self._compacted)
        request = rpc.CompactionRequest(revision=revision + self._offset, physical=self.options.physical_compaction)
        try:
            await self._connection.call("Compact", request, idempotent=True)
        except EtcdRequestError as error:
            details = error.rpc_error.details() or ""
            if ERR_COMPACTED in details:
                self._compacted = max(self._compacted, revision)
                raise Compacted(revision, self._compacted) from None
            if ERR_FUTURE in details:
                raise FutureRevision(revision, self._revision) from None
            raise
        self._compacted = max(self._compacted, revision)
