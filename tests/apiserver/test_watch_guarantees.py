"""Watch guarantees over HTTP, restart persistence, and 410 below compaction.

20 watchers follow one namespace while 4 writers create, update and delete pods; each watcher drops its
connection at random moments and re-watches from the last resourceVersion it saw. Every watcher must see
exactly the acknowledged writes after its start, in order, once each: the writers' own responses (each with
the resourceVersion of the write) are the ground truth.
"""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import Server, start_server

NS = "watched"
WRITERS, WATCHERS, WRITES_PER_WRITER = 4, 20, 60


def call(server: Server, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
    conn = server.connection(timeout=30)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": content_type}
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
    response = conn.getresponse()
    doc = json.loads(response.read())
    conn.close()
    assert response.status < 300, doc
    return doc


def writer(server: Server, n: int, acknowledged: list[tuple[int, str, str]], lock: threading.Lock) -> None:
    rng = random.Random(n)
    live: list[str] = []
    base = f"/api/v1/namespaces/{NS}/pods"
    for i in range(WRITES_PER_WRITER):
        roll = rng.random()
        if live and roll < 0.25:
            name = live.pop(rng.randrange(len(live)))
            doc = call(server, "DELETE", f"{base}/{name}")
            event = "DELETED"
        elif live and roll < 0.6:
            name = rng.choice(live)
            doc = call(
                server,
                "PATCH",
                f"{base}/{name}",
                {"metadata": {"labels": {"i": str(i)}}},
                "application/merge-patch+json",
            )
            event = "MODIFIED"
        else:
            name = f"w{n}-{i}"
            doc = call(
                server,
                "POST",
                base,
                {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
            )
            live.append(name)
            event = "ADDED"
        with lock:
            acknowledged.append((int(doc["metadata"]["resourceVersion"]), event, name))


def watcher(server: Server, start: int, seen: list[tuple[int, str, str]], stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    last = start
    while not stop.is_set():
        conn = server.connection(timeout=0.5)
        conn.request(
            "GET",
            f"/api/v1/namespaces/{NS}/pods?watch=1&resourceVersion={last}&timeoutSeconds=30",
            headers={"Authorization": f"Bearer {server.token}"},
        )
        response = conn.getresponse()
        assert response.status == 200
        budget = rng.randint(1, 40)  # drop the connection after this many events
        while budget > 0 and not stop.is_set():
            try:
                line = response.readline()
            except TimeoutError:  # idle: re-check stop, then re-watch from the last resourceVersion
                break
            if not line:
                break
            event = json.loads(line)
            assert event["type"] != "ERROR", event
            rv = int(event["object"]["metadata"]["resourceVersion"])
            seen.append((rv, event["type"], event["object"]["metadata"]["name"]))
            last = rv
            budget -= 1
        conn.close()


def test_no_lost_duplicated_or_reordered_events_across_reconnects(server: Server) -> None:
    call(server, "POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    start = int(call(server, "GET", f"/api/v1/namespaces/{NS}/pods")["metadata"]["resourceVersion"])
    acknowledged: list[tuple[int, str, str]] = []
    lock = threading.Lock()
    stop = threading.Event()
    seen: list[list[tuple[int, str, str]]] = [[] for _ in range(WATCHERS)]
    watchers = [threading.Thread(target=watcher, args=(server, start, seen[i], stop, i)) for i in range(WATCHERS)]
    writers = [threading.Thread(target=writer, args=(server, n, acknowledged, lock)) for n in range(WRITERS)]
    for thread in watchers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    expected = sorted(acknowledged)
    deadline = time.monotonic() + 60
    while any(len(s) < len(expected) for s in seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for thread in watchers:
        thread.join(timeout=60)
    assert len(expected) == WRITERS * WRITES_PER_WRITER
    for i, events in enumerate(seen):
        assert events[: len(expected)] == expected, f"watcher {i} diverged"
        assert len(events) == len(expected), f"watcher {i} saw extra events"


def test_watch_below_compaction_is_410_expired(tmp_path: Path) -> None:
    srv = start_server(tmp_path / "data", "--etcd-compaction-interval", "0.5")
    try:
        for i in range(3):
            call(srv, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": f"c{i}"}})
        page = call(srv, "GET", "/api/v1/namespaces/default/configmaps?limit=1")
        token = page["metadata"]["continue"]
        call(srv, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "later"}})
        # compaction ticks every 0.5 s, each compacting to the revision seen at the tick before: after a few,
        # everything up to "later" is compacted, including the revision the continue token pinned
        time.sleep(2.1)
        conn = srv.connection(timeout=30)
        conn.request(
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=2",
            headers={"Authorization": f"Bearer {srv.token}"},
        )
        response = conn.getresponse()
        event = json.loads(response.readline())
        conn.close()
        assert event["type"] == "ERROR"
        assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")
        assert "too old resource version" in event["object"]["message"]
        conn = srv.connection()
        conn.request(
            "GET",
            f"/api/v1/namespaces/default/configmaps?limit=1&continue={token}",
            headers={"Authorization": f"Bearer {srv.token}"},
        )
        expired = conn.getresponse()
        status = json.loads(expired.read())
        conn.close()
        assert (expired.status, status["reason"]) == (410, "Expired")
        assert status["message"].startswith("The provided continue parameter is too old")
        listed = call(srv, "GET", "/api/v1/namespaces/default/configmaps")
        assert [c["metadata"]["name"] for c in listed["items"]] == ["c0", "c1", "c2", "later"]
    finally:
        srv.stop()


def test_restart_keeps_every_object_and_continues_resource_versions(tmp_path: Path) -> None:
    data = tmp_path / "data"
    srv = start_server(data)
    try:
        created = [
            call(
                srv,
                "POST",
                "/api/v1/namespaces/default/configmaps",
                {"metadata": {"name": f"keep-{i}"}, "data": {"i": str(i)}},
            )
            for i in range(5)
        ]
        before = call(srv, "GET", "/api/v1/namespaces/default/configmaps")
    finally:
        srv.stop()
    assert srv.process.returncode == 0
    token = srv.token
    srv = start_server(data)
    try:
        assert srv.token == token, "the admin token survives a restart"
        after = call(srv, "GET", "/api/v1/namespaces/default/configmaps")
        assert after["items"] == before["items"]
        last = max(int(c["metadata"]["resourceVersion"]) for c in created)
        new = call(srv, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "after-restart"}})
        assert int(new["metadata"]["resourceVersion"]) > last
        namespaces = call(srv, "GET", "/api/v1/namespaces")
        assert sorted(n["metadata"]["name"] for n in namespaces["items"]) == [
            "default",
            "kube-node-lease",
            "kube-public",
            "kube-system",
        ]
    finally:
        srv.stop()


@pytest.mark.parametrize("count", [3])
def test_unset_resource_version_starts_with_synthetic_added(server: Server, count: int) -> None:
    call(server, "POST", "/api/v1/namespaces", {"metadata": {"name": "synthetic"}})
    for i in range(count):
        call(server, "POST", "/api/v1/namespaces/synthetic/configmaps", {"metadata": {"name": f"s{i}"}})
    conn = server.connection(timeout=30)
    conn.request(
        "GET",
        "/api/v1/namespaces/synthetic/configmaps?watch=1&timeoutSeconds=1&allowWatchBookmarks=true",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    lines = [json.loads(line) for line in conn.getresponse().read().splitlines() if line]
    conn.close()
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in lines[:count]] == [
        ("ADDED", f"s{i}") for i in range(count)
    ]
    # allowWatchBookmarks: the watch ends (timeoutSeconds) with a bookmark at the newest revision
    assert lines[-1]["type"] == "BOOKMARK"
    newest = int(call(server, "GET", "/api/v1/namespaces/synthetic/configmaps")["metadata"]["resourceVersion"])
    assert int(lines[-1]["object"]["metadata"]["resourceVersion"]) == newest


def test_tls_serves_https_verified_by_the_kubeconfig_ca(tmp_path: Path) -> None:
    from kubernetes import client, config

    srv = start_server(tmp_path / "data", tls=True)
    try:
        assert srv.address.startswith("https://127.0.0.1:")
        assert "certificate-authority-data: " in srv.kubeconfig.read_text()
        api = config.new_client_from_config(config_file=str(srv.kubeconfig))
        try:
            names = [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]
        finally:
            api.close()
        assert "kube-system" in names
        for key in ("ca.key", "server.key"):
            assert ((tmp_path / "data" / key).stat().st_mode & 0o777) == 0o600
    finally:
        srv.stop()
    assert srv.process.returncode == 0


def test_watch_list_sends_initial_events_then_an_end_bookmark(server: Server) -> None:
    """WatchList (kubectl rollout status, informers): current objects, a bookmark annotated
    k8s.io/initial-events-end, then changes."""
    call(server, "POST", "/api/v1/namespaces", {"metadata": {"name": "watchlist"}})
    for i in range(2):
        call(server, "POST", "/api/v1/namespaces/watchlist/configmaps", {"metadata": {"name": f"w{i}"}})
    conn = server.connection()
    conn.request(
        "GET",
        "/api/v1/namespaces/watchlist/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        "&allowWatchBookmarks=true&timeoutSeconds=1",
        headers={"Authorization": f"Bearer {server.token}"},
    )
    events = [json.loads(line) for line in conn.getresponse().read().splitlines() if line]
    conn.close()
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events[:2]] == [("ADDED", "w0"), ("ADDED", "w1")]
    end = events[2]
    assert end["type"] == "BOOKMARK"
    assert end["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    newest = call(server, "GET", "/api/v1/namespaces/watchlist/configmaps")["metadata"]["resourceVersion"]
    assert end["object"]["metadata"]["resourceVersion"] == newest


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("watch=1&sendInitialEvents=true", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
        ("sendInitialEvents=true", "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"),
        ("resourceVersionMatch=Exact", "resourceVersionMatch is forbidden unless resourceVersion is provided"),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
    ],
    ids=["watch-initial-events-needs-not-older-than", "list-initial-events", "match-needs-rv", "exact-at-zero"],
)
def test_list_options_are_validated_as_upstream(server: Server, query: str, message: str) -> None:
    conn = server.connection()
    conn.request(
        "GET", f"/api/v1/namespaces/default/configmaps?{query}", headers={"Authorization": f"Bearer {server.token}"}
    )
    response = conn.getresponse()
    status = json.loads(response.read())
    conn.close()
    assert (response.status, status["reason"], status["details"]["kind"]) == (422, "Invalid", "ListOptions")
    assert message in status["message"]
