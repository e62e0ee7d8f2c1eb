"""The Kubernetes API of another server, as an ASGI app: what ``kubeplane ui --kubeconfig K`` gives :class:`UIApp`.

:class:`RemoteAPI` forwards every request it is given to the kubeconfig's server, unchanged: same method, path
(after the server URL's own path, e.g. a Rancher ``/k8s/clusters/ID`` prefix), query, body and headers, and
returns the answer as it comes (status, headers, body bytes, compressed or not). The UI reaches it exactly as it
reaches the built-in API server's app, so login (SelfSubjectReview), the browser's lists and watches
(``/ui/api/...``) and the pod view's explain (:mod:`.explaining`, through :mod:`.loopback`) all work against a
real cluster with no code of their own.

Invariants:

* The identity is the request's ``Authorization`` header, which :class:`UIApp` sets to the SESSION's bearer
  token: every action is the logged-in user's. The kubeconfig contributes only where the server is and how to
  trust it (its CA, or ``insecure-skip-tls-verify``), never credentials. In particular its client certificate is
  NOT presented: the API server authenticates a verified client certificate before any bearer token (upstream's
  union authenticator puts x509 first: pkg/kubeapiserver/authenticator/config.go), so presenting it would make
  every session, and every token typed at the login page, act as the kubeconfig's user.
* Watches (``watch=true``, ``/watch/`` paths) and ``follow=true`` logs stream: each chunk is sent to the browser
  as it arrives, and the upstream connection is closed as soon as the browser goes away.
* Hop-by-hop headers (RFC 9110 7.6.1) are not forwarded either way; nothing is decompressed (``Accept-Encoding``
  passes through and the answer's ``Content-Encoding`` with it).
* A server that cannot be reached is a 503 Status (as upstream's proxy handler answers "error trying to reach
  service"), never a traceback; a request body over the API server's 3 MiB limit is refused with upstream's 413.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import aiohttp
import orjson
from yarl import URL

from kubeplane.client.tls import server_ssl_context

from .asgi import read_body, status_doc
from .loopback import Receive, Send

Scope = dict[str, Any]

MAX_BODY = 3 * 1024 * 1024
"""The API server's request body limit (apiserver's MaxRequestBodyBytes, 3 MiB)."""
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
    }
)
NOT_FORWARDED = HOP_BY_HOP | {b"host", b"content-length", b"cookie"}
"""The host is the upstream's; aiohttp sets the length of the body it sends; the UI's cookie is the UI's alone."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """Where the API is and how to trust it (a kubeconfig's cluster entry): ``server`` is its URL, ``ca_data``
    its ``certificate-authority(-data)`` (PEM; None: the system's CAs), ``insecure`` its
    ``insecure-skip-tls-verify``."""

    server: str
    ca_data: bytes | None = None
    insecure: bool = False


def status(code: int, reason: str, message: str) -> bytes:
    return orjson.dumps(status_doc(code, reason, message))


def is_stream(scope: Scope) -> bool:
    """A request whose answer does not end by itself: a watch (upstream's RequestInfo: ``watch=true|1`` or a
    ``/watch/`` path) or followed logs."""
    query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
    path: str = scope["path"]
    return (
        query.get("watch", "").lower() in ("1", "true")
        or query.get("follow", "").lower() in ("1", "true")
        or "/watch/" in path
    )


class RemoteAPI:
    """An ASGI app that is the API server at ``upstream.server`` (see the module's invariants)."""

    def __init__(self, upstream: Upstream, *, connect_timeout: float = 30.0, max_connections: int = 256) -> None:
        self.upstream = upstream
        self.base = upstream.server.rstrip("/")
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._streams: set[asyncio.Future[None]] = set()
        self._closing = False

    def _client(self) -> aiohttp.ClientSession:
        """One pooled session, created in the serving loop on first use."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._tls(), limit=self.max_connections),
                timeout=aiohttp.ClientTimeout(total=None, connect=self.connect_timeout, sock_read=None),
                auto_decompress=False,
                skip_auto_headers=("Accept-Encoding", "User-Agent"),
            )
        return self._session

    def _tls(self) -> ssl.SSLContext | bool:
        """client-go's trust of the server, without the kubeconfig's client certificate (module invariants)."""
        upstream = self.upstream
        return server_ssl_context(upstream.server, ca_data=upstream.ca_data, insecure=upstream.insecure)

    def end_streams(self) -> None:
        """End every open watch now and refuse new ones (on shutdown: a watch never ends by itself, and the
        browser's reflector would open the next one at once, keeping the server from closing its connections)."""
        self._closing = True
        for gone in list(self._streams):
            gone.cancel()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if self._closing and is_stream(scope):
            await _answer(send, 503, status(503, "ServiceUnavailable", "the UI is shutting down"))
            return
        body = await read_body(receive, MAX_BODY)
        if body is None:
            message = f"Request entity too large: limit is {MAX_BODY}"
            await _answer(send, 413, status(413, "RequestEntityTooLarge", message))
            return
        raw = scope.get("raw_path") or scope["path"].encode()
        target = self.base + raw.decode("latin-1")
        query: bytes = scope.get("query_string", b"")
        if query:
            target += "?" + query.decode("latin-1")
        headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"] if k.lower() not in NOT_FORWARDED
        ]
        try:
            response = await self._client().request(
                scope["method"], URL(target, encoded=True), headers=headers, data=body or None, allow_redirects=False
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            reason = str(exc) or type(exc).__name__
            message = f"error trying to reach the API server {self.upstream.server}: {reason}"
            await _answer(send, 503, status(503, "ServiceUnavailable", message))
            return
        async with response:
            out = [(k.lower(), v) for k, v in response.raw_headers if k.lower() not in HOP_BY_HOP]
            await send({"type": "http.response.start", "status": response.status, "headers": out})
            chunks = response.content.iter_any()
            if is_stream(scope):
                gone = asyncio.ensure_future(_disconnected(receive))
                self._streams.add(gone)
                if self._closing:  # end_streams ran while this watch was being opened upstream
                    gone.cancel()
                try:
                    if await _stream(chunks, gone, send):
                        response.close()  # the browser went away (or shutdown): drop the upstream watch
                finally:
                    self._streams.discard(gone)
                    gone.cancel()
            else:
                async for chunk in chunks:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})


async def _stream(chunks: AsyncIterator[bytes], gone: asyncio.Future[None], send: Send) -> bool:
    """Send each chunk as it arrives until the upstream ends or ``gone`` (the browser disconnected, or
    :meth:`RemoteAPI.end_streams`) is done, whichever first; True in the second case."""
    step: asyncio.Future[bytes] | None = None
    try:
        while True:
            step = asyncio.ensure_future(anext(chunks, b""))
            waiting: set[asyncio.Future[Any]] = {step, gone}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                step.cancel()
                with contextlib.suppress(asyncio.CancelledError, aiohttp.ClientError):
                    await step
                return True
            chunk = step.result()
            if not chunk:
                return False
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except (aiohttp.ClientError, OSError, TimeoutError):
        return False  # the upstream broke the stream: end it, the browser's reflector resumes from its last version
    finally:
        if step is not None and not step.done():  # cancelled from outside (server shutdown): retrieve its end
            step.cancel()
            step.add_done_callback(lambda f: f.cancelled() or f.exception())


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _answer(send: Send, code: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
