"""Builders and helpers the PV controller tests share: upstream's ``newVolume`` / ``newClaim`` (framework_test.go)
over the in-memory API server, where UIDs are the server's: a volume's claimRef names its claim's UID by the
placeholder ``CLAIM_UID`` (resolved after the claims are created), any other string is kept as it is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubeplane.client.interface import Obj
from kubeplane.controllers.pv_controller import PersistentVolumeController
from tests.controllers.harness import Env

NS = "default"
CLAIM_UID = "<uid of the claim>"
ANN_BOUND = "pv.kubernetes.io/bound-by-controller"
ANN_COMPLETED = "pv.kubernetes.io/bind-completed"


def new_volume(
    name: str,
    capacity: str,
    claim_uid: str = "",
    claim_name: str = "",
    phase: str = "Available",
    policy: str = "Retain",
    *annotations: str,
    cls: str = "",
    **spec: Any,
) -> Obj:
    """Upstream ``newVolume`` (a GCE PD volume in upstream; here hostPath unless ``spec`` says otherwise)."""
    meta: Obj = {"name": name}
    if annotations:
        meta["annotations"] = dict.fromkeys(annotations, "yes")
    body: Obj = {
        "capacity": {"storage": capacity},
        "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
        "persistentVolumeReclaimPolicy": policy,
        "storageClassName": cls,
        **spec,
    }
    if "csi" not in spec and "hostPath" not in spec:
        body["hostPath"] = {"path": f"/data/{name}"}
    if claim_name:
        body["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": NS, "name": claim_name, "uid": claim_uid}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": body, "status": {"phase": phase}}


def new_claim(
    name: str,
    request: str,
    volume_name: str = "",
    phase: str = "Pending",
    *annotations: str,
    cls: str | None = None,
    **spec: Any,
) -> Obj:
    """Upstream ``newClaim``."""
    meta: Obj = {"name": name, "namespace": NS}
    if annotations:
        meta["annotations"] = dict.fromkeys(annotations, "yes")
    body: Obj = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": request}}, **spec}
    if volume_name:
        body["volumeName"] = volume_name
    if cls is not None:
        body["storageClassName"] = cls
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": body,
        "status": {"phase": phase},
    }


def storage_class(
    name: str, provisioner: str, mode: str = "Immediate", policy: str = "Delete", default: bool = False
) -> Obj:
    meta: Obj = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta,
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        "reclaimPolicy": policy,
    }


async def put(
    env: Env[PersistentVolumeController],
    claims: list[Obj],
    volumes: list[Obj],
    others: Sequence[Obj] = (),
) -> dict[str, str]:
    """Create claims (then their status), volumes (claimRef UIDs resolved, then status) and other objects;
    returns claim name -> UID."""
    uids: dict[str, str] = {}
    pvc = env.res("persistentvolumeclaims")
    pv = env.res("persistentvolumes")
    for obj in others:
        await env.client.create(env.res(obj["kind"]), obj, namespace=obj["metadata"].get("namespace"))
    for claim in claims:
        status = claim.pop("status")
        created = await env.client.create(pvc, claim, namespace=NS)
        uids[claim["metadata"]["name"]] = created["metadata"]["uid"]
        created["status"] = status
        await env.client.update(pvc, created, namespace=NS, subresource="status")
    for volume in volumes:
        ref = volume["spec"].get("claimRef")
        if ref is not None and ref["uid"] == CLAIM_UID:
            ref["uid"] = uids[ref["name"]]
        elif ref is not None and not ref["uid"]:
            del ref["uid"]
        status = volume.pop("status")
        created = await env.client.create(pv, volume)
        created["status"] = status
        await env.client.update(pv, created, subresource="status")
    return uids


async def get_volume(env: Env[Any], name: str) -> Obj:
    return await env.client.get(env.res("persistentvolumes"), name)


async def get_claim(env: Env[Any], name: str) -> Obj:
    return await env.client.get(env.res("persistentvolumeclaims"), name, namespace=NS)


async def events(env: Env[PersistentVolumeController]) -> list[tuple[str, str, str]]:
    """(type, reason, message) of every Event written, oldest first."""
    await env.controller.recorder.flush()
    items = (await env.client.list(env.res("events")))["items"]
    items.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [(e["type"], e["reason"], e["message"]) for e in items]
