"""The PV protection controller (upstream ``pkg/controller/volume/pvprotection``, v1.37, controller
``pv-protection``): the ``kubernetes.io/pv-protection`` finalizer keeps a PersistentVolume that is bound from going
away.

A volume being deleted that still carries the finalizer loses it once it is not ``Bound`` (``status.phase``, which
the PV controller keeps: upstream's ``isBeingUsed``); a volume not being deleted and lacking the finalizer gets it
(volumes created before the admission plugin ran). Volumes are queued on their own add/update when either applies;
a Bound volume stays queued-by-event: its next update (released, failed, available) queues it again.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Final

from kubeplane.api.views import meta_of, status_of
from kubeplane.client.interface import Obj

from .base import Controller, ControllerContext, split_key
from .pvc_protection import _finalizers, is_deletion_candidate, need_to_add_finalizer

__all__ = ["PV_PROTECTION_FINALIZER", "PVProtectionController"]

log = logging.getLogger("kubeplane.controllers.pv_protection")

PV_PROTECTION_FINALIZER: Final = "kubernetes.io/pv-protection"


class PVProtectionController(Controller):
    name: ClassVar[str] = "pv-protection"
    workers: ClassVar[int] = 1  # upstream starts it with one worker

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        self.pvs = ctx.client.resource("persistentvolumes")
        informer = ctx.informers.informer_for(self.pvs)
        self.pv_lister = informer.lister()
        informer.add_event_handler(on_add=self._pv_changed, on_update=lambda _old, new: self._pv_changed(new))

    def _pv_changed(self, pv: Obj) -> None:
        """``pvAddedUpdated``."""
        if need_to_add_finalizer(pv, PV_PROTECTION_FINALIZER) or is_deletion_candidate(pv, PV_PROTECTION_FINALIZER):
            self.enqueue(pv)

    async def sync(self, key: str) -> None:
        """``processPV``."""
        _, name = split_key(key)
        pv = self.pv_lister.get(None, name)
        if pv is None:
            return
        if is_deletion_candidate(pv, PV_PROTECTION_FINALIZER):
            if status_of(pv).get("phase") != "Bound":
                await self._set_finalizers(pv, [f for f in _finalizers(pv) if f != PV_PROTECTION_FINALIZER])
                log.info("Removed protection finalizer from PV %s", name)
                return
            log.debug("Keeping PV %s because it is being used", name)
        if need_to_add_finalizer(pv, PV_PROTECTION_FINALIZER):
            await self._set_finalizers(pv, [*_finalizers(pv), PV_PROTECTION_FINALIZER])

    async def _set_finalizers(self, pv: Obj, finalizers: list[str]) -> None:
        clone: dict[str, Any] = {**pv, "metadata": {**meta_of(pv), "finalizers": finalizers}}
        await self.client.update(self.pvs, clone)
