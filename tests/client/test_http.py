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
