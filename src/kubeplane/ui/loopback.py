"""Requests to the API server's ASGI application from inside the same process, as a client would send them.

The UI's server-side work (login's token check, explain's cluster state) goes through here rather than the
registry, so it passes the API's authentication with the user's own token and sees what that user may see.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import orjson

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[dict[str, Any], Receive, Send], Awaitable[None]]


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


def bearer(token: str) -> tuple[bytes, bytes]:
    return (b"authorization", f"Bearer {token}".encode("latin-1"))


async def call(
    app: ASGIApp,
    method: str,
    path: str,
    *,
    token: str,
    query: Mapping[str, str] | None = None,
    body: bytes = b"",
    content_type: str = "application/json",
    client: tuple[str, int] = ("127.0.0.1", 0),
) -> Response:
    """One request to ``app`` with ``token`` as its bearer token; the whole answer (not for watches)."""
    headers = [bearer(token), (b"accept", b"application/json"), (b"user-agent", b"kubeplane-ui")]
    if body:
        headers += [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    qs = urlencode(query or {}).encode()
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": qs,
        "headers": headers,
        "client": client,
        "server": ("127.0.0.1", 0),
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    status = 500
    out_headers: dict[str, str] = {}
    chunks: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            out_headers.update({k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message["headers"]})
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return Response(status, out_headers, b"".join(chunks))
