"""The PVC protection controller (upstream ``pkg/controller/volume/pvcprotection``, v1.37, controller
``pvc-protection``): the ``kubernetes.io/pvc-protection`` finalizer keeps a claim that a pod uses from going away.

* A claim being deleted (deletionTimestamp set) that still carries the finalizer is a *deletion candidate*. It is
  in use while any **scheduled** pod (``spec.nodeName`` set) of its namespace names it in a
  ``persistentVolumeClaim`` volume -- terminal pods included, as upstream: only their deletion frees the claim --
  or as the claim of a generic ``ephemeral`` volume (``<pod>-<volume>``, the claim controlled by that pod) unless
  the pod is shut down (deletionTimestamp with a zero grace period). The informer's pods are asked first (an
  index of pod claims); only when none there uses the claim is a **live list** of the namespace's pods read, since
  a pod may exist that the cache has not seen yet. Unused: the finalizer is removed with an update.
* A claim not being deleted and lacking the finalizer gets it (for claims created before the admission plugin ran).
* Claims are queued on their own add/update when either applies; pods queue the claims they name when they are
  deleted, terminal, or unscheduled (the pods that can free a claim), and an update that replaces a pod by another
  of the same name queues the old pod's claims too.

Departure: upstream batches queued claims by namespace so one live pod list serves a namespace's claims; here each
claim's sync makes its own list when the cache has no user (the decisions are the same).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final

from kubeplane.api.views import is_pod_terminal, meta_of, spec_of
from kubeplane.api.volumes import volume_claim_name, volume_is_for_pod
from kubeplane.client.interface import Obj

from .base import Controller, ControllerContext, split_key
from .pv_controller_util import pod_pvc_index as pod_pvc_keys

__all__ = ["PVC_PROTECTION_FINALIZER", "PVCProtectionController", "pod_pvc_keys", "pod_uses_pvc"]

log = logging.getLogger("kubeplane.controllers.pvc_protection")

PVC_PROTECTION_FINALIZER: Final = "kubernetes.io/pvc-protection"
POD_PVC_INDEX: Final = "pod-pvc-index"


def _finalizers(obj: Mapping[str, Any]) -> list[str]:
    value = meta_of(obj).get("finalizers")
    return [str(f) for f in value] if isinstance(value, list) else []


def is_deletion_candidate(obj: Mapping[str, Any], finalizer: str) -> bool:
    """``protectionutil.IsDeletionCandidate``: being deleted and still holding ``finalizer``."""
    return bool(meta_of(obj).get("deletionTimestamp")) and finalizer in _finalizers(obj)


def need_to_add_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """``protectionutil.NeedToAddFinalizer``: not being deleted and without ``finalizer``."""
    return not meta_of(obj).get("deletionTimestamp") and finalizer not in _finalizers(obj)


def _volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [v for v in spec_of(pod).get("volumes") or () if isinstance(v, Mapping)]


def _pod_is_shut_down(pod: Mapping[str, Any]) -> bool:
    """``podIsShutDown``: deleted with a zero grace period (the kubelet is done with it, or it was forced)."""
    meta = meta_of(pod)
    return bool(meta.get("deletionTimestamp")) and meta.get("deletionGracePeriodSeconds") == 0


def pod_uses_pvc(pod: Mapping[str, Any], pvc: Mapping[str, Any]) -> bool:
    """``podUsesPVC``: only a scheduled pod counts (the kubelet sees pods once scheduled and refuses to start one
    whose claim is being deleted)."""
    if not spec_of(pod).get("nodeName"):
        return False
    name = meta_of(pvc).get("name")
    for volume in _volumes(pod):
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, Mapping) and claim.get("claimName") == name:
            return True
        if (
            not _pod_is_shut_down(pod)
            and isinstance(volume.get("ephemeral"), Mapping)
            and volume_claim_name(pod, volume) == name
            and volume_is_for_pod(pod, pvc) is None
        ):
            return True
    return False


class PVCProtectionController(Controller):
    name: ClassVar[str] = "pvc-protection"
    workers: ClassVar[int] = 1  # upstream starts it with one worker

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pvcs = ctx.client.resource("persistentvolumeclaims")
        self.pods = ctx.client.resource("pods")
        pvc_informer = ctx.informers.informer_for(self.pvcs)
        self.pvc_lister = pvc_informer.lister()
        pvc_informer.add_event_handler(on_add=self._pvc_changed, on_update=lambda _old, new: self._pvc_changed(new))
        pod_informer = ctx.informers.informer_for(self.pods)
        self.pod_indexer = pod_informer.indexer
        if not self.pod_indexer.has_index(POD_PVC_INDEX):
            pod_informer.add_indexers({POD_PVC_INDEX: pod_pvc_keys})
        pod_informer.add_event_handler(
            on_add=lambda pod: self._pod_changed(None, pod, deleted=False),
            on_update=lambda old, new: self._pod_changed(old, new, deleted=False),
            on_delete=lambda pod: self._pod_changed(None, pod, deleted=True),
        )

    # --- events --------------------------------------------------------------------------------------------

    def _pvc_changed(self, pvc: Obj) -> None:
        """``pvcAddedUpdated``."""
        if need_to_add_finalizer(pvc, PVC_PROTECTION_FINALIZER) or is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER):
            self.enqueue(pvc)

    def _pod_changed(self, old: Obj | None, pod: Obj, *, deleted: bool) -> None:
        """``podAddedDeletedUpdated``: a replaced pod (another uid under the same name) frees its claims too."""
        self._enqueue_pvcs(pod, deleted=deleted)
        if old is not None and meta_of(old).get("uid") != meta_of(pod).get("uid"):
            self._enqueue_pvcs(old, deleted=True)

    def _enqueue_pvcs(self, pod: Obj, *, deleted: bool) -> None:
        """``enqueuePVCs``: only pods that can let a claim go (deleted, terminated, or not scheduled)."""
        if not deleted and not is_pod_terminal(pod) and spec_of(pod).get("nodeName"):
            return
        for key in pod_pvc_keys(pod):
            self.enqueue_key(key)

    # --- sync ----------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """``processPVC``."""
        namespace, name = split_key(key)
        pvc = self.pvc_lister.get(namespace, name)
        if pvc is None:
            return
        if is_deletion_candidate(pvc, PVC_PROTECTION_FINALIZER):
            if not await self._is_being_used(pvc):
                await self._set_finalizers(pvc, [f for f in _finalizers(pvc) if f != PVC_PROTECTION_FINALIZER])
                log.info("Removed protection finalizer from PVC %s", key)
                return
            log.debug("Keeping PVC %s because it is being used", key)
        if need_to_add_finalizer(pvc, PVC_PROTECTION_FINALIZER):
            await self._set_finalizers(pvc, [*_finalizers(pvc), PVC_PROTECTION_FINALIZER])

    async def _set_finalizers(self, pvc: Obj, finalizers: list[str]) -> None:
        clone: dict[str, Any] = {**pvc, "metadata": {**meta_of(pvc), "finalizers": finalizers}}
        await self.client.update(self.pvcs, clone, namespace=meta_of(pvc).get("namespace"))

    async def _is_being_used(self, pvc: Obj) -> bool:
        """``isBeingUsed``: the informer's pods first, then a live list of the namespace's pods."""
        meta = meta_of(pvc)
        if _any_uses(self.pod_indexer.by_index(POD_PVC_INDEX, f"{meta.get('namespace')}/{meta.get('name')}"), pvc):
            return True
        listed = await self.client.list(self.pods, namespace=str(meta.get("namespace") or ""))
        return _any_uses(listed.get("items") or (), pvc)


def _any_uses(pods: Iterable[Obj], pvc: Obj) -> bool:
    return any(pod_uses_pvc(pod, pvc) for pod in pods)
