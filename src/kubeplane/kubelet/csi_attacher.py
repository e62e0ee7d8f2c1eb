"""The simulated CSI external-attacher sidecar (kubernetes-csi/external-attacher), and the CSI plugin's naming of
VolumeAttachments the kubelet side shares with it.

Upstream, the attach/detach controller's CSI plugin (``pkg/volume/csi/csi_attacher.go``) creates a
VolumeAttachment per (volume, node) and waits for ``status.attached``; the driver's external-attacher watches
VolumeAttachments whose ``spec.attacher`` is its driver, calls ``ControllerPublishVolume`` and marks them attached;
when the object is deleted it calls ``ControllerUnpublishVolume`` and removes its finalizer. :class:`SimAttacher`
plays that sidecar with the controller calls replaced by waits on the injected clock:

* **Attach** (external-attacher ``csiHandler.syncAttach``): add the VolumeAttachment finalizer
  ``external-attacher/<sanitized driver>`` (:func:`finalizer_name`), add the same finalizer to the PV the
  attachment names, wait ``attach_time``, then merge-patch the status subresource: ``attached: true``,
  ``attachmentMetadata`` (the publish context, left out when empty as Go's ``omitempty`` does) and no
  ``attachError``.
* **Detach** (``syncDetach``): once the VolumeAttachment has a deletionTimestamp and still carries the finalizer,
  wait ``detach_time`` and remove the finalizer (the API server then deletes the object).
* **PV finalizer** (``SyncNewOrUpdatedPersistentVolume``): a PV being deleted loses the finalizer once no
  VolumeAttachment names it any more.

Invariants: the attacher only touches VolumeAttachments whose ``spec.attacher`` is one of ``drivers`` (None: every
driver), and only its own finalizer. Work goes through a rate-limited queue keyed ``va/<name>`` or ``pv/<name>``;
a pending attach or detach is a deadline (``_due``), never a sleeping worker, so a thousand attachments in flight
hold no task each. Every write is a merge patch carrying the resourceVersion it was computed from, so a stale cache
means a conflict and a retry, never a lost finalizer.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
from collections.abc import Collection, Mapping
from typing import Any

from kubeplane.api.views import meta_of, name_of, section, status_of
from kubeplane.client.clock import Clock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.interface import Client, Obj, PatchType
from kubeplane.client.workqueue import QueueShutDown, RateLimitingQueue

__all__ = ["SimAttacher", "attachment_name", "finalizer_name", "sanitize_driver_name"]

log = logging.getLogger("kubeplane.kubelet.csi_attacher")

_UNSAFE = re.compile(r"[^a-zA-Z0-9-]")


def attachment_name(volume_handle: str, driver: str, node: str) -> str:
    """Upstream ``getAttachmentName`` (``pkg/volume/csi/csi_attacher.go``): ``csi-`` + hex sha256 of the
    volume handle, the driver name and the node name, concatenated."""
    return "csi-" + hashlib.sha256(f"{volume_handle}{driver}{node}".encode()).hexdigest()


def sanitize_driver_name(driver: str) -> str:
    """external-attacher ``SanitizeDriverName``: every character outside ``[a-zA-Z0-9-]`` becomes ``-``; a
    trailing ``-`` gets an ``X``."""
    name = _UNSAFE.sub("-", driver)
    return name + "X" if name.endswith("-") else name


def finalizer_name(driver: str) -> str:
    """external-attacher ``GetFinalizerName``: ``external-attacher/`` + the sanitized driver name."""
    return "external-attacher/" + sanitize_driver_name(driver)


def attach_required(csidriver: Mapping[str, Any] | None) -> bool:
    """Upstream ``csiPlugin.skipAttach`` negated: no CSIDriver object means attach is required; else its
    ``spec.attachRequired`` (defaulted to true by the API server)."""
    if csidriver is None:
        return True
    return section(csidriver, "spec").get("attachRequired") is not False


class SimAttacher:
    """external-attacher for ``drivers`` (None: all); see the module docstring. ``await run()`` starts the
    informers it asked for, waits for their sync and runs ``workers`` workers until cancelled."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformerFactory,
        clock: Clock,
        attach_time: float = 0.0,
        detach_time: float = 0.0,
        *,
        drivers: Collection[str] | None = None,
        publish_context: Mapping[str, str] | None = None,
        workers: int = 4,
        times: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        """``times``: per driver (attach, detach) seconds, overriding ``attach_time``/``detach_time`` (the node
        config's ``csiDrivers[].attachTime``/``detachTime``)."""
        self.client, self.clock = client, clock
        self.attach_time, self.detach_time = attach_time, detach_time
        self.drivers = None if drivers is None else frozenset(drivers)
        self.publish_context = dict(publish_context or {})
        self.times = dict(times or {})
        self.workers = workers
        self._vas = client.resource("volumeattachments")
        self._pvs = client.resource("persistentvolumes")
        self._va_informer = informers.informer_for(self._vas)
        self._pv_informer = informers.informer_for(self._pvs)
        self._va_informer.add_event_handler(on_add=self._on_va, on_update=self._on_va_update, on_delete=self._on_va)
        self._pv_informer.add_event_handler(on_add=self._on_pv, on_update=self._on_pv_update)
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
        self._due: dict[str, tuple[str, float]] = {}  # VA name -> ("attach" | "detach", monotonic deadline)

    def serves(self, driver: str) -> bool:
        return self.drivers is None or driver in self.drivers

    # --- informer handlers ------------------------------------------------------------------------------------

    def _on_va_update(self, _old: Obj, va: Obj) -> None:
        self._on_va(va)

    def _on_va(self, va: Obj) -> None:
        spec = section(va, "spec")
        if not self.serves(str(spec.get("attacher") or "")):
            return
        self.queue.add("va/" + name_of(va))
        pv = section(spec, "source").get("persistentVolumeName")
        if pv and meta_of(va).get("deletionTimestamp"):
            self.queue.add("pv/" + pv)

    def _on_pv_update(self, _old: Obj, pv: Obj) -> None:
        self._on_pv(pv)

    def _on_pv(self, pv: Obj) -> None:
        meta = meta_of(pv)
        if meta.get("deletionTimestamp") and any(
            str(f).startswith("external-attacher/") for f in meta.get("finalizers") or []
        ):
            self.queue.add("pv/" + name_of(pv))

    # --- running ----------------------------------------------------------------------------------------------

    async def run(self) -> None:
        self._va_informer.start()
        self._pv_informer.start()
        await self._va_informer.wait_for_sync()
        await self._pv_informer.wait_for_sync()
        tasks = [asyncio.ensure_future(self._worker()) for _ in range(self.workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            self.queue.shut_down()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                kind, _, name = key.partition("/")
                await (self._sync_va(name) if kind == "va" else self._sync_pv(name))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("external-attacher: syncing %s failed (retrying): %s", key, exc)
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)

    def _wait(self, name: str, op: str, seconds: float) -> bool:
        """True once ``op`` on ``name`` has waited ``seconds`` since first asked; else requeue for then."""
        now = self.clock.monotonic()
        found = self._due.get(name)
        if found is None or found[0] != op:
            found = self._due[name] = (op, now + seconds)
        remaining = found[1] - now
        if remaining > 1e-9:
            self.queue.add_after("va/" + name, remaining)
            return False
        return True

    # --- VolumeAttachments ------------------------------------------------------------------------------------

    async def _sync_va(self, name: str) -> None:
        va = self._va_informer.lister().get(None, name)
        if va is None:
            self._due.pop(name, None)
            return
        spec, meta = section(va, "spec"), meta_of(va)
        driver = str(spec.get("attacher") or "")
        if not self.serves(driver):
            return
        finalizer = finalizer_name(driver)
        finalizers = [str(f) for f in meta.get("finalizers") or []]
        if meta.get("deletionTimestamp"):
            detach_time = self.times.get(driver, (self.attach_time, self.detach_time))[1]
            if finalizer in finalizers and self._wait(name, "detach", detach_time):
                await self._patch_finalizers(self._vas, va, [f for f in finalizers if f != finalizer])
                self._due.pop(name, None)
            return
        if status_of(va).get("attached"):
            self._due.pop(name, None)
            return
        if finalizer not in finalizers:
            await self._patch_finalizers(self._vas, va, [*finalizers, finalizer])
            return  # the update event brings the attachment back
        pv_name = section(spec, "source").get("persistentVolumeName")
        if pv_name:
            await self._add_pv_finalizer(str(pv_name), finalizer)
        if not self._wait(name, "attach", self.times.get(driver, (self.attach_time, self.detach_time))[0]):
            return
        status: Obj = {"attached": True, "attachError": None}
        if self.publish_context:
            status["attachmentMetadata"] = dict(self.publish_context)
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")}, "status": status}
        with contextlib.suppress(NotFoundError):
            await self.client.patch(self._vas, name, patch, patch_type=PatchType.MERGE, subresource="status")
        self._due.pop(name, None)

    # --- PersistentVolumes ------------------------------------------------------------------------------------

    async def _add_pv_finalizer(self, pv_name: str, finalizer: str) -> None:
        pv = self._pv_informer.lister().get(None, pv_name)
        if pv is None:
            return  # an attachment without its PV: upstream attaches it all the same
        finalizers = [str(f) for f in meta_of(pv).get("finalizers") or []]
        if finalizer not in finalizers and not meta_of(pv).get("deletionTimestamp"):
            await self._patch_finalizers(self._pvs, pv, [*finalizers, finalizer])

    async def _sync_pv(self, name: str) -> None:
        pv = self._pv_informer.lister().get(None, name)
        if pv is None or not meta_of(pv).get("deletionTimestamp"):
            return
        finalizers = [str(f) for f in meta_of(pv).get("finalizers") or []]
        ours = {finalizer_name(d) for d in self.drivers} if self.drivers is not None else None
        mine = [f for f in finalizers if f.startswith("external-attacher/") and (ours is None or f in ours)]
        if not mine:
            return
        for va in self._va_informer.lister().list():
            if section(section(va, "spec"), "source").get("persistentVolumeName") == name:
                return  # still attached somewhere (or detaching): keep the PV
        await self._patch_finalizers(self._pvs, pv, [f for f in finalizers if f not in mine])

    async def _patch_finalizers(self, resource: Any, obj: Obj, finalizers: list[str]) -> None:
        meta = meta_of(obj)
        patch = {"metadata": {"finalizers": finalizers or None, "resourceVersion": meta.get("resourceVersion")}}
        # a stale cache makes this a conflict: the worker retries with the queue's back-off
        with contextlib.suppress(NotFoundError):
            await self.client.patch(resource, name_of(obj), patch, patch_type=PatchType.MERGE)
