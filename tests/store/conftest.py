"""Backends under test: every store test runs against each of them.

The "etcd" backend runs each test on a fresh 3-member etcd cluster (tests/store/etcd_cluster.py, ~0.7 s to
start on loopback), so it starts at revision 0 like the in-process backends and the same tests apply unchanged.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import cast

import pytest

from kubeplane.store.base import BaseStore
from kubeplane.store.etcd import EtcdOptions, EtcdStore
from kubeplane.store.memory import MemoryStore
from kubeplane.store.sqlite import Durability, SqliteStore

from .etcd_cluster import EtcdCluster

BACKENDS = ["memory", "sqlite", "sqlite-fsync", "etcd"]


class ClusterEtcdStore(EtcdStore):
    """An EtcdStore that owns the throwaway cluster it runs on: closing the store stops the cluster."""

    def __init__(self, cluster: EtcdCluster) -> None:
        # store_root "" lets the backend-neutral tests use keys such as "/a" (the API server's are /registry/...)
        # revision_offset 1: a fresh etcd (revision 1) looks like a fresh store (revision 0)
        super().__init__(EtcdOptions(endpoints=cluster.endpoints, key_prefix="", store_root="", revision_offset=1))
        self.cluster = cluster

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            self.cluster.stop()


def make_store(backend: str, directory: Path) -> BaseStore:
    if backend == "memory":
        return MemoryStore()
    if backend == "etcd":
        # The etcd store has the same surface as BaseStore (watch() returns a StoreWatch subclass,
        # watcher_count, take_buffered) without sharing its in-process machinery; the cast keeps the
        # backend-neutral tests' annotations unchanged.
        cluster = EtcdCluster(Path(tempfile.mkdtemp(prefix="etcd-", dir=directory))).start()
        return cast(BaseStore, ClusterEtcdStore(cluster))
    durability = Durability.FSYNC if backend == "sqlite-fsync" else Durability.CRASH_SAFE
    return SqliteStore(directory / f"{backend}.db", durability=durability)


StoreFactory = Callable[[], BaseStore]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store(backend: str, tmp_path: Path) -> AsyncIterator[BaseStore]:
    s = make_store(backend, tmp_path)
    yield s
    await s.close()
