"""The background writer an event recorder writes through: a bounded FIFO drained in order by one task.

Both recorders (:mod:`.events`, core/v1 with client-go's ``tools/record`` correlation; :mod:`.event_series`,
events.k8s.io/v1 with ``tools/events``' series) record without blocking or failing the caller and write in the
background, as upstream's broadcasters do; what differs is what they write. Invariants:

* :meth:`EventWriter.put` never blocks: it refuses (returns False) once ``max_queued`` events wait or after
  :meth:`close`; the task starts with the first event.
* Events are written one at a time in the order put; ``write`` raising is logged and the event dropped, so one
  bad event never stops the writer.
* :meth:`admit` is both recorders' entry check, upstream's in both libraries: a closed recorder drops the event
  (debug), a type other than Normal/Warning or an object without kind and name is logged as an error and not
  recorded, a full queue drops it with a warning; only an admitted event's reference is returned.
* :meth:`sleep` (a recorder's retry back-off or a periodic pass) sleeps on the injected clock and :meth:`close`
  cuts every such sleep short (upstream's cancelation context); :meth:`close` then writes what is queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from kubeplane.api.views import meta_of

from .clock import Clock
from .interface import Obj

log = logging.getLogger(__name__)

EVENT_TYPE_NORMAL: Final = "Normal"
EVENT_TYPE_WARNING: Final = "Warning"


def object_reference(obj: Mapping[str, Any]) -> Obj:
    """An ``ObjectReference`` to ``obj`` (upstream ``ref.GetReference``), empty fields omitted as Go does."""
    metadata = meta_of(obj)
    ref: Obj = {}
    for key, value in (
        ("kind", obj.get("kind")),
        ("namespace", metadata.get("namespace")),
        ("name", metadata.get("name")),
        ("uid", metadata.get("uid")),
        ("apiVersion", obj.get("apiVersion")),
        ("resourceVersion", metadata.get("resourceVersion")),
    ):
        if value:
            ref[key] = str(value)
    return ref


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

    def admit(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str, *, field_path: str = ""
    ) -> Obj | None:
        """The reference to record an event about ``obj`` with (``fieldPath`` set when given), or None when the
        event is not to be recorded (module docstring; the reason is logged)."""
        if self.closing:
            log.debug("event recorder closed; dropping event %s %s", reason, message)
            return None
        if event_type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            log.error("Unsupported event type: %r (reason %s)", event_type, reason)
            return None
        ref = object_reference(obj)
        if field_path:
            ref["fieldPath"] = field_path
        if "kind" not in ref or "name" not in ref:
            log.error("Could not construct reference to %r, will not report event %s: %s", ref, reason, message)
            return None
        if len(self._queue) >= self.max_queued:
            log.warning("event queue full (%d); dropping event %s about %s", len(self._queue), reason, ref["name"])
            return None
        return ref

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


__all__ = ["EVENT_TYPE_NORMAL", "EVENT_TYPE_WARNING", "EventWriter", "object_reference"]
