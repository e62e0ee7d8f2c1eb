"""The watch cache's events (kubeplane.apiserver.watchcache): a MODIFIED or DELETED event's previous state is
the object the cache held for the key, not a second decode of ``prev_kv``, and it is what ``prev_kv`` holds
(upstream's cacher keeps ``PrevObject`` from its own store the same way)."""

from __future__ import annotations

import orjson

from kubeplane.apiserver.watchcache import WatchCache, decode
from kubeplane.store.memory import MemoryStore

KEY = "/registry/leases/kube-node-lease/n1"


def _lease(renew: str) -> bytes:
    return orjson.dumps({"metadata": {"name": "n1", "namespace": "kube-node-lease"}, "spec": {"renewTime": renew}})


async def test_each_event_s_previous_state_is_the_cached_object() -> None:
    store = MemoryStore()
    cache = WatchCache(store=store, prefix="/registry/leases/")
    await cache.start()
    await store.create(KEY, _lease("a"))
    await store.update(KEY, _lease("b"))
    await store.update(KEY, _lease("c"))
    await store.delete(KEY)
    cache.sync()
    added, first, second, deleted = cache.ring
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
