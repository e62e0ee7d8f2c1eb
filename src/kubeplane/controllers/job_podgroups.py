"""The Job side of workload-aware scheduling (upstream ``pkg/controller/job/job_scheduling_manager.go``, v1.37):
the PodGroup a Job's pods are scheduled as, built from a Workload's ``podGroupTemplates``.

The Job controller (``controllers/job*.py``) calls :func:`ensure_pod_group` before it creates pods and
:func:`set_scheduling_group` on each pod it creates. Upstream's rules kept here:

* Nothing is managed for a Job whose pod template already names a ``schedulingGroup`` (the user brought their
  own PodGroup), nor for a Job with a controller owner (its parent owns the Workload).
* The Workload is the one whose ``spec.controllerRef`` points at the Job (apiGroup ``batch``, kind ``Job``) and
  that the Job controls (a controller ownerReference with the Job's uid); exactly one is used, or none.
* One PodGroup per (Workload, template): named ``computePodGroupName`` (``<workload>-<template>-<hash>``, FNV-32a
  of both names through ``rand.SafeEncodeString``, truncated to 253), with ``spec.workloadRef``, the template's
  policy, constraints and disruption mode, a controller ownerReference to the Job and a plain one to the
  Workload. Created only for a Job that has not started (no pods, no startTime, no terminal counts, no
  Suspended condition); a started Job only finds an existing group.

Not here (yet): compiling ``spec.scheduling`` (the WorkloadWithJob alpha gate) into a Workload of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.api.views import meta_of, spec_of, status_of
from kubeplane.client.interface import Client
from kubeplane.controllers.controller_utils import fnv32a, safe_encode_string

__all__ = [
    "compute_pod_group_name",
    "ensure_pod_group",
    "find_workload",
    "is_new_job",
    "pod_group_for",
    "set_scheduling_group",
    "should_manage",
]

DNS1123_SUBDOMAIN_MAX_LENGTH = 253
API_VERSION = "scheduling.k8s.io/v1beta1"
"""The version the Job controller reads and writes Workloads and PodGroups in: v1.37's, which real v1.37 clients
use (kubeplane also serves v1alpha3 over the same objects, so v1alpha3 Workloads are found too)."""
WORKLOADS = "workloads.v1beta1.scheduling.k8s.io"
POD_GROUPS = "podgroups.v1beta1.scheduling.k8s.io"


def compute_pod_group_name(workload_name: str, template_name: str) -> str:
    """Upstream ``computePodGroupName``: ``<workload>-<template>-<hash>``, each part truncated fairly."""
    digest = fnv32a(workload_name.encode() + template_name.encode())
    hashed = safe_encode_string(str(digest))
    available = DNS1123_SUBDOMAIN_MAX_LENGTH - len(hashed) - 2
    wl, tpl = workload_name, template_name
    if len(wl) + len(tpl) > available:
        half = available // 2
        if len(wl) <= half:
            tpl = tpl[: available - len(wl)]
        elif len(tpl) <= half:
            wl = wl[: available - len(tpl)]
        else:
            wl, tpl = wl[: available - half], tpl[:half]
    return f"{wl}-{tpl}-{hashed}"


def _controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for ref in meta_of(obj).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            found: Mapping[str, Any] = ref
            return found
    return None


def _controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = _controller_of(obj)
    return ref is not None and ref.get("uid") == meta_of(owner).get("uid")


def should_manage(job: Mapping[str, Any]) -> bool:
    """Upstream ``shouldManageWorkloadForJob`` (less its feature gate): no BYO group, no controller owner."""
    template_spec = spec_of(spec_of(job).get("template") or {})
    return template_spec.get("schedulingGroup") is None and _controller_of(job) is None


def is_new_job(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> bool:
    """Upstream ``isNewJob``: no pods, never started, no terminal counts, never suspended."""
    status = status_of(job)
    if pods or status.get("startTime") or status.get("succeeded") or status.get("failed"):
        return False
    return not any(c.get("type") == "Suspended" for c in status.get("conditions") or ())


def find_workload(job: Mapping[str, Any], workloads: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The Workload whose ``spec.controllerRef`` names the Job and which the Job controls; None when there is
    none or more than one (upstream falls back to default scheduling), or its template count is not 1."""
    name = meta_of(job).get("name")
    matched = [
        wl
        for wl in workloads
        if (ref := spec_of(wl).get("controllerRef") or {}).get("apiGroup") == "batch"
        and ref.get("kind") == "Job"
        and ref.get("name") == name
        and _controlled_by(wl, job)
    ]
    if len(matched) != 1 or len(spec_of(matched[0]).get("podGroupTemplates") or ()) != 1:
        return None
    return matched[0]


def pod_group_for(job: Mapping[str, Any], workload: Mapping[str, Any], template_name: str = "") -> dict[str, Any]:
    """Upstream ``createPodGroup``'s object for a root Job (``linkWorkloadOwner``): an empty template name
    selects the Workload's single template."""
    templates = spec_of(workload).get("podGroupTemplates") or []
    template = next((t for t in templates if t.get("name") == template_name), templates[0] if templates else {})
    wl_meta, job_meta = meta_of(workload), meta_of(job)
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": wl_meta["name"], "templateName": template.get("name", "")},
        "schedulingPolicy": dict(template.get("schedulingPolicy") or {}),
    }
    for key in ("schedulingConstraints", "disruptionMode", "resourceClaims"):
        if template.get(key):
            spec[key] = template[key]
    owners = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": job_meta["name"],
            "uid": job_meta.get("uid", ""),
            "controller": True,
            "blockOwnerDeletion": True,
        },
        {"apiVersion": API_VERSION, "kind": "Workload", "name": wl_meta["name"], "uid": wl_meta.get("uid", "")},
    ]
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {
            "name": compute_pod_group_name(wl_meta["name"], template.get("name", "")),
            "namespace": job_meta.get("namespace", "default"),
            "ownerReferences": owners,
        },
        "spec": spec,
    }


def set_scheduling_group(pod: dict[str, Any], pod_group_name: str | None) -> dict[str, Any]:
    """Point a pod the Job controller is about to create at its PodGroup (``spec.schedulingGroup``)."""
    if pod_group_name:
        pod.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": pod_group_name}
    return pod


async def ensure_pod_group(client: Client, job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> str | None:
    """The name of the Job's PodGroup, created from its Workload's template when the Job is new; None when the
    Job is scheduled pod by pod (no Workload, BYO group, a parent-owned Job, or a started Job without one)."""
    if not should_manage(job):
        return None
    namespace = meta_of(job).get("namespace", "default")
    workloads = (await client.list(client.resource(WORKLOADS), namespace=namespace))["items"]
    workload = find_workload(job, workloads)
    if workload is None:
        return None
    wanted = pod_group_for(job, workload)
    name = wanted["metadata"]["name"]
    groups = (await client.list(client.resource(POD_GROUPS), namespace=namespace))["items"]
    if any(meta_of(g).get("name") == name and _controlled_by(g, job) for g in groups):
        return str(name)
    if not is_new_job(job, pods):
        return None
    await client.create(client.resource(POD_GROUPS), wanted, namespace=namespace)
    return str(name)
