"""An event recorder writing core/v1 Events, as client-go's ``tools/record`` (event.go, events_cache.go).

Components report what they did to an object (``Scheduled``, ``FailedScheduling``, ``Killing``) as Events::

    recorder = EventRecorder(client, component="default-scheduler", clock=clock)
    await recorder.event(pod, "Normal", "Scheduled", "Successfully assigned default/p to node-1")

**Never blocks or breaks the caller.** :meth:`EventRecorder.event` only builds the Event and appends it to a
bounded in-memory queue (10,000; upstream's ``maxQueuedEvents`` is 1,000, see :class:`EventRecorderConfig`; a
full queue drops the new event, as upstream's ``DropIfChannelFull``). One background task takes events in order
and, for each:

1. **correlates** it (:class:`EventCorrelator`, upstream ``EventCorrelator.EventCorrelate``):

   * *aggregate*: events of one source, object, type and reason with 10 distinct messages within 10 minutes
     become one ``(combined from similar events): <message>`` event, written under its own name;
   * *observe*: an event seen before (same source, object, type, reason and message) becomes ``count + 1``
     of the Event already written: same name and ``firstTimestamp``, new ``lastTimestamp`` and message,
     sent as a merge patch ``{"count", "lastTimestamp", "message"}``;
   * *spam filter*: per source and object a token bucket (burst 25, one more every 5 minutes) drops the rest.

2. **writes** it: a POST for a new event, a PATCH for a repeat (a POST again if the Event is gone). A server
   answer that is a failure ``Status`` is logged and the event dropped (upstream does not retry them either);
   other failures (connection) are retried up to 12 tries, 10 s apart on the clock, the first wait randomised.
   After a successful write the correlator remembers the returned Event, so the next repeat patches it.

:meth:`EventRecorder.close` writes what is queued (one try each once closing) and stops the task.

Names are ``<object name>.<unix nanoseconds in hex>`` (upstream ``fmt.Sprintf("%v.%x", ...)``); a recorder
makes them strictly increasing, so events recorded at the same instant of a FakeClock never collide (upstream
relies on its clock's nanosecond resolution for that).
"""

from __future__ import annotations

import copy
import logging
import random
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from kubeplane.api.meta import format_time
from kubeplane.api.views import meta_of, section

from .clock import Clock
from .errors import AlreadyExistsError, APIStatusError, NotFoundError
from .event_writer import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventWriter, object_reference
from .flowcontrol import TokenBucket, TokenBucketConfig
from .interface import Client, Obj

log = logging.getLogger(__name__)

COMBINED_PREFIX: Final = "(combined from similar events): "
_NAMESPACE_TERMINATING: Final = "NamespaceTerminating"

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class CorrelatorConfig:
    """Upstream ``CorrelatorOptions`` defaults (events_cache.go)."""

    lru_cache_size: int = 4096
    spam_burst: int = 25
    spam_qps: float = 1.0 / 300.0
    max_events: int = 10
    max_interval: float = 600.0


@dataclass(frozen=True, slots=True)
class EventRecorderConfig:
    """Upstream event.go: ``maxQueuedEvents``, ``maxTriesPerEvent``, ``defaultSleepDuration``.

    ``max_queued`` is 10,000 where upstream's is 1,000: upstream's broadcaster drains its channel on another
    goroutine while a controller loops, but here the writer runs only when the recording loop yields, so one
    pass of the node-lifecycle controller over 5,000 new nodes would otherwise drop 4,000 RegisteredNode events.
    It stays a bound on memory."""

    max_queued: int = 10_000
    max_tries: int = 12
    sleep_duration: float = 10.0
    correlator: CorrelatorConfig = field(default_factory=CorrelatorConfig)


@dataclass(frozen=True, slots=True)
class CorrelateResult:
    """The event to write and, for a repeat of an event already written, the merge patch to send instead."""

    event: Obj
    patch: Obj | None = None


@dataclass(frozen=True, slots=True)
class _EventLog:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


@dataclass(slots=True)
class _AggregateRecord:
    local_keys: dict[str, None]  # an insertion-ordered set: the oldest message is the one popped
    last_timestamp: float


class _LRU(Generic[V]):
    """A bounded map evicting the least recently used key (upstream ``golang/groupcache/lru``)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._data: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def add(self, key: str, value: V) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self._size:
            self._data.popitem(last=False)


def _get(obj: Mapping[str, Any], *path: str) -> str:
    """The string at ``path`` ("" when absent). A plain dict, what events are, is tested by its exact type first:
    ``isinstance(value, Mapping)`` is an ABC check costing several times a dict lookup, and the correlator reads
    some forty fields per event."""
    value: Any = obj
    for part in path:
        if type(value) is dict:
            value = value.get(part)
        else:
            value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    return value if type(value) is str else str(value)


@dataclass(frozen=True, slots=True)
class _KeyFields:
    """The fields of an event that upstream's three keys are made of, each read once (``_get``'s strings)."""

    component: str
    host: str
    kind: str
    namespace: str
    name: str
    field_path: str
    uid: str
    api_version: str
    type: str
    reason: str
    message: str
    reporting_component: str
    reporting_instance: str

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> _KeyFields:
        source = event.get("source")
        involved = event.get("involvedObject")
        source = source if isinstance(source, Mapping) else {}
        involved = involved if isinstance(involved, Mapping) else {}
        return cls(
            _get(source, "component"),
            _get(source, "host"),
            _get(involved, "kind"),
            _get(involved, "namespace"),
            _get(involved, "name"),
            _get(involved, "fieldPath"),
            _get(involved, "uid"),
            _get(involved, "apiVersion"),
            _get(event, "type"),
            _get(event, "reason"),
            _get(event, "message"),
            _get(event, "reportingComponent"),
            _get(event, "reportingInstance"),
        )

    def source_object(self) -> str:
        return "".join((self.component, self.host, self.kind, self.namespace, self.name))

    def event_key(self) -> str:
        """Upstream ``getEventKey``."""
        return "".join(
            (self.source_object(), self.field_path, self.uid, self.api_version, self.type, self.reason, self.message)
        )

    def spam_key(self) -> str:
        """Upstream ``getSpamKey``."""
        return "".join((self.source_object(), self.uid, self.api_version))

    def aggregate_key(self) -> tuple[str, str]:
        """Upstream ``EventAggregatorByReasonFunc``."""
        parts = (self.uid, self.api_version, self.type, self.reason, self.reporting_component)
        return "".join((self.source_object(), *parts, self.reporting_instance)), self.message


def event_key(event: Mapping[str, Any]) -> str:
    """Upstream ``getEventKey``: what makes two events "the same" (and the second one a count increment)."""
    return _KeyFields.of(event).event_key()


def spam_key(event: Mapping[str, Any]) -> str:
    """Upstream ``getSpamKey``: the spam filter's bucket is per source and involved object."""
    return _KeyFields.of(event).spam_key()


def aggregate_key(event: Mapping[str, Any]) -> tuple[str, str]:
    """Upstream ``EventAggregatorByReasonFunc``: (events that aggregate together, what tells them apart)."""
    return _KeyFields.of(event).aggregate_key()


class EventCorrelator:
    """Aggregation, count increments and the spam filter (upstream ``EventCorrelator``); no I/O.

    State is three LRU caches (4096 entries each, as upstream): aggregation records, the last observation of
    each event key (count, firstTimestamp, name, resourceVersion) and spam token buckets. Correlation reads
    the clock at the time it runs, as upstream's ``recordToSink`` does. Not safe to share between recorders
    that write concurrently: the observation cache assumes one writer for its events.
    """

    def __init__(self, *, clock: Clock, config: CorrelatorConfig | None = None) -> None:
        self.config = CorrelatorConfig() if config is None else config
        self._clock = clock
        size = self.config.lru_cache_size
        self._aggregates: _LRU[_AggregateRecord] = _LRU(size)
        self._logs: _LRU[_EventLog] = _LRU(size)
        self._spam: _LRU[TokenBucket] = _LRU(size)
        self._spam_config = TokenBucketConfig(qps=self.config.spam_qps, burst=self.config.spam_burst)
        self._last_nanos = 0

    def new_name(self, object_name: str, now: float) -> str:
        """``<object name>.<hex unix nanoseconds>``, strictly increasing per correlator (module docstring)."""
        nanos = max(int(now * 1_000_000_000), self._last_nanos + 1)
        self._last_nanos = nanos
        return f"{object_name}.{nanos:x}"

    def correlate(self, event: Obj) -> CorrelateResult | None:
        """The event to write (and its patch if it repeats one written before), or None if spam-filtered."""
        fields = _KeyFields.of(event)  # read once: the three keys share most of their fields
        aggregated, key = self._aggregate(event, fields)
        observed, patch = self._observe(aggregated, key)
        # the combined event keeps the source and involved object, the only fields of the spam key
        if not self._allow(fields.spam_key()):
            return None
        return CorrelateResult(observed, patch)

    def update_state(self, event: Mapping[str, Any]) -> None:
        """Remember an Event the server returned, so the next repeat patches it (upstream ``UpdateState``)."""
        metadata = meta_of(event)
        self._logs.add(
            event_key(event),
            _EventLog(
                count=int(event.get("count") or 0),
                first_timestamp=str(event.get("firstTimestamp") or ""),
                name=str(metadata.get("name") or ""),
                resource_version=str(metadata.get("resourceVersion") or ""),
            ),
        )

    def _aggregate(self, event: Obj, fields: _KeyFields) -> tuple[Obj, str]:
        now = self._clock.now()
        key, local_key = fields.aggregate_key()
        record = self._aggregates.get(key)
        if record is None or now - record.last_timestamp > self.config.max_interval:
            record = _AggregateRecord(local_keys={}, last_timestamp=now)
        record.local_keys[local_key] = None
        record.last_timestamp = now
        self._aggregates.add(key, record)
        if len(record.local_keys) < self.config.max_events:
            return event, fields.event_key()
        # Upstream pops an arbitrary message (PopAny) so the set stays below max; the oldest one here.
        del record.local_keys[next(iter(record.local_keys))]
        timestamp = format_time(now)
        involved = event["involvedObject"]
        combined: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": self.new_name(str(involved.get("name") or ""), now),
                "namespace": event["metadata"]["namespace"],
            },
            "involvedObject": copy.deepcopy(involved),
            "reason": event.get("reason", ""),
            "message": COMBINED_PREFIX + str(event.get("message") or ""),
            "source": copy.deepcopy(event.get("source") or {}),
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
            "type": event.get("type", ""),
            # Upstream's combined event omits these; kept so the event stays attributable to its reporter.
            "reportingComponent": event.get("reportingComponent", ""),
            "reportingInstance": event.get("reportingInstance", ""),
        }
        return combined, key

    def _observe(self, event: Obj, key: str) -> tuple[Obj, Obj | None]:
        event = {**event, "metadata": dict(event["metadata"])}
        patch: Obj | None = None
        last = self._logs.get(key)
        if last is not None and last.count > 0:
            event["metadata"]["name"] = last.name
            if last.resource_version:
                event["metadata"]["resourceVersion"] = last.resource_version
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            patch = {"count": event["count"], "lastTimestamp": event["lastTimestamp"], "message": event["message"]}
        self._logs.add(
            key,
            _EventLog(
                count=int(event["count"]),
                first_timestamp=str(event["firstTimestamp"]),
                name=str(event["metadata"]["name"]),
                resource_version=str(meta_of(event).get("resourceVersion") or ""),
            ),
        )
        return event, patch

    def _allow(self, key: str) -> bool:
        bucket = self._spam.get(key)
        if bucket is None:
            bucket = TokenBucket(self._spam_config, clock=self._clock)
        allowed = bucket.try_accept()
        self._spam.add(key, bucket)
        return allowed


class EventRecorder:
    """Records Events through a Client without ever blocking or failing the caller (module docstring).

    ``reporting_instance`` defaults to ``host``, as upstream sets ``reportingInstance`` from the source host.
    The background writer starts with the first event; call :meth:`close` before the event loop ends.
    """

    def __init__(
        self,
        client: Client,
        *,
        component: str,
        host: str = "",
        clock: Clock,
        reporting_instance: str | None = None,
        config: EventRecorderConfig | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = EventRecorderConfig() if config is None else config
        self.correlator = EventCorrelator(clock=clock, config=self.config.correlator)
        self._client = client
        self._resource = client.resource("events")
        self._component = component
        self._host = host
        self._instance = host if reporting_instance is None else reporting_instance
        self._clock = clock
        self._rng = random.Random() if rng is None else rng
        self._writer = EventWriter(
            clock, max_queued=self.config.max_queued, name=f"events-{component}", write=self._record_to_sink
        )

    async def event(
        self, obj: Mapping[str, Any], event_type: str, reason: str, message: str, *, field_path: str = ""
    ) -> None:
        """Queue an Event about ``obj`` (upstream ``recorder.Event``); returns at once, never raises for I/O."""
        self.record(obj, event_type, reason, message, field_path=field_path)

    def record(
        self,
        obj: Mapping[str, Any],
        event_type: str,
        reason: str,
        message: str,
        *,
        field_path: str = "",
        action: str = "",
    ) -> None:
        """:meth:`event` for callers that are not coroutines (needs a running loop).
        ``field_path`` names the part of the object, as the kubelet's ``spec.containers{nginx}``.

        An unsupported type or an object without kind and name is logged and not recorded, as upstream."""
        ref = self._writer.admit(obj, event_type, reason, message, field_path=field_path)
        if ref is None:
            return
        event = self._make_event(ref, event_type, reason, message)
        if action:  # what was done (events.k8s.io's ``action``, e.g. the descheduler's "Descheduled")
            event["action"] = action
        self._writer.put(event)

    def _make_event(self, ref: Obj, event_type: str, reason: str, message: str) -> Obj:
        now = self._clock.now()
        timestamp = format_time(now)
        source = {"component": self._component, **({"host": self._host} if self._host else {})}
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": self.correlator.new_name(ref["name"], now),
                "namespace": ref.get("namespace") or "default",
            },
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": source,
            "firstTimestamp": timestamp,
            "lastTimestamp": timestamp,
            "count": 1,
            "type": event_type,
            "reportingComponent": self._component,
            "reportingInstance": self._instance,
        }

    async def flush(self) -> None:
        """Wait until every queued event has been written or dropped."""
        await self._writer.flush()

    async def close(self) -> None:
        """Stop accepting events, write the queue (no retry sleeps once closing) and stop the writer."""
        await self._writer.close()

    async def _record_to_sink(self, event: Obj) -> None:
        result = self.correlator.correlate(event)
        if result is None:
            log.debug("event %s about %s dropped by the spam filter", event["reason"], event["involvedObject"])
            return
        tries = 0
        while not await self._write(result):
            tries += 1
            if tries >= self.config.max_tries:
                log.error("Unable to write event (retry limit exceeded!): %s", _describe(result.event))
                return
            delay = self.config.sleep_duration
            if not self._writer.closing:
                await self._writer.sleep(delay * self._rng.random() if tries == 1 else delay)
            if self._writer.closing:
                log.error("Unable to write event (recorder is closed): %s", _describe(result.event))
                return

    async def _write(self, result: CorrelateResult) -> bool:
        """One try (upstream ``recordEvent``); True when done, written or not, False to retry."""
        event = result.event
        namespace = str(event["metadata"]["namespace"])
        try:
            written: Obj | None = None
            if result.patch is not None:
                try:
                    written = await self._client.patch(
                        self._resource, str(event["metadata"]["name"]), result.patch, namespace=namespace
                    )
                except NotFoundError:
                    written = None
            if written is None:
                body = {**event, "metadata": {k: v for k, v in event["metadata"].items() if k != "resourceVersion"}}
                written = await self._client.create(self._resource, body, namespace=namespace)
        except APIStatusError as exc:
            quiet = isinstance(exc, AlreadyExistsError) or _has_cause(exc, _NAMESPACE_TERMINATING)
            log.log(logging.DEBUG if quiet else logging.ERROR, "Server rejected event (will not retry!): %s: %s",
                    _describe(event), exc)  # fmt: skip
            return True
        except Exception as exc:
            log.warning("Unable to write event (may retry after sleeping): %s: %r", _describe(event), exc)
            return False
        self.correlator.update_state(written)
        return True


def _has_cause(exc: APIStatusError, cause: str) -> bool:
    causes = section(exc.status, "details").get("causes") or []
    return any(isinstance(c, Mapping) and c.get("type") == cause for c in causes)


def _describe(event: Mapping[str, Any]) -> str:
    ref = event.get("involvedObject") or {}
    obj = f"{ref.get('kind', '')} {ref.get('namespace', '')}/{ref.get('name', '')}"
    return f"{event.get('type')} {event.get('reason')} on {obj}: {event.get('message')!r}"


__all__ = [
    "COMBINED_PREFIX",
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "CorrelateResult",
    "CorrelatorConfig",
    "EventCorrelator",
    "EventRecorder",
    "EventRecorderConfig",
    "aggregate_key",
    "event_key",
    "object_reference",
    "spam_key",
]
