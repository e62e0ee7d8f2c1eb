"""The memory backend: current state in a :class:`KeyIndex`, history as a dense in-memory event log.

Because every revision is exactly one event, the log is dense: the event of revision r is
``_log[r - _log_first]``. It holds every event after the compacted revision, which is all that watches
(start > compacted) and past reads (revision >= compacted) need: the state at revision r is the current state
with each key touched after r replaced by the ``prev_kv`` of its first event after r.

Nothing survives the process; used for tests, simulation and ``--store memory``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from .base import BaseStore
from .interface import Event, KeyValue, RangeResult
from .keyindex import KeyIndex


class MemoryStore(BaseStore):
    def __init__(self) -> None:
        super().__init__(index=KeyIndex(), revision=0, compacted_revision=0)
        self._log: list[Event] = []
        self._log_first = 1

    def _persist(self, event: Event) -> asyncio.Future[None] | None:
        return None

    def _record(self, events: Sequence[Event]) -> None:
        self._log.extend(events)

    def _history_events(self, prefix: str, first: int, last: int, limit: int) -> list[Event]:
        start = max(first - self._log_first, 0)
        stop = last - self._log_first + 1
        if not prefix:
            return self._log[start : min(stop, start + limit)]
        found: list[Event] = []
        log = self._log
        for i in range(start, min(stop, len(log))):
            event = log[i]
            if event.kv.key.startswith(prefix):
                found.append(event)
                if len(found) >= limit:
                    break
        return found

    def _read_at(self, prefix: str, revision: int, start_key: str | None, limit: int) -> RangeResult:
        # State at `revision` = current state, undoing every key touched after it.
        at_revision: dict[str, KeyValue | None] = {}
        for event in self._log[revision + 1 - self._log_first :]:
            key = event.kv.key
            if key in at_revision or not key.startswith(prefix):
                continue
            if start_key is not None and key < start_key:
                continue
            at_revision[key] = event.prev_kv
        index = self._index
        kvs: list[KeyValue] = []
        for key in sorted(set(index.keys_in(prefix, start_key)).union(at_revision)):
            kv = at_revision[key] if key in at_revision else index.get(key)
            if kv is not None:
                kvs.append(kv)
        count = len(kvs)
        if 0 < limit < count:
            return RangeResult(kvs[:limit], revision, True, count)
        return RangeResult(kvs, revision, False, count)

    async def _discard_history(self, revision: int) -> None:
        drop = revision - self._log_first + 1
        if drop > 0:
            del self._log[:drop]
            self._log_first = revision + 1
