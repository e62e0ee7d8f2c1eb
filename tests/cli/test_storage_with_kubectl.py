"""Issue 26's acceptance with real kubectl against ``kubeplane up`` (one process, the project's kubectl with this
test's kubeconfig and cache dir): storage-aware scheduling end to end.

The cluster (node config below): node01 (zone-a) and node02 (zone-b) with 1Gi of the capacity-tracked,
attach-required driver ``csi.kubeplane.io`` each, node03 (zone-a) with none; a second, untracked driver
``limited.csi.kubeplane.io`` allows one volume per node (CSINode ``allocatable.count``). Everything between
``kubectl apply`` and a Running pod is the control plane's own work: DefaultStorageClass admission, the
StatefulSet controller's claims, VolumeBinding's PreBind (``volume.kubernetes.io/selected-node``), the PV
controller's ``ExternalProvisioning``, the simulated driver's provisioning and capacity objects, the attach/detach
controller's VolumeAttachment, the external-attacher and the kubelet's wait for the volume.

Each case pins an upstream behaviour: VolumeRestrictions' NoDiskConflict (``ErrReasonDiskConflict``),
VolumeBinding's capacity check (``ErrReasonNotEnoughSpace``) and its requeue on CSIStorageCapacity events,
VolumeZone (``ErrReasonConflict``) and NodeVolumeLimits (``ErrReasonMaxVolumeCountExceeded``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest

from tests.cli.up_cluster import KUBEPLANE, Cluster, running_up

DRIVERS = """\
csiDrivers:
- name: csi.kubeplane.io
  topology: node
  attachRequired: true
  attachTime: 200ms
- name: limited.csi.kubeplane.io
  topology: node
  maxVolumesPerNode: 1
  storageClasses:
  - {name: limited, volumeBindingMode: WaitForFirstConsumer, reclaimPolicy: Delete}
"""
NODES = (
    DRIVERS
    + """\
nodes:
- {name: node01, zone: zone-a, csiCapacity: {csi.kubeplane.io: 1Gi}}
- {name: node02, zone: zone-b, csiCapacity: {csi.kubeplane.io: 1Gi}}
- {name: node03, zone: zone-a}
"""
)
MORE_NODES = (
    DRIVERS
    + """\
nodes:
- {name: node04, zone: zone-b, csiCapacity: {csi.kubeplane.io: 1Gi}}
"""
)

STS = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"""


def _disk_pod(name: str, read_only: bool) -> str:
    return f"""\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  nodeSelector: {{kubernetes.io/hostname: node03}}
  containers:
  - name: c
    image: busybox:1.36
    volumeMounts: [{{name: disk, mountPath: /disk, readOnly: {str(read_only).lower()}}}]
  volumes:
  - name: disk
    gcePersistentDisk: {{pdName: shared-disk, readOnly: {str(read_only).lower()}}}
"""


def _claim_pod(name: str, claim: str, cls: str, node: str | None = None) -> str:
    selector = f"  nodeSelector: {{kubernetes.io/hostname: {node}}}\n" if node else ""
    return f"""\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {claim}}}
spec:
  storageClassName: "{cls}"
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 100Mi}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
{selector}  containers:
  - name: c
    image: busybox:1.36
    volumeMounts: [{{name: v, mountPath: /v}}]
  volumes:
  - name: v
    persistentVolumeClaim: {{claimName: {claim}}}
"""


ZONAL_PV = """\
apiVersion: v1
kind: PersistentVolume
metadata:
  name: zonal-pv
  labels: {topology.kubernetes.io/zone: zone-b}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  hostPath: {path: /srv/zonal}
  claimRef: {namespace: default, name: zonal}
"""


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with running_up(tmp_path, NODES, ready_nodes=3) as cluster:
        cluster.wait("3 CSINodes", lambda: len(cluster.get("csinodes")["items"]) == 3)
        yield cluster


def _start_kubelet(cluster: Cluster, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """A second fleet joining the cluster with node04 and its 1Gi (its own driver instance publishes node04's
    CSINode and CSIStorageCapacity): the capacity an administrator adds."""
    (cluster.tmp / "more.yaml").write_text(MORE_NODES)
    return subprocess.Popen(
        [*KUBEPLANE, "kubelet", "--kubeconfig", str(cluster.kubeconfig), "--metrics-port=0",
         "--node-config", str(cluster.tmp / "more.yaml"), "--pull-delay", "0", "--shutdown-delay", "0s"],
        stdout=log, stderr=log,
    )  # fmt: skip


def test_statefulset_claims_are_provisioned_on_their_pods_nodes_until_capacity_runs_out(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=STS)
    cluster.wait("web-0 and web-1 Running", lambda: all(cluster.phase(f"web-{i}") == "Running" for i in (0, 1))
                 if len(cluster.get("pods", "-l", "app=web")["items"]) >= 2 else False)  # fmt: skip
    for i in (0, 1):
        pod = cluster.get("pod", f"web-{i}")
        claim = cluster.get("pvc", f"data-web-{i}")
        assert claim["spec"]["storageClassName"] == "standard"  # DefaultStorageClass admission
        assert claim["status"]["phase"] == "Bound"
        node = pod["spec"]["nodeName"]
        assert claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
        pv = cluster.get("pv", claim["spec"]["volumeName"])
        assert pv["spec"]["csi"]["driver"] == "csi.kubeplane.io"
        term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
        assert (term["key"], term["values"]) == ("topology.csi.kubeplane.io/node", [node])
        attachments = [va for va in cluster.get("volumeattachments")["items"]
                       if va["spec"]["source"]["persistentVolumeName"] == pv["metadata"]["name"]]  # fmt: skip
        assert [(va["spec"]["nodeName"], va["status"]["attached"]) for va in attachments] == [(node, True)]
    assert {cluster.get("pod", f"web-{i}")["spec"]["nodeName"] for i in (0, 1)} == {"node01", "node02"}

    # web-2: no node has 1Gi left (node03 has no capacity at all) -> Pending with VolumeBinding's reason
    cluster.wait("web-2 unschedulable", lambda: cluster.unschedulable_message("web-2"))
    message = cluster.unschedulable_message("web-2")
    assert message.startswith("0/3 nodes are available: 3 node(s) did not have enough free storage."), message
    explained = json.loads(
        subprocess.run(
            [*KUBEPLANE, "explain", "--pod", "default/web-2", "--kubeconfig", str(cluster.kubeconfig), "-o", "json"],
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout
    )  # fmt: skip
    for node in ("node01", "node02", "node03"):
        status = explained["nodes"][node]["filters"]["VolumeBinding"]
        assert status["reasons"] == ["node(s) did not have enough free storage"], (node, status)

    # capacity added: a node with 1Gi joins; its CSIStorageCapacity event requeues web-2, which lands there
    log = (cluster.tmp / "kubelet2.log").open("wb")
    kubelet = _start_kubelet(cluster, log)
    try:
        cluster.wait("web-2 Running", lambda: cluster.phase("web-2") == "Running", timeout=120)
        assert cluster.get("pod", "web-2")["spec"]["nodeName"] == "node04"
        assert cluster.get("pvc", "data-web-2")["status"]["phase"] == "Bound"
    finally:
        os.kill(kubelet.pid, signal.SIGTERM)
        kubelet.wait(timeout=60)
        log.close()


def test_volume_restrictions_zone_and_volume_limits(cluster: Cluster) -> None:
    # NoDiskConflict: the same read-write gcePersistentDisk on node03 twice -> the second is Pending there
    cluster.kubectl("apply", "-f", "-", stdin=_disk_pod("disk-1", read_only=False))
    cluster.wait("disk-1 Running", lambda: cluster.phase("disk-1") == "Running")
    cluster.kubectl("apply", "-f", "-", stdin=_disk_pod("disk-2", read_only=False))
    cluster.wait("disk-2 unschedulable", lambda: cluster.unschedulable_message("disk-2"))
    assert "1 node(s) had no available disk" in cluster.unschedulable_message("disk-2")
    cluster.kubectl("delete", "pod", "disk-1", "disk-2", "--wait=true")
    # both read-only: they share the disk
    cluster.kubectl("apply", "-f", "-", stdin=_disk_pod("ro-1", read_only=True) + "---\n" + _disk_pod("ro-2", True))
    cluster.wait("both read-only pods Running", lambda: cluster.phase("ro-1") == cluster.phase("ro-2") == "Running")

    # VolumeZone: a claim pre-bound to a PV labelled zone-b pins its pod to zone-b's node02
    cluster.kubectl("apply", "-f", "-", stdin=ZONAL_PV + "---\n" + _claim_pod("zonal-pod", "zonal", ""))
    cluster.wait("zonal-pod Running", lambda: cluster.phase("zonal-pod") == "Running", timeout=120)
    assert cluster.get("pod", "zonal-pod")["spec"]["nodeName"] == "node02"
    assert cluster.get("pvc", "zonal")["spec"]["volumeName"] == "zonal-pv"

    # NodeVolumeLimits: node03 allows one volume of the limited driver; a second claim's pod is filtered there
    cluster.kubectl("apply", "-f", "-", stdin=_claim_pod("lim-1", "lim-1", "limited", node="node03"))
    cluster.wait("lim-1 Running", lambda: cluster.phase("lim-1") == "Running", timeout=120)
    csinode = cluster.get("csinode", "node03")
    limited = next(d for d in csinode["spec"]["drivers"] if d["name"] == "limited.csi.kubeplane.io")
    assert limited["allocatable"] == {"count": 1}
    cluster.kubectl("apply", "-f", "-", stdin=_claim_pod("lim-2", "lim-2", "limited", node="node03"))
    cluster.wait("lim-2 unschedulable", lambda: cluster.unschedulable_message("lim-2"))
    assert "1 node(s) exceed max volume count" in cluster.unschedulable_message("lim-2")
    # freeing the volume (pod and claim deleted) lets lim-2 in
    cluster.kubectl("delete", "pod", "lim-1", "--wait=true")
    cluster.wait("lim-2 Running", lambda: cluster.phase("lim-2") == "Running", timeout=120)
