"""Backends under test: every store test runs against each of them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from kubeplane.store.base import BaseStore
from kubeplane.store.memory import MemoryStore
from kubeplane.store.sqlite import Durability, SqliteStore

BACKENDS = ["memory", "sqlite", "sqlite-fsync"]


def make_store(backend: str, directory: Path) -> BaseStore:
    if backend == "memory":
        return MemoryStore()
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
