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

Files as upstream's: this module is ``deployment_controller.go`` (event handlers, ``syncDeployment``);
:mod:`.deployment_sync` is ``sync.go`` and ``progress.go`` (steps 3, 4, 6, 7), :mod:`.deployment_rolling` and
:mod:`.deployment_recreate` the two strategies (step 5), :mod:`.deployment_util` ``util/deployment_util.go``.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from kubeplane.api import labels as apilabels
from kubeplane.api.views import (
    controller_ref_of,
    is_being_deleted,
    meta_of,
    namespace_of,
    section,
    spec_of,
    uid_of,
)
from kubeplane.client.events import EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers import deployment_util as du
from kubeplane.controllers.base import ControllerContext, split_key
from kubeplane.controllers.controller_ref_manager import ReplicaSetControllerRefManager, recheck_deletion_timestamp
from kubeplane.controllers.controller_utils import (
    is_controlled_by,
)
from kubeplane.controllers.deployment_recreate import DeploymentRecreate
from kubeplane.controllers.deployment_rolling import DeploymentRolling
from kubeplane.controllers.deployment_sync import API_VERSION, KIND

__all__ = ["DeploymentController"]

log = logging.getLogger("kubeplane.controllers.deployment")


class DeploymentController(DeploymentRolling, DeploymentRecreate):
    """See the module docstring; the sync, rolling and recreate parts come from the base classes."""

    name: ClassVar[str] = "deployment"
    workers: ClassVar[int] = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        d_informer = ctx.informers.informer_for("deployments")
        rs_informer = ctx.informers.informer_for("replicasets")
        pod_informer = ctx.informers.informer_for("pods")
        d_informer.add_event_handler(
            on_add=self.enqueue, on_update=lambda _old, cur: self.enqueue(cur), on_delete=self.enqueue
        )
        rs_informer.add_event_handler(
            on_add=self._add_replica_set, on_update=self._update_replica_set, on_delete=self._delete_replica_set
        )
        pod_informer.add_event_handler(on_delete=self._delete_pod)

    # --- event handlers (upstream add/update/deleteReplicaSet, deletePod) -----------------------------------

    def _resolve_controller_ref(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        if ref.get("kind") != KIND:
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
            generation = int(meta_of(d).get("generation") or 0)
            if int(status.get("observedGeneration") or 0) < generation:
                status["observedGeneration"] = generation
                await self._update_status(d)
            return
        rs_list = await self._get_replica_sets_for_deployment(d)
        pod_map = self._pod_map(d, rs_list)
        if is_being_deleted(d):
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
            api_version=API_VERSION,
            kind=KIND,
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
