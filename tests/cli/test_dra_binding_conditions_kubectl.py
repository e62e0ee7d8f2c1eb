"""Device binding conditions with real kubectl against ``kubeplane up`` (KEP-5007, DRADeviceBindingConditions beta
and on in v1.37): a ResourceSlice applied by kubectl, as a fabric controller would publish it, offers a device of
``fabric.example.com`` on node01 that needs ``dra.example.com/attached``; a pod using a claim for it is allocated
and reserved but not bound while the condition is missing (``kubectl get resourceclaim`` shows
``allocated,reserved``, the pod has the ``BindingConditionsPending`` event), and bound to node01 once the
controller sets the condition in the claim's ``status.devices`` with ``kubectl patch --subresource=status``.

Pins upstream ``dynamicresources.go`` PreBind (bindClaim before the wait, the event, isPodReadyForBinding polled
every 5 s) and the allocator copying the device's binding conditions and ``bindsToNode`` node selector into the
result. (The simulated kubelets run no fabric.example.com driver, so the pod is not expected to start.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.up_cluster import Cluster, running_up

NODES = """\
csiDrivers: []
nodes:
- name: node01
"""

OBJECTS = """\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: fabric-gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "fabric.example.com"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: fabric-node01}
spec:
  driver: fabric.example.com
  nodeName: node01
  pool: {name: fabric, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    bindsToNode: true
    bindingConditions: [dra.example.com/attached]
    bindingFailureConditions: [dra.example.com/failed]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: fabric}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: fabric-gpu}
---
apiVersion: v1
kind: Pod
metadata: {name: fabric-user}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: fabric}]
  containers:
  - name: app
    image: nginx:1.27
    resources: {claims: [{name: gpu}]}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_up(tmp_path, NODES, ready_nodes=1) as cluster:
        yield cluster


def test_the_pod_is_bound_once_the_binding_condition_is_true(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=OBJECTS)
    cluster.wait(
        "the claim allocated and reserved",
        lambda: "allocated,reserved" in cluster.kubectl("get", "resourceclaim", "fabric", "--no-headers"),
    )
    claim = cluster.get("resourceclaim", "fabric")
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["bindingConditions"] == ["dra.example.com/attached"]
    assert claim["status"]["allocation"]["allocationTimestamp"]
    cluster.wait(
        "BindingConditionsPending",
        lambda: any(
            e["reason"] == "BindingConditionsPending"
            for e in cluster.get("events", "--field-selector", "involvedObject.name=fabric-user")["items"]
        ),
    )
    events = cluster.get("events", "--field-selector", "involvedObject.name=fabric-user")["items"]
    (pending,) = [e for e in events if e["reason"] == "BindingConditionsPending"]
    assert pending["message"] == "waiting for binding conditions for device on node node01"
    assert not cluster.get("pod", "fabric-user")["spec"].get("nodeName")

    condition = {
        "type": "dra.example.com/attached",
        "status": "True",
        "reason": "Attached",
        "message": "attached through the fabric",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    device = {"driver": "fabric.example.com", "pool": "fabric", "device": "gpu-0", "conditions": [condition]}
    patch = json.dumps({"status": {"devices": [device]}})
    cluster.kubectl("patch", "resourceclaim", "fabric", "--subresource=status", "--type=merge", "-p", patch)
    node = cluster.wait("the pod bound", lambda: cluster.get("pod", "fabric-user")["spec"].get("nodeName"))
    assert node == "node01"
