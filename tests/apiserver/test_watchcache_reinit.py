"""The watch cache after its store watch ends and cannot be resumed (a burst of writes that never yields
overflows its buffer, and the store compacts the revision it would resume from): it re-initialises as upstream's
cacher does when the reflector's ListAndWatch fails (``Cacher.startCaching``: terminate every watcher, list, watch
again), so a list from the cache afterwards has every write, a watcher from the cache is ended rather than
silently skipping events, and the cache never claims a revision it has not seen. (An overflow whose resume point
the store still retains resumes without any of this: tests/apiserver/test_watchcache_overflow.py.)

Found by the UI's 50,000-pod measurement (bench/ui_cluster.py): before, the cache's task died on WatchOverflow
and unpaginated lists stayed stale for ever."""

from __future__ import annotations

import asyncio

import orjson

from kubeplane.apiserver.watchcache import CacheWatcher, WatchCache
from kubeplane.store.memory import MemoryStore

PREFIX = "/registry/configmaps/"


def _value(name: str, i: int = 0) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"i": str(i)}})


def _names(cache: WatchCache) -> list[str]:
    return [key.rsplit("/", 1)[1] for key, _ in cache.items(PREFIX)]


def test_an_overflow_whose_resume_point_was_compacted_is_listed_again_and_lists_see_every_write() -> None:
    async def scenario() -> None:
        store = MemoryStore()
        await store.create(PREFIX + "default/before", _value("before"))
        cache = WatchCache(store=store, prefix=PREFIX, watch_buffer=10)
        await cache.start()
        watcher = CacheWatcher(key_prefix=PREFIX, matches=lambda key, obj: True)
        assert cache.add_watcher(watcher, after=cache.revision)
        for i in range(50):  # no await between writes: the cache's task cannot run
            await store.create(PREFIX + f"default/cm-{i:02d}", _value(f"cm-{i:02d}"))
        await store.compact(store.revision)  # the revision the cache would resume from is gone
        cache.sync()
        # the watch overflowed: the cache does not claim the store's revision for what it has not seen
        assert cache.revision < store.revision
        assert not cache.ready
        for _ in range(100):
            await asyncio.sleep(0)
            if cache.reinitialisations and cache.revision == store.revision:
                break
        assert cache.reinitialisations == 1
        assert cache.resumes == 0
        cache.sync()
        assert cache.revision == store.revision
        assert _names(cache) == ["before", *(f"cm-{i:02d}" for i in range(50))]
        # the API watcher was ended (its client re-watches from its last resourceVersion), never left open with
        # a gap in its events
        assert watcher.closed
        assert watcher.overflowed
        assert cache.watchers == {}
        handed = []
        while (event := watcher.pop()) is not None:
            handed.append(event.revision)
        if handed:  # what it was handed before the end is contiguous: no event skipped
            assert handed == list(range(handed[0], handed[0] + len(handed)))
        # the cache follows the store again: a later write reaches a new watcher and lists
        fresh = CacheWatcher(key_prefix=PREFIX, matches=lambda key, obj: True)
        assert cache.add_watcher(fresh, after=cache.revision)
        await store.create(PREFIX + "default/after", _value("after"))
        await asyncio.sleep(0)
        cache.sync()
        assert "after" in _names(cache)
        event = fresh.pop()
        assert event is not None
        assert (event.type, event.revision) == ("ADDED", store.revision)
        await cache.stop()
        await store.close()

    asyncio.run(scenario())


def test_without_an_overflow_the_cache_claims_the_stores_revision_at_once() -> None:
    """The ordinary path is unchanged: after sync the cache is as fresh as the store (consistent reads)."""

    async def scenario() -> None:
        store = MemoryStore()
        cache = WatchCache(store=store, prefix=PREFIX)
        await cache.start()
        await store.create("/registry/secrets/default/other", _value("other"))  # another prefix
        await store.create(PREFIX + "default/a", _value("a"))
        cache.sync()
        assert cache.revision == store.revision
        assert _names(cache) == ["a"]
        assert cache.reinitialisations == 0
        await cache.stop()
        await store.close()

    asyncio.run(scenario())
