"""Pure helpers of the PersistentVolume controller: upstream's event reasons, ``pkg/controller/volume/common`` (the
pod -> claim index), ``pkg/volume/util.IsPodTerminated`` and ``checkVolumeSatisfyClaim``.

The ``k8s.io/component-helpers/storage/volume`` predicates (class, binding, matching) and annotation names are in
:mod:`kubeplane.api.volumes`, shared with the scheduler's VolumeBinding plugin and the kubelet so they never
disagree on what fits. Invariant: nothing here writes or reads the API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubeplane.api.views import meta_of, spec_of, status_of
from kubeplane.api.volumes import (
    check_access_modes,
    check_volume_mode_mismatches,
    claim_class,
    pod_claim_names,
    requested_storage,
    volume_capacity,
    volume_class,
)

__all__ = [
    "POD_PVC_INDEX",
    "check_volume_satisfy_claim",
    "claimref_key",
    "is_pod_terminated",
    "pod_pvc_index",
]

POD_PVC_INDEX: Final = "pod-pvc-index"  # upstream common.PodPVCIndex

# --- event reasons (pkg/controller/volume/events/event.go) ----------------------------------------------------

FAILED_BINDING: Final = "FailedBinding"
VOLUME_MISMATCH: Final = "VolumeMismatch"
VOLUME_FAILED_RECYCLE: Final = "VolumeFailedRecycle"
VOLUME_RECYCLED: Final = "VolumeRecycled"
VOLUME_DELETE: Final = "VolumeDelete"
VOLUME_FAILED_DELETE: Final = "VolumeFailedDelete"
EXTERNAL_PROVISIONING: Final = "ExternalProvisioning"
PROVISIONING_FAILED: Final = "ProvisioningFailed"
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
WAIT_FOR_POD_SCHEDULED: Final = "WaitForPodScheduled"

_EMPTY: Final[Mapping[str, Any]] = {}


def claimref_key(ref: Mapping[str, Any]) -> str:
    """Upstream ``claimrefToClaimKey``."""
    return f"{ref.get('namespace') or ''}/{ref.get('name') or ''}"


def check_volume_satisfy_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> str | None:
    """Upstream ``checkVolumeSatisfyClaim`` (for a claim that names its volume): None, or why not."""
    if meta_of(volume).get("deletionTimestamp"):
        return f'the volume is marked for deletion "{meta_of(volume).get("name")}"'
    if volume_capacity(volume).value() < requested_storage(claim).value():
        return "requested PV is too small"
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if check_volume_mode_mismatches(spec_of(claim), spec_of(volume)):
        return "incompatible volumeMode"
    if not check_access_modes(claim, volume):
        return "incompatible accessMode"
    return None


def pod_pvc_index(pod: Mapping[str, Any]) -> list[str]:
    """Upstream ``common.PodPVCIndexFunc``: ``namespace/claim`` for every claim a pod's volumes name, a generic
    ephemeral volume's claim being ``<pod>-<volume>`` (``ephemeral.VolumeClaimName``)."""
    namespace = meta_of(pod).get("namespace") or ""
    return [f"{namespace}/{name}" for name, _ephemeral in pod_claim_names(pod) if name]


def _not_running(statuses: Sequence[Mapping[str, Any]] | None) -> bool:
    """Upstream ``notRunning``: every container is terminated or waiting."""
    return all(
        "terminated" in (s.get("state") or _EMPTY) or "waiting" in (s.get("state") or _EMPTY) for s in statuses or ()
    )


def is_pod_terminated(pod: Mapping[str, Any]) -> bool:
    """Upstream ``volume/util.IsPodTerminated``: Failed or Succeeded, or being deleted with no container
    running."""
    status = status_of(pod)
    if status.get("phase") in ("Failed", "Succeeded"):
        return True
    return bool(meta_of(pod).get("deletionTimestamp")) and all(
        _not_running(status.get(key))
        for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
    )
