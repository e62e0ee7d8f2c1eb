"""Real kubectl v1.37 against a kubeplane apiserver for the storage kinds: each created from YAML, ``kubectl get``
columns as upstream's printers give them, defaults, the storage admission plugins, and upstream's messages for
invalid objects.

Pins: pkg/printers/internalversion/printers.go (printStorageClass, printCSIDriver, printCSINode,
printCSIStorageCapacity, printVolumeAttachment, printPersistentVolume, printPersistentVolumeClaim),
pkg/apis/storage/v1/defaults.go (SetDefaults_CSIDriver), pkg/apis/storage/validation (ValidateCSIDriver,
ValidateVolumeAttachment, ValidateCSIStorageCapacityUpdate), plugin/pkg/admission/storage (setdefault,
storageobjectinuseprotection, persistentvolume/resize).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import start_server
from .test_kubectl import KUBECTL, Kubectl

OBJECTS = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: csi.kubeplane.io
volumeBindingMode: WaitForFirstConsumer
allowVolumeExpansion: true
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: csi.kubeplane.io
spec:
  attachRequired: true
  tokenRequests:
  - audience: vault
  - audience: gcp
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: node01
spec:
  drivers:
  - name: csi.kubeplane.io
    nodeID: node01
    topologyKeys: [topology.csi.kubeplane.io/node]
    allocatable:
      count: 10
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata:
  name: cap-node01
  namespace: kube-system
storageClassName: standard
capacity: 1536Mi
nodeTopology:
  matchLabels:
    topology.csi.kubeplane.io/node: node01
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata:
  name: va-1
spec:
  attacher: csi.kubeplane.io
  nodeName: node01
  source:
    persistentVolumeName: pv-1
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-1
spec:
  capacity:
    storage: 2Gi
  accessModes: [ReadWriteOnce]
  csi:
    driver: csi.kubeplane.io
    volumeHandle: vol-1
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
"""


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    root = tmp_path_factory.mktemp("kubectl-storage")
    server = start_server(root / "data", tls=True)
    k = Kubectl(server, root / "cache")
    k("create", "namespace", "kube-system", check=False)
    k("apply", "-f", "-", stdin=OBJECTS)
    yield k
    server.stop()


def _table(k: Kubectl, *args: str) -> list[list[str]]:
    return [line.split() for line in k("get", *args).stdout.splitlines()]


def test_get_columns_of_every_storage_kind(kubectl: Kubectl) -> None:
    rows = _table(kubectl, "csidrivers")
    assert rows[0] == [
        "NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS", "REQUIRESREPUBLISH",
        "MODES", "AGE",
    ]  # fmt: skip
    assert rows[1][:7] == ["csi.kubeplane.io", "true", "false", "false", "vault,gcp", "false", "Persistent"]
    csinodes = _table(kubectl, "csinodes")
    assert csinodes[0] == ["NAME", "DRIVERS", "AGE"]
    assert csinodes[1][:2] == ["node01", "1"]  # AGE depends on when kubectl ran
    assert _table(kubectl, "csistoragecapacities", "-n", "kube-system") == [
        ["NAME", "STORAGECLASSNAME", "CAPACITY"],
        ["cap-node01", "standard", "1536Mi"],
    ]
    va = _table(kubectl, "volumeattachments")
    assert va[0] == ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"]
    assert va[1][:5] == ["va-1", "csi.kubeplane.io", "pv-1", "node01", "false"]
    sc = _table(kubectl, "storageclasses")
    assert sc[0] == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]
    assert sc[1][:6] == ["standard", "(default)", "csi.kubeplane.io", "Delete", "WaitForFirstConsumer", "true"]


def test_defaults_admission_and_finalizers(kubectl: Kubectl) -> None:
    """SetDefaults_CSIDriver; DefaultStorageClass gives the claim ``standard``; StorageObjectInUseProtection adds
    the protection finalizers; a new PV is Pending with lastPhaseTransitionTime."""
    spec = kubectl.json("get", "csidriver", "csi.kubeplane.io")["spec"]
    assert (spec["podInfoOnMount"], spec["storageCapacity"], spec["seLinuxMount"]) == (False, False, False)
    assert (spec["fsGroupPolicy"], spec["volumeLifecycleModes"]) == ("ReadWriteOnceWithFSType", ["Persistent"])
    claim = kubectl.json("get", "pvc", "data")
    assert claim["spec"]["storageClassName"] == "standard"
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    volume = kubectl.json("get", "pv", "pv-1")
    assert volume["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]
    assert volume["status"]["phase"] == "Pending"
    assert volume["status"]["lastPhaseTransitionTime"]
    pvc_rows = _table(kubectl, "pvc")
    assert pvc_rows[0][:6] == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES"]
    assert pvc_rows[1][:3] == ["data", "Pending", "standard"]


def test_invalid_objects_get_upstreams_messages(kubectl: Kubectl) -> None:
    bad_driver = "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: bad.io}\nspec: {fsGroupPolicy: X}\n"
    out = kubectl("apply", "-f", "-", stdin=bad_driver, check=False)
    assert out.returncode == 1
    assert (
        'The CSIDriver "bad.io" is invalid: spec.fsGroupPolicy: Unsupported value: "X": supported values: "File", '
        '"None", "ReadWriteOnceWithFSType"'
    ) in out.stderr
    bad_va = (
        "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: va-bad}\n"
        "spec: {attacher: csi.kubeplane.io, nodeName: node01, source: {}}\n"
    )
    out = kubectl("create", "-f", "-", stdin=bad_va, check=False)
    assert (
        'The VolumeAttachment "va-bad" is invalid: spec.source: Required value: must specify exactly one of '
        "inlineVolumeSpec and persistentVolumeName"
    ) in out.stderr
    out = kubectl(
        "patch", "csistoragecapacity", "cap-node01", "-n", "kube-system", "--type=merge",
        "-p", '{"storageClassName": "other"}', check=False,
    )  # fmt: skip
    assert 'storageClassName: Invalid value: "other": field is immutable' in out.stderr
    out = kubectl("patch", "pvc", "data", "--type=merge", "-p", '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}',
                  check=False)  # fmt: skip
    assert "spec is immutable after creation except resources.requests" in out.stderr  # not bound: validation


def test_deleted_claim_waits_for_its_protection_controller(kubectl: Kubectl) -> None:
    """No controller manager runs here: the deleted claim stays Terminating, held by its finalizer."""
    kubectl("delete", "pvc", "data", "--wait=false")
    rows = _table(kubectl, "pvc", "data")
    assert rows[1][:2] == ["data", "Terminating"]
