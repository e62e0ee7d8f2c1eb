"""One ``syncJob`` at a time, after upstream ``job_controller_test.go`` TestControllerSyncJob: a Job and its
pods (owned, carrying the tracking finalizer, in the phases the case names) exist; one sync runs (no workers);
the test checks the pods created or deleted and the status written (active, ready, succeeded, failed,
completedIndexes, conditions). Each case is named after the upstream case it translates."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.api import meta as apimeta
from kubeplane.client.interface import Obj
from kubeplane.controllers.job_util import COMPLETION_INDEX_ANNOTATION
from tests.controllers.harness import eventually
from tests.controllers.jobenv import JOB_TRACKING_FINALIZER, NS, JobEnv, condition, job_obj, running_job_controller


@pytest.fixture
async def env() -> AsyncIterator[JobEnv]:
    async with running_job_controller(run=False) as e:
        yield e


@dataclass
class Case:
    spec: dict[str, Any]
    pods: list[tuple[str, int | None]] = field(default_factory=list)
    """(phase or "Ready", completion index) per existing pod."""
    created: int = 0
    deleted: int = 0
    created_indexes: list[int] | None = None
    status: dict[str, Any] = field(default_factory=dict)
    condition: tuple[str, str] | None = None
    """(type, reason) of a True condition the status must have."""


CASES = {
    "job start": Case({"parallelism": 2, "completions": 5}, created=2, status={"active": 2, "ready": 0}),
    "WQ job start": Case({"parallelism": 2}, created=2, status={"active": 2}),
    "pending pods": Case({"parallelism": 2, "completions": 5}, [("Pending", None)] * 2, status={"active": 2}),
    "correct # of pods": Case(
        {"parallelism": 3, "completions": 5}, [("Running", None), ("Ready", None), ("Ready", None)],
        status={"active": 3, "ready": 2},
    ),
    "too few active pods": Case(
        {"parallelism": 2, "completions": 5}, [("Running", None), ("Succeeded", None)], created=1,
        status={"active": 2, "succeeded": 1},
    ),
    "too many active pods": Case(
        {"parallelism": 2, "completions": 5}, [("Running", None)] * 3, deleted=1, status={"active": 2},
    ),
    "failed + succeed pods: reset backoff delay": Case(
        {"parallelism": 2, "completions": 5}, [("Running", None), ("Succeeded", None), ("Failed", None)],
        created=1, status={"active": 2, "succeeded": 1, "failed": 1},
    ),
    "job finish": Case(
        {"parallelism": 2, "completions": 5}, [("Succeeded", None)] * 5,
        status={"succeeded": 5}, condition=("Complete", "CompletionsReached"),
    ),
    "WQ job finishing": Case(
        {"parallelism": 2}, [("Running", None), ("Succeeded", None)], status={"active": 1, "succeeded": 1},
    ),
    "WQ job all finished": Case(
        {"parallelism": 2}, [("Succeeded", None)] * 2, status={"succeeded": 2},
        condition=("Complete", "CompletionsReached"),
    ),
    "more succeeded pods than completions": Case(
        {"parallelism": 2, "completions": 2}, [("Succeeded", None)] * 3,
        status={"succeeded": 3}, condition=("Complete", "CompletionsReached"),
    ),
    "too many job failures": Case(
        {"parallelism": 2, "completions": 5, "backoffLimit": 0}, [("Failed", None)],
        status={"failed": 1}, condition=("Failed", "BackoffLimitExceeded"),
    ),
    "indexed job start": Case(
        {"parallelism": 2, "completions": 5, "completionMode": "Indexed"}, created=2, created_indexes=[0, 1],
        status={"active": 2, "completedIndexes": ""},
    ),
    "indexed job completed": Case(
        {"parallelism": 2, "completions": 3, "completionMode": "Indexed"},
        [("Succeeded", 0), ("Succeeded", 1), ("Succeeded", 2)],
        status={"succeeded": 3, "completedIndexes": "0-2"}, condition=("Complete", "CompletionsReached"),
    ),
    "indexed job repeated completion index": Case(
        {"parallelism": 2, "completions": 3, "completionMode": "Indexed"},
        [("Succeeded", 0), ("Running", 1), ("Running", 1)], deleted=1,
        status={"active": 1, "succeeded": 1, "completedIndexes": "0"},
    ),
    "indexed job some running and completed pods": Case(
        {"parallelism": 8, "completions": 6, "completionMode": "Indexed"},
        [("Running", 0), ("Succeeded", 1), ("Succeeded", 3), ("Running", 4), ("Succeeded", 5)],
        created=1, created_indexes=[2], status={"active": 3, "succeeded": 3, "completedIndexes": "1,3,5"},
    ),
    "indexed job with indexes outside of range": Case(
        {"parallelism": 2, "completions": 2, "completionMode": "Indexed"},
        [("Succeeded", 0), ("Running", 5)], deleted=1, created=0, status={"succeeded": 1, "completedIndexes": "0"},
    ),
    "suspending a job with satisfied expectations": Case(
        {"parallelism": 2, "completions": 4, "suspend": True}, [("Running", None)] * 2, deleted=2,
        condition=("Suspended", "JobSuspended"),
    ),
}  # fmt: skip


async def make_pod(env: JobEnv, job: Obj, i: int, phase: str, index: int | None) -> None:
    uid = job["metadata"]["uid"]
    meta: Obj = {
        "name": f"pi-existing-{i}",
        "labels": {"job-name": "pi"},
        "finalizers": [JOB_TRACKING_FINALIZER],
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": uid,
                             "controller": True, "blockOwnerDeletion": True}],
    }  # fmt: skip
    if index is not None:
        meta["annotations"] = {COMPLETION_INDEX_ANNOTATION: str(index)}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}  # fmt: skip
    await env.client.create(env.res("pods"), body, namespace=NS)
    # Finished long ago, so the pod-failure backoff has passed (upstream's pods have zero finish times).
    at = apimeta.format_time(env.clock.now() - 3600)
    if phase in ("Running", "Ready"):
        status: Obj = {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if phase == "Ready" else "False"}],
        }
    elif phase == "Pending":
        status = {"phase": "Pending"}
    else:
        code = 0 if phase == "Succeeded" else 1
        status = {
            "phase": phase,
            "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": code, "finishedAt": at}}}],
        }
    await env.client.patch(env.res("pods"), meta["name"], {"status": status}, namespace=NS, subresource="status")


@pytest.mark.parametrize("name", list(CASES))
async def test_controller_sync_job(env: JobEnv, name: str) -> None:
    case = CASES[name]
    job = await env.create_job(job_obj(**case.spec))
    for i, (phase, index) in enumerate(case.pods):
        await make_pod(env, job, i, phase, index)
    controller = env.controller

    async def cached() -> bool:
        pods = controller.pod_lister.list(NS)
        return (
            len(pods) == len(case.pods)
            and all(p.get("status", {}).get("phase") for p in pods)
            and (controller.job_lister.get(NS, "pi") is not None)
        )

    await eventually(cached, "informers")
    before = {p["metadata"]["name"] for p in await env.pods()}
    await controller.sync(f"{NS}/pi")
    after = await env.pods()
    names = {p["metadata"]["name"] for p in after}
    created = [p for p in after if p["metadata"]["name"] not in before]
    deleting = [p for p in after if p["metadata"]["name"] in before and p["metadata"].get("deletionTimestamp")]
    gone = before - names
    assert len(created) == case.created, name
    assert len(deleting) + len(gone - _finished_names(case)) == case.deleted, name
    if case.created_indexes is not None:
        got = sorted(int(p["metadata"]["annotations"][COMPLETION_INDEX_ANNOTATION]) for p in created)
        assert got == case.created_indexes, name
    status = (await env.job()).get("status") or {}
    for key, want in case.status.items():
        assert status.get(key, 0 if key != "completedIndexes" else "") == want, (name, key, status)
    if case.condition is not None:
        cond = condition(await env.job(), case.condition[0])
        assert cond is not None, (name, status)
        assert (cond["status"], cond.get("reason")) == ("True", case.condition[1]), name


def _finished_names(case: Case) -> set[str]:
    """Finished pods lose their finalizer and may be deleted by the API server: not deletions by the controller."""
    return {f"pi-existing-{i}" for i, (phase, _) in enumerate(case.pods) if phase in ("Succeeded", "Failed")}
