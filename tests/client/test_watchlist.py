"""Informers sync by WatchList when the server supports it, and fall back to list+watch when it does not."""

from __future__ import annotations

import random
from typing import Any

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import InvalidError
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient


class CountingClient(LocalClient):
    """Counts lists; with ``refuse_watch_list`` answers WatchList like a server without the feature (422)."""

    lists = 0
    refuse_watch_list = False

    async def list(self, *args: Any, **kwargs: Any) -> Obj:
        self.lists += 1
        return await super().list(*args, **kwargs)

    async def watch(self, *args: Any, **kwargs: Any) -> Any:
        if self.refuse_watch_list and kwargs.get("send_initial_events") is not None:
            raise InvalidError({"code": 422, "reason": "Invalid", "message": "sendInitialEvents not supported"})
        return await super().watch(*args, **kwargs)


async def _client(*, refuse: bool) -> CountingClient:
    base = await LocalClient.in_memory()
    client = CountingClient(base.registry, owns_registry=True)
    client.refuse_watch_list = refuse
    for i in range(3):
        await client.create(client.resource("configmaps"), {"metadata": {"name": f"c{i}"}}, namespace="default")
    return client


async def _sync_and_follow(client: CountingClient) -> SharedInformer:
    informer = SharedInformer(client, "configmaps", clock=FakeClock(), rng=random.Random(1), namespace="default")
    seen: list[str] = []
    informer.add_event_handler(
        on_add=lambda o: seen.append(o["metadata"]["name"]), on_update=lambda _o, _n: None, on_delete=lambda _o: None
    )
    informer.start()
    assert await informer.wait_for_sync()
    assert sorted(seen) == ["c0", "c1", "c2"]
    await client.create(client.resource("configmaps"), {"metadata": {"name": "live"}}, namespace="default")
    for _ in range(50):
        if "live" in seen:
            break
        import asyncio

        await asyncio.sleep(0.01)
    assert seen[-1] == "live"
    return informer


async def test_informer_syncs_by_watch_list_without_listing() -> None:
    client = await _client(refuse=False)
    informer = await _sync_and_follow(client)
    try:
        assert client.lists == 0
        assert informer.reflector.watch_list
        assert informer.reflector.lists == 1  # the WatchList sync counts as the list it replaces
        assert informer.last_sync_resource_version == str(client.registry.store.revision)
    finally:
        await informer.stop()
        await client.close()


async def test_informer_falls_back_to_list_and_watch_when_refused() -> None:
    client = await _client(refuse=True)
    informer = await _sync_and_follow(client)
    try:
        assert client.lists >= 1
        assert not informer.reflector.watch_list
    finally:
        await informer.stop()
        await client.close()
