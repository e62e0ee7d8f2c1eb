"""The store's watches.

* Fan-out (kubeplane.store.watch.WatchHub): a write reaches exactly the watchers whose prefix
it starts with, as etcd's watch ranges (a prefix watch is the range [prefix, prefix+1)), whatever the prefix's
length relative to the key's resource part, and watchers added or removed later are seen at once.
* What the API server's watch cache relies on to resume an overflowed store watch without a gap, on every
backend: a watch from a past revision is not ``live`` until its replay has been delivered (so the cache never
claims the store's revision early); ``take_available`` hands the replay over at once on the in-process backends
(etcd replays inside ``next_batch``); and ``error`` names why a watch ended (an overflow, which the cache resumes
from, versus a compaction, which it re-initialises after), as etcd's watch reports a compaction.
"""

from __future__ import annotations

import pytest

from kubeplane.store.base import BaseStore
from kubeplane.store.interface import WatchOverflow
from kubeplane.store.memory import MemoryStore
from kubeplane.store.watch import StoreWatch

KEY = "/registry/leases/kube-node-lease/n1"


@pytest.mark.parametrize(
    ("prefix", "delivered"),
    [
        ("", True),
        ("/registry/", True),
        ("/registry/le", True),
        ("/registry/leases/", True),
        ("/registry/leases/kube-node-lease/", True),
        (KEY, True),
        ("/registry/leases/default/", False),
        ("/registry/pods/", False),
        ("/registry/leasesx/", False),
        (KEY + "0", False),
    ],
    ids=[
        "everything",
        "the-registry",
        "a-prefix-inside-a-segment",
        "the-resource",
        "the-namespace",
        "the-key-itself",
        "another-namespace",
        "another-resource",
        "a-longer-resource-name",
        "a-longer-key",
    ],
)
async def test_a_write_reaches_the_watchers_whose_prefix_it_starts_with(prefix: str, delivered: bool) -> None:
    store = MemoryStore()
    watch = store.watch(prefix)
    await store.create(KEY, b"{}")
    assert [e.kv.key for e in watch.take_buffered()] == ([KEY] if delivered else [])
    await store.close()


async def test_watchers_added_and_removed_between_writes() -> None:
    """The hub's per-resource lookup is rebuilt when watchers come and go: a new watcher of a resource already
    written to gets the next write; a closed one gets nothing more."""
    store = MemoryStore()
    first = store.watch("/registry/leases/")
    await store.create(KEY, b"{}")
    later = store.watch("/registry/leases/kube-node-lease/")
    await store.update(KEY, b"{}")
    assert [e.kv.mod_revision for e in first.take_buffered()] == [1, 2]
    first.close()
    await store.update(KEY, b"{}")
    assert first.take_buffered() == []
    assert [e.kv.mod_revision for e in later.take_buffered()] == [2, 3]
    await store.close()


def _live(watch: StoreWatch) -> bool:
    """``watch.live`` read afresh (a call, so a type checker does not carry one reading over to the next)."""
    return watch.live


async def test_a_watch_from_the_past_is_live_only_once_its_replay_is_delivered(store: BaseStore) -> None:
    for i in range(5):
        await store.create(f"/w/{i}", b"{}")
    first = store.revision - 3
    watch = store.watch("/w/", start_revision=first)
    try:
        assert not _live(watch)
        revisions = [event.revision for event in watch.take_available()]
        while len(revisions) < 4:  # etcd: the replay is read from etcd inside next_batch
            assert not _live(watch)
            revisions += [event.revision for event in await watch.next_batch()]
        assert revisions == list(range(first, store.revision + 1))
        assert _live(watch)
        assert watch.error is None
        await store.create("/w/next", b"{}")
        assert [e.revision for e in watch.take_available()] == [store.revision]
    finally:
        watch.close()
    assert watch.take_available() == []  # a closed watch hands out nothing, not even a pending replay


async def test_an_overflowed_watch_names_its_error_and_keeps_what_it_buffered(store: BaseStore) -> None:
    watch = store.watch("/o/", buffer_size=2)
    try:
        start = store.revision
        for i in range(4):
            await store.create(f"/o/{i}", b"{}")
        assert isinstance(watch.error, WatchOverflow)
        assert not _live(watch)
        assert [e.revision for e in watch.take_available()] == [start + 1, start + 2]
    finally:
        watch.close()
