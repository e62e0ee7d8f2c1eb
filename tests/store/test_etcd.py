"""etcd-specific behaviour of kubeplane.store.etcd on a real 3-member cluster.

The backend-neutral contract runs from test_semantics.py (the "etcd" backend of conftest) and, here, the
state machine of test_state_machine.py; this module adds what only a real cluster shows: member loss, several
stores on one etcd, and the key layout etcdctl sees.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from kubeplane.store.etcd import EtcdOptions, EtcdStore, EtcdUnavailable
from kubeplane.store.interface import Compacted, Event, KeyValue, Store, StoreError, Watch

from .etcd_cluster import ETCD, ETCDCTL, EtcdCluster, free_port
from .test_state_machine import _machine
from .validators import collect, validate_all, validate_ordered, validate_unique

# The Store property tests (hypothesis state machine) against etcd, each example on a fresh cluster.
TestEtcdStore = _machine("etcd", 8, steps=30).TestCase


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    c = EtcdCluster(tmp_path_factory.mktemp("etcd")).start()
    yield c
    c.stop()


def _store(cluster: EtcdCluster, **options: object) -> EtcdStore:
    return EtcdStore(EtcdOptions(endpoints=cluster.endpoints, **options))  # type: ignore[arg-type]


async def test_etcd_store_implements_the_store_protocol(cluster: EtcdCluster) -> None:
    store: Store = _store(cluster, key_prefix="/protocol")
    assert isinstance(store, Store)
    watch: Watch = store.watch("/registry/")
    assert isinstance(watch, Watch)
    await store.close()


async def test_etcdctl_shows_the_keys_kube_apiserver_uses(cluster: EtcdCluster) -> None:
    """Default layout: the store key is the etcd key and the revision is etcd's (resourceVersion = mod_revision)."""
    store = _store(cluster)
    other = _store(cluster, key_prefix="/cluster2")
    pod = orjson.dumps({"kind": "Pod", "metadata": {"name": "x", "namespace": "default"}})
    kv = await store.create("/registry/pods/default/x", pod)
    await other.create("/registry/pods/default/y", b"{}")
    out = cluster.etcdctl("get", "--prefix", "/registry/pods")
    assert out.splitlines() == ["/registry/pods/default/x", pod.decode()]
    raw = json.loads(cluster.etcdctl("get", "--prefix", "/registry/pods", "-w", "json"))
    assert raw["kvs"][0]["mod_revision"] == kv.mod_revision
    assert cluster.etcdctl("get", "--prefix", "--keys-only", "/cluster2").split() == ["/cluster2/pods/default/y"]
    # the two clusters sharing one etcd do not see each other's keys
    assert [k.key for k in (await store.range("/registry/")).kvs] == ["/registry/pods/default/x"]
    assert [k.key for k in (await other.range("/registry/")).kvs] == ["/registry/pods/default/y"]
    # the other cluster's write has no event under this store's prefix: without RequestProgress (etcd 3.5.1)
    # the store's revision still reaches it, carried by etcd's periodic progress notification
    theirs = await other.update("/registry/pods/default/y", b"{}")
    assert await store.request_progress() >= theirs.mod_revision
    assert store.revision >= theirs.mod_revision
    with pytest.raises(ValueError, match="outside the store root"):
        await store.create("/elsewhere", b"")
    await store.close()
    await other.close()


async def test_two_stores_on_one_etcd_see_each_others_writes_in_order(cluster: EtcdCluster) -> None:
    a = _store(cluster, key_prefix="/two")
    b = _store(cluster, key_prefix="/two")
    await a.start()
    await b.start()
    watch_b = b.watch("/registry/")
    watch_a = a.watch("/registry/")
    history: list[Event] = []
    mine: list[KeyValue] = []
    for i in range(30):
        writer = a if i % 3 else b
        mine.append(await writer.create(f"/registry/x/{i:02d}", str(i).encode()))
    got_b = await collect(watch_b, 30)
    got_a = await collect(watch_a, 30)
    history = got_a
    assert [e.kv for e in got_a] == mine
    start = mine[0].mod_revision
    validate_all(got_b, history, prefix="/registry/", start=start)
    assert a.revision == b.revision == mine[-1].mod_revision
    # a progress request pulls a store's revision up to writes made elsewhere
    await a.update("/registry/x/00", b"again")
    assert await b.request_progress() == a.revision
    # ... without RequestProgress on etcd 3.5.1 (pyproject pins the wheel), whose answer may overtake queued
    # events (etcd#15220): kube-apiserver's RequestWatchProgress check says unsupported
    assert a.progress_requests_supported is b.progress_requests_supported is False
    assert a.progress_requests_sent == b.progress_requests_sent == 0
    # a compaction through one store is learned by the other when it reads below it
    await a.compact(a.revision)
    with pytest.raises(Compacted):
        await b.get("/registry/x/00", revision=start)
    assert b.compacted_revision > start
    for s in (a, b):
        await s.close()


async def test_member_loss_loses_and_duplicates_no_event(tmp_path: Path) -> None:
    """SIGKILL the member the store talks to while a watch and a writer run: the watch resumes exactly."""
    cluster = EtcdCluster(tmp_path / "etcd").start()
    try:
        store = _store(cluster, request_timeout=5.0)
        await store.start()
        watch = store.watch("/registry/")
        acknowledged: list[KeyValue] = []
        unknown: list[str] = []
        killed = asyncio.Event()

        async def writer() -> None:
            for i in range(150):
                key = f"/registry/pods/ns/p{i:03d}"
                try:
                    acknowledged.append(await store.create(key, b"v"))
                except EtcdUnavailable:
                    unknown.append(key)  # in flight when its member died: either outcome is allowed
                if i == 50:
                    victim = cluster.members[store._connection._index % len(cluster.members)]
                    await asyncio.to_thread(cluster.kill, victim)
                    killed.set()

        await asyncio.wait_for(writer(), 60)
        assert killed.is_set()
        after_kill = [kv for kv in acknowledged if int(kv.key[-3:]) > 50]
        assert len(after_kill) >= 90, "writes must keep succeeding on the surviving members"
        final = await store.range("/registry/pods/")
        present = {kv.key for kv in final.kvs}
        assert {kv.key for kv in acknowledged} <= present, "an acknowledged write was lost"
        events = await collect(watch, len(present), timeout=20)
        validate_ordered(events)
        validate_unique(events)
        assert [e.kv for e in events] == sorted(final.kvs, key=lambda kv: kv.mod_revision)
        assert store.revision == events[-1].revision
        await store.close()
    finally:
        cluster.stop()


def _single_etcd(tmp_path: Path, *extra: str, scheme: str = "http") -> tuple[subprocess.Popen[bytes], str]:
    """One etcd member (a process of this test) on a free loopback port; ``extra`` flags (TLS) as given."""
    port, peer = free_port(), free_port()
    url = f"{scheme}://127.0.0.1:{port}"
    log = (tmp_path / "etcd.log").open("ab")
    process = subprocess.Popen(
        [str(ETCD), "--name", "solo", "--data-dir", str(tmp_path / "solo"), "--listen-client-urls", url,
         "--advertise-client-urls", url, "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-cluster", f"solo=http://127.0.0.1:{peer}", "--unsafe-no-fsync", "--log-level", "warn",
         "--experimental-watch-progress-notify-interval", "100ms", *extra],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    log.close()
    return process, url


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


async def _round_trip(store: EtcdStore) -> None:
    kv = await store.create("/registry/pods/default/tls", b"{}")
    got = await store.get("/registry/pods/default/tls")
    assert got is not None
    assert got.mod_revision == kv.mod_revision


async def test_tls_to_etcd_verifies_its_certificate(tmp_path: Path) -> None:
    """``ca_file``: the store speaks TLS to etcd and verifies the server against that CA."""
    from kubeplane.apiserver.tls import ensure_serving_certs

    certs = ensure_serving_certs(tmp_path / "pki")
    process, url = _single_etcd(tmp_path, "--cert-file", str(certs.cert), "--key-file", str(certs.key),
                                scheme="https")  # fmt: skip
    try:
        store = EtcdStore(EtcdOptions(endpoints=[url], ca_file=certs.ca, dial_timeout=10.0))
        try:
            await _round_trip(store)
        finally:
            await store.close()
        other = ensure_serving_certs(tmp_path / "other-pki")  # a CA that did not sign etcd's certificate
        untrusting = EtcdStore(EtcdOptions(endpoints=[url], ca_file=other.ca, dial_timeout=2.0))
        try:
            with pytest.raises(StoreError):
                await untrusting.get("/registry/pods/default/tls")
        finally:
            await untrusting.close()
    finally:
        _stop(process)


async def test_username_and_password_when_etcd_enforces_auth(tmp_path: Path) -> None:
    process, url = _single_etcd(tmp_path)
    try:
        env = {**os.environ, "ETCDCTL_API": "3"}
        for args in (["user", "add", "root:s3cret", "--interactive=false"], ["auth", "enable"]):
            deadline = time.monotonic() + 20
            while subprocess.run([str(ETCDCTL), "--endpoints", url, *args], env=env, capture_output=True,
                                 timeout=20, check=False).returncode != 0:  # fmt: skip
                assert time.monotonic() < deadline, args
                time.sleep(0.2)
        store = EtcdStore(EtcdOptions(endpoints=[url], username="root", password="s3cret"))
        try:
            await _round_trip(store)
        finally:
            await store.close()
        anonymous = EtcdStore(EtcdOptions(endpoints=[url], dial_timeout=2.0))
        try:
            with pytest.raises(StoreError):
                await anonymous.create("/registry/pods/default/nope", b"{}")
        finally:
            await anonymous.close()
    finally:
        _stop(process)


def test_cluster_start_retries_on_a_port_taken_before_etcd_binds_it(tmp_path: Path) -> None:
    """The harness picks free ports before etcd binds them; one taken in between restarts on fresh ports."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        cluster = EtcdCluster(tmp_path / "etcd", size=1)
        cluster.members[0].client_port = int(taken.getsockname()[1])
        try:
            cluster.start()
            assert cluster.members[0].client_port != taken.getsockname()[1]
            assert "address already in use" in (tmp_path / "etcd" / "m0.log").read_text()
            assert cluster.etcdctl("put", "k", "v").strip() == "OK"
        finally:
            cluster.stop()
        assert not any(m.running for m in cluster.members)
