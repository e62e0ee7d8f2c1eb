"""How the StatefulSet controller writes pods and claims (upstream ``pkg/controller/statefulset/
stateful_pod_control.go``): claims are created before their pod, identity and storage are enforced on update,
claim owner references follow ``persistentVolumeClaimRetentionPolicy``, and every pod write is reported as an
event on the set with upstream's reasons and messages (``SuccessfulCreate`` / ``create Pod web-0 in
StatefulSet web successful``, ``FailedCreate`` / ``... failed error: <err>``, the same for update and delete;
claims: ``create Claim data-web-0 Pod web-0 in StatefulSet web success``).

Reads go through the informers' listers (as upstream's object manager), writes through the client. Errors are
raised to the caller, which retries the whole sync.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.views import is_being_deleted, meta_of, namespace_of
from kubeplane.client.errors import AlreadyExistsError, ConflictError
from kubeplane.client.events import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, EventRecorder
from kubeplane.client.interface import Client, Obj
from kubeplane.controllers.controller_utils import AggregateError, error_message, with_type_meta
from kubeplane.controllers.statefulset_utils import (
    get_ordinal,
    get_pvc_name,
    has_stale_owner_ref,
    has_unexpected_controller,
    identity_matches,
    is_claim_owner_up_to_date,
    persistent_volume_claims,
    retention_policy,
    storage_matches,
    update_claim_owner_refs,
    update_identity,
    update_storage,
)

__all__ = ["StatefulPodControl"]

log = logging.getLogger("kubeplane.controllers.statefulset")

_UPDATE_RETRIES: Final = 5


def typed_set(sts: Mapping[str, Any]) -> Obj:
    return with_type_meta(sts, "apps/v1", "StatefulSet")


class StatefulPodControl:
    """Upstream ``StatefulPodControl`` over ``client`` and the pods/claims listers."""

    def __init__(self, client: Client, pod_lister: Any, claim_lister: Any, recorder: EventRecorder) -> None:
        self.client = client
        self.pod_lister = pod_lister
        self.claim_lister = claim_lister
        self.recorder = recorder
        self.pods = client.resource("pods")
        self.claims = client.resource("persistentvolumeclaims")

    # --- events ------------------------------------------------------------------------------------------------

    async def record_pod_event(self, verb: str, sts: Mapping[str, Any], pod: Mapping[str, Any], err: Any) -> None:
        """Upstream ``recordPodEvent``."""
        name, set_name = meta_of(pod).get("name"), meta_of(sts).get("name")
        if err is None:
            message = f"{verb.lower()} Pod {name} in StatefulSet {set_name} successful"
            await self.recorder.event(typed_set(sts), EVENT_TYPE_NORMAL, f"Successful{verb.title()}", message)
        else:
            message = f"{verb.lower()} Pod {name} in StatefulSet {set_name} failed error: {error_message(err)}"
            await self.recorder.event(typed_set(sts), EVENT_TYPE_WARNING, f"Failed{verb.title()}", message)

    async def record_claim_event(
        self, verb: str, sts: Mapping[str, Any], pod: Mapping[str, Any], claim: Mapping[str, Any], err: Any
    ) -> None:
        """Upstream ``recordClaimEvent``."""
        claim_name, pod_name, set_name = meta_of(claim).get("name"), meta_of(pod).get("name"), meta_of(sts).get("name")
        if err is None:
            message = f"{verb.lower()} Claim {claim_name} Pod {pod_name} in StatefulSet {set_name} success"
            await self.recorder.event(typed_set(sts), EVENT_TYPE_NORMAL, f"Successful{verb.title()}", message)
        else:
            message = (
                f"{verb.lower()} Claim {claim_name} for Pod {pod_name} in StatefulSet {set_name} failed error: "
                f"{error_message(err)}"
            )
            await self.recorder.event(typed_set(sts), EVENT_TYPE_WARNING, f"Failed{verb.title()}", message)

    # --- pods --------------------------------------------------------------------------------------------------

    async def create_stateful_pod(self, sts: Mapping[str, Any], pod: Obj) -> None:
        """Upstream ``CreateStatefulPod``: the claims first, then the pod (AlreadyExists is raised without an
        event), then the claims' owner refs as far as possible."""
        try:
            await self.create_persistent_volume_claims(sts, pod)
        except Exception as exc:
            await self.record_pod_event("create", sts, pod, exc)
            raise
        try:
            created = await self.client.create(self.pods, pod, namespace=namespace_of(sts))
        except AlreadyExistsError:
            raise
        except Exception as exc:
            await self.record_pod_event("create", sts, pod, exc)
            raise
        try:
            await self.update_pod_claim_for_retention_policy(sts, created)
        except Exception as exc:
            await self.record_pod_event("update", sts, pod, exc)
            raise
        await self.record_pod_event("create", sts, pod, None)

    async def update_stateful_pod(self, sts: Mapping[str, Any], pod: Obj) -> None:
        """Upstream ``UpdateStatefulPod`` (``pod`` is a copy): restore identity and storage (creating missing
        claims) and the claims' retention refs; write the pod only if it changed, retrying conflicts on a fresh
        copy from the lister. An event is recorded only when a write was attempted."""
        attempted = False
        error: Exception | None = None
        for attempt in range(_UPDATE_RETRIES):
            consistent = True
            if not identity_matches(sts, pod):
                update_identity(sts, pod)
                consistent = False
            if not storage_matches(sts, pod):
                update_storage(sts, pod)
                consistent = False
                try:
                    await self.create_persistent_volume_claims(sts, pod)
                except Exception as exc:
                    await self.record_pod_event("update", sts, pod, exc)
                    raise
            try:
                if not await self.claims_match_retention_policy(sts, pod):
                    await self.update_pod_claim_for_retention_policy(sts, pod)
                    consistent = False
            except Exception as exc:
                await self.record_pod_event("update", sts, pod, exc)
                raise
            if consistent:
                return
            attempted = True
            try:
                await self.client.update(self.pods, pod, namespace=namespace_of(sts))
                error = None
                break
            except ConflictError as exc:
                error = exc
                fresh = self.pod_lister.get(namespace_of(sts), meta_of(pod).get("name"))
                if fresh is not None:
                    pod = copy.deepcopy(fresh)
                if attempt == _UPDATE_RETRIES - 1:
                    break
            except Exception as exc:
                error = exc
                break
        if attempted:
            await self.record_pod_event("update", sts, pod, error)
        if error is not None:
            raise error

    async def delete_stateful_pod(self, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """Upstream ``DeleteStatefulPod``: delete and report (a failure too) as an event."""
        try:
            await self.client.delete(self.pods, str(meta_of(pod).get("name")), namespace=namespace_of(pod))
        except Exception as exc:
            await self.record_pod_event("delete", sts, pod, exc)
            raise
        await self.record_pod_event("delete", sts, pod, None)

    # --- claims ------------------------------------------------------------------------------------------------

    def _claim(self, namespace: str, name: str) -> Obj | None:
        found: Obj | None = self.claim_lister.get(namespace, name)
        return found

    async def claims_match_retention_policy(self, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
        """Upstream ``ClaimsMatchRetentionPolicy``: a missing claim is picked up next time (True)."""
        ordinal = get_ordinal(pod)
        for template in spec_templates(sts):
            claim = self._claim(namespace_of(sts), get_pvc_name(sts, template, ordinal))
            if claim is not None and not is_claim_owner_up_to_date(claim, sts, pod):
                return False
        return True

    async def update_pod_claim_for_retention_policy(self, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """Upstream ``UpdatePodClaimForRetentionPolicy``: rewrite each claim's refs the policy disagrees with;
        a foreign controller gets a ``ConflictingController`` warning and only our refs removed."""
        ordinal = get_ordinal(pod)
        for template in spec_templates(sts):
            claim_name = get_pvc_name(sts, template, ordinal)
            claim = self._claim(namespace_of(sts), claim_name)
            if claim is None:
                continue
            if has_unexpected_controller(claim, sts, pod):
                msg = (
                    f"PersistentVolumeClaim {claim_name} has a conflicting OwnerReference that acts as a manging "
                    "controller, the retention policy is ignored for this claim"
                )
                await self.recorder.event(typed_set(sts), EVENT_TYPE_WARNING, "ConflictingController", msg)
            if not is_claim_owner_up_to_date(claim, sts, pod):
                updated = copy.deepcopy(claim)
                update_claim_owner_refs(updated, sts, pod)
                try:
                    await self.client.update(self.claims, updated, namespace=namespace_of(sts))
                except Exception as exc:
                    raise RuntimeError(
                        f"could not update claim {claim_name} for delete policy ownerRefs: {error_message(exc)}"
                    ) from exc

    async def pod_claim_is_stale(self, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
        """Upstream ``PodClaimIsStale``: with whenScaled Delete, a claim owned by an earlier pod of this name
        blocks creating the pod until the garbage collector has removed it."""
        if retention_policy(sts)[1] == "Retain":
            return False
        for claim in persistent_volume_claims(sts, pod).values():
            existing = self._claim(namespace_of(sts), claim["metadata"]["name"])
            if existing is not None and has_stale_owner_ref(existing, pod, "v1", "Pod"):
                return True
        return False

    async def create_missing_persistent_volume_claims(self, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """Upstream ``createMissingPersistentVolumeClaims`` (for a Pending pod)."""
        await self.create_persistent_volume_claims(sts, pod)
        try:
            await self.update_pod_claim_for_retention_policy(sts, pod)
        except Exception as exc:
            await self.record_pod_event("update", sts, pod, exc)
            raise

    async def create_persistent_volume_claims(self, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
        """Upstream ``createPersistentVolumeClaims``: create the claims that do not exist; one being deleted is
        an error (the pod must wait for it to go)."""
        errors: list[BaseException] = []
        for claim in persistent_volume_claims(sts, pod).values():
            name = claim["metadata"]["name"]
            existing = self._claim(namespace_of(sts), name)
            if existing is None:
                try:
                    await self.client.create(self.claims, claim, namespace=namespace_of(sts))
                except AlreadyExistsError as exc:
                    errors.append(RuntimeError(f"failed to create PVC {name}: {error_message(exc)}"))
                    continue
                except Exception as exc:
                    errors.append(RuntimeError(f"failed to create PVC {name}: {error_message(exc)}"))
                    await self.record_claim_event("create", sts, pod, claim, exc)
                    continue
                await self.record_claim_event("create", sts, pod, claim, None)
            elif is_being_deleted(existing):
                errors.append(RuntimeError(f"pvc {name} is being deleted"))
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise AggregateError(errors)


def spec_templates(sts: Mapping[str, Any]) -> list[Obj]:
    return [t for t in (sts.get("spec") or {}).get("volumeClaimTemplates") or () if isinstance(t, dict)]
