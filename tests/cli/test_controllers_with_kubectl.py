"""Issue 9's acceptance with real kubectl: ``kubeplane apiserver``, ``kubeplane scheduler`` and ``kubeplane
controller-manager`` as processes, and ``kubeplane kubelet`` (three simulated nodes; containers stop at once on
deletion), and the project's kubectl driving a Deployment through create, scale, a rolling update,
``rollout history`` and ``rollout undo``, seed 003's ``kubectl taint node node02 check=mycheck:NoExecute``, and
``kubectl drain --ignore-daemonsets`` honouring a PodDisruptionBudget (429s retried) while a DaemonSet's pod
stays on the drained node."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apiserver.conftest import Server, start_server, stop_process

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"


NODE_CONFIG = """\
- count: 3
  namePattern: "node{index:02d}"
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Server, Any]]:
    server = start_server(tmp_path / "data", tls=True)
    logs = []
    processes = []
    (tmp_path / "nodes.yaml").write_text(NODE_CONFIG)
    kubelet_args = ["--node-config", str(tmp_path / "nodes.yaml"), "--pull-delay", "0", "--shutdown-delay", "0s"]
    for component, args in (
        ("scheduler", ["--leader-elect=false"]),
        ("controller-manager", ["--leader-elect=false"]),
        ("kubelet", kubelet_args),
    ):
        log = (tmp_path / f"{component}.log").open("wb")
        logs.append(log)
        processes.append(
            subprocess.Popen(
                [*KUBEPLANE, component, "--kubeconfig", str(server.kubeconfig), "--metrics-port=0", *args],
                stdout=log,
                stderr=log,
            )
        )
    base = [str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(tmp_path / "cache")]

    def kubectl(*args: str, stdin: str | None = None, stderr: bool = False) -> str:
        done = subprocess.run([*base, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            logs_text = "\n".join(
                (tmp_path / f"{c}.log").read_text()[-1500:] for c in ("scheduler", "controller-manager")
            )
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}\n{logs_text}")
        return done.stdout + (done.stderr if stderr else "")

    try:
        deadline = time.monotonic() + 60
        while kubectl("get", "nodes", "--no-headers").count(" Ready ") < 3:
            assert time.monotonic() < deadline, "the kubelet fleet did not register 3 Ready nodes"
            time.sleep(0.2)
        yield server, kubectl
    finally:
        for process in processes:
            stop_process(process)
        for log in logs:
            log.close()
        server.stop()


def _pods(kubectl: Any) -> list[dict[str, Any]]:
    items = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json"))["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


def test_deployment_lifecycle_and_taint_eviction_with_kubectl(cluster: tuple[Server, Any]) -> None:
    _server, kubectl = cluster
    kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert len(_pods(kubectl)) == 3

    kubectl("scale", "deployment/web", "--replicas=5")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    kubectl("scale", "deployment/web", "--replicas=2")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    deadline = time.monotonic() + 30
    while len(_pods(kubectl)) != 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_pods(kubectl)) == 2

    kubectl("set", "image", "deployment/web", "nginx=nginx:1.28")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    assert {p["spec"]["containers"][0]["image"] for p in _pods(kubectl)} == {"nginx:1.28"}
    history = kubectl("rollout", "history", "deployment/web")
    assert "REVISION" in history
    assert "2" in history.split()

    kubectl("rollout", "undo", "deployment/web")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    deadline = time.monotonic() + 30
    while {p["spec"]["containers"][0]["image"] for p in _pods(kubectl)} != {"nginx:1.27"}:
        assert time.monotonic() < deadline, _pods(kubectl)
        time.sleep(0.2)
    deployment = json.loads(kubectl("get", "deployment", "web", "-o", "json"))
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert "web" in kubectl("get", "deploy")
    before = {p["metadata"]["name"] for p in _pods(kubectl)}
    kubectl("rollout", "restart", "deployment/web")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    deadline = time.monotonic() + 30
    while {p["metadata"]["name"] for p in _pods(kubectl)} & before:
        assert time.monotonic() < deadline, "rollout restart did not replace the pods"
        time.sleep(0.2)
    template = json.loads(kubectl("get", "deployment", "web", "-o", "json"))["spec"]["template"]
    assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]

    # Seed 003: a NoExecute taint evicts node02's pods; the ReplicaSet recreates them on other nodes.
    kubectl("scale", "deployment/web", "--replicas=6")
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    kubectl("taint", "node", "node02", "check=mycheck:NoExecute")
    deadline = time.monotonic() + 60
    while True:
        pods = _pods(kubectl)
        nodes = [p["spec"].get("nodeName") for p in pods]
        if len(pods) == 6 and all(nodes) and "node02" not in nodes:
            break
        assert time.monotonic() < deadline, nodes
        time.sleep(0.3)
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")

    # Drain node01: a PDB lets one web pod go at a time (kubectl retries the 429s), the DaemonSet pod stays.
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "template": {
                "metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "busybox"}]},
            },
        },
    }
    kubectl("apply", "-f", "-", stdin=json.dumps(daemonset))
    kubectl("rollout", "status", "daemonset/agent", "--timeout=60s")
    kubectl("create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=5")
    deadline = time.monotonic() + 30
    while json.loads(kubectl("get", "pdb", "web", "-o", "json")).get("status", {}).get("disruptionsAllowed") != 1:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    on_node01 = [p["metadata"]["name"] for p in _pods(kubectl) if p["spec"].get("nodeName") == "node01"]
    assert len(on_node01) >= 2  # so the budget must throttle the drain
    drained = kubectl("drain", "node01", "--ignore-daemonsets", "--timeout=90s", stderr=True)
    assert "node/node01 drained" in drained
    assert "Warning: ignoring DaemonSet-managed Pods: default/agent-" in drained
    assert "Cannot evict pod as it would violate the pod's disruption budget." in drained, drained
    assert kubectl("get", "node", "node01", "-o", "jsonpath={.spec.unschedulable}") == "true"
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    web_nodes = {p["spec"].get("nodeName") for p in _pods(kubectl)}
    assert "node01" not in web_nodes
    agents = json.loads(kubectl("get", "pods", "-l", "app=agent", "-o", "json"))["items"]
    assert "node01" in {p["spec"].get("nodeName") for p in agents}
