"""The watch cache keeps the store's bytes and a decoded object only while someone holds it
(kubeplane.apiserver.watchcache; issue 29's memory target).

What stays observable is upstream's: the cacher's ``watchCache`` answers gets and lists with the current objects
(``GetByKey``, ``WaitUntilFreshAndList``), its ring serves a watch from any resourceVersion it still holds
(``watchCacheInterval``), each MODIFIED/DELETED carries the previous state (``PrevObject``), and every watcher
of an event shares one object and one encoding (``cachingObject``). These tests pin that those hold whichever
objects happen to be decoded, and that the cache itself keeps none nobody holds. CPython frees an object when
its last reference goes, so "nobody holds it" is checked with weak references, without a collection.
"""

from __future__ import annotations

import weakref
from typing import Any, cast

import orjson
import pytest

from kubeplane.apiserver import watchcache
from kubeplane.apiserver.watchcache import CacheWatcher, Decoded, WatchCache, decode
from kubeplane.store.memory import MemoryStore

PREFIX = "/registry/configmaps/"
KEY = PREFIX + "default/c"


def _cm(value: str, *, name: str = "c", labels: dict[str, str] | None = None) -> bytes:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return orjson.dumps({"metadata": meta, "data": {"k": value}})


@pytest.fixture
async def cache() -> Any:
    store = MemoryStore()
    cache = WatchCache(store=store, prefix=PREFIX)
    await cache.start()
    yield cache
    await cache.stop()
    await store.close()


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the cache's decodes (every one goes through ``watchevent.load``)."""
    calls: list[int] = []
    real = watchcache.load

    def counting(kv: Any, revision: int) -> Decoded:
        calls.append(revision)
        return real(kv, revision)

    monkeypatch.setattr("kubeplane.apiserver.watchevent.load", counting)
    monkeypatch.setattr("kubeplane.apiserver.watchcache.load", counting)
    return calls


async def test_without_watchers_nothing_is_decoded_and_the_stored_bytes_are_shared(
    cache: WatchCache, loads: list[int]
) -> None:
    """A resource nobody watches (core Events in a simulation: the observer keeps nothing) costs the cache no
    decoded object: it holds the store's own KeyValue, bytes and all, not a copy."""
    store = cache.store
    for i in range(5):
        await store.create(f"{PREFIX}default/c{i}", _cm(str(i), name=f"c{i}"))
    await store.update(f"{PREFIX}default/c0", _cm("again", name="c0"))
    cache.sync()
    assert loads == []
    assert len(cache.objects) == 5
    assert len(cache.ring) == 6
    for key, kv in cache.kvs.items():
        assert kv is await store.get(key)  # the very object the store's index holds
    assert all(entry.ref is None for entry in cache.ring)


async def test_a_decoded_object_is_shared_while_held_and_freed_when_dropped(cache: WatchCache) -> None:
    """Upstream ``GetByKey``: the current object. A reader gets the object another still holds (one decoded
    copy however many read it); once the last holder drops it, it is gone: the cache does not keep it."""
    kv = await cache.store.create(KEY, _cm("a"))
    cache.sync()
    first = cache.objects[KEY]
    assert first == decode(kv)
    assert list(first["metadata"]) == ["name", "namespace", "resourceVersion"]  # as decode() orders it
    assert cache.objects[KEY] is first
    assert next(obj for _, obj in cache.items(PREFIX)) is first
    ref = weakref.ref(first)
    del first
    assert ref() is None
    again = cache.objects.get(KEY)
    assert again == decode(kv)


async def test_watched_changes_are_decoded_once_and_kept_only_by_their_watchers(
    cache: WatchCache, loads: list[int]
) -> None:
    """Each change is decoded once for every watcher (one object, one watch line: upstream's ``cachingObject``);
    the previous state is the object the cache held (``PrevObject``); after the watchers drop the events the
    cache holds no decoded object, current or in its ring."""
    store = cache.store
    one = CacheWatcher(key_prefix=PREFIX, matches=None)
    two = CacheWatcher(key_prefix=PREFIX, matches=None)
    assert cache.add_watcher(one, after=cache.revision)
    assert cache.add_watcher(two, after=cache.revision)
    await store.create(KEY, _cm("a"))
    await store.update(KEY, _cm("b"))
    cache.sync()
    assert len(loads) == 2  # one decode per change, none for the previous states
    added, modified = one.drain()
    assert two.drain() == [added, modified]
    assert modified.prev is added.obj
    assert modified.frame() is modified.frame()  # encoded once, for every watcher of the event
    assert cache.objects[KEY] is modified.obj
    events = [weakref.ref(added), weakref.ref(modified)]
    objects = [weakref.ref(cast(Decoded, e.obj)) for e in (added, modified)]
    del added, modified
    assert [r() for r in events] == [None, None]
    assert [r() for r in objects] == [None, None]


async def test_a_replay_from_the_ring_is_the_same_changes_decoded_again(cache: WatchCache) -> None:
    """``watchCacheInterval``: a watch from a resourceVersion the ring still holds gets every later change, with
    its previous state, equal to what the live watchers got (made again from the stored bytes when nobody holds
    the events any more), and a selector's transitions (MODIFIED leaving it: DELETED of the previous state)."""
    store = cache.store
    live = CacheWatcher(key_prefix=PREFIX, matches=None)
    assert cache.add_watcher(live, after=cache.revision)
    start = cache.revision
    await store.create(KEY, _cm("a", labels={"app": "x"}))
    await store.update(KEY, _cm("b", labels={"app": "y"}))
    await store.delete(KEY)
    cache.sync()
    seen = [(e.type, e.revision, e.obj, e.prev) for e in live.drain()]
    assert [t for t, *_ in seen] == ["ADDED", "MODIFIED", "DELETED"]
    replay = CacheWatcher(key_prefix=PREFIX, matches=None)
    assert cache.add_watcher(replay, after=start)
    assert [(e.type, e.revision, e.obj, e.prev) for e in replay.drain()] == seen
    selected = CacheWatcher(key_prefix=PREFIX, matches=lambda _k, o: o["metadata"]["labels"]["app"] == "x")
    assert cache.add_watcher(selected, after=start)
    events = selected.drain()
    assert [(e.type, e.revision) for e in events] == [("ADDED", start + 1), ("DELETED", start + 2)]
    assert events[1].obj["data"] == {"k": "a"}
    assert events[1].obj["metadata"]["resourceVersion"] == str(start + 2)


async def test_a_list_from_the_cache_decodes_nothing_a_watcher_holds(cache: WatchCache, loads: list[int]) -> None:
    """An informer holding the current objects (every in-process informer shares the watch's objects) makes a
    list or get from the cache cost no decode: the held objects are found again."""
    store = cache.store
    watcher = CacheWatcher(key_prefix=PREFIX, matches=None)
    assert cache.add_watcher(watcher, after=cache.revision)
    for i in range(3):
        await store.create(f"{PREFIX}default/c{i}", _cm(str(i), name=f"c{i}"))
    cache.sync()
    held = [e.obj for e in watcher.drain()]
    before = len(loads)
    assert [obj for _, obj in cache.items(PREFIX)] == held
    assert all(a is b for (_, a), b in zip(cache.items(PREFIX), held, strict=True))
    assert len(loads) == before
