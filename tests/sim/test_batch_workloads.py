"""Batch and gang workloads in simulations: a CronJob fires on simulated time (issue 25's acceptance: ``*/5 * * *
*`` makes 12 Jobs in an hour at the right simulated times and keeps its history limit), job completion time and
gang wait-time percentiles, generators of Jobs and gangs, and snapshots keeping Jobs, CronJobs and StatefulSets.

One test runs every real component (CronJob and Job controllers, scheduler, simulated kubelets finishing batch
pods); the others, to pin exact times, play the Job controller with a small controller registered in the
manager for the run instead: each Job it sees is marked started at creation and Complete after the
seconds in its ``test.kubeplane.io/finish-after`` annotation (default 40), through the status subresource, on
the simulation's clock — so the CronJob controller's cleanup and the report's percentiles see real Job status."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest

from kubeplane.api.meta import format_time, parse_time
from kubeplane.api.views import meta_of, namespace_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers import manager as manager_module
from kubeplane.controllers.base import Controller, ControllerContext, split_key
from kubeplane.sim.clock import DEFAULT_START
from kubeplane.sim.observer import PodRecord
from kubeplane.sim.runner import run
from kubeplane.sim.scenario import Scenario, ScenarioError
from kubeplane.sim.snapshot import to_scenario
from kubeplane.sim.workloads import FIELDS, gang_rows, workload_summary

FINISH_AFTER = "test.kubeplane.io/finish-after"


class JobFinisher(Controller):
    """Plays the Job controller for these tests (see the module docstring)."""

    name: ClassVar[str] = "test-job-finisher"
    workers: ClassVar[int] = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        informer = ctx.informers.informer_for("jobs")
        self.lister = informer.lister()
        informer.add_event_handler(on_add=self.enqueue)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        job = self.lister.get(namespace, name)
        if job is None or (job.get("status") or {}).get("completionTime"):
            return
        created = parse_time(str(meta_of(job)["creationTimestamp"])).timestamp()
        done_at = created + float(meta_of(job).get("annotations", {}).get(FINISH_AFTER, 40))
        if self.clock.now() < done_at:
            self.enqueue_after(key, done_at - self.clock.now())
            return
        fresh = copy.deepcopy(job)
        now = format_time(self.clock.now())
        fresh["status"] = {
            "startTime": meta_of(job)["creationTimestamp"],
            "completionTime": now,
            "succeeded": 1,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": now},
                {"type": "Complete", "status": "True", "lastTransitionTime": now},
            ],
        }
        try:
            await self.client.update(
                self.client.resource("jobs"), fresh, namespace=namespace_of(job), subresource="status"
            )
        except NotFoundError:
            return


@pytest.fixture
def finisher(monkeypatch: pytest.MonkeyPatch) -> None:
    """The manager of the run gets :class:`JobFinisher` instead of any real Job controller (so the two never
    write the same status)."""
    real = manager_module.available_controllers

    def with_finisher() -> dict[str, type[Controller]]:
        out = {k: v for k, v in real().items() if k not in ("job", "ttl-after-finished")}
        out[JobFinisher.name] = JobFinisher
        return out

    monkeypatch.setattr(manager_module, "available_controllers", with_finisher)


def _cronjob(limit: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "tick"},
        "spec": {
            "schedule": "*/5 * * * *",
            "successfulJobsHistoryLimit": limit,
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}
                    }
                }
            },
        },
    }


SMALL = {"preset": "uniform", "workers": 2}


def test_cronjob_job_pods_and_kubelets_run_together_on_simulated_time() -> None:
    """The same hour with every real component: the CronJob controller creates each Job, the Job controller its
    pod, the scheduler binds it, the simulated kubelet finishes it after the default batch run time (5 s, no
    duration annotation), the Job controller marks the Job Complete and the CronJob controller keeps the newest
    3 finished ones."""
    scenario = Scenario.parse({"name": "cron", "duration": "1h", "cluster": SMALL,
                               "workload": [{"at": 0, "manifest": _cronjob(limit=3)}]})  # fmt: skip
    result = run(scenario, until=3601)
    jobs = result.jobs
    assert [j["name"] for j in jobs] == [f"tick-{int(DEFAULT_START + 300 * k) // 60}" for k in range(1, 13)]
    assert [j["finished"] for j in jobs] == ["Complete"] * 11 + [""]
    assert all(5.0 <= j["completion_time"] <= 10.0 for j in jobs[:11])
    assert [j["name"] for j in jobs if j["deleted"] is None] == [j["name"] for j in jobs[8:]]
    assert (result.summary["jobs_created"], result.summary["jobs_completed"]) == (12, 11)


def test_cronjob_fires_on_simulated_time_and_keeps_its_history_limit(finisher: None) -> None:
    """Acceptance (issue 25): ``*/5 * * * *`` created at t=0 fires at 5, 10, ..., 60 minutes: 12 Jobs, each
    created 100 ms after its activation (upstream's ``nextScheduleDelta`` requeue; the 60-minute one lands just
    past the hour, hence the run's extra second) and annotated with its scheduled time; of the finished ones only
    the newest ``successfulJobsHistoryLimit`` are left."""
    scenario = Scenario.parse({"name": "cron", "duration": "1h", "cluster": SMALL,
                               "workload": [{"at": 0, "manifest": _cronjob(limit=3)}]})  # fmt: skip
    result = run(scenario, until=3601)
    jobs = result.jobs
    assert len(jobs) == 12
    assert [j["created"] for j in jobs] == [round(300 * k + 0.1, 6) for k in range(1, 13)]
    assert [j["scheduled_for"] for j in jobs] == [format_time(DEFAULT_START + 300 * k) for k in range(1, 13)]
    assert [j["name"] for j in jobs] == [f"tick-{int(DEFAULT_START + 300 * k) // 60}" for k in range(1, 13)]
    assert {j["owner"] for j in jobs} == {"tick"}
    # each Job finished 40 s after creation; the 12th (at 3600.1) had not by the end
    assert [j["finished"] for j in jobs] == ["Complete"] * 11 + [""]
    kept = [j["name"] for j in jobs if j["deleted"] is None]
    assert kept == [j["name"] for j in jobs[8:]]  # the 3 newest finished ones and the running one
    assert all(j["deleted"] is not None for j in jobs[:8])
    assert result.summary["jobs_created"] == 12
    assert result.summary["jobs_completed"] == 11


def test_job_completion_time_percentiles_from_job_status(finisher: None) -> None:
    """``job_completion_time_p50/p90/p99`` = completionTime - startTime of the Jobs that completed, nearest rank
    (the Job controller writes both; here the test's stand-in does, after 30, 60 and 90 s)."""

    def job(name: str, after: int) -> dict[str, Any]:
        pod_spec = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "annotations": {FINISH_AFTER: str(after)}},
            "spec": {"template": {"spec": pod_spec}},
        }

    workload = [{"at": 10 * i, "manifest": job(f"j{i}", after)} for i, after in enumerate((90, 30, 60))]
    result = run(Scenario.parse({"name": "jobs", "duration": "5m", "cluster": SMALL, "workload": workload}))
    assert [(j["name"], j["completion_time"]) for j in result.jobs] == [("j0", 90.0), ("j1", 30.0), ("j2", 60.0)]
    summary = result.summary
    assert (summary["job_completion_time_p50"], summary["job_completion_time_p90"]) == (60.0, 90.0)
    assert summary["job_completion_time_p99"] == 90.0


def test_gang_rows_and_wait_time() -> None:
    """Gang wait time = the last of a PodGroup's pods bound - the first of them created; a gang with a pod still
    unbound has none (and is not in the percentiles)."""
    pods = [
        PodRecord("ns", "a-0", created=10.0, scheduled=15.0, group="a"),
        PodRecord("ns", "a-1", created=11.0, scheduled=19.5, group="a"),
        PodRecord("ns", "b-0", created=20.0, scheduled=21.0, group="b"),
        PodRecord("ns", "b-1", created=20.0, group="b"),
        PodRecord("ns", "solo", created=0.0, scheduled=1.0),
    ]
    rows = gang_rows(pods)
    assert [(g["group"], g["pods"], g["pods_bound"], g["wait_time"]) for g in rows] == [
        ("a", 2, 2, 9.5),
        ("b", 2, 1, None),
    ]
    summary = workload_summary([], rows)
    assert (summary["gangs"], summary["gangs_bound"], summary["gang_wait_time_p50"]) == (2, 1, 9.5)
    assert summary["job_completion_time_p50"] is None


def test_gang_generator_creates_podgroups_and_grouped_pods() -> None:
    """A Pod generator with ``gang: {size, minCount}`` makes, per gang, a scheduling.k8s.io/v1beta1 PodGroup
    (``spec.schedulingPolicy.gang.minCount``) and ``size`` pods naming it in ``spec.schedulingGroup``; the report
    groups them into gangs with their wait times."""
    pod = {"spec": {"containers": [{"name": "c", "image": "busybox:1.36", "resources": {"requests": {"cpu": "100m"}}}]}}
    generator = {
        "count": 2,
        "interval": "1m",
        "namePrefix": "train-",
        "gang": {"size": 3, "minCount": 3},
        "template": pod,
    }
    scenario = Scenario.parse(
        {"name": "gangs", "duration": "5m", "cluster": SMALL, "workload": [{"generator": generator}]}
    )
    assert scenario.generators[0].pods == 6
    result = run(scenario)
    assert sorted(p["name"] for p in result.pods) == [f"train-{g}-{k}" for g in range(2) for k in range(3)]
    assert [(g["group"], g["pods"], g["pods_bound"]) for g in result.gangs] == [("train-0", 3, 3), ("train-1", 3, 3)]
    assert all(g["wait_time"] is not None and g["wait_time"] >= 0 for g in result.gangs)
    assert result.summary["gangs"] == 2
    assert result.summary["gang_wait_time_p50"] is not None


def test_generator_of_jobs_and_its_schema_errors() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}
    scenario = Scenario.parse(
        {"name": "g", "cluster": SMALL, "workload": [{"generator": {"count": 3, "interval": 5, "template": job}}]}
    )
    (gen,) = scenario.generators
    assert (gen.kind, gen.name_prefix, gen.pods) == ("Job", "job-", 0)
    with pytest.raises(ScenarioError, match=r"kind Secret not supported"):
        Scenario.parse({"name": "g", "cluster": SMALL, "workload": [{"generator": {
            "count": 1, "interval": 1, "template": {"kind": "Secret"}}}]})  # fmt: skip
    with pytest.raises(ScenarioError, match=r"gang: expected \{size, minCount\} with a Pod template"):
        Scenario.parse({"name": "g", "cluster": SMALL, "workload": [{"generator": {
            "count": 1, "interval": 1, "template": job, "gang": {"size": 2}}}]})  # fmt: skip
    pod = {"spec": {"containers": [{"name": "c"}]}}
    with pytest.raises(ScenarioError, match=r"minCount: expected an integer from 1 to size"):
        Scenario.parse({"name": "g", "cluster": SMALL, "workload": [{"generator": {
            "count": 1, "interval": 1, "template": pod, "gang": {"size": 2, "minCount": 3}}}]})  # fmt: skip


def test_summary_fields_are_headline_fields() -> None:
    from kubeplane.sim.summary import FIELDS as SUMMARY_FIELDS

    assert FIELDS <= SUMMARY_FIELDS


def _job_obj(name: str, *, finished: bool = False) -> Obj:
    uid = "old-uid"
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name, "controller-uid": uid,
              "job-name": name, "team": "data"}  # fmt: skip
    job: Obj = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "7"},
        "spec": {
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
        "status": {"active": 1},
    }
    if finished:
        job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    return job


def test_snapshot_keeps_jobs_cronjobs_and_statefulsets() -> None:
    """``sim snapshot``: a running Job is kept as a new one (no generated selector, no labels naming the old UID)
    and its pods are left out; finished Jobs are left out; CronJobs and StatefulSets are kept (specs, no status)."""
    job_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "etl-abcde", "namespace": "default",
                     "ownerReferences": [{"kind": "Job", "name": "etl", "uid": "old-uid", "controller": True}]},
        "spec": {"containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running"},
    }  # fmt: skip
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"replicas": 3, "serviceName": "web"}, "status": {"replicas": 3}}  # fmt: skip
    cronjob = {**_cronjob(), "metadata": {"name": "tick", "namespace": "default"},
               "status": {"lastScheduleTime": "2026-01-01T00:00:00Z"}}  # fmt: skip
    objects = {"pods": [job_pod], "jobs": [_job_obj("etl"), _job_obj("old", finished=True)], "cronjobs": [cronjob],
               "statefulsets": [sts]}  # fmt: skip
    manifests = [w["manifest"] for w in to_scenario(objects)["workload"]]
    assert [(m["kind"], m["metadata"]["name"]) for m in manifests] == [
        ("StatefulSet", "web"),
        ("CronJob", "tick"),
        ("Job", "etl"),
    ]
    sts_out, cj_out, job_out = manifests
    assert "status" not in sts_out
    assert sts_out["spec"] == {"replicas": 3, "serviceName": "web"}
    assert "status" not in cj_out
    assert cj_out["spec"]["schedule"] == "*/5 * * * *"
    assert "selector" not in job_out["spec"]
    assert job_out["spec"]["template"]["metadata"]["labels"] == {"team": "data"}
    assert "uid" not in job_out["metadata"]


def test_job_times_are_simulated_seconds() -> None:
    """jobs.csv's started/completed are the Job's status times as seconds from the run's start."""
    from kubeplane.sim.clock import VirtualClock
    from kubeplane.sim.workloads import JobObserver

    clock = VirtualClock()
    observer = JobObserver(clock)
    start = datetime.fromtimestamp(DEFAULT_START + 12, UTC)
    job = {"metadata": {"namespace": "d", "name": "j"}, "status": {"startTime": format_time(start),
           "completionTime": format_time(DEFAULT_START + 72),
           "conditions": [{"type": "Complete", "status": "True"}]}}  # fmt: skip
    observer.job(None, job)
    observer.job_deleted(job)
    (row,) = observer.rows()
    assert (row["started"], row["completed"], row["completion_time"], row["finished"]) == (12.0, 72.0, 60.0, "Complete")
    assert row["deleted"] == 0.0
