"""The Job controller: run a Job's pods to completion (upstream ``pkg/controller/job/job_controller.go``).

One sync of ``namespace/name`` (upstream ``syncJob``):

1. Read the Job; gone -> forget its expectations and backoff; finished, or ``spec.managedBy`` another
   controller -> nothing to do.
2. Claim its pods (adopting orphans adds the ``batch.kubernetes.io/job-tracking`` finalizer) and count them:
   active, ready, terminating, and the newly succeeded / failed pods (failures a podFailurePolicy Ignore rule
   matches do not count).
3. Decide whether it is finishing: an interim ``SuccessCriteriaMet`` or ``FailureTarget`` already written; a
   podFailurePolicy FailJob rule (reason PodFailurePolicy); failures past ``backoffLimit`` (or OnFailure
   restarts reaching it) -> BackoffLimitExceeded "Job has reached the specified backoff limit";
   ``activeDeadlineSeconds`` passed -> DeadlineExceeded "Job was active longer than specified deadline";
   Indexed with backoffLimitPerIndex: more failed indexes than ``maxFailedIndexes`` -> MaxFailedIndexesExceeded,
   or every index finished with some failed -> FailedIndexes; a successPolicy rule -> SuccessCriteriaMet
   (reason SuccessPolicy).
4. Finishing: delete the active pods. Else (expectations satisfied, not being deleted) :func:`manage_job`
   creates or deletes pods, and the Job is complete once ``completions`` pods (indexes) succeeded — or, without
   completions, once any succeeded and none is active — with reason CompletionsReached "Reached expected number
   of succeeded pods". The Suspended condition follows ``spec.suspend`` (events Suspended / Resumed; resuming
   resets ``startTime``).
5. :func:`track_job_status_and_remove_finalizers` counts finished pods through the finalizers and sets the
   terminal condition (see :mod:`.job_status`).

Pod events queue the Job after the 1 s batching period; Job creations, deletions and spec changes queue it at
once; retries back off 1 s doubling to 1 min. Orphaned pods that still carry the tracking finalizer (their Job
is gone or finished) have it removed by a second worker. Everything timed uses the injected clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Mapping
from typing import Any, ClassVar

from kubeplane.api import labels as apilabels
from kubeplane.api import meta as apimeta
from kubeplane.api.views import controller_ref_of, meta_of, spec_of, status_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.client.workqueue import (
    ExponentialBackoffConfig,
    ItemExponentialFailureRateLimiter,
    QueueShutDown,
    RateLimitingQueue,
)
from kubeplane.controllers.controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
from kubeplane.controllers.controller_utils import (
    POD_CONTROLLER_UID_INDEX,
    PodControl,
    filter_pods_by_owner,
    is_controlled_by,
    pod_controller_uid_index,
)
from kubeplane.controllers.expectations import ControllerExpectations
from kubeplane.controllers.job_backoff import BackoffStore, get_finished_time
from kubeplane.controllers.job_context import JobParts, SyncJobCtx
from kubeplane.controllers.job_indexed import (
    UNKNOWN_COMPLETION_INDEX,
    completion_index,
    failed_indexes,
    index_absolute_failure_count,
    indexes_of,
    pod_uid,
    succeeded_indexes,
)
from kubeplane.controllers.job_manage import SYNC_JOB_BATCH_PERIOD, delete_active_pods, manage_job
from kubeplane.controllers.job_pod_failure_policy import match_pod_failure_policy
from kubeplane.controllers.job_podgroups import ensure_pod_group, find_workload, set_scheduling_group
from kubeplane.controllers.job_status import track_job_status_and_remove_finalizers
from kubeplane.controllers.job_success_policy import has_success_criteria_met_condition, match_success_policy
from kubeplane.controllers.job_tracking import FinalizerExpectations
from kubeplane.controllers.job_util import (
    API_VERSION,
    JOB_FAILED,
    JOB_FAILURE_TARGET,
    JOB_SUCCESS_CRITERIA_MET,
    JOB_SUSPENDED,
    JOB_TRACKING_FINALIZER,
    KIND,
    REASON_BACKOFF_LIMIT_EXCEEDED,
    REASON_COMPLETIONS_REACHED,
    REASON_DEADLINE_EXCEEDED,
    REASON_FAILED_INDEXES,
    REASON_MAX_FAILED_INDEXES_EXCEEDED,
    REASON_POD_FAILURE_POLICY,
    REASON_SUCCESS_POLICY,
    backoff_limit,
    completions,
    ensure_condition_status,
    has_backoff_limit_per_index,
    has_tracking_finalizer,
    is_indexed,
    is_job_finished,
    is_pod_failed,
    managed_by_external_controller,
    new_condition,
    remove_tracking_finalizer_patch,
    suspended,
    uids,
)
from kubeplane.controllers.podutil import filter_active_pods, is_pod_ready, is_pod_terminating, parse_timestamp

from .base import Controller, ControllerContext, key_of, split_key

__all__ = ["JobController"]

log = logging.getLogger("kubeplane.controllers.job")

API_BACKOFF = ExponentialBackoffConfig(base_delay=1.0, max_delay=60.0)
"""Retries of a failed sync (upstream ``DefaultJobApiBackOff`` 1 s, ``MaxJobApiBackOff`` 1 min)."""


class JobController(Controller):
    """See the module docstring. ``pod_mutators`` (on :attr:`parts`) is the hook for changing pods as they are
    created (gang scheduling's ``schedulingGroup``)."""

    name: ClassVar[str] = "job"
    workers: ClassVar[int] = 5  # upstream --concurrent-job-syncs

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.queue = RateLimitingQueue(clock=ctx.clock, rate_limiter=ItemExponentialFailureRateLimiter(API_BACKOFF))
        self.orphan_queue: RateLimitingQueue[str] = RateLimitingQueue(
            clock=ctx.clock, rate_limiter=ItemExponentialFailureRateLimiter(API_BACKOFF)
        )
        self.jobs_resource = ctx.client.resource("jobs")
        self.job_informer = ctx.informers.informer_for(self.jobs_resource)
        self.pod_informer = ctx.informers.informer_for(
            "pods", indexers={POD_CONTROLLER_UID_INDEX: pod_controller_uid_index}
        )
        self.job_lister = self.job_informer.lister()
        self.pod_lister = self.pod_informer.lister()
        self.recorder = ctx.recorder("job-controller")
        self.expectations = ControllerExpectations(ctx.clock)
        self.finalizer_expectations = FinalizerExpectations()
        self.backoff_store = BackoffStore()
        self.pod_control = PodControl(ctx.client, self.recorder)
        self.parts = JobParts(
            client=ctx.client,
            jobs=self.jobs_resource,
            pod_control=self.pod_control,
            recorder=self.recorder,
            clock=ctx.clock,
            expectations=self.expectations,
            finalizer_expectations=self.finalizer_expectations,
            backoff_store=self.backoff_store,
            enqueue_after=self.queue.add_after,
        )
        self.workload_lister = ctx.informers.informer_for("workloads").lister()
        self.pod_groups: dict[str, str] = {}
        """Job uid -> the PodGroup its new pods join (gang scheduling, :mod:`.job_podgroups`)."""
        self.parts.pod_mutators.append(self._set_scheduling_group)
        self.job_informer.add_event_handler(
            on_add=self._add_job, on_update=self._update_job, on_delete=self._delete_job
        )
        self.pod_informer.add_event_handler(
            on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod_final
        )

    # --- queueing ------------------------------------------------------------------------------------------

    def _enqueue_batched(self, job: Mapping[str, Any]) -> None:
        self.queue.add_after(key_of(job), SYNC_JOB_BATCH_PERIOD)

    def _enqueue_orphan_pod(self, pod: Mapping[str, Any]) -> None:
        self.orphan_queue.add(key_of(pod))

    # --- event handlers ------------------------------------------------------------------------------------

    def _resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        if ref.get("kind") != KIND:
            return None
        job = self.job_lister.get(namespace, str(ref.get("name") or ""))
        if job is None or meta_of(job).get("uid") != ref.get("uid"):
            return None
        return job

    def _get_pod_jobs(self, pod: Obj) -> list[Obj]:
        pod_labels = meta_of(pod).get("labels") or {}
        if not pod_labels:
            return []
        found = []
        for job in self.job_lister.list(meta_of(pod).get("namespace") or ""):
            try:
                selector = apilabels.label_selector_as_selector(spec_of(job).get("selector"))
            except apilabels.SelectorError:
                continue
            if not selector.empty() and selector.matches(pod_labels):
                found.append(job)
        if len(found) > 1:
            log.warning("user error! more than one job is selecting pods with labels: %s", pod_labels)
        return found

    def _add_pod(self, pod: Obj) -> None:
        if meta_of(pod).get("deletionTimestamp"):
            self._delete_pod(pod, final=False)  # seen first while being deleted: not a creation observation
            return
        ref = controller_ref_of(pod)
        if ref is not None:
            job = self._resolve_controller_ref(str(meta_of(pod).get("namespace") or ""), ref)
            if job is None:
                return
            self.expectations.creation_observed(key_of(job))
            self._enqueue_batched(job)
            return
        if has_tracking_finalizer(pod):
            self._enqueue_orphan_pod(pod)
        for job in self._get_pod_jobs(pod):
            self._enqueue_batched(job)

    def _update_pod(self, old: Obj, cur: Obj) -> None:
        if meta_of(cur).get("resourceVersion") == meta_of(old).get("resourceVersion"):
            return
        if meta_of(cur).get("deletionTimestamp"):
            self._delete_pod(cur, final=False)
            return
        namespace = str(meta_of(cur).get("namespace") or "")
        finalizer_removed = not has_tracking_finalizer(cur)
        cur_ref, old_ref = controller_ref_of(cur), controller_ref_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            old_job = self._resolve_controller_ref(namespace, old_ref)
            if old_job is not None:
                if finalizer_removed:
                    self.finalizer_expectations.finalizer_removal_observed(key_of(old_job), pod_uid(cur))
                self._enqueue_batched(old_job)
        if cur_ref is not None:
            job = self._resolve_controller_ref(namespace, cur_ref)
            if job is None:
                return
            if finalizer_removed:
                self.finalizer_expectations.finalizer_removal_observed(key_of(job), pod_uid(cur))
            self._enqueue_batched(job)
            return
        if has_tracking_finalizer(cur):
            self._enqueue_orphan_pod(cur)
        if (meta_of(cur).get("labels") or {}) != (meta_of(old).get("labels") or {}) or ref_changed:
            for job in self._get_pod_jobs(cur):
                self._enqueue_batched(job)

    def _delete_pod_final(self, pod: Obj) -> None:
        self._delete_pod(pod, final=True)

    def _delete_pod(self, pod: Obj, *, final: bool) -> None:
        ref = controller_ref_of(pod)
        has_finalizer = has_tracking_finalizer(pod)
        if ref is None:
            if has_finalizer:
                self._enqueue_orphan_pod(pod)  # the GC may have removed the reference to a Job
            return
        job = self._resolve_controller_ref(str(meta_of(pod).get("namespace") or ""), ref)
        if job is None or is_job_finished(job):
            if has_finalizer:
                self._enqueue_orphan_pod(pod)  # syncJob will not remove this finalizer
            return
        key = key_of(job)
        self.expectations.deletion_observed(key)
        if final or not has_finalizer:
            self.finalizer_expectations.finalizer_removal_observed(key, pod_uid(pod))
        self._enqueue_batched(job)

    def _add_job(self, job: Obj) -> None:
        self.enqueue(job)

    def _update_job(self, old: Obj, cur: Obj) -> None:
        key = key_of(cur)
        if meta_of(cur).get("generation") == meta_of(old).get("generation"):
            self._enqueue_batched(cur)  # a status write, typically after pod events
        else:
            self.enqueue_key(key)  # a spec change: at once
        if is_job_finished(cur):
            self._cleanup_pod_finalizers(cur)  # a backup: finished Jobs should have none left
        start = parse_timestamp(status_of(cur).get("startTime"))
        cur_ads = spec_of(cur).get("activeDeadlineSeconds")
        if start is None or cur_ads is None:
            return
        old_ads = spec_of(old).get("activeDeadlineSeconds")
        if old_ads is None or int(old_ads) != int(cur_ads):
            self.queue.add_after(key, float(cur_ads) - (self.clock.now() - start))

    # --- gang scheduling (upstream job_scheduling_manager.go) ------------------------------------------------

    async def _ensure_pod_group(self, job: Obj, pods: list[Obj]) -> None:
        """The Job's PodGroup from its Workload, when one in the namespace names the Job as its controller (the
        informer answers that without a request; only then does :func:`ensure_pod_group` read and create). Once
        found, a Job's group is remembered: its name is fixed by the Workload and template, so later syncs make
        no request for it."""
        uid = str(meta_of(job).get("uid") or "")
        if uid in self.pod_groups:
            return
        namespace = str(meta_of(job).get("namespace") or "")
        if find_workload(job, self.workload_lister.list(namespace)) is None:
            return
        group = await ensure_pod_group(self.client, job, pods)
        if group is not None:
            self.pod_groups[uid] = group

    def _set_scheduling_group(self, job: Obj, pod: Obj, index: int | None) -> None:
        set_scheduling_group(pod, self.pod_groups.get(str(meta_of(job).get("uid") or "")))

    def _delete_job(self, job: Obj) -> None:
        self.pod_groups.pop(str(meta_of(job).get("uid") or ""), None)
        self.enqueue(job)
        self._cleanup_pod_finalizers(job)

    def _cleanup_pod_finalizers(self, job: Obj) -> None:
        try:
            selector = apilabels.label_selector_as_selector(spec_of(job).get("selector"))
        except apilabels.SelectorError:
            return
        for pod in self.pod_lister.list(meta_of(job).get("namespace") or "", selector):
            if is_controlled_by(pod, job) and has_tracking_finalizer(pod):
                self._enqueue_orphan_pod(pod)

    # --- running -------------------------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        orphan = asyncio.ensure_future(self._orphan_worker())
        try:
            await super().run(workers)
        finally:
            self.orphan_queue.shut_down()
            orphan.cancel()
            await asyncio.gather(orphan, return_exceptions=True)

    async def _orphan_worker(self) -> None:
        while True:
            try:
                key = await self.orphan_queue.get()
            except QueueShutDown:
                return
            try:
                await self.sync_orphan_pod(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("job: syncing orphan pod %r failed (retrying): %s", key, exc)
                self.orphan_queue.add_rate_limited(key)
            else:
                self.orphan_queue.forget(key)
            finally:
                self.orphan_queue.done(key)

    async def sync_orphan_pod(self, key: str) -> None:
        """Remove the tracking finalizer of a pod no running Job of ours owns (upstream ``syncOrphanPod``)."""
        namespace, name = split_key(key)
        pod = self.pod_lister.get(namespace, name)
        if pod is None:
            return
        ref = controller_ref_of(pod)
        if ref is not None:
            if ref.get("kind") != KIND or ref.get("apiVersion") != API_VERSION:
                return  # owned by something that is not a batch/v1 Job
            job = self._resolve_controller_ref(namespace, ref)
            if job is not None and managed_by_external_controller(job) is not None:
                return
            if job is not None and not is_job_finished(job):
                return  # adopted
        patch = remove_tracking_finalizer_patch(pod)
        if patch is not None:
            with contextlib.suppress(NotFoundError):
                await self.pod_control.patch_pod(namespace, name, patch)

    # --- sync ----------------------------------------------------------------------------------------------

    async def get_pods_for_job(self, job: Obj) -> list[Obj]:
        """The Job's pods after adopting matching orphans (adding the tracking finalizer) and releasing pods that
        stop matching (upstream ``getPodsForJob``). Adopted pods are reported with the finalizer.

        Upstream lists every pod of the namespace; the candidates are only the Job's own pods and the orphans
        (pods another controller owns are never claimed), so they come from the controller-UID index, as the
        ReplicaSet controller's do: a sync costs the Job's pods, not the namespace's."""
        meta = meta_of(job)
        selector = apilabels.label_selector_as_selector(spec_of(job).get("selector"))
        pods = filter_pods_by_owner(self.pod_informer.indexer, job, include_orphaned_pods=True)

        async def fresh() -> Obj:
            got = await self.client.get(self.jobs_resource, str(meta["name"]), namespace=str(meta["namespace"]))
            if meta_of(got).get("uid") != meta.get("uid"):
                raise RuntimeError(
                    f"original Job {meta['namespace']}/{meta['name']} is gone: got uid "
                    f"{meta_of(got).get('uid')}, wanted {meta.get('uid')}"
                )
            return got

        manager = PodControllerRefManager(
            self.pod_control,
            job,
            selector,
            api_version=API_VERSION,
            kind=KIND,
            can_adopt=recheck_deletion_timestamp(fresh),
            finalizers=(JOB_TRACKING_FINALIZER,),
        )
        claimed = await manager.claim_pods(pods)
        out: list[Obj] = []
        for pod in claimed:
            owned = any(r.get("uid") == meta.get("uid") for r in meta_of(pod).get("ownerReferences") or ())
            if not owned and not has_tracking_finalizer(pod):
                adopted = copy.deepcopy(pod)
                adopted["metadata"]["finalizers"] = [*(meta_of(pod).get("finalizers") or []), JOB_TRACKING_FINALIZER]
                out.append(adopted)
            else:
                out.append(pod)
        return out

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        if not namespace or not name:
            raise ValueError(f'invalid job key "{key}": either namespace or name is missing')
        shared = self.job_lister.get(namespace, name)
        if shared is None:
            self.expectations.delete_expectations(key)
            self.finalizer_expectations.delete_expectations(key)
            self.backoff_store.remove(key)
            return
        if managed_by_external_controller(shared) is not None:
            return
        job: Obj = copy.deepcopy(shared)
        if is_job_finished(job):
            self.backoff_store.remove(key)
            return
        if spec_of(job).get("selector") is None:
            # Unreachable upstream (validation requires the selector the API server generates). Acting on such a
            # Job would create pods it can never claim, and replace them forever.
            log.warning("job %s has no selector; not syncing it", key)
            return
        mode = spec_of(job).get("completionMode")
        if mode not in (None, "NonIndexed", "Indexed"):
            await self.recorder.event(
                job, EVENT_TYPE_WARNING, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown"
            )
            return
        if not isinstance(job.get("status"), dict):
            job["status"] = {}
        status: Obj = job["status"]
        uncounted = status.get("uncountedTerminatedPods") or {}
        status["uncountedTerminatedPods"] = {k: list(v) for k, v in uncounted.items() if v}

        satisfied = self.expectations.satisfied_expectations(key)
        pods = await self.get_pods_for_job(job)
        active_pods = filter_active_pods(pods)
        sctx = SyncJobCtx(
            job=job,
            pods=pods,
            active_pods=active_pods,
            key=key,
            ready=sum(1 for p in active_pods if is_pod_ready(p)),
            terminating=sum(1 for p in pods if is_pod_terminating(p)),
            uncounted_succeeded=set(uids(uncounted.get("succeeded"))),
            uncounted_failed=set(uids(uncounted.get("failed"))),
            expected_rm_finalizers=self.finalizer_expectations.expected_uids(key),
        )
        active = len(active_pods)
        new_succeeded = self._valid_pods(
            sctx, sctx.uncounted_succeeded, lambda p: status_of(p).get("phase") == "Succeeded"
        )
        new_failed = self._valid_pods(sctx, sctx.uncounted_failed, lambda p: is_pod_failed(p, job))
        policy = spec_of(job).get("podFailurePolicy")
        counted_failed = [p for p in new_failed if match_pod_failure_policy(policy, p).count_failed]
        sctx.succeeded = int(status.get("succeeded") or 0) + len(new_succeeded) + len(sctx.uncounted_succeeded)
        sctx.failed = int(status.get("failed") or 0) + len(counted_failed) + len(sctx.uncounted_failed)

        await self._ensure_pod_group(job, sctx.pods)  # before startTime: a PodGroup is made for a new Job only
        now = self.clock.now()
        if not status.get("startTime") and not suspended(job):
            status["startTime"] = apimeta.format_time(now)
        sctx.new_backoff_record = self.backoff_store.new_record(key, new_succeeded, new_failed)

        self._decide_finished(sctx, now)
        if is_indexed(job):
            self._indexed_checks(sctx, now)

        suspend_changed = False
        manage_error: BaseException | None = None
        if sctx.finished_condition is not None:
            ready, deleted, manage_error = await delete_active_pods(self.parts, job, sctx.active_pods)
            if deleted != active or not satisfied:
                sctx.finished_condition = None  # finalizers or unseen pods may remain
            active -= deleted
            sctx.terminating += deleted
            sctx.ready -= ready
        else:
            manage_called = False
            if satisfied and not meta_of(job).get("deletionTimestamp"):
                active, manage_error = await manage_job(self.parts, sctx)
                manage_called = True
            want = completions(job)
            complete = sctx.succeeded > 0 and active == 0 if want is None else sctx.succeeded >= want and active == 0
            if complete:
                sctx.finished_condition = new_condition(
                    JOB_SUCCESS_CRITERIA_MET, "True", REASON_COMPLETIONS_REACHED,
                    "Reached expected number of succeeded pods", self.clock.now(),
                )  # fmt: skip
            elif manage_called:
                suspend_changed = await self._update_suspended_condition(job)

        needs_update = (
            suspend_changed
            or active != int(status.get("active") or 0)
            or status.get("ready") != sctx.ready  # absent (nil) differs from 0, as upstream's ptr.Equal
            or status.get("terminating") != sctx.terminating
        )
        if active:
            status["active"] = active
        else:
            status.pop("active", None)
        status["ready"] = sctx.ready
        status["terminating"] = sctx.terminating
        try:
            await track_job_status_and_remove_finalizers(self.parts, sctx, needs_update)
        except Exception as exc:
            raise RuntimeError(f"tracking status: {exc}") from exc
        if manage_error is not None:
            raise manage_error

    def _valid_pods(self, sctx: SyncJobCtx, uncounted: set[str], accept: Any) -> list[Obj]:
        """Pods not yet counted (tracking finalizer, not uncounted, no removal pending), Indexed ones with a valid
        index, that ``accept`` takes (upstream ``getValidPodsWithFilter``)."""
        out = []
        total = completions(sctx.job) or 0
        for pod in sctx.pods:
            uid = pod_uid(pod)
            if not has_tracking_finalizer(pod) or uid in uncounted or uid in sctx.expected_rm_finalizers:
                continue
            if is_indexed(sctx.job):
                ix = completion_index(pod)
                if ix == UNKNOWN_COMPLETION_INDEX or ix >= total:
                    continue
            if accept(pod):
                out.append(pod)
        return out

    def _decide_finished(self, sctx: SyncJobCtx, now: float) -> None:
        job = sctx.job
        sctx.finished_condition = has_success_criteria_met_condition(job)
        if sctx.finished_condition is None:
            target = next(
                (c for c in status_of(job).get("conditions") or () if c.get("type") == JOB_FAILURE_TARGET), None
            )
            if target is not None and target.get("status") == "True":
                sctx.finished_condition = new_condition(
                    JOB_FAILED, "True", str(target.get("reason") or ""), str(target.get("message") or ""), now
                )
            elif (message := self._fail_job_message(job, sctx.pods)) is not None:
                sctx.finished_condition = new_condition(
                    JOB_FAILURE_TARGET, "True", REASON_POD_FAILURE_POLICY, message, now
                )
        if sctx.finished_condition is not None:
            return
        if sctx.failed > backoff_limit(job) or _past_backoff_limit_on_failure(job, sctx.pods):
            sctx.finished_condition = new_condition(
                JOB_FAILURE_TARGET,
                "True",
                REASON_BACKOFF_LIMIT_EXCEEDED,
                "Job has reached the specified backoff limit",
                now,
            )
            return
        deadline = spec_of(job).get("activeDeadlineSeconds")
        start = parse_timestamp(status_of(job).get("startTime"))
        if deadline is None or suspended(job) or start is None:
            return
        if now - start >= float(deadline):
            sctx.finished_condition = new_condition(
                JOB_FAILURE_TARGET,
                "True",
                REASON_DEADLINE_EXCEEDED,
                "Job was active longer than specified deadline",
                now,
            )
        else:
            self.queue.add_after(sctx.key, float(deadline) - (now - start))

    @staticmethod
    def _fail_job_message(job: Obj, pods: list[Obj]) -> str | None:
        policy = spec_of(job).get("podFailurePolicy")
        if policy is None:
            return None
        for pod in pods:
            if is_pod_failed(pod, job):
                message = match_pod_failure_policy(policy, pod).fail_job_message
                if message is not None:
                    return message
        return None

    def _indexed_checks(self, sctx: SyncJobCtx, now: float) -> None:
        job = sctx.job
        total = completions(job) or 0
        sctx.prev_succeeded_indexes, sctx.succeeded_indexes = succeeded_indexes(job, sctx.pods, total)
        sctx.succeeded = sctx.succeeded_indexes.total()
        if has_backoff_limit_per_index(job):
            sctx.failed_indexes = failed_indexes(job, sctx.pods, total)
            if sctx.finished_condition is None:
                max_failed = spec_of(job).get("maxFailedIndexes")
                n_failed = sctx.failed_indexes.total()
                if max_failed is not None and n_failed > int(max_failed):
                    sctx.finished_condition = new_condition(
                        JOB_FAILURE_TARGET, "True", REASON_MAX_FAILED_INDEXES_EXCEEDED,
                        "Job has exceeded the specified maximal number of failed indexes", now,
                    )  # fmt: skip
                elif n_failed > 0 and n_failed + sctx.succeeded_indexes.total() >= total:
                    sctx.finished_condition = new_condition(
                        JOB_FAILURE_TARGET, "True", REASON_FAILED_INDEXES, "Job has failed indexes", now
                    )
            sctx.pods_with_delayed_deletion_per_index = self._pods_with_delayed_deletion(sctx)
        if sctx.finished_condition is None:
            message, met = match_success_policy(spec_of(job).get("successPolicy"), total, sctx.succeeded_indexes)
            if met:
                sctx.finished_condition = new_condition(
                    JOB_SUCCESS_CRITERIA_MET, "True", REASON_SUCCESS_POLICY, message, now
                )

    def _pods_with_delayed_deletion(self, sctx: SyncJobCtx) -> dict[int, Obj]:
        """Per index, the last failed pod kept (finalizer on) until its replacement exists, so the replacement can
        inherit its failure counts (upstream ``getPodsWithDelayedDeletionPerIndex``)."""
        active_indexes = indexes_of(sctx.active_pods)
        failed = sctx.failed_indexes
        kept: dict[int, Obj] = {}
        for pod in self._valid_pods(sctx, set(), lambda p: is_pod_failed(p, sctx.job)):
            ix = completion_index(pod)
            if sctx.succeeded_indexes.has(ix) or (failed is not None and failed.has(ix)) or ix in active_indexes:
                continue
            last = kept.get(ix)
            if last is None or (
                index_absolute_failure_count(last) <= index_absolute_failure_count(pod)
                and not get_finished_time(pod) < get_finished_time(last)
            ):
                kept[ix] = pod
        return kept

    async def _update_suspended_condition(self, job: Obj) -> bool:
        conditions: list[Obj] = job["status"].setdefault("conditions", [])
        now = self.clock.now()
        if suspended(job):
            # A suspended Job has no start: the API refuses to move startTime of an unsuspended Job
            # (ValidateJobUpdateStatus RejectStartTimeUpdateForUnsuspendedJob) but lets it go from unset to set,
            # so resuming below can restart activeDeadlineSeconds' count.
            cleared = job["status"].pop("startTime", None) is not None
            if ensure_condition_status(conditions, JOB_SUSPENDED, "True", "JobSuspended", "Job suspended", now):
                await self.recorder.event(job, EVENT_TYPE_NORMAL, "Suspended", "Job suspended")
                return True
            return cleared
        if ensure_condition_status(conditions, JOB_SUSPENDED, "False", "JobResumed", "Job resumed", now):
            await self.recorder.event(job, EVENT_TYPE_NORMAL, "Resumed", "Job resumed")
            # activeDeadlineSeconds counts continuous activity: resuming restarts it.
            job["status"]["startTime"] = apimeta.format_time(now)
            return True
        return False


def _past_backoff_limit_on_failure(job: Obj, pods: list[Obj]) -> bool:
    """restartPolicy OnFailure: the container restarts of running/pending pods reach backoffLimit (upstream
    ``pastBackoffLimitOnFailure``)."""
    template_spec: Mapping[str, Any] = (spec_of(job).get("template") or {}).get("spec") or {}
    if template_spec.get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        pod_status = status_of(pod)
        if pod_status.get("phase") in ("Running", "Pending"):
            for key in ("initContainerStatuses", "containerStatuses"):
                restarts += sum(int(cs.get("restartCount") or 0) for cs in pod_status.get(key) or ())
    limit = backoff_limit(job)
    return restarts > 0 if limit == 0 else restarts >= limit
