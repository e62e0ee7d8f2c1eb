"""Registry strategies of the storage kinds, as upstream's ``pkg/registry/core/persistentvolume(claim)/strategy.go``
and ``pkg/registry/storage/{csidriver,volumeattachment}/strategy.go`` (v1.37).

* **PersistentVolume**: create resets the status to ``phase: Pending`` with ``lastPhaseTransitionTime`` now
  (PersistentVolumeLastPhaseTransitionTime, GA); an update of the main resource keeps the stored status; a
  ``/status`` write keeps the stored spec and stamps ``lastPhaseTransitionTime`` when the phase changes and the
  writer did not set a new time itself (kept from the old status when the phase did not change and the writer
  sent none).
* **PersistentVolumeClaim**: create resets the status (the defaulter then shows ``phase: Pending``); update keeps
  it; ``/status`` keeps the spec.
* **VolumeAttachment**: the same status split (the created status is ``{attached: false}``, Go's zero status);
  the spec is read-only (validation), so no generation.
* **CSIDriver**: ``metadata.generation`` is 1 on create and moves when the spec changes (no status).

None of these set ``metadata.generation`` except CSIDriver: upstream's generic registry leaves it to the strategy,
and these strategies do not touch it (unlike :class:`~.strategies.Strategy`'s default for kinds with a status).
CSINode, CSIStorageCapacity and StorageClass keep the default strategy (no status, no generation).
"""

from __future__ import annotations

from typing import Final

from kubeplane.api.meta import format_time
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.validation.common import normalize

from .strategies import Obj, Strategy

__all__ = [
    "STORAGE_STRATEGIES",
    "CSIDriverStrategy",
    "PersistentVolumeStrategy",
    "StatusSplitStrategy",
    "VolumeAttachmentStrategy",
]


class StatusSplitStrategy(Strategy):
    """Status reset on create, kept on update, spec kept on ``/status``: no ``metadata.generation``."""

    def __init__(self, info: ResourceInfo) -> None:
        super().__init__(info)
        self.tracks_generation = False


class PersistentVolumeStrategy(StatusSplitStrategy):
    """``persistentvolumeStrategy`` and ``persistentvolumeStatusStrategy``."""

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": format_time(self.now())}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        status = new.get("status")
        if not isinstance(status, dict):
            status = new["status"] = {}
        old_status = old.get("status") if isinstance(old.get("status"), dict) else {}
        old_phase, phase = (old_status or {}).get("phase") or "", status.get("phase") or ""
        given, old_time = status.get("lastPhaseTransitionTime"), (old_status or {}).get("lastPhaseTransitionTime")
        if old_phase == phase and given is None:
            if old_time is not None:
                status["lastPhaseTransitionTime"] = old_time
        elif old_phase != phase and (given is None or given == old_time):
            status["lastPhaseTransitionTime"] = format_time(self.now())


class VolumeAttachmentStrategy(StatusSplitStrategy):
    """``volumeAttachmentStrategy``: the status reset on create to the zero VolumeAttachmentStatus, which Go
    writes as ``{"attached": false}`` (the field has no ``omitempty``); a ``/status`` write keeps the spec (and,
    MutableCSINodeAllocatableCount being on, the errors' ``errorCode``)."""

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"attached": False}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        status = new.get("status")
        if not isinstance(status, dict):
            status = new["status"] = {}
        status.setdefault("attached", False)


class CSIDriverStrategy(Strategy):
    """``csiDriverStrategy``: generation 1 on create, one more when the spec changes."""

    def __init__(self, info: ResourceInfo) -> None:
        super().__init__(info)
        self.tracks_generation = False

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        generation = int(old["metadata"].get("generation") or 1)
        if normalize(new.get("spec")) != normalize(old.get("spec")):
            generation += 1
        new["metadata"]["generation"] = generation


STORAGE_STRATEGIES: Final[dict[tuple[str, str], type[Strategy]]] = {
    ("", "PersistentVolume"): PersistentVolumeStrategy,
    ("", "PersistentVolumeClaim"): StatusSplitStrategy,
    ("storage.k8s.io", "VolumeAttachment"): VolumeAttachmentStrategy,
    ("storage.k8s.io", "CSIDriver"): CSIDriverStrategy,
}
