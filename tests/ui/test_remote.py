"""``kubeplane.ui.remote.RemoteAPI``: the UI's API when it serves another server's (``kubeplane ui --kubeconfig``).

An aiohttp server on 127.0.0.1 stands for the API server and records what it receives. Upstream behaviours
pinned: the request body limit and its message (k8s.io/apiserver handlers/rest.go ``limitedReadBody``:
``Request entity too large: limit is 3145728``, 413); a watch is a streaming response whose events arrive as
they happen (apiserver's watch handler flushes each event); hop-by-hop headers are not forwarded (RFC 9110 7.6.1,
as Go's httputil.ReverseProxy, which upstream's proxy handlers use); an unreachable backend is a 503 Status
(apimachinery's proxy ``ErrorResponder``: "error trying to reach service").
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from kubeplane.apiserver.tls import ensure_serving_certs
from kubeplane.ui.remote import MAX_BODY, RemoteAPI, Upstream

BOUND = 20.0  # seconds any single wait may take before the test fails (never a timed assertion)


class Driver:
    """One ASGI request to ``app`` as a server would drive it; ``disconnect()`` is the browser going away."""

    def __init__(self, method: str, path: str, *, query: bytes = b"", body: bytes = b"", headers: Any = ()) -> None:
        self.scope = {
            "type": "http",
            "method": method,
            "path": path,
            "raw_path": path.encode(),
            "query_string": query,
            "headers": [(k.encode(), v.encode()) for k, v in headers],
        }
        self.body = body
        self.sent_body = False
        self.gone = asyncio.Event()
        self.status = 0
        self.headers: dict[bytes, bytes] = {}
        self.chunks: list[bytes] = []
        self.changed = asyncio.Event()
        self.complete = False

    async def receive(self) -> dict[str, Any]:
        if not self.sent_body:
            self.sent_body = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {bytes(k).lower(): bytes(v) for k, v in message["headers"]}
        else:
            self.chunks.append(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        self.changed.set()

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)

    async def until(self, check: Any) -> None:
        async with asyncio.timeout(BOUND):
            while not check():
                self.changed.clear()
                await self.changed.wait()


class Upstream_:
    """The stand-in API server: records requests; ``/watch`` streams until ``release`` is set."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.release = asyncio.Event()
        self.watch_closed = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        self.requests.append(
            {"method": request.method, "path": request.raw_path, "headers": dict(request.headers), "body": body}
        )
        if request.query.get("watch") == "1":
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            await response.write(b'{"type":"ADDED","object":{"n":1}}\n')
            try:
                await self.release.wait()
                await response.write(b'{"type":"ADDED","object":{"n":2}}\n')
                await self.release.wait()
                await asyncio.sleep(3600)  # a watch that never ends by itself
            finally:
                self.watch_closed.set()
            return response
        if request.path.endswith("/gzip"):
            data = gzip.compress(b'{"kind":"Status"}')
            return web.Response(body=data, headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
        return web.json_response({"kind": "ConfigMap", "seen": True}, status=201, headers={"X-Upstream": "yes"})


@pytest.fixture
async def upstream(tmp_path: Path) -> AsyncIterator[tuple[Upstream_, int, Path]]:
    """The stand-in on two listeners: plain HTTP, and HTTPS with a kubeplane CA (returned: its ca.crt)."""
    fake = Upstream_()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1, handler_cancellation=True)
    await runner.setup()
    plain = web.TCPSite(runner, "127.0.0.1", 0)
    await plain.start()
    certs = ensure_serving_certs(tmp_path / "pki")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs.cert, certs.key)
    secure = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await secure.start()
    ports = [s.getsockname()[1] for site in (plain, secure) for s in site._server.sockets]  # type: ignore[union-attr]
    fake.tls_port = ports[1]  # type: ignore[attr-defined]
    try:
        yield fake, ports[0], certs.ca
    finally:
        fake.release.set()
        await runner.cleanup()


async def test_a_request_goes_to_the_server_with_the_session_token_and_the_answer_comes_back(
    upstream: tuple[Upstream_, int, Path],
) -> None:
    fake, port, _ = upstream
    remote = RemoteAPI(Upstream(f"http://127.0.0.1:{port}/prefix/"))
    headers = [
        ("authorization", "Bearer session-token"),
        ("cookie", "kubeplane-ui-session=secret"),
        ("connection", "keep-alive, x-hop"),
        ("content-type", "application/json"),
        ("host", "ui.example:8443"),
    ]
    call = Driver(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        query=b"fieldValidation=Strict",
        body=b'{"a":1}',
        headers=headers,
    )
    try:
        await remote(call.scope, call.receive, call.send)
    finally:
        await remote.close()
    assert call.status == 201
    assert orjson.loads(call.data) == {"kind": "ConfigMap", "seen": True}
    assert call.headers[b"x-upstream"] == b"yes"
    assert b"connection" not in call.headers
    assert b"transfer-encoding" not in call.headers
    (seen,) = fake.requests
    assert seen["method"] == "POST"
    assert seen["path"] == "/prefix/api/v1/namespaces/default/configmaps?fieldValidation=Strict"
    assert seen["body"] == b'{"a":1}'
    assert seen["headers"]["Authorization"] == "Bearer session-token"
    assert "Cookie" not in seen["headers"]  # the UI's session cookie stays with the UI
    assert seen["headers"]["Host"] == f"127.0.0.1:{port}"
    assert "Accept-Encoding" not in seen["headers"]  # nothing added: the browser's own passes through


async def test_a_compressed_answer_passes_through_as_it_is(upstream: tuple[Upstream_, int, Path]) -> None:
    fake, port, _ = upstream
    remote = RemoteAPI(Upstream(f"http://127.0.0.1:{port}"))
    call = Driver("GET", "/api/gzip", headers=[("accept-encoding", "gzip")])
    try:
        await remote(call.scope, call.receive, call.send)
    finally:
        await remote.close()
    assert fake.requests[0]["headers"]["Accept-Encoding"] == "gzip"
    assert call.headers[b"content-encoding"] == b"gzip"
    assert gzip.decompress(call.data) == b'{"kind":"Status"}'


async def test_a_watch_streams_each_event_as_it_comes_and_ends_when_the_browser_goes(
    upstream: tuple[Upstream_, int, Path],
) -> None:
    fake, port, _ = upstream
    remote = RemoteAPI(Upstream(f"http://127.0.0.1:{port}"))
    call = Driver("GET", "/api/v1/pods", query=b"watch=1&resourceVersion=5")
    task = asyncio.create_task(remote(call.scope, call.receive, call.send))
    try:
        await call.until(lambda: b'"n":1' in call.data)
        assert b'"n":2' not in call.data  # the first event arrived while the upstream still holds the second
        assert not call.complete
        fake.release.set()
        await call.until(lambda: b'"n":2' in call.data)
        call.gone.set()  # the browser navigates away
        async with asyncio.timeout(BOUND):
            await task
            await fake.watch_closed.wait()  # the upstream watch was closed too, not left running
    finally:
        task.cancel()
        await remote.close()
    assert call.status == 200


async def test_end_streams_ends_every_open_watch(upstream: tuple[Upstream_, int, Path]) -> None:
    fake, port, _ = upstream
    remote = RemoteAPI(Upstream(f"http://127.0.0.1:{port}"))
    call = Driver("GET", "/api/v1/nodes", query=b"watch=1")
    task = asyncio.create_task(remote(call.scope, call.receive, call.send))
    try:
        await call.until(lambda: b'"n":1' in call.data)
        remote.end_streams()  # shutdown
        async with asyncio.timeout(BOUND):
            await task
            await fake.watch_closed.wait()
    finally:
        task.cancel()
        await remote.close()
    assert call.complete  # the chunked answer is finished cleanly, the browser's reflector resumes
    # ... and the watch it opens next is refused, so the server's connections can close
    again = Driver("GET", "/api/v1/nodes", query=b"watch=1")
    await remote(again.scope, again.receive, again.send)
    await remote.close()
    assert again.status == 503
    assert orjson.loads(again.data)["message"] == "the UI is shutting down"


async def test_an_unreachable_server_is_a_503_status() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    remote = RemoteAPI(Upstream(f"http://127.0.0.1:{port}"))
    call = Driver("GET", "/api")
    try:
        await remote(call.scope, call.receive, call.send)
    finally:
        await remote.close()
    status = orjson.loads(call.data)
    assert call.status == 503
    assert status["kind"] == "Status"
    assert status["reason"] == "ServiceUnavailable"
    assert status["message"].startswith(f"error trying to reach the API server http://127.0.0.1:{port}: ")


async def test_a_body_over_the_api_limit_is_refused_with_upstreams_413(upstream: tuple[Upstream_, int, Path]) -> None:
    fake, port, _ = upstream
    remote = RemoteAPI(Upstream(f"http://127.0.0.1:{port}"))
    call = Driver("POST", "/api/v1/namespaces/default/configmaps", body=b"x" * (MAX_BODY + 1))
    try:
        await remote(call.scope, call.receive, call.send)
    finally:
        await remote.close()
    assert call.status == 413
    assert orjson.loads(call.data)["message"] == "Request entity too large: limit is 3145728"
    assert fake.requests == []  # nothing was sent


@pytest.mark.parametrize(
    ("trust", "expected"), [("ca", 201), ("insecure", 201), ("system", 503)], ids=["kubeconfig-ca", "insecure", "none"]
)
async def test_tls_is_verified_with_the_kubeconfigs_ca_or_skipped_when_it_says_so(
    upstream: tuple[Upstream_, int, Path], trust: str, expected: int
) -> None:
    fake, _, ca = upstream
    server = f"https://127.0.0.1:{fake.tls_port}"  # type: ignore[attr-defined]
    target = Upstream(server, ca_data=ca.read_bytes() if trust == "ca" else None, insecure=trust == "insecure")
    remote = RemoteAPI(target)
    call = Driver("GET", "/api", headers=[("authorization", "Bearer t")])
    try:
        await remote(call.scope, call.receive, call.send)
    finally:
        await remote.close()
    assert call.status == expected, call.data
    if expected == 503:
        assert "certificate verify failed" in orjson.loads(call.data)["message"]
    else:
        assert fake.requests[-1]["headers"]["Authorization"] == "Bearer t"
