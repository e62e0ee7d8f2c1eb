"""A ``kubeplane up`` cluster (one process: API server, controllers, scheduler, kubelet fleet) for acceptance tests
that need kubelets: ``pods/log`` and ``metrics.k8s.io``. Started by PID, stopped with SIGTERM; kubectl runs as
``.venv/bin/kubectl`` with the cluster's own kubeconfig and cache dir (never ~/.kube/config)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.apiserver.conftest import stop_process

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"


def eventually(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@dataclass
class Cluster:
    tmp: Path
    kubeconfig: Path
    process: subprocess.Popen[bytes]

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True, timeout: float = 60) -> str:
        done = self.run(*args, stdin=stdin, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}")
        return done.stdout

    def run(self, *args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.tmp / "cache"), *args],
            input=stdin, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip

    def phase(self, name: str) -> str:
        out = self.run("get", "pod", name, "-o", "jsonpath={.status.phase}")
        return out.stdout if out.returncode == 0 else ""

    def apply(self, doc: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin=json.dumps(doc))

    def running(self, name: str, timeout: float = 30) -> None:
        eventually(lambda: self.phase(name) == "Running", f"pod {name} Running", timeout)


def start_cluster(tmp: Path) -> Iterator[Cluster]:
    """Yield a ready cluster (its kubeconfig written), then stop it and check it exited cleanly."""
    data = tmp / "data"
    log_path = tmp / "up.log"
    log = log_path.open("wb")
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--store", "memory", "--pull-delay", "0"],
        stdout=log, stderr=log,
    )  # fmt: skip
    kubeconfig = data / "kubeconfig"
    try:
        eventually(lambda: kubeconfig.exists() or process.poll() is not None, "kubeplane up", 60)
        assert process.poll() is None, log_path.read_text()
        yield Cluster(tmp, kubeconfig, process)
    finally:
        stop_process(process, timeout=30)
        log.close()
    assert process.returncode == 0, log_path.read_text()[-3000:]


def pod(name: str, *, annotations: dict[str, str] | None = None, containers: list[dict[str, Any]] | None = None,
        **spec: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}},
        "spec": {"containers": containers or [{"name": "app", "image": "busybox:1.36"}], **spec},
    }
