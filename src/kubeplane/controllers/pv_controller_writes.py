"""The PV controller's writes: phases, bindings and annotations saved to the API server and, at once, to the
controller's own caches (upstream ``pv_controller.go``: ``updateClaimStatus``, ``updateVolumePhase``, ``bind``,
``unbindVolume``, ``assignDefaultStorageClass``; ``pv_controller_base.go``: ``setClaimProvisioner``).

Invariants: objects read from informers or caches are never changed in place (every write starts from a deep
copy); a write that would change nothing is not sent (so a level-triggered resync costs no API calls); an event
tied to a phase change (``...WithEvent``) is emitted only when the phase actually changed; binding saves the
volume first, then its status, then the claim, then its status, and stops at the first error, the next sync
finishing it (upstream's two-step binding, recoverable at every point).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.views import meta_of, spec_of, status_of
from kubeplane.api.volumes import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_STORAGE_PROVISIONER,
    claim_has_class,
    get_bind_volume_to_claim,
    quantity_of,
)
from kubeplane.client.cache import Indexer, Lister
from kubeplane.client.events import EventRecorder
from kubeplane.client.interface import Client, Obj
from kubeplane.controllers.podutil import parse_timestamp
from kubeplane.controllers.pv_controller_index import ObjectStore, VolumeIndex, store_object_update

__all__ = ["PVWrites", "default_class"]

log = logging.getLogger("kubeplane.controllers.pv_controller")

ANN_PRE_RESIZE_CAPACITY: Final = "volume.alpha.kubernetes.io/pre-resize-capacity"
ANN_DEFAULT_CLASS: Final = "storageclass.kubernetes.io/is-default-class"
ANN_BETA_DEFAULT_CLASS: Final = "storageclass.beta.kubernetes.io/is-default-class"


def default_class(classes: list[Obj]) -> Obj | None:
    """Upstream ``util.GetDefaultClass``: of the classes annotated default, the newest, ties by name."""
    defaults = [
        c
        for c in classes
        if (meta_of(c).get("annotations") or {}).get(ANN_DEFAULT_CLASS) == "true"
        or (meta_of(c).get("annotations") or {}).get(ANN_BETA_DEFAULT_CLASS) == "true"
    ]
    if not defaults:
        return None
    defaults.sort(
        key=lambda c: (-(parse_timestamp(meta_of(c).get("creationTimestamp")) or 0.0), meta_of(c).get("name"))
    )
    if len(defaults) > 1:
        log.info("%d default StorageClasses were found, choosing: %s", len(defaults), meta_of(defaults[0]).get("name"))
    return defaults[0]


def _set_annotation(obj: Obj, key: str, value: str) -> None:
    meta = obj.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), key: value}


class PVWrites:
    """State and writes shared by claim and volume syncs; :class:`~.pv_controller.PersistentVolumeController`
    sets the attributes."""

    client: Client
    recorder: EventRecorder
    volumes: VolumeIndex
    claims: ObjectStore
    claim_lister: Lister
    volume_lister: Lister
    class_lister: Lister
    pod_indexer: Indexer
    enable_dynamic_provisioning: bool

    # --- caches ----------------------------------------------------------------------------------------------

    def store_volume_update(self, volume: Obj) -> bool:
        return store_object_update(self.volumes, volume, "volume")

    def store_claim_update(self, claim: Obj) -> bool:
        return store_object_update(self.claims, claim, "claim")

    # --- claims ----------------------------------------------------------------------------------------------

    async def update_claim_status(self, claim: Obj, phase: str, volume: Mapping[str, Any] | None) -> Obj:
        """Upstream ``updateClaimStatus``: phase, and access modes and capacity from ``volume`` (cleared when
        None). Capacity is copied only when the claim is becoming ``phase``: a later difference may be a
        resize in progress and is kept."""
        status = status_of(claim)
        clone = copy.deepcopy(claim)
        new_status = clone.setdefault("status", {})
        dirty = False
        if status.get("phase") != phase:
            new_status["phase"] = phase
            dirty = True
        if volume is None:
            for key in ("accessModes", "capacity"):
                if status.get(key) is not None:
                    new_status.pop(key, None)
                    dirty = True
        else:
            modes = spec_of(volume).get("accessModes")
            if status.get("accessModes") != modes:
                new_status["accessModes"] = copy.deepcopy(modes)
                dirty = True
            if status.get("phase") != phase:
                capacity = spec_of(volume).get("capacity") or {}
                if "storage" not in capacity:
                    raise ValueError(f'PersistentVolume "{meta_of(volume).get("name")}" is without a storage capacity')
                pre_resize = (meta_of(volume).get("annotations") or {}).get(ANN_PRE_RESIZE_CAPACITY)
                have = (status.get("capacity") or {}).get("storage")
                if pre_resize is not None:
                    new_status["capacity"] = {**(new_status.get("capacity") or {}), "storage": pre_resize}
                    dirty = True
                elif have is None or quantity_of(capacity["storage"]).cmp(quantity_of(have)) != 0:
                    new_status["capacity"] = copy.deepcopy(capacity)
                    dirty = True
        if not dirty:
            return claim
        new_claim = await self.client.update(
            self.client.resource("persistentvolumeclaims"),
            clone,
            namespace=meta_of(claim).get("namespace"),
            subresource="status",
        )
        self.store_claim_update(new_claim)
        log.info(
            "Claim entered phase: PVC=%s/%s phase=%s",
            meta_of(claim).get("namespace"),
            meta_of(claim).get("name"),
            phase,
        )
        return new_claim

    async def update_claim_status_with_event(
        self, claim: Obj, phase: str, volume: Mapping[str, Any] | None, event_type: str, reason: str, message: str
    ) -> Obj:
        """Upstream ``updateClaimStatusWithEvent``: the event only when the phase changes."""
        if status_of(claim).get("phase") == phase:
            return claim
        new_claim = await self.update_claim_status(claim, phase, volume)
        self.recorder.record(new_claim, event_type, reason, message)
        return new_claim

    async def bind_claim_to_volume(self, claim: Obj, volume: Mapping[str, Any]) -> Obj:
        """Upstream ``bindClaimToVolume``: ``spec.volumeName`` (with ``bound-by-controller`` when the controller
        chose it) and ``bind-completed``."""
        clone = copy.deepcopy(claim)
        dirty = False
        volume_name = meta_of(volume).get("name")
        if spec_of(claim).get("volumeName") != volume_name:
            dirty = True
            clone.setdefault("spec", {})["volumeName"] = volume_name
            if ANN_BOUND_BY_CONTROLLER not in (meta_of(clone).get("annotations") or {}):
                _set_annotation(clone, ANN_BOUND_BY_CONTROLLER, "yes")
        if ANN_BIND_COMPLETED not in (meta_of(clone).get("annotations") or {}):
            _set_annotation(clone, ANN_BIND_COMPLETED, "yes")
            dirty = True
        if not dirty:
            return claim
        log.info("Volume bound to claim: PVC=%s volume=%s", meta_of(claim).get("name"), volume_name)
        new_claim = await self.client.update(
            self.client.resource("persistentvolumeclaims"), clone, namespace=meta_of(claim).get("namespace")
        )
        self.store_claim_update(new_claim)
        return new_claim

    async def set_claim_provisioner(self, claim: Obj, provisioner: str) -> Obj:
        """Upstream ``setClaimProvisioner``: both provisioner annotations (GA and the deprecated beta one)."""
        if (meta_of(claim).get("annotations") or {}).get(ANN_STORAGE_PROVISIONER) == provisioner:
            return claim
        clone = copy.deepcopy(claim)
        _set_annotation(clone, ANN_BETA_STORAGE_PROVISIONER, provisioner)
        _set_annotation(clone, ANN_STORAGE_PROVISIONER, provisioner)
        new_claim = await self.client.update(
            self.client.resource("persistentvolumeclaims"), clone, namespace=meta_of(claim).get("namespace")
        )
        self.store_claim_update(new_claim)
        return new_claim

    async def assign_default_storage_class(self, claim: Obj) -> bool:
        """Upstream ``assignDefaultStorageClass`` (retroactive default class): a claim with no class at all
        gets the default one; True when the claim was updated (the sync then starts over on its event)."""
        if claim_has_class(claim):
            return False
        cls = default_class(self.class_lister.list())
        if cls is None:
            return False
        clone = copy.deepcopy(claim)
        clone.setdefault("spec", {})["storageClassName"] = meta_of(cls).get("name")
        await self.client.update(
            self.client.resource("persistentvolumeclaims"), clone, namespace=meta_of(claim).get("namespace")
        )
        return True

    # --- volumes ---------------------------------------------------------------------------------------------

    async def update_volume_phase(self, volume: Obj, phase: str, message: str = "") -> Obj:
        """Upstream ``updateVolumePhase``: phase and message (the message cleared when empty)."""
        if status_of(volume).get("phase") == phase:
            return volume
        clone = copy.deepcopy(volume)
        status = clone.setdefault("status", {})
        status["phase"] = phase
        if message:
            status["message"] = message
        else:
            status.pop("message", None)
        new_volume = await self.client.update(self.client.resource("persistentvolumes"), clone, subresource="status")
        self.store_volume_update(new_volume)
        log.info("Volume entered phase: volume=%s phase=%s", meta_of(volume).get("name"), phase)
        return new_volume

    async def update_volume_phase_with_event(
        self, volume: Obj, phase: str, event_type: str, reason: str, message: str
    ) -> Obj:
        """Upstream ``updateVolumePhaseWithEvent``: the event only when the phase changes."""
        if status_of(volume).get("phase") == phase:
            return volume
        new_volume = await self.update_volume_phase(volume, phase, message)
        self.recorder.record(new_volume, event_type, reason, message)
        return new_volume

    async def bind_volume_to_claim(self, volume: Obj, claim: Obj) -> Obj:
        """Upstream ``bindVolumeToClaim``: save the volume only if binding changed it."""
        clone, dirty = get_bind_volume_to_claim(volume, claim)
        if not dirty:
            return volume
        log.info("Claim bound to volume: PVC=%s volume=%s", meta_of(claim).get("name"), meta_of(volume).get("name"))
        new_volume = await self.client.update(self.client.resource("persistentvolumes"), clone)
        self.store_volume_update(new_volume)
        return new_volume

    async def bind(self, volume: Obj, claim: Obj) -> None:
        """Upstream ``bind``: volume, volume status, claim, claim status; the first error stops it."""
        volume = await self.bind_volume_to_claim(volume, claim)
        volume = await self.update_volume_phase(volume, "Bound")
        claim = await self.bind_claim_to_volume(claim, volume)
        await self.update_claim_status(claim, "Bound", volume)

    async def unbind_volume(self, volume: Obj) -> None:
        """Upstream ``unbindVolume``: a controller binding is removed; a user's pre-binding keeps its name and
        loses only its UID. Then the volume is Available."""
        clone = copy.deepcopy(volume)
        annotations = dict(meta_of(volume).get("annotations") or {})
        if ANN_BOUND_BY_CONTROLLER in annotations:
            clone["spec"].pop("claimRef", None)
            annotations.pop(ANN_BOUND_BY_CONTROLLER)
            if annotations:
                clone["metadata"]["annotations"] = annotations
            else:
                clone["metadata"].pop("annotations", None)
        else:
            clone["spec"]["claimRef"].pop("uid", None)
        new_volume = await self.client.update(self.client.resource("persistentvolumes"), clone)
        self.store_volume_update(new_volume)
        await self.update_volume_phase(new_volume, "Available")
