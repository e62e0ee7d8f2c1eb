"""What every backend shares: compares, revision assignment, the current-state index and watch fan-out.

A backend supplies persistence and history through four hooks:

* ``_persist(event)`` makes one write durable. It either finishes before returning None (an *inline* backend:
  memory, sqlite's default mode) or returns a future that the backend resolves, after calling
  :meth:`BaseStore._apply` for the event, once its group commit is durable (sqlite's fsync mode).
* ``_history_events(prefix, first, last, limit)``: events with first <= revision <= last, for watch replay.
* ``_read_at(prefix, revision, start_key, limit)``: a range read at a past revision.
* ``_discard_history(revision)``: physically drop what :meth:`compact` made unreachable.

Ordering invariants, all on the event loop's thread:

* ``_next_revision`` is assigned at the moment a write passes its compare; ``_revision`` (what reads and
  watchers see) advances only when a write is durable, in revision order, and never skips one.
* Writes assigned a revision but not yet durable live in ``_pending`` (key -> its latest pending event) so that
  later writes compare against them; reads never see them, so nothing is observable before it is durable.
* ``_apply`` updates the index, then publishes to the hub: a watcher registered at revision R has seen (by
  replay) exactly the events <= R and receives live exactly those > R.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Sequence

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
    StoreFailed,
)
from .keyindex import KeyIndex
from .watch import StoreWatch, WatchHub, new_watch


class BaseStore(abc.ABC):
    def __init__(self, *, index: KeyIndex, revision: int, compacted_revision: int) -> None:
        self._index = index
        self._revision = revision
        self._next_revision = revision + 1
        self._compacted = compacted_revision
        self._hub = WatchHub()
        self._pending: dict[str, Event] = {}
        self._closed = False
        self._failure: StoreFailed | None = None

    # -- hooks ------------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def _persist(self, event: Event) -> asyncio.Future[None] | None: ...

    @abc.abstractmethod
    def _history_events(self, prefix: str, first: int, last: int, limit: int) -> list[Event]: ...

    @abc.abstractmethod
    def _read_at(self, prefix: str, revision: int, start_key: str | None, limit: int) -> RangeResult: ...

    @abc.abstractmethod
    async def _discard_history(self, revision: int) -> None: ...

    def _record(self, events: Sequence[Event]) -> None:  # noqa: B027 - an optional hook, empty by default
        """Called by :meth:`_apply` before fan-out; the memory backend keeps its log here."""

    # -- state --------------------------------------------------------------------------------------------------

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    @property
    def watcher_count(self) -> int:
        return len(self._hub)

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed()

    def _check_writable(self) -> None:
        if self._closed:
            raise StoreClosed()
        if self._failure is not None:
            raise self._failure

    def _latest(self, key: str) -> KeyValue | None:
        """The key's newest version including writes still pending durability (for compares only)."""
        if self._pending:
            event = self._pending.get(key)
            if event is not None:
                return None if event.type is EventType.DELETE else event.kv
        return self._index.get(key)

    def _check_read_revision(self, revision: int) -> None:
        if revision < self._compacted:
            raise Compacted(revision, self._compacted)
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)

    # -- writes ------------------------------------------------------------------------------------------------

    async def create(self, key: str, value: bytes) -> KeyValue:
        self._check_writable()
        current = self._latest(key)
        if current is not None:
            raise KeyExists(key, current)
        revision = self._next_revision
        kv = KeyValue(key, value, revision, revision, 1)
        await self._commit(Event(EventType.PUT, kv, None))
        return kv

    async def update(self, key: str, value: bytes, *, expected_mod_revision: int | None = None) -> KeyValue:
        self._check_writable()
        current = self._compare(key, expected_mod_revision)
        revision = self._next_revision
        # the key's string as its first version has it: every version in the history shares one string
        kv = KeyValue(current.key, value, current.create_revision, revision, current.version + 1)
        await self._commit(Event(EventType.PUT, kv, current))
        return kv

    async def update_many(self, updates: Sequence[tuple[str, bytes, int | None]]) -> list[KeyValue]:
        """Apply ``(key, value, expected_mod_revision)`` updates in order, each exactly as :meth:`update` would at
        its own revision, stopping before the first that fails its compare; the new versions of those applied.

        One batch for an inline backend: the events become visible together and reach watchers as one
        publication (in revision order, as separate writes would), so a writer of many small updates (the
        fleet's Lease renewals) pays the fan-out once. A backend that commits asynchronously (sqlite's fsync
        mode) waits for each in turn, as separate updates would."""
        self._check_writable()
        done: list[KeyValue] = []
        events: list[Event] = []
        try:
            for key, value, expected in updates:
                current = self._latest(key)
                if current is None or (expected is not None and current.mod_revision != expected):
                    break
                revision = self._next_revision
                kv = KeyValue(current.key, value, current.create_revision, revision, current.version + 1)
                event = Event(EventType.PUT, kv, current)
                future = self._persist(event)
                self._next_revision += 1
                self._pending[key] = event  # later updates of the batch compare against it
                if future is None:
                    events.append(event)
                else:
                    if events:
                        self._apply(events)
                        events = []
                    await future
                done.append(kv)
        finally:
            if events:
                self._apply(events)
        return done

    async def delete(self, key: str, *, expected_mod_revision: int | None = None) -> Deleted:
        self._check_writable()
        current = self._compare(key, expected_mod_revision)
        revision = self._next_revision
        tombstone = KeyValue(current.key, b"", 0, revision, 0)
        await self._commit(Event(EventType.DELETE, tombstone, current))
        return Deleted(revision, current)

    def _compare(self, key: str, expected_mod_revision: int | None) -> KeyValue:
        current = self._latest(key)
        if current is None:
            raise NotFound(key)
        if expected_mod_revision is not None and current.mod_revision != expected_mod_revision:
            raise Conflict(
                key,
                current,
                f"mod_revision of {key} is {current.mod_revision}, expected {expected_mod_revision}",
            )
        return current

    async def _commit(self, event: Event) -> None:
        future = self._persist(event)
        self._next_revision += 1
        if future is None:
            self._apply((event,))
            return
        self._pending[event.kv.key] = event
        await future

    def _apply(self, events: Sequence[Event]) -> None:
        """Make durable events visible: index, revision, backend log, then watchers (in this order)."""
        index = self._index
        pending = self._pending
        for event in events:
            kv = event.kv
            if event.type is EventType.PUT:
                index.put(kv)
            else:
                index.remove(kv.key)
            if pending and pending.get(kv.key) is event:
                del pending[kv.key]
        self._revision = events[-1].kv.mod_revision
        self._record(events)
        self._hub.publish(events)

    def _fail(self, error: BaseException) -> StoreFailed:
        """Refuse every later write after a persistence failure (the state on disk is no longer known)."""
        if self._failure is None:
            self._failure = StoreFailed(f"store failed and refuses writes: {error}")
            self._failure.__cause__ = error
        return self._failure

    # -- reads -------------------------------------------------------------------------------------------------

    async def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        self._check_open()
        if revision is None or revision == self._revision:
            return self._index.get(key)
        self._check_read_revision(revision)
        return self._get_at(key, revision)

    def _get_at(self, key: str, revision: int) -> KeyValue | None:
        """One key at a past revision (already checked against compaction); backends may do it directly."""
        result = self._read_at(key, revision, key, 1)
        if result.kvs and result.kvs[0].key == key:
            return result.kvs[0]
        return None

    async def range(
        self,
        prefix: str,
        *,
        revision: int | None = None,
        limit: int = 0,
        start_key: str | None = None,
    ) -> RangeResult:
        self._check_open()
        if limit < 0:
            raise ValueError(f"limit must not be negative, got {limit}")
        if revision is None or revision == self._revision:
            kvs, more, count = self._index.range(prefix, start_key=start_key, limit=limit)
            return RangeResult(kvs, self._revision, more, count)
        self._check_read_revision(revision)
        return self._read_at(prefix, revision, start_key, limit)

    # -- watch and compaction ----------------------------------------------------------------------------------

    def watch(self, prefix: str, *, start_revision: int | None = None, buffer_size: int | None = None) -> StoreWatch:
        self._check_open()
        if start_revision is not None:
            if start_revision < 1:
                raise ValueError(f"start_revision must be at least 1, got {start_revision}")
            if start_revision <= self._compacted:
                raise Compacted(start_revision, self._compacted)
        return new_watch(
            hub=self._hub,
            prefix=prefix,
            buffer_size=buffer_size,
            fetch=self._fetch_for_watch,
            start_revision=start_revision,
            current_revision=self._revision,
        )

    def _fetch_for_watch(self, prefix: str, first: int, last: int, limit: int) -> list[Event]:
        if self._closed:
            raise StoreClosed()
        if first <= self._compacted:
            raise Compacted(first, self._compacted)
        return self._history_events(prefix, first, last, limit)

    async def compact(self, revision: int) -> None:
        """Discard history below ``revision`` (etcd's Compact). Raises Compacted if already compacted there."""
        self._check_writable()
        if revision > self._revision:
            raise FutureRevision(revision, self._revision)
        if revision <= self._compacted:
            raise Compacted(revision, self._compacted)
        self._compacted = revision
        await self._discard_history(revision)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._hub.close_all()
