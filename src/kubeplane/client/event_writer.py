"""The background writer an event recorder writes through: a bounded FIFO drained in order by one task.

Both recorders (:mod:`.events`, core/v1 with client-go's ``tools/record`` correlation; :mod:`.event_series`,
events.k8s.io/v1 with ``tools/events``' series) record without blocking or failing the caller and write in the
background, as upstream's broadcasters do; what differs is what they write. Invariants:

* :meth:`EventWriter.put` never blocks: it refuses (returns False) once ``max_queued`` events wait or after
  :meth:`close`; the task starts with the first event.
* Events are written one at a time in the order put; ``write`` raising is logged and the event dropped, so one
  bad event never stops the writer.
* :meth:`sleep` (a recorder's retry back-off or a periodic pass) sleeps on the injected clock and :meth:`close`
  cuts every such sleep short (upstream's cancelation context); :meth:`close` then writes what is queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable

from .clock import Clock
from .interface import Obj

log = logging.getLogger(__name__)


class EventWriter:
    """One recorder's queue and writer task (module docstring)."""

    def __init__(self, clock: Clock, *, max_queued: int, name: str, write: Callable[[Obj], Awaitable[None]]) -> None:
        self.max_queued = max_queued
        self._clock = clock
        self._name = name
        self._write = write
        self._queue: deque[Obj] = deque()
        self._wakeup = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._sleepers: set[asyncio.Future[None]] = set()
        self.closing = False

    def __len__(self) -> int:
        return len(self._queue)

    def put(self, event: Obj) -> bool:
        """Queue ``event`` (needs a running loop); False when full or closing (the caller logs and drops it)."""
        if self.closing or len(self._queue) >= self.max_queued:
            return False
        self._queue.append(event)
        self._idle.clear()
        self._wakeup.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self._name)
        return True

    @property
    def started(self) -> bool:
        return self._task is not None

    async def flush(self) -> None:
        """Wait until every queued event has been written or dropped."""
        await self._idle.wait()

    async def close(self) -> None:
        """Refuse new events, cut sleeps short, write the queue and stop the task."""
        self.closing = True
        self._wakeup.set()
        for sleeper in list(self._sleepers):
            sleeper.cancel()
        if self._task is not None:
            await self._task

    async def sleep(self, seconds: float) -> None:
        """Sleep on the clock; :meth:`close` cuts it short."""
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        self._sleepers.add(sleeper)
        try:
            await asyncio.wait({sleeper})
        finally:
            self._sleepers.discard(sleeper)
            sleeper.cancel()

    async def _run(self) -> None:
        while True:
            if not self._queue:
                self._idle.set()
                if self.closing:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            event = self._queue.popleft()
            try:
                await self._write(event)
            except Exception:
                log.exception("Unable to write event (unexpected error, dropped): %s", event.get("reason"))


__all__ = ["EventWriter"]
