"""The TTL-after-finished controller: delete a finished Job ``spec.ttlSecondsAfterFinished`` seconds after it
finished (upstream ``pkg/controller/ttlafterfinished``).

A Job is a candidate when it has a TTL and a True ``Complete`` or ``Failed`` condition; its finish time is that
condition's ``lastTransitionTime``. Before the TTL is up the key is requeued for exactly the time left (on the
injected clock). When it is up the Job is read fresh from the API server (the TTL may have been changed or
removed meanwhile) and deleted with foreground propagation (upstream ``DeletePropagationForeground``: the garbage
collector deletes its pods first, then the Job) and a UID precondition, so a newer Job of the same name is never
deleted by mistake. A Job already being deleted is left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from kubeplane.api.views import meta_of, spec_of, status_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.job_util import JOB_COMPLETE, JOB_FAILED
from kubeplane.controllers.podutil import parse_timestamp

from .base import Controller, ControllerContext, key_of, split_key

__all__ = ["TTLAfterFinishedController", "job_finish_time", "needs_cleanup", "time_left"]

log = logging.getLogger("kubeplane.controllers.ttlafterfinished")


def needs_cleanup(job: Mapping[str, Any]) -> bool:
    """A TTL is set and the Job finished (upstream ``needsCleanup``)."""
    return spec_of(job).get("ttlSecondsAfterFinished") is not None and _finished(job)


def _finished(job: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in (JOB_COMPLETE, JOB_FAILED) and c.get("status") == "True"
        for c in status_of(job).get("conditions") or ()
    )


def job_finish_time(job: Mapping[str, Any]) -> float:
    """The lastTransitionTime of the True Complete/Failed condition (upstream ``jobFinishTime``)."""
    meta = meta_of(job)
    for cond in status_of(job).get("conditions") or ():
        if cond.get("type") in (JOB_COMPLETE, JOB_FAILED) and cond.get("status") == "True":
            at = parse_timestamp(cond.get("lastTransitionTime"))
            if at is None:
                raise ValueError(
                    f"unable to find the time when the Job {meta.get('namespace')}/{meta.get('name')} finished"
                )
            return at
    raise ValueError(f"unable to find the status of the finished Job {meta.get('namespace')}/{meta.get('name')}")


def time_left(job: Mapping[str, Any], now: float) -> tuple[float, float]:
    """(seconds left, expiry time) (upstream ``timeLeft``); a finish time in the future (clock skew) is logged
    and the TTL counted from it anyway."""
    finish = job_finish_time(job)
    if finish > now:
        log.info(
            "Warning: Found Job finished in the future. This is likely due to time skew in the cluster. "
            "Job cleanup will be deferred. job=%s",
            key_of(job),
        )
    expire_at = finish + float(spec_of(job).get("ttlSecondsAfterFinished") or 0)
    return expire_at - now, expire_at


class TTLAfterFinishedController(Controller):
    name: ClassVar[str] = "ttl-after-finished"
    workers: ClassVar[int] = 5  # upstream --concurrent-ttl-after-finished-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.jobs_resource = ctx.client.resource("jobs")
        self.job_informer = ctx.informers.informer_for(self.jobs_resource)
        self.job_lister = self.job_informer.lister()
        self.job_informer.add_event_handler(on_add=self._add_job, on_update=self._update_job)

    def _add_job(self, job: Obj) -> None:
        if not meta_of(job).get("deletionTimestamp") and needs_cleanup(job):
            self.enqueue(job)

    def _update_job(self, old: Obj, cur: Obj) -> None:
        if not meta_of(cur).get("deletionTimestamp") and needs_cleanup(cur):
            self.enqueue(cur)

    def _processed_ttl(self, job: Obj) -> bool:
        """Whether the TTL is up; if not (and the Job still needs cleanup), requeue for the time left (upstream
        ``processTTL``)."""
        if meta_of(job).get("deletionTimestamp") or not needs_cleanup(job):
            return False
        left, _ = time_left(job, self.clock.now())
        if left <= 0:
            return True
        self.enqueue_after(job, left)
        return False

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        job = self.job_lister.get(namespace, name)
        if job is None or not self._processed_ttl(job):
            return
        # The cached Job may be stale (TTL changed, Job replaced): decide again on a fresh read.
        try:
            fresh = await self.client.get(self.jobs_resource, name, namespace=namespace)
        except NotFoundError:
            return
        if not self._processed_ttl(fresh):
            return
        log.info("cleaning up job %s", key)
        try:
            await self.client.delete(
                self.jobs_resource,
                name,
                namespace=namespace,
                propagation_policy="Foreground",
                preconditions={"uid": str(meta_of(fresh).get("uid") or "")},
            )
        except NotFoundError:
            return
