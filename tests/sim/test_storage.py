"""Storage in simulations (kubeplane.sim.storage, the snapshot's storage rows): a scenario declares the CSI driver
through its cluster and storage classes and claims through its workload; the summary and time series count
provisioning (external-provisioner's behaviour as the fleet's driver runs it) and capacity use."""

from __future__ import annotations

from typing import Any

from kubeplane.sim.runner import run
from kubeplane.sim.scenario import Scenario
from kubeplane.sim.snapshot import KINDS, to_scenario
from kubeplane.sim.summary import FIELDS

GI = 2**30
DRIVER = "csi.kubeplane.io"


def _claim(name: str, size: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": name,
            "annotations": {  # what the PV controller and VolumeBinding's PreBind would set
                "volume.kubernetes.io/storage-provisioner": DRIVER,
                "volume.kubernetes.io/selected-node": node,
            },
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": "local",
        },
    }


STORY: dict[str, Any] = {
    "name": "storage",
    "duration": "1m",
    "cluster": {
        "csiDrivers": [{"name": DRIVER, "provisionTime": "2s", "storageClasses": [{"name": "local"}]}],
        "nodes": [{"count": 2, "namePattern": "n{index}", "csiCapacity": {DRIVER: "10Gi"}}],
    },
    "workload": [
        {"at": "5s", "manifest": _claim("small", "4Gi", "n1")},
        {"at": "20s", "manifest": _claim("huge", "8Gi", "n1")},  # 6Gi left on n1: ResourceExhausted
    ],
}


def test_a_scenario_reports_provisioning_and_capacity_use() -> None:
    result = run(Scenario.parse(STORY))
    summary = result.summary
    assert summary["volumes_provisioned"] == 1
    assert summary["volume_provisioning_failures"] == 1  # rescheduled: the annotation is gone, no retry
    assert summary["volumes_deleted"] == 0
    assert summary["storage_capacity_bytes"] == 20 * GI
    assert summary["storage_used_bytes"] == summary["storage_used_bytes_peak"] == 4 * GI
    assert summary["storage_used_pct_peak"] == 20.0
    assert set(summary) & FIELDS >= {"volumes_provisioned", "storage_used_pct_peak"}
    by_time = {row["t"]: row for row in result.timeseries}
    assert by_time[0.0]["storage_used_bytes"] == 0
    assert by_time[10.0]["storage_used_bytes"] == 4 * GI  # reserved at 5 s, the PV there at 7 s
    assert by_time[60.0]["volumes"] == 1
    assert run(Scenario.parse(STORY)).timeseries == result.timeseries  # deterministic


def test_a_run_without_storage_keeps_its_columns() -> None:
    result = run(Scenario.parse({"name": "plain", "duration": "20s"}))
    assert "storage_used_bytes" not in result.timeseries[0]
    assert not {f for f in result.summary if f.startswith(("volume", "storage_"))}


def test_snapshot_keeps_storage_objects_and_rebinds_by_name() -> None:
    pv = {
        "metadata": {"name": "pvc-1", "uid": "u", "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data", "uid": "old",
                         "resourceVersion": "7"},
            "csi": {"driver": DRIVER, "volumeHandle": "h"},
        },
        "status": {"phase": "Bound"},
    }  # fmt: skip
    pvc = {"metadata": {"name": "data", "namespace": "default", "uid": "old"}, "spec": {"volumeName": "pvc-1"}}
    objects: dict[str, list[dict[str, Any]]] = {
        "storageclasses": [{"metadata": {"name": "standard"}, "provisioner": DRIVER}],
        "csidrivers": [{"metadata": {"name": DRIVER}, "spec": {"attachRequired": False}}],
        "csinodes": [{"metadata": {"name": "n1"}, "spec": {"drivers": []}}],
        "csistoragecapacities": [{"metadata": {"name": "csisc-a", "namespace": "kube-system"}, "capacity": "1Gi"}],
        "persistentvolumes": [pv],
        "persistentvolumeclaims": [pvc],
        "pods": [{"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": []}}],
    }
    kinds = [w["manifest"]["kind"] for w in to_scenario(objects)["workload"]]
    assert kinds == [
        "CSIDriver", "CSINode", "StorageClass", "CSIStorageCapacity", "PersistentVolume", "PersistentVolumeClaim",
        "Pod",
    ]  # fmt: skip
    manifests = {w["manifest"]["kind"]: w["manifest"] for w in to_scenario(objects)["workload"]}
    assert manifests["PersistentVolume"]["spec"]["claimRef"] == {
        "kind": "PersistentVolumeClaim", "namespace": "default", "name": "data",
    }  # fmt: skip
    assert "status" not in manifests["PersistentVolume"]
    assert manifests["PersistentVolumeClaim"]["spec"]["volumeName"] == "pvc-1"
    assert {resource for resource, _ in KINDS} >= {"persistentvolumes", "csistoragecapacities"}
