"""The UI served on its own (``kubeplane ui``): :class:`UIApp` at ``/ui/`` on an HTTPS listener of its own.

The API server mounts the UI in front of its own app; here nothing else is served: ``/`` redirects to ``/ui/``,
every other path outside ``/ui`` is a 404 Status, WebSocket upgrades are refused. The UI's ``api`` is whatever
the command gives it (:class:`.remote.RemoteAPI` or :class:`.runsonly.NoAPI`), so login, sessions, the CSRF
header and the Content-Security-Policy are exactly the built-in UI's.

Invariants: the listener is bound before anything is announced (port 0 picks a free port, and the printed URL
has the real one); TLS always (the session cookie is ``Secure``: a browser would not send it over plain HTTP);
on SIGINT/SIGTERM open watches are ended first, so the graceful shutdown does not wait for streams that never
end by themselves, and the upstream connections are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from .app import UIApp
from .loopback import Receive, Send
from .remote import RemoteAPI

log = logging.getLogger("kubeplane.ui")


class ServeError(Exception):
    """The UI cannot be served (e.g. the address is taken); the message is one line for the CLI."""


class Standalone:
    """The root ASGI app: the UI and nothing else."""

    def __init__(self, ui: UIApp) -> None:
        self.ui = ui

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path == "/":
            await _answer(send, 303, b"", [(b"location", b"/ui/")])
        elif UIApp.handles(path):
            await self.ui(scope, receive, send)
        else:
            body = orjson.dumps(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "the server could not find the requested resource",
                    "reason": "NotFound",
                    "code": 404,
                }
            )
            await _answer(send, 404, body, [(b"content-type", b"application/json")])

    def end_streams(self) -> None:
        if isinstance(self.ui.api, RemoteAPI):
            self.ui.api.end_streams()

    async def close(self) -> None:
        if isinstance(self.ui.api, RemoteAPI):
            await self.ui.api.close()


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (IPv4 or IPv6 literal); ServeError saying why not."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        raise ServeError(f"--address must be an IP address, not {host!r}") from None
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"https://{shown}:{port}/ui/"


async def serve(
    app: Standalone, sock: socket.socket, *, certfile: Path, keyfile: Path, on_ready: Callable[[str], None]
) -> None:
    """Serve ``app`` over TLS on ``sock`` until SIGINT/SIGTERM; ``on_ready(url)`` once it accepts connections."""
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=3,
        ssl_certfile=str(certfile),
        ssl_keyfile=str(keyfile),
    )

    loop = asyncio.get_running_loop()

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:
            loop.call_soon_threadsafe(app.end_streams)  # from a signal handler: let the loop do it
            super().handle_exit(sig, frame)

    server = Server(config)

    async def announce() -> None:
        while not server.started:
            await asyncio.sleep(0.01)
        on_ready(url_of(sock))

    task = asyncio.create_task(announce())
    try:
        await server.serve(sockets=[sock])
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await app.close()


async def _answer(send: Send, code: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    base = [(b"content-length", str(len(body)).encode()), (b"x-content-type-options", b"nosniff")]
    await send({"type": "http.response.start", "status": code, "headers": [*base, *headers]})
    await send({"type": "http.response.body", "body": body})
