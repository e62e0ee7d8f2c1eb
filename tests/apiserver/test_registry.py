"""The registry in-process, on a memory store with an injected clock: behaviour the HTTP tests do not reach."""

from __future__ import annotations

import random
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubeplane.apiserver.deletion import DeleteOptions, delete_object
from kubeplane.apiserver.errors import APIError
from kubeplane.apiserver.listing import WatchOptions, open_watch
from kubeplane.apiserver.private_files import write_private
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.server import admin_token, kubeconfig_text
from kubeplane.apiserver.watchcache import CacheWatcher
from kubeplane.store.memory import MemoryStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def registry() -> AsyncIterator[tuple[Registry, Clock]]:
    clock = Clock()
    reg = Registry(store=MemoryStore(), now=clock, rng=random.Random(7))
    await reg.start()
    yield reg, clock
    await reg.stop()


@pytest.mark.parametrize(
    ("policy", "finalizer"), [("Orphan", "orphan"), ("Foreground", "foregroundDeletion")], ids=["orphan", "foreground"]
)
async def test_propagation_policy_adds_the_gc_finalizer(
    registry: tuple[Registry, Clock], policy: str, finalizer: str
) -> None:
    """Upstream: Orphan and Foreground deletes are finished by the garbage collector, via finalizers."""
    reg, _ = registry
    deployments = reg.resource("apps", "deployments")
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    body = {"metadata": {"name": "d"}, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template}}
    await reg.create(deployments, "default", body)
    code, result = await delete_object(reg, deployments, "default", "d", DeleteOptions(propagation_policy=policy))
    assert code == 200
    assert result["metadata"]["finalizers"] == [finalizer]
    assert result["metadata"]["deletionTimestamp"]
    still = await reg.get(deployments, "default", "d")
    assert still["metadata"]["finalizers"] == [finalizer]


async def test_unchanged_update_writes_nothing(registry: tuple[Registry, Clock]) -> None:
    """A no-op update keeps the resourceVersion (kube-apiserver skips the write)."""
    reg, _ = registry
    configmaps = reg.resource("", "configmaps")
    created = await reg.create(configmaps, "default", {"metadata": {"name": "c"}, "data": {"k": "v"}})
    revision = reg.store.revision
    same = await reg.update(configmaps, "default", "c", dict(created))
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert reg.store.revision == revision


async def test_uid_and_creation_timestamp_survive_updates(registry: tuple[Registry, Clock]) -> None:
    reg, clock = registry
    configmaps = reg.resource("", "configmaps")
    created = await reg.create(configmaps, "default", {"metadata": {"name": "c"}})
    clock.now += 100
    body = {"metadata": {"name": "c", "uid": "forged", "creationTimestamp": "2000-01-01T00:00:00Z"}, "data": {"x": "y"}}
    updated = await reg.update(configmaps, "default", "c", body)
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert updated["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]


async def test_generate_name_is_deterministic_with_an_injected_random(registry: tuple[Registry, Clock]) -> None:
    reg, _ = registry
    configmaps = reg.resource("", "configmaps")
    first = await reg.create(configmaps, "default", {"metadata": {"generateName": "x-"}})
    again = Registry(store=MemoryStore(), now=Clock(), rng=random.Random(7))
    await again.start()
    try:
        second = await again.create(configmaps, "default", {"metadata": {"generateName": "x-"}})
    finally:
        await again.stop()
    assert first["metadata"]["name"] == second["metadata"]["name"]


async def test_cluster_scoped_objects_ignore_a_namespace(registry: tuple[Registry, Clock]) -> None:
    reg, _ = registry
    nodes = reg.resource("", "nodes")
    node = await reg.create(nodes, None, {"metadata": {"name": "n1", "namespace": "ignored"}})
    assert "namespace" not in node["metadata"]
    with pytest.raises(APIError) as missing:
        await reg.get(nodes, None, "n2")
    assert missing.value.code == 404


def test_kubeconfig_and_token_are_private_files(tmp_path: Path) -> None:
    token = admin_token(tmp_path)
    assert admin_token(tmp_path) == token
    write_private(tmp_path / "kubeconfig", kubeconfig_text("http://127.0.0.1:1", token).encode())
    for name in ("admin.token", "kubeconfig"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600
    assert f"token: {token}" in (tmp_path / "kubeconfig").read_text()
    assert not list(tmp_path.glob(".*.tmp")), "the temporary file of the atomic write was left behind"


def _drain(watcher: CacheWatcher) -> list[tuple[str, str]]:
    events = [(e.type, e.obj["metadata"]["name"]) for e in watcher.queue]
    watcher.queue.clear()
    return events


async def test_selector_transitions_become_added_and_deleted(registry: tuple[Registry, Clock]) -> None:
    """kube-apiserver's cacheWatcher: an object entering a selector is ADDED, leaving it is DELETED."""
    reg, _ = registry
    configmaps = reg.resource("", "configmaps")
    await reg.create(configmaps, "default", {"metadata": {"name": "c", "labels": {"tier": "db"}}})
    watcher = open_watch(reg, configmaps, "default", WatchOptions(label_selector="tier=web", resource_version="0"))
    assert _drain(watcher) == []

    async def relabel(tier: str) -> None:
        await reg.update(configmaps, "default", "c", {"metadata": {"name": "c", "labels": {"tier": tier}}})
        reg.cache(configmaps).sync()

    await relabel("web")
    await relabel("web-2")
    await relabel("web")
    assert _drain(watcher) == [("ADDED", "c"), ("DELETED", "c"), ("ADDED", "c")]


async def test_a_slow_watcher_is_cut_off_and_the_others_keep_everything(registry: tuple[Registry, Clock]) -> None:
    reg, _ = registry
    configmaps = reg.resource("", "configmaps")
    cache = reg.cache(configmaps)
    slow = CacheWatcher(key_prefix="/registry/configmaps/", matches=lambda _k, _o: True, capacity=3)
    fast = CacheWatcher(key_prefix="/registry/configmaps/", matches=lambda _k, _o: True)
    assert cache.add_watcher(slow, after=reg.store.revision)
    assert cache.add_watcher(fast, after=reg.store.revision)
    for i in range(10):
        await reg.create(configmaps, "default", {"metadata": {"name": f"c{i}"}})
    cache.sync()
    assert slow.closed
    assert slow.overflowed
    assert slow not in cache.watchers
    assert [name for _, name in _drain(fast)] == [f"c{i}" for i in range(10)]
    assert not fast.closed


async def test_cache_key_index_matches_its_objects_through_random_writes(registry: tuple[Registry, Clock]) -> None:
    """WatchCache.items(prefix) is the sorted slice of objects under the prefix, whatever the write order."""
    reg, _ = registry
    configmaps = reg.resource("", "configmaps")
    namespaces = reg.resource("", "namespaces")
    for ns in ("a", "b"):
        await reg.create(namespaces, None, {"metadata": {"name": ns}})
    rng = random.Random(3)
    live: set[tuple[str, str]] = set()
    for _ in range(300):
        ns, name = rng.choice("ab"), f"c{rng.randrange(30)}"
        if (ns, name) in live:
            await delete_object(reg, configmaps, ns, name, DeleteOptions())
            live.discard((ns, name))
        else:
            await reg.create(configmaps, ns, {"metadata": {"name": name}})
            live.add((ns, name))
    cache = reg.cache(configmaps)
    cache.sync()
    for ns in ("a", "b"):
        prefix = configmaps.collection_key(ns)
        assert [k for k, _ in cache.items(prefix)] == sorted(configmaps.key(n, s) for s, n in live if s == ns)
    assert [k for k, _ in cache.items("/registry/configmaps/")] == sorted(cache.objects)


async def test_a_namespace_newer_than_the_cache_is_found_by_a_live_read(
    registry: tuple[Registry, Clock], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An etcd store feeds the cache through a watch, so a create may reach it after the next request: admission
    then reads the store, as upstream's NamespaceLifecycle does, instead of answering 404."""
    reg, _ = registry
    namespaces, pods = reg.resource("", "namespaces"), reg.resource("", "pods")
    await reg.create(namespaces, None, {"metadata": {"name": "fresh"}})
    cached = reg.get_cached

    def lagging(info: object, namespace: str | None, name: str) -> object:
        return None if info is namespaces else cached(info, namespace, name)  # type: ignore[arg-type]

    monkeypatch.setattr(reg, "get_cached", lagging)
    pod = {"metadata": {"name": "p", "namespace": "fresh"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    created = await reg.create(pods, "fresh", pod)
    assert created["metadata"]["namespace"] == "fresh"
    with pytest.raises(APIError) as missing:
        await reg.create(pods, "absent", {**pod, "metadata": {"name": "p", "namespace": "absent"}})
    assert missing.value.code == 404
