"""Extended resources backed by DRA (DRAExtendedResource, GA in v1.37) with real kubectl against ``kubeplane up``:
a DeviceClass with ``extendedResourceName: example.com/gpu``, a ResourceSlice for node01 with two devices applied
by kubectl (as a driver would publish it), and pods asking for ``example.com/gpu: 1`` in their resources -- no
ResourceClaim in the pod spec. Neither node advertises example.com/gpu in its allocatable.

Pins upstream v1.37: NodeResourcesFit leaves the resource to DRA (``shouldDelegateResourceToDRA``);
DynamicResources allocates the pod's special claim and PreBind creates it (``generateName:
<pod>-extended-resources-``, annotation ``resource.kubernetes.io/extended-resource-claim``, the pod as controller
owner, request ``container-0-request-0``), reserves it for the pod and writes ``pod.status.
extendedResourceClaimStatus`` (``createExtendedResourceClaimInAPI``, ``bindClaim``,
``patchPodExtendedResourceClaimStatus``); a third pod is Pending with Filter's "cannot allocate all claims" on both
nodes; the kubelet admits the pod (``AdmissionCheck`` -> ``Fits`` delegates the resource to DRA) and its DRA
manager takes the claim from the pod status (here refused, as upstream's ``prepareResources`` refuses a claim of a
driver the node does not run: "DRA driver gpu.example.com is not registered"); the resourceclaim controller
deletes the claim with its pod, and the freed device goes to the pending pod.
"""

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
- name: node02
"""

CLASS_AND_SLICE = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu-class}
spec:
  extendedResourceName: example.com/gpu
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node01-gpu.example.com}
spec:
  driver: gpu.example.com
  nodeName: node01
  pool: {name: node01, generation: 1, resourceSliceCount: 1}
  devices:
  - {name: gpu-0, attributes: {model: {string: A100}}}
  - {name: gpu-1, attributes: {model: {string: A100}}}
"""


def _pod(name: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - name: cuda
    image: cuda:12
    resources: {{requests: {{example.com/gpu: "1"}}, limits: {{example.com/gpu: "1"}}}}
"""


def _extended_claim(cluster: Cluster, pod: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod's ``status.extendedResourceClaimStatus`` and the claim it names."""
    status = cluster.get("pod", pod)["status"]["extendedResourceClaimStatus"]
    claim: dict[str, Any] = cluster.get("resourceclaim", status["resourceClaimName"])
    return status, claim


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_up(tmp_path, NODES, ready_nodes=2) as cluster:
        yield cluster


def test_extended_resource_pods_get_devices_from_the_slice(cluster: Cluster) -> None:
    for node in cluster.get("nodes")["items"]:
        assert "example.com/gpu" not in node["status"]["allocatable"]
    cluster.kubectl("apply", "-f", "-", stdin=CLASS_AND_SLICE)
    cluster.kubectl("apply", "-f", "-", stdin=_pod("gpu-1") + "---\n" + _pod("gpu-2"))
    cluster.wait(
        "both pods bound with their claims named",
        lambda: all(
            cluster.get("pod", p)["spec"].get("nodeName")
            and cluster.get("pod", p)["status"].get("extendedResourceClaimStatus")
            for p in ("gpu-1", "gpu-2")
        ),
    )
    devices = set()
    for pod in ("gpu-1", "gpu-2"):
        got = cluster.get("pod", pod)
        assert got["spec"]["nodeName"] == "node01"
        status, claim = _extended_claim(cluster, pod)
        assert status["requestMappings"] == [
            {"containerName": "cuda", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
        ]
        meta = claim["metadata"]
        assert meta["name"].startswith(f"{pod}-extended-resources-")
        assert meta["generateName"] == f"{pod}-extended-resources-"
        assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
        (owner,) = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Pod",
            pod,
            got["metadata"]["uid"],
            True,
        )
        assert "resource.kubernetes.io/delete-protection" in meta["finalizers"]
        assert claim["spec"]["devices"]["requests"] == [
            {
                "name": "container-0-request-0",
                "exactly": {"deviceClassName": "gpu-class", "allocationMode": "ExactCount", "count": 1},
            }
        ]
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["driver"], result["pool"], result["request"]) == (
            "gpu.example.com",
            "node01",
            "container-0-request-0",
        )
        devices.add(result["device"])
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [pod]
    assert devices == {"gpu-0", "gpu-1"}
    table = cluster.kubectl("get", "resourceclaims", "--no-headers")
    assert table.count("allocated,reserved") == 2, table

    # a third pod: node01's two devices are taken and node02 has none
    cluster.kubectl("apply", "-f", "-", stdin=_pod("gpu-3"))
    cluster.wait("gpu-3 unschedulable", lambda: cluster.unschedulable_message("gpu-3"))
    message = cluster.unschedulable_message("gpu-3")
    assert message.startswith("0/2 nodes are available: 2 cannot allocate all claims."), message
    assert "Insufficient example.com/gpu" not in message

    # the kubelet admitted gpu-1 (no OutOfexample.com/gpu) and its DRA manager found the claim via the pod status
    def prepare_event() -> str:
        events = cluster.get("events", "--field-selector", "involvedObject.name=gpu-1")["items"]
        return next((e["message"] for e in events if e["reason"] == "FailedPrepareDynamicResources"), "")

    event = cluster.wait("gpu-1's FailedPrepareDynamicResources event", prepare_event)
    assert "DRA driver gpu.example.com is not registered" in event, event
    assert cluster.phase("gpu-1") == "Pending"  # ContainerCreating, not Failed by admission

    # deleting gpu-1 deletes its claim and frees its device for gpu-3
    _, claim = _extended_claim(cluster, "gpu-1")
    freed = claim["status"]["allocation"]["devices"]["results"][0]["device"]
    cluster.kubectl("delete", "pod", "gpu-1", "--wait=true", "--grace-period=0", "--force")
    cluster.wait(
        "gpu-1's claim deleted",
        lambda: claim["metadata"]["name"] not in cluster.kubectl("get", "resourceclaims", "--no-headers"),
        timeout=120,
    )
    cluster.wait(
        "gpu-3 bound", lambda: cluster.get("pod", "gpu-3")["status"].get("extendedResourceClaimStatus"), timeout=120
    )
    assert cluster.get("pod", "gpu-3")["spec"]["nodeName"] == "node01"
    (result,) = _extended_claim(cluster, "gpu-3")[1]["status"]["allocation"]["devices"]["results"]
    assert result["device"] == freed
