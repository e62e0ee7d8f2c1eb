"""controllers/job_podgroups: the PodGroup a Job's pods are scheduled as, from its Workload's template (upstream
pkg/controller/job/job_scheduling_manager.go: computePodGroupName, createPodGroup, isNewJob,
shouldManageWorkloadForJob)."""

from __future__ import annotations

from typing import Any

from kubeplane.client.local import LocalClient
from kubeplane.controllers.controller_utils import fnv32a, safe_encode_string
from kubeplane.controllers.job_podgroups import (
    compute_pod_group_name,
    ensure_pod_group,
    is_new_job,
    set_scheduling_group,
    should_manage,
)


def job(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default", "uid": "job-uid"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}},
        "status": status,
    }


def workload() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "Workload",
        "metadata": {
            "name": "train-wl",
            "namespace": "default",
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-uid", "controller": True}
            ],
        },
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "train"},
            "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 4}}}],
        },
    }


def test_pod_group_name_is_upstreams_hash() -> None:
    expected_hash = safe_encode_string(str(fnv32a(b"train-wlworkers")))
    assert compute_pod_group_name("train-wl", "workers") == f"train-wl-workers-{expected_hash}"
    long = compute_pod_group_name("w" * 200, "t" * 200)
    assert len(long) == 253  # both halves truncated (upstream: "both exceed half, split evenly")


def test_new_job_and_management_rules() -> None:
    assert is_new_job(job(), [])
    assert not is_new_job(job(startTime="2026-01-01T00:00:00Z"), [])
    assert not is_new_job(job(conditions=[{"type": "Suspended", "status": "True"}]), [])
    byo = job()
    byo["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    assert not should_manage(byo)
    owned = job()
    owned["metadata"]["ownerReferences"] = [{"kind": "CronJob", "name": "c", "uid": "u", "controller": True}]
    assert not should_manage(owned)


async def test_ensure_pod_group_creates_it_from_the_template_once() -> None:
    client = await LocalClient.in_memory()
    wl = await client.create(client.resource("workloads.v1alpha3.scheduling.k8s.io"), workload(), namespace="default")
    name = await ensure_pod_group(client, job(), [])
    assert name == compute_pod_group_name("train-wl", "workers")
    pg = await client.get(client.resource("podgroups.v1alpha3.scheduling.k8s.io"), name, namespace="default")
    assert pg["spec"]["workloadRef"] == {"workloadName": "train-wl", "templateName": "workers"}
    assert pg["spec"]["schedulingPolicy"] == {"gang": {"minCount": 4}}
    owners = pg["metadata"]["ownerReferences"]
    assert owners[0]["kind"] == "Job"
    assert owners[0]["controller"] is True
    assert owners[1] == {  # the controller's version (v1beta1, v1.37's) though the Workload was created at v1alpha3
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "name": "train-wl",
        "uid": wl["metadata"]["uid"],
    }
    assert await ensure_pod_group(client, job(), [{"metadata": {"name": "p"}}]) == name  # found, not recreated
    pod = set_scheduling_group({"spec": {}}, name)
    assert pod["spec"]["schedulingGroup"] == {"podGroupName": name}


async def test_no_workload_means_pod_by_pod() -> None:
    client = await LocalClient.in_memory()
    assert await ensure_pod_group(client, job(), []) is None
