"""The pod's ResourceClaims (upstream ``resourceclaim.Name``/``IsForPod``/``CanBeReserved``/``IsReservedForPod``
and the plugin's ``foreachPodResourceClaim``), and the in-flight allocations between Reserve and PreBind
(upstream's claim assume cache with ``SignalClaimPendingAllocation``), shared by every pod of the profile so the
next pod does not take a device a reserved pod is about to get."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["RESERVED_FOR_MAX_SIZE", "ClaimError", "InFlight", "can_be_reserved", "is_reserved_for_pod", "pod_claims"]

RESERVED_FOR_MAX_SIZE = 256
"""resourceapi.ResourceClaimReservedForMaxSize."""


class ClaimError(Exception):
    """The pod cannot be scheduled now; the message is the status reason."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def claim_name(pod: Mapping[str, Any], resource: Mapping[str, Any]) -> tuple[str | None, bool]:
    """Upstream ``resourceclaim.Name``: (claim name or None when none was generated, must check owner)."""
    if resource.get("resourceClaimName"):
        return str(resource["resourceClaimName"]), False
    if resource.get("resourceClaimTemplateName"):
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
            if status.get("name") == resource.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name else None), True
        meta = _meta(pod)
        raise ClaimError(f'pod "{meta.get("namespace")}/{meta.get("name")}": ResourceClaim not created yet')
    raise ClaimError(
        f'pod "{_meta(pod).get("namespace")}/{_meta(pod).get("name")}", '
        f"spec.resourceClaim {resource.get('name')!r}: unsupported"
    )


def is_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> None:
    uid = _meta(pod).get("uid")
    for ref in _meta(claim).get("ownerReferences") or ():
        if ref.get("uid") == uid and ref.get("controller"):
            return
    raise ClaimError(
        f"ResourceClaim {_meta(claim).get('namespace')}/{_meta(claim).get('name')} was not created for pod "
        f"{_meta(pod).get('namespace')}/{_meta(pod).get('name')} (pod is not owner)"
    )


def can_be_reserved(claim: Mapping[str, Any]) -> bool:
    return len((claim.get("status") or {}).get("reservedFor") or ()) < RESERVED_FOR_MAX_SIZE


def is_reserved_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    uid = _meta(pod).get("uid")
    return any(r.get("uid") == uid for r in (claim.get("status") or {}).get("reservedFor") or ())


def _version(claim: Mapping[str, Any]) -> int:
    try:
        return int(_meta(claim).get("resourceVersion") or 0)
    except ValueError:
        return 0


class InFlight:
    """Claims allocated at Reserve and not yet written by PreBind (``claims``: uid -> the claim with its
    allocation), and claims PreBind wrote that the informer has not delivered yet (``assumed``: upstream's
    ``AssumeClaimAfterAPICall``). Without the second, the next pod's cycle could read the informer's stale,
    unallocated copy in the instant between the write and its watch event and take the same device again."""

    def __init__(self) -> None:
        self.claims: dict[str, Mapping[str, Any]] = {}
        self.assumed: dict[str, Mapping[str, Any]] = {}
        self.created: dict[str, float] = {}
        """uid -> until when an assumed claim PreBind *created* stays assumed while the informer has not shown it
        yet (upstream polls its assume cache for up to ``AssumeExtendedResourceTimeoutDefaultSeconds``, 120 s)."""

    def assume(self, uid: str, claim: Mapping[str, Any]) -> None:
        """PreBind wrote ``claim`` (as the API returned it): no longer in flight, but used in place of older
        informer copies until the informer has its resourceVersion."""
        self.claims.pop(uid, None)
        self.assumed[uid] = claim

    def assume_created(self, uid: str, claim: Mapping[str, Any], until: float) -> None:
        """As :meth:`assume` for a claim PreBind created: kept (its devices in use) until the informer delivers
        it, or until ``until`` (a clock reading) if it never does (deleted at once)."""
        self.assumed[uid] = claim
        self.created[uid] = until

    def has(self, uid: str) -> bool:
        return uid in self.claims

    def signal(self, uid: str, claim: Mapping[str, Any]) -> None:
        self.claims[uid] = claim

    def remove(self, uid: str) -> bool:
        return self.claims.pop(uid, None) is not None

    def overlay(self, claims: Sequence[Mapping[str, Any]], now: float = 0.0) -> list[Mapping[str, Any]]:
        """The informer's claims with in-flight versions substituted (upstream ``ListAllAllocatedDevices``);
        ``now`` (a clock reading) ends created claims' assumptions past their time."""
        out = []
        seen = set()
        present = set()
        for c in claims:
            uid = str(_meta(c).get("uid") or "")
            present.add(uid)
            if uid and uid in self.claims:
                out.append(self.claims[uid])
                seen.add(uid)
            elif uid and uid in self.assumed:
                written = self.assumed[uid]
                if _version(c) >= _version(written):  # the informer caught up: the assumption is over
                    del self.assumed[uid]
                    out.append(c)
                else:
                    out.append(written)
            else:
                out.append(c)
        out.extend(c for uid, c in self.claims.items() if uid not in seen)
        for uid in [u for u in self.created if u in present or self.created[u] <= now]:
            del self.created[uid]
        for uid in [u for u in self.assumed if u not in present]:  # deleted since it was written
            if uid in self.created:  # created, not delivered yet
                out.append(self.assumed[uid])
            else:
                del self.assumed[uid]
        return out

    def forget(self, uid: str) -> None:
        """Drop every trace of ``uid`` (a created claim that Unreserve deletes again)."""
        self.claims.pop(uid, None)
        self.assumed.pop(uid, None)
        self.created.pop(uid, None)


def pod_claims(
    pod: Mapping[str, Any], lookup: Callable[[str, str], Mapping[str, Any] | None]
) -> list[tuple[str, Mapping[str, Any]]]:
    """Upstream ``foreachPodResourceClaim``: (pod claim name, claim) for every claim that exists; raises
    :class:`ClaimError` with upstream's reason for a missing, deleted or foreign claim."""
    ns = str(_meta(pod).get("namespace") or "default")
    out = []
    for resource in (pod.get("spec") or {}).get("resourceClaims") or ():
        name, check_owner = claim_name(pod, resource)
        if name is None:
            continue
        claim = lookup(ns, name)
        if claim is None:
            raise ClaimError(f'resourceclaim.resource.k8s.io "{name}" not found')
        if _meta(claim).get("deletionTimestamp") is not None:
            raise ClaimError(f'resourceclaim "{name}" is being deleted')
        if check_owner:
            is_for_pod(pod, claim)
        out.append((str(resource.get("name")), claim))
    return out
