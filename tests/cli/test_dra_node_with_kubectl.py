"""The simulated DRA drivers' node side with real kubectl against ``kubeplane up --node-config`` (issue 27):

* a claim allocated from a ResourceSlice of a driver the node does not run (a slice an admin applied by hand) is
  refused by the kubelet: upstream v1.37 pkg/kubelet/cm/dra/manager.go prepareResources -> DRAPluginManager.
  GetPlugin's "DRA driver %s is not registered", framed by PrepareResources' "prepare dynamic resources: " and
  kuberuntime's FailedPrepareDynamicResources event "Failed to prepare dynamic resources: ..."; the pod stays
  ContainerCreating;
* partitionable devices (DRAPartitionableDevices, on in v1.37): the node config's sharedCounters are published in a
  separate slice of the pool and the scheduler allocates devices only while the counters last (upstream structured
  allocator's consumed counters; Filter's "cannot allocate all claims");
* a restarted ``kubeplane up`` (sqlite store, same data dir) keeps a running pod's claim in its kubelet's
  checkpoint (upstream pkg/kubelet/cm/dra/state dra_manager_state) and unprepares it when the pod is deleted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.up_cluster import Cluster, running_up

NODES = """\
csiDrivers: []
nodes:
- name: node01
  devices: [{driver: gpu.example.com, count: 1, attributes: {model: A100, profile: full}}]
- name: node02
  devices:
  - driver: gpu.example.com
    count: 2
    namePattern: "gpu-0-half-{index}"
    attributes: {profile: half}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: 20Gi}}]
    sharedCounters: [{name: gpu-0, counters: {memory: 40Gi}}]
  - driver: gpu.example.com
    namePattern: gpu-0-whole
    attributes: {profile: whole}
    consumesCounters: [{counterSet: gpu-0, counters: {memory: 40Gi}}]
"""

FPGA_SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node01-fpga}
spec:
  driver: fpga.example.com
  nodeName: node01
  pool: {name: node01, generation: 1, resourceSliceCount: 1}
  devices: [{name: fpga-0}]
"""


def _class_and_template(name: str, driver: str, expression: str = "true") -> str:
    return f"""\
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: {name}}}
spec:
  selectors: [{{cel: {{expression: 'device.driver == "{driver}" && {expression}'}}}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: {name}}}
spec:
  spec:
    devices:
      requests: [{{name: dev, exactly: {{deviceClassName: {name}}}}}]
"""


def _pod(name: str, template: str) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  resourceClaims: [{{name: dev, resourceClaimTemplateName: {template}}}]
  containers:
  - name: app
    image: nginx:1.27
    resources: {{claims: [{{name: dev}}]}}
"""


def _events(cluster: Cluster, pod: str, reason: str) -> list[str]:
    items = cluster.get("events", "--field-selector", f"involvedObject.name={pod}")["items"]
    return [str(e["message"]) for e in items if e["reason"] == reason]


def _device_of(cluster: Cluster, pod: str) -> str:
    (status,) = cluster.get("pod", pod)["status"]["resourceClaimStatuses"]
    claim = cluster.get("resourceclaim", status["resourceClaimName"])
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    return str(result["device"])


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_up(tmp_path, NODES, ready_nodes=2) as cluster:
        cluster.wait("3 ResourceSlices", lambda: len(cluster.get("resourceslices")["items"]) == 3)
        yield cluster


def test_claim_of_a_driver_the_node_does_not_run_is_refused(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=FPGA_SLICE)
    cluster.kubectl("apply", "-f", "-", stdin=_class_and_template("fpga", "fpga.example.com"))
    cluster.kubectl("apply", "-f", "-", stdin=_pod("fpga-job", "fpga"))
    cluster.wait(
        "the FailedPrepareDynamicResources event", lambda: _events(cluster, "fpga-job", "FailedPrepareDynamicResources")
    )
    pod = cluster.get("pod", "fpga-job")
    assert pod["spec"]["nodeName"] == "node01"  # the scheduler allocated fpga-0 of the hand-made slice
    (message, *_) = _events(cluster, "fpga-job", "FailedPrepareDynamicResources")
    assert message == (
        "Failed to prepare dynamic resources: prepare dynamic resources: DRA driver fpga.example.com is not registered"
    )
    assert pod["status"]["phase"] == "Pending"
    (container,) = pod["status"]["containerStatuses"]
    assert container["state"]["waiting"]["reason"] == "ContainerCreating"


def test_partitionable_devices_are_allocated_while_the_counters_last(cluster: Cluster) -> None:
    slices = [s for s in cluster.get("resourceslices")["items"] if s["spec"]["nodeName"] == "node02"]
    assert sorted("sharedCounters" in s["spec"] for s in slices) == [False, True]
    assert {(s["spec"]["pool"]["resourceSliceCount"], s["spec"]["pool"]["generation"]) for s in slices} == {(2, 1)}
    cluster.kubectl("apply", "-f", "-", stdin=_class_and_template("half", "gpu.example.com",
        'device.attributes["gpu.example.com"].profile == "half"'))  # fmt: skip
    cluster.kubectl("apply", "-f", "-", stdin=_class_and_template("whole", "gpu.example.com",
        'device.attributes["gpu.example.com"].profile == "whole"'))  # fmt: skip
    cluster.kubectl("apply", "-f", "-", stdin=_pod("half-1", "half") + "---\n" + _pod("half-2", "half"))
    cluster.wait("both halves Running", lambda: cluster.phase("half-1") == cluster.phase("half-2") == "Running")
    assert {_device_of(cluster, "half-1"), _device_of(cluster, "half-2")} == {"gpu-0-half-0", "gpu-0-half-1"}

    # the whole GPU's 40Gi of counters are taken by the halves: it cannot be allocated anywhere
    cluster.kubectl("apply", "-f", "-", stdin=_pod("whole", "whole"))
    cluster.wait("whole unschedulable", lambda: cluster.unschedulable_message("whole"))
    assert cluster.unschedulable_message("whole").startswith("0/2 nodes are available: 2 cannot allocate all claims.")

    cluster.kubectl("delete", "pod", "half-1", "half-2", "--wait=true")
    cluster.wait("whole Running", lambda: cluster.phase("whole") == "Running", timeout=120)
    assert _device_of(cluster, "whole") == "gpu-0-whole"


def _checkpointed_claims(tmp: Path, node: str) -> list[str]:
    blob = json.loads((tmp / "data" / "kubelet" / node / "dra_manager_state").read_text())
    entries: list[dict[str, Any]] = json.loads(blob["Data"])["Entries"] or []
    return [str(e["ClaimName"]) for e in entries]


def test_restarted_cluster_keeps_claims_prepared_and_unprepares_on_delete(tmp_path: Path) -> None:
    with running_up(tmp_path, NODES, ready_nodes=2, store="sqlite") as cluster:
        cluster.kubectl("apply", "-f", "-", stdin=_class_and_template("a100", "gpu.example.com",
            'device.attributes["gpu.example.com"].model == "A100"'))  # fmt: skip
        cluster.kubectl("apply", "-f", "-", stdin=_pod("train", "a100"))
        cluster.wait("train Running", lambda: cluster.phase("train") == "Running")
        (claim,) = [s["resourceClaimName"] for s in cluster.get("pod", "train")["status"]["resourceClaimStatuses"]]
        assert _checkpointed_claims(tmp_path, "node01") == [claim]
    with running_up(tmp_path, NODES, ready_nodes=2, store="sqlite") as cluster:
        assert cluster.phase("train") == "Running"
        assert _checkpointed_claims(tmp_path, "node01") == [claim]  # still prepared: not dropped by the restart
        cluster.kubectl("delete", "pod", "train", "--wait=true")
        cluster.wait("the claim unprepared", lambda: _checkpointed_claims(tmp_path, "node01") == [])
        assert not _events(cluster, "train", "FailedPrepareDynamicResources")
