"""What the API server's watch cache relies on to resume an overflowed store watch without a gap, on every
backend: a watch from a past revision is not ``live`` until its replay has been delivered (so the cache never
claims the store's revision early); ``take_available`` hands the replay over at once on the in-process backends
(etcd replays inside ``next_batch``); and ``error`` names why a watch ended (an overflow, which the cache resumes
from, versus a compaction, which it re-initialises after), as etcd's watch reports a compaction."""

from __future__ import annotations

from kubeplane.store.base import BaseStore
from kubeplane.store.interface import WatchOverflow
from kubeplane.store.watch import StoreWatch


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
