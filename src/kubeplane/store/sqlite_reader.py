"""Read-only access to a SQLite store's file from another process, while its server keeps writing.

WAL mode lets readers run beside the one writer. There is no in-memory fan-out across processes, so
:meth:`SqliteReader.follow` polls the log for rows above the last revision it delivered; every committed
write appears exactly once, in revision order, because rows are only ever appended (compaction removes only
superseded rows at or below the compacted revision, and following below it raises :class:`Compacted`).
The store inspection command of the CLI (an etcd-helper for kubeplane) is built on this.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

from . import sqlite_log as log
from .interface import Compacted, Event, FutureRevision, KeyValue, RangeResult, StoreError


class SqliteReader:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError(f"no store at {self.path}")
        self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)
        self._conn.execute("PRAGMA busy_timeout=5000")

    @property
    def revision(self) -> int:
        return log.current_revision(self._conn)

    @property
    def compacted_revision(self) -> int:
        return log.read_meta(self._conn, "compacted")

    def _at(self, revision: int | None) -> int:
        current = self.revision
        if revision is None:
            return current
        if revision > current:
            raise FutureRevision(revision, current)
        compacted = self.compacted_revision
        if revision < compacted:
            raise Compacted(revision, compacted)
        return revision

    def get(self, key: str, *, revision: int | None = None) -> KeyValue | None:
        return log.get_at(self._conn, key=key, revision=self._at(revision))

    def range(
        self, prefix: str, *, revision: int | None = None, limit: int = 0, start_key: str | None = None
    ) -> RangeResult:
        return log.read_at(self._conn, prefix=prefix, revision=self._at(revision), start_key=start_key, limit=limit)

    def events(self, prefix: str, *, first: int, last: int | None = None, limit: int = 1_000) -> list[Event]:
        """Events on ``prefix`` with first <= revision <= last (default: current), in revision order."""
        compacted = self.compacted_revision
        if first <= compacted:
            raise Compacted(first, compacted)
        end = self.revision if last is None else last
        return log.events_between(self._conn, prefix=prefix, first=first, last=end, limit=limit)

    async def follow(self, prefix: str, *, start_revision: int, poll_interval: float = 0.2) -> AsyncIterator[Event]:
        """Every event on ``prefix`` from ``start_revision`` on, polling for new ones; runs until cancelled."""
        next_revision = start_revision
        while True:
            current = self.revision
            while next_revision <= current:
                batch = self.events(prefix, first=next_revision, last=current)
                for event in batch:
                    yield event
                if len(batch) < 1_000:
                    next_revision = current + 1
                else:
                    next_revision = batch[-1].revision + 1
            await asyncio.sleep(poll_interval)

    def close(self) -> None:
        self._conn.close()
