"""The watch cache's events (kubeplane.apiserver.watchcache): a MODIFIED or DELETED event's previous state is
the object the cache held for the key, not a second decode of ``prev_kv``, and it is what ``prev_kv`` holds
(upstream's cacher keeps ``PrevObject`` from its own store the same way)."""

from __future__ import annotations

import orjson

from kubeplane.apiserver.watchcache import CacheWatcher, WatchCache, decode, load
from kubeplane.store.memory import MemoryStore

KEY = "/registry/leases/kube-node-lease/n1"


def _lease(renew: str) -> bytes:
    return orjson.dumps({"metadata": {"name": "n1", "namespace": "kube-node-lease"}, "spec": {"renewTime": renew}})


async def test_each_event_s_previous_state_is_the_cached_object() -> None:
    store = MemoryStore()
    cache = WatchCache(store=store, prefix="/registry/leases/")
    await cache.start()
    watcher = CacheWatcher(key_prefix="/registry/leases/", matches=None)
    assert cache.add_watcher(watcher, after=cache.revision)
    await store.create(KEY, _lease("a"))
    await store.update(KEY, _lease("b"))
    await store.update(KEY, _lease("c"))
    await store.delete(KEY)
    cache.sync()
    added, first, second, deleted = watcher.drain()
    assert (added.type, first.type, second.type, deleted.type) == ("ADDED", "MODIFIED", "MODIFIED", "DELETED")
    assert added.prev is None
    assert first.prev is added.obj
    assert second.prev is first.obj
    assert deleted.prev is second.obj
    assert second.prev == {**decode((await store.range(KEY, revision=2)).kvs[0]), "metadata": second.prev["metadata"]}
    assert second.prev["metadata"]["resourceVersion"] == "2"
    assert second.prev["spec"] == {"renewTime": "b"}
    assert KEY not in cache.objects
    await cache.stop()
    await store.close()


async def test_a_writer_s_decoded_object_is_applied_as_it_is_and_only_for_its_revision() -> None:
    """WatchCache.expect: the put at the named revision is applied with the writer's object (equal to a decode
    of the stored value), earlier events of the key passing the word by; a word for a revision already applied,
    or one whose revision is a delete, is dropped."""
    store = MemoryStore()
    cache = WatchCache(store=store, prefix="/registry/leases/")
    await cache.start()
    watcher = CacheWatcher(key_prefix="/registry/leases/", matches=None)
    assert cache.add_watcher(watcher, after=cache.revision)
    await store.create(KEY, _lease("a"))  # applied in the same sync, before the word's revision
    kv = await store.update(KEY, _lease("b"))
    written = load(kv, kv.mod_revision)  # a Decoded, kept as it is (a plain dict is copied into one)
    cache.expect(KEY, kv.mod_revision, written)
    cache.sync()
    assert cache.objects[KEY] is written
    created, modified = watcher.drain()
    assert modified.obj is written
    assert modified.prev is created.obj
    kv = await store.update(KEY, _lease("c"))
    cache.sync()
    cache.expect(KEY, kv.mod_revision, {"stale": True})  # a word for a revision the cache already applied
    kv = await store.update(KEY, _lease("d"))
    cache.sync()
    assert cache.objects[KEY] == decode(kv)
    assert "stale" not in cache.objects[KEY]
    kv = await store.update(KEY, _lease("c"))
    cache.sync()
    assert cache.objects[KEY] == decode(kv)
    cache.expect(KEY, kv.mod_revision + 1, {"not": "a put"})
    await store.delete(KEY)
    cache.sync()
    assert KEY not in cache.objects
    deleted = watcher.drain()[-1]
    assert deleted.type == "DELETED"
    assert deleted.obj["spec"] == {"renewTime": "c"}
    assert not cache._decoded  # every word taken or dropped
    await cache.stop()
    await store.close()
