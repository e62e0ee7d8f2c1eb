"""``kubeplane up --node-config`` as a process and the project's kubectl against it (this test's kubeconfig and
cache dir), for the acceptance tests that drive a whole cluster as a user does (storage, DRA)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"


class Cluster:
    """A running ``kubeplane up``: ``kubectl(...)`` (its stdout; a failure raises with the tail of up.log),
    ``get(...)`` as JSON, bounded ``wait``s, and the pod facts the tests read."""

    def __init__(self, tmp: Path, kubeconfig: Path) -> None:
        self.tmp, self.kubeconfig = tmp, kubeconfig

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        base = [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.tmp / "cache")]
        done = subprocess.run([*base, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            log = (self.tmp / "up.log").read_text()[-3000:]
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}\n--- up.log ---\n{log}")
        return done.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def wait(self, what: str, check: Callable[[], Any], timeout: float = 90) -> Any:
        deadline = time.monotonic() + timeout
        while not (value := check()):
            if time.monotonic() > deadline:
                log = (self.tmp / "up.log").read_text()[-3000:]
                raise AssertionError(f"timed out waiting for {what}\n--- up.log ---\n{log}")
            time.sleep(0.3)
        return value

    def phase(self, pod: str) -> str:
        return str(self.get("pod", pod).get("status", {}).get("phase"))

    def unschedulable_message(self, pod: str) -> str:
        """The PodScheduled=False condition's message (what ``kubectl describe`` shows), or ""."""
        for cond in self.get("pod", pod).get("status", {}).get("conditions") or ():
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                return str(cond.get("message") or "")
        return ""


@contextlib.contextmanager
def running_up(tmp: Path, node_config: str, ready_nodes: int, store: str = "memory") -> Iterator[Cluster]:
    """``kubeplane up`` (one process, ``store`` — memory by default, sqlite to restart on the same data —, port 0)
    on ``node_config``, yielded once ``ready_nodes`` nodes are Ready; stopped with SIGTERM (killed after 60 s) on
    exit. A second ``running_up`` on the same ``tmp`` is a restart (up.log is appended to)."""
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    (tmp / "nodes.yaml").write_text(node_config)
    data = tmp / "data"
    (data / "kubeconfig").unlink(missing_ok=True)  # a restart: wait for the new one (a new port)
    log = (tmp / "up.log").open("ab")
    up = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--store", store,
         "--node-config", str(tmp / "nodes.yaml"), "--pull-delay", "0", "--shutdown-delay", "0s"],
        stdout=log, stderr=log,
    )  # fmt: skip
    cluster = Cluster(tmp, data / "kubeconfig")
    try:
        cluster.wait("kubeplane up's kubeconfig", lambda: up.poll() is not None or cluster.kubeconfig.exists())
        assert up.poll() is None, (tmp / "up.log").read_text()
        cluster.wait(
            f"{ready_nodes} Ready nodes",
            lambda: cluster.kubectl("get", "nodes", "--no-headers").count(" Ready ") == ready_nodes,
        )
        yield cluster
    finally:
        os.kill(up.pid, signal.SIGTERM)
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
        log.close()
