"""The PersistentVolume controller, ``persistentvolume-binder`` (upstream
``pkg/controller/volume/persistentvolume/pv_controller_base.go``): binds claims to volumes, asks external
provisioners for volumes, and reclaims released volumes. Events are reported as ``persistentvolume-controller``.

Structure, as upstream: informers on PVs, PVCs, StorageClasses and pods (pods indexed by the claims they use,
upstream's ``pod-pvc-index``); PV and PVC events only queue keys on two plain work queues, each served by exactly
one worker (a claim sync is not reentrant: two at once could bind two claims to one volume). A worker finds the
object in the informer: present -> ``updateClaim``/``updateVolume`` (store in the controller's cache, skip if the
informer's version is older than the cached one, then sync); absent -> ``deleteClaim``/``deleteVolume`` with the
cached copy (drop it and queue the volume of a deleted claim, the claim of a deleted volume, so Released/Lost
come at once).

Failures are not requeued with backoff, as upstream: the sync logs the error and the resync (every
``sync_period`` seconds, upstream ``--pvclaimbinder-sync-period``, 15 s) queues every claim and volume again;
asynchronous provisioning/deleting/recycling back off per operation (:mod:`.pv_controller_operations`).
Option ``enable_dynamic_provisioning`` (default True, upstream ``--enable-dynamic-provisioning``).

The syncs themselves: claims in :mod:`.pv_controller_binding`, volumes and reclaiming in
:mod:`.pv_controller_reclaim`, writes in :mod:`.pv_controller_writes`, caches and matching in
:mod:`.pv_controller_index` and :mod:`.pv_controller_util`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import ClassVar, Final

from kubeplane.api.views import meta_of, spec_of
from kubeplane.api.volumes import claim_key
from kubeplane.client.errors import ConflictError
from kubeplane.client.interface import Obj
from kubeplane.client.workqueue import QueueShutDown, WorkQueue
from kubeplane.controllers.base import Controller, ControllerContext, key_of, split_key
from kubeplane.controllers.pv_controller_index import ObjectStore, VolumeIndex
from kubeplane.controllers.pv_controller_operations import Operations
from kubeplane.controllers.pv_controller_reclaim import VolumeSync
from kubeplane.controllers.pv_controller_util import POD_PVC_INDEX, claimref_key, pod_pvc_index

__all__ = ["DEFAULT_SYNC_PERIOD", "PersistentVolumeController"]

log = logging.getLogger("kubeplane.controllers.pv_controller")

COMPONENT: Final = "persistentvolume-controller"
DEFAULT_SYNC_PERIOD: Final = 15.0


class PersistentVolumeController(Controller, VolumeSync):
    """See the module docstring."""

    name: ClassVar[str] = "persistentvolume-binder"
    workers: ClassVar[int] = 1

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.sync_period = float(self.options.get("sync_period", DEFAULT_SYNC_PERIOD))
        self.enable_dynamic_provisioning = bool(self.options.get("enable_dynamic_provisioning", True))
        self.recorder = ctx.recorder(COMPONENT)
        self.volumes = VolumeIndex()
        self.claims = ObjectStore()
        self.operations = Operations(ctx.clock)
        self.claim_queue: WorkQueue[str] = WorkQueue()
        self.volume_queue: WorkQueue[str] = WorkQueue()
        volume_informer = ctx.informers.informer_for("persistentvolumes")
        claim_informer = ctx.informers.informer_for("persistentvolumeclaims")
        pod_informer = ctx.informers.informer_for("pods")
        if not pod_informer.indexer.has_index(POD_PVC_INDEX):  # upstream AddPodPVCIndexerIfNotPresent
            pod_informer.add_indexers({POD_PVC_INDEX: pod_pvc_index})
        self.volume_lister = volume_informer.lister()
        self.claim_lister = claim_informer.lister()
        self.class_lister = ctx.informers.lister_for("storageclasses")
        self.pod_indexer = pod_informer.indexer
        volume_informer.add_event_handler(
            on_add=self._enqueue_volume, on_update=lambda _o, n: self._enqueue_volume(n), on_delete=self._enqueue_volume
        )
        claim_informer.add_event_handler(
            on_add=self._enqueue_claim, on_update=lambda _o, n: self._enqueue_claim(n), on_delete=self._enqueue_claim
        )

    def _enqueue_volume(self, volume: Obj) -> None:
        self.volume_queue.add(key_of(volume))

    def _enqueue_claim(self, claim: Obj) -> None:
        self.claim_queue.add(key_of(claim))

    def enqueue_claim_key(self, key: str) -> None:
        self.claim_queue.add(key)

    # --- running ---------------------------------------------------------------------------------------------

    def initialize_caches(self) -> None:
        """Upstream ``initializeCaches``: the caches start from the informers' content."""
        for volume in self.volume_lister.list():
            self.store_volume_update(volume)
        for claim in self.claim_lister.list():
            self.store_claim_update(claim)

    def resync(self) -> None:
        """Upstream ``resync``: queue every claim and volume (the shared informers have no short resync)."""
        for claim in self.claim_lister.list():
            self._enqueue_claim(claim)
        for volume in self.volume_lister.list():
            self._enqueue_volume(volume)

    async def _resync_loop(self) -> None:
        while True:
            self.resync()
            await self.clock.sleep(self.sync_period)

    async def run(self, workers: int | None = None) -> None:
        """Fill the caches, then run the resync loop and the two workers until cancelled."""
        self.initialize_caches()
        tasks = [
            asyncio.ensure_future(self._resync_loop()),
            asyncio.ensure_future(self._volume_worker()),
            asyncio.ensure_future(self._claim_worker()),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            self.claim_queue.shut_down()
            self.volume_queue.shut_down()
            self.queue.shut_down()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.operations.cancel_all()

    async def sync(self, key: str) -> None:
        """A claim key, as the claim worker handles it (the base class's single-queue entry point)."""
        await self.process_claim_key(key)

    async def _claim_worker(self) -> None:
        while True:
            try:
                key = await self.claim_queue.get()
            except QueueShutDown:
                return
            try:
                await self.process_claim_key(key)
            finally:
                self.claim_queue.done(key)

    async def _volume_worker(self) -> None:
        while True:
            try:
                key = await self.volume_queue.get()
            except QueueShutDown:
                return
            try:
                await self.process_volume_key(key)
            finally:
                self.volume_queue.done(key)

    async def process_claim_key(self, key: str) -> None:
        """Upstream ``claimWorker``'s body: update or delete, errors logged (the resync retries)."""
        namespace, name = split_key(key)
        claim = self.claim_lister.get(namespace, name)
        if claim is None:
            cached = self.claims.get(key)
            if cached is not None:
                self.delete_claim(cached)
            return
        if not self.store_claim_update(claim):
            return
        try:
            await self.sync_claim(claim)
        except asyncio.CancelledError:
            raise
        except ConflictError as exc:
            log.debug("Could not sync claim %s: %s", key, exc)
        except Exception as exc:
            log.error("Could not sync claim %s: %s", key, exc)

    async def process_volume_key(self, key: str) -> None:
        """Upstream ``volumeWorker``'s body."""
        volume = self.volume_lister.get(None, key)
        if volume is None:
            cached = self.volumes.get(key)
            if cached is not None:
                self.delete_volume(cached)
            return
        if not self.store_volume_update(volume):
            return
        try:
            await self.sync_volume(volume)
        except asyncio.CancelledError:
            raise
        except ConflictError as exc:
            log.debug("Could not sync volume %s: %s", key, exc)
        except Exception as exc:
            log.error("Could not sync volume %s: %s", key, exc)

    def delete_volume(self, volume: Obj) -> None:
        """Upstream ``deleteVolume``: forget it; its claim is synced now (to become Lost without waiting)."""
        self.volumes.delete(str(meta_of(volume).get("name")))
        ref = spec_of(volume).get("claimRef")
        if ref:
            self.claim_queue.add(claimref_key(ref))

    def delete_claim(self, claim: Obj) -> None:
        """Upstream ``deleteClaim``: forget it; its volume is synced now (to be Released without waiting)."""
        self.claims.delete(claim_key(claim))
        volume_name = spec_of(claim).get("volumeName")
        if volume_name:
            self.volume_queue.add(str(volume_name))
