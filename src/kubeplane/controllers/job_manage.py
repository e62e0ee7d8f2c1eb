"""Creating and deleting a Job's pods (upstream ``manageJob``, ``deleteJobPods``, ``deleteActivePods``,
``activePodsForRemoval`` and the pod creation of ``job_controller.go``).

``manage_job`` either deletes or creates in one sync, never both (deletion wins):

* suspended: delete every active pod;
* too many active pods (or, Indexed, duplicate / out-of-range / index-less pods): delete the surplus, the
  least advanced first (not ready < ready, unscheduled < scheduled, pending < running);
* too few: unless the pod-failure backoff (:mod:`.job_backoff`) still runs, create the missing pods (Indexed:
  the lowest pending indexes) in slow-start batches, at most 500 per sync; with podReplacementPolicy Failed
  terminating pods still count as present.

Every pod is built by :func:`build_pod` (template copy, index annotation/label/hostname/env, the tracking
finalizer, then :attr:`JobParts.pod_mutators`), the one place pods of a Job are made.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.api.views import meta_of, spec_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.base import key_of
from kubeplane.controllers.controller_utils import (
    NAMESPACE_TERMINATING_CAUSE,
    SLOW_START_INITIAL_BATCH_SIZE,
    get_pods_prefix,
    has_status_cause,
    new_controller_ref,
    sort_active_pods_with_ranks,
)
from kubeplane.controllers.job_backoff import remaining_time_per_index
from kubeplane.controllers.job_context import JobParts, SyncJobCtx
from kubeplane.controllers.job_indexed import (
    UNKNOWN_COMPLETION_INDEX,
    Intervals,
    add_completion_index_env,
    by_completion_index,
    completion_index,
    first_pending_indexes,
    indexes_of,
    new_index_failure_counts,
    pod_generate_name_with_index,
    template_for_index,
)
from kubeplane.controllers.job_util import (
    API_VERSION,
    INDEX_FAILURE_COUNT_ANNOTATION,
    INDEX_IGNORED_FAILURE_COUNT_ANNOTATION,
    JOB_TRACKING_FINALIZER,
    KIND,
    completions,
    has_backoff_limit_per_index,
    is_indexed,
    only_replace_failed_pods,
    parallelism,
    remove_tracking_finalizer_patch,
    suspended,
)
from kubeplane.controllers.podutil import filter_terminating_pods, is_pod_ready

__all__ = ["MAX_POD_CREATE_DELETE_PER_SYNC", "SYNC_JOB_BATCH_PERIOD", "build_pod", "manage_job"]

log = logging.getLogger("kubeplane.controllers.job")

MAX_POD_CREATE_DELETE_PER_SYNC = 500
SYNC_JOB_BATCH_PERIOD = 1.0
"""Pod events and backoff requeues wait at least this long, batching many pod updates into one sync."""


def _sorted_for_removal(pods: Sequence[Obj]) -> list[Obj]:
    return sort_active_pods_with_ranks(pods, [0] * len(pods), None)


def active_pods_for_removal(job: Mapping[str, Any], pods: Sequence[Obj], rm_at_least: int) -> list[Obj]:
    """Pods to delete: for an Indexed Job first every pod without a valid index and all but one pod of each
    repeated index, then the least advanced of the rest until ``rm_at_least`` (upstream
    ``activePodsForRemoval``)."""
    rm: list[Obj] = []
    left: list[Obj] = list(pods)
    if is_indexed(job):
        total = completions(job) or 0
        by_index: dict[int, list[Obj]] = {}
        left = []
        for pod in by_completion_index(pods):
            ix = completion_index(pod)
            if ix == UNKNOWN_COMPLETION_INDEX or ix >= total:
                rm.append(pod)
            else:
                by_index.setdefault(ix, []).append(pod)
        for group in by_index.values():
            ordered = _sorted_for_removal(group) if len(group) > 1 else group
            rm.extend(ordered[:-1])
            left.append(ordered[-1])
    if len(rm) < rm_at_least:
        rm.extend(_sorted_for_removal(left)[: rm_at_least - len(rm)])
    return rm


def build_pod(
    parts: JobParts, job: Obj, template: Mapping[str, Any], index: int | None, replaced: Obj | None
) -> tuple[Obj, str]:
    """The pod template for one new pod of ``job`` and its generateName.

    Indexed: the completion-index annotation and label, hostname ``<job>-<index>``, generateName
    ``<job>-<index>-`` and, with backoffLimitPerIndex, the index's failure counts carried over from the pod it
    replaces. Then every :attr:`JobParts.pod_mutators` hook (gang scheduling adds ``spec.schedulingGroup``)."""
    name = str(meta_of(job).get("name") or "")
    generate_name = get_pods_prefix(name)
    out = copy.deepcopy(dict(template))
    if index is not None:
        out = template_for_index(out, name, index)
        generate_name = pod_generate_name_with_index(name, index)
        if has_backoff_limit_per_index(job):
            failures, ignored = new_index_failure_counts(job, replaced)
            annotations = out["metadata"]["annotations"]
            annotations[INDEX_FAILURE_COUNT_ANNOTATION] = str(failures)
            if ignored > 0:
                annotations[INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
    for mutate in parts.pod_mutators:
        mutate(job, out, index)
    return out, generate_name


async def _create_one(
    parts: JobParts, job: Obj, template: Mapping[str, Any], index: int | None, replaced: Obj | None
) -> None:
    namespace = str(meta_of(job).get("namespace") or "")
    pod_template, generate_name = build_pod(parts, job, template, index, replaced)
    ref = new_controller_ref(job, api_version=API_VERSION, kind=KIND)
    await parts.pod_control.create_pods(namespace, pod_template, job, ref, generate_name=generate_name)


async def delete_job_pods(
    parts: JobParts, job: Obj, key: str, pods: Sequence[Obj]
) -> tuple[int, int, BaseException | None]:
    """Remove the tracking finalizer of each pod, then delete it (upstream ``deleteJobPods``); returns (ready
    pods deleted, pods deleted, first error). Expectations must already count these deletions."""
    namespace = str(meta_of(job).get("namespace") or "")

    async def delete(pod: Obj) -> tuple[bool, bool, BaseException | None]:
        name = str(meta_of(pod).get("name") or "")
        try:
            patch = remove_tracking_finalizer_patch(pod)
            if patch is not None:
                try:
                    await parts.pod_control.patch_pod(namespace, name, patch)
                except Exception as exc:
                    raise RuntimeError(f"removing completion finalizer: {exc}") from exc
            await parts.pod_control.delete_pod(namespace, name, job)
        except Exception as exc:
            parts.expectations.deletion_observed(key)  # it will not be observed
            cause = exc.__cause__ if isinstance(exc, RuntimeError) and exc.__cause__ is not None else exc
            if isinstance(cause, NotFoundError):
                return True, is_pod_ready(pod), None
            log.info("failed to delete pod %s/%s of job %s: %s", namespace, name, key, exc)
            return False, False, exc
        return True, is_pod_ready(pod), None

    results = await asyncio.gather(*(delete(p) for p in pods))
    deleted = sum(1 for ok, _, _ in results if ok)
    ready = sum(1 for ok, was_ready, _ in results if ok and was_ready)
    errors = [e for _, _, e in results if e is not None]
    return ready, deleted, (errors[0] if errors else None)


async def delete_active_pods(parts: JobParts, job: Obj, pods: Sequence[Obj]) -> tuple[int, int, BaseException | None]:
    """Delete pods keeping their finalizers (the status tracking removes them after counting) (upstream
    ``deleteActivePods``); returns (ready pods deleted, pods deleted, first error)."""
    namespace = str(meta_of(job).get("namespace") or "")

    async def delete(pod: Obj) -> BaseException | None:
        try:
            await parts.pod_control.delete_pod(namespace, str(meta_of(pod).get("name") or ""), job)
        except NotFoundError:
            return None
        except Exception as exc:
            return exc
        return None

    results = await asyncio.gather(*(delete(p) for p in pods))
    errors = [e for e in results if e is not None]
    ready = sum(1 for p in pods if is_pod_ready(p))
    return ready, len(pods) - len(errors), (errors[0] if errors else None)


def _non_pending_indexes(sctx: SyncJobCtx) -> Intervals:
    non_pending = sctx.succeeded_indexes.with_ordered_indexes(sorted(indexes_of(sctx.active_pods)))
    if only_replace_failed_pods(sctx.job):
        non_pending = non_pending.with_ordered_indexes(sorted(indexes_of(filter_terminating_pods(sctx.pods))))
    if sctx.failed_indexes is not None:
        non_pending = non_pending.merge(sctx.failed_indexes)
    return non_pending


def _creatable_indexes(parts: JobParts, indexes: list[int], delayed: Mapping[int, Obj]) -> tuple[list[int], float]:
    """With backoffLimitPerIndex: the indexes whose own backoff has passed, or else the shortest remaining wait
    (upstream ``getPodCreationInfoForIndependentIndexes``)."""
    now = parts.clock.now()
    ready: list[int] = []
    shortest: float | None = None
    for ix in indexes:
        remaining = remaining_time_per_index(now, delayed.get(ix))
        if remaining == 0:
            ready.append(ix)
        elif shortest is None or remaining < shortest:
            shortest = remaining
    return (ready, 0.0) if ready else (ready, shortest or 0.0)


async def manage_job(parts: JobParts, sctx: SyncJobCtx) -> tuple[int, BaseException | None]:
    """Create or delete pods towards the wanted number of active pods; returns (active pods after this,
    the first error). Changes ``sctx.ready`` and ``sctx.terminating`` for the pods it deletes."""
    job = sctx.job
    key = key_of(job)
    active = len(sctx.active_pods)

    if suspended(job):
        to_delete = active_pods_for_removal(job, sctx.active_pods, active)
        parts.expectations.expect_deletions(key, len(to_delete))
        ready, removed, error = await delete_job_pods(parts, job, key, to_delete)
        sctx.terminating += removed
        sctx.ready -= ready
        return active - removed, error

    want = completions(job)
    if want is None:
        # A work queue: once any pod succeeded, leave what runs running; else run `parallelism` pods.
        want_active = active if sctx.succeeded > 0 else parallelism(job)
    else:
        want_active = max(0, min(want - sctx.succeeded, parallelism(job)))

    to_delete = active_pods_for_removal(job, sctx.active_pods, max(0, active - want_active))
    to_delete = to_delete[:MAX_POD_CREATE_DELETE_PER_SYNC]
    if to_delete:
        parts.expectations.expect_deletions(key, len(to_delete))
        log.debug("too many pods running for job %s: deleting %d, target %d", key, len(to_delete), want_active)
        ready, removed, error = await delete_job_pods(parts, job, key, to_delete)
        sctx.terminating += removed
        sctx.ready -= ready
        return active - removed, error

    terminating = sctx.terminating if only_replace_failed_pods(job) else 0
    diff = want_active - terminating - active
    if diff <= 0:
        return active, None
    remaining = 0.0 if has_backoff_limit_per_index(job) else sctx.new_backoff_record.remaining_time(parts.clock.now())
    if remaining > 0:
        parts.enqueue_after(key, max(remaining, SYNC_JOB_BATCH_PERIOD))
        return 0, None  # upstream returns 0 active here; the status keeps the pods it counted next sync
    diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)

    indexes: list[int | None] = [None] * diff
    if is_indexed(job):
        to_add = first_pending_indexes(diff, want or 0, _non_pending_indexes(sctx))
        if has_backoff_limit_per_index(job):
            to_add, remaining = _creatable_indexes(parts, to_add, sctx.pods_with_delayed_deletion_per_index)
            if remaining > 0:
                parts.enqueue_after(key, max(remaining, SYNC_JOB_BATCH_PERIOD))
                return 0, None
        indexes = list(to_add)
        diff = len(indexes)
    if diff == 0:
        return active, None

    parts.expectations.expect_creations(key, diff)
    log.debug("too few pods running for job %s: need %d, creating %d", key, want_active, diff)
    template: Obj = copy.deepcopy(dict(spec_of(job).get("template") or {}))
    if is_indexed(job):
        add_completion_index_env(template)
    tmeta = template.setdefault("metadata", {})
    finalizers = list(tmeta.get("finalizers") or [])
    if JOB_TRACKING_FINALIZER not in finalizers:
        finalizers.append(JOB_TRACKING_FINALIZER)
    tmeta["finalizers"] = finalizers

    active += diff
    errors: list[BaseException] = []
    batch = min(diff, SLOW_START_INITIAL_BATCH_SIZE)
    pending = list(indexes)
    while diff > 0:
        chunk, pending = pending[:batch], pending[batch:]
        replaced = sctx.pods_with_delayed_deletion_per_index
        results = await asyncio.gather(
            *(_create_one(parts, job, template, ix, replaced.get(ix) if ix is not None else None) for ix in chunk),
            return_exceptions=True,
        )
        failed_now = 0
        for result in results:
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException):
                if has_status_cause(result, NAMESPACE_TERMINATING_CAUSE):
                    continue  # every create fails until the namespace is gone; upstream ignores it
                parts.expectations.creation_observed(key)
                active -= 1
                failed_now += 1
                errors.append(result)
        skipped = diff - batch
        if failed_now and skipped > 0:
            # Slow start: a failed batch stops the rest; they will not be observed.
            active -= skipped
            for _ in range(skipped):
                parts.expectations.creation_observed(key)
            break
        diff -= batch
        batch = min(2 * batch, diff)
    return active, (errors[0] if errors else None)
