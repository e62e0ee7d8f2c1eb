"""The scale subresource of custom resources (apiextensions-apiserver registry/customresource/etcd.go
``scaleFromCustomResource`` / ``scaleUpdatedObjectInfo``): ``spec.replicas`` read from ``specReplicasPath``,
``status.replicas`` from ``statusReplicasPath`` (0 when absent), ``status.selector`` from ``labelSelectorPath``
(a string, as is); a scale update writes ``specReplicasPath``."""

from __future__ import annotations

from typing import Any

from kubeplane.api.crd import jsonpath
from kubeplane.api.crd.resource import CustomResourceInfo

from . import errors

Obj = dict[str, Any]

__all__ = ["custom_scale_of", "set_custom_replicas"]


def _int_at(obj: Obj, path: str) -> int:
    found = jsonpath.find(obj, path) if path else []
    value = found[0] if found else 0
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def custom_scale_of(info: CustomResourceInfo, obj: Obj) -> Obj:
    scale = info.scale or {}
    meta = obj["metadata"]
    status: Obj = {"replicas": _int_at(obj, str(scale.get("statusReplicasPath") or ""))}
    selector_path = str(scale.get("labelSelectorPath") or "")
    if selector_path:
        found = jsonpath.find(obj, selector_path)
        if found and isinstance(found[0], str) and found[0]:
            status["selector"] = found[0]
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
        },
        "spec": {"replicas": _int_at(obj, str(scale.get("specReplicasPath") or ""))},
        "status": status,
    }


def set_custom_replicas(info: CustomResourceInfo, obj: Obj, replicas: int) -> None:
    path = str((info.scale or {}).get("specReplicasPath") or "")
    if not jsonpath.set_path(obj, path, replicas):
        raise errors.bad_request(f"the spec replicas field {path!r} cannot be set")
