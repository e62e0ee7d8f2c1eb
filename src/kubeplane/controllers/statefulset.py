"""The StatefulSet controller: pods with stable identities, created and removed in order (upstream
``pkg/controller/statefulset/stateful_set.go``).

Event handlers only queue set keys: a set on add/update/delete; a pod's controlling set on any change (and,
for an orphan whose labels changed, every set selecting it, which may adopt it); a pod turning Ready with
``minReadySeconds`` requeues its set after that many seconds plus one (clock skew, as upstream); a
ControllerRevision's owner likewise. There are no expectations: every pod has a fixed name, so a create the
informer has not seen yet fails with AlreadyExists and is retried, never duplicated.

Each sync (upstream ``sync``): an unparsable selector is dropped (not retried); orphaned ControllerRevisions
matching the selector are adopted (after a fresh GET shows the set is still there and not being deleted);
pods are claimed (adopted or released by :class:`~.controller_ref_manager.PodControllerRefManager`, only those
named ``<set>-<ordinal>``); then :class:`~.statefulset_control.StatefulSetControl` does the work. A set with
``minReadySeconds`` whose pods are not all available is looked at again after ``minReadySeconds``.

The work is split as upstream splits it: naming, storage and revision helpers in :mod:`.statefulset_utils`,
pod and claim writes with their events in :mod:`.statefulset_pod_control`, the reconcile step in
:mod:`.statefulset_control`, ControllerRevisions in :mod:`.history`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.views import controller_ref_of, is_being_deleted, meta_of, namespace_of, spec_of
from kubeplane.client.interface import Obj
from kubeplane.controllers.base import Controller, ControllerContext, split_key
from kubeplane.controllers.controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
from kubeplane.controllers.controller_utils import PodControl
from kubeplane.controllers.history import History
from kubeplane.controllers.podutil import is_pod_ready
from kubeplane.controllers.statefulset_control import StatefulSetControl
from kubeplane.controllers.statefulset_pod_control import StatefulPodControl
from kubeplane.controllers.statefulset_utils import SET_API_VERSION, SET_KIND, is_member_of, replicas_of

__all__ = ["StatefulSetController"]

log = logging.getLogger("kubeplane.controllers.statefulset")

_COMPONENT: Final = "statefulset-controller"


class StatefulSetController(Controller):
    """See the module docstring. Five workers (upstream ``--concurrent-statefulset-syncs``)."""

    name: ClassVar[str] = "statefulset"
    workers: ClassVar[int] = 5

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.sets = ctx.informers.informer_for("statefulsets")
        self.pods = ctx.informers.informer_for("pods")
        self.claims = ctx.informers.informer_for("persistentvolumeclaims")
        self.revisions = ctx.informers.informer_for("controllerrevisions")
        self.set_resource = ctx.client.resource("statefulsets")
        self.recorder = ctx.recorder(_COMPONENT)
        self.pod_control = PodControl(ctx.client, self.recorder)
        self.history = History(ctx.client, self.revisions.lister())
        self.stateful_pod_control = StatefulPodControl(
            ctx.client, self.pods.lister(), self.claims.lister(), self.recorder
        )
        self.control = StatefulSetControl(ctx.client, self.stateful_pod_control, self.history, ctx.clock.now)
        self.sets.add_event_handler(on_add=self.enqueue, on_update=self._update_set, on_delete=self.enqueue)
        self.pods.add_event_handler(on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod)
        self.revisions.add_event_handler(
            on_add=self._revision_changed,
            on_update=lambda _o, n: self._revision_changed(n),
            on_delete=self._revision_changed,
        )

    # --- handlers ------------------------------------------------------------------------------------------

    def _update_set(self, old: Obj, new: Obj) -> None:
        self.enqueue(new)

    def _resolve(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        """Upstream ``resolveControllerRef``: the set the reference names, if its UID matches."""
        if ref.get("kind") != SET_KIND:
            return None
        found: Obj | None = self.sets.lister().get(namespace, str(ref.get("name") or ""))
        if found is None or meta_of(found).get("uid") != ref.get("uid"):
            return None
        return found

    def _sets_for_pod(self, pod: Mapping[str, Any]) -> list[Obj]:
        """Upstream ``getStatefulSetsForPod``: sets in the pod's namespace whose selector matches it."""
        pod_labels = meta_of(pod).get("labels") or {}
        out = []
        for sts in self.sets.lister().list(namespace_of(pod)):
            try:
                selector = apilabels.label_selector_as_selector(spec_of(sts).get("selector"))
            except ValueError:
                continue
            if not selector.empty() and selector.matches(pod_labels):
                out.append(sts)
        if len(out) > 1:
            log.error("user error: more than one StatefulSet is selecting pods with labels: %s", dict(pod_labels))
        return out

    def _add_pod(self, pod: Obj) -> None:
        if is_being_deleted(pod):
            self._delete_pod(pod)
            return
        ref = controller_ref_of(pod)
        if ref is not None:
            sts = self._resolve(namespace_of(pod), ref)
            if sts is not None:
                self.enqueue(sts)
            return
        for sts in self._sets_for_pod(pod):
            self.enqueue(sts)

    def _update_pod(self, old: Obj, new: Obj) -> None:
        if meta_of(old).get("resourceVersion") == meta_of(new).get("resourceVersion"):
            return
        namespace = namespace_of(new)
        cur_ref, old_ref = controller_ref_of(new), controller_ref_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            old_set = self._resolve(namespace, old_ref)
            if old_set is not None:
                self.enqueue(old_set)
        if cur_ref is not None:
            sts = self._resolve(namespace, cur_ref)
            if sts is None:
                return
            self.enqueue(sts)
            min_ready = int(spec_of(sts).get("minReadySeconds") or 0)
            if not is_pod_ready(old) and is_pod_ready(new) and min_ready > 0:
                self.enqueue_after(sts, min_ready + 1)
            return
        if ref_changed or meta_of(old).get("labels") != meta_of(new).get("labels"):
            for sts in self._sets_for_pod(new):
                self.enqueue(sts)

    def _delete_pod(self, pod: Obj) -> None:
        ref = controller_ref_of(pod)
        if ref is None:
            return
        sts = self._resolve(namespace_of(pod), ref)
        if sts is not None:
            self.enqueue(sts)

    def _revision_changed(self, revision: Obj) -> None:
        """Not an upstream handler (upstream's controller only lists revisions): a revision written or removed
        behind the controller's back (kubectl, the garbage collector) is reconciled promptly."""
        ref = controller_ref_of(revision)
        if ref is not None:
            sts = self._resolve(namespace_of(revision), ref)
            if sts is not None:
                self.enqueue(sts)

    # --- sync ----------------------------------------------------------------------------------------------

    def _can_adopt(self, sts: Obj) -> Any:
        async def fresh() -> Obj:
            got = await self.client.get(self.set_resource, str(meta_of(sts).get("name")), namespace=namespace_of(sts))
            if meta_of(got).get("uid") != meta_of(sts).get("uid"):
                raise RuntimeError(
                    f"original StatefulSet {namespace_of(sts)}/{meta_of(sts).get('name')} is gone: got uid "
                    f"{meta_of(got).get('uid')}, wanted {meta_of(sts).get('uid')}"
                )
            return got

        return recheck_deletion_timestamp(fresh)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        sts = self.sets.lister().get(namespace, name)
        if sts is None:
            log.info("StatefulSet has been deleted %s", key)
            return
        try:
            selector = apilabels.label_selector_as_selector(spec_of(sts).get("selector"))
        except ValueError as exc:
            log.error("error converting StatefulSet %s selector: %s", key, exc)
            return  # a non-transient error: not retried
        await self._adopt_orphan_revisions(sts)
        pods = await self._pods_for_set(sts, selector)
        status = await self.control.update_stateful_set(sts, pods)
        min_ready = int(spec_of(sts).get("minReadySeconds") or 0)
        if min_ready > 0 and status is not None and status.get("availableReplicas") != replicas_of(sts):
            self.enqueue_after(sts, min_ready)

    async def _adopt_orphan_revisions(self, sts: Obj) -> None:
        """Upstream ``adoptOrphanRevisions``."""
        orphans = [r for r in self.control.list_revisions(sts) if controller_ref_of(r) is None]
        if not orphans:
            return
        try:
            await self._can_adopt(sts)()
        except Exception as exc:
            raise RuntimeError(f"can't adopt ControllerRevisions: {exc}") from exc
        await self.control.adopt_orphan_revisions(sts, orphans)

    async def _pods_for_set(self, sts: Obj, selector: apilabels.Selector) -> list[Obj]:
        """Upstream ``getPodsForStatefulSet``: every pod of the namespace is considered, so pods that stopped
        matching are released; only pods named as members are claimed."""
        manager = PodControllerRefManager(
            self.pod_control,
            sts,
            selector,
            api_version=SET_API_VERSION,
            kind=SET_KIND,
            can_adopt=self._can_adopt(sts),
        )
        pods = self.pods.lister().list(namespace_of(sts))
        return await manager.claim_pods(pods, lambda pod: is_member_of(sts, pod))
