"""Slow clients cannot hold the server: header, body and TLS-handshake timeouts, and a connection cap.

uvicorn times out only idle keep-alive connections: a connection that never finishes its request line and
headers, or its body, was held for ever, and a few hundred of them exhausted the open-file limit. This module
adds what kube-apiserver gets from Go's ``net/http`` (``staging/src/k8s.io/apiserver/pkg/server/secure_serving.go``):

* **header timeout**, ``ReadHeaderTimeout: 32 * time.Second`` ("just shy of requestTimeoutUpperBound"): the
  request line and headers must be complete within it, counted from the connection being made (after the TLS
  handshake) or from the first byte of a later request on a kept-alive connection. Then the connection is
  closed without a reply, as Go's server does for a read timeout (``isCommonNetReadError``).
* **TLS-handshake timeout**: Go's ``tlsHandshakeTimeout()`` is the least of the server's positive read/write
  timeouts, which for kube-apiserver is ReadHeaderTimeout: 32 s. Passed to the event loop's
  ``create_server(ssl_handshake_timeout=...)``, which aborts the connection.
* **body timeout**: the apiserver's request timeout (``--request-timeout``, default 60 s, the deadline of
  ``WithTimeoutForNonLongRunningRequests``) bounds reading the body: from the end of the headers the whole body
  must arrive within it, else the reply is upstream's 504 ``Timeout`` Status (``NewTimeoutError("request did
  not complete within requested timeout - context deadline exceeded", 0)``) and the connection is closed.
* **connection cap**: at most ``max_connections`` open HTTP connections; the default keeps a margin below
  ``RLIMIT_NOFILE`` (whose soft limit :func:`raise_open_file_limit` lifts to the hard limit at start) for the
  store, logs and certificates. When a connection arrives at the cap, the one that has waited longest for a
  request's headers (a slow client), else the longest-idle kept-alive one, is closed to make room; only when
  every connection is busy with a request is the newcomer closed. So a client that sends its request promptly,
  such as a ``/healthz`` probe, is served however many slow connections are open. There is no per-client cap:
  the server binds 127.0.0.1, where every client has the same address.

Timers cost nothing per request: each phase is an insertion-ordered dict (deadlines grow with insertion, the
timeout being fixed), swept from its oldest entry a few times per timeout. Connections still in the TLS
handshake are not counted (the loop's SSL layer hands the connection to HTTP only once it completes); the
handshake timeout bounds them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from kubeplane.apiserver.errors import APIError

from . import gojson

log = logging.getLogger("kubeplane.apiserver")

HEADER_TIMEOUT = 32.0
"""kube-apiserver's ``ReadHeaderTimeout`` (secure_serving.go)."""
HANDSHAKE_TIMEOUT = HEADER_TIMEOUT
"""Go's ``Server.tlsHandshakeTimeout()``: the least positive read timeout, here ReadHeaderTimeout."""
REQUEST_TIMEOUT = 60.0
"""kube-apiserver's ``--request-timeout`` default, which bounds reading a request's body."""
_RESERVED_FILES = 256  # descriptors kept for the store, its WAL, logs, certificates, the listening socket


def timeout_status() -> APIError:
    """``apierrors.NewTimeoutError("request did not complete within requested timeout - " + ctx.Err(), 0)``."""
    return APIError(
        code=504,
        reason="Timeout",
        message="Timeout: request did not complete within requested timeout - context deadline exceeded",
        details={},
    )


def raise_open_file_limit() -> int:
    """Lift ``RLIMIT_NOFILE``'s soft limit to the hard limit (as Go's runtime does since 1.19); the new soft."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard not in (resource.RLIM_INFINITY, soft):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def default_max_connections(open_files: int) -> int:
    """A cap safely below the open-file limit: an eighth of it (at least 256 descriptors) is kept for the rest."""
    return max(16, open_files - max(_RESERVED_FILES, open_files // 8))


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The timeouts (seconds; 0 disables one) and the cap (0: :func:`default_max_connections`)."""

    header_timeout: float = HEADER_TIMEOUT
    body_timeout: float = REQUEST_TIMEOUT
    handshake_timeout: float = HANDSHAKE_TIMEOUT
    max_connections: int = 0


class ConnectionGuard:
    """The open HTTP connections by phase; enforces the timeouts and the cap for one server.

    Invariants: a connection is in at most one of ``_headers`` (waiting for a request's headers), ``_body``
    (headers read, body not complete) and ``_idle`` (kept alive between requests); each dict maps a protocol
    to its deadline (or idle start) and is ordered by it; ``open`` counts connection_made minus connection_lost.
    """

    def __init__(self, limits: ConnectionLimits, max_connections: int) -> None:
        self.limits = limits
        self.max_connections = max_connections
        self.open = 0
        self.evicted = 0
        self.refused = 0
        self.timed_out = 0
        self._headers: dict[GuardedHttpToolsProtocol, float] = {}
        self._body: dict[GuardedHttpToolsProtocol, float] = {}
        self._idle: dict[GuardedHttpToolsProtocol, float] = {}
        self._sweeper: asyncio.Task[None] | None = None

    # -- phases, reported by the protocol -----------------------------------------------------------------------

    def connected(self, conn: GuardedHttpToolsProtocol) -> bool:
        """A new connection; False if it must be closed (the cap is reached and nothing could be evicted)."""
        if self.open >= self.max_connections and not self._evict():
            self.refused += 1
            return False
        self.open += 1
        self._wait_headers(conn)
        return True

    def request_started(self, conn: GuardedHttpToolsProtocol) -> None:
        if conn not in self._headers:  # the first request's clock started with the connection
            self._forget(conn)
            self._wait_headers(conn)

    def headers_done(self, conn: GuardedHttpToolsProtocol) -> None:
        self._headers.pop(conn, None)
        if self.limits.body_timeout > 0:
            self._body[conn] = conn.loop.time() + self.limits.body_timeout

    def body_done(self, conn: GuardedHttpToolsProtocol) -> None:
        self._body.pop(conn, None)

    def idle(self, conn: GuardedHttpToolsProtocol) -> None:
        """The response is complete and the connection kept alive (unless the next request has begun)."""
        if conn not in self._headers and conn not in self._body:
            self._idle[conn] = conn.loop.time()

    def lost(self, conn: GuardedHttpToolsProtocol) -> None:
        if conn.counted:
            self.open -= 1
            self._forget(conn)

    def _wait_headers(self, conn: GuardedHttpToolsProtocol) -> None:
        if self.limits.header_timeout > 0:
            self._headers[conn] = conn.loop.time() + self.limits.header_timeout

    def _forget(self, conn: GuardedHttpToolsProtocol) -> None:
        self._headers.pop(conn, None)
        self._body.pop(conn, None)
        self._idle.pop(conn, None)

    def _evict(self) -> bool:
        for phase in (self._headers, self._idle):
            while phase:
                conn = next(iter(phase))
                del phase[conn]
                if not conn.transport.is_closing():
                    conn.transport.close()
                    self.evicted += 1
                    return True
        return False

    # -- timeouts ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        timeouts = [t for t in (self.limits.header_timeout, self.limits.body_timeout) if t > 0]
        if timeouts and self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep(min(1.0, min(timeouts) / 4)))

    def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    async def _sweep(self, tick: float) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(tick)
            now = loop.time()
            for conn in _expired(self._headers, now):
                self.timed_out += 1
                conn.transport.close()  # no reply, as Go for a header read timeout
            for conn in _expired(self._body, now):
                self.timed_out += 1
                conn.body_timed_out()


def _expired(phase: dict[GuardedHttpToolsProtocol, float], now: float) -> list[GuardedHttpToolsProtocol]:
    out = []
    while phase:
        conn, deadline = next(iter(phase.items()))
        if deadline > now:
            break
        del phase[conn]
        out.append(conn)
    return out


CLIENT_CERT = "kubeplane.client_cert"
"""ASGI scope key of the connection's verified client certificate (``getpeercert()``'s dict), if it sent one."""


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol reporting each phase of each request to a :class:`ConnectionGuard`, and
    handing the TLS peer's verified certificate to the app (uvicorn's scope has no place for it)."""

    def __init__(self, *args: Any, guard: ConnectionGuard, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = guard
        self.counted = False
        self.peer_cert: dict[str, Any] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:  # verified against the CA in the handshake (CERT_OPTIONAL): else no cert here
            self.peer_cert = ssl_object.getpeercert() or None
        self.counted = self.guard.connected(self)
        if not self.counted:
            transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.lost(self)
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self.peer_cert is not None:
            self.scope[CLIENT_CERT] = self.peer_cert  # type: ignore[literal-required]
        self.guard.request_started(self)

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self.guard.headers_done(self)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self.guard.body_done(self)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self.guard.idle(self)

    def body_timed_out(self) -> None:
        """Answer upstream's 504 unless a response has begun, and close; the handler reading the body sees the
        client gone."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_started and not self.transport.is_closing():
            body = gojson.encode(timeout_status().status)
            self.transport.write(
                b"HTTP/1.1 504 Gateway Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(body), body)
            )
        if cycle is not None:
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()
