"""The Deployment controller's sync (upstream ``pkg/controller/deployment/sync.go`` and ``progress.go``): the
API writes, the new ReplicaSet and revisions, scaling (proportional while a rollout is in progress), the
cleanup of old ReplicaSets, and the status with its Available and Progressing conditions.

:class:`DeploymentSync` is the base of :class:`~.deployment.DeploymentController`: it owns the listers and
resources the sync needs; the strategies (:mod:`.deployment_rolling`, :mod:`.deployment_recreate`) build on it
and the controller (:mod:`.deployment`) adds the event handlers and ``syncDeployment``. See
:mod:`.deployment` for the whole sync in upstream's order.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubeplane.api.views import (
    annotations_of,
    controller_ref_of,
    meta_of,
    name_of,
    namespace_of,
    spec_of,
    status_of,
    uid_of,
)
from kubeplane.client.errors import AlreadyExistsError, NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers import deployment_util as du
from kubeplane.controllers.base import Controller, ControllerContext, key_of
from kubeplane.controllers.controller_utils import (
    NAMESPACE_TERMINATING_CAUSE,
    compute_hash,
    error_message,
    has_status_cause,
    new_controller_ref,
)

__all__ = ["DeploymentSync", "calculate_status"]

log = logging.getLogger("kubeplane.controllers.deployment")

API_VERSION: Final = "apps/v1"
KIND: Final = "Deployment"
_COMPONENT: Final = "deployment-controller"
_STATUS_COUNTERS: Final = (
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
)


def _q(text: str) -> str:
    """Go's ``%q`` for the plain names that appear in condition messages."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _omit_empty(status: Mapping[str, Any]) -> Obj:
    """The status as the wire shows it: counters omitted when 0, conditions when empty (Go's omitempty);
    collisionCount and terminatingReplicas are pointers, kept whenever set."""
    out: Obj = {}
    for key, value in status.items():
        if value is None or (key in _STATUS_COUNTERS and not value) or (key == "conditions" and not value):
            continue
        out[key] = value
    return out


def calculate_status(
    all_rss: Sequence[Obj | None], new_rs: Obj | None, deployment: Mapping[str, Any], now: float
) -> Obj:
    """Upstream ``calculateStatus``: the counters from the ReplicaSets, the stored conditions, and the
    Available condition recomputed (``MinimumReplicasAvailable`` when at least replicas-maxUnavailable are
    available)."""
    available = du.status_count(all_rss, "availableReplicas")
    total = du.replica_count(all_rss)
    stored = status_of(deployment)
    status: Obj = {
        "observedGeneration": int(meta_of(deployment).get("generation") or 0),
        "replicas": du.status_count(all_rss, "replicas"),
        "updatedReplicas": du.status_count([new_rs], "replicas"),
        "readyReplicas": du.status_count(all_rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(total - available, 0),
        "terminatingReplicas": du.terminating_count(all_rss),
        "collisionCount": stored.get("collisionCount"),
        "conditions": [dict(c) for c in stored.get("conditions") or ()],
    }
    if available >= du.spec_replicas(deployment) - du.max_unavailable(deployment):
        condition = du.new_deployment_condition(
            du.AVAILABLE, "True", du.MINIMUM_REPLICAS_AVAILABLE, "Deployment has minimum availability.", now
        )
    else:
        condition = du.new_deployment_condition(
            du.AVAILABLE,
            "False",
            du.MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    du.set_deployment_condition(status, condition)
    return status


class DeploymentSync(Controller):
    """The sync steps every strategy shares; state is the listers (see the module docstring)."""

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.recorder = ctx.recorder(_COMPONENT)
        self._deployments = self.client.resource("deployments")
        self._replicasets = self.client.resource("replicasets")
        self.d_lister = ctx.informers.informer_for("deployments").lister()
        self.rs_lister = ctx.informers.informer_for("replicasets").lister()
        self.pod_lister = ctx.informers.informer_for("pods").lister()

    # --- API writes ---------------------------------------------------------------------------------------

    async def _update_status(self, d: Obj) -> None:
        """Write ``d``'s status (and annotations) through the status subresource; ``d`` then carries the new
        resourceVersion so a later write in the same sync does not conflict with this one."""
        namespace = namespace_of(d)
        d["status"] = _omit_empty(d.get("status") or {})
        updated = await self.client.update(self._deployments, d, namespace=namespace, subresource="status")
        d["metadata"] = updated.get("metadata") or d["metadata"]
        d["status"] = updated.get("status") or {}

    async def _scale_replica_set(self, rs: Obj, new_scale: int, d: Obj, operation: str) -> tuple[bool, Obj]:
        """Upstream ``scaleReplicaSet``: set the size and the desired/max-replicas annotations (written even when
        only they are stale); the ScalingReplicaSet event only when the size changed."""
        replicas = du.spec_replicas(d)
        maximum = replicas + du.max_surge(d)
        old_scale = du.spec_replicas(rs)
        size_changed = old_scale != new_scale
        if not size_changed and not du.replicas_annotations_need_update(rs, replicas, maximum):
            return False, rs
        rs_copy = copy.deepcopy(rs)
        rs_copy.setdefault("spec", {})["replicas"] = new_scale
        du.set_replicas_annotations(rs_copy, replicas, maximum)
        updated = await self.client.update(self._replicasets, rs_copy, namespace=namespace_of(rs_copy))
        if size_changed:
            await self.recorder.event(
                d,
                EVENT_TYPE_NORMAL,
                "ScalingReplicaSet",
                f"Scaled {operation} replica set {name_of(updated)} from {old_scale} to {new_scale}",
            )
        return size_changed, updated

    async def _scale_replica_set_and_record_event(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        if du.spec_replicas(rs) == new_scale:
            return False, rs
        operation = "up" if du.spec_replicas(rs) < new_scale else "down"
        return await self._scale_replica_set(rs, new_scale, d, operation)

    # --- revisions and the new ReplicaSet -------------------------------------------------------------------

    async def _get_all_replica_sets_and_sync_revision(
        self, d: Obj, rs_list: Sequence[Obj], create_if_not_existed: bool
    ) -> tuple[Obj | None, list[Obj]]:
        _, all_old = du.find_old_replica_sets(d, rs_list)
        new_rs = await self._get_new_replica_set(d, rs_list, all_old, create_if_not_existed)
        return new_rs, all_old

    async def _get_new_replica_set(
        self, d: Obj, rs_list: Sequence[Obj], old_rss: Sequence[Obj], create_if_not_existed: bool
    ) -> Obj | None:
        """Upstream ``getNewReplicaSet``: the ReplicaSet matching the template, its revision raised above every
        old one (a reused old ReplicaSet is a rollback: its previous revision goes to revision-history) and the
        Deployment's revision annotation synced to it; created when missing and asked to."""
        existing = du.find_new_replica_set(d, rs_list)
        new_revision = str(du.max_revision(old_rss) + 1)
        spec = spec_of(d)
        min_ready = int(spec.get("minReadySeconds") or 0)
        namespace = namespace_of(d)
        if existing is not None:
            rs_copy = copy.deepcopy(existing)
            annotations_updated = du.set_new_replica_set_annotations(d, rs_copy, new_revision, True)
            if annotations_updated or int(spec_of(rs_copy).get("minReadySeconds") or 0) != min_ready:
                rs_spec = rs_copy.setdefault("spec", {})
                if min_ready:
                    rs_spec["minReadySeconds"] = min_ready
                else:
                    rs_spec.pop("minReadySeconds", None)
                return await self.client.update(self._replicasets, rs_copy, namespace=namespace)
            needs_update = du.set_deployment_revision(d, annotations_of(rs_copy).get(du.REVISION_ANNOTATION, ""))
            status = d.setdefault("status", {})
            if du.has_progress_deadline(d) and du.get_deployment_condition(status, du.PROGRESSING) is None:
                du.set_deployment_condition(
                    status,
                    du.new_deployment_condition(
                        du.PROGRESSING,
                        "True",
                        du.FOUND_NEW_RS_REASON,
                        f"Found new replica set {_q(name_of(rs_copy))}",
                        self.clock.now(),
                    ),
                )
                needs_update = True
            if needs_update:
                await self._update_status(d)
            return rs_copy
        if not create_if_not_existed:
            return None

        template = copy.deepcopy(spec.get("template") or {})
        status = d.setdefault("status", {})
        pod_hash = compute_hash(template, status.get("collisionCount"))
        template.setdefault("metadata", {})["labels"] = du.clone_and_add_label(
            meta_of(template).get("labels"), du.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, pod_hash
        )
        new_rs: Obj = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{d['metadata']['name']}-{pod_hash}",
                "namespace": namespace,
                "ownerReferences": [new_controller_ref(d, api_version=API_VERSION, kind=KIND)],
                "labels": dict(template["metadata"]["labels"]),
            },
            "spec": {
                "replicas": 0,
                "selector": du.clone_selector_and_add_label(
                    spec.get("selector"), du.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, pod_hash
                ),
                "template": template,
            },
        }
        if min_ready:
            new_rs["spec"]["minReadySeconds"] = min_ready
        new_replicas = du.new_rs_new_replicas(d, [*old_rss, new_rs], new_rs)
        new_rs["spec"]["replicas"] = new_replicas
        du.set_new_replica_set_annotations(d, new_rs, new_revision, False)

        already_exists = False
        try:
            created = await self.client.create(self._replicasets, new_rs, namespace=namespace)
        except AlreadyExistsError:
            found = self.rs_lister.get(namespace, name_of(new_rs))
            if found is None:
                raise
            ref = controller_ref_of(found)
            if (
                ref is not None
                and ref.get("uid") == uid_of(d)
                and du.equal_ignore_hash(spec.get("template"), spec_of(found).get("template"))
            ):
                created, already_exists = found, True
            else:
                # A hash collision: bump collisionCount so the next sync computes a different name.
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                try:
                    await self._update_status(d)
                    log.info(
                        "found a hash collision for deployment %s/%s - bumping collisionCount to %d",
                        namespace,
                        d["metadata"]["name"],
                        status["collisionCount"],
                    )
                except Exception:  # the original error is what gets retried
                    log.debug("updating collisionCount failed", exc_info=True)
                raise
        except Exception as exc:
            if has_status_cause(exc, NAMESPACE_TERMINATING_CAUSE):
                raise
            msg = f"Failed to create new replica set {_q(name_of(new_rs))}: {error_message(exc)}"
            if du.has_progress_deadline(d):
                du.set_deployment_condition(
                    status,
                    du.new_deployment_condition(
                        du.PROGRESSING, "False", du.FAILED_RS_CREATE_REASON, msg, self.clock.now()
                    ),
                )
                try:
                    await self._update_status(d)
                except Exception:
                    log.debug("recording ReplicaSetCreateError failed", exc_info=True)
            await self.recorder.event(d, EVENT_TYPE_WARNING, du.FAILED_RS_CREATE_REASON, msg)
            raise
        if not already_exists and new_replicas > 0:
            await self.recorder.event(
                d,
                EVENT_TYPE_NORMAL,
                "ScalingReplicaSet",
                f"Scaled up replica set {name_of(created)} from 0 to {new_replicas}",
            )
        needs_update = du.set_deployment_revision(d, new_revision)
        if not already_exists and du.has_progress_deadline(d):
            du.set_deployment_condition(
                status,
                du.new_deployment_condition(
                    du.PROGRESSING,
                    "True",
                    du.NEW_REPLICA_SET_REASON,
                    f"Created new replica set {_q(name_of(created))}",
                    self.clock.now(),
                ),
            )
            needs_update = True
        if needs_update:
            await self._update_status(d)
        return created

    # --- sync modes ---------------------------------------------------------------------------------------

    async def _sync_status_only(self, d: Obj, rs_list: Sequence[Obj]) -> None:
        new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, False)
        await self._sync_deployment_status([*old_rss, new_rs], new_rs, d)

    async def _sync(self, d: Obj, rs_list: Sequence[Obj]) -> None:
        """Scaling events and paused Deployments: scale, clean up (paused only), refresh status."""
        new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, False)
        await self._scale(d, new_rs, old_rss)
        if spec_of(d).get("paused"):
            await self._cleanup_deployment(old_rss, d)
        await self._sync_deployment_status([*old_rss, new_rs], new_rs, d)

    async def _check_paused_conditions(self, d: Obj) -> None:
        """Mark a paused Deployment's progress Unknown (and resumed again) so pausing never counts against the
        progress deadline; a timed-out condition is left alone."""
        if not du.has_progress_deadline(d):
            return
        status = d.setdefault("status", {})
        cond = du.get_deployment_condition(status, du.PROGRESSING)
        if cond is not None and cond.get("reason") == du.TIMED_OUT_REASON:
            return
        paused_exists = cond is not None and cond.get("reason") == du.PAUSED_DEPLOY_REASON
        paused = bool(spec_of(d).get("paused"))
        if paused and not paused_exists:
            reason, msg = du.PAUSED_DEPLOY_REASON, "Deployment is paused"
        elif not paused and paused_exists:
            reason, msg = du.RESUMED_DEPLOY_REASON, "Deployment is resumed"
        else:
            return
        du.set_deployment_condition(
            status, du.new_deployment_condition(du.PROGRESSING, "Unknown", reason, msg, self.clock.now())
        )
        await self._update_status(d)

    async def _is_scaling_event(self, d: Obj, rs_list: Sequence[Obj]) -> bool:
        """An active ReplicaSet was last sized for a different ``spec.replicas``."""
        new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, False)
        replicas = du.spec_replicas(d)
        for rs in du.filter_active_replica_sets([*old_rss, new_rs]):
            desired = du.int_annotation(rs, du.DESIRED_REPLICAS_ANNOTATION)
            if desired is not None and desired != replicas:
                return True
        return False

    async def _scale(self, d: Obj, new_rs: Obj | None, old_rss: Sequence[Obj]) -> None:
        """Upstream ``scale``: one active ReplicaSet takes the whole size; a saturated new one makes the old ones
        go to 0; otherwise (RollingUpdate) the difference to replicas+maxSurge is spread proportionally."""
        replicas = du.spec_replicas(d)
        active_or_latest = du.find_active_or_latest(new_rs, old_rss)
        if active_or_latest is not None:
            if du.spec_replicas(active_or_latest) != replicas:
                await self._scale_replica_set_and_record_event(active_or_latest, replicas, d)
            return
        if du.is_saturated(d, new_rs):
            for old in du.filter_active_replica_sets(old_rss):
                await self._scale_replica_set_and_record_event(old, 0, d)
            return
        if not du.is_rolling_update(d):
            return
        all_rss = du.filter_active_replica_sets([*old_rss, new_rs])
        allowed = replicas + du.max_surge(d) if replicas > 0 else 0
        to_add = allowed - du.replica_count(all_rss)
        operation = ""
        if to_add > 0:
            all_rss = du.by_size_newer(all_rss)
            operation = "up"
        elif to_add < 0:
            all_rss = du.by_size_older(all_rss)
            operation = "down"
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            if to_add != 0:
                proportion = du.get_proportion(rs, d, to_add, added)
                sizes[name_of(rs)] = du.spec_replicas(rs) + proportion
                added += proportion
            else:
                sizes[name_of(rs)] = du.spec_replicas(rs)
        for i, rs in enumerate(all_rss):
            name = name_of(rs)
            if i == 0 and to_add != 0:
                sizes[name] = max(sizes[name] + to_add - added, 0)
            await self._scale_replica_set(rs, sizes[name], d, operation)

    async def _cleanup_deployment(self, old_rss: Sequence[Obj], d: Obj) -> None:
        """Delete the oldest fully scaled-down old ReplicaSets beyond ``revisionHistoryLimit`` (never one with
        replicas, being deleted, or whose latest spec its controller has not observed yet)."""
        if not du.has_revision_history_limit(d):
            return
        cleanable = [rs for rs in old_rss if rs is not None and not meta_of(rs).get("deletionTimestamp")]
        diff = len(cleanable) - int(d["spec"]["revisionHistoryLimit"])
        if diff <= 0:
            return
        for rs in du.by_revision(cleanable)[:diff]:
            meta = rs["metadata"]
            if (
                du.status_int(rs, "replicas") != 0
                or du.spec_replicas(rs) != 0
                or int(meta.get("generation") or 0) > du.status_int(rs, "observedGeneration")
                or meta.get("deletionTimestamp")
            ):
                continue
            log.debug("trying to clean up replica set %s for deployment %s", meta.get("name"), key_of(d))
            try:
                await self.client.delete(self._replicasets, str(meta["name"]), namespace=meta.get("namespace"))
            except NotFoundError:
                continue

    # --- status -------------------------------------------------------------------------------------------

    async def _sync_deployment_status(self, all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Obj) -> None:
        new_status = calculate_status(all_rss, new_rs, d, self.clock.now())
        if _omit_empty(d.get("status") or {}) == _omit_empty(new_status):
            return
        d["status"] = new_status
        await self._update_status(d)

    async def _sync_rollout_status(self, all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Obj) -> None:
        """Upstream ``syncRolloutStatus``: the counters plus the Progressing condition's verdict."""
        now = self.clock.now()
        new_status = calculate_status(all_rss, new_rs, d, now)
        if not du.has_progress_deadline(d):
            du.remove_deployment_condition(new_status, du.PROGRESSING)
        current = du.get_deployment_condition(d.get("status") or {}, du.PROGRESSING)
        complete_already = (
            new_status["replicas"] == new_status["updatedReplicas"]
            and current is not None
            and current.get("reason") == du.NEW_RS_AVAILABLE_REASON
        )
        subject = f"ReplicaSet {_q(name_of(new_rs))}" if new_rs is not None else f"Deployment {_q(name_of(d))}"
        if du.has_progress_deadline(d) and not complete_already:
            if du.deployment_complete(d, new_status):
                du.set_deployment_condition(
                    new_status,
                    du.new_deployment_condition(
                        du.PROGRESSING,
                        "True",
                        du.NEW_RS_AVAILABLE_REASON,
                        f"{subject} has successfully progressed.",
                        now,
                    ),
                )
            elif du.deployment_progressing(d, new_status):
                condition = du.new_deployment_condition(
                    du.PROGRESSING, "True", du.REPLICA_SET_UPDATED_REASON, f"{subject} is progressing.", now
                )
                if current is not None:
                    if current.get("status") == "True":
                        condition["lastTransitionTime"] = current.get("lastTransitionTime")
                    du.remove_deployment_condition(new_status, du.PROGRESSING)
                du.set_deployment_condition(new_status, condition)
            elif du.deployment_timed_out(d, new_status, now):
                du.set_deployment_condition(
                    new_status,
                    du.new_deployment_condition(
                        du.PROGRESSING, "False", du.TIMED_OUT_REASON, f"{subject} has timed out progressing.", now
                    ),
                )
        failures = self._replica_failures(all_rss, new_rs)
        if failures:
            du.set_deployment_condition(new_status, failures[0])
        else:
            du.remove_deployment_condition(new_status, du.REPLICA_FAILURE)
        if _omit_empty(d.get("status") or {}) == _omit_empty(new_status):
            self._requeue_stuck_deployment(d, new_status)
            return
        d["status"] = new_status
        await self._update_status(d)

    @staticmethod
    def _replica_failures(all_rss: Sequence[Obj | None], new_rs: Obj | None) -> list[Obj]:
        """The new ReplicaSet's ReplicaFailure conditions, else the old ones', as Deployment conditions."""

        def failures(rss: Sequence[Obj | None]) -> list[Obj]:
            return [
                du.replica_set_to_deployment_condition(c)
                for rs in rss
                if rs is not None
                for c in status_of(rs).get("conditions") or ()
                if c.get("type") == du.REPLICA_FAILURE
            ]

        return failures([new_rs]) or failures(all_rss)

    def _requeue_stuck_deployment(self, d: Obj, new_status: Mapping[str, Any]) -> float | None:
        """Come back when the progress deadline would expire (upstream ``requeueStuckDeployment``): without
        this a stuck rollout would only be noticed at the next unrelated event. Returns the delay, or None."""
        current = du.get_deployment_condition(d.get("status") or {}, du.PROGRESSING)
        if not du.has_progress_deadline(d) or current is None:
            return None
        if du.deployment_complete(d, new_status) or current.get("reason") == du.TIMED_OUT_REASON:
            return None
        since = du.condition_time(current, "lastUpdateTime")
        if since is None:
            return None
        after = since + int(d["spec"]["progressDeadlineSeconds"]) - self.clock.now()
        if after < 1.0:
            self.queue.add_rate_limited(key_of(d))
            return 0.0
        self.enqueue_after(d, after + 1.0)
        return after
