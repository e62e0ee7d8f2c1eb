"""In-process transport specifics: idle bookmarks like the HTTP server's (on the injected clock too), private
copies of results, the trusted prepared put."""

from __future__ import annotations

import asyncio

import pytest

from kubeplane.apiserver.watchcache import decode
from kubeplane.client import local
from kubeplane.client.clock import FakeClock
from kubeplane.client.interface import PatchType
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
    """Writes answer objects built for the call (not copied again): changing one changes nothing stored or
    cached, nor the next write's answer."""
    client = await LocalClient.in_memory()
    try:
        cms = client.resource("configmaps")
        created = await client.create(cms, {"metadata": {"name": "c"}, "data": {"k": "v"}}, namespace="default")
        created["data"]["k"] = "changed by the caller"
        assert (await client.get(cms, "c", namespace="default"))["data"] == {"k": "v"}
        got = await client.get(cms, "c", namespace="default")
        updated = await client.update(cms, {**got, "data": {"k": "u"}}, namespace="default")
        updated["data"]["k"] = "changed by the caller"
        updated["metadata"]["name"] = "changed by the caller"
        patched = await client.patch(cms, "c", {"data": {"p": "1"}}, namespace="default")
        assert patched["data"] == {"k": "u", "p": "1"}
        patched["data"].clear()
        assert (await client.get(cms, "c", namespace="default"))["data"] == {"k": "u", "p": "1"}
        pods = client.resource("pods")
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
        await client.create(pods, pod, namespace="default")
        status = await client.patch(
            pods,
            "p",
            {"status": {"phase": "Running"}},
            patch_type=PatchType.STRATEGIC,
            namespace="default",
            subresource="status",
        )
        status["spec"]["containers"][0]["image"] = "changed by the caller"
        status["status"]["phase"] = "changed by the caller"
        stored = await client.get(pods, "p", namespace="default")
        assert stored["spec"]["containers"][0]["image"] == "i"
        assert stored["status"]["phase"] == "Running"
    finally:
        await client.close()


async def test_idle_watch_on_a_fake_clock_bookmarks_after_the_interval_of_that_clock() -> None:
    """The watch waits on the injected clock: nothing before the interval, a bookmark after."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now, clock=clock)
    try:
        watch = await client.watch(client.resource("configmaps"), namespace="default", resource_version="0")
        events = aiter(watch)
        pending = asyncio.ensure_future(anext(events))
        for _ in range(5):  # the watch starts waiting at clock time 0
            await asyncio.sleep(0)
        assert clock.pending == 1
        await clock.advance(local.BOOKMARK_INTERVAL - 1)
        assert not pending.done()
        await clock.advance(1)
        assert (await asyncio.wait_for(pending, 5))["type"] == "BOOKMARK"
        assert clock.pending == 0  # the sleep of the wait that ended is not left behind
        await watch.close()
    finally:
        await client.close()


async def test_put_prepared_hands_the_watch_cache_the_object_it_stored() -> None:
    """The cache applies the writer's object, which equals a decode of the stored value, key order included."""
    client = await LocalClient.in_memory()
    try:
        cms = client.resource("configmaps")
        created = await client.create(cms, {"metadata": {"name": "c"}, "data": {"k": "v"}}, namespace="default")
        stored = await client.put_prepared(cms, {**created, "data": {"k": "w"}}, namespace="default")
        assert stored is not None
        cache = client.registry.cache(cms)
        cache.sync()
        key = cms.key("c", "default")
        assert cache.objects[key] is stored
        fresh = decode(await client.registry.store.get(key))  # type: ignore[arg-type]
        assert list(fresh["metadata"]) == list(stored["metadata"])
        assert fresh == stored
    finally:
        await client.close()


async def test_put_prepared_many_writes_in_order_and_stops_at_the_first_stale() -> None:
    """A batch of prepared puts: each at its own resourceVersion in order, as one store batch; the first whose
    resourceVersion is no longer the stored one (kube-apiserver's precondition conflict) and those after it are
    not written."""
    client = await LocalClient.in_memory()
    try:
        cms = client.resource("configmaps")
        made = [
            await client.create(cms, {"metadata": {"name": n}, "data": {"k": "v"}}, namespace="default")
            for n in ("a", "b", "c")
        ]
        edited = await client.update(cms, {**made[1], "data": {"k": "someone else"}}, namespace="default")
        stored = await client.put_prepared_many(cms, [{**m, "data": {"k": "w"}} for m in made], namespace="default")
        assert [s["metadata"]["name"] for s in stored] == ["a"]
        assert int(stored[0]["metadata"]["resourceVersion"]) == int(edited["metadata"]["resourceVersion"]) + 1
        assert (await client.get(cms, "b", namespace="default"))["data"] == {"k": "someone else"}
        assert (await client.get(cms, "c", namespace="default"))["data"] == {"k": "v"}
    finally:
        await client.close()


async def test_take_ready_hands_over_a_delivered_batch_in_order() -> None:
    """What the watch's next ``__anext__`` calls would return without waiting, at once; then nothing."""
    client = await LocalClient.in_memory()
    try:
        cms = client.resource("configmaps")
        watch = await client.watch(cms, namespace="default", resource_version="0", allow_bookmarks=False)
        for name in ("a", "b", "c"):
            await client.create(cms, {"metadata": {"name": name}}, namespace="default")
        first = await anext(aiter(watch))
        assert isinstance(watch, local.LocalWatch)
        rest = watch.take_ready()
        assert [e["object"]["metadata"]["name"] for e in [first, *rest]] == ["a", "b", "c"]
        assert [e["type"] for e in rest] == ["ADDED", "ADDED"]
        assert watch.take_ready() == []
        await watch.close()
    finally:
        await client.close()
