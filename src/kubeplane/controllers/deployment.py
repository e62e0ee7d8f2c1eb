"""The deployment controller: rolls Deployments out through ReplicaSets (upstream ``pkg/controller/deployment``).

One sync of a Deployment key, in upstream's order:

1. Claim its ReplicaSets (adopt matching orphans, release owned ones that stop matching) and map its pods by
   owning ReplicaSet (only Recreate looks at pods: it waits for every old pod to be gone).
2. A Deployment being deleted only gets its status refreshed. An empty selector is refused with a
   ``SelectingAll`` warning.
3. Paused Deployments get the ``DeploymentPaused`` Progressing condition (``DeploymentResumed`` when unpaused)
   and are only *scaled*; nothing new is rolled out.
4. A *scaling event* (an active ReplicaSet's desired-replicas annotation differs from ``spec.replicas``) is
   handled by scaling, proportionally across ReplicaSets while a rollout is in progress: the extra (or missing)
   replicas up to replicas+maxSurge are split by each ReplicaSet's share, leftovers to the largest.
5. Otherwise the strategy runs. RollingUpdate creates the new ReplicaSet (``<name>-<pod-template-hash>``; an
   old one with an equal template is reused instead, which is what a rollback or ``rollout undo`` looks like),
   grows it while the total stays within replicas+maxSurge, and shrinks old ones (unhealthy replicas first)
   while available replicas stay at least replicas-maxUnavailable. Recreate scales every old ReplicaSet to 0,
   waits until their pods are gone, then creates/scales up the new one.
6. Old ReplicaSets beyond ``revisionHistoryLimit`` that are fully scaled down are deleted (lowest revision
   first) once the rollout is complete (or while paused).
7. Status: replicas/updated/ready/available/unavailable(/terminating) summed from the ReplicaSets,
   observedGeneration, collisionCount, ``Available`` (at least replicas-maxUnavailable available) and
   ``Progressing`` (``NewReplicaSetCreated``/``FoundNewReplicaSet``/``ReplicaSetUpdated`` while moving,
   ``NewReplicaSetAvailable`` when complete, ``ProgressDeadlineExceeded`` after ``progressDeadlineSeconds``
   without progress on the injected clock; the key is requeued for that deadline). A ReplicaSet's
   ``ReplicaFailure`` condition is copied to the Deployment.

Every step reads only listers and the Deployment's own annotations/status, so a restarted controller carries on
where the previous one stopped; the ReplicaSets' annotations (revision, desired/max replicas) are the memory.
Events: ``ScalingReplicaSet`` "Scaled up|down replica set <rs> from <a> to <b>" (upstream's wording),
``ReplicaSetCreateError`` and ``SelectingAll`` warnings.

The legacy ``spec.rollbackTo`` (extensions/v1beta1 only, annotation ``deprecated.deployment.rollback.to``) is not
implemented: apps/v1 has no such field and current kubectl rolls back by rewriting the template client-side.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.views import (
    annotations_of,
    controller_ref_of,
    meta_of,
    name_of,
    namespace_of,
    section,
    spec_of,
    status_of,
    uid_of,
)
from kubeplane.client.errors import AlreadyExistsError, NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers import deployment_util as du
from kubeplane.controllers.base import Controller, ControllerContext, key_of, split_key
from kubeplane.controllers.controller_ref_manager import ReplicaSetControllerRefManager, recheck_deletion_timestamp
from kubeplane.controllers.controller_utils import (
    NAMESPACE_TERMINATING_CAUSE,
    compute_hash,
    error_message,
    has_status_cause,
    is_controlled_by,
    new_controller_ref,
)

__all__ = ["DeploymentController", "calculate_status"]

log = logging.getLogger("kubeplane.controllers.deployment")

_API_VERSION: Final = "apps/v1"
_KIND: Final = "Deployment"
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


class DeploymentController(Controller):
    """See the module docstring."""

    name: ClassVar[str] = "deployment"
    workers: ClassVar[int] = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.recorder = ctx.recorder(_COMPONENT)
        self._deployments = self.client.resource("deployments")
        self._replicasets = self.client.resource("replicasets")
        d_informer = ctx.informers.informer_for("deployments")
        rs_informer = ctx.informers.informer_for("replicasets")
        pod_informer = ctx.informers.informer_for("pods")
        self.d_lister = d_informer.lister()
        self.rs_lister = rs_informer.lister()
        self.pod_lister = pod_informer.lister()
        d_informer.add_event_handler(
            on_add=self.enqueue, on_update=lambda _old, cur: self.enqueue(cur), on_delete=self.enqueue
        )
        rs_informer.add_event_handler(
            on_add=self._add_replica_set, on_update=self._update_replica_set, on_delete=self._delete_replica_set
        )
        pod_informer.add_event_handler(on_delete=self._delete_pod)

    # --- event handlers (upstream add/update/deleteReplicaSet, deletePod) -----------------------------------

    def _resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        if ref.get("kind") != _KIND:
            return None
        d = self.d_lister.get(namespace, str(ref.get("name") or ""))
        if d is None or uid_of(d) != ref.get("uid"):
            return None
        return d

    def _deployments_for_replica_set(self, rs: Mapping[str, Any]) -> list[Obj]:
        """Deployments whose selector matches the ReplicaSet's labels (for orphans); a nil or empty selector
        matches nothing here."""
        meta = meta_of(rs)
        labels = meta.get("labels") or {}
        if not labels:
            return []
        out = []
        for d in self.d_lister.list(meta.get("namespace") or ""):
            try:
                selector = apilabels.label_selector_as_selector(spec_of(d).get("selector"))
            except apilabels.SelectorError:
                continue
            if selector.empty() or not selector.matches(labels):
                continue
            out.append(d)
        return out

    def _add_replica_set(self, rs: Obj) -> None:
        meta = meta_of(rs)
        if meta.get("deletionTimestamp"):
            self._delete_replica_set(rs)
            return
        ref = controller_ref_of(rs)
        if ref is not None:
            d = self._resolve_controller_ref(meta.get("namespace") or "", ref)
            if d is not None:
                self.enqueue(d)
            return
        for d in self._deployments_for_replica_set(rs):
            self.enqueue(d)

    def _update_replica_set(self, old: Obj, cur: Obj) -> None:
        old_meta, cur_meta = meta_of(old), meta_of(cur)
        if old_meta.get("resourceVersion") == cur_meta.get("resourceVersion"):
            return
        old_ref, cur_ref = controller_ref_of(old), controller_ref_of(cur)
        ref_changed = old_ref != cur_ref
        if ref_changed and old_ref is not None:
            d = self._resolve_controller_ref(old_meta.get("namespace") or "", old_ref)
            if d is not None:
                self.enqueue(d)
        if cur_ref is not None:
            d = self._resolve_controller_ref(cur_meta.get("namespace") or "", cur_ref)
            if d is not None:
                self.enqueue(d)
            return
        if ref_changed or old_meta.get("labels") != cur_meta.get("labels"):
            for d in self._deployments_for_replica_set(cur):
                self.enqueue(d)

    def _delete_replica_set(self, rs: Obj) -> None:
        ref = controller_ref_of(rs)
        if ref is None:
            return
        d = self._resolve_controller_ref(namespace_of(rs), ref)
        if d is not None:
            self.enqueue(d)

    def _delete_pod(self, pod: Obj) -> None:
        """A Recreate Deployment waits for its old pods to be gone: sync it when its last pod goes."""
        namespace = namespace_of(pod)
        ref = controller_ref_of(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.rs_lister.get(namespace, str(ref.get("name") or ""))
        if rs is None or uid_of(rs) != ref.get("uid"):
            return
        rs_ref = controller_ref_of(rs)
        if rs_ref is None:
            return
        d = self._resolve_controller_ref(namespace, rs_ref)
        if d is None or section(d, "spec", "strategy").get("type") != du.RECREATE:
            return
        rs_list = [r for r in self.rs_lister.list(namespace) if is_controlled_by(r, d)]
        if not any(self._pod_map(d, rs_list).values()):
            self.enqueue(d)

    # --- sync ---------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        cached = self.d_lister.get(namespace, name)
        if cached is None:
            log.debug("deployment %s has been deleted", key)
            return
        d = copy.deepcopy(cached)
        if du.prune_empty(spec_of(d).get("selector") or {}) == {}:
            await self.recorder.event(
                d,
                EVENT_TYPE_WARNING,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            status = d.setdefault("status", {})
            generation = int(d["metadata"].get("generation") or 0)
            if int(status.get("observedGeneration") or 0) < generation:
                status["observedGeneration"] = generation
                await self._update_status(d)
            return
        rs_list = await self._get_replica_sets_for_deployment(d)
        pod_map = self._pod_map(d, rs_list)
        if d["metadata"].get("deletionTimestamp"):
            await self._sync_status_only(d, rs_list)
            return
        await self._check_paused_conditions(d)
        spec = spec_of(d)
        if spec.get("paused"):
            await self._sync(d, rs_list)
            return
        if await self._is_scaling_event(d, rs_list):
            await self._sync(d, rs_list)
            return
        strategy = section(spec, "strategy").get("type")
        if strategy == du.RECREATE:
            await self._rollout_recreate(d, rs_list, pod_map)
        elif strategy == du.ROLLING_UPDATE:
            await self._rollout_rolling(d, rs_list)
        else:
            raise ValueError(f"unexpected deployment strategy type: {strategy}")

    async def _get_replica_sets_for_deployment(self, d: Obj) -> list[Obj]:
        """The ReplicaSets this Deployment controls, after adoption and release (upstream
        ``getReplicaSetsForDeployment``)."""
        meta = d["metadata"]
        namespace = meta.get("namespace") or ""
        try:
            selector = apilabels.label_selector_as_selector(spec_of(d).get("selector"))
        except apilabels.SelectorError as exc:
            raise ValueError(f"deployment {namespace}/{meta.get('name')} has invalid label selector: {exc}") from exc

        async def fresh() -> Obj:
            got = await self.client.get(self._deployments, str(meta.get("name")), namespace=namespace)
            if uid_of(got) != uid_of(d):
                raise RuntimeError(
                    f"original Deployment {namespace}/{meta.get('name')} is gone: got uid {uid_of(got)}, "
                    f"wanted {uid_of(d)}"
                )
            return got

        manager = ReplicaSetControllerRefManager(
            self.client,
            d,
            selector,
            api_version=_API_VERSION,
            kind=_KIND,
            can_adopt=recheck_deletion_timestamp(fresh),
        )
        return await manager.claim_replica_sets(self.rs_lister.list(namespace))

    def _pod_map(self, d: Mapping[str, Any], rs_list: Sequence[Obj]) -> dict[str, list[Obj]]:
        """ReplicaSet UID -> the Deployment-selected pods it controls (every claimed ReplicaSet has an entry)."""
        out: dict[str, list[Obj]] = {uid_of(rs): [] for rs in rs_list}
        try:
            selector = apilabels.label_selector_as_selector(spec_of(d).get("selector"))
        except apilabels.SelectorError:
            return out
        namespace = namespace_of(d)
        for pod in self.pod_lister.list(namespace, selector):
            ref = controller_ref_of(pod)
            if ref is not None and ref.get("uid") in out:
                out[str(ref["uid"])].append(pod)
        return out

    # --- API writes ---------------------------------------------------------------------------------------

    async def _update_status(self, d: Obj) -> None:
        """Write ``d``'s status (and annotations) through the status subresource; ``d`` then carries the new
        resourceVersion so a later write in the same sync does not conflict with this one."""
        namespace = d["metadata"].get("namespace") or ""
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
        updated = await self.client.update(
            self._replicasets, rs_copy, namespace=rs_copy["metadata"].get("namespace") or ""
        )
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
        namespace = d["metadata"].get("namespace") or ""
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
                "ownerReferences": [new_controller_ref(d, api_version=_API_VERSION, kind=_KIND)],
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
        cleanable = [rs for rs in old_rss if rs is not None and not rs["metadata"].get("deletionTimestamp")]
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

    # --- RollingUpdate ------------------------------------------------------------------------------------

    async def _rollout_rolling(self, d: Obj, rs_list: Sequence[Obj]) -> None:
        new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, True)
        assert new_rs is not None
        all_rss: list[Obj | None] = [*old_rss, new_rs]
        if await self._reconcile_new_replica_set(all_rss, new_rs, d):
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if await self._reconcile_old_replica_sets(all_rss, du.filter_active_replica_sets(old_rss), new_rs, d):
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if du.deployment_complete(d, d.get("status") or {}):
            await self._cleanup_deployment(old_rss, d)
        await self._sync_rollout_status(all_rss, new_rs, d)

    async def _reconcile_new_replica_set(self, all_rss: Sequence[Obj | None], new_rs: Obj, d: Obj) -> bool:
        replicas = du.spec_replicas(d)
        current = du.spec_replicas(new_rs)
        if current == replicas:
            return False
        if current > replicas:
            return (await self._scale_replica_set_and_record_event(new_rs, replicas, d))[0]
        target = du.new_rs_new_replicas(d, all_rss, new_rs)
        return (await self._scale_replica_set_and_record_event(new_rs, target, d))[0]

    async def _reconcile_old_replica_sets(
        self, all_rss: Sequence[Obj | None], old_rss: list[Obj], new_rs: Obj, d: Obj
    ) -> bool:
        """Scale old ReplicaSets down as far as availability allows: at most
        ``all - (replicas - maxUnavailable) - unavailable-in-new``, unhealthy replicas first."""
        if du.replica_count(old_rss) == 0:
            return False
        min_available = du.spec_replicas(d) - du.max_unavailable(d)
        new_unavailable = du.spec_replicas(new_rs) - du.status_int(new_rs, "availableReplicas")
        max_scaled_down = du.replica_count(all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old_rss, cleaned = await self._cleanup_unhealthy_replicas(old_rss, d, max_scaled_down)
        scaled = await self._scale_down_old_replica_sets_for_rolling_update([*old_rss, new_rs], old_rss, d)
        return cleaned + scaled > 0

    async def _cleanup_unhealthy_replicas(self, old_rss: list[Obj], d: Obj, max_cleanup: int) -> tuple[list[Obj], int]:
        """Scale away old replicas that are not available (oldest ReplicaSets first), at most ``max_cleanup``:
        they cost no availability and would otherwise block the rollout."""
        old_rss = du.by_creation_timestamp(old_rss)
        total = 0
        for i, rs in enumerate(old_rss):
            if total >= max_cleanup:
                break
            replicas = du.spec_replicas(rs)
            available = du.status_int(rs, "availableReplicas")
            if replicas in (0, available):
                continue
            count = min(max_cleanup - total, replicas - available)
            new_count = replicas - count
            if new_count > replicas:
                raise ValueError(
                    f"when cleaning up unhealthy replicas, got invalid request to scale down "
                    f"{key_of(rs)} {replicas} -> {new_count}"
                )
            _, old_rss[i] = await self._scale_replica_set_and_record_event(rs, new_count, d)
            total += count
        return old_rss, total

    async def _scale_down_old_replica_sets_for_rolling_update(
        self, all_rss: Sequence[Obj | None], old_rss: Sequence[Obj], d: Obj
    ) -> int:
        min_available = du.spec_replicas(d) - du.max_unavailable(d)
        available = du.status_count(all_rss, "availableReplicas")
        if available <= min_available:
            return 0
        to_scale_down = available - min_available
        total = 0
        for rs in du.by_creation_timestamp(old_rss):
            if total >= to_scale_down:
                break
            replicas = du.spec_replicas(rs)
            if replicas == 0:
                continue
            count = min(replicas, to_scale_down - total)
            await self._scale_replica_set_and_record_event(rs, replicas - count, d)
            total += count
        return total

    # --- Recreate -----------------------------------------------------------------------------------------

    async def _rollout_recreate(self, d: Obj, rs_list: Sequence[Obj], pod_map: Mapping[str, list[Obj]]) -> None:
        new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, False)
        all_rss: list[Obj | None] = [*old_rss, new_rs]
        scaled_down = False
        for rs in du.filter_active_replica_sets(old_rss):
            scaled, _ = await self._scale_replica_set_and_record_event(rs, 0, d)
            scaled_down = scaled_down or scaled
        if scaled_down or self._old_pods_running(new_rs, old_rss, pod_map):
            await self._sync_rollout_status(all_rss, new_rs, d)
            return
        if new_rs is None:
            new_rs, old_rss = await self._get_all_replica_sets_and_sync_revision(d, rs_list, True)
            assert new_rs is not None
            all_rss = [*old_rss, new_rs]
        await self._scale_replica_set_and_record_event(new_rs, du.spec_replicas(d), d)
        if du.deployment_complete(d, d.get("status") or {}):
            await self._cleanup_deployment(old_rss, d)
        await self._sync_rollout_status(all_rss, new_rs, d)

    @staticmethod
    def _old_pods_running(new_rs: Obj | None, old_rss: Sequence[Obj], pod_map: Mapping[str, list[Obj]]) -> bool:
        """Old ReplicaSets still report replicas, or an old pod is not Failed/Succeeded (Unknown counts as
        running: it may be)."""
        if du.status_count(old_rss, "replicas") > 0:
            return True
        new_uid = uid_of(new_rs) if new_rs is not None else None
        for rs_uid, pods in pod_map.items():
            if rs_uid == new_uid:
                continue
            for pod in pods:
                if status_of(pod).get("phase") not in ("Failed", "Succeeded"):
                    return True
        return False

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
