"""The Job controller's failure and success policies end to end (upstream ``job_controller_test.go``:
TestSyncJobWithJobPodFailurePolicy, TestSyncJobWithJobBackoffLimitPerIndex, TestSyncJobWithJobSuccessPolicy,
TestJobPodReplacementPolicy, TestGetPodsForJob and TestFinalizersRemovedExpectations' orphan cleanup; each test
names the cases it pins)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.errors import InvalidError
from kubeplane.client.interface import Obj
from kubeplane.controllers.job_util import COMPLETION_INDEX_ANNOTATION, INDEX_FAILURE_COUNT_ANNOTATION
from tests.controllers.jobenv import JOB_TRACKING_FINALIZER, NS, JobEnv, condition, job_env, job_obj


@pytest.fixture
async def env() -> AsyncIterator[JobEnv]:
    async for e in job_env():
        yield e


def policy(*rules: Obj) -> Obj:
    return {"rules": list(rules)}


async def test_fail_job_on_exit_code(env: JobEnv) -> None:
    """TestSyncJobWithJobPodFailurePolicy "job marked failed; failed pod matched FailJob rule on exit codes":
    FailureTarget then Failed with reason PodFailurePolicy and upstream's message; the other pods are deleted."""
    rule = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5]}}
    await env.create_job(job_obj(parallelism=2, completions=2, backoffLimit=6, podFailurePolicy=policy(rule)))
    pods = await env.until_pods(2)
    await env.finish(pods[0], "Failed", exit_code=5)
    failed = await env.until_condition("Failed")
    pod_name = pods[0]["metadata"]["name"]
    want = f"Container c for pod {NS}/{pod_name} failed with exit code 5 matching FailJob rule at index 0"
    for cond_type in ("FailureTarget", "Failed"):
        cond = condition(failed, cond_type)
        assert cond is not None
        assert (cond["reason"], cond["message"]) == ("PodFailurePolicy", want)
    assert await env.pods(active_only=True) == []
    assert failed["status"]["failed"] == 2  # the deleted running pod counts as failed too
    assert await env.events("PodFailurePolicy") == [want]


async def test_ignore_disruption_target(env: JobEnv) -> None:
    """TestSyncJobWithJobPodFailurePolicy "job not marked failed; failed pod matched Ignore rule on the
    DisruptionTarget condition": the failure does not count (backoffLimit 0 is not exceeded); it is replaced."""
    rule = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    await env.create_job(job_obj(backoffLimit=0, podFailurePolicy=policy(rule)))
    [first] = await env.until_pods(1)
    disrupted = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
    await env.finish(first, "Failed", exit_code=137, conditions=disrupted)
    [second] = await env.until_pods(1)
    assert second["metadata"]["name"] != first["metadata"]["name"]
    job = await env.job()
    assert not job["status"].get("failed")
    assert condition(job, "Failed") is None
    await env.finish(second)
    done = await env.until_condition("Complete")
    assert done["status"]["succeeded"] == 1
    assert not done["status"].get("failed")


async def test_count_rule_counts_towards_backoff_limit(env: JobEnv) -> None:
    """TestSyncJobWithJobPodFailurePolicy "job marked failed; failed pod matched Count rule": a counted failure
    past backoffLimit 0 fails the Job with BackoffLimitExceeded."""
    rule = {"action": "Count", "onExitCodes": {"operator": "In", "values": [42]}}
    await env.create_job(job_obj(backoffLimit=0, podFailurePolicy=policy(rule)))
    [pod] = await env.until_pods(1)
    await env.finish(pod, "Failed", exit_code=42)
    failed = await env.until_condition("Failed")
    cond = condition(failed, "Failed")
    assert cond is not None
    assert cond["reason"] == "BackoffLimitExceeded"
    assert failed["status"]["failed"] == 1


async def test_pod_replacement_policy_failed_waits_for_terminating_pods(env: JobEnv) -> None:
    """TestJobPodReplacementPolicy "feature flag true with PodReplacementPolicy Failed, delete pod": a pod being
    deleted is counted in status.terminating and not replaced until it is Failed."""
    await env.create_job(job_obj(podReplacementPolicy="Failed"))
    [pod] = await env.until_pods(1)
    await env.client.delete(env.res("pods"), pod["metadata"]["name"], namespace=NS)

    async def terminating() -> bool:
        return bool((await env.job()).get("status", {}).get("terminating") == 1)

    await env.until(terminating, "status.terminating 1")
    await env.clock.advance(30.0)
    await env.clock.advance(30.0)
    assert await env.pods(active_only=True) == []
    job = await env.job()
    assert not job["status"].get("failed")
    assert not job["status"].get("active")
    await env.finish(pod, "Failed")
    [replacement] = await env.until_pods(1)
    assert replacement["metadata"]["name"] != pod["metadata"]["name"]

    async def counted() -> bool:
        status = (await env.job()).get("status", {})
        return bool(status.get("failed") == 1 and status.get("terminating") == 0)

    await env.until(counted, "failed 1, terminating 0")


async def test_terminating_or_failed_replaces_deleted_pod(env: JobEnv) -> None:
    """TestJobPodReplacementPolicy "... TerminatingOrFailed, delete pod": the deleted pod counts as failed and is
    replaced (after the pod-failure backoff) before it finishes terminating."""
    await env.create_job(job_obj())
    [pod] = await env.until_pods(1)
    await env.client.delete(env.res("pods"), pod["metadata"]["name"], namespace=NS)
    [replacement] = await env.until_pods(1)
    assert replacement["metadata"]["name"] != pod["metadata"]["name"]
    assert (await env.job())["status"]["failed"] == 1


def indexed(**spec: Any) -> Obj:
    return job_obj(completionMode="Indexed", **spec)


def by_index(pods: list[Obj]) -> dict[int, Obj]:
    return {int(p["metadata"]["annotations"][COMPLETION_INDEX_ANNOTATION]): p for p in pods}


async def test_backoff_limit_per_index_failed_indexes(env: JobEnv) -> None:
    """TestSyncJobWithJobBackoffLimitPerIndex "single failed pod replaced with index failure count" and "job
    failed index is failed": the replacement carries job-index-failure-count 1; an index failing past
    backoffLimitPerIndex lands in failedIndexes; once every index finished the Job fails with FailedIndexes."""
    await env.create_job(indexed(completions=3, parallelism=3, backoffLimitPerIndex=1))
    pods = by_index(await env.until_pods(3))
    assert pods[1]["metadata"]["annotations"][INDEX_FAILURE_COUNT_ANNOTATION] == "0"
    await env.finish(pods[1], "Failed")

    async def replaced() -> bool:
        active = by_index(await env.pods(active_only=True))
        return 1 in active and active[1]["metadata"]["name"] != pods[1]["metadata"]["name"]

    await env.until(replaced, "index 1 recreated")
    again = by_index(await env.pods(active_only=True))[1]
    assert again["metadata"]["annotations"][INDEX_FAILURE_COUNT_ANNOTATION] == "1"
    await env.finish(again, "Failed")

    async def index_failed() -> bool:
        return bool((await env.job()).get("status", {}).get("failedIndexes") == "1")

    await env.until(index_failed, "failedIndexes 1")
    await env.finish(pods[0])
    await env.finish(pods[2])
    failed = await env.until_condition("Failed")
    cond = condition(failed, "Failed")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("FailedIndexes", "Job has failed indexes")
    status = failed["status"]
    assert (status["failedIndexes"], status["completedIndexes"], status["failed"], status["succeeded"]) == (
        "1",
        "0,2",
        2,
        2,
    )


async def test_max_failed_indexes_exceeded(env: JobEnv) -> None:
    """TestSyncJobWithJobBackoffLimitPerIndex "job failed; exceeding maxFailedIndexes": MaxFailedIndexesExceeded
    "Job has exceeded the specified maximal number of failed indexes"; the other indexes' pods are deleted."""
    await env.create_job(indexed(completions=3, parallelism=3, backoffLimitPerIndex=0, maxFailedIndexes=0))
    pods = by_index(await env.until_pods(3))
    await env.finish(pods[0], "Failed")
    failed = await env.until_condition("Failed")
    cond = condition(failed, "Failed")
    assert cond is not None
    assert (cond["reason"], cond["message"]) == (
        "MaxFailedIndexesExceeded",
        "Job has exceeded the specified maximal number of failed indexes",
    )
    assert failed["status"]["failedIndexes"] == "0"
    assert await env.pods(active_only=True) == []


async def test_fail_index_rule(env: JobEnv) -> None:
    """TestSyncJobWithJobBackoffLimitPerIndex "job with FailIndex pod failure policy": a FailIndex rule fails
    the index at once although backoffLimitPerIndex would allow retries."""
    rule = {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}
    await env.create_job(indexed(completions=2, parallelism=2, backoffLimitPerIndex=5, podFailurePolicy=policy(rule)))
    pods = by_index(await env.until_pods(2))
    await env.finish(pods[0], "Failed", exit_code=3)
    await env.finish(pods[1])
    failed = await env.until_condition("Failed")
    assert failed["status"]["failedIndexes"] == "0"
    assert failed["status"]["completedIndexes"] == "1"
    cond = condition(failed, "Failed")
    assert cond is not None
    assert cond["reason"] == "FailedIndexes"


async def test_success_policy(env: JobEnv) -> None:
    """TestSyncJobWithJobSuccessPolicy "job with successPolicy; jobPodReplacementPolicy feature enabled; job has
    SuccessCriteriaMet condition if job meets to successPolicy": SuccessCriteriaMet (SuccessPolicy, "Matched rules
    at index 0"), the remaining pods deleted, then Complete with the same reason."""
    await env.create_job(indexed(completions=3, parallelism=3, successPolicy={"rules": [{"succeededIndexes": "0"}]}))
    pods = by_index(await env.until_pods(3))
    await env.finish(pods[0])
    done = await env.until_condition("Complete")
    for cond_type in ("SuccessCriteriaMet", "Complete"):
        cond = condition(done, cond_type)
        assert cond is not None
        assert (cond["reason"], cond["message"]) == ("SuccessPolicy", "Matched rules at index 0")
    assert done["status"]["completedIndexes"] == "0"
    assert done["status"]["succeeded"] == 1
    assert await env.pods(active_only=True) == []


async def test_adopts_orphans_and_releases_non_matching(env: JobEnv) -> None:
    """TestGetPodsForJob "adopt" and "release": an orphan matching the selector is adopted with the tracking
    finalizer; an owned pod whose labels stop matching is released."""
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "orphan", "labels": {"job-name": "pi"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    await env.client.create(env.res("pods"), orphan, namespace=NS)
    job = await env.create_job(job_obj(parallelism=2, completions=2))
    await env.until_pods(2)
    got = await env.client.get(env.res("pods"), "orphan", namespace=NS)
    [ref] = got["metadata"]["ownerReferences"]
    assert ref["uid"] == job["metadata"]["uid"]
    assert ref["controller"] is True
    assert JOB_TRACKING_FINALIZER in got["metadata"]["finalizers"]
    await env.client.patch(env.res("pods"), "orphan", {"metadata": {"labels": {"job-name": "other"}}}, namespace=NS)

    async def released() -> bool:
        pod = await env.client.get(env.res("pods"), "orphan", namespace=NS)
        return not pod["metadata"].get("ownerReferences") and JOB_TRACKING_FINALIZER not in (
            pod["metadata"].get("finalizers") or []
        )

    await env.until(released, "release")


async def test_orphan_pod_finalizer_removed_when_job_is_deleted(env: JobEnv) -> None:
    """TestFinalizersRemovedExpectations / syncOrphanPod: a pod whose Job is gone loses the tracking finalizer."""
    await env.create_job(job_obj())
    [pod] = await env.until_pods(1)
    await env.client.delete(env.res("jobs"), "pi", namespace=NS)

    async def cleaned() -> bool:
        got = await env.client.get(env.res("pods"), pod["metadata"]["name"], namespace=NS)
        return JOB_TRACKING_FINALIZER not in (got["metadata"].get("finalizers") or [])

    await env.until(cleaned, "finalizer removed")


async def test_managed_by_external_controller_is_skipped(env: JobEnv) -> None:
    """TestSyncJobWhenManagedBy "job with custom value of managedBy; the pod is not created"."""
    await env.create_job(job_obj(managedBy="example.com/custom-job-controller"))
    await env.clock.advance(5.0)
    await env.clock.advance(5.0)
    assert await env.pods() == []
    assert not (await env.job()).get("status")


async def test_job_without_selector_is_refused_by_the_api(env: JobEnv) -> None:
    """A manualSelector Job without a selector never reaches the controller: ValidateJobSpec refuses it
    ("spec.selector: Required value"), so the controller's own guard (a Job without a selector is not synced: its
    pods could not be claimed) only matters for objects stored some other way."""
    body = job_obj()
    del body["spec"]["selector"]
    with pytest.raises(InvalidError, match=r"spec\.selector: Required value"):
        await env.create_job(body)
    await env.clock.advance(5.0)
    assert await env.pods() == []
