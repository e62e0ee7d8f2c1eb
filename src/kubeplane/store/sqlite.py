"""The SQLite backend (the default, embedded): a kine-style append-only log with in-memory fan-out.

Durability modes (:class:`Durability`):

* ``CRASH_SAFE`` (default): WAL with ``synchronous=NORMAL``. Each write is one INSERT, committed before the
  call returns, on the event loop's thread: an acknowledged write is in the WAL file, so it survives the process
  being killed (``kill -9``), though not a power loss. Inline commits cost tens of microseconds; no thread hop.
* ``FSYNC``: WAL with ``synchronous=FULL`` and group commit. Writes are queued to one writer thread, which
  commits everything queued so far in one transaction and one fsync, then hands the batch back to the loop;
  a write is acknowledged only after its fsync, so it survives power loss. Concurrent writers share fsyncs.

Whatever the mode there is exactly one writer: this process, guarded by an exclusive ``flock`` on
``<path>.lock``. Current state (every live key's latest version) is loaded into memory at open, so reads at the
current revision and every compare are memory lookups; past revisions and watch replay read the log through a
separate read connection. Other processes may open the file read-only with :class:`SqliteReader`.

Compaction deletes unreachable rows in windows of ``COMPACT_WINDOW`` revisions, yielding to the loop (or
interleaving with write batches in the writer thread) between windows, so writers never wait for long.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import fcntl
import functools
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from . import sqlite_log as log
from .base import BaseStore
from .interface import Event, EventType, KeyValue, RangeResult, StoreError, StoreFailed

COMPACT_WINDOW = 2_000


class Durability(enum.Enum):
    CRASH_SAFE = "crash-safe"
    FSYNC = "fsync"


def _connect(path: Path, *, synchronous: str, check_same_thread: bool = True) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=check_same_thread)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


class SqliteStore(BaseStore):
    """Open (creating if needed) the store in ``path``. See the module docstring for the modes."""

    def __init__(self, path: str | os.PathLike[str], *, durability: Durability = Durability.CRASH_SAFE) -> None:
        self.path = Path(path)
        self.durability = durability
        self._lock_file = _acquire_lock(self.path)
        try:
            _make_private(self.path)
            synchronous = "FULL" if durability is Durability.FSYNC else "NORMAL"
            self._wconn = _connect(self.path, synchronous=synchronous, check_same_thread=False)
            self._wconn.executescript(log.SCHEMA)
            self._rconn = _connect(self.path, synchronous=synchronous)
            compacted = log.read_meta(self._wconn, "compacted")
            physical = log.read_meta(self._wconn, "compacted_physical")
            if physical < compacted:  # a compaction was cut short: finish it before serving
                self._wconn.execute("BEGIN IMMEDIATE")
                log.compact_window(self._wconn, low=physical, high=compacted)
                self._wconn.execute("COMMIT")
            index, self._tombstones = log.load_latest(self._wconn)
            revision = log.current_revision(self._wconn)
        except BaseException:
            self._lock_file.close()
            raise
        super().__init__(index=index, revision=revision, compacted_revision=compacted)
        self._committer: _GroupCommitter | None = None  # started by the first write in fsync mode
        self._compact_lock = asyncio.Lock()

    def _group_committer(self) -> _GroupCommitter | None:
        if self.durability is not Durability.FSYNC:
            return None
        if self._committer is None:
            self._committer = _GroupCommitter(self._wconn, self)
        return self._committer

    # -- persistence --------------------------------------------------------------------------------------

    def _prev_revision(self, event: Event) -> int:
        """The row this write supersedes: the previous version, or for a re-create the key's tombstone."""
        if event.prev_kv is not None:
            return event.prev_kv.mod_revision
        return self._tombstones.get(event.kv.key, 0)

    def _note_row(self, event: Event) -> None:
        if event.type is EventType.DELETE:
            self._tombstones[event.kv.key] = event.kv.mod_revision
        elif event.prev_kv is None:
            self._tombstones.pop(event.kv.key, None)

    def _persist(self, event: Event) -> asyncio.Future[None] | None:
        row = log.event_row(event, self._prev_revision(event))
        committer = self._group_committer()
        if committer is not None:
            self._note_row(event)  # later writes in this batch must see it (they compare against _pending)
            return committer.submit_write(event, row)
        try:
            self._wconn.execute(log.INSERT, row)
        except sqlite3.Error as error:
            raise StoreError(f"write of {event.kv.key} failed: {error}") from error
        self._note_row(event)
        return None

    # -- history ------------------------------------------------------------------------------------------

    def _history_events(self, prefix: str, first: int, last: int, limit: int) -> list[Event]:
        return log.events_between(self._rconn, prefix=prefix, first=first, last=last, limit=limit)

    def _get_at(self, key: str, revision: int) -> KeyValue | None:
        return log.get_at(self._rconn, key=key, revision=revision)

    def _read_at(self, prefix: str, revision: int, start_key: str | None, limit: int) -> RangeResult:
        return log.read_at(self._rconn, prefix=prefix, revision=revision, start_key=start_key, limit=limit)

    async def _discard_history(self, revision: int) -> None:
        async with self._compact_lock:  # one compaction at a time keeps compacted_physical monotonic
            await self._run_write(lambda conn: log.write_meta(conn, "compacted", revision))
            low = log.read_meta(self._rconn, "compacted_physical")
            while low < revision:
                high = min(low + COMPACT_WINDOW, revision)
                await self._run_write(functools.partial(_compact_window, low=low, high=high))
                low = high
                await asyncio.sleep(0)
            # a re-created key may now use prev_revision 0: every older row of it is gone
            self._tombstones = {k: r for k, r in self._tombstones.items() if r > revision}

    async def _run_write(self, job: Callable[[sqlite3.Connection], object]) -> None:
        """Run ``job`` in a write transaction on the writer's connection (thread, in fsync mode)."""
        self._check_writable()
        committer = self._group_committer()
        if committer is not None:
            await committer.submit_job(job)
            return
        conn = self._wconn
        conn.execute("BEGIN IMMEDIATE")
        try:
            job(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    async def close(self) -> None:
        if self._closed:
            return
        await super().close()
        if self._committer is not None:
            await self._committer.stop()
        self._rconn.close()
        self._wconn.close()
        self._lock_file.close()


def _compact_window(conn: sqlite3.Connection, *, low: int, high: int) -> None:
    log.compact_window(conn, low=low, high=high)


PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def _make_private(path: Path) -> None:
    """The store holds every object, Secrets included: the database and its WAL and shared-memory files are
    readable by their owner alone (0600), as etcd keeps its data dir 0700. The database file is created 0600
    before SQLite opens it, since SQLite gives the files it creates next to it (``-wal``, ``-shm``) the
    database's permissions; files left by an older version are tightened."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE))
    for name in (str(path), f"{path}-wal", f"{path}-shm", f"{path}.lock"):
        with contextlib.suppress(FileNotFoundError):
            os.chmod(name, PRIVATE_FILE)


def _acquire_lock(path: Path) -> IO[bytes]:
    path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    lock = os.fdopen(os.open(f"{path}.lock", os.O_CREAT | os.O_APPEND | os.O_WRONLY, PRIVATE_FILE), "ab")
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise StoreError(f"{path} is open for writing by another process") from None
    return lock


class _GroupCommitter:
    """The fsync mode's writer thread: one transaction and one fsync per batch of queued writes.

    Batches are handed back to the event loop in submission order, where :meth:`BaseStore._apply` makes them
    visible and resolves each write's future. A failed commit fails the store (see :class:`StoreFailed`).
    """

    def __init__(self, conn: sqlite3.Connection, store: SqliteStore) -> None:
        self._conn = conn
        self._store = store
        self._loop = asyncio.get_running_loop()
        self._cond = threading.Condition()
        self._queue: list[tuple[Event | None, object, asyncio.Future[None]]] = []
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="kubeplane-sqlite-writer", daemon=True)
        self._thread.start()

    def submit_write(self, event: Event, row: tuple[object, ...]) -> asyncio.Future[None]:
        return self._submit(event, row)

    def submit_job(self, job: Callable[[sqlite3.Connection], object]) -> asyncio.Future[None]:
        return self._submit(None, job)

    def _submit(self, event: Event | None, payload: object) -> asyncio.Future[None]:
        future: asyncio.Future[None] = self._loop.create_future()
        with self._cond:
            self._queue.append((event, payload, future))
            self._cond.notify()
        return future

    async def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        await asyncio.to_thread(self._thread.join)

    def _run(self) -> None:
        conn = self._conn
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if not self._queue:
                    return
                batch, self._queue = self._queue, []
            error: BaseException | None = None
            try:
                conn.execute("BEGIN IMMEDIATE")
                rows = [payload for event, payload, _ in batch if event is not None]
                if rows:
                    conn.executemany(log.INSERT, rows)  # type: ignore[arg-type]
                for event, payload, _ in batch:
                    if event is None:
                        payload(conn)  # type: ignore[operator]
                conn.execute("COMMIT")
            except BaseException as exc:
                error = exc
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            try:
                self._loop.call_soon_threadsafe(self._done, batch, error)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return

    def _done(
        self, batch: list[tuple[Event | None, object, asyncio.Future[None]]], error: BaseException | None
    ) -> None:
        if error is not None:
            failure = self._store._fail(error)
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(failure)
            return
        events = [event for event, _, _ in batch if event is not None]
        if events:
            self._store._apply(events)
        for _, _, future in batch:
            if not future.done():
                future.set_result(None)


__all__ = ["Durability", "SqliteStore", "StoreFailed"]
