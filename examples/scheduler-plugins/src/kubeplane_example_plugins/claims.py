"""The pod's PersistentVolumeClaims as the two storage plugins read them, through ``Handle.list_objects``.

Shared by :mod:`~kubeplane_example_plugins.csi_storage_capacity` and
:mod:`~kubeplane_example_plugins.lvm_volume_capacity`. A pod names a claim through a ``persistentVolumeClaim``
volume (``claimName``) or an ``ephemeral`` volume (the claim ``<pod name>-<volume name>`` the ephemeral volume
controller creates), as upstream's ``ephemeral.VolumeClaimName``. A claim is *unbound* while its
``spec.volumeName`` is empty: it still needs a volume, so its size must fit somewhere.

Objects are read live from the scheduler's informers or, in ``kubeplane explain --cluster FILE``, from the
file; nothing here writes. The not-found messages are upstream VolumeBinding's (``podVolumeClaims``): they make
a missing claim unresolvable rather than a silent pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.quantity import QuantityError, parse_value
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.types import PodInfo

__all__ = [
    "SELECTED_NODE_ANNOTATION",
    "Claim",
    "ClaimLookupError",
    "by_name",
    "claim_names",
    "claim_request",
    "pod_claims",
]

SELECTED_NODE_ANNOTATION: Final = "volume.kubernetes.io/selected-node"
"""Set on a claim by VolumeBinding's PreBind for WaitForFirstConsumer: the node its volume must be made on."""


class ClaimLookupError(Exception):
    """A claim the pod needs cannot be used yet; the message is the user-facing reason (upstream's text)."""


@dataclass(frozen=True, slots=True)
class Claim:
    """One claim of the pod: ``key`` is ``namespace/name``; ``size`` the requested bytes."""

    key: str
    obj: Mapping[str, Any]
    class_name: str
    size: int

    @property
    def bound(self) -> bool:
        return bool((self.obj.get("spec") or {}).get("volumeName"))


def claim_names(pod: Mapping[str, Any]) -> Iterator[tuple[str, bool]]:
    """``(claim name, is ephemeral)`` for every claim-backed volume of ``pod``, in volume order."""
    pod_name = (pod.get("metadata") or {}).get("name") or ""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        pvc = volume.get("persistentVolumeClaim")
        if pvc and pvc.get("claimName"):
            yield str(pvc["claimName"]), False
        elif volume.get("ephemeral") is not None:
            yield f"{pod_name}-{volume.get('name') or ''}", True


def claim_request(claim: Mapping[str, Any]) -> int:
    """Requested bytes: ``spec.resources.requests.storage``, else ``limits.storage`` (as open-local's
    ``GetPVCRequested``), 0 when neither is set or parses."""
    resources = (claim.get("spec") or {}).get("resources") or {}
    for part in ("requests", "limits"):
        value = (resources.get(part) or {}).get("storage")
        if value is None:
            continue
        try:
            size = parse_value(value)
        except (QuantityError, TypeError, ValueError):
            continue
        if size:
            return size
    return 0


def by_name(objects: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``metadata.name -> object``."""
    return {str((o.get("metadata") or {}).get("name") or ""): o for o in objects}


def _unusable(name: str, obj: Mapping[str, Any] | None, ephemeral: bool) -> str | None:
    if obj is None:
        if ephemeral:
            return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
        return f'persistentvolumeclaim "{name}" not found'
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return f'persistentvolumeclaim "{name}" is being deleted'
    return None


def pod_claims(handle: Handle, pod: PodInfo, *, strict: bool = True) -> list[Claim]:
    """The pod's claims, read through ``handle``; raises :class:`ClaimLookupError` for a missing or deleting one
    (with ``strict=False`` such claims are left out instead).

    Messages (upstream VolumeBinding): ``persistentvolumeclaim "<name>" not found``, ``waiting for ephemeral
    volume controller to create the persistentvolumeclaim "<name>"``, ``persistentvolumeclaim "<name>" is being
    deleted``. A claim counted twice (two volumes naming it) is returned once.
    """
    names = list(claim_names(pod.pod))
    if not names:
        return []
    namespace = pod.namespace or "default"  # a pod file without a namespace, as explain reads it
    stored = by_name(handle.list_objects("persistentvolumeclaims", namespace))
    claims: list[Claim] = []
    seen: set[str] = set()
    for name, ephemeral in names:
        if name in seen:
            continue
        seen.add(name)
        obj = stored.get(name)
        problem = _unusable(name, obj, ephemeral)
        if problem is not None:
            if strict:
                raise ClaimLookupError(problem)
            continue
        assert obj is not None
        class_name = str((obj.get("spec") or {}).get("storageClassName") or "")
        claims.append(Claim(f"{namespace}/{name}", obj, class_name, claim_request(obj)))
    return claims
