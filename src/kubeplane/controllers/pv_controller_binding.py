"""Claim syncs of the PV controller (upstream ``pv_controller.go``: ``syncClaim``, ``syncUnboundClaim``,
``syncBoundClaim``, ``provisionClaim``, ``provisionClaimOperationExternal``,
``emitEventForUnboundDelayBindingClaim``).

A claim without ``pv.kubernetes.io/bind-completed`` is unbound: it is bound to the volume it names, or to the
best matching volume; with none, it gets the default class (retroactively), waits for its first consumer
(WaitForFirstConsumer class without ``selected-node``), asks its class's provisioner, or stays Pending with
FailedBinding. A bound claim whose volume vanished or went to another claim is Lost (terminal).

Every provisioner is external here (kubeplane has no in-tree volume plugins, as a CSI-only cluster): the
controller only annotates the claim with ``volume.kubernetes.io/storage-provisioner`` (and the beta key) and
reports ExternalProvisioning; the provisioner (kubeplane's simulated CSI driver) creates the PV with a claimRef,
and the next sync binds it. A ``kubernetes.io/`` provisioner names an in-tree plugin, which does not exist:
ProvisioningFailed, as upstream without that plugin.
"""

from __future__ import annotations

import logging

from kubeplane.api.views import meta_of, spec_of
from kubeplane.api.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    claim_class,
    claim_key,
    is_delay_binding_provisioning,
    is_volume_bound_to_claim,
)
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers.pv_controller_operations import Operations
from kubeplane.controllers.pv_controller_util import (
    EXTERNAL_PROVISIONING,
    FAILED_BINDING,
    POD_PVC_INDEX,
    PROVISIONING_FAILED,
    VOLUME_MISMATCH,
    WAIT_FOR_FIRST_CONSUMER,
    WAIT_FOR_POD_SCHEDULED,
    check_volume_satisfy_claim,
    claimref_key,
    is_pod_terminated,
)
from kubeplane.controllers.pv_controller_writes import PVWrites

__all__ = ["ClaimSync"]

log = logging.getLogger("kubeplane.controllers.pv_controller")


class ClaimSync(PVWrites):
    """See the module docstring."""

    operations: Operations

    async def sync_claim(self, claim: Obj) -> None:
        """Upstream ``syncClaim`` (CSI migration annotations left out: no in-tree plugin is migrated)."""
        if ANN_BIND_COMPLETED not in (meta_of(claim).get("annotations") or {}):
            await self.sync_unbound_claim(claim)
        else:
            await self.sync_bound_claim(claim)

    def is_delay_binding_mode(self, claim: Obj) -> bool:
        """Upstream ``IsDelayBindingMode``: the claim's class exists and binds WaitForFirstConsumer."""
        name = claim_class(claim)
        if not name:
            return False
        cls = self.class_lister.get(None, name)
        if cls is None:
            return False
        mode = cls.get("volumeBindingMode")
        if mode is None:
            raise ValueError(f'VolumeBindingMode not set for StorageClass "{name}"')
        return bool(mode == "WaitForFirstConsumer")

    async def sync_unbound_claim(self, claim: Obj) -> None:
        """Upstream ``syncUnboundClaim`` (unit test sets 1 and 2)."""
        volume_name = spec_of(claim).get("volumeName") or ""
        if not volume_name:
            delay_binding = self.is_delay_binding_mode(claim)
            try:
                volume = self.volumes.find_best_match_for_claim(claim, delay_binding)
            except ValueError as exc:
                raise RuntimeError(f'error finding PV for claim "{claim_key(claim)}": {exc}') from exc
            if volume is None:
                if await self.assign_default_storage_class(claim):
                    return
                if delay_binding and not is_delay_binding_provisioning(claim):
                    self.emit_event_for_unbound_delay_binding_claim(claim)
                elif claim_class(claim) != "":
                    await self.provision_claim(claim)
                    return
                else:
                    self.recorder.record(
                        claim,
                        EVENT_TYPE_NORMAL,
                        FAILED_BINDING,
                        "no persistent volumes available for this claim and no storage class is set",
                    )
                await self.update_claim_status(claim, "Pending", None)
                return
            await self.bind(volume, claim)
            return
        volume = self.volumes.get(volume_name)
        if volume is None:
            # The claim names a volume that does not exist (yet): Pending, retried on the next sync.
            await self.update_claim_status(claim, "Pending", None)
            return
        if not spec_of(volume).get("claimRef"):
            reason = check_volume_satisfy_claim(volume, claim)
            if reason is not None:
                self.recorder.record(
                    claim,
                    EVENT_TYPE_WARNING,
                    VOLUME_MISMATCH,
                    f'Cannot bind to requested volume "{volume_name}": {reason}',
                )
                await self.update_claim_status(claim, "Pending", None)
                return
            await self.bind(volume, claim)
            return
        if is_volume_bound_to_claim(volume, claim):
            await self.bind(volume, claim)
            return
        message = f'volume "{volume_name}" already bound to a different claim.'
        self.recorder.record(claim, EVENT_TYPE_WARNING, FAILED_BINDING, message)
        if ANN_BOUND_BY_CONTROLLER not in (meta_of(claim).get("annotations") or {}):
            await self.update_claim_status(claim, "Pending", None)
            return
        # Someone removed bind-completed from a claim the controller bound: upstream's "should never happen".
        raise RuntimeError(
            f'invalid binding of claim "{claim_key(claim)}" to volume "{volume_name}": volume already claimed by '
            f'"{claimref_key(spec_of(volume)["claimRef"])}"'
        )

    async def sync_bound_claim(self, claim: Obj) -> None:
        """Upstream ``syncBoundClaim`` (unit test set 3)."""
        volume_name = spec_of(claim).get("volumeName") or ""
        if not volume_name:
            await self.update_claim_status_with_event(
                claim,
                "Lost",
                None,
                EVENT_TYPE_WARNING,
                "ClaimLost",
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
            )
            return
        volume = self.volumes.get(volume_name)
        if volume is None:
            await self.update_claim_status_with_event(
                claim,
                "Lost",
                None,
                EVENT_TYPE_WARNING,
                "ClaimLost",
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
            )
            return
        ref = spec_of(volume).get("claimRef")
        if not ref or (ref.get("uid") or "") == (meta_of(claim).get("uid") or ""):
            # Unbound volume (or its update not seen yet), or all is well: (re)bind; a no-op when complete.
            await self.bind(volume, claim)
            return
        await self.update_claim_status_with_event(
            claim,
            "Lost",
            None,
            EVENT_TYPE_WARNING,
            "ClaimMisbound",
            "Two claims are bound to the same volume, this one is bound incorrectly",
        )

    def find_non_scheduled_pods_by_pvc(self, claim: Obj) -> list[str]:
        """Upstream ``findNonScheduledPodsByPVC``: active pods using the claim that have no node yet."""
        pods = self.pod_indexer.by_index(POD_PVC_INDEX, claim_key(claim))
        return [
            str(meta_of(p).get("name")) for p in pods if not is_pod_terminated(p) and not spec_of(p).get("nodeName")
        ]

    def emit_event_for_unbound_delay_binding_claim(self, claim: Obj) -> None:
        """Upstream ``emitEventForUnboundDelayBindingClaim``."""
        reason, message = WAIT_FOR_FIRST_CONSUMER, "waiting for first consumer to be created before binding"
        names = self.find_non_scheduled_pods_by_pvc(claim)
        if names:
            reason = WAIT_FOR_POD_SCHEDULED
            if len(names) > 1:
                message = f"waiting for pods {','.join(names)} to be scheduled"
            else:
                message = f"waiting for pod {names[0]} to be scheduled"
        self.recorder.record(claim, EVENT_TYPE_NORMAL, reason, message)

    async def provision_claim(self, claim: Obj) -> None:
        """Upstream ``provisionClaim`` + ``findProvisionablePlugin``: a missing class or an in-tree provisioner
        is reported (ProvisioningFailed) and retried on later syncs; an external one is asked for by annotation
        in a named operation (``provision-<ns>/<name>[<uid>]``)."""
        if not self.enable_dynamic_provisioning:
            return
        name = claim_class(claim)
        cls = self.class_lister.get(None, name)
        if cls is None:
            message = f'storageclass.storage.k8s.io "{name}" not found'
            self.recorder.record(claim, EVENT_TYPE_WARNING, PROVISIONING_FAILED, message)
            log.error("Error finding provisioning plugin for claim %s: %s", claim_key(claim), message)
            return
        provisioner = str(cls.get("provisioner") or "")
        if provisioner.startswith("kubernetes.io/"):
            message = f"no volume plugin matched name: {provisioner}"
            self.recorder.record(claim, EVENT_TYPE_WARNING, PROVISIONING_FAILED, message)
            log.error("Error finding provisioning plugin for claim %s: %s", claim_key(claim), message)
            return
        op_name = f"provision-{claim_key(claim)}[{meta_of(claim).get('uid') or ''}]"

        async def operation() -> None:
            await self.provision_claim_operation_external(claim, provisioner)

        self.operations.run(op_name, operation)

    async def provision_claim_operation_external(self, claim: Obj, provisioner: str) -> None:
        """Upstream ``provisionClaimOperationExternal``: annotate, then report ExternalProvisioning."""
        try:
            claim = await self.set_claim_provisioner(claim, provisioner)
        except Exception as exc:
            self.recorder.record(claim, EVENT_TYPE_WARNING, PROVISIONING_FAILED, f"Error saving claim: {exc}")
            raise
        message = (
            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
            "or manually by the system administrator. If volume creation is delayed, please verify that "
            "the provisioner is running and correctly registered."
        )
        self.recorder.record(claim, EVENT_TYPE_NORMAL, EXTERNAL_PROVISIONING, message)
