"""``syncCronJob`` against fakes: upstream ``cronjob_controllerv2_test.go`` ``TestControllerV2SyncCronJob``.

Each case keeps upstream's name and fields; the fakes are upstream's ``fakeJobControl``/``fakeCJControl`` and
``record.FakeRecorder`` (events as ``"<type> <reason> <message>"``). Upstream's setup: a CronJob ``mycronjob`` in
``snazzycats``; with ``ran_previously`` its last schedule was 09:01 and a Job from that time exists (still running
with ``still_active``, else Complete 10 s after it started); ``now`` is the injected clock's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from kubeplane.api.meta import format_time
from kubeplane.client.errors import AlreadyExistsError, APIStatusError, NotFoundError
from kubeplane.client.events import object_reference
from kubeplane.client.interface import Obj
from kubeplane.controllers import cronjob_util as cu
from kubeplane.controllers.cronjob_sync import CronJobSyncer, rfc1123z

SHORT_DEAD = 10
MEDIUM_DEAD = 2 * 60 * 60
LONG_DEAD = 1_000_000
ERROR_SCHEDULE = "obvious error schedule"
ON_THE_HOUR = "0 * * * ?"
EVERY_HOUR = "@every 1h"
NEW_YORK = "America/New_York"
DELTA = cu.NEXT_SCHEDULE_DELTA
H, M, S = timedelta(hours=1), timedelta(minutes=1), timedelta(seconds=1)


def _t(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


JUST_AFTER_PRIOR_HOUR = _t("2016-05-19T09:01:00Z")
JUST_BEFORE_PRIOR_HOUR = _t("2016-05-19T08:59:00Z")
JUST_AFTER_THE_HOUR = _t("2016-05-19T10:01:00Z")
JUST_BEFORE_THE_HOUR = _t("2016-05-19T09:59:00Z")
JUST_BEFORE_NEXT_HOUR = _t("2016-05-19T10:59:00Z")
WEEK_AFTER_THE_HOUR = _t("2016-05-26T10:00:00Z")
TOP_OF_THE_HOUR = _t("2016-05-19T10:00:00Z")


def cron_job() -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {
            "name": "mycronjob",
            "namespace": "snazzycats",
            "uid": "1a2b3c",
            "creationTimestamp": format_time(JUST_BEFORE_THE_HOUR),
        },
        "spec": {
            "schedule": "* * * * ?",
            "concurrencyPolicy": "Allow",
            "jobTemplate": {
                "metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
                "spec": {
                    "parallelism": 1,
                    "completions": 1,
                    "template": {
                        "metadata": {"labels": {"foo": "bar"}},
                        "spec": {"containers": [{"image": "foo/bar"}]},
                    },
                },
            },
        },
        "status": {},
    }


@dataclass
class FakeJobControl:
    job: Obj | None = None
    create_err: Exception | None = None
    err: Exception | None = None
    jobs: list[Obj] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    async def get_job(self, namespace: str, name: str) -> Obj:
        if self.err is not None:
            raise self.err
        if self.job is None:
            raise NotFoundError({"code": 404, "reason": "NotFound", "message": f'jobs.batch "{name}" not found'})
        return self.job

    async def create_job(self, namespace: str, job: Obj) -> Obj:
        if self.create_err is not None:
            raise self.create_err
        self.jobs.append(copy.deepcopy(job))
        created = copy.deepcopy(job)
        created["metadata"]["uid"] = "test-uid"
        created["metadata"]["namespace"] = namespace
        return created

    async def delete_job(self, namespace: str, name: str) -> None:
        if self.err is not None:
            raise self.err
        self.deleted.append(name)


@dataclass
class FakeCJControl:
    cron_job: Obj
    updates: list[Obj] = field(default_factory=list)

    async def get_cron_job(self, namespace: str, name: str) -> Obj:
        return copy.deepcopy(self.cron_job)

    async def update_status(self, cj: Obj) -> Obj:
        self.updates.append(copy.deepcopy(cj))
        return cj


@dataclass
class FakeRecorder:
    events: list[str] = field(default_factory=list)

    def record(self, obj: object, event_type: str, reason: str, message: str) -> None:
        self.events.append(f"{event_type} {reason} {message}")


@dataclass
class Case:
    policy: str
    schedule: str
    now: datetime
    job_creation_time: datetime = JUST_AFTER_PRIOR_HOUR
    deadline: int | None = None
    suspend: bool = False
    time_zone: str | None = None
    ran_previously: bool = False
    still_active: bool = False
    cronjob_creation_time: datetime | None = None
    last_schedule_time: datetime | None = None
    job_create_error: Exception | None = None
    job_get_err: Exception | None = None
    expect_create: bool = False
    expect_delete: bool = False
    expect_active: int = 0
    expected_warnings: int = 0
    expect_err: bool = False
    expected_requeue: timedelta | None = None
    expect_update_status: bool = False
    job_still_not_found_in_lister: bool = False
    job_present_in_cj_active_status: bool = True


def _exists() -> Exception:
    return AlreadyExistsError({"code": 409, "reason": "AlreadyExists", "message": 'job.batch "" already exists'})


def _terminating() -> Exception:
    return APIStatusError(
        {
            "code": 403,
            "reason": "Forbidden",
            "message": "",
            "details": {
                "causes": [
                    {
                        "type": "NamespaceTerminating",
                        "message": "namespace default is being terminated",
                        "field": "metadata.namespace",
                    }
                ]
            },
        }
    )


A, F, R = "Allow", "Forbid", "Replace"
CASES: dict[str, Case] = {
    "never ran, not valid schedule, A": Case(A, ERROR_SCHEDULE, JUST_BEFORE_THE_HOUR, expected_warnings=1),
    "never ran, not valid schedule, F": Case(F, ERROR_SCHEDULE, JUST_BEFORE_THE_HOUR, expected_warnings=1),
    "never ran, not valid time zone": Case(
        A, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, time_zone="bad timezone", expected_warnings=1
    ),
    "never ran, not time, A": Case(A, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, expected_requeue=M + DELTA),
    "never ran, not time, F": Case(F, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, expected_requeue=M + DELTA),
    "never ran, not time, R": Case(R, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, expected_requeue=M + DELTA),
    "never ran, not time in zone": Case(
        A, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, time_zone=NEW_YORK, expected_requeue=M + DELTA
    ),
    "never ran, is time, A": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, expect_create=True, expect_active=1, expected_requeue=H - M + DELTA,
        expect_update_status=True,
    ),
    "never ran, is time, F": Case(
        F, ON_THE_HOUR, JUST_AFTER_THE_HOUR, expect_create=True, expect_active=1, expected_requeue=H - M + DELTA,
        expect_update_status=True,
    ),
    "never ran, is time, R": Case(
        R, ON_THE_HOUR, JUST_AFTER_THE_HOUR, expect_create=True, expect_active=1, expected_requeue=H - M + DELTA,
        expect_update_status=True,
    ),
    "never ran, is time in zone": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, time_zone=NEW_YORK, expect_create=True, expect_active=1,
        expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "never ran, is time in zone, but TZ is also set in schedule": Case(
        A, "TZ=UTC " + ON_THE_HOUR, JUST_AFTER_THE_HOUR, time_zone=NEW_YORK, expect_create=True,
        expected_warnings=1, expect_active=1, expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "never ran, is time, suspended": Case(A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, suspend=True),
    "never ran, is time, past deadline": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR + M * (SHORT_DEAD + 1), deadline=SHORT_DEAD,
        expected_requeue=H - M - M * (SHORT_DEAD + 1) + DELTA,
    ),
    "never ran, is time, not past deadline": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, deadline=LONG_DEAD, expect_create=True, expect_active=1,
        expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "prev ran but done, not time, A": Case(
        A, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, ran_previously=True, expected_requeue=M + DELTA,
        expect_update_status=True,
    ),
    "prev ran but done, not time, R": Case(
        R, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, ran_previously=True, expected_requeue=M + DELTA,
        expect_update_status=True,
    ),
    "prev ran but done, is time, A": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, expect_create=True, expect_active=1,
        expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "prev ran but done, is time, create job failed, A": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, job_create_error=_exists(),
        expect_update_status=True,
    ),
    "prev ran but done, is time, job not present in CJ active status, create job failed, A": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, job_create_error=_exists(),
        expect_update_status=True, job_present_in_cj_active_status=False,
    ),
    "prev ran but done, is time, suspended": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, suspend=True, expect_update_status=True
    ),
    "prev ran but done, is time, past deadline": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, deadline=SHORT_DEAD,
        expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "still active, not time, F": Case(
        F, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, ran_previously=True, still_active=True, expect_active=1,
        expected_requeue=M + DELTA,
    ),
    "still active, is time, A": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True, expect_create=True,
        expect_active=2, expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "still active, is time, F": Case(
        F, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True, expect_active=1,
        expected_requeue=H - M + DELTA,
    ),
    "still active, is time, R": Case(
        R, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True, expect_create=True,
        expect_delete=True, expect_active=1, expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "still active, is time, get job failed, R": Case(
        R, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True,
        job_get_err=APIStatusError({"code": 400, "reason": "BadRequest", "message": "request is invalid"}),
        expect_active=1, expected_warnings=1, expect_err=True,
    ),
    "still active, is time, suspended": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True, suspend=True, expect_active=1
    ),
    "still active, is time, past deadline": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True, deadline=SHORT_DEAD,
        expect_active=1, expected_requeue=H - M + DELTA,
    ),
    "prev ran but done, long overdue, not past deadline, A": Case(
        A, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=LONG_DEAD, expect_create=True,
        expect_active=1, expected_warnings=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, no deadline, F": Case(
        F, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, expect_create=True, expect_active=1,
        expected_warnings=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, past medium deadline, A": Case(
        A, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=MEDIUM_DEAD, expect_create=True,
        expect_active=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, past short deadline, R": Case(
        R, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=SHORT_DEAD, expect_create=True,
        expect_active=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "this ran but done, time drifted back, F": Case(
        F, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, ran_previously=True, job_creation_time=JUST_AFTER_THE_HOUR,
        job_create_error=_exists(), expected_requeue=M + DELTA, expect_update_status=True,
        job_present_in_cj_active_status=False,
    ),
    "this started but went missing, not past deadline, A": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR + timedelta(milliseconds=100), ran_previously=True, still_active=True,
        deadline=LONG_DEAD, job_creation_time=TOP_OF_THE_HOUR + timedelta(milliseconds=100), expect_active=1,
        expected_requeue=H - M - timedelta(milliseconds=100) + DELTA, job_still_not_found_in_lister=True,
    ),
    "this started but is not present in cronjob active list, not past deadline, R": Case(
        R, ON_THE_HOUR, JUST_AFTER_THE_HOUR + timedelta(milliseconds=100), ran_previously=True, still_active=True,
        deadline=LONG_DEAD, job_creation_time=TOP_OF_THE_HOUR + timedelta(milliseconds=100), expect_active=1,
        expected_requeue=H - M - timedelta(milliseconds=100) + DELTA, job_present_in_cj_active_status=False,
    ),
    "with @every schedule, never ran, not time": Case(
        A, EVERY_HOUR, TOP_OF_THE_HOUR, cronjob_creation_time=JUST_BEFORE_THE_HOUR,
        job_creation_time=JUST_BEFORE_THE_HOUR, expected_requeue=H - M + DELTA,
    ),
    "with @every schedule, never ran, is time": Case(
        A, EVERY_HOUR, JUST_BEFORE_THE_HOUR, cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_PRIOR_HOUR, expected_requeue=H + DELTA, expect_create=True, expect_active=1,
        expect_update_status=True,
    ),
    "with @every schedule, never ran, is time, past deadline": Case(
        A, EVERY_HOUR, JUST_BEFORE_THE_HOUR + S * (SHORT_DEAD + 1), deadline=SHORT_DEAD,
        cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_PRIOR_HOUR,
        expected_requeue=H - S * (SHORT_DEAD + 1) + DELTA,
    ),
    "with @every schedule, prev ran but done, is time": Case(
        A, EVERY_HOUR, TOP_OF_THE_HOUR + H, ran_previously=True, cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_PRIOR_HOUR, last_schedule_time=JUST_BEFORE_THE_HOUR, expect_create=True,
        expect_active=1, expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "with @every schedule, still active, is time": Case(
        A, EVERY_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True,
        cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_PRIOR_HOUR,
        last_schedule_time=JUST_BEFORE_PRIOR_HOUR, expect_create=True, expect_active=2,
        expected_requeue=H - 2 * M + DELTA, expect_update_status=True,
    ),
    "with @every schedule, prev ran but done, long overdue, no deadline": Case(
        A, EVERY_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, cronjob_creation_time=JUST_AFTER_PRIOR_HOUR,
        last_schedule_time=JUST_AFTER_THE_HOUR, expect_create=True, expect_active=1, expected_warnings=1,
        expected_requeue=M + DELTA, expect_update_status=True,
    ),
    "with @every schedule, prev ran but done, long overdue, past deadline": Case(
        A, EVERY_HOUR, WEEK_AFTER_THE_HOUR + M + S * (SHORT_DEAD + 1), deadline=SHORT_DEAD, ran_previously=True,
        cronjob_creation_time=JUST_AFTER_PRIOR_HOUR, last_schedule_time=JUST_AFTER_THE_HOUR, expect_active=1,
        expected_requeue=H - S * (SHORT_DEAD + 1) + DELTA, expect_update_status=True,
    ),
    "never ran, not valid schedule, R": Case(F, ERROR_SCHEDULE, JUST_BEFORE_THE_HOUR, expected_warnings=1),
    "never ran, is time in zone, but time zone disabled": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, time_zone=NEW_YORK, expect_create=True, expect_active=1,
        expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "prev ran but done, not time, F": Case(
        F, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, ran_previously=True, expected_requeue=M + DELTA,
        expect_update_status=True,
    ),
    "prev ran but done, is time, F": Case(
        F, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, expect_create=True, expect_active=1,
        expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "prev ran but done, is time, R": Case(
        R, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, expect_create=True, expect_active=1,
        expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "prev ran but done, is time, not past deadline": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, deadline=LONG_DEAD, expect_create=True,
        expect_active=1, expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "still active, not time, A": Case(
        A, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, ran_previously=True, still_active=True, expect_active=1,
        expected_requeue=M + DELTA,
    ),
    "still active, not time, R": Case(
        R, ON_THE_HOUR, JUST_BEFORE_THE_HOUR, ran_previously=True, still_active=True, expect_active=1,
        expected_requeue=M + DELTA,
    ),
    "still active, is time, not past deadline": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True, deadline=LONG_DEAD,
        expect_create=True, expect_active=2, expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, not past deadline, R": Case(
        R, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=LONG_DEAD, expect_create=True,
        expect_active=1, expected_warnings=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, not past deadline, F": Case(
        F, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=LONG_DEAD, expect_create=True,
        expect_active=1, expected_warnings=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, no deadline, A": Case(
        A, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, expect_create=True, expect_active=1,
        expected_warnings=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, no deadline, R": Case(
        R, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, expect_create=True, expect_active=1,
        expected_warnings=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, past short deadline, A": Case(
        A, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=SHORT_DEAD, expect_create=True,
        expect_active=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, past medium deadline, R": Case(
        R, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=MEDIUM_DEAD, expect_create=True,
        expect_active=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, past medium deadline, F": Case(
        F, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=MEDIUM_DEAD, expect_create=True,
        expect_active=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "prev ran but done, long overdue, past short deadline, F": Case(
        F, ON_THE_HOUR, WEEK_AFTER_THE_HOUR, ran_previously=True, deadline=SHORT_DEAD, expect_create=True,
        expect_active=1, expected_requeue=H + DELTA, expect_update_status=True,
    ),
    "this started but went missing, not past deadline, f": Case(
        F, ON_THE_HOUR, JUST_AFTER_THE_HOUR + timedelta(milliseconds=100), ran_previously=True, still_active=True,
        deadline=LONG_DEAD, job_creation_time=TOP_OF_THE_HOUR + timedelta(milliseconds=100), expect_active=1,
        expected_requeue=H - M - timedelta(milliseconds=100) + DELTA, job_still_not_found_in_lister=True,
    ),
    "this started but went missing, not past deadline, R": Case(
        R, ON_THE_HOUR, JUST_AFTER_THE_HOUR + timedelta(milliseconds=100), ran_previously=True, still_active=True,
        deadline=LONG_DEAD, job_creation_time=TOP_OF_THE_HOUR + timedelta(milliseconds=100), expect_active=1,
        expected_requeue=H - M - timedelta(milliseconds=100) + DELTA, job_still_not_found_in_lister=True,
    ),
    "this started but is not present in cronjob active list, not past deadline, A": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR + timedelta(milliseconds=100), ran_previously=True, still_active=True,
        deadline=LONG_DEAD, job_creation_time=TOP_OF_THE_HOUR + timedelta(milliseconds=100), expect_active=1,
        expected_requeue=H - M - timedelta(milliseconds=100) + DELTA, job_present_in_cj_active_status=False,
    ),
    "this started but is not present in cronjob active list, not past deadline, f": Case(
        F, ON_THE_HOUR, JUST_AFTER_THE_HOUR + timedelta(milliseconds=100), ran_previously=True, still_active=True,
        deadline=LONG_DEAD, job_creation_time=TOP_OF_THE_HOUR + timedelta(milliseconds=100), expect_active=1,
        expected_requeue=H - M - timedelta(milliseconds=100) + DELTA, job_present_in_cj_active_status=False,
    ),
    "with @every schedule, never ran, is time, not past deadline": Case(
        A, EVERY_HOUR, JUST_BEFORE_THE_HOUR + S * (SHORT_DEAD - 1), deadline=LONG_DEAD,
        cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_PRIOR_HOUR, expect_create=True,
        expect_active=1, expected_requeue=H - S * (SHORT_DEAD - 1) + DELTA, expect_update_status=True,
    ),
    "with @every schedule, prev ran but done, not time": Case(
        A, EVERY_HOUR, TOP_OF_THE_HOUR, ran_previously=True, cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR,
        job_creation_time=JUST_BEFORE_PRIOR_HOUR, last_schedule_time=JUST_BEFORE_THE_HOUR,
        expected_requeue=H - M + DELTA, expect_update_status=True,
    ),
    "with @every schedule, prev ran but done, is time, past deadline": Case(
        A, EVERY_HOUR, JUST_BEFORE_NEXT_HOUR + S * (SHORT_DEAD + 1), deadline=SHORT_DEAD, ran_previously=True,
        cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_PRIOR_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR, expected_requeue=H - S * (SHORT_DEAD + 1) + DELTA,
        expect_update_status=True,
    ),
    "with @every schedule, still active, not time": Case(
        A, EVERY_HOUR, TOP_OF_THE_HOUR, ran_previously=True, still_active=True,
        cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_THE_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR, expect_active=1, expected_requeue=H - M + DELTA,
    ),
    "with @every schedule, still active, is time, past deadline": Case(
        A, EVERY_HOUR, JUST_BEFORE_NEXT_HOUR + S * (SHORT_DEAD + 1), deadline=SHORT_DEAD, ran_previously=True,
        still_active=True, cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_THE_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR, expect_active=1, expected_requeue=H - S * (SHORT_DEAD + 1) + DELTA,
    ),
    "with @every schedule, still active, is time, not past deadline": Case(
        A, EVERY_HOUR, JUST_BEFORE_NEXT_HOUR + S * (SHORT_DEAD - 1), deadline=LONG_DEAD, ran_previously=True,
        still_active=True, cronjob_creation_time=JUST_BEFORE_PRIOR_HOUR, job_creation_time=JUST_BEFORE_THE_HOUR,
        last_schedule_time=JUST_BEFORE_THE_HOUR, expect_create=True, expect_active=2,
        expected_requeue=H - S * (SHORT_DEAD - 1) + DELTA, expect_update_status=True,
    ),
    "do nothing if the namespace is terminating": Case(
        A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, ran_previously=True, still_active=True,
        job_create_error=_terminating(), expect_err=True, job_present_in_cj_active_status=False,
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
async def test_controller_v2_sync_cron_job(name: str) -> None:
    """Upstream ``TestControllerV2SyncCronJob``, case by case (the name is upstream's)."""
    tc = CASES[name]
    cj = cron_job()
    spec = cj["spec"]
    spec.update(schedule=tc.schedule, concurrencyPolicy=tc.policy, suspend=tc.suspend)
    if tc.time_zone is not None:
        spec["timeZone"] = tc.time_zone
    if tc.deadline is not None:
        spec["startingDeadlineSeconds"] = tc.deadline
    jobs: list[Obj] = []
    real_cj = copy.deepcopy(cj)
    job: Obj | None = None
    if tc.ran_previously:
        cj["metadata"]["creationTimestamp"] = format_time(tc.cronjob_creation_time or JUST_BEFORE_PRIOR_HOUR)
        cj["status"]["lastScheduleTime"] = format_time(tc.last_schedule_time or JUST_AFTER_PRIOR_HOUR)
        job = cu.get_job_from_template2(cj, tc.job_creation_time)
        job["metadata"].update(uid="1234", namespace="snazzycats")
        if tc.still_active:
            ref = object_reference(job)
            if tc.job_present_in_cj_active_status:
                cj["status"]["active"] = [ref]
            real_cj["status"]["active"] = [ref]
        else:
            completion = tc.job_creation_time.replace(microsecond=0) + 10 * S
            job["status"] = {
                "completionTime": format_time(completion),
                "conditions": [{"type": "Complete", "status": "True"}],
            }
        if not tc.job_still_not_found_in_lister:
            jobs.append(job)
    else:
        cj["metadata"]["creationTimestamp"] = format_time(tc.cronjob_creation_time or JUST_BEFORE_THE_HOUR)

    jc = FakeJobControl(job=job, create_err=tc.job_create_error, err=tc.job_get_err)
    cjc = FakeCJControl(cron_job=real_cj)
    recorder = FakeRecorder()
    syncer = CronJobSyncer(job_control=jc, cj_control=cjc, recorder=recorder, now=lambda: tc.now)
    got, result = await syncer.sync_cron_job(copy.deepcopy(cj), jobs)

    if tc.expect_err:
        assert result.error is not None
    if tc.expected_requeue is not None:
        assert result.requeue_after == tc.expected_requeue
    assert result.update_status == tc.expect_update_status
    if tc.ran_previously and not tc.still_active:
        completion = tc.job_creation_time.replace(microsecond=0) + 10 * S
        assert got["status"].get("lastSuccessfulTime") == format_time(completion)
    assert len(jc.jobs) == (1 if tc.expect_create else 0)
    for created in jc.jobs:
        ref = created["metadata"]["ownerReferences"][0]
        assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
            "batch/v1",
            "CronJob",
            "mycronjob",
            "1a2b3c",
            True,
        )
    assert len(jc.deleted) == (1 if tc.expect_delete else 0)
    expected_events = tc.expected_warnings + int(tc.expect_create) + int(tc.expect_delete)
    if name == "still active, is time, F":
        expected_events += 1  # the only case raising an event for not scheduling (JobAlreadyActive)
    assert len(recorder.events) == expected_events, recorder.events
    assert sum(e.startswith("Warning") for e in recorder.events) == tc.expected_warnings
    if tc.expect_create or (tc.still_active and tc.job_create_error is None):
        assert len(got["status"].get("active") or []) == tc.expect_active


async def test_sync_messages_are_upstreams() -> None:
    """The event texts of ``syncCronJob`` byte for byte: SuccessfulCreate, the RFC 1123Z time of MissSchedule,
    UnparseableSchedule (Go ``%q``), UnknownTimeZone, JobAlreadyActive, SuccessfulDelete, InvalidSchedule."""

    async def run(tc: Case, *, active: bool = False) -> list[str]:
        cj = cron_job()
        cj["spec"].update(schedule=tc.schedule, concurrencyPolicy=tc.policy)
        if tc.deadline is not None:
            cj["spec"]["startingDeadlineSeconds"] = tc.deadline
        cj["status"]["lastScheduleTime"] = format_time(JUST_AFTER_PRIOR_HOUR)
        job = cu.get_job_from_template2(cj, JUST_AFTER_PRIOR_HOUR)
        if tc.time_zone is not None:
            cj["spec"]["timeZone"] = tc.time_zone
        job["metadata"].update(uid="1234", namespace="snazzycats")
        if active:
            cj["status"]["active"] = [object_reference(job)]
        recorder = FakeRecorder()
        syncer = CronJobSyncer(FakeJobControl(job=job), FakeCJControl(cj), recorder, lambda: tc.now)
        await syncer.sync_cron_job(cj, [job] if active else [])
        return recorder.events

    assert await run(Case(A, ON_THE_HOUR, JUST_AFTER_THE_HOUR)) == [
        "Normal SuccessfulCreate Created job mycronjob-24394200"
    ]
    # MissSchedule: mostRecentScheduleTime already starts looking at now-startingDeadlineSeconds, so upstream's
    # tooLate branch cannot fire from a table case; its message format (RFC 1123Z in UTC) is pinned directly.
    assert rfc1123z(TOP_OF_THE_HOUR) == "Thu, 19 May 2016 10:00:00 +0000"
    assert await run(Case(A, "* * *", JUST_AFTER_THE_HOUR)) == [
        'Warning UnparseableSchedule unparseable schedule: "* * *" : expected exactly 5 fields, found 3: [* * *]'
    ]
    assert await run(Case(A, ON_THE_HOUR, JUST_AFTER_THE_HOUR, time_zone="Mars/Olympus")) == [
        'Warning UnknownTimeZone invalid timeZone: "Mars/Olympus": unknown time zone Mars/Olympus'
    ]
    assert await run(Case(F, ON_THE_HOUR, JUST_AFTER_THE_HOUR), active=True) == [
        "Normal JobAlreadyActive Not starting job because prior execution is running and concurrency policy is Forbid"
    ]
    assert await run(Case(R, ON_THE_HOUR, JUST_AFTER_THE_HOUR), active=True) == [
        "Normal SuccessfulDelete Deleted job mycronjob-24394141",
        "Normal SuccessfulCreate Created job mycronjob-24394200",
    ]
    assert await run(Case(A, "59 23 31 2 *", JUST_AFTER_THE_HOUR)) == [
        "Warning InvalidSchedule invalid schedule: 59 23 31 2 * : time difference between two schedules is less "
        "than 1 second"
    ]


def test_job_from_template_name_and_annotation() -> None:
    """Upstream ``TestGetJobFromTemplate2``: name ``<cronjob>-<minutes since epoch>``, the template's labels and
    annotations, and ``batch.kubernetes.io/cronjob-scheduled-timestamp`` in the CronJob's zone."""
    cj = cron_job()
    scheduled = _t("2016-05-19T10:00:00Z")
    job = cu.get_job_from_template2(cj, scheduled)
    assert job["metadata"]["name"] == f"mycronjob-{int(scheduled.timestamp()) // 60}"
    assert job["metadata"]["labels"] == {"a": "b"}
    assert job["metadata"]["annotations"] == {
        "x": "y",
        cu.CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: "2016-05-19T10:00:00Z",
    }
    cj["spec"]["timeZone"] = NEW_YORK
    job = cu.get_job_from_template2(cj, scheduled)
    assert job["metadata"]["annotations"][cu.CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] == "2016-05-19T06:00:00-04:00"
    assert job["spec"] == cj["spec"]["jobTemplate"]["spec"]
    assert datetime(2016, 5, 19, 10, tzinfo=UTC) == scheduled
