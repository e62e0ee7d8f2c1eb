"""The Store protocol: an MVCC key-value store with etcd v3's semantics, as kube-apiserver uses etcd.

Contract (every backend: memory, sqlite, later etcd):

* One global, strictly increasing ``revision``. Every successful write (create, update, delete) is exactly one
  revision; a failed write consumes none. A fresh store is at revision 0; the first write is revision 1.
* Each key carries ``create_revision`` (the revision that created this incarnation of the key),
  ``mod_revision`` (its last change) and ``version`` (1 on create, +1 per update; a delete ends the incarnation,
  and a later create starts again at version 1 with a new ``create_revision``).
* Writes compare on one key only, as kube-apiserver's etcd3 storage does: ``create`` fails if the key exists,
  ``update``/``delete`` fail if the key is absent or (when ``expected_mod_revision`` is given) its
  ``mod_revision`` differs. A write returns only once it is durable for the backend's durability mode.
* Reads (``get``, ``range``) at the current revision or at any past revision >= the compacted revision.
  Reading below it raises :class:`Compacted`; above the current revision raises :class:`FutureRevision`.
* ``watch(prefix, start_revision=r)`` delivers every event on keys starting with ``prefix`` whose revision is
  ``>= r`` (etcd's convention; the API server's watch from resourceVersion N asks for N+1), in revision order,
  exactly once, each with the key's previous value. ``start_revision=None`` means "from the next write".
  A start at or below the compacted revision raises :class:`Compacted`. A watcher that falls behind by more than
  its buffer is ended with :class:`WatchOverflow`, which names the revision to resume from; writers and other
  watchers never wait for a slow watcher.
* ``compact(r)`` discards history below ``r``: afterwards reads at revisions < ``r`` and watches from revisions
  <= ``r`` raise :class:`Compacted`, while every key's value as of ``r`` and every later event remain.

Keys are ``str`` (kube-apiserver's keys are ASCII paths) and ordered by code point, as etcd orders bytes.
Values are opaque ``bytes``. A store instance belongs to the asyncio event loop that first uses it: none of its
methods is thread-safe.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One version of one key. Immutable; shared freely between reads, events and caches."""

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int


class EventType(enum.Enum):
    PUT = "PUT"
    DELETE = "DELETE"


@dataclass(frozen=True, slots=True)
class Event:
    """A change to one key at ``revision``.

    For PUT, ``kv`` is the new version and ``prev_kv`` the version it replaced (None on create).
    For DELETE, ``kv`` is a tombstone (empty value, version 0, ``mod_revision`` = the delete's revision) and
    ``prev_kv`` the deleted version, always present.
    """

    type: EventType
    kv: KeyValue
    prev_kv: KeyValue | None

    @property
    def revision(self) -> int:
        return self.kv.mod_revision

    @property
    def key(self) -> str:
        return self.kv.key

    @property
    def is_create(self) -> bool:
        return self.type is EventType.PUT and self.prev_kv is None


@dataclass(frozen=True, slots=True)
class RangeResult:
    """A page of a range read.

    ``kvs`` are in key order. ``revision`` is the revision the read was served at (pass it back with the next
    page's ``start_key`` to get a consistent snapshot, as kube-apiserver's continue tokens do). ``more`` says
    whether keys remain after the page; ``count`` is the number of keys in the range from ``start_key`` on,
    including the page (etcd's count, used for remainingItemCount).
    """

    kvs: list[KeyValue]
    revision: int
    more: bool
    count: int


@dataclass(frozen=True, slots=True)
class Deleted:
    """The result of a delete: the revision of the delete and the version that was deleted."""

    revision: int
    prev_kv: KeyValue


class StoreError(Exception):
    """Base class of every error a store raises on purpose."""


class NotFound(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}")
        self.key = key


class Conflict(StoreError):
    """A compare failed: the key exists (create), or its mod_revision is not the expected one.

    ``current`` is the key's current version (None if absent), so the caller can retry without another read,
    as kube-apiserver's GuaranteedUpdate does with etcd's failed-transaction response.
    """

    def __init__(self, key: str, current: KeyValue | None, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.current = current


class KeyExists(Conflict):
    def __init__(self, key: str, current: KeyValue) -> None:
        super().__init__(key, current, f"key already exists: {key}")


class Compacted(StoreError):
    """The requested revision's history has been compacted away (HTTP 410 Gone at the API)."""

    def __init__(self, requested: int, compacted_revision: int) -> None:
        super().__init__(f"required revision {requested} has been compacted (compacted revision {compacted_revision})")
        self.requested = requested
        self.compacted_revision = compacted_revision


class FutureRevision(StoreError):
    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"required revision {requested} is a future revision (current revision {current})")
        self.requested = requested
        self.current = current


class WatchOverflow(StoreError):
    """The watcher fell more than its buffer behind and was ended; resume with ``watch(start_revision=r)``.

    ``resume_revision`` is the revision of the first event the watcher did not receive.
    """

    def __init__(self, resume_revision: int, buffer_size: int) -> None:
        super().__init__(f"watcher fell more than {buffer_size} events behind; resume from revision {resume_revision}")
        self.resume_revision = resume_revision


class StoreClosed(StoreError):
    def __init__(self) -> None:
        super().__init__("store is closed")


class StoreFailed(StoreError):
    """The backend could not persist a write (disk full, I/O error): the store refuses further writes.

    Raised for the failed writes and every later one; already acknowledged writes are unaffected.
    """


@runtime_checkable
class Watch(Protocol):
    """A stream of events for one prefix. Iterate it, or take whole batches with :meth:`next_batch`.

    Iteration ends (StopAsyncIteration) only after :meth:`close`; errors (Compacted, WatchOverflow,
    StoreClosed) are raised from the iterator once every event before them has been delivered.
    """

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def __anext__(self) -> Event: ...

    async def next_batch(self, max_events: int = ...) -> list[Event]:
        """Every event available now (at least one, waiting if none), at most ``max_events``.

        Returns an empty list once the watch is closed.
        """
        ...

    def close(self) -> None: ...

    @property
    def closed(self) -> bool: ...


@runtime_checkable
class Store(Protocol):
    """See the module docstring for the contract every backend honours."""

    @property
    def revision(self) -> int:
        """The current revision: that of the last acknowledged write (0 for an empty, new store)."""
        ...

    @property
    def compacted_revision(self) -> int: ...

    async def get(self, key: str, *, revision: int | None = None) -> KeyValue | None: ...

    async def range(
        self,
        prefix: str,
        *,
        revision: int | None = None,
        limit: int = 0,
        start_key: str | None = None,
    ) -> RangeResult:
        """Keys starting with ``prefix`` (and >= ``start_key`` if given), at most ``limit`` (0: all)."""
        ...

    async def create(self, key: str, value: bytes) -> KeyValue: ...

    async def update(self, key: str, value: bytes, *, expected_mod_revision: int | None = None) -> KeyValue: ...

    async def update_many(self, updates: Sequence[tuple[str, bytes, int | None]]) -> list[KeyValue]:
        """``(key, value, expected_mod_revision)`` updates in order, each at its own revision as :meth:`update`,
        stopping before the first whose compare fails (not found or another mod revision); the new versions of
        those applied. Backends may make the batch visible at once (one watch publication)."""
        ...

    async def delete(self, key: str, *, expected_mod_revision: int | None = None) -> Deleted: ...

    async def compact(self, revision: int) -> None: ...

    def watch(self, prefix: str, *, start_revision: int | None = None, buffer_size: int | None = None) -> Watch: ...

    async def close(self) -> None: ...
