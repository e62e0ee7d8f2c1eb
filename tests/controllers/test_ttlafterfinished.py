"""The TTL-after-finished controller over the in-memory API server on a fake clock (upstream
``pkg/controller/ttlafterfinished/ttlafterfinished_controller_test.go``: TestTimeLeft's cases, and the
processJob behaviour: delete at finish + TTL, foreground propagation with a UID precondition)."""

from __future__ import annotations

import pytest

from kubeplane.api import meta as apimeta
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.garbagecollector import GarbageCollector
from kubeplane.controllers.job import JobController
from kubeplane.controllers.ttlafterfinished import TTLAfterFinishedController, needs_cleanup, time_left
from tests.controllers import harness
from tests.controllers.jobenv import NS, job_obj

T0 = 1_800_000_000.0


def finished_job(ttl: int | None, finished_at: float | None, cond_type: str = "Complete") -> Obj:
    job = job_obj("done")
    if ttl is not None:
        job["spec"]["ttlSecondsAfterFinished"] = ttl
    if finished_at is not None:
        stamp = apimeta.format_time(finished_at)
        job["status"] = {"conditions": [{"type": cond_type, "status": "True", "lastTransitionTime": stamp}]}
    return job


@pytest.mark.parametrize(
    ("case", "ttl", "finished", "cond_type", "want_left"),
    [
        ("Error case: Job unfinished", 0, None, "Complete", None),
        ("Error case: Job completed now, no TTL", None, T0, "Complete", None),
        ("Job completed now, 0s TTL", 0, T0, "Complete", 0.0),
        ("Job completed now, 10s TTL", 10, T0, "Complete", 10.0),
        ("Job completed 10s ago, 15s TTL", 15, T0 - 10, "Complete", 5.0),
        ("Job failed now, 0s TTL", 0, T0, "Failed", 0.0),
        ("Job failed 10s ago, 15s TTL", 15, T0 - 10, "Failed", 5.0),
        ("Job finished in the future (clock skew), 10s TTL", 10, T0 + 5, "Complete", 15.0),
    ],
)
def test_time_left(case: str, ttl: int | None, finished: float | None, cond_type: str, want_left: float | None) -> None:
    """TestTimeLeft."""
    job = finished_job(ttl, finished, cond_type)
    if want_left is None:
        assert not needs_cleanup(job), case
        return
    assert needs_cleanup(job), case
    left, expire_at = time_left(job, T0)
    assert left == want_left, case
    assert expire_at == (finished or 0) + (ttl or 0), case


def _finished(cond_type: str, stamp: str) -> Obj:
    """A terminal status the Job status validation accepts (ValidateJobUpdateStatus): startTime set, the
    interim condition (SuccessCriteriaMet before Complete, FailureTarget before Failed) and, for Complete, a
    completionTime — as the Job controller writes it."""
    interim = "SuccessCriteriaMet" if cond_type == "Complete" else "FailureTarget"
    status: Obj = {
        "startTime": stamp,
        "conditions": [
            {"type": interim, "status": "True", "lastTransitionTime": stamp},
            {"type": cond_type, "status": "True", "lastTransitionTime": stamp},
        ],
    }
    if cond_type == "Complete":
        status["completionTime"] = stamp
    return status


async def _status(env: harness.Env[TTLAfterFinishedController], body: Obj, status: Obj) -> Obj:
    created = await env.client.create(env.res("jobs"), body, namespace=NS)
    created["status"] = status
    return await env.client.update(env.res("jobs"), created, namespace=NS, subresource="status")


async def test_deletes_finished_job_after_ttl() -> None:
    """processJob: a Job finished with ttlSecondsAfterFinished 30 is deleted 30 s after its finish time, not
    before; an unfinished Job and a finished Job without TTL stay."""
    async with harness.running(TTLAfterFinishedController) as env:
        now = env.clock.now()
        stamp = apimeta.format_time(now)
        body = job_obj("ttl")
        body["spec"]["ttlSecondsAfterFinished"] = 30
        created_uid = (await _status(env, body, _finished("Complete", stamp)))["metadata"]["uid"]
        await env.client.create(env.res("jobs"), job_obj("keep"), namespace=NS)
        running = job_obj("running")
        running["spec"]["ttlSecondsAfterFinished"] = 0
        await env.client.create(env.res("jobs"), running, namespace=NS)
        for _ in range(5):
            await env.clock.advance(5.0)
            await harness.settle()
        assert (await env.client.get(env.res("jobs"), "ttl", namespace=NS))["metadata"]["name"] == "ttl"

        async def gone() -> bool:
            """Deleted, or (foreground propagation, no garbage collector running here) being deleted."""
            try:
                job = await env.client.get(env.res("jobs"), "ttl", namespace=NS)
            except NotFoundError:
                return True
            return bool(job["metadata"].get("deletionTimestamp"))

        calls: list[tuple[str, dict[str, object]]] = []
        real_delete = env.client.delete

        async def spy(resource: object, name: str, **kw: object) -> object:
            calls.append((name, kw))
            return await real_delete(resource, name, **kw)  # type: ignore[arg-type]

        env.client.delete = spy  # type: ignore[method-assign,assignment]
        await env.advance_until(gone, "ttl job deleted", step=1.0, tries=50)
        [(name, kw)] = calls
        assert name == "ttl"
        assert kw["propagation_policy"] == "Foreground"
        assert kw["preconditions"] == {"uid": created_uid}
        assert env.clock.now() - now >= 30.0
        for name in ("keep", "running"):
            assert (await env.client.get(env.res("jobs"), name, namespace=NS))["metadata"]["name"] == name


async def test_ttl_change_is_seen_on_fresh_read() -> None:
    """processJob re-reads the Job before deleting: a TTL raised meanwhile postpones the deletion."""
    async with harness.running(TTLAfterFinishedController) as env:
        stamp = apimeta.format_time(env.clock.now())
        body = job_obj("ttl")
        body["spec"]["ttlSecondsAfterFinished"] = 10
        await _status(env, body, _finished("Failed", stamp))
        await env.client.patch(env.res("jobs"), "ttl", {"spec": {"ttlSecondsAfterFinished": 100}}, namespace=NS)
        for _ in range(8):
            await env.clock.advance(5.0)
            await harness.settle()
        assert (await env.client.get(env.res("jobs"), "ttl", namespace=NS))["spec"]["ttlSecondsAfterFinished"] == 100


async def test_completed_job_and_its_pods_are_gone_after_ttl() -> None:
    """With the Job controller and the garbage collector: a Job with ttlSecondsAfterFinished 5 completes, and 5 s
    later the foreground deletion removes its pod, then the Job."""
    async with harness.running(TTLAfterFinishedController, JobController, GarbageCollector) as env:
        body = job_obj("pi")
        body["spec"]["ttlSecondsAfterFinished"] = 5
        await env.client.create(env.res("jobs"), body, namespace=NS)

        async def pods() -> list[Obj]:
            items: list[Obj] = (await env.client.list(env.res("pods"), namespace=NS))["items"]
            return items

        async def one_pod() -> bool:
            return len(await pods()) == 1

        await env.advance_until(one_pod, "the job's pod", step=1.0, tries=50)
        [pod] = await pods()
        at = apimeta.format_time(env.clock.now())
        status = {"phase": "Succeeded", "containerStatuses": [
            {"name": "c", "state": {"terminated": {"exitCode": 0, "finishedAt": at}}}]}  # fmt: skip
        await env.client.patch(env.res("pods"), pod["metadata"]["name"], {"status": status}, namespace=NS,
                               subresource="status")  # fmt: skip

        async def all_gone() -> bool:
            jobs = (await env.client.list(env.res("jobs"), namespace=NS))["items"]
            return not jobs and not await pods()

        await env.advance_until(all_gone, "job and pod deleted", step=1.0, tries=200)
