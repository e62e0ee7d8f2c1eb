"""Fixtures the client package's tests share: a fake clock and an in-memory LocalClient, closed after the test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.local import LocalClient


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def client() -> AsyncIterator[LocalClient]:
    c = await LocalClient.in_memory()
    yield c
    await c.close()
