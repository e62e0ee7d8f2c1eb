"""Objects for the storage plugins' tests: nodes, pods with claims, classes, CSI drivers, capacities, PVs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.scheduler.framework.handle import Handle

__all__ = [
    "capacity",
    "claim",
    "csi_driver",
    "handle_of",
    "lvm_class",
    "lvm_pv",
    "node",
    "pod",
    "storage_class",
]

PLURALS = {
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "StorageClass": "storageclasses",
    "CSIDriver": "csidrivers",
    "CSIStorageCapacity": "csistoragecapacities",
}


def handle_of(objects: Sequence[Mapping[str, Any]]) -> Handle:
    """A Handle whose ``list_objects`` serves ``objects`` as explain does (namespace "" lists all)."""

    def list_objects(resource: str, namespace: str) -> list[Mapping[str, Any]]:
        return [
            o
            for o in objects
            if PLURALS.get(str(o.get("kind"))) == resource
            and (not namespace or (o.get("metadata") or {}).get("namespace", "default") == namespace)
        ]

    return Handle(list_objects=list_objects)


def node(name: str, *, vgs: Mapping[str, Any] | Sequence[Any] | str | None = None, **labels: str) -> dict[str, Any]:
    own = {"kubernetes.io/hostname": name, "topology.csi.kubeplane.io/node": name}
    meta: dict[str, Any] = {"name": name, "labels": {**own, **labels}}
    if vgs is not None:
        meta["annotations"] = {"kubeplane.io/lvm-volume-groups": vgs if isinstance(vgs, str) else json.dumps(vgs)}
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {"kind": "Node", "metadata": meta, "status": {"allocatable": alloc, "capacity": alloc}}


def pod(name: str, *claims: str, node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "nginx"}],
        "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)],
    }
    if node_name:
        spec["nodeName"] = node_name
    meta = {"name": name, "namespace": "default", "uid": name}
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": "Running" if node_name else "Pending"}}


def claim(name: str, size: str, class_name: str | None, *, volume: str = "", selected_node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if volume:
        spec["volumeName"] = volume
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if selected_node:
        meta["annotations"] = {"volume.kubernetes.io/selected-node": selected_node}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def storage_class(name: str, provisioner: str, **parameters: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "parameters": parameters,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def lvm_class(name: str = "open-local-lvm", **parameters: str) -> dict[str, Any]:
    return storage_class(name, "local.csi.aliyun.com", volumeType="LVM", **parameters)


def csi_driver(name: str, *, storage_capacity: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": name},
        "spec": {"storageCapacity": storage_capacity},
    }


def capacity(
    name: str, class_name: str, topology: Mapping[str, str] | None, cap: str | None, max_size: str | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": class_name,
    }
    if topology is not None:
        obj["nodeTopology"] = {"matchLabels": dict(topology)}
    if cap is not None:
        obj["capacity"] = cap
    if max_size is not None:
        obj["maximumVolumeSize"] = max_size
    return obj


def lvm_pv(
    name: str, node_name: str, size: str, *, vg: str | None = "vg0", claim_name: str = "", class_name: str = ""
) -> dict[str, Any]:
    attrs = {"volumeType": "LVM"}
    if vg is not None:
        attrs["vgName"] = vg
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node_name]}]}
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "csi": {"driver": "local.csi.aliyun.com", "volumeHandle": name, "volumeAttributes": attrs},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        "storageClassName": class_name,
    }
    if claim_name:
        spec["claimRef"] = {"namespace": "default", "name": claim_name}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}
