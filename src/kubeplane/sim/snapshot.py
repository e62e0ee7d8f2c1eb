"""Snapshots: a simulation that starts from a live cluster's state, or from a kubeplane data dir.

:func:`snapshot` reads the objects that decide scheduling — Nodes, Namespaces, PriorityClasses,
PodDisruptionBudgets, Deployments, ReplicaSets, DaemonSets, StatefulSets, CronJobs, Jobs and Pods — through any
kubeconfig (a real cluster included; read-only) or straight from a stopped or running kubeplane's SQLite store,
and :func:`to_scenario` turns them into scenario data: the Nodes become the node config (capacity, allocatable,
labels, taints, podCIDR, address, images), the rest arrive at t=0. A snapshot answers "what if I drain node X /
add 10 nodes / switch to MostAllocated" without touching the cluster: add actions, or run it with another ``--config``.

What is kept of a pod: its spec, with ``nodeName`` for a bound pod, so it lands where it runs now (the kubelet
admits it again), and its labels and annotations. Status, UIDs, resourceVersions, managedFields and
ownerReferences are dropped (UIDs change in the simulation; controllers adopt the pods back by selector).
Terminal pods are left out: they hold nothing.

Batch and stateful workloads: a StatefulSet's pods are kept like a ReplicaSet's (the StatefulSet controller
adopts them by selector, names and ordinals intact). A running Job is kept without its generated selector and
the template labels naming its old UID, and its pods are left out: the Job starts its pods afresh in the
simulation (what it had completed before is not carried over; a what-if replays the remaining work as new).
Finished Jobs are left out; CronJobs are kept with their spec (their status, and so ``lastScheduleTime``, is not:
they fire at their next activation after t=0).

Storage: CSIDrivers, CSINodes, StorageClasses, CSIStorageCapacities, PersistentVolumes and PersistentVolumeClaims
are kept (before the pods that use them). A claim keeps ``spec.volumeName`` and a volume its ``claimRef`` by
namespace and name only (the old UID and resourceVersion go), so the PV controller binds the pair again as a
pre-bound one; status (phase) is the PV controller's to set again. A volume of a simulated CSI driver is counted
in that driver's capacity when the fleet sees it (:mod:`kubeplane.kubelet.csi.provisioner`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kubeplane.api.views import annotations_of, controller_ref_of, is_pod_terminal, mappings, status_of

Obj = dict[str, Any]

# (resource, store key prefix), in creation order: namespaces and priority classes before what uses them, and
# the pods before their controllers, so a ReplicaSet finds its pods (and adopts them) instead of creating more
KINDS: tuple[tuple[str, str], ...] = (
    ("nodes", "/registry/minions/"),
    ("namespaces", "/registry/namespaces/"),
    ("priorityclasses", "/registry/priorityclasses/"),
    ("poddisruptionbudgets", "/registry/poddisruptionbudgets/"),
    ("csidrivers", "/registry/csidrivers/"),
    ("csinodes", "/registry/csinodes/"),
    ("storageclasses", "/registry/storageclasses/"),
    ("csistoragecapacities", "/registry/csistoragecapacities/"),
    ("persistentvolumes", "/registry/persistentvolumes/"),
    ("persistentvolumeclaims", "/registry/persistentvolumeclaims/"),
    ("pods", "/registry/pods/"),
    ("replicasets", "/registry/replicasets/"),
    ("deployments", "/registry/deployments/"),
    ("daemonsets", "/registry/daemonsets/"),
    ("statefulsets", "/registry/statefulsets/"),
    ("cronjobs", "/registry/cronjobs/"),
    ("jobs", "/registry/jobs/"),
)
_BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_KIND = {
    "nodes": ("v1", "Node"),
    "namespaces": ("v1", "Namespace"),
    "priorityclasses": ("scheduling.k8s.io/v1", "PriorityClass"),
    "poddisruptionbudgets": ("policy/v1", "PodDisruptionBudget"),
    "deployments": ("apps/v1", "Deployment"),
    "replicasets": ("apps/v1", "ReplicaSet"),
    "daemonsets": ("apps/v1", "DaemonSet"),
    "pods": ("v1", "Pod"),
    "csidrivers": ("storage.k8s.io/v1", "CSIDriver"),
    "csinodes": ("storage.k8s.io/v1", "CSINode"),
    "storageclasses": ("storage.k8s.io/v1", "StorageClass"),
    "csistoragecapacities": ("storage.k8s.io/v1", "CSIStorageCapacity"),
    "persistentvolumes": ("v1", "PersistentVolume"),
    "persistentvolumeclaims": ("v1", "PersistentVolumeClaim"),
    "statefulsets": ("apps/v1", "StatefulSet"),
    "cronjobs": ("batch/v1", "CronJob"),
    "jobs": ("batch/v1", "Job"),
}
_JOB_LABELS = ("batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name", "controller-uid", "job-name")
"""What the API server adds to a Job's pod template (upstream ``generateSelector``): it names the old Job's UID,
so a Job re-created with a new UID would be refused; the simulated API server adds them again."""


async def _from_client(client: Any) -> dict[str, list[Obj]]:
    out: dict[str, list[Obj]] = {}
    for resource, _ in KINDS:
        listed = await client.list(client.resource(resource))
        out[resource] = list(listed["items"])
    return out


def snapshot_from_kubeconfig(kubeconfig: str | None) -> dict[str, list[Obj]]:
    """The scheduling-relevant objects of the cluster ``kubeconfig`` points at (read-only)."""
    from kubeplane.client.http import HTTPClient

    async def main() -> dict[str, list[Obj]]:
        client = HTTPClient.from_kubeconfig(kubeconfig)
        try:
            return await _from_client(client)
        finally:
            await client.close()

    return asyncio.run(main())


def snapshot_from_data_dir(data_dir: str | Path) -> dict[str, list[Obj]]:
    """The same from a kubeplane data dir's SQLite store (read-only; also while its server runs)."""
    from kubeplane.store.sqlite_reader import SqliteReader

    reader = SqliteReader(Path(data_dir) / "store.db")
    try:
        out: dict[str, list[Obj]] = {}
        for resource, prefix in KINDS:
            out[resource] = [json.loads(kv.value) for kv in reader.range(prefix).kvs]
        return out
    finally:
        reader.close()


def _clean(obj: Mapping[str, Any], resource: str) -> Obj:
    api_version, kind = _KIND[resource]
    meta = obj.get("metadata") or {}
    kept_meta = {k: meta[k] for k in ("name", "namespace", "labels", "annotations") if meta.get(k)}
    annotations = {
        k: v for k, v in (kept_meta.get("annotations") or {}).items() if not k.startswith("kubectl.kubernetes.io/")
    }
    if annotations:
        kept_meta["annotations"] = annotations
    else:
        kept_meta.pop("annotations", None)
    out: Obj = {"apiVersion": api_version, "kind": kind, "metadata": kept_meta}
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = json.loads(json.dumps(value))
    return out


def _node_group(node: Mapping[str, Any]) -> Obj:
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    group: Obj = {
        "name": meta["name"],
        "capacity": dict(status.get("capacity") or {}),
        "allocatable": dict(status.get("allocatable") or status.get("capacity") or {}),
        "labels": dict(meta.get("labels") or {}),
    }
    taints = [t for t in spec.get("taints") or [] if not str(t.get("key", "")).startswith("node.kubernetes.io/")]
    if taints:  # the lifecycle taints (not-ready, unreachable, pressure) belong to the simulated state
        group["taints"] = [{k: v for k, v in t.items() if k != "timeAdded"} for t in taints]
    if spec.get("podCIDR"):
        group["podCIDR"] = spec["podCIDR"]
    address = next((a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), None)
    if address:
        group["address"] = address
    images = [i for i in status.get("images") or [] if i.get("names")]
    if images:
        group["images"] = [{"names": list(i["names"]), "sizeBytes": int(i.get("sizeBytes", 0))} for i in images]
    info = status.get("nodeInfo") or {}
    if info.get("kubeletVersion"):
        group["kubeletVersion"] = info["kubeletVersion"]
    return group


def _owner_kind(obj: Mapping[str, Any]) -> str:
    ref = controller_ref_of(obj)
    return str(ref.get("kind") or "") if ref is not None else ""


def _job_finished(job: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in mappings(status_of(job), "conditions")
    )


def _renew_job(job: Obj) -> None:
    """A Job as a new one: its generated selector and the labels naming the old UID go (unless the selector is
    manual), so the simulated API server generates them for the new Job."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector"):
        return
    spec.pop("selector", None)
    template_meta = (spec.get("template") or {}).get("metadata")
    if isinstance(template_meta, dict) and isinstance(template_meta.get("labels"), dict):
        labels = {k: v for k, v in template_meta["labels"].items() if k not in _JOB_LABELS}
        if labels:
            template_meta["labels"] = labels
        else:
            template_meta.pop("labels")


def _renew_claim_ref(pv: Obj) -> None:
    """A PV's claimRef by name only: the claim is re-created with a new UID (the PV controller's pre-bound
    case); an unbound claimRef-less PV is left as it is."""
    ref = (pv.get("spec") or {}).get("claimRef")
    if isinstance(ref, dict):
        for key in ("uid", "resourceVersion"):
            ref.pop(key, None)


def to_scenario(objects: Mapping[str, Iterable[Mapping[str, Any]]], *, name: str = "snapshot") -> Obj:
    """Scenario data (see :mod:`kubeplane.sim.scenario`) that starts from ``objects``."""
    nodes = [_node_group(n) for n in objects.get("nodes", [])]
    manifests: list[Obj] = []
    for resource, _ in KINDS[1:]:
        for obj in objects.get(resource, []):
            meta = obj.get("metadata") or {}
            if resource == "namespaces" and meta.get("name") in _BUILTIN_NAMESPACES:
                continue
            if resource == "priorityclasses" and str(meta.get("name", "")).startswith("system-"):
                continue  # the API server creates its own
            if resource == "pods":
                if is_pod_terminal(obj):
                    continue
                if annotations_of(obj).get("kubernetes.io/config.mirror"):
                    continue  # mirror pods come from static pod manifests, not the API
                if _owner_kind(obj) == "Job":
                    continue  # a Job's pods carry its old UID in their labels: the re-created Job makes new ones
            if resource == "jobs" and _job_finished(obj):
                continue  # a finished Job holds nothing (as a terminal pod)
            cleaned = _clean(obj, resource)
            if resource == "jobs":
                _renew_job(cleaned)
            if resource == "persistentvolumes":
                _renew_claim_ref(cleaned)
            manifests.append(cleaned)
    scenario: Obj = {"name": name, "duration": "1h"}
    if nodes:
        scenario["cluster"] = {"nodes": nodes}
    scenario["workload"] = [{"at": 0, "manifest": m} for m in manifests]
    return scenario
