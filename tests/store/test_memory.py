"""The memory backend keeps each value once (kubeplane.store.memory): the current version in the index and the
latest entry of the history are one ``KeyValue``, and an update's ``prev_kv`` is the version it replaced, so a
key's history costs one value per revision, as etcd's MVCC keeps one per revision."""

from __future__ import annotations

from kubeplane.store.memory import MemoryStore


async def test_the_current_value_and_the_history_share_one_key_value() -> None:
    store = MemoryStore()
    try:
        first = await store.create("/k", b'{"v":1}')
        second = await store.update("/k", b'{"v":2}')
        current = await store.get("/k")
        assert current is second
        assert store._log[-1].kv is current  # the history's latest entry is the index's value
        assert store._log[-1].prev_kv is first  # the replaced version, not a copy of it
        assert store._log[0].kv is first
        watch = store.watch("/k", start_revision=1)
        events = await watch.next_batch()
        assert [e.kv for e in events] == [first, second]
        assert events[1].kv is second  # a replay hands out the stored objects themselves
        watch.close()
    finally:
        await store.close()


async def test_every_version_of_a_key_shares_its_key_string() -> None:
    """A key's versions in the history (updates, a batch's updates, the delete's tombstone) hold the key as its
    first version does, not the caller's equal string: a renewed Lease's history costs its values only."""
    store = MemoryStore()
    try:
        first = await store.create("/registry/leases/n1", b"1")
        again = "".join(["/registry/leases/", "n1"])  # equal, another object
        assert again is not first.key
        second = await store.update(again, b"2")
        (third,) = await store.update_many([(again, b"3", None)])
        deleted = await store.delete(again)
        tombstone = store._log[-1].kv
        assert second.key is first.key
        assert third.key is first.key
        assert tombstone.key is first.key
        assert deleted.prev_kv is third
    finally:
        await store.close()
