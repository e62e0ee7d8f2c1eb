"""The Store contract (kubeplane.store.interface), each case on every backend.

Each test names the etcd v3 behaviour it pins, as kube-apiserver's etcd3 storage relies on it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubeplane.store.base import BaseStore
from kubeplane.store.interface import (
    Compacted,
    Conflict,
    EventType,
    FutureRevision,
    KeyExists,
    KeyValue,
    NotFound,
    Store,
    StoreClosed,
    Watch,
    WatchOverflow,
)
from kubeplane.store.memory import MemoryStore
from kubeplane.store.sqlite import SqliteStore

from .validators import collect, validate_all


async def test_fresh_store_is_at_revision_zero_and_first_write_is_one(store: BaseStore) -> None:
    assert store.revision == 0
    assert store.compacted_revision == 0
    kv = await store.create("/a", b"1")
    assert kv == KeyValue("/a", b"1", create_revision=1, mod_revision=1, version=1)
    assert store.revision == 1


async def test_create_update_delete_versions_as_etcd(store: BaseStore) -> None:
    """version counts updates of one incarnation; a re-create starts again at 1 with a new create_revision."""
    await store.create("/k", b"a")
    await store.create("/other", b"x")
    kv2 = await store.update("/k", b"b")
    assert (kv2.create_revision, kv2.mod_revision, kv2.version) == (1, 3, 2)
    deleted = await store.delete("/k")
    assert deleted.revision == 4
    assert deleted.prev_kv == kv2
    assert await store.get("/k") is None
    again = await store.create("/k", b"c")
    assert (again.create_revision, again.mod_revision, again.version) == (5, 5, 1)


async def test_failed_writes_consume_no_revision(store: BaseStore) -> None:
    await store.create("/k", b"a")
    with pytest.raises(KeyExists) as exists:
        await store.create("/k", b"b")
    assert exists.value.current == KeyValue("/k", b"a", 1, 1, 1)
    with pytest.raises(NotFound):
        await store.update("/missing", b"x")
    with pytest.raises(NotFound):
        await store.delete("/missing")
    with pytest.raises(Conflict) as conflict:
        await store.update("/k", b"x", expected_mod_revision=7)
    assert conflict.value.current is not None
    assert conflict.value.current.mod_revision == 1
    with pytest.raises(Conflict):
        await store.delete("/k", expected_mod_revision=2)
    assert store.revision == 1
    assert (await store.create("/next", b"n")).mod_revision == 2


async def test_compare_and_put_succeeds_on_matching_mod_revision(store: BaseStore) -> None:
    kv = await store.create("/k", b"a")
    kv2 = await store.update("/k", b"b", expected_mod_revision=kv.mod_revision)
    with pytest.raises(Conflict):  # the stale writer loses, as GuaranteedUpdate's CAS
        await store.update("/k", b"c", expected_mod_revision=kv.mod_revision)
    await store.delete("/k", expected_mod_revision=kv2.mod_revision)


async def test_range_is_key_ordered_with_limit_continue_and_count(store: BaseStore) -> None:
    """Pagination as kube-apiserver's continue tokens use it: start_key + the first page's revision."""
    for name in ["c", "a", "e", "b", "d"]:
        await store.create(f"/registry/pods/ns/{name}", name.encode())
    await store.create("/registry/podsx/ns/z", b"not under the /registry/pods/ prefix")
    page = await store.range("/registry/pods/", limit=2)
    assert [kv.key[-1] for kv in page.kvs] == ["a", "b"]
    assert (page.more, page.count, page.revision) == (True, 5, 6)
    await store.delete("/registry/pods/ns/c")  # after the first page: the snapshot must not see it
    nxt = await store.range("/registry/pods/", limit=2, start_key=page.kvs[-1].key + "\x00", revision=page.revision)
    assert [kv.key[-1] for kv in nxt.kvs] == ["c", "d"]
    assert (nxt.more, nxt.count) == (True, 3)
    last = await store.range("/registry/pods/", start_key=nxt.kvs[-1].key + "\x00", revision=page.revision)
    assert [kv.key[-1] for kv in last.kvs] == ["e"]
    assert (last.more, last.count) == (False, 1)
    now = await store.range("/registry/pods/")
    assert [kv.key[-1] for kv in now.kvs] == ["a", "b", "d", "e"]
    everything = await store.range("")
    assert len(everything.kvs) == 5


async def test_reads_at_past_revisions(store: BaseStore) -> None:
    await store.create("/k", b"v1")  # 1
    await store.update("/k", b"v2")  # 2
    await store.create("/j", b"j")  # 3
    await store.delete("/k")  # 4
    assert await store.get("/k", revision=0) is None
    assert (await store.get("/k", revision=1)) == KeyValue("/k", b"v1", 1, 1, 1)
    assert (await store.get("/k", revision=3)) == KeyValue("/k", b"v2", 1, 2, 2)
    assert await store.get("/k", revision=4) is None
    at2 = await store.range("/", revision=2)
    assert [(kv.key, kv.value) for kv in at2.kvs] == [("/k", b"v2")]
    assert at2.revision == 2
    with pytest.raises(FutureRevision):
        await store.get("/k", revision=5)


async def test_compaction_discards_history_below_and_keeps_state_at_it(store: BaseStore) -> None:
    await store.create("/k", b"v1")  # 1
    await store.update("/k", b"v2")  # 2
    await store.create("/gone", b"g")  # 3
    await store.delete("/gone")  # 4
    await store.update("/k", b"v3")  # 5
    await store.compact(4)
    assert store.compacted_revision == 4
    with pytest.raises(Compacted) as err:
        await store.get("/k", revision=3)
    assert (err.value.requested, err.value.compacted_revision) == (3, 4)
    assert (await store.get("/k", revision=4)) == KeyValue("/k", b"v2", 1, 2, 2)
    assert await store.get("/gone", revision=4) is None
    with pytest.raises(Compacted):  # etcd: a watch must start after the compacted revision
        store.watch("/", start_revision=4)
    watch = store.watch("/", start_revision=5)
    events = await collect(watch, 1)
    assert [(e.revision, e.prev_kv.value if e.prev_kv else None) for e in events] == [(5, b"v2")]
    with pytest.raises(Compacted):  # compacting again at or below is an error, as etcd's ErrCompacted
        await store.compact(4)
    with pytest.raises(FutureRevision):
        await store.compact(6)
    # a re-created key after its tombstone was compacted away
    await store.create("/gone", b"again")
    assert (await store.get("/gone")) == KeyValue("/gone", b"again", 6, 6, 1)


async def test_watch_delivers_put_and_delete_with_prev_kv(store: BaseStore) -> None:
    watch = store.watch("/registry/pods/")
    await store.create("/registry/pods/ns/a", b"1")
    await store.create("/registry/nodes/n1", b"elsewhere")
    await store.update("/registry/pods/ns/a", b"2")
    await store.delete("/registry/pods/ns/a")
    events = await collect(watch, 3)
    assert [(e.type, e.revision) for e in events] == [
        (EventType.PUT, 1),
        (EventType.PUT, 3),
        (EventType.DELETE, 4),
    ]
    assert events[0].is_create
    assert events[0].prev_kv is None
    assert events[1].prev_kv == KeyValue("/registry/pods/ns/a", b"1", 1, 1, 1)
    assert events[2].kv == KeyValue("/registry/pods/ns/a", b"", 0, 4, 0)
    assert events[2].prev_kv is not None
    assert events[2].prev_kv.value == b"2"
    watch.close()
    assert watch.closed
    assert await watch.next_batch() == []


async def test_watch_from_past_revision_replays_then_follows_without_gap(store: BaseStore) -> None:
    history = []
    w_all = store.watch("")
    for i in range(25):
        await store.create(f"/k/{i % 7}/{i}", str(i).encode())
    for i in range(0, 25, 3):
        await store.update(f"/k/{i % 7}/{i}", b"u")
    history = await collect(w_all, 25 + 9)
    watch = store.watch("/k/3/", start_revision=5)
    await store.create("/k/3/live", b"after registration")
    await store.delete("/k/3/3")
    history += await collect(w_all, 2)
    want = [e for e in history if e.revision >= 5 and e.kv.key.startswith("/k/3/")]
    events = await collect(watch, len(want))
    validate_all(events, history, prefix="/k/3/", start=5)


async def test_watch_iteration_and_future_start(store: BaseStore) -> None:
    """A start revision beyond the current one waits for it; earlier live events are skipped."""
    await store.create("/a", b"1")
    watch = store.watch("/", start_revision=3)
    await store.create("/b", b"2")  # revision 2: before the start
    await store.create("/c", b"3")  # revision 3
    event = await anext(aiter(watch))
    assert (event.key, event.revision) == ("/c", 3)
    watch.close()
    with pytest.raises(StopAsyncIteration):
        await anext(aiter(watch))
    with pytest.raises(ValueError, match="start_revision"):
        store.watch("/", start_revision=0)


async def test_slow_watcher_overflows_without_blocking_writers(store: BaseStore) -> None:
    slow = store.watch("/", buffer_size=5)
    fast = store.watch("/")
    for i in range(12):
        await store.create(f"/k{i:02d}", b"v")  # never waits on the slow watcher
    received = await slow.next_batch()
    assert [e.revision for e in received] == [1, 2, 3, 4, 5]
    with pytest.raises(WatchOverflow) as overflow:
        await slow.next_batch()
    assert overflow.value.resume_revision == 6
    assert len(await collect(fast, 12)) == 12
    # resuming from the named revision yields exactly the missed events
    resumed = store.watch("/", start_revision=overflow.value.resume_revision)
    assert [e.revision for e in await collect(resumed, 7)] == list(range(6, 13))
    assert store.watcher_count == 2


async def test_replay_that_reaches_compacted_history_ends_with_compacted(store: BaseStore) -> None:
    for i in range(10):
        await store.create(f"/k{i}", b"v")
    watch = store.watch("/", start_revision=2)
    await store.compact(8)
    with pytest.raises(Compacted):
        await watch.next_batch()


async def test_close_ends_watchers_with_store_closed_and_refuses_calls(store: BaseStore) -> None:
    watch = store.watch("/")
    await store.create("/a", b"1")
    waiter = asyncio.ensure_future(collect(watch, 2, timeout=5))
    await asyncio.sleep(0.01)
    await store.close()
    with pytest.raises(StoreClosed):
        await waiter
    with pytest.raises(StoreClosed):
        await store.create("/b", b"2")
    with pytest.raises(StoreClosed):
        await store.get("/a")
    with pytest.raises(StoreClosed):
        store.watch("/")


async def test_concurrent_writers_get_distinct_dense_revisions(store: BaseStore) -> None:
    watch = store.watch("")

    async def writer(n: int) -> list[int]:
        revs = []
        for i in range(20):
            revs.append((await store.create(f"/w{n}/{i}", b"v")).mod_revision)
        return revs

    results = await asyncio.gather(*(writer(n) for n in range(8)))
    revisions = sorted(r for revs in results for r in revs)
    assert revisions == list(range(1, 161))
    events = await collect(watch, 160)
    assert [e.revision for e in events] == list(range(1, 161))


async def test_concurrent_compare_and_put_exactly_one_wins(store: BaseStore) -> None:
    kv = await store.create("/k", b"0")
    outcomes = await asyncio.gather(
        *(store.update("/k", str(i).encode(), expected_mod_revision=kv.mod_revision) for i in range(10)),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if isinstance(o, KeyValue)]
    assert len(winners) == 1
    assert all(isinstance(o, Conflict) for o in outcomes if not isinstance(o, KeyValue))
    assert (await store.get("/k")) == winners[0]


def test_backends_implement_the_store_protocol(tmp_path: Path) -> None:
    """mypy checks these assignments structurally; isinstance checks the runtime-checkable protocol."""
    memory: Store = MemoryStore()
    sqlite: Store = SqliteStore(tmp_path / "p.db")
    assert isinstance(memory, Store)
    assert isinstance(sqlite, Store)
    assert isinstance(memory.watch("/"), Watch)
    asyncio.run(sqlite.close())


async def test_take_buffered_returns_live_events_without_waiting(store: BaseStore) -> None:
    watch = store.watch("/")
    assert watch.take_buffered() == []
    await store.create("/a", b"1")
    await store.create("/b", b"2")
    assert [e.revision for e in watch.take_buffered()] == [1, 2]
    assert watch.take_buffered() == []
    replaying = store.watch("/", start_revision=1)
    assert replaying.take_buffered() == []  # history must come through next_batch first
    assert [e.revision for e in await replaying.next_batch()] == [1, 2]


async def test_update_many_is_updates_in_order_stopping_at_the_first_refused(store: BaseStore) -> None:
    """A batch of compare-and-puts is what the same updates one by one give (etcd: one revision per put, each
    event with its prev_kv, in order), cut before the first whose compare fails (kube-apiserver's
    GuaranteedUpdate: a stale mod revision is a conflict, a missing key NotFound)."""
    for key in ("/l/a", "/l/b", "/l/c"):
        await store.create(key, b"0")  # revisions 1, 2, 3
    watch = store.watch("/l/", start_revision=4)
    assert await store.update_many([]) == []
    done = await store.update_many([("/l/a", b"1", 1), ("/l/b", b"1", None), ("/l/a", b"2", 4)])
    assert done == [KeyValue("/l/a", b"1", 1, 4, 2), KeyValue("/l/b", b"1", 2, 5, 2), KeyValue("/l/a", b"2", 1, 6, 3)]
    assert store.revision == 6
    # stale expectation on /l/b: /l/c before it is applied, nothing after; a refused update consumes no revision
    done = await store.update_many([("/l/c", b"1", 3), ("/l/b", b"x", 2), ("/l/a", b"x", 6)])
    assert done == [KeyValue("/l/c", b"1", 3, 7, 2)]
    assert await store.update_many([("/l/missing", b"x", None), ("/l/a", b"x", None)]) == []
    assert store.revision == 7
    assert (await store.get("/l/a")) == KeyValue("/l/a", b"2", 1, 6, 3)
    events = await collect(watch, 4)
    assert [(e.kv.key, e.revision, e.prev_kv.mod_revision if e.prev_kv else None) for e in events] == [
        ("/l/a", 4, 1),
        ("/l/b", 5, 2),
        ("/l/a", 6, 4),
        ("/l/c", 7, 3),
    ]
    watch.close()
