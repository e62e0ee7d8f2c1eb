"""kube-apiserver's housekeeping (apiserver.housekeeping): compaction rounds as upstream's compactor, Event expiry
as the Event TTL, on an injected clock (a simulation's virtual clock)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from kubeplane.apiserver.errors import APIError
from kubeplane.apiserver.housekeeping import Compactor, EventExpiry, expire_events, housekeeping
from kubeplane.apiserver.listing import WatchOptions, open_watch
from kubeplane.apiserver.registry import Registry
from kubeplane.client.clock import FakeClock
from kubeplane.store.interface import Compacted
from kubeplane.store.memory import MemoryStore

EVENT = {"involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R", "type": "Normal"}


@pytest.fixture
async def setup() -> AsyncIterator[tuple[Registry, FakeClock]]:
    clock = FakeClock()
    reg = Registry(store=MemoryStore(), now=clock.now, rng=random.Random(7))
    await reg.start()
    yield reg, clock
    await reg.stop()


async def _configmap(reg: Registry, name: str) -> int:
    created = await reg.create(reg.resource("", "configmaps"), "default", {"metadata": {"name": name}})
    return int(created["metadata"]["resourceVersion"])


async def test_compactor_compacts_to_the_previous_rounds_revision(setup: tuple[Registry, FakeClock]) -> None:
    """Upstream compact.go: each round compacts to the revision read at the previous round (the first round, with
    none before it, compacts nothing), so one interval of history always stays."""
    reg, _ = setup
    store = reg.store
    compactor = Compactor(store)
    await _configmap(reg, "a")
    assert await compactor.round() is None  # rev == 0: "We don't compact on bootstrap."
    first = compactor.previous
    assert first == store.revision
    await _configmap(reg, "b")
    assert await compactor.round() == first
    assert store.compacted_revision == first
    assert await compactor.round() == first + 1  # the revision seen at the second round
    assert await compactor.round() is None  # nothing written since: already compacted there


async def test_a_watch_from_a_compacted_revision_is_410(setup: tuple[Registry, FakeClock]) -> None:
    """Upstream: a watch from a resourceVersion older than the compacted revision fails "too old resource
    version: N (C)" (410 Gone); one from the compacted revision or later is served."""
    reg, _ = setup
    old = await _configmap(reg, "a")
    compactor = Compactor(reg.store, previous=await _configmap(reg, "b"))
    await _configmap(reg, "c")
    await compactor.round()
    compacted = reg.store.compacted_revision
    info = reg.resource("", "configmaps")
    with pytest.raises(APIError) as caught:
        open_watch(reg, info, "default", WatchOptions(resource_version=str(old)))
    assert caught.value.status["code"] == 410
    assert caught.value.status["message"] == f"too old resource version: {old} ({compacted})"
    with pytest.raises(Compacted):
        reg.store.watch("/registry/configmaps/", start_revision=old + 1)
    watcher = open_watch(reg, info, "default", WatchOptions(resource_version=str(compacted)))
    assert [e.obj["metadata"]["name"] for e in watcher.drain()] == ["c"]


async def test_housekeeping_compacts_every_interval_on_the_injected_clock(setup: tuple[Registry, FakeClock]) -> None:
    """--etcd-compaction-interval on a virtual clock: at 5m to the revision at start, at 10m to the one at 5m."""
    reg, clock = setup
    at_start = await _configmap(reg, "a")
    task = asyncio.ensure_future(housekeeping(reg, sleep=clock.sleep, monotonic=clock.monotonic, event_ttl=None))
    await asyncio.sleep(0)  # the task sleeps on the clock
    try:
        await clock.advance(299)
        assert reg.store.compacted_revision == 0
        at_5m = await _configmap(reg, "b")
        await clock.advance(1)
        assert reg.store.compacted_revision == at_start
        await _configmap(reg, "c")
        await clock.advance(300)
        assert reg.store.compacted_revision == at_5m
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_events_expire_after_the_ttl(setup: tuple[Registry, FakeClock]) -> None:
    """kube-apiserver --event-ttl: events whose last activity is older than the TTL are deleted."""
    reg, clock = setup
    events = reg.resource("", "events")
    await reg.create(events, "default", {**EVENT, "metadata": {"name": "old"}})
    await clock.advance(1800)
    await reg.create(events, "default", {**EVENT, "metadata": {"name": "young"}})
    await clock.advance(1801)
    reg.cache(events).sync()
    assert await expire_events(reg, events, ttl=3600) == 1
    reg.cache(events).sync()
    assert sorted(reg.cache(events).objects) == ["/registry/events/default/young"]


async def test_an_event_written_after_the_pass_read_it_stays(setup: tuple[Registry, FakeClock]) -> None:
    """The expiry deletes with the resourceVersion it read as a precondition: an Event refreshed since (an
    aggregated Event's count and lastTimestamp patched) is not deleted from under its recorder."""
    reg, clock = setup
    events = reg.resource("", "events")
    await reg.create(events, "default", {**EVENT, "metadata": {"name": "e"}, "lastTimestamp": "2027-01-15T08:00:00Z"})
    reg.cache(events).sync()
    await clock.advance(3601)
    cache = reg.cache(events)
    stale = cache.kvs["/registry/events/default/e"]
    current = await reg.get(events, "default", "e")
    await reg.update(events, "default", "e", {**current, "count": 2, "lastTimestamp": "2027-01-15T09:00:01Z"})
    cache._kvs["/registry/events/default/e"] = stale  # the pass reads the object as it was
    assert await EventExpiry(reg, 3600).run() == 0
    assert (await reg.get(events, "default", "e"))["count"] == 2


async def test_expiry_parses_an_unchanged_event_once(setup: tuple[Registry, FakeClock]) -> None:
    """Each pass remembers the parsed time by resourceVersion (a pass over unchanged Events parses nothing)."""
    reg, clock = setup
    events = reg.resource("", "events")
    await reg.create(events, "default", {**EVENT, "metadata": {"name": "e"}})
    reg.cache(events).sync()
    expiry = EventExpiry(reg, 3600)
    assert await expiry.run() == 0
    key = "/registry/events/default/e"
    rv = reg.cache(events).objects[key]["metadata"]["resourceVersion"]
    expiry._seen[key] = (rv, clock.now() - 7200)  # a remembered time is used, not the object's
    assert await expiry.run() == 1
