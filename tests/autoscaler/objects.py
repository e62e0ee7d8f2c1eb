"""Pod and PDB builders the autoscaler tests share (nodes: :func:`tests.autoscaler.fake_provider.node_object`)."""

from __future__ import annotations

from typing import Any

RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}


def pod_object(
    name: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    node: str | None = None,
    namespace: str = "default",
    owner: dict[str, Any] | None = RS_OWNER,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    unschedulable: bool = False,
    node_selector: dict[str, str] | None = None,
    phase: str = "",
    priority: int | None = None,
    created: str = "2027-01-15T08:00:00Z",
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": memory, **(extra or {})}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": dict(labels or {}),
        "annotations": dict(annotations or {}),
        "creationTimestamp": created,
    }
    if owner is not None:
        meta["ownerReferences"] = [owner]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "img", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    if volumes:
        spec["volumes"] = volumes
    if node_selector:
        spec["nodeSelector"] = node_selector
    if priority is not None:
        spec["priority"] = priority
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if unschedulable:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def pdb_object(name: str, *, labels: dict[str, str], allowed: int, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": labels}},
        "status": {"disruptionsAllowed": allowed},
    }
