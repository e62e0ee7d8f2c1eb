"""kube-apiserver's housekeeping of the store: periodic compaction (``--etcd-compaction-interval``) and the
expiry of core Events (``--event-ttl``), on any clock (the server's real time, a simulation's virtual clock).

Compaction follows upstream's ``compactor.runCompactLoop`` (staging/src/k8s.io/apiserver/pkg/storage/etcd3/
compact.go): the first compaction happens one interval after start, and each one compacts the store to the
revision read at the *previous* round, so at least one interval of history always stays for watches that
resume from a recent resourceVersion; a watch or read below the compacted revision gets 410 Expired.

Event expiry stands in for the etcd lease upstream attaches to every Event write (its TTL is ``--event-ttl``;
the lease manager reuses a lease for up to 60 s of later writes, so an Event goes between ``ttl`` and
``ttl + 60 s`` after its last write). Here a pass every :data:`EVENT_PASS` seconds (at most) deletes the core
Events whose last activity (``lastTimestamp``, else ``eventTime``, else ``creationTimestamp``) is older than
the TTL: the same window. The pass remembers each Event's parsed time by resourceVersion, so a pass over
unchanged Events costs a dictionary walk, not a timestamp parse per Event.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api import meta as apimeta
from kubeplane.store.interface import Compacted, Store

from .deletion import DeleteOptions, delete_object
from .registry import Registry

DEFAULT_COMPACTION_INTERVAL = 300.0
"""kube-apiserver's ``--etcd-compaction-interval`` default (5m)."""
DEFAULT_EVENT_TTL = 3600.0
"""kube-apiserver's ``--event-ttl`` default (1h)."""
EVENT_PASS = 60.0
"""The longest time between two expiry passes: upstream's lease reuse window (``leaseReuseDurationSeconds``)."""


@dataclass(slots=True)
class Compactor:
    """Upstream's compactor, one round per :meth:`round`: compact to the revision seen at the previous round."""

    store: Store
    previous: int = 0
    """The store's revision at the previous round (0 before the first: nothing to compact yet)."""
    rounds: int = 0

    async def round(self) -> int | None:
        """Compact to :attr:`previous` if the store has not compacted there yet; return the revision compacted to
        (None when nothing was). Then remember the current revision for the next round."""
        compacted: int | None = None
        target = self.previous
        if target > self.store.compacted_revision:
            with contextlib.suppress(Compacted):
                await self.store.compact(target)
                compacted = target
        self.previous = self.store.revision
        self.rounds += 1
        return compacted


@dataclass(slots=True)
class EventExpiry:
    """Deletes core Events older than ``ttl`` (see the module docstring) by the registry's clock.

    The pass reads the watch cache without syncing it (a pass changes nothing a component would observe until it
    deletes) and deletes with the resourceVersion it saw as a precondition: an Event written since stays."""

    registry: Registry
    ttl: float
    _seen: dict[str, tuple[str, float | None]] = field(default_factory=dict)  # key -> (resourceVersion, time)

    async def run(self) -> int:
        """One pass: the number of Events deleted."""
        registry = self.registry
        events = registry.resource("", "events")
        cutoff = registry.now() - self.ttl
        cache = registry.cache(events)
        seen = self._seen
        fresh: dict[str, tuple[str, float | None]] = {}
        expired: list[Any] = []
        for key, kv in cache.kvs.items():  # an Event unchanged since the last pass is not decoded again
            rv = str(kv.mod_revision)
            entry = seen.get(key)
            obj = None
            if entry is None or entry[0] != rv:
                obj = cache.object_at(key, kv)
                entry = (rv, _last_activity(obj))
            fresh[key] = entry
            if entry[1] is not None and entry[1] < cutoff:
                expired.append(obj if obj is not None else cache.object_at(key, kv))
        self._seen = fresh
        deleted = 0
        for obj in expired:
            meta = obj["metadata"]
            options = DeleteOptions(resource_version=meta.get("resourceVersion"))
            with contextlib.suppress(Exception):  # gone or written meanwhile (409): the next pass decides again
                await delete_object(registry, events, meta.get("namespace"), meta["name"], options)
                deleted += 1
        return deleted


def _last_activity(obj: dict[str, Any]) -> float | None:
    stamp = obj.get("lastTimestamp") or obj.get("eventTime") or obj["metadata"].get("creationTimestamp")
    try:
        short = isinstance(stamp, str) and len(stamp) == 20  # seconds (lastTimestamp), else micro (eventTime)
        when = apimeta.parse_time(stamp) if short else apimeta.parse_micro_time(stamp)
    except (TypeError, ValueError):
        return None
    return when.timestamp()


async def expire_events(registry: Registry, events: Any = None, *, ttl: float) -> int:
    """One expiry pass without memory of earlier ones (kube-apiserver's --event-ttl); the Events deleted."""
    del events  # the core Events resource, always: kept for the callers that name it
    return await EventExpiry(registry, ttl).run()


async def housekeeping(
    registry: Registry,
    *,
    compaction_interval: float = DEFAULT_COMPACTION_INTERVAL,
    event_ttl: float | None = DEFAULT_EVENT_TTL,
    sleep: Callable[[float], Awaitable[None]],
    monotonic: Callable[[], float],
) -> None:
    """Run forever: compact every ``compaction_interval`` seconds (0: never, as upstream) and expire Events
    (``event_ttl`` None: never). Ticks every ``min(compaction_interval, max(ttl / 10, 1 s), 60 s)``. The start
    counts as the round before the first: the first compaction, one interval in, goes to the revision at start
    (upstream's first round only records a revision, so its first compaction comes one interval later)."""
    compactor = Compactor(registry.store, previous=registry.store.revision)
    expiry = None if event_ttl is None else EventExpiry(registry, event_ttl)
    ticks = [EVENT_PASS]
    if compaction_interval > 0:
        ticks.append(compaction_interval)
    if event_ttl is not None:
        ticks.append(max(event_ttl / 10, 1.0))
    tick = min(ticks)
    last_compaction = monotonic()
    while True:
        await sleep(tick)
        if compaction_interval > 0 and monotonic() - last_compaction >= compaction_interval:
            last_compaction = monotonic()
            await compactor.round()
        if expiry is not None:
            await expiry.run()
