"""``kubeplane up``: input errors are one line; a thousand nodes come up Ready (issue 11's acceptance asks for
under 60 s: the wait below is bounded by that, the figure itself goes to the issue note, not an assertion)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "etcd"], "error: --store etcd needs --etcd-servers URL[,URL...]"),
        (["--store", "mysql"], "error: --store must be sqlite, memory or etcd, not 'mysql'"),
        (["--port", "70000"], "error: --port must be between 0 and 65535, not 70000"),
        (["--nodes", "2", "--node-config", "x.yaml"], "error: give either --node-config or --nodes, not both"),
        (["--node-config", "missing.yaml"], "error: cannot read node config missing.yaml: No such file or directory"),
        (["--shutdown-delay", "soon"], 'error: --shutdown-delay: time: invalid duration "soon"'),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    done = subprocess.run(
        [*KUBEPLANE, "up", "--data-dir", str(tmp_path / "d"), *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == message
    assert not (tmp_path / "d" / "kubeconfig").exists()


def test_a_thousand_nodes_come_up_ready(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = (tmp_path / "up.log").open("wb")
    started = time.monotonic()
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--nodes", "1000", "--store", "memory"],
        stdout=log, stderr=log,
    )  # fmt: skip
    try:
        kubeconfig = data / "kubeconfig"
        while not kubeconfig.exists():
            assert process.poll() is None, (tmp_path / "up.log").read_text()
            assert time.monotonic() - started < 60, "kubeplane up --nodes 1000 not ready within 60 s"
            time.sleep(0.1)
        out = subprocess.run(
            [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"),
             "get", "nodes", "--no-headers"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        rows = [line.split() for line in out.splitlines()]
        assert len(rows) == 1001
        assert all(row[1] == "Ready" for row in rows)
        assert {row[0] for row in rows} >= {"master", "node0001", "node1000"}
    finally:
        os.kill(process.pid, signal.SIGTERM)
        code = process.wait(timeout=30)
        log.close()
    assert code == 0


def test_a_restart_on_the_same_data_dir_brings_the_cluster_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    kubeconfig = data / "kubeconfig"

    def up() -> subprocess.Popen[bytes]:
        kubeconfig.unlink(missing_ok=True)  # the previous run's, until the new one replaces it
        process = subprocess.Popen(
            [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--pull-delay", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            assert process.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.1)
        return process

    def kubectl(*args: str) -> str:
        base = [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache")]
        return subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=True).stdout

    def pods() -> list[str]:
        columns = "custom-columns=N:.metadata.name,P:.status.phase,IP:.status.podIP,NODE:.spec.nodeName"
        return sorted(kubectl("get", "pods", "-o", columns, "--no-headers").splitlines())

    first = up()
    try:
        kubectl("create", "deployment", "web", "--image=nginx", "--replicas=3")
        deadline = time.monotonic() + 60
        while [line.split()[1] for line in pods()] != ["Running"] * 3:
            assert time.monotonic() < deadline, pods()
            time.sleep(0.2)
        before = pods()
    finally:
        os.kill(first.pid, signal.SIGTERM)
        assert first.wait(timeout=30) == 0
    second = up()
    try:
        time.sleep(1.0)  # the fleet has adopted the pods: nothing may change
        assert pods() == before
        assert kubectl("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}") == "3"
    finally:
        os.kill(second.pid, signal.SIGTERM)
        assert second.wait(timeout=30) == 0


def test_up_on_etcd_keeps_the_objects_under_kube_apiservers_keys(tmp_path: Path) -> None:
    from tests.store.etcd_cluster import EtcdCluster

    cluster = EtcdCluster(tmp_path / "etcd").start()
    data = tmp_path / "data"
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--store", "etcd",
         "--etcd-servers", ",".join(cluster.endpoints), "--pull-delay", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (data / "kubeconfig").exists():
            assert process.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.1)
        base = [str(KUBECTL), "--kubeconfig", str(data / "kubeconfig"), "--cache-dir", str(tmp_path / "cache")]
        subprocess.run([*base, "run", "solo", "--image=nginx:1.27"], check=True, capture_output=True, timeout=60)
        phase = [*base, "get", "pod", "solo", "-o", "jsonpath={.status.phase}"]
        while "Running" not in subprocess.run(phase, capture_output=True, text=True, timeout=60, check=False).stdout:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        keys = cluster.etcdctl("get", "--prefix", "/registry/", "--keys-only").split()
        assert "/registry/pods/default/solo" in keys
        assert {"/registry/minions/master", "/registry/minions/node01", "/registry/minions/node02"} <= set(keys)
    finally:
        os.kill(process.pid, signal.SIGTERM)
        code = process.wait(timeout=30)
        cluster.stop()
    assert code == 0
