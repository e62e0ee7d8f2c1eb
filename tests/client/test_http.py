"""The HTTP transport against a real kubeplane apiserver process (TLS), and its client-side rate limiter."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubeplane.client.errors import ClientError, GoneError, NotFoundError
from kubeplane.client.http import HTTPClient
from tests.apiserver.conftest import start_server


async def test_tls_kubeconfig_crud_and_watch(tmp_path: Path) -> None:
    server = await asyncio.to_thread(start_server, tmp_path / "data", tls=True)
    client = HTTPClient.from_kubeconfig(server.kubeconfig)
    try:
        pods = client.resource("po")
        listed = await client.list(pods, namespace="default")
        watch = await client.watch(pods, namespace="default", resource_version=listed["metadata"]["resourceVersion"])
        big = {"k": "v" * 200_000}  # one watch line far longer than a default stream line limit
        spec = {"containers": [{"name": "c", "image": "nginx"}]}
        await client.create(pods, {"metadata": {"name": "p", "annotations": big}, "spec": spec}, namespace="default")
        event = await anext(aiter(watch))
        assert (event["type"], event["object"]["metadata"]["annotations"]) == ("ADDED", big)
        await watch.close()
        with pytest.raises(NotFoundError):
            await client.get(pods, "missing", namespace="default")
        await client.delete(pods, "p", namespace="default")
    finally:
        await client.close()
        await asyncio.to_thread(server.stop)


async def test_watch_from_a_compacted_revision_raises_gone(tmp_path: Path) -> None:
    server = await asyncio.to_thread(start_server, tmp_path / "data", "--etcd-compaction-interval", "0.3")
    client = HTTPClient.from_kubeconfig(server.kubeconfig)
    try:
        cms = client.resource("configmaps")
        for i in range(3):
            await client.create(cms, {"metadata": {"name": f"c{i}"}}, namespace="default")
        await asyncio.sleep(1.2)
        watch = await client.watch(cms, namespace="default", resource_version="2")
        with pytest.raises(GoneError):
            await anext(aiter(watch))
    finally:
        await client.close()
        await asyncio.to_thread(server.stop)


async def test_connection_refused_is_a_client_error() -> None:
    from kubeplane.client.kubeconfig import ClientConfig

    client = HTTPClient(ClientConfig(server="http://127.0.0.1:1", qps=0))
    try:
        with pytest.raises(ClientError, match=r"127\.0\.0\.1:1"):
            await client.get(client.resource("pods"), "x", namespace="default")
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("method", "requests"),
    [
        pytest.param("GET", 3, id="a read is retried (client-go retries reads on a broken connection)"),
        pytest.param("POST", 1, id="a write is not retried (it may have been acted on)"),
    ],
)
async def test_a_response_cut_inside_its_body_is_a_broken_connection(method: str, requests: int) -> None:
    """A server that dies after a response's head (Content-Length 100, one byte of body, then closed) gives a
    ClientError, never the HTTP library's own payload error (a killed API server did this to a create in the HA
    chaos test); reads are retried as after any broken connection, writes are not."""
    from kubeplane.client.clock import FakeClock
    from kubeplane.client.kubeconfig import ClientConfig

    seen: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    clock = FakeClock()
    client = HTTPClient(ClientConfig(server=f"http://127.0.0.1:{port}", qps=0), clock=clock)
    cms = client.resource("configmaps")
    try:
        if method == "GET":
            call = client.get(cms, "c", namespace="default")
        else:
            call = client.create(cms, {"metadata": {"name": "c"}}, namespace="default")
        task = asyncio.ensure_future(call)
        while not task.done():  # the retries' back-off sleeps are on the fake clock
            await asyncio.sleep(0.01)
            await clock.advance(0.5)
        with pytest.raises(ClientError, match=r"127\.0\.0\.1"):
            await task
        assert len(seen) == requests
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_a_broken_watch_stream_is_an_error_not_a_clean_end(tmp_path: Path) -> None:
    """A watch whose server dies mid-stream raises ClientError, so informers back off before re-watching."""
    import os
    import signal

    server = await asyncio.to_thread(start_server, tmp_path / "data")
    client = HTTPClient.from_kubeconfig(server.kubeconfig)
    try:
        watch = await client.watch(client.resource("configmaps"), namespace="default", resource_version="0")
        os.kill(server.process.pid, signal.SIGKILL)

        async def drain() -> None:
            async with asyncio.timeout(10):
                async for _ in watch:
                    pass

        with pytest.raises(ClientError, match="watch stream broken"):
            await drain()
    finally:
        await client.close()
        await asyncio.to_thread(server.stop)


async def test_a_watch_refused_with_429_and_retry_after_is_retried_after_that_wait() -> None:
    """client-go retries a request the server refused with 429 and ``Retry-After`` (the server did nothing), a
    watch too: here the API server's watch cache is re-initialising (its list held back), so the watch gets
    upstream's 429 "storage is (re)initializing" with ``Retry-After: 1``; the client waits one second on its clock
    and the retry, once the cache is ready, opens the watch."""
    import socket

    import uvicorn

    from kubeplane.apiserver.errors import APIError
    from kubeplane.apiserver.http.app import APIServerApp
    from kubeplane.apiserver.registry import Registry
    from kubeplane.client.clock import FakeClock
    from kubeplane.client.kubeconfig import ClientConfig
    from kubeplane.store.interface import RangeResult
    from kubeplane.store.memory import MemoryStore

    class HeldStore(MemoryStore):
        """A store whose ranges wait while ``held`` is clear (the watch cache's re-list stays pending)."""

        held = asyncio.Event()

        async def range(self, *args: object, **kwargs: object) -> RangeResult:
            await self.held.wait()
            return await super().range(*args, **kwargs)  # type: ignore[arg-type]

    store = HeldStore()
    store.held.set()
    registry = Registry(store=store, cache_watch_buffer=2)
    await registry.start()
    app = APIServerApp(registry)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    clock = FakeClock()
    client = HTTPClient(ClientConfig(server=f"http://127.0.0.1:{sock.getsockname()[1]}", qps=0), clock=clock)
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        cms = client.resource("configmaps")
        cache = registry.cache(cms)
        key = cms.key("c", "default")
        await store.create(key, b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}')
        for i in range(5):  # overflow the cache's store watch (buffer 2) without yielding, then compact it away
            await store.update(key, b'{"metadata":{"name":"c","namespace":"default"},"data":{"i":"%d"}}' % i)
        store.held.clear()
        await store.compact(store.revision)
        cache.sync()
        with pytest.raises(APIError, match=r"storage is \(re\)initializing"):
            cache.check_ready()
        opening = asyncio.create_task(client.watch(cms, namespace="default", resource_version="0"))
        while not clock.pending:  # the 429 came back: the client waits Retry-After on its clock
            assert not opening.done(), opening
            await asyncio.sleep(0.01)
        store.held.set()
        while not cache.ready:
            await asyncio.sleep(0)
        await clock.advance(1.0)
        watch = await opening
        event = await anext(aiter(watch))
        assert (event["type"], event["object"]["data"]) == ("ADDED", {"i": "4"})
        await watch.close()
    finally:
        await client.close()
        app.close_watches()
        server.should_exit = True
        await serving
        sock.close()
        await registry.stop()
