"""The CronJob controller end to end over the in-process API server with a fake clock (upstream's behaviour as
``cronjob_controllerv2.go`` and its integration test ``test/integration/cronjob``): Jobs created at each
activation with upstream's name and annotation, ``status.active``/``lastScheduleTime``/``lastSuccessfulTime``,
history-limit cleanup of finished Jobs (the test plays the Job controller, setting Job status), Forbid, suspend,
and a schedule change requeueing for the new schedule (``TestControllerV2UpdateCronJob``)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from kubeplane.api.meta import format_time
from kubeplane.client.interface import Obj
from kubeplane.controllers import cronjob_util as cu
from kubeplane.controllers.cronjob import CronJobController
from tests.controllers import harness
from tests.controllers.harness import Env, eventually

NS = "default"
START = 1_800_000_000.0  # FakeClock's default start: a whole multiple of five minutes


def cronjob(name: str = "tick", schedule: str = "*/5 * * * *", **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Allow",
            "jobTemplate": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
                },
            },
            **spec,
        },
    }


async def jobs(env: Env[CronJobController]) -> list[Obj]:
    listed = await env.client.list(env.res("jobs"), namespace=NS)
    return sorted(listed["items"], key=lambda j: j["metadata"]["name"])


async def get_cj(env: Env[CronJobController], name: str = "tick") -> Obj:
    return await env.client.get(env.res("cronjobs"), name, namespace=NS)


async def finish(env: Env[CronJobController], job: Obj, condition: str = "Complete") -> None:
    """Play the Job controller: the Job started when created and finished now."""
    now = format_time(env.clock.now())
    job = await env.client.get(env.res("jobs"), job["metadata"]["name"], namespace=NS)
    job["status"] = {
        "startTime": job["metadata"]["creationTimestamp"],
        "conditions": [{"type": condition, "status": "True", "lastTransitionTime": now}],
    }
    if condition == "Complete":  # what upstream's Job status validation asks of a complete Job
        job["status"]["completionTime"] = now
        job["status"]["succeeded"] = 1
        job["status"]["conditions"].insert(
            0, {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now}
        )
    await env.client.update(env.res("jobs"), job, namespace=NS, subresource="status")


async def tick(env: Env[CronJobController], seconds: float) -> None:
    """Let pending work land, then move the fake clock."""
    await asyncio.sleep(0.02)
    await env.clock.advance(seconds)
    await asyncio.sleep(0.02)


async def count_jobs(env: Env[CronJobController], n: int) -> list[Obj]:
    async def check() -> list[Obj]:
        got = await jobs(env)
        return got if len(got) == n else []

    return await eventually(check, f"{n} jobs")


async def test_jobs_created_at_each_activation_with_upstream_names() -> None:
    async def setup(env: Env[CronJobController]) -> None:
        await env.client.create(env.res("cronjobs"), cronjob(), namespace=NS)

    async with harness.running(CronJobController, setup=setup) as env:
        await tick(env, 1)
        assert await jobs(env) == []  # created at START: the first activation is START+300
        await tick(env, 300)
        (job,) = await count_jobs(env, 1)
        scheduled = START + 300
        assert job["metadata"]["name"] == f"tick-{int(scheduled) // 60}"
        assert job["metadata"]["annotations"][cu.CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] == format_time(scheduled)
        assert job["metadata"]["labels"] == {"app": "tick"}
        (ref,) = job["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("CronJob", "tick", True)

        async def status_set() -> Obj:
            cj = await get_cj(env)
            return cj if (cj.get("status") or {}).get("active") else {}

        cj = await eventually(status_set, "status.active")
        assert cj["status"]["lastScheduleTime"] == format_time(scheduled)
        assert [a["name"] for a in cj["status"]["active"]] == [job["metadata"]["name"]]
        assert cj["status"]["active"][0]["kind"] == "Job"
        await tick(env, 300)
        await count_jobs(env, 2)  # Allow: the first still runs, a second one starts


async def test_completion_updates_status_and_history_limit_deletes_oldest() -> None:
    async def setup(env: Env[CronJobController]) -> None:
        spec: dict[str, Any] = {"successfulJobsHistoryLimit": 2, "failedJobsHistoryLimit": 1}
        await env.client.create(env.res("cronjobs"), cronjob(**spec), namespace=NS)

    async with harness.running(CronJobController, setup=setup) as env:
        await tick(env, 1)  # requeues are 100 ms after each activation
        for n in range(1, 5):
            await tick(env, 300)
            got = await count_jobs(env, min(n, 3))
            newest = max(got, key=lambda j: j["metadata"]["name"])
            await tick(env, 10)
            await finish(env, newest)

        async def settled() -> Obj:
            names = [j["metadata"]["name"] for j in await jobs(env)]
            cj = await get_cj(env)
            status = cj.get("status") or {}
            return cj if len(names) == 2 and not status.get("active") else {}

        cj = await eventually(settled, "two successful jobs kept")
        names = [j["metadata"]["name"] for j in await jobs(env)]
        assert names == [f"tick-{int(START + 300 * k) // 60}" for k in (3, 4)]  # oldest deleted first
        assert cj["status"]["lastSuccessfulTime"] == format_time(START + 1 + 4 * 310)
        events = await env.client.list(env.res("events"), namespace=NS)
        reasons = [e["reason"] for e in events["items"]]
        assert "SawCompletedJob" in reasons
        assert "SuccessfulDelete" in reasons
        assert "SuccessfulCreate" in reasons


async def test_forbid_skips_while_active_and_suspend_stops() -> None:
    async def setup(env: Env[CronJobController]) -> None:
        await env.client.create(env.res("cronjobs"), cronjob(concurrencyPolicy="Forbid"), namespace=NS)

    async with harness.running(CronJobController, setup=setup) as env:
        await tick(env, 1)
        await tick(env, 300)
        (first,) = await count_jobs(env, 1)
        await tick(env, 300)
        await asyncio.sleep(0.05)
        assert len(await jobs(env)) == 1  # JobAlreadyActive

        async def already_active() -> bool:
            events = await env.client.list(env.res("events"), namespace=NS)
            return any(e["reason"] == "JobAlreadyActive" for e in events["items"])

        await eventually(already_active, "JobAlreadyActive event")
        await finish(env, first)
        await tick(env, 300)
        await count_jobs(env, 2)
        cj = await get_cj(env)
        cj["spec"]["suspend"] = True
        await env.client.update(env.res("cronjobs"), cj, namespace=NS)
        await tick(env, 600)
        await asyncio.sleep(0.05)
        assert len(await jobs(env)) == 2


async def test_schedule_change_requeues_for_the_new_schedule() -> None:
    """Upstream ``TestControllerV2UpdateCronJob`` "spec.schedule changed": the key is requeued for the new
    schedule's next activation, so an hourly CronJob switched to every minute fires within the minute."""

    async def setup(env: Env[CronJobController]) -> None:
        await env.client.create(env.res("cronjobs"), cronjob(schedule="0 * * * *"), namespace=NS)

    async with harness.running(CronJobController, setup=setup) as env:
        await tick(env, 30)
        cj = await get_cj(env)
        cj["spec"]["schedule"] = "* * * * *"
        await env.client.update(env.res("cronjobs"), cj, namespace=NS)
        await tick(env, 31)
        (job,) = await count_jobs(env, 1)
        assert job["metadata"]["name"] == f"tick-{int(START + 60) // 60}"


UPDATE_NOW = datetime(2016, 5, 19, 9, 59, 59, tzinfo=UTC)  # upstream justASecondBeforeTheHour
BEFORE_THE_HOUR = "2016-05-19T09:59:00Z"


def _update_case(schedule: str, *, tz: str | None = None, labels: str = "b", last: str | None = None) -> Obj:
    cj = cronjob(schedule=schedule)
    cj["spec"]["jobTemplate"]["metadata"]["labels"] = {"a": labels}
    if tz is not None:
        cj["spec"]["timeZone"] = tz
    if last is not None:
        cj["status"] = {"lastScheduleTime": last}
    return cj


UPDATE_CASES = {
    "spec.template changed": (_update_case(""), _update_case("", labels="foo"), 0.0),
    "spec.schedule changed": (
        _update_case("30 * * * *", last=BEFORE_THE_HOUR),
        _update_case("*/1 * * * *", labels="foo", last=BEFORE_THE_HOUR),
        1.1,
    ),
    "spec.schedule with @every changed - cadence decrease": (
        _update_case("@every 1m", last=BEFORE_THE_HOUR),
        _update_case("@every 3m", labels="foo", last=BEFORE_THE_HOUR),
        121.1,
    ),
    "spec.schedule with @every changed - cadence increase": (
        _update_case("@every 3m", last=BEFORE_THE_HOUR),
        _update_case("@every 1m", labels="foo", last=BEFORE_THE_HOUR),
        1.1,
    ),
    "spec.timeZone not changed": (
        _update_case("", tz="America/New_York"),
        _update_case("", tz="America/New_York", labels="foo"),
        0.0,
    ),
    "spec.timeZone changed": (_update_case("", tz="America/New_York"), _update_case("", labels="foo"), 0.0),
}


@pytest.mark.parametrize("name", list(UPDATE_CASES))
async def test_controller_v2_update_cron_job(name: str) -> None:
    """Upstream ``TestControllerV2UpdateCronJob``: a changed schedule or zone requeues the key for the new
    schedule's next activation (plus ``nextScheduleDelta``); any other change requeues it now (delay 0)."""
    old, new, expected = UPDATE_CASES[name]
    async with harness.running(CronJobController, run=False) as env:
        delays: list[float] = []
        controller = env.controller
        controller.now = lambda: UPDATE_NOW  # type: ignore[method-assign]
        controller.enqueue_after = lambda _obj, delay: delays.append(delay)  # type: ignore[method-assign,assignment]
        controller.enqueue = lambda _obj: delays.append(0.0)  # type: ignore[method-assign,assignment]
        controller._update_cron_job(old, new)
        assert delays == ([] if name == "spec.timeZone changed" else [pytest.approx(expected)])


async def test_controller_v2_get_jobs_to_be_reconciled() -> None:
    """Upstream ``TestControllerV2GetJobsToBeReconciled``: Jobs whose controller reference names the CronJob, in
    its namespace, whatever their labels; not orphans, not other owners', not other namespaces'."""

    def job(name: str, namespace: str = NS, owner: str | None = None) -> Obj:
        meta: Obj = {"name": name, "namespace": namespace, "labels": {"key": "different-value"}}
        if owner is not None:
            meta["ownerReferences"] = [
                {"apiVersion": "batch/v1", "kind": "CronJob", "name": owner, "uid": "u", "controller": True}
            ]
        pod_spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}  # a valid Job
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": {"template": {"spec": pod_spec}}}

    async def setup(env: Env[CronJobController]) -> None:
        await env.client.create(env.res("namespaces"), {"metadata": {"name": "bar-ns"}})
        for obj in (job("foo"), job("foo1", owner="fooer"), job("foo2", owner="another-cronjob"),
                    job("foo3", "bar-ns", owner="fooer")):  # fmt: skip
            await env.client.create(env.res("jobs"), obj, namespace=obj["metadata"]["namespace"])

    async with harness.running(CronJobController, setup=setup, run=False) as env:
        cj = {"metadata": {"name": "fooer", "namespace": NS}, "spec": {"jobTemplate": {"metadata": {"labels": {}}}}}
        assert [j["metadata"]["name"] for j in env.controller.jobs_to_be_reconciled(cj)] == ["foo1"]
