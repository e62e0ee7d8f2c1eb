"""The watch cache when a burst of writes that never yields overflows its own store watch (issue 29).

* Resume without a gap: the store still has the history after the cache's revision, so the cache re-opens its
  store watch from ``revision + 1`` and goes on: no API watcher is terminated, nothing is listed again, every
  watcher gets every event in order (upstream's reflector re-watches from the last resourceVersion it saw after
  a watch error that is not "too old resource version", and re-lists only on 410).
* Only a compacted resume point re-initialises (upstream ``Cacher.startCaching``): every watcher is terminated
  without a final bookmark, old resourceVersions are 410, and until the new list is applied what needs the
  cache's state is refused with upstream's 429 "storage is (re)initializing", retryAfterSeconds 1 and a
  ``Retry-After: 1`` header (cacher.go with ResilientWatchCacheInitialization; responsewriters.ErrorNegotiated),
  while a Get is read from the store (delegator.go sends it to storage when the cache is not ready).
* An informer through 12,000 writes in one non-yielding burst ends with exactly the store's objects.

Everything is driven by the event loop and a FakeClock: nothing waits on the wall clock.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from prometheus_client import CollectorRegistry

from kubeplane.api.resources import ResourceInfo
from kubeplane.apiserver.http.app import APIServerApp
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.watchcache import CacheWatcher, WatchCache
from kubeplane.client.cache import meta_namespace_key
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import GoneError, TooManyRequestsError
from kubeplane.client.informer import SharedInformer
from kubeplane.client.local import LocalClient
from kubeplane.store.base import BaseStore
from kubeplane.store.memory import MemoryStore
from tests.store.conftest import make_store

PREFIX = "/registry/configmaps/"
NS = "default"


def _value(name: str, i: int = 0) -> bytes:
    meta = {"name": name, "namespace": NS, "uid": f"uid-{name}"}
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"i": str(i)}})


def _key(name: str) -> str:
    return f"{PREFIX}{NS}/{name}"


async def _burst(store: BaseStore, count: int, *, start: int = 0) -> None:
    """``count`` writes with no suspension between them (a memory or SQLite store's write never yields to the
    loop), so no other task runs: creates, every third one updated, every seventh one deleted."""
    for i in range(start, start + count):
        name = f"cm-{i:05d}"
        await store.create(_key(name), _value(name))
        if i % 3 == 0:
            await store.update(_key(name), _value(name, 1))
        if i % 7 == 0:
            await store.delete(_key(name))


async def _store_state(store: BaseStore) -> dict[str, int]:
    result = await store.range(PREFIX, revision=store.revision)
    return {kv.key: kv.mod_revision for kv in result.kvs}


def _cache_state(cache: WatchCache) -> dict[str, int]:
    return {key: int(obj["metadata"]["resourceVersion"]) for key, obj in cache.items(PREFIX)}


async def _settle(predicate: Callable[[], bool]) -> None:
    """Let the loop run (the cache's task) until ``predicate``; a bounded number of turns, no wall clock."""
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0)
    assert predicate(), "condition not reached"


@pytest.mark.parametrize(
    "driver",
    ["read", "task"],
    ids=[
        "a read after the burst resumes at once and sees every write (consistent read)",
        "the cache's own task resumes when the loop runs it (reflector re-watch from the last resourceVersion)",
    ],
)
@pytest.mark.parametrize("backend", ["memory", "sqlite"], ids=["memory store", "sqlite store (history on disk)"])
def test_an_overflow_resumes_without_terminating_watchers_and_every_watcher_sees_every_event(
    driver: str, backend: str, tmp_path: Path
) -> None:
    async def scenario() -> None:
        store = make_store(backend, tmp_path)
        await store.create(_key("before"), _value("before"))
        cache = WatchCache(store=store, prefix=PREFIX, watch_buffer=10)
        await cache.start()
        everything = CacheWatcher(key_prefix=PREFIX, matches=lambda key, obj: True)
        updated = CacheWatcher(key_prefix=PREFIX, matches=lambda key, obj: obj["data"]["i"] == "1")
        assert cache.add_watcher(everything, after=cache.revision)
        assert cache.add_watcher(updated, after=cache.revision)
        first = store.revision + 1
        await _burst(store, 300)
        if driver == "read":
            cache.sync()
            cache.check_ready()
            assert cache.revision == store.revision  # fresh at once: no stale read after the burst
        else:
            await _settle(lambda: cache.revision == store.revision)
        assert cache.resumes >= 1
        assert cache.reinitialisations == 0
        assert cache.ready
        assert not everything.closed
        assert not everything.overflowed
        assert not updated.closed
        assert not updated.overflowed
        assert _cache_state(cache) == await _store_state(store)
        seen = [event.revision for event in everything.drain()]
        assert seen == list(range(first, store.revision + 1))  # every event, in order, once
        selected = updated.drain()
        assert selected  # transitions into and out of the selector came through too
        assert [e.revision for e in selected] == sorted(e.revision for e in selected)
        # the cache keeps following the store on its new watch
        await store.create(_key("after"), _value("after"))
        await _settle(lambda: everything.pending)
        event = everything.pop()
        assert event is not None
        assert (event.type, event.revision) == ("ADDED", store.revision)
        await cache.stop()
        await store.close()

    asyncio.run(scenario())


def test_repeated_overflows_while_catching_up_resume_each_time() -> None:
    """A second burst while the cache is still behind overflows the resumed watch too: it resumes again."""

    async def scenario() -> None:
        store = MemoryStore()
        cache = WatchCache(store=store, prefix=PREFIX, watch_buffer=5)
        await cache.start()
        watcher = CacheWatcher(key_prefix=PREFIX, matches=lambda key, obj: True)
        assert cache.add_watcher(watcher, after=cache.revision)
        for round_ in range(3):
            await _burst(store, 40, start=round_ * 40)
            await asyncio.sleep(0)  # one turn: the task may resume, the next burst overflows again
        await _settle(lambda: cache.revision == store.revision)
        assert cache.resumes >= 2
        assert cache.reinitialisations == 0
        assert [e.revision for e in watcher.drain()] == list(range(1, store.revision + 1))
        await cache.stop()
        await store.close()

    asyncio.run(scenario())


async def _registry(buffer: int) -> tuple[MemoryStore, Registry, LocalClient, ResourceInfo]:
    store = MemoryStore()
    registry = Registry(store=store, cache_watch_buffer=buffer)
    await registry.start()
    client = LocalClient(registry, owns_registry=True, clock=FakeClock())
    return store, registry, client, registry.resource("", "configmaps")


async def _http_get(registry: Registry, path: str, query: bytes = b"") -> tuple[int, dict[bytes, bytes], Any]:
    app = APIServerApp(registry, metrics_registry=CollectorRegistry(), rng=random.Random(0))
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": query}
    await app({**scope, "headers": [(b"accept", b"application/json")]}, receive, send)
    body = b"".join(bytes(m.get("body", b"")) for m in sent[1:])
    return int(sent[0]["status"]), dict(sent[0]["headers"]), orjson.loads(body)


INITIALIZING = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "storage is (re)initializing",
    "reason": "TooManyRequests",
    "details": {"retryAfterSeconds": 1},
    "code": 429,
}


def test_compaction_during_the_outage_reinitialises_with_a_429_window_and_410_for_old_versions() -> None:
    async def scenario() -> None:
        store, registry, client, res = await _registry(10)
        cache = registry.cache(res)
        await client.create(res, {"metadata": {"name": "kept"}, "data": {"i": "0"}}, namespace=NS)
        listed = await client.list(res, namespace=NS)
        old_rv = listed["metadata"]["resourceVersion"]
        watch = await client.watch(res, namespace=NS, resource_version=old_rv)
        await _burst(store, 50)
        await store.compact(store.revision)  # the cache cannot resume: its resume point is gone
        cache.sync()
        assert not cache.ready
        # the window: list and watch from the cache are 429 (upstream cacher, ResilientWatchCacheInitialization)
        with pytest.raises(TooManyRequestsError) as refused:
            await client.list(res, namespace=NS)
        assert refused.value.status == INITIALIZING
        with pytest.raises(TooManyRequestsError):
            await client.watch(res, namespace=NS, resource_version="0")
        code, headers, body = await _http_get(registry, f"/api/v1/namespaces/{NS}/configmaps")
        assert (code, headers.get(b"retry-after"), body) == (429, b"1", INITIALIZING)
        # a Get is read from the store meanwhile (delegator: storage when the cache is not ready), never stale
        fresh = await client.get(res, "cm-00001", namespace=NS)
        assert fresh["data"] == {"i": "0"}
        # a paged list is served by the store (upstream delegates a limited list without selectors)
        page = await client.list(res, namespace=NS, limit=5)
        assert len(page["items"]) == 5
        # the cache's task re-initialises: lists again, watchers terminated
        await _settle(lambda: cache.ready)
        assert cache.reinitialisations == 1
        assert cache.resumes == 0
        assert cache.revision == store.revision
        names = {o["metadata"]["name"] for o in (await client.list(res, namespace=NS))["items"]}
        assert names == {key.rsplit("/", 1)[1] for key in await _store_state(store)}
        # the terminated watch ends without a final bookmark claiming the new list's revision
        events = [event async for event in watch]
        assert all(e["type"] != "BOOKMARK" for e in events)
        assert all(int(e["object"]["metadata"]["resourceVersion"]) <= store.compacted_revision for e in events)
        # its client re-watches from the last resourceVersion it saw: 410, so it re-lists
        with pytest.raises(GoneError) as gone:
            await client.watch(res, namespace=NS, resource_version=old_rv)
        assert gone.value.status["message"] == f"too old resource version: {old_rv} ({store.compacted_revision})"
        await client.close()

    asyncio.run(scenario())


def test_a_watcher_terminated_by_a_reinitialisation_gets_no_bookmark() -> None:
    """Upstream terminates every watcher on re-initialisation without a bookmark: the cache's revision is then
    the new list's, which the watcher never received; a live watcher idle at the cache's revision gets one."""

    async def scenario() -> None:
        store = MemoryStore()
        cache = WatchCache(store=store, prefix=PREFIX, watch_buffer=5)
        await cache.start()
        watcher = CacheWatcher(key_prefix=PREFIX, matches=lambda key, obj: True)
        assert cache.add_watcher(watcher, after=cache.revision)
        assert cache.bookmark_revision(watcher) == cache.revision == store.revision
        await _burst(store, 20)
        await store.compact(store.revision)
        watcher.drain()
        assert cache.bookmark_revision(watcher) is None  # not ready: the revision is about to jump
        await _settle(lambda: cache.ready)
        assert watcher.closed
        assert watcher.overflowed
        assert cache.bookmark_revision(watcher) is None
        fresh = CacheWatcher(key_prefix=PREFIX, matches=lambda key, obj: True)
        assert cache.add_watcher(fresh, after=cache.revision)
        assert cache.bookmark_revision(fresh) == store.revision
        await cache.stop()
        await store.close()

    asyncio.run(scenario())


def test_an_informer_through_12000_writes_in_one_non_yielding_burst_ends_with_exactly_the_stores_objects() -> None:
    async def scenario() -> None:
        store, registry, client, res = await _registry(100)
        clock = FakeClock()
        inf = SharedInformer(client, res, clock=clock, rng=random.Random(1), watch_list=False)
        inf.start()
        assert await inf.wait_for_sync()
        await _burst(store, 12_000)  # the cache's store watch (buffer 100) overflows
        cache = registry.cache(res)

        def converged() -> bool:
            have = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in inf.indexer.list()}
            want = {key.rsplit("/", 1)[1]: str(obj["metadata"]["resourceVersion"]) for key, obj in cache.items(PREFIX)}
            return cache.revision == store.revision and have == want

        for _ in range(200):
            if converged():
                break
            await clock.advance(1.0)
            for _ in range(20):
                await asyncio.sleep(0)
        assert converged()
        assert cache.resumes >= 1
        assert cache.reinitialisations == 0
        state = await _store_state(store)
        informed = {PREFIX + meta_namespace_key(o): int(o["metadata"]["resourceVersion"]) for o in inf.indexer.list()}
        assert informed == state
        await inf.stop()
        await client.close()

    asyncio.run(scenario())
