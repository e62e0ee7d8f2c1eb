"""Counting a Job's finished pods through finalizers, and its terminal conditions (upstream
``trackJobStatusAndRemoveFinalizers``, ``flushUncountedAndRemoveFinalizers``, ``enactJobFinished`` and
``recordJobFinished``).

The protocol keeps every finished pod counted exactly once, across crashes:

1. A finished pod still carrying ``batch.kubernetes.io/job-tracking`` is added to
   ``status.uncountedTerminatedPods.succeeded``/``failed`` (Indexed successes go straight into
   ``completedIndexes``), at most 500 per sync, and the status is written *first*.
2. Then the finalizers are removed.
3. UIDs whose pod no longer has the finalizer move from the uncounted lists into ``succeeded``/``failed``.
4. Only with no uncounted pods and no terminating pods left does the Job get its terminal condition: the interim
   ``FailureTarget`` / ``SuccessCriteriaMet`` (written at step 1) becomes ``Failed`` / ``Complete`` (with
   ``completionTime``), and the ``Completed`` or failure-reason event is recorded.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kubeplane.api.views import meta_of, spec_of, status_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers.job_context import JobParts, SyncJobCtx
from kubeplane.controllers.job_indexed import (
    UNKNOWN_COMPLETION_INDEX,
    by_completion_index,
    completion_index,
    pod_uid,
)
from kubeplane.controllers.job_pod_failure_policy import match_pod_failure_policy
from kubeplane.controllers.job_success_policy import (
    has_success_criteria_met_condition,
    is_success_criteria_met_condition,
)
from kubeplane.controllers.job_util import (
    JOB_COMPLETE,
    JOB_FAILED,
    JOB_FAILURE_TARGET,
    completions,
    ensure_condition_status,
    has_backoff_limit_per_index,
    has_tracking_finalizer,
    is_indexed,
    is_pod_failed,
    new_condition,
    remove_tracking_finalizer_patch,
    uids,
)

__all__ = ["MAX_UNCOUNTED_PODS", "track_job_status_and_remove_finalizers"]

log = logging.getLogger("kubeplane.controllers.job")

MAX_UNCOUNTED_PODS = 500
"""Most UIDs in ``status.uncountedTerminatedPods`` (keeps it near 20 KB; upstream ``MaxUncountedPods``)."""


def _uncounted(job: Obj) -> Obj:
    status = job.setdefault("status", {})
    uncounted = status.get("uncountedTerminatedPods")
    if not isinstance(uncounted, dict):
        uncounted = status["uncountedTerminatedPods"] = {}
    out: Obj = uncounted
    return out


def clean_uncounted_pods_without_finalizers(job: Obj, uids_with_finalizer: set[str]) -> bool:
    """Move uncounted UIDs whose pod lost its finalizer into the counters; whether anything changed."""
    status = job["status"]
    uncounted = _uncounted(job)
    updated = False
    for name, counter in (("succeeded", "succeeded"), ("failed", "failed")):
        current = uids(uncounted.get(name))
        keep = [u for u in current if u in uids_with_finalizer]
        if len(keep) != len(current):
            updated = True
            status[counter] = int(status.get(counter) or 0) + len(current) - len(keep)
            uncounted[name] = keep
    return updated


def can_remove_finalizer(sctx: SyncJobCtx, pod: Obj, consider_failed: bool) -> bool:
    """Upstream ``canRemoveFinalizer``: when the Job is being deleted or finishing, the pod succeeded, or it
    failed and is not the failed pod kept until its index's replacement exists (backoffLimitPerIndex)."""
    if meta_of(sctx.job).get("deletionTimestamp") or sctx.finished_condition is not None:
        return True
    if status_of(pod).get("phase") == "Succeeded":
        return True
    if not consider_failed:
        return False
    if has_backoff_limit_per_index(sctx.job):
        ix = completion_index(pod)
        if ix != UNKNOWN_COMPLETION_INDEX:
            kept = sctx.pods_with_delayed_deletion_per_index.get(ix)
            if kept is not None and pod_uid(kept) == pod_uid(pod):
                return False
    return True


async def _update_status(parts: JobParts, job: Obj) -> Obj:
    namespace = str(meta_of(job).get("namespace") or "")
    updated: Obj = await parts.client.update(parts.jobs, job, namespace=namespace, subresource="status")
    return updated


async def _remove_tracking_finalizers(
    parts: JobParts, key: str, pods: list[Obj]
) -> tuple[list[bool], BaseException | None]:
    """Upstream ``removeTrackingFinalizerFromPods``: expectations first, then one patch per pod; a pod already
    gone counts as done."""
    parts.finalizer_expectations.expect_finalizers_removed(key, [pod_uid(p) for p in pods])

    async def remove(pod: Obj) -> tuple[bool, BaseException | None]:
        patch = remove_tracking_finalizer_patch(pod)
        if patch is None:
            return False, None
        meta = meta_of(pod)
        try:
            await parts.pod_control.patch_pod(str(meta.get("namespace") or ""), str(meta.get("name") or ""), patch)
        except Exception as exc:
            parts.finalizer_expectations.finalizer_removal_observed(key, pod_uid(pod))
            if isinstance(exc, NotFoundError):
                return True, None
            log.info("removing tracking finalizer of pod %s: %s", meta.get("name"), exc)
            return False, exc
        return True, None

    results = await asyncio.gather(*(remove(p) for p in pods))
    errors = [e for _, e in results if e is not None]
    return [ok for ok, _ in results], (errors[0] if errors else None)


async def _flush_and_remove_finalizers(
    parts: JobParts, sctx: SyncJobCtx, to_remove: list[Obj], with_finalizer: set[str], needs_flush: bool
) -> bool:
    """Upstream ``flushUncountedAndRemoveFinalizers``; returns whether status changes still wait for a write."""
    if needs_flush:
        sctx.job = await _update_status(parts, sctx.job)
        parts.backoff_store.update(sctx.new_backoff_record)
        needs_flush = False
    rm_error: BaseException | None = None
    if to_remove:
        done, rm_error = await _remove_tracking_finalizers(parts, sctx.key, to_remove)
        for pod, ok in zip(to_remove, done, strict=True):
            if ok:
                with_finalizer.discard(pod_uid(pod))
    if clean_uncounted_pods_without_finalizers(sctx.job, with_finalizer):
        needs_flush = True
    if rm_error is not None:
        if needs_flush:
            await _update_status(parts, sctx.job)
        raise rm_error
    return needs_flush


def _count_finished_pods(sctx: SyncJobCtx, to_remove: list[Obj]) -> tuple[list[int], bool, bool]:
    """Step 1: the pods whose finalizer can go, the new succeeded indexes, whether status changed and whether
    the uncounted lists are full."""
    job = sctx.job
    uncounted = _uncounted(job)
    succeeded_uids, failed_uids = uids(uncounted.get("succeeded")), uids(uncounted.get("failed"))
    indexed = is_indexed(job)
    total = completions(job) or 0
    policy = spec_of(job).get("podFailurePolicy")
    new_indexes: list[int] = []
    needs_flush = full = False
    finishing = sctx.finished_condition is not None
    for pod in sctx.pods:
        uid = pod_uid(pod)
        if not has_tracking_finalizer(pod) or uid in sctx.expected_rm_finalizers:
            continue  # counted in an earlier sync
        failed = is_pod_failed(pod, job)
        if not can_remove_finalizer(sctx, pod, failed):
            continue
        to_remove.append(pod)
        ix = completion_index(pod)
        if status_of(pod).get("phase") == "Succeeded" and uid not in sctx.uncounted_failed:
            if indexed:
                if ix != UNKNOWN_COMPLETION_INDEX and ix < total and not sctx.prev_succeeded_indexes.has(ix):
                    new_indexes.append(ix)
                    needs_flush = True
            elif uid not in sctx.uncounted_succeeded:
                succeeded_uids.append(uid)
                needs_flush = True
        elif (
            (failed or (finishing and not is_success_criteria_met_condition(sctx.finished_condition)))
            and uid not in sctx.uncounted_failed
            and (not indexed or (ix != UNKNOWN_COMPLETION_INDEX and ix < total))
            and (policy is None or match_pod_failure_policy(policy, pod).count_failed)
        ):
            # A Job being failed counts every unfinished pod as failed.
            failed_uids.append(uid)
            needs_flush = True
        if len(new_indexes) + len(succeeded_uids) + len(failed_uids) >= MAX_UNCOUNTED_PODS:
            full = True  # the status and pod updates bring the Job back for the rest
            break
    uncounted["succeeded"], uncounted["failed"] = succeeded_uids, failed_uids
    return new_indexes, needs_flush, full


async def track_job_status_and_remove_finalizers(parts: JobParts, sctx: SyncJobCtx, needs_flush: bool) -> None:
    """Steps 1-4 of the module docstring for one sync."""
    job = sctx.job
    if is_indexed(job):
        sctx.pods = by_completion_index(sctx.pods)  # completed indexes are introduced in order
    with_finalizer = {
        pod_uid(p) for p in sctx.pods if has_tracking_finalizer(p) and pod_uid(p) not in sctx.expected_rm_finalizers
    }
    if clean_uncounted_pods_without_finalizers(job, with_finalizer):
        needs_flush = True
    to_remove: list[Obj] = []
    new_indexes, changed, full = _count_finished_pods(sctx, to_remove)
    needs_flush = needs_flush or changed
    status = job["status"]
    if is_indexed(job):
        sctx.succeeded_indexes = sctx.succeeded_indexes.with_ordered_indexes(sorted(set(new_indexes)))
        text = str(sctx.succeeded_indexes)
        if text != (status.get("completedIndexes") or ""):
            needs_flush = True
        status["succeeded"] = sctx.succeeded_indexes.total()
        status["completedIndexes"] = text
        failed_text = None if sctx.failed_indexes is None else str(sctx.failed_indexes)
        if status.get("failedIndexes") != failed_text:
            if failed_text is None:
                status.pop("failedIndexes", None)
            else:
                status["failedIndexes"] = failed_text
            needs_flush = True
    now = parts.clock.now()
    finished = sctx.finished_condition
    conditions: list[Obj] = status.setdefault("conditions", [])
    if finished is not None and finished.get("type") == JOB_FAILURE_TARGET:
        conditions.append(finished)  # the interim condition goes out before the finalizers are removed
        needs_flush = True
        sctx.finished_condition = new_condition(
            JOB_FAILED, "True", str(finished.get("reason") or ""), str(finished.get("message") or ""), now
        )
    elif is_success_criteria_met_condition(finished):
        assert finished is not None
        if has_success_criteria_met_condition(job) is None:
            conditions.append(finished)
            needs_flush = True
        sctx.finished_condition = new_condition(
            JOB_COMPLETE, "True", str(finished.get("reason") or ""), str(finished.get("message") or ""), now
        )
    needs_flush = await _flush_and_remove_finalizers(parts, sctx, to_remove, with_finalizer, needs_flush)
    job_finished = not full and enact_job_finished(sctx, parts.clock.now())
    if job_finished:
        needs_flush = True
    if needs_flush:
        sctx.job = await _update_status(parts, sctx.job)
        if job_finished and sctx.finished_condition is not None:
            await record_job_finished(parts, sctx.job, sctx.finished_condition)


def enact_job_finished(sctx: SyncJobCtx, now: float) -> bool:
    """Set the terminal condition once no pod is uncounted or terminating (upstream ``enactJobFinished``)."""
    cond = sctx.finished_condition
    if cond is None:
        return False
    job = sctx.job
    uncounted = _uncounted(job)
    if uids(uncounted.get("succeeded")) or uids(uncounted.get("failed")):
        return False
    if sctx.terminating > 0:
        return False
    status = job["status"]
    conditions: list[Obj] = status.setdefault("conditions", [])
    ensure_condition_status(
        conditions,
        str(cond["type"]),
        str(cond["status"]),
        str(cond.get("reason") or ""),
        str(cond.get("message") or ""),
        now,
    )
    if cond["type"] == JOB_COMPLETE:
        status["completionTime"] = cond["lastTransitionTime"]
    return True


async def record_job_finished(parts: JobParts, job: Obj, cond: Any) -> None:
    if cond.get("type") == JOB_COMPLETE:
        want = completions(job)
        if (
            spec_of(job).get("completions") is not None
            and want is not None
            and int(status_of(job).get("succeeded") or 0) > want
        ):
            await parts.recorder.event(
                job,
                EVENT_TYPE_WARNING,
                "TooManySucceededPods",
                "Too many succeeded pods running after completion count reached",
            )
        await parts.recorder.event(job, EVENT_TYPE_NORMAL, "Completed", "Job completed")
    else:
        await parts.recorder.event(
            job, EVENT_TYPE_WARNING, str(cond.get("reason") or ""), str(cond.get("message") or "")
        )
