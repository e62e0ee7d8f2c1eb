"""HTTPClient views: impersonation headers and per-request tokens, on the parent's connections.

Pins client-go's ``rest.ImpersonationConfig`` as ``transport.NewImpersonatingRoundTripper`` sends it: one
``Impersonate-User`` header and one ``Impersonate-Group`` header per group (repeated, never comma-joined), on
every request including watches, with the client's own credentials; and ``ResettableTokenSourceWrapTransport``:
the bearer token from the source on each request. A view shares the parent's session: closing it must not close
the parent's connections.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from kubeplane.client.http import HTTPClient
from kubeplane.client.kubeconfig import ClientConfig


class Recorder:
    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, list[str]]]] = []

    async def handle(self, request: web.Request) -> web.Response:
        headers: dict[str, list[str]] = {}
        for key, value in request.headers.items():
            headers.setdefault(key.lower(), []).append(value)
        self.requests.append((request.method, request.path, headers))
        if request.query.get("watch"):
            return web.Response(text="", content_type="application/json")
        return web.json_response({"kind": "Pod", "metadata": {"name": "p"}})


@pytest.fixture
async def server() -> AsyncIterator[tuple[Recorder, str]]:
    recorder = Recorder()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", recorder.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    try:
        yield recorder, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        await runner.cleanup()


async def test_impersonating_sends_the_user_and_one_header_per_group(server: tuple[Recorder, str]) -> None:
    recorder, url = server
    parent = HTTPClient(ClientConfig(server=url, token="fleet-token"))
    pods = parent.resource("pods")
    node = parent.impersonating("system:node:n1", ["system:nodes", "extra:group"])
    await node.patch(pods, "p", {"status": {}}, namespace="default", subresource="status")
    watch = await node.watch(pods, namespace="default")
    await watch.close()
    await parent.get(pods, "p", namespace="default")
    (_m1, path1, h1), (_m2, _p2, h2), (_m3, _p3, h3) = recorder.requests
    assert path1 == "/api/v1/namespaces/default/pods/p/status"
    for headers in (h1, h2):
        assert headers["impersonate-user"] == ["system:node:n1"]
        assert headers["impersonate-group"] == ["system:nodes", "extra:group"]  # repeated, in order
        assert headers["authorization"] == ["Bearer fleet-token"]  # on the impersonator's credentials
    assert h1["content-type"] == ["application/merge-patch+json"]
    assert "impersonate-user" not in h3
    assert "impersonate-group" not in h3
    # a view of a view replaces the impersonation instead of adding to it
    other = node.impersonating("system:node:n2")
    await other.get(pods, "p", namespace="default")
    assert recorder.requests[-1][2]["impersonate-user"] == ["system:node:n2"]
    assert "impersonate-group" not in recorder.requests[-1][2]
    # closing a view leaves the shared session open
    await node.close()
    await other.close()
    await parent.get(pods, "p", namespace="default")
    assert len(recorder.requests) == 5
    await parent.close()


async def test_a_token_source_authenticates_each_request(server: tuple[Recorder, str]) -> None:
    recorder, url = server
    parent = HTTPClient(ClientConfig(server=url, token="manager-token"))
    tokens = iter(["sa-1", "sa-2"])

    async def source() -> str:
        return next(tokens)

    controller = parent.with_token_source(source)
    pods = parent.resource("pods")
    await controller.get(pods, "p", namespace="default")
    await controller.create(pods, {"metadata": {"name": "p"}}, namespace="default")
    await parent.get(pods, "p", namespace="default")
    auth = [headers["authorization"] for _m, _p, headers in recorder.requests]
    assert auth == [["Bearer sa-1"], ["Bearer sa-2"], ["Bearer manager-token"]]
    await controller.close()
    await parent.get(pods, "p", namespace="default")
    await parent.close()
