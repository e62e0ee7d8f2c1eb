"""Which ResourceClaim a pod's ``spec.resourceClaims[]`` entry means: upstream's
``k8s.io/dynamic-resource-allocation/resourceclaim`` helpers (``Name``, ``IsForPod``, ``IsReservedForPod``,
``CanBeReserved``, ``PodClaims``), shared by the resourceclaim controller and the kubelet's DRA manager.

Invariants: a claim generated from a template is known only through ``pod.status.resourceClaimStatuses`` (never by
guessing ``<pod>-<claim>``, the pre-1.28 naming), and such a claim must be *controlled by* the pod (ownerReference
with ``controller: true`` and the pod's uid) before anyone uses it -- a claim of the same name left behind by
another pod is not this pod's. Error texts are upstream's, byte for byte, because they surface in events.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = [
    "DELETE_PROTECTION_FINALIZER",
    "RESERVED_FOR_MAX_SIZE",
    "ClaimNameError",
    "can_be_reserved",
    "claim_name",
    "is_for_pod",
    "is_reserved_for_pod",
    "pod_claim_names",
]

DELETE_PROTECTION_FINALIZER: Final = "resource.kubernetes.io/delete-protection"
"""``resourceapi.Finalizer``: set by the scheduler when it allocates; the controller removes it with the allocation."""

RESERVED_FOR_MAX_SIZE: Final = 256
"""``resourceapi.ResourceClaimReservedForMaxSize``."""

ERR_API_UNSUPPORTED: Final = "none of the supported fields are set"
ERR_CLAIM_NOT_FOUND: Final = "ResourceClaim not created yet"


class ClaimNameError(Exception):
    """``resourceclaim.Name``'s error; ``not_found`` is ``errors.Is(err, ErrClaimNotFound)``."""

    def __init__(self, message: str, *, not_found: bool) -> None:
        super().__init__(message)
        self.not_found = not_found


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def claim_name(pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: ``(name, must_check_owner)``; ``(None, False)`` when the claim was intentionally not
    created; raises :class:`ClaimNameError` when the template's claim is not recorded yet or no source is set."""
    meta = _meta(pod)
    ref = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    if pod_claim.get("resourceClaimName") is not None:
        return str(pod_claim["resourceClaimName"]), False
    if pod_claim.get("resourceClaimTemplateName") is not None:
        for status in _status(pod).get("resourceClaimStatuses") or ():
            if isinstance(status, Mapping) and status.get("name") == pod_claim.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name is not None else None), True
        raise ClaimNameError(f'pod "{ref}": {ERR_CLAIM_NOT_FOUND}', not_found=True)
    raise ClaimNameError(
        f'pod "{ref}", spec.resourceClaim "{pod_claim.get("name", "")}": {ERR_API_UNSUPPORTED}', not_found=False
    )


def pod_claim_names(pod: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """``resourceclaim.PodClaims``: ``(claim name, must_check_owner)`` of every claim the pod references that
    exists by now -- its ``spec.resourceClaims`` once created, then the DRA extended-resource claim of
    ``status.extendedResourceClaimStatus`` (always owner-checked)."""
    spec = pod.get("spec")
    for pod_claim in (spec.get("resourceClaims") if isinstance(spec, Mapping) else None) or ():
        if not isinstance(pod_claim, Mapping):
            continue
        try:
            name, check = claim_name(pod, pod_claim)
        except ClaimNameError:
            continue
        if name is not None:
            yield name, check
    extended = _status(pod).get("extendedResourceClaimStatus")
    if isinstance(extended, Mapping) and extended.get("resourceClaimName"):
        yield str(extended["resourceClaimName"]), True


def is_controlled_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    """``metav1.IsControlledBy``: the controller ownerReference carries the owner's uid."""
    uid = _meta(owner).get("uid")
    return any(
        isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid") == uid
        for ref in _meta(obj).get("ownerReferences") or ()
    )


def is_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> str | None:
    """``resourceclaim.IsForPod``: None when the claim was created for the pod, else upstream's error text."""
    pm, cm = _meta(pod), _meta(claim)
    if cm.get("namespace") != pm.get("namespace") or not is_controlled_by(claim, pod):
        return (
            f"ResourceClaim {cm.get('namespace', '')}/{cm.get('name', '')} was not created for pod "
            f"{pm.get('namespace', '')}/{pm.get('name', '')} (pod is not owner)"
        )
    return None


def reserved_for(claim: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in _status(claim).get("reservedFor") or () if isinstance(r, Mapping)]


def is_reserved_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """``resourceclaim.IsReservedForPod``: by uid."""
    uid = _meta(pod).get("uid")
    return any(r.get("uid") == uid for r in reserved_for(claim))


def can_be_reserved(claim: Mapping[str, Any]) -> bool:
    """``resourceclaim.CanBeReserved``: fewer than 256 consumers."""
    return len(reserved_for(claim)) < RESERVED_FOR_MAX_SIZE
