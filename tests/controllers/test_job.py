"""The Job controller end to end over the in-memory API server, on a fake clock (upstream
``pkg/controller/job/job_controller_test.go``: the cases of TestControllerSyncJob and the tracking tests that the
controller's behaviour hinges on, each named). Pods finish because the test writes their status, as a kubelet
would."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubeplane.controllers.job_podgroups import compute_pod_group_name
from kubeplane.controllers.job_util import COMPLETION_INDEX_ANNOTATION
from tests.controllers.jobenv import (
    JOB_TRACKING_FINALIZER,
    JobEnv,
    condition,
    job_env,
    job_obj,
    running_job_controller,
)


@pytest.fixture
async def env() -> AsyncIterator[JobEnv]:
    async for e in job_env():
        yield e


async def test_job_creates_pod_and_completes(env: JobEnv) -> None:
    """TestControllerSyncJob "job start" then "job finish": one pod from the template with the Job's labels, a
    controller ownerReference, generateName ``<job>-``, the tracking finalizer; Complete after it succeeds."""
    job = await env.create_job(job_obj())
    [pod] = await env.until_pods(1)
    meta = pod["metadata"]
    assert meta["generateName"] == "pi-"
    assert meta["labels"] == {"job-name": "pi"}
    assert JOB_TRACKING_FINALIZER in meta["finalizers"]
    [ref] = meta["ownerReferences"]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == ("Job", "pi", job["metadata"]["uid"], True)
    await env.finish(pod)
    done = await env.until_condition("Complete")
    status = done["status"]
    assert status["succeeded"] == 1
    assert not status.get("failed")
    assert not status.get("active")
    assert status["completionTime"]
    assert status["startTime"]
    criteria = condition(done, "SuccessCriteriaMet")
    complete = condition(done, "Complete")
    assert criteria is not None
    assert complete is not None
    for cond in (criteria, complete):
        assert (cond["reason"], cond["message"]) == ("CompletionsReached", "Reached expected number of succeeded pods")
    assert status["completionTime"] == complete["lastTransitionTime"]
    assert not (status.get("uncountedTerminatedPods") or {}).get("succeeded")
    [pod] = await env.pods()
    assert JOB_TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or [])
    assert await env.events("SuccessfulCreate") == [f"Created pod: {pod['metadata']['name']}"]
    assert await env.events("Completed") == ["Job completed"]


async def test_parallelism_and_completions(env: JobEnv) -> None:
    """TestControllerSyncJob "WQ job: ..."/"too few active pods": at most parallelism pods, never more than the
    completions still needed; status.active / ready / succeeded follow."""
    await env.create_job(job_obj(completions=3, parallelism=2))
    pods = await env.until_pods(2)
    await env.finish(pods[0])
    await env.finish(pods[1])

    async def one_left() -> bool:
        job = await env.job()
        return (job.get("status") or {}).get("succeeded") == 2 and len(await env.pods(active_only=True)) == 1

    await env.until(one_left, "the third pod")
    job = await env.job()
    assert job["status"]["active"] == 1
    assert job["status"]["ready"] == 0
    assert job["status"]["terminating"] == 0
    [last] = await env.pods(active_only=True)
    await env.finish(last)
    done = await env.until_condition("Complete")
    assert done["status"]["succeeded"] == 3


async def test_backoff_limit_exceeded(env: JobEnv) -> None:
    """TestControllerSyncJob "too many job failures": failures past backoffLimit fail the Job with
    BackoffLimitExceeded "Job has reached the specified backoff limit" (FailureTarget first, then Failed), and
    the replacement waits the pod-failure backoff (10 s after the first failure)."""
    await env.create_job(job_obj(backoffLimit=1))
    [first] = await env.until_pods(1)
    await env.finish(first, "Failed")
    # The replacement only comes 10 s (DefaultJobPodFailureBackOff) after the failure.
    await env.clock.advance(2.0)
    for _ in range(20):
        await env.clock.advance(0.0)
    assert len(await env.pods(active_only=True)) == 0
    [second] = await env.until_pods(1)
    assert env.clock.now() - 1_800_000_000.0 >= 10.0
    await env.finish(second, "Failed")
    failed = await env.until_condition("Failed")
    cond = condition(failed, "Failed")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    target = condition(failed, "FailureTarget")
    assert target is not None
    assert target["reason"] == "BackoffLimitExceeded"
    assert failed["status"]["failed"] == 2
    assert not failed["status"].get("completionTime")
    assert await env.events("BackoffLimitExceeded") == ["Job has reached the specified backoff limit"]


async def test_indexed_job_runs_parallelism_at_a_time_and_completes_every_index(env: JobEnv) -> None:
    """TestControllerSyncJob "indexed job ...": pods get the completion-index annotation and label, hostname
    ``<job>-<i>``, generateName ``<job>-<i>-``, JOB_COMPLETION_INDEX; at most parallelism run; completedIndexes
    is the interval string."""
    await env.create_job(
        job_obj(completions=5, parallelism=2, completionMode="Indexed", template_spec={"subdomain": "svc"})
    )
    seen: set[str] = set()
    for _ in range(3):
        pods = await env.pods(active_only=True)
        if not pods:
            pods = await env.until_pods(2 if len(seen) < 4 else 1)
        assert len(pods) <= 2
        for pod in pods:
            meta, spec = pod["metadata"], pod["spec"]
            ix = meta["annotations"][COMPLETION_INDEX_ANNOTATION]
            assert meta["labels"][COMPLETION_INDEX_ANNOTATION] == ix
            assert spec["hostname"] == f"pi-{ix}"
            assert spec["subdomain"] == "svc"
            assert meta["generateName"] == f"pi-{ix}-"
            env_var = spec["containers"][0]["env"][0]
            assert env_var["name"] == "JOB_COMPLETION_INDEX"
            assert env_var["valueFrom"]["fieldRef"]["fieldPath"] == f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"
            seen.add(ix)
            await env.finish(pod)

        async def drained() -> bool:
            return len(await env.pods(active_only=True)) > 0 or condition(await env.job(), "Complete") is not None

        await env.until(drained, "next pods")
    done = await env.until_condition("Complete")
    assert seen == {"0", "1", "2", "3", "4"}
    assert done["status"]["completedIndexes"] == "0-4"
    assert done["status"]["succeeded"] == 5


async def test_suspend_deletes_pods_and_resume_resets_start_time(env: JobEnv) -> None:
    """TestControllerSyncJob "suspending a job with satisfied expectations" / "resuming a suspended job":
    Suspended True (JobSuspended "Job suspended") deletes the active pods; resuming sets it False (JobResumed
    "Job resumed") and resets startTime."""
    await env.create_job(job_obj(parallelism=2, completions=4))
    await env.until_pods(2)
    started = (await env.job())["status"]["startTime"]
    await env.clock.advance(30.0)
    await env.client.patch(env.res("jobs"), "pi", {"spec": {"suspend": True}}, namespace="default")
    job = await env.until_condition("Suspended")
    cond = condition(job, "Suspended")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("JobSuspended", "Job suspended")
    await env.until_pods(0)
    assert await env.events("Suspended") == ["Job suspended"]
    await env.client.patch(env.res("jobs"), "pi", {"spec": {"suspend": False}}, namespace="default")

    async def resumed() -> bool:
        c = condition(await env.job(), "Suspended")
        return c is not None and c["status"] == "False"

    await env.until(resumed, "resumed")
    job = await env.job()
    cond = condition(job, "Suspended")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("JobResumed", "Job resumed")
    assert job["status"]["startTime"] != started
    await env.until_pods(2)
    assert await env.events("Resumed") == ["Job resumed"]


async def test_created_suspended_has_no_start_time(env: JobEnv) -> None:
    """TestControllerSyncJob "suspending a job" on creation: no pods, no startTime, Suspended True."""
    await env.create_job(job_obj(suspend=True))
    job = await env.until_condition("Suspended")
    assert not job["status"].get("startTime")
    assert await env.pods() == []


async def test_active_deadline_exceeded(env: JobEnv) -> None:
    """TestSyncJobPastDeadline "activeDeadlineSeconds less than single pod execution": DeadlineExceeded "Job was
    active longer than specified deadline"; the running pod is deleted."""
    await env.create_job(job_obj(activeDeadlineSeconds=10))
    await env.until_pods(1)
    failed = await env.until_condition("Failed")
    cond = condition(failed, "Failed")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("DeadlineExceeded", "Job was active longer than specified deadline")
    assert await env.pods(active_only=True) == []
    assert failed["status"]["failed"] == 1
    assert await env.events("DeadlineExceeded") == ["Job was active longer than specified deadline"]


async def test_work_queue_job_completes_when_any_pod_succeeds(env: JobEnv) -> None:
    """TestControllerSyncJob "WQ job finishing": no completions; once one pod succeeds and none is active the Job
    is Complete, the others may still finish."""
    await env.create_job(job_obj(parallelism=2))
    pods = await env.until_pods(2)
    await env.finish(pods[0])
    await env.clock.advance(2.0)
    job = await env.job()
    assert condition(job, "Complete") is None
    await env.finish(pods[1])
    done = await env.until_condition("Complete")
    assert done["status"]["succeeded"] == 2


async def test_scale_down_parallelism_deletes_surplus(env: JobEnv) -> None:
    """TestControllerSyncJob "too many active pods": lowering parallelism deletes the least advanced pods, with
    SuccessfulDelete events; status.active follows."""
    await env.create_job(job_obj(parallelism=3, completions=5))
    await env.until_pods(3)
    await env.client.patch(env.res("jobs"), "pi", {"spec": {"parallelism": 1}}, namespace="default")
    await env.until_pods(1)

    async def one_active() -> bool:
        return bool((await env.job()).get("status", {}).get("active") == 1)

    await env.until(one_active, "status.active 1")
    deleted = await env.events("SuccessfulDelete")
    assert len(deleted) == 2
    assert all(m.startswith("Deleted pod: pi-") for m in deleted)


async def test_on_failure_restarts_reach_backoff_limit(env: JobEnv) -> None:
    """TestControllerSyncJob "too many job failures with podRunning - multiple pods" (pastBackoffLimitOnFailure):
    restartPolicy OnFailure, container restarts of running pods reaching backoffLimit fail the Job."""
    await env.create_job(job_obj(backoffLimit=2, template_spec={"restartPolicy": "OnFailure"}))
    [pod] = await env.until_pods(1)
    status = {"phase": "Running", "containerStatuses": [{"name": "c", "restartCount": 2, "state": {"running": {}}}]}
    await env.client.patch(env.res("pods"), pod["metadata"]["name"], {"status": status}, namespace="default",
                           subresource="status")  # fmt: skip
    failed = await env.until_condition("Failed")
    cond = condition(failed, "Failed")
    assert cond is not None
    assert cond["reason"] == "BackoffLimitExceeded"
    assert await env.pods(active_only=True) == []


async def test_restarted_controller_changes_nothing_on_a_finished_job() -> None:
    """syncJob of a finished Job does nothing (upstream "job finished" early return): a new controller after
    completion creates no pod and writes no status."""
    async with running_job_controller() as env:
        await env.create_job(job_obj())
        [pod] = await env.until_pods(1)
        await env.finish(pod)
        done = await env.until_condition("Complete")
        client, clock = env.client, env.clock
        async with running_job_controller(client=client, clock=clock) as again:
            for _ in range(5):
                await again.clock.advance(1.0)
            assert len(await again.pods()) == 1
            after = await again.job()
            assert after["metadata"]["resourceVersion"] == done["metadata"]["resourceVersion"]


async def test_pod_mutators_run_on_every_created_pod(env: JobEnv) -> None:
    """The hook gang scheduling uses (``JobController.parts.pod_mutators``): each pod is built in one place
    (``job_manage.build_pod``) and every mutator sees the Job, the pod and its completion index."""
    seen: list[int | None] = []

    def mark(job: dict[str, object], pod: dict[str, object], index: int | None) -> None:
        seen.append(index)
        meta = pod.setdefault("metadata", {})
        assert isinstance(meta, dict)
        meta.setdefault("annotations", {})["example.com/group"] = f"{job['metadata']['name']}-group"  # type: ignore[index]

    env.controller.parts.pod_mutators.append(mark)
    await env.create_job(job_obj(completions=2, parallelism=2, completionMode="Indexed"))
    pods = await env.until_pods(2)
    assert sorted(i for i in seen if i is not None) == [0, 1]
    assert {p["metadata"]["annotations"]["example.com/group"] for p in pods} == {"pi-group"}


async def test_job_with_a_workload_gets_its_pod_group_and_pods_join_it() -> None:
    """Upstream job_scheduling_manager.go: a new Job that controls a Workload naming it (``spec.controllerRef``)
    gets the PodGroup of the Workload's template (``computePodGroupName``), and every pod it creates carries
    ``spec.schedulingGroup.podGroupName`` of that group; Jobs without a Workload are untouched (the other tests)."""

    async def setup(env: JobEnv) -> None:
        job = await env.create_job(job_obj(completions=2, parallelism=2))
        workload = {
            "apiVersion": "scheduling.k8s.io/v1alpha3",
            "kind": "Workload",
            "metadata": {
                "name": "train",
                "namespace": job["metadata"]["namespace"],
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": "pi",
                        "uid": job["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "pi"},
                "podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}}],
            },
        }
        await env.client.create(
            env.res("workloads.v1alpha3.scheduling.k8s.io"), workload, namespace=job["metadata"]["namespace"]
        )

    async with running_job_controller(setup=setup) as env:
        pods = await env.until_pods(2)
        group = compute_pod_group_name("train", "workers")
        assert {p["spec"]["schedulingGroup"]["podGroupName"] for p in pods} == {group}
        pod_group = await env.client.get(env.res("podgroups"), group, namespace=pods[0]["metadata"]["namespace"])
        assert pod_group["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
        assert pod_group["spec"]["workloadRef"] == {"workloadName": "train", "templateName": "workers"}
