"""The CronJob controller: creates a Job for each activation of a CronJob's schedule (upstream
``pkg/controller/cronjob/cronjob_controllerv2.go``, the only CronJob controller since v1.22).

Event handlers, as upstream: a CronJob's add and delete enqueue it; an update that changes ``spec.schedule`` or
``spec.timeZone`` enqueues it for the new schedule's next activation (``UnParseableCronJobSchedule`` if it does
not parse), any other update enqueues it now; a Job's add, update and delete enqueue the CronJob its controller
reference resolves to (by name, then UID).

``sync(key)`` lists the Jobs whose controller reference names the CronJob (labels do not matter), deletes
finished Jobs beyond ``successfulJobsHistoryLimit``/``failedJobsHistoryLimit``, runs :class:`CronJobSyncer`, writes
the status once if either changed it, then requeues the key for just after the next activation
(``enqueue_after`` on the injected clock, so a simulation's virtual clock fires CronJobs on simulated time).
A CronJob that is suspended or whose schedule or time zone is invalid is not requeued until it changes.

Time: ``now`` is the injected clock's, in UTC; a schedule without ``timeZone`` therefore runs in UTC, as upstream's
kube-controller-manager images (distroless, ``time.Local`` = UTC) run it.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from kubeplane.api import cron
from kubeplane.api.views import controller_ref_of, meta_of, namespace_of, spec_of, uid_of
from kubeplane.client.events import EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers import cronjob_util as cu
from kubeplane.controllers.base import Controller, ControllerContext, split_key
from kubeplane.controllers.cronjob_sync import CronJobSyncer, RealCronJobControl, RealJobControl

__all__ = ["CronJobController"]

log = logging.getLogger("kubeplane.controllers.cronjob")


class CronJobController(Controller):
    """See the module docstring."""

    name: ClassVar[str] = "cronjob"
    workers: ClassVar[int] = 5  # --concurrent-cron-job-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.recorder = ctx.recorder("cronjob-controller")
        jobs = ctx.informers.informer_for("jobs")
        cronjobs = ctx.informers.informer_for("cronjobs")
        self.job_lister = jobs.lister()
        self.cj_lister = cronjobs.lister()
        self.syncer = CronJobSyncer(
            job_control=RealJobControl(ctx.client),
            cj_control=RealCronJobControl(ctx.client),
            recorder=self.recorder,
            now=self.now,
        )
        jobs.add_event_handler(on_add=self._add_job, on_update=self._update_job, on_delete=self._delete_job)
        cronjobs.add_event_handler(on_add=self.enqueue, on_update=self._update_cron_job, on_delete=self.enqueue)

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.clock.now(), UTC)

    # --- event handlers ------------------------------------------------------------------------------------

    def _resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        if ref.get("kind") != cu.KIND:
            return None
        cj = self.cj_lister.get(namespace, str(ref.get("name") or ""))
        if cj is None or uid_of(cj) != ref.get("uid"):
            return None
        return cj

    def _add_job(self, job: Obj) -> None:
        if meta_of(job).get("deletionTimestamp"):
            self._delete_job(job)
            return
        ref = controller_ref_of(job)
        if ref is not None:
            cj = self._resolve_controller_ref(namespace_of(job), ref)
            if cj is not None:
                self.enqueue(cj)

    def _update_job(self, old: Obj, cur: Obj) -> None:
        if meta_of(old).get("resourceVersion") == meta_of(cur).get("resourceVersion"):
            return
        cur_ref, old_ref = controller_ref_of(cur), controller_ref_of(old)
        if cur_ref != old_ref and old_ref is not None:
            cj = self._resolve_controller_ref(namespace_of(old), old_ref)
            if cj is not None:
                self.enqueue(cj)
        if cur_ref is not None:
            cj = self._resolve_controller_ref(namespace_of(cur), cur_ref)
            if cj is not None:
                self.enqueue(cj)

    def _delete_job(self, job: Obj) -> None:
        ref = controller_ref_of(job)
        if ref is None:
            return
        cj = self._resolve_controller_ref(namespace_of(job), ref)
        if cj is not None:
            self.enqueue(cj)

    def _update_cron_job(self, old: Obj, cur: Obj) -> None:
        """Upstream ``updateCronJob``: a new schedule or zone requeues for its next activation."""
        old_spec, cur_spec = spec_of(old), spec_of(cur)
        if old_spec.get("schedule") != cur_spec.get("schedule") or old_spec.get("timeZone") != cur_spec.get("timeZone"):
            try:
                sched = cron.parse_schedule(cu.format_schedule(cur, None))
            except ValueError:
                self.recorder.record(
                    cur,
                    EVENT_TYPE_WARNING,
                    "UnParseableCronJobSchedule",
                    f"unparseable schedule for cronjob: {cur_spec.get('schedule')}",
                )
                return
            delay = cu.next_schedule_time_duration(cur, self.now(), sched)
            self.enqueue_after(cur, delay.total_seconds())
            return
        self.enqueue(cur)

    # --- sync ------------------------------------------------------------------------------------------------

    def jobs_to_be_reconciled(self, cj: Obj) -> list[Obj]:
        """Upstream ``getJobsToBeReconciled``: the namespace's Jobs whose controller reference names the CronJob."""
        name = meta_of(cj).get("name")
        out = []
        for job in self.job_lister.list(namespace_of(cj)):
            ref = controller_ref_of(job)
            if ref is not None and ref.get("name") == name:
                out.append(job)
        return out

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        cached = self.cj_lister.get(namespace, name)
        if cached is None:
            log.debug("cronjob %s not found, may be it is deleted", key)
            return
        jobs = self.jobs_to_be_reconciled(cached)
        cj = copy.deepcopy(cached)
        update_after_cleanup = await self.syncer.cleanup_finished_jobs(cj, jobs)
        cj, result = await self.syncer.sync_cron_job(cj, jobs)
        if result.error is not None:
            log.info("error reconciling cronjob %s: %s", key, result.error)
        if update_after_cleanup or result.update_status:
            await self.syncer.cj_control.update_status(cj)
        if result.requeue_after is not None:
            self.enqueue_after(key, result.requeue_after.total_seconds())
            return
        if result.error is not None:
            raise result.error
