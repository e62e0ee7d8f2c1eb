"""An in-process API server app with authentication on, over a registry authorized by :class:`fakes.Grants`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry

from kubeplane.apiserver.auth.authorizer import PrivilegedGroups, Union
from kubeplane.apiserver.http.app import APIServerApp
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.store.memory import MemoryStore

from .fakes import Grants

ADMIN = "admin-token"
ALICE = "alice-token"


@dataclass
class Served:
    app: APIServerApp
    registry: Registry
    grants: Grants


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    registry = Registry(store=MemoryStore())
    await registry.start()
    grants = Grants()
    registry.authorizer = Union([PrivilegedGroups(), grants])
    users: dict[str, UserInfo | str] = {ADMIN: "admin", ALICE: UserInfo("alice", uid="a1", groups=("devs",))}
    app = APIServerApp(registry, tokens=users, metrics_registry=CollectorRegistry())
    yield Served(app, registry, grants)
    app.close_watches()
    await registry.stop()
