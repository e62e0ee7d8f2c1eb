"""In-process transport specifics: idle bookmarks like the HTTP server's, private copies of results."""

from __future__ import annotations

import pytest

from kubeplane.client import local
from kubeplane.client.local import LocalClient


async def test_idle_watch_sends_a_bookmark_at_the_current_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "BOOKMARK_INTERVAL", 0.05)
    client = await LocalClient.in_memory()
    try:
        cms = client.resource("configmaps")
        watch = await client.watch(cms, namespace="default", resource_version="0")
        await client.create(cms, {"metadata": {"name": "c"}}, namespace="kube-system")  # not watched
        event = await anext(aiter(watch))
        assert event["type"] == "BOOKMARK"
        assert event["object"]["metadata"]["resourceVersion"] == str(client.registry.store.revision)
        await watch.close()
        quiet = await client.watch(
            cms, namespace="default", resource_version="0", allow_bookmarks=False, timeout_seconds=1
        )
        assert [e async for e in quiet] == []
    finally:
        await client.close()


async def test_results_are_private_copies() -> None:
    client = await LocalClient.in_memory()
    try:
        cms = client.resource("configmaps")
        created = await client.create(cms, {"metadata": {"name": "c"}, "data": {"k": "v"}}, namespace="default")
        created["data"]["k"] = "changed by the caller"
        assert (await client.get(cms, "c", namespace="default"))["data"] == {"k": "v"}
    finally:
        await client.close()
