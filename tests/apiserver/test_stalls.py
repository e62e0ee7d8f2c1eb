"""No request can stall the others (issue 22): slow clients are timed out, connections are capped with room
kept for prompt requests, and a CPU-heavy request leaves the event loop free for /healthz.

Upstream pinned: ``staging/src/k8s.io/apiserver/pkg/server/secure_serving.go`` (``ReadHeaderTimeout: 32 *
time.Second``; Go's ``Server.tlsHandshakeTimeout()`` derives the handshake's from it; a header read timeout
closes the connection without a reply, ``net/http`` ``isCommonNetReadError``), the request timeout of
``pkg/server/filters/timeout.go`` (504 ``NewTimeoutError("request did not complete within requested timeout -
context deadline exceeded", 0)``), Go's raising of ``RLIMIT_NOFILE`` to the hard limit at start (Go 1.19), and
``pkg/apis/core/validation`` ``ValidatePodUpdate`` for the big patch's answer. Timeouts are made short by flags;
nothing here asserts a speed: the waits are generous bounds on what must eventually happen.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import resource
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeplane.api import defaults as apidefaults
from kubeplane.api import strategicpatch
from kubeplane.apiserver.http.app import APIServerApp
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore

from .conftest import Server, start_server

SHORT = ("--header-timeout", "1", "--request-timeout", "2", "--tls-handshake-timeout", "1")
CAP = 16
JSON = "application/json"
SMP = "application/strategic-merge-patch+json"


def _closed_by_server(sock: socket.socket, within: float = 20.0) -> bytes | None:
    """What the server sent before closing ``sock`` (None if it kept it open for ``within`` seconds); then
    closes our end."""
    sock.settimeout(within)
    received = b""
    try:
        with sock:
            while chunk := sock.recv(65536):
                received += chunk
    except TimeoutError:
        return None
    except (ConnectionResetError, ssl.SSLError):
        pass
    return received


def _is_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except (BlockingIOError, ssl.SSLWantReadError):
        return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def short(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("short") / "data", *SHORT)
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def short_tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("tls") / "data", *SHORT, tls=True)
    yield srv
    srv.stop()


def _connect(server: Server) -> socket.socket:
    return socket.create_connection((server.host, server.port), timeout=10)


def _tls(server: Server) -> socket.socket:
    context = ssl.create_default_context(cafile=str(server.data_dir / "ca.crt"))
    context.check_hostname = False
    return context.wrap_socket(_connect(server))


def test_partial_headers_are_closed_without_a_reply(short: Server) -> None:
    """ReadHeaderTimeout: headers never finished -> the server closes, sending nothing (was: held for ever)."""
    sock = _connect(short)
    sock.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n")
    assert _closed_by_server(sock) == b""


def test_a_connection_that_sends_nothing_is_closed(short: Server) -> None:
    """The first request's header clock starts with the connection (Go's readRequest deadline)."""
    assert _closed_by_server(_connect(short)) == b""


def test_a_partial_body_is_answered_504_and_nothing_is_written(short: Server) -> None:
    """The request timeout bounds reading the body: upstream's Timeout Status, then the connection closes."""
    sock = _connect(short)
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"half"}}'
    sock.sendall(
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + short.token.encode() + b"\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(body), body[:20])
    )
    reply = _closed_by_server(sock)
    assert reply is not None
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 504 ")
    assert json.loads(payload) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Timeout: request did not complete within requested timeout - context deadline exceeded",
        "reason": "Timeout",
        "details": {},
        "code": 504,
    }
    conn = short.connection()
    auth = {"Authorization": f"Bearer {short.token}"}
    conn.request("GET", "/api/v1/namespaces/default/configmaps/half", headers=auth)
    assert conn.getresponse().status == 404
    conn.close()


def test_a_slow_body_is_bounded_as_a_whole(short: Server) -> None:
    """Dripping the body a byte at a time does not extend the deadline (it is the request's, not per read)."""
    sock = _connect(short)
    sock.sendall(
        b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + short.token.encode() + b"\r\nContent-Length: 1000\r\n\r\n"
    )
    deadline = time.monotonic() + 20
    reply = None
    while time.monotonic() < deadline:
        try:
            sock.sendall(b" ")
        except OSError:
            break
        sock.settimeout(0.3)
        try:
            reply = sock.recv(65536)
            break
        except TimeoutError:
            continue
    sock.close()
    assert reply is not None
    assert reply.startswith(b"HTTP/1.1 504 ")


def test_kept_alive_connections_still_serve_requests(short: Server) -> None:
    """The header clock of a later request starts with its first byte, not with the previous response."""
    conn = short.connection()
    for _ in range(3):
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        assert (response.status, response.read()) == (200, b"ok")
        time.sleep(0.6)  # together longer than the 1 s header timeout, each idle gap shorter than keep-alive
    conn.close()


def test_bare_tcp_to_the_tls_port_is_closed(short_tls: Server) -> None:
    """No ClientHello: the TLS-handshake timeout closes it (Go: tlsHandshakeTimeout = ReadHeaderTimeout)."""
    assert _closed_by_server(_connect(short_tls)) == b""


def test_a_partial_client_hello_is_closed(short_tls: Server) -> None:
    sock = _connect(short_tls)
    sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a handshake record cut after 11 bytes
    assert _closed_by_server(sock) == b""


def test_tls_then_silence_is_closed(short_tls: Server) -> None:
    """After a completed handshake the header timeout applies, as on plain HTTP."""
    assert _closed_by_server(_tls(short_tls)) == b""


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Default (32 s) timeouts, so any slow connection closed here was closed by the cap."""
    data = tmp_path_factory.mktemp("capped") / "data"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, 1024, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))  # the server inherits a low soft limit
    try:
        srv = start_server(data, "--max-connections", str(CAP), tls=True)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    yield srv
    srv.stop()


def test_open_file_soft_limit_is_raised_to_the_hard_limit(capped: Server) -> None:
    limits = Path(f"/proc/{capped.process.pid}/limits").read_text().splitlines()
    line = next(row for row in limits if row.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    assert soft == hard


def test_healthz_is_served_while_slow_connections_exceed_the_cap(capped: Server) -> None:
    """3x the cap of slow TLS clients (headers never finished): the longest-waiting ones are closed to make room
    and every /healthz is answered; the cap, not a timeout, closed them."""
    held: list[socket.socket] = []
    try:
        for _ in range(3 * CAP):
            sock = _tls(capped)
            held.append(sock)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        context = ssl.create_default_context(cafile=str(capped.data_dir / "ca.crt"))
        context.check_hostname = False
        for _ in range(5):
            conn = http.client.HTTPSConnection(capped.host, capped.port, timeout=10, context=context)
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            assert (response.status, response.read()) == (200, b"ok")
            conn.close()
        time.sleep(0.5)
        still_open = [sock for sock in held if _is_open(sock)]
        assert len(still_open) <= CAP
        assert held[-1] in still_open  # the newest slow client was not the one evicted
    finally:
        for sock in held:
            sock.close()


def test_a_20000_container_patch_leaves_healthz_answering(server: Server) -> None:
    """The 20,000-container strategic merge patch of the fuzz run, end to end: the same answer as before (a pod
    update may not add containers: ValidatePodUpdate) and /healthz answered while it is in flight. (The loop
    reads the body between probes even when the patch ran on it; the next test pins that the patch itself
    leaves the loop free.)"""
    auth = {"Authorization": f"Bearer {server.token}"}
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"}}
    pod["spec"] = {"containers": [{"name": "c"}]}
    pod["spec"]["containers"][0]["image"] = "x"
    conn = server.connection(timeout=300)
    conn.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod), {**auth, "Content-Type": JSON})
    assert conn.getresponse().status == 201
    conn.close()
    body = json.dumps({"spec": {"containers": [{"name": f"c{i}", "image": "busybox"} for i in range(20000)]}})
    reply: dict[str, Any] = {}

    def send_patch() -> None:
        big = server.connection(timeout=300)
        big.request("PATCH", "/api/v1/namespaces/default/pods/big", body, {**auth, "Content-Type": SMP})
        reply["sent"] = time.monotonic()  # the whole body is on its way: from here the server works on it
        response = big.getresponse()
        reply["status"], reply["body"], reply["done"] = response.status, json.loads(response.read()), time.monotonic()
        big.close()

    thread = threading.Thread(target=send_patch)
    thread.start()
    answered: list[float] = []
    while thread.is_alive():
        probe = server.connection(timeout=300)
        probe.request("GET", "/healthz")
        if probe.getresponse().read() == b"ok":
            answered.append(time.monotonic())
        probe.close()
        time.sleep(0.02)
    thread.join()
    assert reply["status"] == 422
    assert reply["body"]["message"] == (
        'Pod "big" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers'
    )
    assert any(reply["sent"] < at < reply["done"] for at in answered), "no /healthz was answered during the patch"


async def _asgi(app: APIServerApp, method: str, path: str, body: bytes = b"", content_type: str = JSON) -> int:
    """One request through the ASGI app in this event loop: the response's status."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())],
    }
    sent = False
    status = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client stays connected
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(scope, receive, send)
    return status


async def test_a_big_patch_is_applied_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a big strategic merge patch is being applied, the event loop answers /healthz: the patch is held
    until a /healthz has been answered (on the old code the patch ran on the loop, so that could not happen)."""
    registry = Registry(store=MemoryStore())
    await registry.start()
    app = APIServerApp(registry, tokens=None)
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"}, "spec": {"containers": []}}
    pod["spec"]["containers"].append({"name": "c", "image": "x"})
    assert await _asgi(app, "POST", "/api/v1/namespaces/default/pods", json.dumps(pod).encode()) == 201
    entered, answered = threading.Event(), threading.Event()
    seen: list[bool] = []
    apply = strategicpatch.strategic_merge_patch

    def held(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        seen.append(answered.wait(20))  # bounded: on the loop thread this would block the loop
        return apply(*args, **kwargs)

    monkeypatch.setattr(strategicpatch, "strategic_merge_patch", held)
    patch = {"spec": {"containers": [{"name": f"c{i}", "image": "busybox"} for i in range(20000)]}}
    path = "/api/v1/namespaces/default/pods/big"
    patching = asyncio.create_task(_asgi(app, "PATCH", path, json.dumps(patch).encode(), SMP))
    while not entered.is_set():
        await asyncio.sleep(0.01)
    assert await _asgi(app, "GET", "/healthz") == 200
    answered.set()
    assert await patching == 422  # as before: a pod update may not add containers
    assert seen == [True]
    await registry.stop()


async def test_a_huge_create_is_defaulted_and_validated_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for a create of a pod of 20,000 containers: its defaulting is held until /healthz is answered."""
    registry = Registry(store=MemoryStore())
    await registry.start()
    app = APIServerApp(registry, tokens=None)
    entered, answered = threading.Event(), threading.Event()
    seen: list[bool] = []
    apply_defaults = apidefaults.apply_defaults

    def held(obj: Any) -> None:
        if len(obj.get("spec", {}).get("containers", [])) > 1000:
            entered.set()
            seen.append(answered.wait(20))
        apply_defaults(obj)

    monkeypatch.setattr(apidefaults, "apply_defaults", held)
    containers = [{"name": f"c{i}", "image": "busybox"} for i in range(20000)]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "huge"}, "spec": {"containers": containers}}
    creating = asyncio.create_task(_asgi(app, "POST", "/api/v1/namespaces/default/pods", json.dumps(pod).encode()))
    while not entered.is_set():
        await asyncio.sleep(0.01)
    assert await _asgi(app, "GET", "/healthz") == 200
    answered.set()
    assert await creating == 201
    assert seen == [True]
    await registry.stop()
