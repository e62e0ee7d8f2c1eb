"""Issue 27's acceptance with real kubectl against ``kubeplane up`` (one process; the project's kubectl with this
test's kubeconfig and cache dir): node01 has two "A100" devices and node02 one "T4" of the simulated DRA driver
gpu.example.com (the node config's ``devices:``; the fleet publishes their ResourceSlices as a kubelet plugin
does), a DeviceClass and a ResourceClaimTemplate selecting ``device.attributes["gpu.example.com"].model ==
"A100"``. Everything between ``kubectl apply`` and a Running pod is the control plane's own work: the
resourceclaim controller's claim from the template, DynamicResources' allocation and PreBind (status.allocation,
reservedFor), the kubelet's NodePrepareResources.

Pins: pkg/controller/resourceclaim (claims from templates, pod.status.resourceClaimStatuses),
pkg/scheduler/framework/plugins/dynamicresources (Filter's "cannot allocate all claims", PreBind), the structured
allocator (a device allocated once), pkg/kubelet/cm/dra (prepare before the containers)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

KUBEPLANE = [sys.executable, "-m", "kubeplane.cli.main"]
KUBECTL = Path(sys.executable).parent / "kubectl"

NODES = """\
csiDrivers: []
nodes:
- name: node01
  devices: [{driver: gpu.example.com, count: 2, attributes: {model: A100}, capacity: {memory: 80Gi}}]
- name: node02
  devices: [{driver: gpu.example.com, count: 1, attributes: {model: T4}, capacity: {memory: 16Gi}}]
"""

CLASS_AND_TEMPLATE = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: a100}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          selectors:
          - cel: {expression: 'device.attributes["gpu.example.com"].model == "A100"'}
"""


def _pod(name: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  resourceClaims: [{{name: gpu, resourceClaimTemplateName: a100}}]
  containers:
  - name: cuda
    image: cuda:12
    resources: {{claims: [{{name: gpu}}]}}
"""


class Cluster:
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
        for cond in self.get("pod", pod).get("status", {}).get("conditions") or ():
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                return str(cond.get("message") or "")
        return ""

    def claim_of(self, pod: str) -> dict[str, Any]:
        statuses = self.get("pod", pod)["status"].get("resourceClaimStatuses") or []
        (status,) = statuses
        claim: dict[str, Any] = self.get("resourceclaim", status["resourceClaimName"])
        return claim


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    (tmp_path / "nodes.yaml").write_text(NODES)
    data = tmp_path / "data"
    log = (tmp_path / "up.log").open("wb")
    up = subprocess.Popen(
        [*KUBEPLANE, "up", "--data-dir", str(data), "--port", "0", "--store", "memory",
         "--node-config", str(tmp_path / "nodes.yaml"), "--pull-delay", "0", "--shutdown-delay", "0s"],
        stdout=log, stderr=log,
    )  # fmt: skip
    cluster = Cluster(tmp_path, data / "kubeconfig")
    try:
        cluster.wait("kubeplane up's kubeconfig", lambda: up.poll() is not None or cluster.kubeconfig.exists())
        assert up.poll() is None, (tmp_path / "up.log").read_text()
        cluster.wait("2 Ready nodes", lambda: cluster.kubectl("get", "nodes", "--no-headers").count(" Ready ") == 2)
        cluster.wait("2 ResourceSlices", lambda: len(cluster.get("resourceslices")["items"]) == 2)
        yield cluster
    finally:
        os.kill(up.pid, signal.SIGTERM)
        try:
            up.wait(timeout=60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.wait()
        log.close()


def test_a100_claims_land_on_node01_until_its_devices_are_taken(cluster: Cluster) -> None:
    slices = {s["spec"]["nodeName"]: s for s in cluster.get("resourceslices")["items"]}
    models = {n: [d["attributes"]["model"]["string"] for d in s["spec"]["devices"]] for n, s in slices.items()}
    assert models == {"node01": ["A100", "A100"], "node02": ["T4"]}
    cluster.kubectl("apply", "-f", "-", stdin=CLASS_AND_TEMPLATE)
    cluster.kubectl("apply", "-f", "-", stdin=_pod("train-1") + "---\n" + _pod("train-2"))
    cluster.wait("both pods Running", lambda: cluster.phase("train-1") == cluster.phase("train-2") == "Running")
    devices = set()
    for pod in ("train-1", "train-2"):
        assert cluster.get("pod", pod)["spec"]["nodeName"] == "node01"
        claim = cluster.claim_of(pod)
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"], result["request"]) == ("gpu.example.com", "node01", "gpu")
        devices.add(result["device"])
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [pod]
    assert devices == {"gpu-0", "gpu-1"}  # each A100 allocated once

    # a third A100 claim: node01's are taken, node02 has a T4 -> Pending with DynamicResources' reason on both
    cluster.kubectl("apply", "-f", "-", stdin=_pod("train-3"))
    cluster.wait("train-3 unschedulable", lambda: cluster.unschedulable_message("train-3"))
    message = cluster.unschedulable_message("train-3")
    assert message.startswith("0/2 nodes are available: 2 cannot allocate all claims."), message

    # deleting one frees its device: the third pod gets it
    freed = cluster.claim_of("train-1")["status"]["allocation"]["devices"]["results"][0]["device"]
    cluster.kubectl("delete", "pod", "train-1", "--wait=true")
    cluster.wait("train-3 Running", lambda: cluster.phase("train-3") == "Running", timeout=120)
    (result,) = cluster.claim_of("train-3")["status"]["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == ("node01", freed)
