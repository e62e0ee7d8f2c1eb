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

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.up_cluster import Cluster, running_up

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


def _claim_of(cluster: Cluster, pod: str) -> dict[str, Any]:
    """The claim the resourceclaim controller made for ``pod`` (pod.status.resourceClaimStatuses)."""
    statuses = cluster.get("pod", pod)["status"].get("resourceClaimStatuses") or []
    (status,) = statuses
    claim: dict[str, Any] = cluster.get("resourceclaim", status["resourceClaimName"])
    return claim


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_up(tmp_path, NODES, ready_nodes=2) as cluster:
        cluster.wait("2 ResourceSlices", lambda: len(cluster.get("resourceslices")["items"]) == 2)
        yield cluster


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
        claim = _claim_of(cluster, pod)
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
    freed = _claim_of(cluster, "train-1")["status"]["allocation"]["devices"]["results"][0]["device"]
    cluster.kubectl("delete", "pod", "train-1", "--wait=true")
    cluster.wait("train-3 Running", lambda: cluster.phase("train-3") == "Running", timeout=120)
    (result,) = _claim_of(cluster, "train-3")["status"]["allocation"]["devices"]["results"]
    assert (result["pool"], result["device"]) == ("node01", freed)
