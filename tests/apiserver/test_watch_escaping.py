"""Watch frames are HTML-escaped as every other JSON response.

Pinned upstream behaviour: apimachinery pkg/runtime/serializer/json/json.go ``doEncode`` writes each watch event
(apiserver pkg/endpoints/handlers/watch.go encodes a ``metav1.WatchEvent`` per frame through the same serializer)
with ``json.NewEncoder(w).Encode``, whose default HTML escaping writes ``<``, ``>``, ``&`` as ``\\u003c``,
``\\u003e``, ``\\u0026`` and ends the frame with a newline. Frames served from the watch cache (shared encodings)
and from the interval (initial events) must match the bytes of a GET of the same object.
"""

from __future__ import annotations

import json
import select
import socket

from kubeplane.apiserver.watchcache import WatchEvent

from .conftest import Server

NS = "default"
DATA = {"html": "<b>a & b</b>", "sep": "x\u2028y"}


def test_cached_event_frame_is_html_escaped() -> None:
    event = WatchEvent("ADDED", "/registry/configmaps/default/c", 5, {"data": {"k": "<&>"}}, None)
    assert event.frame() == b'{"type":"ADDED","object":{"data":{"k":"\\u003c\\u0026\\u003e"}}}\n'
    presented = event.presented_frame(lambda obj: {"note": obj["data"]["k"]})
    assert presented == b'{"type":"ADDED","object":{"note":"\\u003c\\u0026\\u003e"}}\n'


def _frames(raw: bytes) -> list[bytes]:
    """The JSON frames of a chunked response (chunk-size lines and CRLFs dropped)."""
    body = raw.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in raw else b""
    return [line + b"\n" for line in body.split(b"\n") if line.startswith(b"{")]


def _watch_frames(server: Server, path: str, count: int) -> list[bytes]:
    """The first ``count`` frames of a watch (bounded by its timeoutSeconds and a 10 s read timeout)."""
    sock = socket.create_connection((server.host, server.port), timeout=10)
    request = (
        f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}\r\nAccept: application/json\r\n\r\n"
    )
    sock.sendall(request.encode())
    buf = b""
    try:
        while len(_frames(buf)) < count:
            ready, _, _ = select.select([sock], [], [], 10)
            assert ready, f"no frame within the watch's time: {buf!r}"
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    finally:
        sock.close()
    return _frames(buf)[:count]


def test_watch_frames_match_get_bytes(server: Server) -> None:
    conn = server.connection()
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"}
    body = {"metadata": {"name": "escaped"}, "data": DATA}
    conn.request("POST", f"/api/v1/namespaces/{NS}/configmaps", body=json.dumps(body), headers=headers)
    created = conn.getresponse()
    assert created.status == 201
    created_bytes = created.read()
    assert b"\\u003cb\\u003ea \\u0026 b\\u003c/b\\u003e" in created_bytes
    rv = json.loads(created_bytes)["metadata"]["resourceVersion"]
    # a live event from the cache's ring: the update after rv
    path = f"/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=5"
    patch = {"data": {**DATA, "more": "1 < 2"}}
    conn.request(
        "PATCH",
        f"/api/v1/namespaces/{NS}/configmaps/escaped",
        body=json.dumps(patch),
        headers={**headers, "Content-Type": "application/merge-patch+json"},
    )
    assert conn.getresponse().read()
    conn.close()
    frames = _watch_frames(server, path, 1)
    assert frames, "no watch frame"
    frame = frames[0]
    assert not {b"<", b">", b"&"} & {bytes([c]) for c in frame}
    assert b'"1 \\u003c 2"' in frame
    assert b"x\\u2028y" in frame
    # initial events (the interval) too
    initial = _watch_frames(server, f"/api/v1/namespaces/{NS}/configmaps?watch=1&timeoutSeconds=5", 1)
    assert initial
    assert b"\\u003cb\\u003ea \\u0026 b\\u003c/b\\u003e" in initial[0]
    assert b"<" not in initial[0]
