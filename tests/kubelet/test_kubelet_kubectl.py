"""Issue 10's acceptance through real kubectl: ``kubeplane up`` (API server on HTTPS, controllers, scheduler and
the kubelet fleet in one process) with a node config, and ``kubeplane kubelet`` as its own process.

Pinned: a Deployment's pods become Running with IPs from their node's podCIDR; ``kubectl describe pod`` lists
Scheduled, Pulling, Pulled, Created, Started in that order, from default-scheduler then kubelet; a pod given a
nodeName has no Scheduled event; a pod bound by hand to a node without room fails admission with OutOfcpu;
static pod manifests appear as mirror pods owned by their Node, and a deleted mirror pod comes back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apiserver.conftest import start_server
from tests.apiserver.up_cluster import eventually

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"

NODE_CONFIG = """\
nodes:
- name: master
  labels: {node-role.kubernetes.io/control-plane: ""}
  taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
  staticPodPath: STATIC
- count: 2
  namePattern: "node{index:02d}"
  capacity: {cpu: "2", memory: 4Gi, pods: "20"}
  zones: [zone-a, zone-b]
  images: {"busybox:1.36": 4Mi}
"""

ETCD = """\
apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system, labels: {component: etcd}}
spec:
  containers:
  - {name: etcd, image: "registry.k8s.io/etcd:3.5.21-0"}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., str]]:
    tmp = tmp_path_factory.mktemp("up")
    static = tmp / "static"
    static.mkdir()
    (static / "etcd.yaml").write_text(ETCD)
    config = tmp / "nodes.yaml"
    config.write_text(NODE_CONFIG.replace("STATIC", str(static)))
    data = tmp / "data"
    log = (tmp / "up.log").open("wb")
    process = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--node-config", str(config),
         "--pull-delay", "0.2", "--shutdown-delay", "1s"],
        stdout=log, stderr=log,
    )  # fmt: skip
    kubeconfig = data / "kubeconfig"
    try:
        eventually(lambda: kubeconfig.exists() or process.poll() is not None, "kubeplane up", 60)
        assert process.poll() is None, (tmp / "up.log").read_text()

        def kubectl(*args: str, stdin: str | None = None, check: bool = True) -> str:
            done = subprocess.run(
                [str(KUBECTL), "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp / "cache"), *args],
                input=stdin, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            if check and done.returncode != 0:
                raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr}")
            return done.stdout

        yield kubectl
    finally:
        os.kill(process.pid, signal.SIGTERM)
        try:
            code = process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
            log.close()
        assert code == 0, (tmp / "up.log").read_text()[-3000:]


def pods(kubectl: Callable[..., str], *args: str) -> list[dict[str, Any]]:
    return list(json.loads(kubectl("get", "pods", "-o", "json", *args))["items"])


def describe_events(kubectl: Callable[..., str], name: str) -> list[tuple[str, str]]:
    """(reason, from) of the Events table of ``kubectl describe pod``."""
    text = kubectl("describe", "pod", name)
    lines = text.split("Events:", 1)[1].strip().splitlines()[2:]
    return [(line.split()[1], line.split()[3]) for line in lines if line.strip()]


def test_deployment_pods_run_with_ips_and_kubelet_events(cluster: Callable[..., str]) -> None:
    kubectl = cluster
    nodes = kubectl("get", "nodes", "-o", "custom-columns=N:.metadata.name,R:.status.conditions[-1:].status,"
                    "C:.spec.podCIDR,Z:.metadata.labels.topology\\.kubernetes\\.io/zone", "--no-headers")  # fmt: skip
    assert [line.split() for line in nodes.splitlines()] == [
        ["master", "True", "10.244.0.0/24", "<none>"],
        ["node01", "True", "10.244.1.0/24", "zone-a"],
        ["node02", "True", "10.244.2.0/24", "zone-b"],
    ]
    kubectl("create", "deployment", "web", "--image=nginx", "--replicas=4")

    def running() -> list[dict[str, Any]] | None:
        found = pods(kubectl, "-l", "app=web")
        ok = len(found) == 4 and all(p.get("status", {}).get("phase") == "Running" for p in found)
        return found if ok else None

    found = eventually(running, "4 web pods Running")
    for pod in found:
        node, ip = pod["spec"]["nodeName"], pod["status"]["podIP"]
        assert node in ("node01", "node02")
        assert ip.startswith("10.244.1." if node == "node01" else "10.244.2.")
        assert pod["status"]["hostIP"] in ("172.18.0.3", "172.18.0.4")
    assert len({p["status"]["podIP"] for p in found}) == 4
    name = found[0]["metadata"]["name"]
    events = eventually(lambda: (e := describe_events(kubectl, name)) and len(e) >= 5 and e, "5 events")
    assert events == [
        ("Scheduled", "default-scheduler"),
        ("Pulling", "kubelet"),
        ("Pulled", "kubelet"),
        ("Created", "kubelet"),
        ("Started", "kubelet"),
    ]
    wide = kubectl("get", "pods", "-l", "app=web", "-o", "wide", "--no-headers")
    assert all(line.split()[1] == "1/1" and line.split()[2] == "Running" for line in wide.splitlines())
    kubectl("delete", "deployment", "web")


def test_node_name_pod_has_no_scheduled_event(cluster: Callable[..., str]) -> None:
    kubectl = cluster
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pinned"},
        "spec": {"nodeName": "node02", "containers": [{"name": "box", "image": "busybox:1.36",
                                                        "command": ["sleep", "3600"]}]},
    }  # fmt: skip
    kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
    eventually(lambda: "Running" in kubectl("get", "pod", "pinned", "-o", "jsonpath={.status.phase}"), "Running")
    events = eventually(lambda: (e := describe_events(kubectl, "pinned")) and len(e) >= 3 and e, "3 events")
    assert events == [("Pulled", "kubelet"), ("Created", "kubelet"), ("Started", "kubelet")]  # image on the node
    assert "already present on machine" in kubectl("describe", "pod", "pinned")
    kubectl("delete", "pod", "pinned")


def test_a_pod_bound_to_a_full_node_fails_admission(cluster: Callable[..., str]) -> None:
    kubectl = cluster
    big = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "too-big"},
        "spec": {"nodeName": "node01", "containers": [{"name": "c", "image": "nginx",
                                                        "resources": {"requests": {"cpu": "3"}}}]},
    }  # fmt: skip
    kubectl("apply", "-f", "-", stdin=json.dumps(big))
    eventually(lambda: kubectl("get", "pod", "too-big", "-o", "jsonpath={.status.phase}") == "Failed", "Failed")
    status = json.loads(kubectl("get", "pod", "too-big", "-o", "json"))["status"]
    assert status["reason"] == "OutOfcpu"
    assert status["message"] == "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"
    assert "OutOfcpu" in kubectl("get", "pod", "too-big", "--no-headers")
    assert "Warning  OutOfcpu" in kubectl("describe", "pod", "too-big")
    kubectl("delete", "pod", "too-big")


def test_static_pods_appear_as_mirror_pods(cluster: Callable[..., str]) -> None:
    kubectl = cluster

    def mirror() -> dict[str, Any] | None:
        found = pods(kubectl, "-n", "kube-system", "--field-selector", "metadata.name=etcd-master")
        return found[0] if found and found[0].get("status", {}).get("phase") == "Running" else None

    pod = eventually(mirror, "etcd-master Running")
    annotations = pod["metadata"]["annotations"]
    assert annotations["kubernetes.io/config.mirror"] == annotations["kubernetes.io/config.hash"]
    assert pod["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert pod["spec"]["nodeName"] == "master"
    kubectl("delete", "pod", "-n", "kube-system", "etcd-master", "--wait=false")
    uid = pod["metadata"]["uid"]
    again = eventually(lambda: (p := mirror()) and p["metadata"]["uid"] != uid and p, "mirror pod back")
    assert again["status"]["podIP"] == pod["status"]["podIP"]


def test_kubelet_command_runs_a_fleet_against_an_api_server(tmp_path: Path) -> None:
    server = start_server(tmp_path / "data", tls=True)
    config = tmp_path / "nodes.yaml"
    config.write_text("- count: 3\n  namePattern: sim-{index}\n  labels: {pool: sim}\n")
    log = (tmp_path / "kubelet.log").open("wb")
    fleet = subprocess.Popen(
        [*KUBEPLANE, "kubelet", "--kubeconfig", str(server.kubeconfig), "--node-config", str(config),
         "--metrics-port=0", "--pull-delay", "0"],
        stdout=log, stderr=log,
    )  # fmt: skip
    base = [str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(tmp_path / "cache")]

    def kubectl(*args: str) -> str:
        return subprocess.run([*base, *args], capture_output=True, text=True, timeout=60, check=True).stdout

    try:
        eventually(lambda: kubectl("get", "nodes", "-l", "pool=sim", "--no-headers").count(" Ready ") == 3, "nodes")
        kubectl("run", "solo", "--image=nginx", "--overrides", '{"spec": {"nodeName": "sim-2"}}')
        eventually(lambda: kubectl("get", "pod", "solo", "-o", "jsonpath={.status.phase}") == "Running", "Running")
        assert kubectl("get", "pod", "solo", "-o", "jsonpath={.status.podIP}").startswith("10.244.1.")
        # issue 23: over HTTP too, the API server reaches this fleet's kubelet API for logs and metrics
        assert kubectl("logs", "solo").startswith("kubeplane: started container solo (image nginx)")
        assert [row.split()[0] for row in kubectl("top", "nodes", "-l", "pool=sim", "--no-headers").splitlines()] == [
            "sim-1", "sim-2", "sim-3"]  # fmt: skip
    finally:
        os.kill(fleet.pid, signal.SIGTERM)
        assert fleet.wait(timeout=20) == 0, (tmp_path / "kubelet.log").read_text()[-2000:]
        log.close()
        server.stop()


def test_kubelet_command_rejects_a_bad_node_config(tmp_path: Path) -> None:
    config = tmp_path / "nodes.yaml"
    config.write_text("- count: 2\n  capacity: {cpu: lots}\n")
    command = [*KUBEPLANE, "kubelet", "--node-config", str(config)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("error: node group #1: capacity.cpu: invalid quantity 'lots'")
