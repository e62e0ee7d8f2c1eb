"""Informers over the in-process transport (a real registry on a memory store) with a FakeClock.

Each test names the client-go ``tools/cache`` behaviour it pins. Failure injection wraps LocalClient
(:class:`FlakyClient`): watches that break, refuse to start, or end, and list continue tokens that expire.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.api.resources import ResourceInfo
from kubeplane.apiserver.registry import Registry
from kubeplane.client.cache import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    OWNER_UID_INDEX,
    Backoff,
    IndexConflictError,
    Indexer,
    Lister,
    Reflector,
    namespace_index,
    node_name_index,
    owner_uid_index,
)
from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import ClientError, GoneError
from kubeplane.client.informer import HandlerRegistration, SharedInformer, SharedInformerFactory
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient, LocalWatch
from kubeplane.store.memory import MemoryStore

NS = "default"


# -- helpers ---------------------------------------------------------------------------------------------


class BreakableWatch:
    """A LocalWatch the test can break (the next read raises ClientError) or end (StopAsyncIteration)."""

    def __init__(self, inner: LocalWatch, gone_after: int | None = None) -> None:
        self.inner, self.broken, self.gone_after = inner, False, gone_after

    def __aiter__(self) -> BreakableWatch:
        return self

    async def __anext__(self) -> Obj:
        if self.broken:
            raise ClientError("connection reset by peer")
        if self.gone_after is not None:
            if self.gone_after == 0:
                raise GoneError({"code": 410, "reason": "Expired", "message": "too old resource version"})
            self.gone_after -= 1
        try:
            return await self.inner.__anext__()
        except StopAsyncIteration:
            if self.broken:
                raise ClientError("connection reset by peer") from None
            raise

    async def close(self) -> None:
        await self.inner.close()


class FlakyClient(LocalClient):
    """LocalClient recording list/watch calls, with switches to make them fail."""

    def setup(self) -> None:
        self.list_calls: list[tuple[int, str]] = []
        self.watch_calls: list[str] = []
        self.watch_errors: list[str] = []
        self.streams: list[BreakableWatch] = []
        self.fail_watches = False
        self.fail_lists = False
        self.expire_continue = False
        self.gone_after: int | None = None

    async def list(self, resource: ResourceInfo, **kwargs: Any) -> Obj:
        self.list_calls.append((int(kwargs.get("limit") or 0), str(kwargs.get("continue_token") or "")))
        if self.fail_lists:
            raise ClientError("connection refused")
        if self.expire_continue and kwargs.get("continue_token"):
            raise GoneError({"code": 410, "reason": "Expired", "message": "continue token expired"})
        return await super().list(resource, **kwargs)

    async def watch(self, resource: ResourceInfo, **kwargs: Any) -> BreakableWatch:  # type: ignore[override]
        self.watch_calls.append(str(kwargs.get("resource_version")))
        if self.fail_watches:
            self.watch_errors.append("refused")
            raise ClientError("connection refused")
        try:
            inner = await super().watch(resource, **kwargs)
        except GoneError:
            self.watch_errors.append("gone")
            raise
        stream = BreakableWatch(inner, self.gone_after)
        self.streams.append(stream)
        return stream

    async def break_streams(self, *, error: bool = True) -> None:
        for stream in self.streams:
            stream.broken = error
            await stream.inner.close()
        self.streams.clear()


@pytest.fixture
async def client() -> AsyncIterator[FlakyClient]:
    registry = Registry(store=MemoryStore())
    await registry.start()
    c = FlakyClient(registry, owns_registry=True)
    c.setup()
    yield c
    await c.close()


class Recorder:
    """A handler that logs every notification and mirrors the informer's contents."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, int, Obj | None, Obj]] = []  # (kind, key, rv, old, new)
        self.mirror: dict[str, Obj] = {}

    @staticmethod
    def key(obj: Obj) -> str:
        meta = obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])

    def _log(self, kind: str, old: Obj | None, new: Obj) -> None:
        self.events.append((kind, self.key(new), int(new["metadata"]["resourceVersion"]), old, new))

    def on_add(self, obj: Obj) -> None:
        self._log("add", None, obj)
        self.mirror[self.key(obj)] = obj

    def on_update(self, old: Obj, new: Obj) -> None:
        self._log("update", old, new)
        self.mirror[self.key(new)] = new

    def on_delete(self, obj: Obj) -> None:
        self._log("delete", None, obj)
        self.mirror.pop(self.key(obj), None)

    def register(self, informer: SharedInformer, **kwargs: Any) -> HandlerRegistration:
        return informer.add_event_handler(
            on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete, **kwargs
        )

    def kinds(self, key: str) -> list[tuple[str, int]]:
        return [(kind, rv) for kind, k, rv, _, _ in self.events if k == key]

    def assert_ordered(self) -> None:
        """Per object: adds/updates in strictly increasing resourceVersion, a delete never older than the last
        version seen, and add only when absent, update/delete only when present."""
        last: dict[str, int] = {}
        present: set[str] = set()
        for kind, key, rv, _, _ in self.events:
            if kind == "delete":
                assert key in present, (key, kind)
                assert rv >= last[key], (key, kind, rv, last[key])
                present.discard(key)
            else:
                assert rv > last.get(key, 0), (key, kind, rv, last.get(key))
                assert (key in present) == (kind == "update"), (key, kind)
                present.add(key)
            last[key] = rv


async def eventually(predicate: Callable[[], bool], *, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "condition not reached"
        await asyncio.sleep(0.001)


async def advance_until(clock: FakeClock, predicate: Callable[[], bool], *, step: float = 0.5) -> None:
    """Advance fake time in steps (letting in-process I/O finish between them) until ``predicate``."""
    for _ in range(400):
        if predicate():
            return
        await clock.advance(step)
        await asyncio.sleep(0.002)
    raise AssertionError("condition not reached within 200 fake seconds")


def cm(name: str, namespace: str = NS, **labels: str) -> Obj:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": {"v": "0"}}


def rvs(objs: list[Obj]) -> dict[str, str]:
    return {Recorder.key(o): o["metadata"]["resourceVersion"] for o in objs}


async def fresh(client: LocalClient, resource: str, **kwargs: Any) -> dict[str, str]:
    return rvs((await client.list(client.resource(resource), **kwargs))["items"])


def informer(client: LocalClient, resource: str = "configmaps", **kwargs: Any) -> SharedInformer:
    """These tests pin the list-then-watch path (upstream's reflector tests); WatchList is tested on its own."""
    kwargs.setdefault("watch_list", False)
    return SharedInformer(client, resource, clock=kwargs.pop("clock", FakeClock()), rng=random.Random(1), **kwargs)


# -- list, watch, handlers -------------------------------------------------------------------------------


async def test_initial_list_then_live_events_reach_cache_and_handlers_in_order(client: FlakyClient) -> None:
    """reflector ListAndWatch: a paged list (limit 500) then a watch from the list's resourceVersion; handlers
    get add/update/delete in the order the cache applied them, with ``old`` the previously cached object."""
    res = client.resource("configmaps")
    for name in ("a", "b", "c"):
        await client.create(res, cm(name), namespace=NS)
    inf = informer(client)
    rec = Recorder()
    rec.register(inf)
    inf.start()
    assert await inf.wait_for_sync()
    assert client.list_calls[0] == (500, "")
    assert client.watch_calls == [inf.last_sync_resource_version]
    assert [(k, key) for k, key, *_ in rec.events] == [("add", "default/a"), ("add", "default/b"), ("add", "default/c")]

    before = inf.indexer.get("default/b")
    await client.patch(res, "b", {"data": {"v": "1"}}, namespace=NS)
    await client.create(res, cm("d"), namespace=NS)
    await client.delete(res, "a", namespace=NS)
    await eventually(lambda: len(rec.events) == 6)
    assert [(k, key) for k, key, *_ in rec.events[3:]] == [
        ("update", "default/b"),
        ("add", "default/d"),
        ("delete", "default/a"),
    ]
    assert rec.events[3][3] is before
    assert rvs(inf.indexer.list()) == await fresh(client, "configmaps") == rvs(list(rec.mirror.values()))
    assert inf.last_sync_resource_version == str(rec.events[-1][2])
    rec.assert_ordered()
    await inf.stop()


async def test_transform_shapes_what_the_cache_keeps_and_handlers_get(client: FlakyClient) -> None:
    """sharedIndexInformer.SetTransform: every listed and watched object is transformed before the indexer
    stores it and before handlers see it (adds, updates and deletes alike); ordering by resourceVersion holds."""
    res = client.resource("configmaps")
    created = await client.create(res, cm("a"), namespace=NS)

    def keep_meta(obj: Obj) -> Obj:
        meta = obj["metadata"]
        return {"metadata": {k: meta[k] for k in ("name", "namespace", "resourceVersion")}, "v": obj["data"]["v"]}

    inf = informer(client, transform=keep_meta)
    rec = Recorder()
    rec.register(inf)
    inf.start()
    assert await inf.wait_for_sync()
    await client.patch(res, "a", {"data": {"v": "1"}}, namespace=NS)
    await client.create(res, cm("b"), namespace=NS)
    await client.delete(res, "b", namespace=NS)
    await eventually(lambda: len(rec.events) == 4)
    assert [(k, key) for k, key, *_ in rec.events] == [
        ("add", "default/a"), ("update", "default/a"), ("add", "default/b"), ("delete", "default/b"),
    ]  # fmt: skip
    assert rec.events[0][4] == keep_meta(created)
    assert rec.events[1][3] is rec.events[0][4]  # the old object is the transformed one the cache kept
    assert all(set(new) == {"metadata", "v"} for *_, new in rec.events)
    cached = inf.indexer.get("default/a")
    assert cached == keep_meta(await client.get(res, "a", namespace=NS))
    assert cached is not None
    assert cached["v"] == "1"
    assert inf.indexer.get("default/b") is None
    rec.assert_ordered()
    await inf.stop()


async def test_has_synced_waits_for_handlers_registered_at_start(client: FlakyClient) -> None:
    """HasSynced: true only after the initial list is in the cache AND the start-time handlers returned from
    its notifications (upstream's per-registration HasSynced); async handlers are awaited one at a time."""
    res = client.resource("configmaps")
    for name in ("a", "b"):
        await client.create(res, cm(name), namespace=NS)
    gate = asyncio.Event()
    seen: list[str] = []

    async def slow_add(obj: Obj) -> None:
        seen.append(obj["metadata"]["name"])
        await gate.wait()

    inf = informer(client)
    registration = inf.add_event_handler(on_add=slow_add)
    inf.start()
    await eventually(lambda: len(inf.indexer) == 2 and seen == ["a"])
    assert not inf.has_synced()
    assert not registration.has_synced()
    gate.set()
    assert await asyncio.wait_for(inf.wait_for_sync(), 5)
    assert seen == ["a", "b"]
    assert registration.has_synced()
    await inf.stop()


async def test_late_handler_gets_synthetic_adds_then_live_events(client: FlakyClient) -> None:
    """AddEventHandler after start: an add for every cached object first, then live changes; the informer's
    HasSynced does not depend on it, the registration's does."""
    res = client.resource("configmaps")
    await client.create(res, cm("a"), namespace=NS)
    inf = informer(client)
    inf.start()
    assert await inf.wait_for_sync()
    rec = Recorder()
    registration = rec.register(inf)
    assert inf.has_synced()
    await client.create(res, cm("b"), namespace=NS)
    await eventually(lambda: len(rec.events) == 2)
    assert [(k, key) for k, key, *_ in rec.events] == [("add", "default/a"), ("add", "default/b")]
    assert registration.has_synced()
    await inf.remove_event_handler(registration)
    await client.create(res, cm("c"), namespace=NS)
    await eventually(lambda: "default/c" in inf.indexer)
    await asyncio.sleep(0.01)
    assert len(rec.events) == 2
    await inf.stop()
    with pytest.raises(RuntimeError, match="stopped"):
        rec.register(inf)


async def test_failing_handler_is_logged_and_keeps_receiving(client: FlakyClient) -> None:
    """processorListener: a handler's panic is handled (HandleCrash) and later notifications still arrive."""
    res = client.resource("configmaps")
    seen: list[str] = []

    def flaky(obj: Obj) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "a":
            raise RuntimeError("boom")

    inf = informer(client)
    inf.add_event_handler(on_add=flaky)
    inf.start()
    assert await inf.wait_for_sync()
    await client.create(res, cm("a"), namespace=NS)
    await client.create(res, cm("b"), namespace=NS)
    await eventually(lambda: seen == ["a", "b"])
    await inf.stop()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"label_selector": "app=web"}, {"default/in"}),
        ({"namespace": "other"}, {"other/x"}),
        ({"field_selector": "metadata.name=plain"}, {"default/plain"}),
    ],
    ids=["label-selector", "namespace", "field-selector"],
)
async def test_selectors_scope_the_list_and_the_watch(
    client: FlakyClient, kwargs: dict[str, str], expected: set[str]
) -> None:
    """ListWatch with tweakListOptions: the informer holds exactly what the selectors/namespace select."""
    res = client.resource("configmaps")
    await client.create(client.resource("namespaces"), {"metadata": {"name": "other"}})
    await client.create(res, cm("in", app="web"), namespace=NS)
    await client.create(res, cm("plain"), namespace=NS)
    await client.create(res, cm("x", "other"), namespace="other")
    inf = informer(client, **kwargs)
    inf.start()
    assert await inf.wait_for_sync()
    assert set(inf.indexer.list_keys()) == expected
    await inf.stop()


async def test_label_selector_transitions_become_adds_and_deletes(client: FlakyClient) -> None:
    """Objects relabelled into or out of a selected informer are added and deleted (the server's filtered
    watch turns them into ADDED and DELETED)."""
    res = client.resource("configmaps")
    await client.create(res, cm("a", app="web"), namespace=NS)
    await client.create(res, cm("b"), namespace=NS)
    inf = informer(client, label_selector="app=web")
    rec = Recorder()
    rec.register(inf)
    inf.start()
    assert await inf.wait_for_sync()
    await client.patch(res, "a", {"metadata": {"labels": {"app": "db"}}}, namespace=NS)
    await client.patch(res, "b", {"metadata": {"labels": {"app": "web"}}}, namespace=NS)
    await eventually(lambda: len(rec.events) == 3)
    assert [(k, key) for k, key, *_ in rec.events] == [
        ("add", "default/a"),
        ("delete", "default/a"),
        ("add", "default/b"),
    ]
    assert set(inf.indexer.list_keys()) == {"default/b"}
    await inf.stop()


# -- indexer and lister ----------------------------------------------------------------------------------


def pod(name: str, *, namespace: str = NS, node: str = "", owners: tuple[str, ...] = (), rv: int = 1) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace, "resourceVersion": str(rv), "labels": {"app": name[0]}}
    if owners:
        meta["ownerReferences"] = [{"uid": uid, "kind": "ReplicaSet", "name": uid} for uid in owners]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


@pytest.mark.parametrize(
    ("func", "obj", "values"),
    [
        (namespace_index, pod("p", namespace="ns1"), ["ns1"]),
        (namespace_index, {"metadata": {"name": "n1"}}, [""]),
        (node_name_index, pod("p", node="n1"), ["n1"]),
        (node_name_index, pod("p"), []),
        (owner_uid_index, pod("p", owners=("u1", "u2")), ["u1", "u2"]),
        (owner_uid_index, pod("p"), []),
    ],
    ids=["namespace", "cluster-scoped-namespace", "node-name", "unbound-pod", "owner-uids", "no-owners"],
)
def test_index_functions(func: Callable[[Obj], list[str]], obj: Obj, values: list[str]) -> None:
    """MetaNamespaceIndexFunc (cluster-scoped objects under ""), the DaemonSet controller's nodeName index
    (unbound pods in no bucket), and an index over every ownerReferences[].uid."""
    assert func(obj) == values


def test_indexer_keeps_indices_exact_across_updates_and_deletes() -> None:
    """threadSafeMap.updateIndices: an update moves the key out of its old buckets; a delete empties them."""
    indexer = Indexer(
        indexers={
            NAMESPACE_INDEX: namespace_index,
            NODE_NAME_INDEX: node_name_index,
            OWNER_UID_INDEX: owner_uid_index,
        }
    )
    indexer.add(pod("a", node="n1", owners=("rs1",)))
    indexer.add(pod("b", node="n1", namespace="ns2"))
    indexer.add(pod("c"))
    assert [p["metadata"]["name"] for p in indexer.by_index(NODE_NAME_INDEX, "n1")] == ["a", "b"]
    indexer.update(pod("a", node="n2", owners=("rs2",), rv=2))
    assert indexer.index_keys(NODE_NAME_INDEX, "n1") == ["ns2/b"]
    assert indexer.index_keys(NODE_NAME_INDEX, "n2") == ["default/a"]
    assert indexer.by_index(OWNER_UID_INDEX, "rs1") == []
    assert indexer.index_keys(OWNER_UID_INDEX, "rs2") == ["default/a"]
    assert indexer.delete("ns2/b") is not None
    assert indexer.delete("ns2/b") is None
    assert sorted(indexer.list_index_func_values(NAMESPACE_INDEX)) == ["default"]
    assert indexer.list_keys() == ["default/a", "default/c"]
    assert len(indexer) == 2
    # a custom index added later covers the objects already stored
    indexer.add_indexers({"app": lambda o: [o["metadata"]["labels"]["app"]]})
    assert indexer.index_keys("app", "c") == ["default/c"]
    moved = pod("c", rv=2)
    moved["metadata"]["labels"]["app"] = "d"  # an update moves the key out of the later index's old bucket too
    indexer.update(moved)
    assert indexer.index_keys("app", "c") == []
    assert indexer.index_keys("app", "d") == ["default/c"]
    with pytest.raises(IndexConflictError):
        indexer.add_indexers({"app": lambda o: []})
    with pytest.raises(KeyError, match="does not exist"):
        indexer.by_index("missing", "x")
    indexer.replace([pod("z", node="n9")])
    assert indexer.list_keys() == ["default/z"]
    assert indexer.index_keys(NODE_NAME_INDEX, "n2") == []


def test_lister_filters_by_namespace_and_labels() -> None:
    """Listers: List(selector) / Pods(namespace).List(selector) / Get(name) over the indexer."""
    indexer = Indexer(indexers={NAMESPACE_INDEX: namespace_index})
    for obj in (pod("a1"), pod("b1"), pod("a2", namespace="ns2")):
        indexer.add(obj)
    lister = Lister(indexer)
    assert len(lister.list()) == 3
    assert [p["metadata"]["name"] for p in lister.list("default")] == ["a1", "b1"]
    assert [p["metadata"]["name"] for p in lister.list(label_selector="app=a")] == ["a1", "a2"]
    assert [p["metadata"]["name"] for p in lister.list("ns2", label_selector="app!=a")] == []
    assert lister.get("ns2", "a2") is indexer.get("ns2/a2")
    assert lister.get(NS, "zz") is None
    # without a namespace index the lister filters
    plain = Lister(Indexer())
    plain.indexer.add(pod("q", namespace="ns3"))
    assert [p["metadata"]["name"] for p in plain.list("ns3")] == ["q"]


async def test_informer_indexers_follow_live_pods(client: FlakyClient) -> None:
    """Informer indexers (namespace, spec.nodeName for pods, owner UID, custom) are kept by watch events;
    AddIndexers after start is refused, as upstream."""
    res = client.resource("pods")
    body = {"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    await client.create(res, body, namespace=NS)
    inf = informer(client, "pods", indexers={"image": lambda o: [c["image"] for c in o["spec"]["containers"]]})
    inf.start()
    assert await inf.wait_for_sync()
    assert inf.indexer.index_keys("image", "nginx") == ["default/p1"]
    assert inf.indexer.index_keys(NODE_NAME_INDEX, "n1") == []
    await client.create(
        res, {"apiVersion": "v1", "kind": "Binding", "target": {"kind": "Node", "name": "n1"}},
        namespace=NS, subresource="binding", name="p1",
    )  # fmt: skip
    await eventually(lambda: inf.indexer.index_keys(NODE_NAME_INDEX, "n1") == ["default/p1"])
    assert inf.lister().list(NS)[0]["spec"]["nodeName"] == "n1"
    with pytest.raises(RuntimeError, match="already started"):
        inf.add_indexers({"late": lambda o: []})
    await inf.stop()


# -- resync ----------------------------------------------------------------------------------------------


async def test_resync_redelivers_cached_objects_as_updates_with_old_is_new(client: FlakyClient) -> None:
    """Resync (resyncPeriod, shouldResync, determineNextResync): every cached object is re-delivered as
    OnUpdate(obj, obj) to handlers whose own period elapsed; a period of 0 never resyncs."""
    res = client.resource("configmaps")
    for name in ("a", "b"):
        await client.create(res, cm(name), namespace=NS)
    clock = FakeClock()
    inf = informer(client, clock=clock, resync_period=30.0)
    every30, every60, never = Recorder(), Recorder(), Recorder()
    every30.register(inf)
    every60.register(inf, resync_period=60.0)
    never.register(inf, resync_period=0)
    inf.start()
    assert await inf.wait_for_sync()
    await clock.advance(29.0)
    assert [len(r.events) for r in (every30, every60, never)] == [2, 2, 2]
    await clock.advance(1.0)
    await eventually(lambda: len(every30.events) == 4)
    assert all(kind == "update" and old is new for kind, _, _, old, new in every30.events[2:])
    assert len(every60.events) == 2
    await clock.advance(30.0)
    await eventually(lambda: len(every30.events) == 6 and len(every60.events) == 4)
    assert len(never.events) == 2
    await inf.stop()


# -- reflector: backoff, re-watch, re-list ---------------------------------------------------------------


class FixedRandom(random.Random):
    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


@pytest.mark.parametrize(
    ("jitter_draw", "delays"),
    [
        (0.0, [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]),
        (0.5, [1.2, 2.4, 4.8, 9.6, 19.2, 38.4, 45.0, 45.0]),
        (0.999, [1.5992, 3.1984, 6.3968, 12.7936, 25.5872, 51.1744, 59.97, 59.97]),
    ],
    ids=["no-jitter", "half-jitter", "max-jitter"],
)
def test_backoff_is_upstreams_exponential_backoff_manager(jitter_draw: float, delays: list[float]) -> None:
    """NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0): doubling from 0.8 s, capped at 30 s before
    jitter, each delay plus rand * 1.0 of itself."""
    backoff = Backoff(clock=FakeClock(), rng=FixedRandom(jitter_draw))
    assert [backoff.next_delay() for _ in delays] == pytest.approx(delays)


async def test_backoff_resets_after_two_healthy_minutes() -> None:
    """exponentialBackoffManagerImpl: more than backoffResetDuration (2 min) since the last backoff resets it."""
    clock = FakeClock()
    backoff = Backoff(clock=clock, rng=FixedRandom(0.0))
    assert [backoff.next_delay(), backoff.next_delay()] == [0.8, 1.6]
    await clock.advance(119.0)
    assert backoff.next_delay() == 3.2
    await clock.advance(121.0)
    assert backoff.next_delay() == 0.8


async def test_broken_stream_rewatches_from_last_resource_version_after_backoff(client: FlakyClient) -> None:
    """watch errors: a broken connection is retried from LastSyncResourceVersion after a backoff (never at
    once), and a refused watch keeps backing off; no re-list is needed."""
    res = client.resource("configmaps")
    clock = FakeClock()
    inf = informer(client, clock=clock)
    rec = Recorder()
    rec.register(inf)
    inf.start()
    assert await inf.wait_for_sync()
    await client.create(res, cm("a"), namespace=NS)
    await eventually(lambda: len(rec.events) == 1)
    last = inf.last_sync_resource_version
    client.fail_watches = True
    await client.break_streams()
    await asyncio.sleep(0.01)
    assert client.watch_calls == [client.watch_calls[0]]  # nothing before the backoff elapses
    await advance_until(clock, lambda: len(client.watch_errors) >= 2)
    await client.create(res, cm("b"), namespace=NS)
    client.fail_watches = False
    await advance_until(clock, lambda: len(rec.events) == 2)
    assert client.watch_calls[1:] == [last] * len(client.watch_calls[1:])
    assert inf.reflector.lists == 1
    assert rvs(inf.indexer.list()) == await fresh(client, "configmaps")
    await inf.stop()


async def test_ended_watch_reopens_at_once_but_a_very_short_one_backs_off(client: FlakyClient) -> None:
    """watchHandler: a watch the server closes after delivering events is re-opened immediately; one that
    closes within a second without any event is a "very short watch" and waits for the backoff."""
    res = client.resource("configmaps")
    clock = FakeClock()
    inf = informer(client, clock=clock)
    inf.start()
    assert await inf.wait_for_sync()
    await client.create(res, cm("a"), namespace=NS)
    await eventually(lambda: "default/a" in inf.indexer)
    await client.break_streams(error=False)
    await eventually(lambda: len(client.watch_calls) == 2)
    await client.break_streams(error=False)
    await asyncio.sleep(0.01)
    assert len(client.watch_calls) == 2
    await advance_until(clock, lambda: len(client.watch_calls) == 3)
    await inf.stop()


async def test_relist_after_compaction_reconciles_cache_and_handlers(client: FlakyClient) -> None:
    """Reflector 410 handling: the re-watch from the last resourceVersion is Gone after compaction, so the
    reflector re-lists; the cache then equals a fresh list, handlers saw each object's versions in increasing
    resourceVersion order, objects gone meanwhile were deleted with their last known state
    (DeletedFinalStateUnknown), and a re-created object arrives as an update (DeltaFIFO.Replace)."""
    res = client.resource("configmaps")
    for i in range(20):
        await client.create(res, cm(f"cm-{i:02d}"), namespace=NS)
    clock = FakeClock()
    inf = informer(client, clock=clock)
    rec = Recorder()
    rec.register(inf)
    inf.start()
    assert await inf.wait_for_sync()
    await client.patch(res, "cm-00", {"data": {"v": "live"}}, namespace=NS)
    await eventually(lambda: len(rec.events) == 21)
    known = {key: int(obj["metadata"]["resourceVersion"]) for key, obj in inf.indexer.items()}
    old_uid = inf.indexer.get("default/cm-11")["metadata"]["uid"]  # type: ignore[index]

    client.fail_watches = True
    await client.break_streams()
    for i in range(1, 6):
        await client.patch(res, f"cm-{i:02d}", {"data": {"v": "offline"}}, namespace=NS)
    for i in range(6, 11):
        await client.delete(res, f"cm-{i:02d}", namespace=NS)
    await client.delete(res, "cm-11", namespace=NS)
    await client.create(res, cm("cm-11"), namespace=NS)
    await client.patch(res, "cm-12", {"data": {"v": "1"}}, namespace=NS)
    await client.patch(res, "cm-12", {"data": {"v": "2"}}, namespace=NS)
    for i in range(20, 25):
        await client.create(res, cm(f"cm-{i:02d}"), namespace=NS)
    store = client.registry.store
    await store.compact(store.revision)
    client.fail_watches = False

    await advance_until(clock, lambda: inf.reflector.lists == 2)
    assert "gone" in client.watch_errors
    expected = await fresh(client, "configmaps")
    await eventually(lambda: rvs(list(rec.mirror.values())) == expected)
    assert rvs(inf.indexer.list()) == expected
    rec.assert_ordered()
    for i in range(6, 11):
        key = f"default/cm-{i:02d}"
        assert rec.kinds(key)[-1] == ("delete", known[key])  # the last known state
    recreated = rec.events[[k for _, k, *_ in rec.events].index("default/cm-11", 21)]
    kind, _, _, replaced, replacement = recreated
    assert kind == "update"
    assert replaced is not None
    assert replaced["metadata"]["uid"] == old_uid
    assert replacement["metadata"]["uid"] != old_uid
    assert [kind for kind, _ in rec.kinds("default/cm-12")] == ["add", "update"]
    assert [kind for kind, _ in rec.kinds("default/cm-20")] == ["add"]

    # and the informer watches again from the new list's resourceVersion
    await client.create(res, cm("after"), namespace=NS)
    await eventually(lambda: "default/after" in rec.mirror)
    await inf.stop()


async def test_gone_in_the_stream_relists(client: FlakyClient) -> None:
    """A 410 ERROR event inside the watch stream (how kube-apiserver reports a too-old resourceVersion to an
    open watch) makes the reflector re-list after a backoff."""
    res = client.resource("configmaps")
    clock = FakeClock()
    client.gone_after = 1
    inf = informer(client, clock=clock)
    inf.start()
    assert await inf.wait_for_sync()
    client.gone_after = None
    await client.create(res, cm("a"), namespace=NS)
    await advance_until(clock, lambda: inf.reflector.lists == 2)
    await eventually(
        lambda: rvs(inf.indexer.list()) == {"default/a": inf.indexer.list()[0]["metadata"]["resourceVersion"]}
    )
    await inf.stop()


async def test_list_failure_backs_off_and_wait_for_sync_returns_false_on_stop(client: FlakyClient) -> None:
    """WaitForCacheSync returns false when the informer stops before its first list succeeded; failed lists
    are retried after backoffs."""
    clock = FakeClock()
    client.fail_lists = True
    inf = informer(client, clock=clock)
    inf.start()
    waiter = asyncio.create_task(inf.wait_for_sync())
    await advance_until(clock, lambda: len(client.list_calls) >= 3)
    assert not inf.has_synced()
    await inf.stop()
    assert await waiter is False


async def test_paged_list_follows_continue_and_falls_back_when_it_expires(client: FlakyClient) -> None:
    """pager.List: pages chained by continue tokens; an expired token (410) falls back to one full list."""
    res = client.resource("configmaps")
    for i in range(5):
        await client.create(res, cm(f"p{i}"), namespace=NS)

    class Store:
        def __init__(self) -> None:
            self.items: list[Obj] = []
            self.rv = ""

        def replace(self, items: list[Obj], resource_version: str) -> None:
            self.items, self.rv = items, resource_version

        def apply(self, event_type: str, obj: Obj) -> None:
            pass

    for expire in (False, True):
        client.list_calls.clear()
        client.expire_continue = expire
        store = Store()
        reflector = Reflector(
            client=client, resource=res, store=store, clock=FakeClock(), rng=random.Random(1), page_size=2
        )
        await reflector._list()
        limits = [limit for limit, _ in client.list_calls]
        assert limits == ([2, 2, 0] if expire else [2, 2, 2])
        assert [bool(token) for _, token in client.list_calls] == [False, True, not expire]
        assert [o["metadata"]["name"] for o in store.items] == [f"p{i}" for i in range(5)]
        assert store.rv == reflector.last_sync_resource_version != ""


class ScriptedWatch:
    def __init__(self, events: list[Obj]) -> None:
        self.events = list(events)

    def __aiter__(self) -> ScriptedWatch:
        return self

    async def __anext__(self) -> Obj:
        if self.events:
            return self.events.pop(0)
        await asyncio.Event().wait()  # then stays open and quiet
        raise StopAsyncIteration

    async def close(self) -> None:
        pass


async def test_stale_events_are_dropped_and_bookmarks_advance_the_resource_version(client: FlakyClient) -> None:
    """No older version after a newer one: watch events whose resourceVersion is not newer than the cached
    object's are dropped; BOOKMARK events carry no object change but advance LastSyncResourceVersion."""

    def obj(name: str, rv: int) -> Obj:
        return {"metadata": {"name": name, "namespace": NS, "resourceVersion": str(rv)}}

    script = [
        {"type": "MODIFIED", "object": obj("a", 5)},  # older than the listed rv 10
        {"type": "MODIFIED", "object": obj("a", 12)},
        {"type": "MODIFIED", "object": obj("a", 12)},  # a duplicate
        {"type": "DELETED", "object": obj("a", 11)},  # older than the cached 12
        {"type": "DELETED", "object": obj("ghost", 13)},  # never cached
        {"type": "BOOKMARK", "object": obj("", 20)},
    ]

    async def scripted_list(resource: ResourceInfo, **kwargs: Any) -> Obj:
        return {"metadata": {"resourceVersion": "10"}, "items": [obj("a", 10)]}

    async def scripted_watch(resource: ResourceInfo, **kwargs: Any) -> ScriptedWatch:
        assert kwargs["resource_version"] == "10"
        assert kwargs["allow_bookmarks"] is True
        return ScriptedWatch(script)

    client.list = scripted_list  # type: ignore[method-assign]
    client.watch = scripted_watch  # type: ignore[method-assign,assignment]
    inf = informer(client)
    rec = Recorder()
    rec.register(inf)
    inf.start()
    assert await inf.wait_for_sync()
    await eventually(lambda: inf.last_sync_resource_version == "20")
    await eventually(lambda: len(rec.events) == 2)
    await asyncio.sleep(0.01)
    assert [(kind, rv) for kind, _, rv, _, _ in rec.events] == [("add", 10), ("update", 12)]
    assert inf.stale_events_dropped == 3
    await inf.stop()


# -- concurrency and the factory -------------------------------------------------------------------------


async def test_concurrent_writers_and_two_informers_converge(client: FlakyClient) -> None:
    """4 writers doing 1,000 creates/updates/deletes while 2 informers watch: both caches and both handler
    mirrors equal a fresh list, and every object's versions arrived in increasing order."""
    res = client.resource("configmaps")
    informers = [informer(client), informer(client)]
    recorders = [Recorder(), Recorder()]
    for inf, rec in zip(informers, recorders, strict=True):
        rec.register(inf)
        inf.start()
    assert all([await inf.wait_for_sync() for inf in informers])

    async def writer(w: int) -> None:
        rng = random.Random(w)
        alive: set[str] = set()
        for _ in range(250):
            name = f"w{w}-{rng.randrange(20)}"
            if name not in alive:
                await client.create(res, cm(name), namespace=NS)
                alive.add(name)
            elif rng.random() < 0.2:
                await client.delete(res, name, namespace=NS)
                alive.discard(name)
            else:
                await client.patch(res, name, {"data": {"v": str(rng.random())}}, namespace=NS)
            await asyncio.sleep(0)

    await asyncio.gather(*(writer(w) for w in range(4)))
    expected = await fresh(client, "configmaps")
    for inf, rec in zip(informers, recorders, strict=True):
        await eventually(lambda inf=inf, rec=rec: rvs(list(rec.mirror.values())) == expected)  # type: ignore[misc]
        assert rvs(inf.indexer.list()) == expected
        assert inf.last_sync_resource_version == str(client.registry.store.revision)
        rec.assert_ordered()
    assert [e[:3] for e in recorders[0].events] == [e[:3] for e in recorders[1].events]
    for inf in informers:
        await inf.stop()


async def test_factory_shares_one_informer_per_resource_and_selectors(client: FlakyClient) -> None:
    """SharedInformerFactory.InformerFor: one informer per type (here per resource + selectors), the factory
    namespace for namespaced resources only, Start starts them, WaitForCacheSync reports each."""
    res = client.resource("configmaps")
    await client.create(res, cm("a", app="web"), namespace=NS)
    factory = SharedInformerFactory(client, clock=FakeClock(), rng=random.Random(1), namespace=NS)
    configmaps = factory.informer_for("configmaps")
    assert factory.informer_for("cm") is configmaps
    assert factory.informer_for(res) is configmaps
    web = factory.informer_for("configmaps", label_selector="app=web")
    assert web is not configmaps
    assert configmaps.namespace == NS
    nodes = factory.informer_for("nodes")
    assert nodes.namespace is None
    factory.start()
    assert await factory.wait_for_cache_sync() == {
        "configmaps default": True,
        "configmaps default app=web": True,
        "nodes": True,
    }
    assert [o["metadata"]["name"] for o in factory.lister_for("configmaps").list(NS)] == ["a"]
    await factory.stop()
