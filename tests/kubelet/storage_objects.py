"""Builders for the storage objects the volume tests share: a CSI PV, a claim bound to it, a pod using it."""

from __future__ import annotations

from typing import Any

from kubeplane.client.interface import Client, PatchType

Obj = dict[str, Any]
DRIVER = "csi.kubeplane.io"


async def create_claim(client: Client, name: str, *, namespace: str = "default", **meta: Any) -> Obj:
    body: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, **meta},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    return await client.create(client.resource("persistentvolumeclaims"), body, namespace=namespace)


async def bind(
    client: Client, claim: Obj, pv_name: str, *, driver: str | None = DRIVER, handle: str = "", mode: str = ""
) -> Obj:
    """Create PV ``pv_name`` (CSI ``driver`` with ``handle``, or a hostPath one when driver is None) bound to
    ``claim``, then mark both Bound, as the PV controller would."""
    meta = claim["metadata"]
    spec: Obj = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": "Delete",
        "claimRef": {"kind": "PersistentVolumeClaim", "namespace": meta["namespace"], "name": meta["name"],
                     "uid": meta["uid"]},
    }  # fmt: skip
    if driver is None:
        spec["hostPath"] = {"path": f"/tmp/{pv_name}"}
    else:
        spec["csi"] = {"driver": driver, "volumeHandle": handle or f"handle-{pv_name}"}
    if mode:
        spec["volumeMode"] = mode
    pvs, pvcs = client.resource("persistentvolumes"), client.resource("persistentvolumeclaims")
    pv = await client.create(pvs, {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name},
                                   "spec": spec})  # fmt: skip
    await client.patch(pvs, pv_name, {"status": {"phase": "Bound"}}, patch_type=PatchType.MERGE, subresource="status")
    await client.patch(pvcs, meta["name"], {"spec": {"volumeName": pv_name}}, namespace=meta["namespace"])
    await client.patch(
        pvcs, meta["name"], {"status": {"phase": "Bound"}}, namespace=meta["namespace"], subresource="status"
    )
    return pv


async def create_csidriver(client: Client, *, attach_required: bool, name: str = DRIVER) -> Obj:
    body = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name},
            "spec": {"attachRequired": attach_required}}  # fmt: skip
    return await client.create(client.resource("csidrivers"), body)


def claim_pod_spec(claim: str, *, volume: str = "data") -> Obj:
    """Spec fields of a pod mounting claim ``claim`` as volume ``volume`` (plus an emptyDir, ready at once)."""
    return {
        "containers": [
            {
                "name": "app",
                "image": "nginx:1.27",
                "volumeMounts": [{"name": volume, "mountPath": "/data"}, {"name": "scratch", "mountPath": "/tmp"}],
            }
        ],
        "volumes": [
            {"name": volume, "persistentVolumeClaim": {"claimName": claim}},
            {"name": "scratch", "emptyDir": {}},
        ],
    }
