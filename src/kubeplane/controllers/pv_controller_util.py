"""Pure helpers of the PersistentVolume controller: upstream's annotation names and event reasons, and the
volume/claim predicates of ``k8s.io/component-helpers/storage/volume`` (``pv_helpers.go``, ``helpers.go``) and
``pkg/controller/volume/common`` (the pod -> claim index).

Invariants: nothing here writes or reads the API; every function is total on wire-format dicts with missing
fields (absent ``volumeMode`` is ``Filesystem``, absent capacity or request is zero), exactly as upstream reads
its typed structs. :func:`find_matching_volume` is the one matching rule both the PV controller (``node`` None)
and the scheduler's VolumeBinding plugin (``node`` given) use, so they never disagree on what fits.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.nodeaffinity import node_selector_matches
from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.views import meta_of, spec_of, status_of
from kubeplane.client.interface import Obj

__all__ = [
    "ANN_BETA_STORAGE_CLASS",
    "ANN_BETA_STORAGE_PROVISIONER",
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DYNAMICALLY_PROVISIONED",
    "ANN_MIGRATED_TO",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "POD_PVC_INDEX",
    "PV_DELETION_IN_TREE_PROTECTION_FINALIZER",
    "PV_DELETION_PROTECTION_FINALIZER",
    "check_access_modes",
    "check_node_affinity",
    "check_volume_mode_mismatches",
    "check_volume_satisfy_claim",
    "claim_class",
    "claim_key",
    "claim_reference",
    "claimref_key",
    "find_matching_volume",
    "get_bind_volume_to_claim",
    "is_delay_binding_provisioning",
    "is_pod_terminated",
    "is_volume_bound_to_claim",
    "pod_pvc_index",
    "quantity_of",
    "requested_storage",
    "volume_capacity",
    "volume_class",
]

# --- annotations and finalizers (component-helpers storage/volume/pv_helpers.go) ------------------------------

ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
ANN_DYNAMICALLY_PROVISIONED: Final = "pv.kubernetes.io/provisioned-by"
ANN_MIGRATED_TO: Final = "pv.kubernetes.io/migrated-to"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"  # v1.BetaStorageClassAnnotation
PV_DELETION_PROTECTION_FINALIZER: Final = "external-provisioner.volume.kubernetes.io/finalizer"
PV_DELETION_IN_TREE_PROTECTION_FINALIZER: Final = "kubernetes.io/pv-controller"
NOT_SUPPORTED_PROVISIONER: Final = "kubernetes.io/no-provisioner"

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
_ZERO: Final = Quantity(0)


def quantity_of(value: Any) -> Quantity:
    """A quantity field; absent or unparsable reads as zero (a typed Go struct would hold the zero value)."""
    if value is None:
        return _ZERO
    try:
        return Quantity.parse(value)
    except (QuantityError, TypeError):
        return _ZERO


def requested_storage(claim: Mapping[str, Any]) -> Quantity:
    """``claim.spec.resources.requests[storage]``."""
    resources = spec_of(claim).get("resources") or _EMPTY
    return quantity_of((resources.get("requests") or _EMPTY).get("storage"))


def volume_capacity(volume: Mapping[str, Any]) -> Quantity:
    """``volume.spec.capacity[storage]``."""
    return quantity_of((spec_of(volume).get("capacity") or _EMPTY).get("storage"))


def claim_key(claim: Mapping[str, Any]) -> str:
    """Upstream ``claimToClaimKey``: ``namespace/name``."""
    meta = meta_of(claim)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def claimref_key(ref: Mapping[str, Any]) -> str:
    """Upstream ``claimrefToClaimKey``."""
    return f"{ref.get('namespace') or ''}/{ref.get('name') or ''}"


def claim_reference(claim: Mapping[str, Any]) -> Obj:
    """``reference.GetReference(scheme, claim)``: what a bound volume's ``spec.claimRef`` holds."""
    meta = meta_of(claim)
    ref: Obj = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace") or "", "name": meta.get("name")}
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    ref["apiVersion"] = "v1"
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    return ref


def claim_class(claim: Mapping[str, Any]) -> str:
    """Upstream ``GetPersistentVolumeClaimClass``: the beta annotation first, then ``spec.storageClassName``."""
    annotations = meta_of(claim).get("annotations") or _EMPTY
    if ANN_BETA_STORAGE_CLASS in annotations:
        return str(annotations[ANN_BETA_STORAGE_CLASS])
    name = spec_of(claim).get("storageClassName")
    return "" if name is None else str(name)


def claim_has_class(claim: Mapping[str, Any]) -> bool:
    """Upstream ``PersistentVolumeClaimHasClass``: the annotation or the field is set (even to "")."""
    annotations = meta_of(claim).get("annotations") or _EMPTY
    return ANN_BETA_STORAGE_CLASS in annotations or spec_of(claim).get("storageClassName") is not None


def volume_class(volume: Mapping[str, Any]) -> str:
    """Upstream ``GetPersistentVolumeClass``."""
    annotations = meta_of(volume).get("annotations") or _EMPTY
    if ANN_BETA_STORAGE_CLASS in annotations:
        return str(annotations[ANN_BETA_STORAGE_CLASS])
    return str(spec_of(volume).get("storageClassName") or "")


def is_delay_binding_provisioning(claim: Mapping[str, Any]) -> bool:
    """Upstream ``IsDelayBindingProvisioning``: the scheduler chose a node (``selected-node`` is set)."""
    return ANN_SELECTED_NODE in (meta_of(claim).get("annotations") or _EMPTY)


def is_volume_bound_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Upstream ``IsVolumeBoundToClaim``: claimRef names the claim, and its UID (when set) is the claim's."""
    ref = spec_of(volume).get("claimRef")
    if not ref:
        return False
    meta = meta_of(claim)
    if meta.get("name") != ref.get("name") or (meta.get("namespace") or "") != (ref.get("namespace") or ""):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def get_bind_volume_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> tuple[Obj, bool]:
    """Upstream ``GetBindVolumeToClaim``: a copy of ``volume`` bound to ``claim`` and whether anything changed.
    ``bound-by-controller`` is added only when the volume was not already (pre-)bound to this claim."""
    set_bound_by_controller = not is_volume_bound_to_claim(volume, claim)
    clone: Obj = copy.deepcopy(dict(volume))
    dirty = False
    ref = spec_of(volume).get("claimRef") or _EMPTY
    meta = meta_of(claim)
    if (
        not ref
        or ref.get("name") != meta.get("name")
        or (ref.get("namespace") or "") != (meta.get("namespace") or "")
        or (ref.get("uid") or "") != (meta.get("uid") or "")
    ):
        clone.setdefault("spec", {})["claimRef"] = claim_reference(claim)
        dirty = True
    annotations = clone.setdefault("metadata", {}).get("annotations") or {}
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations:
        clone["metadata"]["annotations"] = {**annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    return clone, dirty


def check_volume_mode_mismatches(claim_spec: Mapping[str, Any], volume_spec: Mapping[str, Any]) -> bool:
    """Upstream ``CheckVolumeModeMismatches``: an absent mode is ``Filesystem`` on both sides (HA upgrades)."""
    return (claim_spec.get("volumeMode") or "Filesystem") != (volume_spec.get("volumeMode") or "Filesystem")


def check_access_modes(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> bool:
    """Upstream ``CheckAccessModes``: the volume has every access mode the claim asks for."""
    have = set(spec_of(volume).get("accessModes") or ())
    return all(mode in have for mode in spec_of(claim).get("accessModes") or ())


def check_node_affinity(volume: Mapping[str, Any], node_labels: Mapping[str, str]) -> str | None:
    """Upstream ``CheckNodeAffinity``: None when the volume's required node affinity admits a node with these
    labels, else the error text (``no matching NodeSelectorTerms``)."""
    affinity = spec_of(volume).get("nodeAffinity") or _EMPTY
    required = affinity.get("required")
    if required is None:
        return None
    try:
        matches = node_selector_matches(required, {"metadata": {"labels": dict(node_labels)}})
    except ValueError as exc:
        return str(exc)
    return None if matches else "no matching NodeSelectorTerms"


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


def find_matching_volume(
    claim: Mapping[str, Any],
    volumes: Iterable[Mapping[str, Any]],
    *,
    node: Mapping[str, Any] | None = None,
    excluded: Mapping[str, Any] | None = None,
    delay_binding: bool = False,
) -> Mapping[str, Any] | None:
    """Upstream ``FindMatchingVolume`` (VolumeAttributesClass enabled, as in v1.37): the volume pre-bound to the
    claim if any, else the smallest Available one that fits (capacity, volumeMode, attributes class, not being
    deleted, selector, class; node affinity and access modes only on the scheduler path, ``node`` given).

    With ``delay_binding`` and no node (the PV controller on a WaitForFirstConsumer claim), only a pre-bound
    volume is returned: the scheduler binds the others. Raises ValueError for an unparsable claim selector
    (upstream's ``error creating internal label selector for claim``)."""
    requested = requested_storage(claim)
    requested_class = claim_class(claim)
    claim_spec = spec_of(claim)
    selector: apilabels.Selector | None = None
    if claim_spec.get("selector") is not None:
        try:
            selector = apilabels.label_selector_as_selector(claim_spec["selector"])
        except apilabels.SelectorError as exc:
            raise ValueError(f"error creating internal label selector for claim: {claim_key(claim)}: {exc}") from exc
    claim_vac = claim_spec.get("volumeAttributesClassName") or ""
    node_labels = (meta_of(node).get("labels") or _EMPTY) if node is not None else _EMPTY
    smallest: Mapping[str, Any] | None = None
    smallest_qty = _ZERO
    for volume in volumes:
        name = meta_of(volume).get("name")
        if excluded and name in excluded:
            continue
        volume_spec = spec_of(volume)
        if volume_spec.get("claimRef") and not is_volume_bound_to_claim(volume, claim):
            continue
        qty = volume_capacity(volume)
        if qty.cmp(requested) < 0:
            continue
        if check_volume_mode_mismatches(claim_spec, volume_spec):
            continue
        if claim_vac != (volume_spec.get("volumeAttributesClassName") or ""):
            continue
        if meta_of(volume).get("deletionTimestamp"):
            continue
        affinity_ok = node is None or check_node_affinity(volume, node_labels) is None
        if is_volume_bound_to_claim(volume, claim):
            return volume if affinity_ok else None
        if node is None and delay_binding:
            continue
        if status_of(volume).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(meta_of(volume).get("labels") or _EMPTY):
            continue
        if volume_class(volume) != requested_class or not affinity_ok:
            continue
        if node is not None and not check_access_modes(claim, volume):
            continue
        if smallest is None or smallest_qty.cmp(qty) > 0:
            smallest, smallest_qty = volume, qty
    return smallest


def pod_pvc_index(pod: Mapping[str, Any]) -> list[str]:
    """Upstream ``common.PodPVCIndexFunc``: ``namespace/claim`` for every claim a pod's volumes name, a generic
    ephemeral volume's claim being ``<pod>-<volume>`` (``ephemeral.VolumeClaimName``)."""
    meta = meta_of(pod)
    namespace, pod_name = meta.get("namespace") or "", meta.get("name") or ""
    keys = []
    for volume in spec_of(pod).get("volumes") or ():
        claim_name = ""
        if volume.get("persistentVolumeClaim") is not None:
            claim_name = str(volume["persistentVolumeClaim"].get("claimName") or "")
        elif volume.get("ephemeral") is not None:
            claim_name = f"{pod_name}-{volume.get('name') or ''}"
        if claim_name:
            keys.append(f"{namespace}/{claim_name}")
    return keys


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
