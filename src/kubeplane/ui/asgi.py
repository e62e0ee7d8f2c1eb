"""What every ASGI piece of the UI shares (the UI app, the remote-API proxy, the no-API stand-in): a Kubernetes
``Status`` failure document and reading a request body with a size limit."""

from __future__ import annotations

from typing import Any

from .loopback import Receive


def status_doc(code: int, reason: str, message: str) -> dict[str, Any]:
    """A ``Status`` of ``Failure`` as the API server answers it (metav1.Status)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body; None when it is over ``limit`` bytes; empty when the client went away."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)
