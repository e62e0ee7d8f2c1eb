"""An event recorder writing events.k8s.io/v1 Events with series, as client-go's ``tools/events`` (kube-scheduler's).

kube-scheduler records through ``events.NewEventBroadcasterAdapterWithContext``: when the server serves
events.k8s.io/v1 (kubeplane's does) its Events are events.k8s.io/v1 objects, not core/v1 ones::

    recorder = SeriesEventRecorder(client, reporting_controller="default-scheduler",
                                   reporting_instance="default-scheduler-host", clock=clock)
    recorder.record(pod, "Normal", "Scheduled", "Successfully assigned default/p to node-1", action="Binding")

What the object is (recorder.go ``makeEvent``): name ``<regarding name>.<unix nanoseconds in hex>`` in the regarding
object's namespace (``default`` for a cluster-scoped one), ``eventTime`` now (micro-time), ``reportingController``,
``reportingInstance``, ``action``, ``reason``, ``regarding``, ``related`` (when given), ``note``, ``type``; no
deprecated core fields (so the core/v1 view has no ``source``, ``count`` or timestamps besides ``eventTime``).

How repeats are written (event_broadcaster.go): events are *isomorphic* when type, action, reason, reporting
controller and instance, regarding and related references are equal (the note is not part of the key, nor is the
time). The first one is created and kept in a cache; the second turns the cached event into a series (count 2,
``lastObservedTime`` now) written at once as a strategic-merge patch of ``series``; later ones only count in the
cache. Every 6 minutes (``finishTime``) a series not observed for 6 minutes is written with its final count and
forgotten, and a singleton older than 6 minutes is forgotten; every 30 minutes (``refreshTime``) every series is
written again. A patch of an event that is gone creates it again.

Invariants: like :class:`~kubeplane.client.events.EventRecorder`, recording never blocks or fails the caller (a
bounded queue, one writer task); a failure Status drops the event (an AlreadyExists answer to a series' re-create
is retried: the patch raced the create), other failures are retried up to 12 tries, 10 s apart with 25 % jitter,
on the injected clock; names are strictly increasing per recorder. Timing: a series counts the moment an event was
recorded (upstream stamps it in the goroutine the record starts), not when the writer reaches it.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.meta import format_micro_time, parse_micro_time

from .clock import Clock
from .errors import AlreadyExistsError, APIStatusError, NotFoundError
from .event_writer import EventWriter, object_reference
from .interface import Client, Obj, PatchType

log = logging.getLogger(__name__)

API_VERSION: Final = "events.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class SeriesRecorderConfig:
    """Upstream event_broadcaster.go's constants; ``max_queued`` is 10,000 where upstream's channel holds 1,000, as
    :class:`~kubeplane.client.events.EventRecorderConfig` explains (the writer runs only when the caller yields)."""

    max_queued: int = 10_000
    max_tries: int = 12
    sleep_duration: float = 10.0
    finish_time: float = 6 * 60.0
    refresh_time: float = 30 * 60.0


def series_key(event: Mapping[str, Any]) -> tuple[Any, ...]:
    """Upstream ``getKey``: what makes two events isomorphic (the note and the times are not part of it)."""
    return (
        event.get("type"),
        event.get("action"),
        event.get("reason"),
        event.get("reportingController"),
        event.get("reportingInstance"),
        tuple(sorted((event.get("regarding") or {}).items())),
        tuple(sorted((event.get("related") or {}).items())),
    )


class SeriesEventRecorder:
    """Records events.k8s.io/v1 Events with series through a Client (module docstring).

    The writer and the two periodic passes start with the first event; call :meth:`close` before the event loop
    ends.
    """

    def __init__(
        self,
        client: Client,
        *,
        reporting_controller: str,
        reporting_instance: str,
        clock: Clock,
        config: SeriesRecorderConfig | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = SeriesRecorderConfig() if config is None else config
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance
        self._client = client
        self._resource = client.resource("events.events.k8s.io")
        self._clock = clock
        self._rng = random.Random() if rng is None else rng
        self._cache: dict[tuple[Any, ...], Obj] = {}
        self._writer = EventWriter(
            clock, max_queued=self.config.max_queued, name=f"events-v1-{reporting_controller}", write=self._write
        )
        self._passes: list[asyncio.Task[None]] = []
        self._last_nanos = 0
        self._lock = asyncio.Lock()
        """Held by a cache step and by a whole periodic pass, as upstream's mutex (a pass writes under it)."""

    async def event(
        self,
        obj: Mapping[str, Any],
        event_type: str,
        reason: str,
        message: str,
        *,
        action: str,
        related: Mapping[str, Any] | None = None,
    ) -> None:
        """Queue an Event about ``obj`` (upstream ``Eventf``); returns at once, never raises for I/O."""
        self.record(obj, event_type, reason, message, action=action, related=related)

    def record(
        self,
        obj: Mapping[str, Any],
        event_type: str,
        reason: str,
        message: str,
        *,
        action: str,
        related: Mapping[str, Any] | None = None,
    ) -> None:
        """:meth:`event` for callers that are not coroutines (needs a running loop). An unsupported type or an
        object without kind and name is logged and not recorded, as upstream."""
        regarding = self._writer.admit(obj, event_type, reason, message)
        if regarding is None:
            return
        self._writer.put(self._make_event(regarding, related, event_type, reason, action, message))
        if not self._passes:
            loop = asyncio.get_running_loop()
            name = f"events-v1-{self.reporting_controller}"
            self._passes = [
                loop.create_task(self._every(self.config.finish_time, self._finish_series), name=name + "-finish"),
                loop.create_task(self._every(self.config.refresh_time, self._refresh_series), name=name + "-refresh"),
            ]

    def _make_event(
        self, regarding: Obj, related: Mapping[str, Any] | None, event_type: str, reason: str, action: str, note: str
    ) -> Obj:
        now = self._clock.now()
        nanos = max(int(now * 1_000_000_000), self._last_nanos + 1)
        self._last_nanos = nanos
        event: Obj = {
            "apiVersion": API_VERSION,
            "kind": "Event",
            "metadata": {
                "name": f"{regarding['name']}.{nanos:x}",
                "namespace": regarding.get("namespace") or "default",
            },
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": regarding,
            "note": note,
            "type": event_type,
        }
        if related is not None:
            ref = object_reference(related)
            if ref:
                event["related"] = ref
        return event

    async def flush(self) -> None:
        """Wait until every queued event has been written or dropped."""
        await self._writer.flush()

    async def close(self) -> None:
        """Stop accepting events, write the queue (no retry sleeps once closing) and stop the periodic passes."""
        for task in self._passes:
            task.cancel()
        await self._writer.close()
        await asyncio.gather(*self._passes, return_exceptions=True)

    async def _write(self, event: Obj) -> None:
        async with self._lock:
            to_write = self._observe(event)
        if to_write is not None:
            await self._attempt(to_write)

    def _observe(self, event: Obj) -> Obj | None:
        """Upstream ``recordToSink``'s cache step: the event to write now, or None when a series only counts."""
        key = series_key(event)
        cached = self._cache.get(key)
        if cached is None:
            self._cache[key] = event
            copied: Obj = _copy_tree(event)
            return copied
        series = cached.get("series")
        if series is not None:
            series["count"] += 1
            series["lastObservedTime"] = event["eventTime"]
            return None
        cached["series"] = {"count": 2, "lastObservedTime": event["eventTime"]}
        written: Obj = _copy_tree(cached)
        return written

    async def _attempt(self, event: Obj) -> None:
        """Upstream ``attemptRecording``: up to ``max_tries`` tries, sleeping ~10 s (25 % jitter) between them."""
        tries = 0
        while True:
            _, retry = await self._record(event)
            if not retry:
                return
            tries += 1
            if tries >= self.config.max_tries or self._writer.closing:
                log.error("Unable to write event (retry limit exceeded!): %s", _describe(event))
                return
            await self._writer.sleep(self.config.sleep_duration * (1 + 0.25 * self._rng.random()))

    async def _record(self, event: Obj) -> tuple[Obj | None, bool]:
        """Upstream ``recordEvent``: (the written event, whether to retry)."""
        namespace = str(event["metadata"]["namespace"])
        series = event.get("series")
        try:
            if series is not None:
                try:
                    patch = {"series": dict(series)}
                    name = str(event["metadata"]["name"])
                    written = await self._client.patch(
                        self._resource, name, patch, patch_type=PatchType.STRATEGIC, namespace=namespace
                    )
                    return written, False
                except NotFoundError:
                    pass
            body = {**event, "metadata": {k: v for k, v in event["metadata"].items() if k != "resourceVersion"}}
            return await self._client.create(self._resource, body, namespace=namespace), False
        except AlreadyExistsError:
            if series is not None:
                return None, True
            log.debug("Server rejected event (will not retry!): %s", _describe(event))
            return None, False
        except APIStatusError as exc:
            log.error("Server rejected event (will not retry!): %s: %s", _describe(event), exc)
            return None, False
        except Exception as exc:
            log.warning("Unable to write event (may retry after sleeping): %s: %r", _describe(event), exc)
            return None, True

    async def _every(self, period: float, step: Callable[[], Awaitable[None]]) -> None:
        """``wait.UntilWithContext``: ``step`` now and then every ``period`` on the clock, until closed."""
        while not self._writer.closing:
            async with self._lock:
                await step()
            await self._writer.sleep(period)

    async def _finish_series(self) -> None:
        """Upstream ``finishSeries``: write and forget series quiet for ``finish_time``; forget old singletons."""
        horizon = self._clock.now() - self.config.finish_time
        for key, event in list(self._cache.items()):
            series = event.get("series")
            if series is not None:
                if parse_micro_time(series["lastObservedTime"]).timestamp() < horizon:
                    _, retry = await self._record(event)
                    if not retry:
                        self._cache.pop(key, None)
            elif parse_micro_time(event["eventTime"]).timestamp() < horizon:
                del self._cache[key]

    async def _refresh_series(self) -> None:
        """Upstream ``refreshExistingEventSeries``: write every series again (its TTL on the server)."""
        for key, event in list(self._cache.items()):
            if event.get("series") is not None:
                written, retry = await self._record(event)
                if not retry and written is not None and key in self._cache:
                    self._cache[key] = written


def _copy_tree(value: Any) -> Any:
    """A deep copy of a JSON tree (dicts, lists, scalars): what ``copy.deepcopy`` gives for an Event, at a third of
    its cost (no memo, no dispatch). Upstream copies under the cache lock too (``DeepCopy``), so the
    written event is the cache's state when it was observed, whatever the cache counts meanwhile."""
    if isinstance(value, dict):
        return {k: _copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_tree(v) for v in value]
    return value


def _describe(event: Mapping[str, Any]) -> str:
    ref = event.get("regarding") or {}
    obj = f"{ref.get('kind', '')} {ref.get('namespace', '')}/{ref.get('name', '')}"
    return f"{event.get('type')} {event.get('reason')} on {obj}: {event.get('note')!r}"


__all__ = ["API_VERSION", "SeriesEventRecorder", "SeriesRecorderConfig", "series_key"]
