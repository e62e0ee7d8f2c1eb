"""Volume syncs and reclaiming (upstream ``pv_controller.go``: ``syncVolume``, ``reclaimVolume``,
``deleteVolumeOperation``, ``doDeleteVolume``, ``findDeletablePlugin``, ``recycleVolumeOperation``,
``isVolumeReleased``, ``isVolumeUsed``).

A volume without claimRef, or pre-bound by name only, is Available; bound to a claim that exists and names it,
Bound; bound to a claim that is gone (checked against the informer and then the API server, so a claim the
cache has not seen yet never releases a volume) it becomes Released and its reclaim policy runs:

* Retain: nothing more (no event; the volume keeps its claimRef until an administrator clears it).
* Delete: a volume provisioned by an external provisioner (``pv.kubernetes.io/provisioned-by`` not naming an
  in-tree ``kubernetes.io/`` plugin, or a ``spec.csi`` volume) is left to that provisioner, which deletes the
  storage and then the PV (external-provisioner behaviour; kubeplane's simulated CSI driver does this). Any
  other volume would need an in-tree deleter, of which kubeplane has none: VolumeFailedDelete, phase Failed,
  retried on every sync, as upstream without the plugin.
* Recycle: no recycler exists: VolumeFailedRecycle ("No recycler plugin found for the volume!"), phase Failed
  (after checking, as upstream, that no running pod still uses the claim).
* Anything else: VolumeUnknownReclaimPolicy, phase Failed.

A Failed phase is never overwritten by Released: the user keeps seeing that something went wrong.
"""

from __future__ import annotations

import logging

from kubeplane.api.views import meta_of, spec_of, status_of
from kubeplane.api.volumes import ANN_DYNAMICALLY_PROVISIONED, ANN_MIGRATED_TO, check_volume_mode_mismatches
from kubeplane.client.errors import NotFoundError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers.pv_controller_binding import ClaimSync
from kubeplane.controllers.pv_controller_util import (
    POD_PVC_INDEX,
    VOLUME_FAILED_DELETE,
    VOLUME_FAILED_RECYCLE,
    VOLUME_MISMATCH,
    claimref_key,
    is_pod_terminated,
)

__all__ = ["VolumeSync"]

log = logging.getLogger("kubeplane.controllers.pv_controller")


class DeleterError(Exception):
    """No deleter plugin: upstream ``findDeletablePlugin``'s error."""


class VolumeSync(ClaimSync):
    """See the module docstring."""

    def enqueue_claim_key(self, key: str) -> None:
        raise NotImplementedError

    async def _claim_for_volume(self, volume: Obj) -> Obj | None:
        """The claim the volume's claimRef names, if it is that very claim (by UID); looked up in the
        controller's cache, then the informer, then the API server before concluding it is gone."""
        ref = spec_of(volume)["claimRef"]
        namespace, name = ref.get("namespace") or "", ref.get("name") or ""
        claim = self.claims.get(claimref_key(ref))
        if claim is None and status_of(volume).get("phase") not in ("Released", "Failed"):
            claim = self.claim_lister.get(namespace, name)
            if claim is None:
                try:
                    claim = await self.client.get(
                        self.client.resource("persistentvolumeclaims"), name, namespace=namespace
                    )
                except NotFoundError:
                    claim = None
        if claim is not None and meta_of(claim).get("uid") != ref.get("uid"):
            # Maybe a stale cache: ask the API server whether the claim was replaced.
            try:
                claim = await self.client.get(self.client.resource("persistentvolumeclaims"), name, namespace=namespace)
            except NotFoundError:
                claim = None
            if claim is not None and meta_of(claim).get("uid") != ref.get("uid"):
                claim = None
        return claim

    async def sync_volume(self, volume: Obj) -> None:
        """Upstream ``syncVolume`` (unit test set 4)."""
        ref = spec_of(volume).get("claimRef")
        if not ref or not ref.get("uid"):
            # Unused, or pre-bound to a claim that has not bound yet (the claim's sync does it).
            await self.update_volume_phase(volume, "Available")
            return
        claim = await self._claim_for_volume(volume)
        name = meta_of(volume).get("name")
        if claim is None:
            if status_of(volume).get("phase") not in ("Released", "Failed"):
                log.info(
                    "Volume is released and reclaim policy will be executed: volume=%s reclaimPolicy=%s",
                    name,
                    spec_of(volume).get("persistentVolumeReclaimPolicy"),
                )
                volume = await self.update_volume_phase(volume, "Released")
            await self.reclaim_volume(volume)
            return
        claim_volume = spec_of(claim).get("volumeName") or ""
        if not claim_volume:
            if check_volume_mode_mismatches(spec_of(claim), spec_of(volume)):
                claim_name = meta_of(claim).get("name")
                self.recorder.record(
                    volume,
                    EVENT_TYPE_WARNING,
                    VOLUME_MISMATCH,
                    f'Cannot bind PersistentVolume to requested PersistentVolumeClaim "{claim_name}" due to '
                    "incompatible volumeMode.",
                )
                self.recorder.record(
                    claim,
                    EVENT_TYPE_WARNING,
                    VOLUME_MISMATCH,
                    f'Cannot bind PersistentVolume "{name}" to requested PersistentVolumeClaim due to '
                    "incompatible volumeMode.",
                )
                return
            # Volume bound (by the controller, a provisioner or the scheduler), claim not yet: the claim's
            # sync finishes it; queue it now rather than at the next resync.
            self.enqueue_claim_key(claimref_key(ref))
            return
        if claim_volume == name:
            await self.update_volume_phase(volume, "Bound")
            return
        annotations = meta_of(volume).get("annotations") or {}
        policy = spec_of(volume).get("persistentVolumeReclaimPolicy")
        if ANN_DYNAMICALLY_PROVISIONED in annotations and policy == "Delete":
            # Provisioned for this claim, which got bound elsewhere: not needed any more.
            if status_of(volume).get("phase") not in ("Released", "Failed"):
                volume = await self.update_volume_phase(volume, "Released")
            await self.reclaim_volume(volume)
            return
        # Bound by the controller: undo it; pre-bound by the user: keep the name, drop the UID.
        await self.unbind_volume(volume)

    async def reclaim_volume(self, volume: Obj) -> None:
        """Upstream ``reclaimVolume``."""
        if (meta_of(volume).get("annotations") or {}).get(ANN_MIGRATED_TO):
            return  # migrated: the external provisioner handles it
        policy = spec_of(volume).get("persistentVolumeReclaimPolicy")
        uid = meta_of(volume).get("uid") or ""
        name = meta_of(volume).get("name")
        if policy == "Retain":
            log.debug("ReclaimVolume: policy is Retain, nothing to do: volume=%s", name)
        elif policy == "Recycle":

            async def recycle() -> None:
                await self.recycle_volume_operation(volume)

            self.operations.run(f"recycle-{name}[{uid}]", recycle)
        elif policy == "Delete":

            async def delete() -> None:
                await self.delete_volume_operation(volume)

            self.operations.run(f"delete-{name}[{uid}]", delete)
        else:
            await self.update_volume_phase_with_event(
                volume,
                "Failed",
                EVENT_TYPE_WARNING,
                "VolumeUnknownReclaimPolicy",
                "Volume has unrecognized PersistentVolumeReclaimPolicy",
            )

    def is_volume_released(self, volume: Obj) -> bool:
        """Upstream ``isVolumeReleased``: bound (with a UID) to a claim that is gone, or that names another
        volume."""
        ref = spec_of(volume).get("claimRef")
        if not ref or not ref.get("uid"):
            return False
        claim = self.claims.get(claimref_key(ref))
        if claim is not None and meta_of(claim).get("uid") == ref.get("uid"):
            other = spec_of(claim).get("volumeName") or ""
            return bool(other) and other != meta_of(volume).get("name")
        return True

    def is_volume_used(self, volume: Obj) -> list[str]:
        """Upstream ``isVolumeUsed``: ``namespace/name`` of the active pods using the volume's claim, sorted."""
        ref = spec_of(volume).get("claimRef")
        if not ref:
            return []
        pods = self.pod_indexer.by_index(POD_PVC_INDEX, claimref_key(ref))
        return sorted(
            {f"{meta_of(p).get('namespace')}/{meta_of(p).get('name')}" for p in pods if not is_pod_terminated(p)}
        )

    async def _fresh_volume(self, volume: Obj) -> Obj | None:
        try:
            return await self.client.get(self.client.resource("persistentvolumes"), str(meta_of(volume).get("name")))
        except Exception as exc:
            log.info("Error reading persistent volume %s: %s", meta_of(volume).get("name"), exc)
            return None

    async def recycle_volume_operation(self, volume: Obj) -> None:
        """Upstream ``recycleVolumeOperation`` with no recycler plugin."""
        fresh = await self._fresh_volume(volume)
        if fresh is None or not self.is_volume_released(fresh):
            return
        pods = self.is_volume_used(fresh)
        ref = spec_of(volume).get("claimRef") or {}
        if pods and self.claims.get(claimref_key(ref)) is None:
            self.recorder.record(
                volume, EVENT_TYPE_NORMAL, VOLUME_FAILED_RECYCLE, f"Volume is used by pods: {','.join(pods)}"
            )
            return
        await self.update_volume_phase_with_event(
            fresh, "Failed", EVENT_TYPE_WARNING, VOLUME_FAILED_RECYCLE, "No recycler plugin found for the volume!"
        )

    def find_deletable_plugin(self, volume: Obj) -> None:
        """Upstream ``findDeletablePlugin`` without in-tree plugins: returns (None: an external deleter) for an
        externally provisioned or CSI volume, raises :class:`DeleterError` otherwise."""
        provisioned_by = (meta_of(volume).get("annotations") or {}).get(ANN_DYNAMICALLY_PROVISIONED)
        if provisioned_by:
            if not provisioned_by.startswith("kubernetes.io/"):
                return
            raise DeleterError(f"no volume plugin matched name: {provisioned_by}")
        if (meta_of(volume).get("annotations") or {}).get(ANN_MIGRATED_TO) or spec_of(volume).get("csi") is not None:
            return
        raise DeleterError(
            f'error getting deleter volume plugin for volume "{meta_of(volume).get("name")}": no volume plugin matched'
        )

    async def delete_volume_operation(self, volume: Obj) -> None:
        """Upstream ``deleteVolumeOperation``: an external deleter is left alone; a missing deleter marks the
        volume Failed with a VolumeFailedDelete event and raises (backoff, then retried on later syncs)."""
        fresh = await self._fresh_volume(volume)
        if fresh is None or not self.is_volume_released(fresh):
            return
        try:
            self.find_deletable_plugin(volume)
        except DeleterError as exc:
            log.info("Deletion of volume %s failed: %s", meta_of(volume).get("name"), exc)
            await self.update_volume_phase_with_event(
                volume, "Failed", EVENT_TYPE_WARNING, VOLUME_FAILED_DELETE, str(exc)
            )
            raise
        log.info("External deleter for volume %s requested, ignoring", meta_of(volume).get("name"))
