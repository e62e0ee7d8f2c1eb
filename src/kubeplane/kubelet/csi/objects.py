"""The API objects a simulated CSI driver writes, built from its spec (pure; no I/O).

Each is shaped as the real component writes it: the CSIDriver as a driver's deployment ships it, the CSINode
driver entry as kubelet's ``nodeinfomanager`` registers a node plugin (``nodeID``, ``topologyKeys``,
``allocatable.count`` from NodeGetInfo's ``max_volumes_per_node``), the CSIStorageCapacity as
external-provisioner's capacity controller (``pkg/capacity/capacity.go`` ``syncCapacity``: generateName
``csisc-``, the driver-name and managed-by labels, ``nodeTopology`` a matchLabels selector on the segment) and the
PersistentVolume as external-provisioner's ``Provision`` (``pkg/controller/controller.go``) completed by the
provisioner library's ``provisionClaimOperation`` (claimRef, finalizer, ``pv.kubernetes.io/provisioned-by``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.quantity import Format, Quantity
from kubeplane.api.views import meta_of, spec_of

from .config import CSIDriverSpec

__all__ = [
    "ANN_BETA_STORAGE_PROVISIONER",
    "ANN_DELETION_SECRET_NAME",
    "ANN_DELETION_SECRET_NAMESPACE",
    "ANN_PROVISIONED_BY",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "CAPACITY_NAMESPACE",
    "DEFAULT_CLASS_ANNOTATION",
    "DRIVER_NAME_LABEL",
    "MANAGED_BY",
    "MANAGED_BY_LABEL",
    "PROVISIONER_ID_KEY",
    "PV_FINALIZER",
    "capacity_object",
    "csidriver_object",
    "csinode_driver",
    "persistent_volume",
    "quantity_text",
    "standard_storage_class",
]

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_DELETION_SECRET_NAME = "volume.kubernetes.io/provisioner-deletion-secret-name"
ANN_DELETION_SECRET_NAMESPACE = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
PV_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"
PROVISIONER_ID_KEY = "storage.kubernetes.io/csiProvisionerIdentity"
DRIVER_NAME_LABEL = "csi.storage.k8s.io/drivername"
MANAGED_BY_LABEL = "csi.storage.k8s.io/managed-by"
MANAGED_BY = "external-provisioner"
CAPACITY_NAMESPACE = "kube-system"
STANDARD_CLASS = "standard"


def quantity_text(size: int) -> str:
    """``resource.NewQuantity(bytes, resource.BinarySI)`` as it serialises (``10Gi``, ``1500``)."""
    return str(Quantity.from_int(size, Format.BINARY_SI))


def csidriver_object(driver: CSIDriverSpec, *, storage_capacity: bool) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": driver.name},
        "spec": {
            "attachRequired": driver.attach_required,
            "podInfoOnMount": False,
            "storageCapacity": storage_capacity,
            "volumeLifecycleModes": ["Persistent"],
        },
    }


def csinode_driver(driver: CSIDriverSpec, node: str) -> dict[str, Any]:
    """One ``spec.drivers`` entry of a CSINode (kubelet's ``installDriverToCSINode``)."""
    entry: dict[str, Any] = {"name": driver.name, "nodeID": node, "topologyKeys": [driver.topology_key]}
    if driver.max_volumes_per_node is not None:
        entry["allocatable"] = {"count": driver.max_volumes_per_node}
    return entry


def capacity_object(driver: CSIDriverSpec, storage_class: str, segment: str, free: int) -> dict[str, Any]:
    text = quantity_text(free)
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {
            "generateName": "csisc-",
            "namespace": CAPACITY_NAMESPACE,
            "labels": {DRIVER_NAME_LABEL: driver.name, MANAGED_BY_LABEL: MANAGED_BY},
        },
        "storageClassName": storage_class,
        "nodeTopology": {"matchLabels": {driver.topology_key: segment}},
        "capacity": text,
        "maximumVolumeSize": text,
    }


def persistent_volume(
    *,
    driver: CSIDriverSpec,
    claim: Mapping[str, Any],
    storage_class: Mapping[str, Any],
    size: int,
    segment: str,
    volume_handle: str,
    identity: str,
) -> dict[str, Any]:
    """The PV for ``claim`` (external-provisioner ``Provision`` + the library's ``provisionClaimOperation``)."""
    meta, spec = meta_of(claim), spec_of(claim)
    params = storage_class.get("parameters") or {}
    csi: dict[str, Any] = {
        "driver": driver.name,
        "volumeHandle": volume_handle,
        "volumeAttributes": {PROVISIONER_ID_KEY: identity},
    }
    block = spec.get("volumeMode") == "Block"
    fs_type = next((str(v) for k, v in params.items() if str(k).lower() in ("fstype", "csi.storage.k8s.io/fstype")), "")
    if fs_type and not block:
        csi["fsType"] = fs_type
    pv_spec: dict[str, Any] = {
        "accessModes": list(spec.get("accessModes") or []),
        "capacity": {"storage": quantity_text(size)},
        "csi": csi,
        "claimRef": {
            "kind": "PersistentVolumeClaim",
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "uid": meta.get("uid"),
            "apiVersion": "v1",
            "resourceVersion": meta.get("resourceVersion"),
        },
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": driver.topology_key, "operator": "In", "values": [segment]}]}
                ]
            }
        },
        "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
        "storageClassName": spec.get("storageClassName") or meta_of(storage_class).get("name"),
    }
    if storage_class.get("mountOptions"):
        pv_spec["mountOptions"] = list(storage_class["mountOptions"])
    if spec.get("volumeMode"):
        pv_spec["volumeMode"] = spec["volumeMode"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": f"pvc-{meta.get('uid')}",
            "annotations": {
                ANN_PROVISIONED_BY: driver.name,
                ANN_DELETION_SECRET_NAME: "",
                ANN_DELETION_SECRET_NAMESPACE: "",
            },
            "finalizers": [PV_FINALIZER],
        },
        "spec": pv_spec,
    }


def standard_storage_class(driver: str) -> dict[str, Any]:
    """``kubeplane up``'s default class, as kind's ``standard`` (backed by the node-local default driver)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STANDARD_CLASS, "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
        "provisioner": driver,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }
