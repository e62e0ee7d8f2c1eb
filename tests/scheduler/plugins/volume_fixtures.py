"""Builders shared by the volume plugins' tests: a Handle over a list of objects, pods with volumes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.api.views import namespace_of
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.framework.handle import Handle

_PLURALS = {
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "StorageClass": "storageclasses",
    "CSINode": "csinodes",
    "CSIDriver": "csidrivers",
    "VolumeAttachment": "volumeattachments",
}


def handle_with(
    objects: Sequence[Mapping[str, Any]] = (),
    nodes: Sequence[Mapping[str, Any]] = (),
    pods: Sequence[Mapping[str, Any]] = (),
) -> Handle:
    """A Handle whose ``list_objects`` serves ``objects`` (by kind) and whose snapshot holds ``nodes`` and
    ``pods`` (as upstream's tests build ``cache.NewSnapshot(pods, nodes)`` and fake listers)."""

    def list_objects(plural: str, namespace: str) -> list[Mapping[str, Any]]:
        return [
            o
            for o in objects
            if _PLURALS.get(str(o.get("kind"))) == plural and (not namespace or namespace_of(o) == namespace)
        ]

    return Handle(list_objects=list_objects, snapshot_lister=Snapshot.from_objects(nodes, pods))


def pod(
    name: str = "p",
    *volumes: Mapping[str, Any],
    namespace: str = "default",
    node: str = "",
    uid: str = "",
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}], "volumes": list(volumes)}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid or name}, "spec": spec}


def pvc_volume(claim: str, name: str = "") -> dict[str, Any]:
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}


def pvc(
    name: str,
    namespace: str = "default",
    *,
    access_modes: Sequence[str] = (),
    volume_name: str = "",
    class_name: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if access_modes:
        spec["accessModes"] = list(access_modes)
    if volume_name:
        spec["volumeName"] = volume_name
    if class_name is not None:
        spec["storageClassName"] = class_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def node(name: str, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})}}
