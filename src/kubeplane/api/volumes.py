"""Upstream's shared PersistentVolume/PersistentVolumeClaim helpers: ``k8s.io/component-helpers/storage/volume``
(``pv_helpers.go``, ``helpers.go``) and ``k8s.io/component-helpers/storage/ephemeral``.

Upstream keeps these in one package so that the PV controller, the scheduler's VolumeBinding plugin and the kubelet
never disagree on what binds to what; here too they live in one module under ``api/`` (which controllers,
scheduler and kubelet may all import, and which imports none of them).

Invariants: nothing here reads or writes the API, and nothing mutates its arguments (informer objects are shared):
a function that changes an object returns a deep copy. Every function is total on wire-format dicts with missing
fields, reading them as upstream reads its typed structs: an absent ``volumeMode`` is ``Filesystem``, an absent or
unparsable capacity or request is the zero quantity. Quantities compare exactly (``Quantity.Cmp``), never after
rounding to whole bytes.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.nodeaffinity import NodeSelector, new_lazy_error_node_selector
from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.views import EMPTY, controller_ref_of, meta_of, spec_of, status_of

__all__ = [
    "ANN_BETA_STORAGE_PROVISIONER",
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_DYNAMICALLY_PROVISIONED",
    "ANN_MIGRATED_TO",
    "ANN_SELECTED_NODE",
    "ANN_STORAGE_PROVISIONER",
    "BETA_STORAGE_CLASS_ANNOTATION",
    "NOT_SUPPORTED_PROVISIONER",
    "PV_DELETION_IN_TREE_PROTECTION_FINALIZER",
    "PV_DELETION_PROTECTION_FINALIZER",
    "NodeAffinityCache",
    "check_access_modes",
    "check_node_affinity",
    "check_volume_mode_mismatches",
    "claim_class",
    "claim_has_class",
    "claim_key",
    "claim_reference",
    "find_matching_volume",
    "get_bind_volume_to_claim",
    "is_delay_binding_provisioning",
    "is_volume_bound_to_claim",
    "pod_claim_names",
    "quantity_of",
    "requested_storage",
    "volume_capacity",
    "volume_claim_name",
    "volume_class",
    "volume_is_for_pod",
]

# --- annotations and finalizers (pv_helpers.go) ---------------------------------------------------------------

ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
NOT_SUPPORTED_PROVISIONER: Final = "kubernetes.io/no-provisioner"
ANN_DYNAMICALLY_PROVISIONED: Final = "pv.kubernetes.io/provisioned-by"
ANN_MIGRATED_TO: Final = "pv.kubernetes.io/migrated-to"
ANN_STORAGE_PROVISIONER: Final = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER: Final = "volume.beta.kubernetes.io/storage-provisioner"
PV_DELETION_PROTECTION_FINALIZER: Final = "external-provisioner.volume.kubernetes.io/finalizer"
PV_DELETION_IN_TREE_PROTECTION_FINALIZER: Final = "kubernetes.io/pv-controller"
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"
"""``v1.BetaStorageClassAnnotation`` (k8s.io/api core/v1 annotation_key_constants.go)."""

_ZERO: Final = Quantity(0)
_NO_AFFINITY_MATCH: Final = "no matching NodeSelectorTerms"


# --- quantities and keys --------------------------------------------------------------------------------------


def quantity_of(value: Any) -> Quantity:
    """A quantity field; absent or unparsable reads as zero (a typed Go struct would hold the zero value)."""
    if value is None:
        return _ZERO
    try:
        return Quantity.parse(value)
    except (QuantityError, TypeError):
        return _ZERO


def requested_storage(claim: Mapping[str, Any]) -> Quantity:
    """``claim.Spec.Resources.Requests[storage]`` (zero when absent)."""
    resources = spec_of(claim).get("resources") or EMPTY
    return quantity_of((resources.get("requests") or EMPTY).get("storage"))


def volume_capacity(volume: Mapping[str, Any]) -> Quantity:
    """``volume.Spec.Capacity[storage]`` (zero when absent)."""
    return quantity_of((spec_of(volume).get("capacity") or EMPTY).get("storage"))


def claim_key(claim: Mapping[str, Any]) -> str:
    """Upstream ``claimToClaimKey``: ``namespace/name`` (also the scheduler's ``getPVCName``)."""
    meta = meta_of(claim)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def claim_reference(claim: Mapping[str, Any]) -> dict[str, Any]:
    """``reference.GetReference(scheme, claim)``: what a bound volume's ``spec.claimRef`` holds, in
    ``v1.ObjectReference`` field order (kind, namespace, name, uid, apiVersion, resourceVersion)."""
    meta = meta_of(claim)
    ref: dict[str, Any] = {"kind": "PersistentVolumeClaim", "namespace": meta.get("namespace") or ""}
    ref["name"] = meta.get("name")
    if meta.get("uid"):
        ref["uid"] = meta["uid"]
    ref["apiVersion"] = "v1"
    if meta.get("resourceVersion"):
        ref["resourceVersion"] = meta["resourceVersion"]
    return ref


# --- classes (helpers.go) -------------------------------------------------------------------------------------


def claim_class(claim: Mapping[str, Any]) -> str:
    """Upstream ``GetPersistentVolumeClaimClass``: the beta annotation first, then ``spec.storageClassName``,
    else ""."""
    annotations = meta_of(claim).get("annotations") or EMPTY
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    name = spec_of(claim).get("storageClassName")
    return "" if name is None else str(name)


def claim_has_class(claim: Mapping[str, Any]) -> bool:
    """Upstream ``PersistentVolumeClaimHasClass``: the annotation or the field is set (even to "")."""
    annotations = meta_of(claim).get("annotations") or EMPTY
    return BETA_STORAGE_CLASS_ANNOTATION in annotations or spec_of(claim).get("storageClassName") is not None


def volume_class(volume: Mapping[str, Any]) -> str:
    """Upstream ``GetPersistentVolumeClass``: the beta annotation first, then ``spec.storageClassName``."""
    annotations = meta_of(volume).get("annotations") or EMPTY
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return str(spec_of(volume).get("storageClassName") or "")


# --- binding (pv_helpers.go) ----------------------------------------------------------------------------------


def is_delay_binding_provisioning(claim: Mapping[str, Any]) -> bool:
    """Upstream ``IsDelayBindingProvisioning``: the scheduler chose a node (``selected-node`` is set)."""
    return ANN_SELECTED_NODE in (meta_of(claim).get("annotations") or EMPTY)


def is_volume_bound_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Upstream ``IsVolumeBoundToClaim``: claimRef names the claim, and its UID (when set) is the claim's."""
    ref = spec_of(volume).get("claimRef")
    if not ref:
        return False
    meta = meta_of(claim)
    if meta.get("name") != ref.get("name") or (meta.get("namespace") or "") != (ref.get("namespace") or ""):
        return False
    return not ref.get("uid") or ref.get("uid") == meta.get("uid")


def get_bind_volume_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """Upstream ``GetBindVolumeToClaim``: a copy of ``volume`` bound to ``claim`` and whether anything changed.
    ``bound-by-controller`` is added only when the volume was not already (pre-)bound to this claim."""
    set_bound_by_controller = not is_volume_bound_to_claim(volume, claim)
    clone: dict[str, Any] = copy.deepcopy(dict(volume))
    dirty = False
    ref = spec_of(volume).get("claimRef") or EMPTY
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


def _required_affinity(volume: Mapping[str, Any]) -> NodeSelector | None:
    required = (spec_of(volume).get("nodeAffinity") or EMPTY).get("required")
    return None if required is None else new_lazy_error_node_selector(required)


def _match_affinity(selector: NodeSelector | None, node_labels: Mapping[str, str]) -> str | None:
    if selector is None:
        return None
    matched, err = selector.match({"metadata": {"labels": dict(node_labels)}})
    if matched:
        return None
    return _NO_AFFINITY_MATCH if err is None else str(err)


def check_node_affinity(volume: Mapping[str, Any], node_labels: Mapping[str, str]) -> str | None:
    """Upstream ``CheckNodeAffinity``: None when the volume's required node affinity admits a node with these
    labels (no required affinity admits every node), else the error text: ``corev1.MatchNodeSelectorTerms``'s
    aggregated parse errors when no valid term matched and some term did not parse, otherwise
    ``no matching NodeSelectorTerms``. The node is given by labels only, so ``matchFields`` see no name."""
    return _match_affinity(_required_affinity(volume), node_labels)


class NodeAffinityCache:
    """:func:`check_node_affinity` with each volume's selector compiled once per (name, resourceVersion): the
    scheduler checks a PV's affinity against every node of a cycle (VolumeBinding's fast path). Bounded: past
    4096 entries it starts over."""

    __slots__ = ("_compiled",)

    def __init__(self) -> None:
        self._compiled: dict[tuple[str, str], NodeSelector | None] = {}

    def check(self, volume: Mapping[str, Any], node_labels: Mapping[str, str]) -> str | None:
        """:func:`check_node_affinity`, cached."""
        meta = meta_of(volume)
        key = (str(meta.get("name") or ""), str(meta.get("resourceVersion") or ""))
        if key not in self._compiled:
            if len(self._compiled) > 4096:
                self._compiled.clear()
            self._compiled[key] = _required_affinity(volume)
        return _match_affinity(self._compiled[key], node_labels)


def find_matching_volume(
    claim: Mapping[str, Any],
    volumes: Iterable[Mapping[str, Any]],
    *,
    node_labels: Mapping[str, str] | None = None,
    excluded: Mapping[str, Any] | None = None,
    delay_binding: bool = False,
    affinity: NodeAffinityCache | None = None,
) -> Mapping[str, Any] | None:
    """Upstream ``FindMatchingVolume`` (VolumeAttributesClass on, as in v1.37): the volume pre-bound to the claim
    if any (None when its node affinity fails on the node), else the smallest Available one that fits: capacity,
    volumeMode, volume attributes class, not being deleted, selector, class; node affinity and access modes only
    on the scheduler path (``node_labels`` given, upstream's ``node != nil``). The attributes class is checked
    before the pre-bound return, as upstream does, so a pre-bound volume of another class is no match.

    ``excluded`` (scheduler path) names volumes already chosen for the pod's other claims. With
    ``delay_binding`` and no node (the PV controller on a WaitForFirstConsumer claim) only a pre-bound volume is
    returned: the scheduler binds the others. ``affinity`` caches compiled selectors across calls. Raises
    ValueError for an unparsable claim selector (upstream's ``error creating internal label selector for
    claim``)."""
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
    smallest: Mapping[str, Any] | None = None
    smallest_qty = _ZERO
    for volume in volumes:
        volume_meta = meta_of(volume)
        if excluded and volume_meta.get("name") in excluded:
            continue
        volume_spec = spec_of(volume)
        bound_to_claim = is_volume_bound_to_claim(volume, claim)
        if volume_spec.get("claimRef") and not bound_to_claim:
            continue
        qty = volume_capacity(volume)
        if qty.cmp(requested) < 0:
            continue
        if check_volume_mode_mismatches(claim_spec, volume_spec):
            continue
        if claim_vac != (volume_spec.get("volumeAttributesClassName") or ""):
            continue
        if volume_meta.get("deletionTimestamp") is not None:
            continue
        affinity_ok = True
        if node_labels is not None:
            error = affinity.check(volume, node_labels) if affinity else check_node_affinity(volume, node_labels)
            affinity_ok = error is None
        if bound_to_claim:
            return volume if affinity_ok else None
        if node_labels is None and delay_binding:
            continue
        if status_of(volume).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(volume_meta.get("labels") or EMPTY):
            continue
        if volume_class(volume) != requested_class or not affinity_ok:
            continue
        if node_labels is not None and not check_access_modes(claim, volume):
            continue
        if smallest is None or smallest_qty.cmp(qty) > 0:
            smallest, smallest_qty = volume, qty
    return smallest


# --- generic ephemeral volumes (component-helpers/storage/ephemeral) -----------------------------------------


def volume_claim_name(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
    """Upstream ``ephemeral.VolumeClaimName``: a generic ephemeral volume's claim is ``<pod name>-<volume name>``."""
    return f"{meta_of(pod).get('name') or ''}-{volume.get('name') or ''}"


def volume_is_for_pod(pod: Mapping[str, Any], pvc: Mapping[str, Any]) -> str | None:
    """Upstream ``ephemeral.VolumeIsForPod``: None when ``pvc`` is in the pod's namespace and controlled by it
    (``metav1.IsControlledBy``: the controller ownerReference carries the pod's UID), else upstream's error
    text."""
    pod_meta, pvc_meta = meta_of(pod), meta_of(pvc)
    pod_ns, pvc_ns = pod_meta.get("namespace") or "", pvc_meta.get("namespace") or ""
    ref = controller_ref_of(pvc)
    if pvc_ns != pod_ns or ref is None or (ref.get("uid") or "") != (pod_meta.get("uid") or ""):
        return (
            f"PVC {pvc_ns}/{pvc_meta.get('name') or ''} was not created for pod "
            f"{pod_ns}/{pod_meta.get('name') or ''} (pod is not owner)"
        )
    return None


def pod_claim_names(pod: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """The claim names of the pod's volumes in volume order, with whether each is a generic ephemeral volume's
    (named by :func:`volume_claim_name`): the walk upstream's ``PodPVCIndexFunc``, VolumeBinding's
    ``podHasPVCs`` and the kubelet's volume manager share. A ``persistentVolumeClaim`` volume wins over an
    ``ephemeral`` one in the same entry (upstream's if/else)."""
    out: list[tuple[str, bool]] = []
    for volume in spec_of(pod).get("volumes") or ():
        if volume.get("persistentVolumeClaim") is not None:
            out.append((str(volume["persistentVolumeClaim"].get("claimName") or ""), False))
        elif volume.get("ephemeral") is not None:
            out.append((volume_claim_name(pod, volume), True))
    return out
