"""Watch memory bounded in bytes (issue 22), against a real ``kubeplane apiserver`` with a small byte budget.

Upstream pins:
- staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go, ``cacheWatcher.add``: a watcher whose buffer
  is full is terminated ("Forcing watcher close due to unresponsiveness"), counted in
  ``apiserver_terminated_watchers_total``; ``graceful`` when WatchList's end bookmark is not yet sent (the
  buffer is drained first), otherwise what is buffered is dropped and the result channel closed.
- staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go, ``WatchServer.HandleHTTP``: events are written
  one after the other as the client takes them (never the whole backlog in one write); a closed result channel
  ends the response ("End of results"), and the client re-watches from the last resourceVersion it saw, or
  re-lists.
- cache_watcher.go ``convertToWatchEvent``: an object leaving a selector is a DELETED of its previous state with
  the event's resourceVersion; the cacher's ``cachingObject`` encodes an object once for every watcher.

The watchers that lag are raw sockets with a small receive buffer that read nothing until told.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.apiserver.http.app import WATCH_CHUNK
from kubeplane.apiserver.listing import WatchOptions, open_watch
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore

from .conftest import Server, start_server
from .test_watch_guarantees import call

BUDGET = 64 * 1024
PAYLOAD = 48 * 1024
"""Objects large enough that 120 of them pass the kernel's socket buffers too (autotuned up to 4 MiB)."""
NS = "default"
CONFIGMAPS = f"/api/v1/namespaces/{NS}/configmaps"


@pytest.fixture(scope="module")
def small_budget(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("watchmem") / "data", "--watch-buffer-bytes", str(BUDGET))
    yield srv
    srv.stop()
    assert srv.process.returncode == 0, "apiserver did not shut down cleanly on SIGTERM"


@dataclass
class Stream:
    """What a raw watch connection received: the HTTP chunks, and whether the chunked body ended."""

    chunks: list[bytes] = field(default_factory=list)
    ended: bool = False

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in b"".join(self.chunks).splitlines() if line]


class RawWatch:
    """A watch on a plain socket whose small receive buffer fills at once while the test does not read."""

    def __init__(self, server: Server, path: str, *, rcvbuf: int = 4096) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect((server.host, server.port))
        request = f"GET {path} HTTP/1.1\r\nHost: {server.host}\r\nAuthorization: Bearer {server.token}\r\n\r\n"
        self.sock.sendall(request.encode())

    def read(self, *, idle: float = 5.0) -> Stream:
        """Read until the chunked body ends or nothing arrives for ``idle`` seconds."""
        self.sock.settimeout(idle)
        reader = self.sock.makefile("rb")
        stream = Stream()
        try:
            status = reader.readline()
            assert status.startswith(b"HTTP/1.1 200"), status
            while reader.readline() not in (b"\r\n", b""):
                pass
            while True:
                size = int(reader.readline().strip() or b"0", 16)
                if size == 0:
                    stream.ended = True
                    break
                stream.chunks.append(reader.read(size))
                reader.read(2)
        except TimeoutError:
            pass
        finally:
            reader.close()
        return stream

    def close(self) -> None:
        self.sock.close()


def _create(server: Server, name: str, size: int = PAYLOAD) -> int:
    doc = call(server, "POST", CONFIGMAPS, {"metadata": {"name": name}, "data": {"v": "x" * size}})
    return int(doc["metadata"]["resourceVersion"])


def _terminated(server: Server) -> float:
    conn = server.connection()
    conn.request("GET", "/metrics", headers={"Authorization": f"Bearer {server.token}"})
    text = conn.getresponse().read().decode()
    conn.close()
    for line in text.splitlines():
        if line.startswith("apiserver_terminated_watchers_total{") and 'resource="configmaps"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _wait_terminated(server: Server, at_least: float) -> float:
    deadline = time.monotonic() + 60
    while (count := _terminated(server)) < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
    return count


def _revision(server: Server) -> int:
    return int(call(server, "GET", CONFIGMAPS)["metadata"]["resourceVersion"])


def _write_past_the_budget(server: Server, prefix: str, count: int = 120) -> list[tuple[int, str]]:
    """``count`` configmaps of PAYLOAD bytes (5.6 MiB): more than the kernel's socket buffers (which autotune up to
    4 MiB), the transport's high-water mark, one chunk and the budget together."""
    return [(_create(server, f"{prefix}-{i}"), f"{prefix}-{i}") for i in range(count)]


def test_a_watcher_that_does_not_read_is_closed_and_one_that_reads_gets_every_event(small_budget: Server) -> None:
    """cacheWatcher.add: the unresponsive watcher is terminated (and counted); the others are not slowed or cut."""
    server = small_budget
    before = _terminated(server)
    start = _revision(server)
    path = f"{CONFIGMAPS}?watch=1&resourceVersion={start}&timeoutSeconds=120"
    lagging = RawWatch(server, path)
    reading = RawWatch(server, path, rcvbuf=1 << 20)
    written = _write_past_the_budget(server, "a")
    assert _wait_terminated(server, before + 1) == before + 1, "the lagging watcher was not terminated"
    # the reading watcher (read only now, but its buffers held everything) was not terminated, and got all
    got = reading.read(idle=2.0)
    assert [
        (int(e["object"]["metadata"]["resourceVersion"]), e["object"]["metadata"]["name"]) for e in got.events()
    ] == written
    assert not got.ended, "the reading watcher's stream ended"
    reading.close()
    # the lagging watcher sees a prefix of the events, in order, then the end of the stream (watch.go: End of results)
    cut = lagging.read()
    lagging.close()
    assert cut.ended, "the terminated watcher's stream did not end"
    seen = [(int(e["object"]["metadata"]["resourceVersion"]), e["object"]["metadata"]["name"]) for e in cut.events()]
    assert seen == written[: len(seen)]
    assert len(seen) < len(written)
    # written one chunk at a time: no write larger than a chunk and one event
    assert max(len(c) for c in cut.chunks) <= WATCH_CHUNK + PAYLOAD + 512


def test_the_client_rewatches_from_the_last_revision_it_saw_and_loses_nothing(small_budget: Server) -> None:
    """After the stream ends the client re-watches from its last resourceVersion (reflector) and re-lists: every
    acknowledged write arrives exactly once, in order, and the list holds every object."""
    server = small_budget
    before = _terminated(server)
    start = _revision(server)
    lagging = RawWatch(server, f"{CONFIGMAPS}?watch=1&resourceVersion={start}&timeoutSeconds=120")
    written = _write_past_the_budget(server, "b")
    assert _wait_terminated(server, before + 1) == before + 1
    cut = lagging.read()
    lagging.close()
    assert cut.ended
    seen = [(int(e["object"]["metadata"]["resourceVersion"]), e["object"]["metadata"]["name"]) for e in cut.events()]
    last = seen[-1][0] if seen else start
    resumed = RawWatch(server, f"{CONFIGMAPS}?watch=1&resourceVersion={last}&timeoutSeconds=120", rcvbuf=1 << 20)
    more = resumed.read(idle=2.0)
    resumed.close()
    seen += [(int(e["object"]["metadata"]["resourceVersion"]), e["object"]["metadata"]["name"]) for e in more.events()]
    assert seen == written
    # re-list, then continue from the list's revision
    listed = call(server, "GET", CONFIGMAPS)
    names = {item["metadata"]["name"] for item in listed["items"]}
    assert {name for _, name in written} <= names
    follow = RawWatch(server, f"{CONFIGMAPS}?watch=1&resourceVersion={listed['metadata']['resourceVersion']}")
    rv = _create(server, "b-after")
    after = follow.read(idle=2.0).events()
    follow.close()
    assert [(e["type"], int(e["object"]["metadata"]["resourceVersion"])) for e in after] == [("ADDED", rv)]


def test_watch_list_is_terminated_gracefully_after_its_initial_events(small_budget: Server) -> None:
    """cacheWatcher.add with graceful = true: a WatchList watcher whose end bookmark is not sent yet still gets
    every initial event, the bookmark and what was buffered, then the stream ends. The initial events are not
    held as one write either: each HTTP chunk is at most one chunk and one event."""
    server = small_budget
    for i in range(30):
        _create(server, f"c-{i}", 2048)
    listed = {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in call(server, "GET", CONFIGMAPS)["items"]}
    before = _terminated(server)
    query = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
    lagging = RawWatch(server, f"{CONFIGMAPS}?{query}&timeoutSeconds=120")
    time.sleep(0.5)  # let the server open the watch before the writes (only an ordering aid; nothing is timed)
    written = _write_past_the_budget(server, "d")
    assert _wait_terminated(server, before + 1) == before + 1
    cut = lagging.read()
    lagging.close()
    assert cut.ended
    events = cut.events()
    end = next(i for i, e in enumerate(events) if e["type"] == "BOOKMARK")
    initial = {e["object"]["metadata"]["name"]: e["object"]["metadata"]["resourceVersion"] for e in events[:end]}
    assert initial == listed
    assert events[end]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    live = [
        (int(e["object"]["metadata"]["resourceVersion"]), e["object"]["metadata"]["name"]) for e in events[end + 1 :]
    ]
    assert live == written[: len(live)]
    assert max(len(c) for c in cut.chunks) <= WATCH_CHUNK + PAYLOAD + 512


def test_initial_events_are_written_in_bounded_chunks(small_budget: Server) -> None:
    """A watch from resourceVersion 0 over many objects: the synthetic ADDED events arrive in chunks of about
    WATCH_CHUNK bytes, not as one write of every object (watch.go writes event by event)."""
    server = small_budget
    for i in range(100):
        _create(server, f"e-{i}", 4096)
    names = {i["metadata"]["name"] for i in call(server, "GET", CONFIGMAPS)["items"]}
    watch = RawWatch(server, f"{CONFIGMAPS}?watch=1&resourceVersion=0&timeoutSeconds=60", rcvbuf=1 << 20)
    got = watch.read(idle=2.0)
    watch.close()
    assert {e["object"]["metadata"]["name"] for e in got.events()} == names
    assert len(got.chunks) > 1
    assert max(len(c) for c in got.chunks) <= WATCH_CHUNK + PAYLOAD + 512  # the largest object is an earlier test's


async def test_transitions_and_frames_are_shared_by_watchers() -> None:
    """convertToWatchEvent + cachingObject: two watchers with one selector get the same DELETED event (the
    previous state at the event's resourceVersion) and the same encoded line, made once."""
    reg = Registry(store=MemoryStore())
    await reg.start()
    try:
        configmaps = reg.resource("", "configmaps")
        await reg.create(configmaps, "default", {"metadata": {"name": "c", "labels": {"tier": "web"}}})
        options = WatchOptions(label_selector="tier=web", resource_version="0", buffer_bytes=BUDGET)
        first, second = (open_watch(reg, configmaps, "default", options) for _ in range(2))
        assert [e.type for e in first.drain()] == ["ADDED"]
        assert [e.type for e in second.drain()] == ["ADDED"]
        updated = await reg.update(configmaps, "default", "c", {"metadata": {"name": "c", "labels": {"tier": "db"}}})
        reg.cache(configmaps).sync()
        (a,), (b,) = first.drain(), second.drain()
        assert a is b
        assert a.type == "DELETED"
        assert a.obj["metadata"]["labels"] == {"tier": "web"}
        assert a.obj["metadata"]["resourceVersion"] == updated["metadata"]["resourceVersion"]
        assert a.frame() is b.frame()
    finally:
        await reg.stop()
