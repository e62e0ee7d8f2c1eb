"""One CronJob's reconciliation (upstream ``syncCronJob``, ``cleanupFinishedJobs`` and ``deleteJob`` of
``cronjob_controllerv2.go``, with ``injection.go``'s job and CronJob controls).

:class:`CronJobSyncer` holds no state beyond its collaborators: the Job and CronJob controls (the API, or fakes
in tests, exactly as upstream injects ``jobControlInterface``/``cjControlInterface``), an event recorder and
``now``. Each call works on a copy of the CronJob that the caller writes back with one status update when either
step says so; both steps are safe to repeat (a second run sees the Job it created in ``status.active`` or
gets AlreadyExists, and a Job already deleted is simply gone).

Order, as upstream: reconcile ``status.active`` against the Jobs (finished ones leave it with
``SawCompletedJob`` and feed ``lastSuccessfulTime``; unknown unfinished ones are ``UnexpectedJob``; vanished ones
``MissingJob``), then stop if the CronJob is being deleted, its ``timeZone`` does not load (``UnknownTimeZone``),
it is suspended, or its schedule does not parse (``UnparseableSchedule``) or never fires (``InvalidSchedule``);
else pick the most recent unmet activation, skip it when past ``startingDeadlineSeconds`` (``MissSchedule``),
already done, or blocked by ``Forbid`` (``JobAlreadyActive``), delete the running Jobs under ``Replace``, create
the Job (``SuccessfulCreate``), record it in ``status.active`` and ``lastScheduleTime``, and requeue for the
next activation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Protocol

from kubeplane.api import cron
from kubeplane.api.meta import format_time, parse_time
from kubeplane.api.validation.field import go_quote
from kubeplane.api.views import mappings, meta_of, spec_of, status_of, uid_of
from kubeplane.client.errors import AlreadyExistsError, APIStatusError, ForbiddenError, NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, object_reference
from kubeplane.client.interface import Client, Obj
from kubeplane.controllers import cronjob_util as cu
from kubeplane.controllers.controller_utils import NAMESPACE_TERMINATING_CAUSE, is_controlled_by

__all__ = ["CronJobControl", "CronJobSyncer", "JobControl", "RealCronJobControl", "RealJobControl", "SyncResult"]

log = logging.getLogger("kubeplane.controllers.cronjob")


class JobControl(Protocol):
    """Upstream ``jobControlInterface``."""

    async def get_job(self, namespace: str, name: str) -> Obj: ...

    async def create_job(self, namespace: str, job: Obj) -> Obj: ...

    async def delete_job(self, namespace: str, name: str) -> None: ...


class CronJobControl(Protocol):
    """Upstream ``cjControlInterface``."""

    async def get_cron_job(self, namespace: str, name: str) -> Obj: ...

    async def update_status(self, cj: Obj) -> Obj: ...


class RealJobControl:
    """Jobs through the API; deletion propagates in the background, as upstream's ``realJobControl``."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.jobs = client.resource("jobs")

    async def get_job(self, namespace: str, name: str) -> Obj:
        return await self.client.get(self.jobs, name, namespace=namespace)

    async def create_job(self, namespace: str, job: Obj) -> Obj:
        return await self.client.create(self.jobs, job, namespace=namespace)

    async def delete_job(self, namespace: str, name: str) -> None:
        await self.client.delete(self.jobs, name, namespace=namespace, propagation_policy="Background")


class RealCronJobControl:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.cronjobs = client.resource("cronjobs")

    async def get_cron_job(self, namespace: str, name: str) -> Obj:
        return await self.client.get(self.cronjobs, name, namespace=namespace)

    async def update_status(self, cj: Obj) -> Obj:
        return await self.client.update(self.cronjobs, cj, namespace=meta_of(cj).get("namespace"), subresource="status")


@dataclass
class SyncResult:
    """``syncCronJob``'s three results: when to look again, whether the status changed, and the error (which
    upstream returns *alongside* a possibly changed status)."""

    requeue_after: timedelta | None = None
    update_status: bool = False
    error: Exception | None = None


def _err(exc: Exception) -> str:
    """Go's ``%v`` of an API error: the Status message."""
    return exc.message if isinstance(exc, APIStatusError) else str(exc)


def namespace_terminating(exc: Exception) -> bool:
    """``errors.HasStatusCause(err, NamespaceTerminatingCause)`` (kubeplane's Forbidden may carry only the
    message)."""
    if not isinstance(exc, APIStatusError):
        return False
    causes = (exc.status.get("details") or {}).get("causes") or []
    if any(c.get("type") == NAMESPACE_TERMINATING_CAUSE for c in causes):
        return True
    return isinstance(exc, ForbiddenError) and "because it is being terminated" in exc.message


def rfc1123z(t: datetime) -> str:
    """Go's ``t.UTC().Format(time.RFC1123Z)``: ``Thu, 19 May 2016 10:00:00 +0000``."""
    return format_datetime(t.astimezone(UTC).replace(microsecond=0)).replace("-0000", "+0000")


@dataclass
class CronJobSyncer:
    """See the module docstring. ``now`` returns an aware datetime (the injected clock's, in UTC)."""

    job_control: JobControl
    cj_control: CronJobControl
    recorder: cu.Recorder
    now: Callable[[], datetime]

    # --- syncCronJob ---------------------------------------------------------------------------------------

    async def sync_cron_job(self, cj: Obj, jobs: Sequence[Obj]) -> tuple[Obj, SyncResult]:
        """Upstream ``syncCronJob``; returns the (possibly re-read) CronJob it worked on and the result."""
        result = SyncResult()
        try:
            cj = await self._sync(cj, jobs, result)
        except Exception as exc:  # upstream returns the error with what it did so far
            result.error = exc
            result.requeue_after = None
        return cj, result

    async def _reconcile_active(self, cj: Obj, jobs: Sequence[Obj], result: SyncResult) -> Obj:
        namespace = str(meta_of(cj).get("namespace") or "")
        children: set[str] = set()
        for job in jobs:
            uid = uid_of(job)
            children.add(uid)
            found = cu.in_active_list(cj, uid)
            finished = cu.finished_condition(job)
            if not found and not finished:
                fresh = await self.cj_control.get_cron_job(namespace, str(meta_of(cj).get("name")))
                if cu.in_active_list(fresh, uid):
                    cj = fresh
                    continue
                self.recorder.record(
                    cj,
                    EVENT_TYPE_WARNING,
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {meta_of(job).get('name')}",
                )
            elif finished:
                if found:
                    cu.delete_from_active_list(cj, uid)
                    self.recorder.record(
                        cj,
                        EVENT_TYPE_NORMAL,
                        "SawCompletedJob",
                        f"Saw completed job: {meta_of(job).get('name')}, condition: {finished}",
                    )
                    result.update_status = True
                if cu.is_job_succeeded(job):
                    completion = status_of(job).get("completionTime")
                    status = cj.setdefault("status", {})
                    last = status.get("lastSuccessfulTime")
                    if last is None:
                        status["lastSuccessfulTime"] = completion
                        result.update_status = True
                        last = completion
                    if completion and last and parse_time(str(completion)) > parse_time(str(last)):
                        status["lastSuccessfulTime"] = completion
                        result.update_status = True
        for ref in mappings(status_of(cj), "active"):
            if ref.get("uid") in children:
                continue
            try:
                await self.job_control.get_job(str(ref.get("namespace") or ""), str(ref.get("name") or ""))
            except NotFoundError:
                self.recorder.record(cj, EVENT_TYPE_NORMAL, "MissingJob", f"Active job went missing: {ref.get('name')}")
                cu.delete_from_active_list(cj, str(ref.get("uid") or ""))
                result.update_status = True
        return cj

    async def _sync(self, cj: Obj, jobs: Sequence[Obj], result: SyncResult) -> Obj:
        now = self.now()
        cj = await self._reconcile_active(cj, jobs, result)
        meta = meta_of(cj)
        spec = spec_of(cj)
        if meta.get("deletionTimestamp"):
            return cj
        time_zone = spec.get("timeZone")
        if time_zone is not None:
            try:
                cron.load_location(str(time_zone))
            except ValueError as exc:
                self.recorder.record(
                    cj, EVENT_TYPE_WARNING, "UnknownTimeZone", f"invalid timeZone: {go_quote(str(time_zone))}: {exc}"
                )
                return cj
        if spec.get("suspend"):
            return cj
        schedule_text = str(spec.get("schedule") or "")
        try:
            sched = cron.parse_schedule(cu.format_schedule(cj, self.recorder))
        except ValueError as exc:
            self.recorder.record(
                cj,
                EVENT_TYPE_WARNING,
                "UnparseableSchedule",
                f"unparseable schedule: {go_quote(schedule_text)} : {exc}",
            )
            return cj
        try:
            scheduled = cu.next_schedule_time(cj, now, sched, self.recorder)
        except ValueError as exc:
            self.recorder.record(
                cj, EVENT_TYPE_WARNING, "InvalidSchedule", f"invalid schedule: {schedule_text} : {exc}"
            )
            return cj
        if scheduled is None:
            result.requeue_after = cu.next_schedule_time_duration(cj, now, sched)
            return cj
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
            self.recorder.record(
                cj, EVENT_TYPE_WARNING, "MissSchedule", f"Missed scheduled time to start a job: {rfc1123z(scheduled)}"
            )
            result.requeue_after = cu.next_schedule_time_duration(cj, now, sched)
            return cj
        namespace = str(meta.get("namespace") or "")
        last = status_of(cj).get("lastScheduleTime")
        if cu.in_active_list_by_name(cj, namespace, cu.get_job_name(cj, scheduled)) or (
            last and parse_time(str(last)) == scheduled
        ):
            result.requeue_after = cu.next_schedule_time_duration(cj, now, sched)
            return cj
        active = mappings(status_of(cj), "active")
        policy = spec.get("concurrencyPolicy")
        if policy == "Forbid" and active:
            self.recorder.record(
                cj,
                EVENT_TYPE_NORMAL,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            )
            result.requeue_after = cu.next_schedule_time_duration(cj, now, sched)
            return cj
        if policy == "Replace":
            for ref in active:
                try:
                    job = await self.job_control.get_job(str(ref.get("namespace") or ""), str(ref.get("name") or ""))
                except Exception as exc:
                    self.recorder.record(cj, EVENT_TYPE_WARNING, "FailedGet", f"Get job: {_err(exc)}")
                    raise
                if not await self.delete_job(cj, job):
                    raise RuntimeError(
                        f"could not replace job {meta_of(job).get('namespace')}/{meta_of(job).get('name')}"
                    )
                result.update_status = True
        job_req = cu.get_job_from_template2(cj, scheduled)
        already_exists = False
        try:
            job_resp = await self.job_control.create_job(namespace, job_req)
        except AlreadyExistsError:
            already_exists = True
            job_resp = await self.job_control.get_job(namespace, str(job_req["metadata"]["name"]))
            if not is_controlled_by(job_resp, cj):
                return cj
            if cu.in_active_list(cj, uid_of(job_resp)):
                return cj
        except Exception as exc:
            if not namespace_terminating(exc):
                self.recorder.record(cj, EVENT_TYPE_WARNING, "FailedCreate", f"Error creating job: {_err(exc)}")
            raise
        if already_exists:
            log.info("cronjob %s/%s: job %s already exists", namespace, meta.get("name"), job_req["metadata"]["name"])
        else:
            self.recorder.record(
                cj, EVENT_TYPE_NORMAL, "SuccessfulCreate", f"Created job {meta_of(job_resp).get('name')}"
            )
        ref = object_reference({"kind": "Job", "apiVersion": "batch/v1", **job_resp})
        status = cj.setdefault("status", {})
        status["active"] = [*mappings(status, "active"), ref]
        status["lastScheduleTime"] = format_time(scheduled)
        result.update_status = True
        result.requeue_after = cu.next_schedule_time_duration(cj, now, sched)
        return cj

    # --- cleanupFinishedJobs / deleteJob ---------------------------------------------------------------------

    async def cleanup_finished_jobs(self, cj: Obj, jobs: Sequence[Obj]) -> bool:
        """Upstream ``cleanupFinishedJobs``: delete the oldest finished Jobs beyond the history limits."""
        spec = spec_of(cj)
        success_limit = spec.get("successfulJobsHistoryLimit")
        failed_limit = spec.get("failedJobsHistoryLimit")
        if success_limit is None and failed_limit is None:
            return False
        succeeded = [j for j in jobs if cu.finished_condition(j) == "Complete"]
        failed = [j for j in jobs if cu.finished_condition(j) == "Failed"]
        update = False
        if success_limit is not None and await self._remove_oldest_jobs(cj, succeeded, int(success_limit)):
            update = True
        if failed_limit is not None and await self._remove_oldest_jobs(cj, failed, int(failed_limit)):
            update = True
        return update

    async def _remove_oldest_jobs(self, cj: Obj, jobs: Sequence[Obj], max_jobs: int) -> bool:
        to_delete = len(jobs) - max_jobs
        if to_delete <= 0:
            return False
        update = False
        for job in cu.sorted_by_start_time(jobs)[:to_delete]:
            if await self.delete_job(cj, job):
                update = True
        return update

    async def delete_job(self, cj: Obj, job: Obj) -> bool:
        """Upstream ``deleteJob``: delete the Job (background propagation) and drop it from ``status.active``."""
        jmeta = meta_of(job)
        try:
            await self.job_control.delete_job(str(jmeta.get("namespace") or ""), str(jmeta.get("name") or ""))
        except Exception as exc:
            self.recorder.record(cj, EVENT_TYPE_WARNING, "FailedDelete", f"Deleted job: {_err(exc)}")
            log.error("error deleting job %s from cronjob %s: %s", jmeta.get("name"), meta_of(cj).get("name"), exc)
            return False
        cu.delete_from_active_list(cj, uid_of(job))
        self.recorder.record(cj, EVENT_TYPE_NORMAL, "SuccessfulDelete", f"Deleted job {jmeta.get('name')}")
        return True
