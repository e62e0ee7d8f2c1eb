"""PV/PVC helpers VolumeBinding needs, as upstream's ``k8s.io/component-helpers/storage/volume`` (``helpers.go``,
``pv_helpers.go``), ``ephemeral`` and ``v1helper.MatchTopologySelectorTerms`` define them.

Objects are v1 dicts; nothing here mutates its arguments (functions that change an object return a deep copy).
Kept private to VolumeBinding (the other volume plugins have their own module); the lead may merge duplicates.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubeplane.api import labels
from kubeplane.api.labels import SelectorError
from kubeplane.api.nodeaffinity import NodeSelector, new_lazy_error_node_selector
from kubeplane.api.quantity import parse_value

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_SELECTED_NODE",
    "BETA_STORAGE_CLASS_ANNOTATION",
    "NOT_SUPPORTED_PROVISIONER",
    "EphemeralError",
    "NodeAffinityCache",
    "check_access_modes",
    "check_volume_mode_mismatches",
    "claim_class",
    "claim_key",
    "claim_storage_request",
    "find_matching_volume",
    "get_bind_volume_to_claim",
    "is_volume_bound_to_claim",
    "match_topology_selector_terms",
    "pod_claim_names",
    "pv_capacity",
    "volume_class",
    "volume_is_for_pod",
]

ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER: Final = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"
NOT_SUPPORTED_PROVISIONER: Final = "kubernetes.io/no-provisioner"
BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec: Mapping[str, Any] = obj.get("spec") or {}
    return spec


def claim_key(claim: Mapping[str, Any]) -> str:
    """``namespace/name`` (upstream ``getPVCName``; the assume cache's key)."""
    meta = _meta(claim)
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def claim_class(claim: Mapping[str, Any]) -> str:
    """Upstream ``GetPersistentVolumeClaimClass``: the beta annotation first, then ``spec.storageClassName``."""
    annotations = _meta(claim).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    name = _spec(claim).get("storageClassName")
    return "" if name is None else str(name)


def volume_class(volume: Mapping[str, Any]) -> str:
    """Upstream ``GetPersistentVolumeClass``."""
    annotations = _meta(volume).get("annotations") or {}
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return str(_spec(volume).get("storageClassName") or "")


def claim_storage_request(claim: Mapping[str, Any]) -> int | None:
    """``spec.resources.requests.storage`` in bytes (rounded up as ``Quantity.Value``), None when absent."""
    requests = (_spec(claim).get("resources") or {}).get("requests") or {}
    raw = requests.get("storage")
    return None if raw is None else parse_value(raw)


def pv_capacity(volume: Mapping[str, Any]) -> int:
    """``spec.capacity.storage`` in bytes (0 when absent, as a Go zero Quantity)."""
    raw = (_spec(volume).get("capacity") or {}).get("storage")
    return 0 if raw is None else parse_value(raw)


def is_volume_bound_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """Upstream ``IsVolumeBoundToClaim``: the PV's claimRef names the claim (and its uid, when the ref has one)."""
    ref = _spec(volume).get("claimRef")
    if not ref:
        return False
    meta = _meta(claim)
    if meta.get("name") != ref.get("name") or (meta.get("namespace") or "") != (ref.get("namespace") or ""):
        return False
    ref_uid = ref.get("uid") or ""
    return not (ref_uid and (meta.get("uid") or "") != ref_uid)


def get_bind_volume_to_claim(volume: Mapping[str, Any], claim: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """Upstream ``GetBindVolumeToClaim``: a copy of ``volume`` whose claimRef is ``claim`` (a full object
    reference, as ``reference.GetReference``), annotated bound-by-controller unless it was pre-bound; and
    whether anything changed."""
    dirty = False
    set_bound_by_controller = not is_volume_bound_to_claim(volume, claim)
    clone: dict[str, Any] = copy.deepcopy(dict(volume))
    ref = _spec(volume).get("claimRef") or None
    meta = _meta(claim)
    if (
        ref is None
        or ref.get("name") != meta.get("name")
        or (ref.get("namespace") or "") != (meta.get("namespace") or "")
        or (ref.get("uid") or "") != (meta.get("uid") or "")
    ):
        new_ref: dict[str, Any] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1"}
        for key in ("namespace", "name", "uid", "resourceVersion"):
            if meta.get(key):
                new_ref[key] = meta[key]
        clone.setdefault("spec", {})["claimRef"] = new_ref
        dirty = True
    annotations = clone.setdefault("metadata", {}).get("annotations") or {}
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in annotations:
        clone["metadata"]["annotations"] = {**annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        dirty = True
    return clone, dirty


def check_volume_mode_mismatches(claim_spec: Mapping[str, Any], pv_spec: Mapping[str, Any]) -> bool:
    """Upstream ``CheckVolumeModeMismatches`` (an unset mode is Filesystem on both sides)."""
    return (claim_spec.get("volumeMode") or "Filesystem") != (pv_spec.get("volumeMode") or "Filesystem")


def check_access_modes(claim: Mapping[str, Any], volume: Mapping[str, Any]) -> bool:
    """Upstream ``CheckAccessModes``: the PV offers every access mode the claim asks for."""
    offered = set(_spec(volume).get("accessModes") or ())
    return all(mode in offered for mode in _spec(claim).get("accessModes") or ())


class NodeAffinityCache:
    """Compiled ``spec.nodeAffinity.required`` selectors of PVs, by (name, resourceVersion): a PV's affinity is
    checked against every node of a cycle, so it is compiled once per PV version."""

    def __init__(self) -> None:
        self._compiled: dict[tuple[str, str], NodeSelector | None] = {}

    def check(self, volume: Mapping[str, Any], node_labels: Mapping[str, str]) -> bool:
        """Upstream ``CheckNodeAffinity`` succeeds: no required affinity, or a term matches the labels (a node
        given by labels only, so ``matchFields`` never match; a term with errors never matches)."""
        meta = _meta(volume)
        key = (str(meta.get("name") or ""), str(meta.get("resourceVersion") or ""))
        if key not in self._compiled:
            if len(self._compiled) > 4096:
                self._compiled.clear()
            required = (_spec(volume).get("nodeAffinity") or {}).get("required")
            self._compiled[key] = None if required is None else new_lazy_error_node_selector(required)
        selector = self._compiled[key]
        if selector is None:
            return True
        matched, _err = selector.match({"metadata": {"labels": dict(node_labels)}})
        return matched


def find_matching_volume(
    claim: Mapping[str, Any],
    volumes: Sequence[Mapping[str, Any]],
    node_labels: Mapping[str, str] | None,
    excluded: Mapping[str, Any],
    delay_binding: bool,
    affinity: NodeAffinityCache,
) -> Mapping[str, Any] | None:
    """Upstream ``FindMatchingVolume``: a PV pre-bound to the claim (None if its node affinity fails on the
    node), else the smallest Available PV of the claim's class, volume mode, volume attributes class and
    selector whose capacity fits, whose node affinity matches and (scheduler path) whose access modes cover
    the claim's. Raises ValueError for a claim selector that does not parse (upstream's error message)."""
    requested = claim_storage_request(claim) or 0
    requested_class = claim_class(claim)
    claim_spec = _spec(claim)
    requested_vac = claim_spec.get("volumeAttributesClassName") or ""
    selector: labels.Selector | None = None
    if claim_spec.get("selector") is not None:
        try:
            selector = labels.label_selector_as_selector(claim_spec["selector"])
        except SelectorError as exc:
            raise ValueError(f"error creating internal label selector for claim: {claim_key(claim)}: {exc}") from exc
    smallest: Mapping[str, Any] | None = None
    smallest_qty = 0
    for volume in volumes:
        name = _meta(volume).get("name") or ""
        if name in excluded:
            continue
        spec = _spec(volume)
        bound_to_claim = is_volume_bound_to_claim(volume, claim)
        if spec.get("claimRef") and not bound_to_claim:
            continue
        qty = pv_capacity(volume)
        if qty < requested:
            continue
        if check_volume_mode_mismatches(claim_spec, spec):
            continue
        if _meta(volume).get("deletionTimestamp") is not None:
            continue
        affinity_valid = True
        if node_labels is not None:
            affinity_valid = affinity.check(volume, node_labels)
        if bound_to_claim:
            return volume if affinity_valid else None
        if node_labels is None and delay_binding:
            continue
        if (volume.get("status") or {}).get("phase") != "Available":
            continue
        if selector is not None and not selector.matches(_meta(volume).get("labels") or {}):
            continue
        if volume_class(volume) != requested_class:
            continue
        if (spec.get("volumeAttributesClassName") or "") != requested_vac:
            continue
        if not affinity_valid:
            continue
        if node_labels is not None and not check_access_modes(claim, volume):
            continue
        if smallest is None or smallest_qty > qty:
            smallest, smallest_qty = volume, qty
    return smallest


def match_topology_selector_terms(terms: Sequence[Mapping[str, Any]] | None, node_labels: Mapping[str, str]) -> bool:
    """Upstream ``v1helper.MatchTopologySelectorTerms``: no terms match everything; a term matches when every
    ``matchLabelExpressions`` key is a node label whose value is listed (an empty term matches nothing)."""
    if not terms:
        return True
    for term in terms:
        expressions = term.get("matchLabelExpressions") or ()
        if not expressions:
            continue
        if all(
            (e.get("values") or ()) and e.get("key") in node_labels and node_labels[e["key"]] in (e.get("values") or ())
            for e in expressions
        ):
            return True
    return False


def pod_claim_names(pod: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """The pod's PVC names in volume order with whether each is a generic ephemeral volume's claim
    (``ephemeral.VolumeClaimName``: ``<pod name>-<volume name>``)."""
    pod_name = _meta(pod).get("name") or ""
    out: list[tuple[str, bool]] = []
    for vol in _spec(pod).get("volumes") or ():
        if vol.get("persistentVolumeClaim") is not None:
            out.append((str(vol["persistentVolumeClaim"].get("claimName") or ""), False))
        elif vol.get("ephemeral") is not None:
            out.append((f"{pod_name}-{vol.get('name') or ''}", True))
    return out


class EphemeralError(ValueError):
    """A generic ephemeral volume's PVC that the pod does not own (upstream ``ephemeral.VolumeIsForPod``)."""


def volume_is_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> None:
    """Upstream ``ephemeral.VolumeIsForPod``: raise unless the claim's controller owner is the pod."""
    pod_uid = _meta(pod).get("uid") or ""
    for ref in _meta(claim).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("uid") == pod_uid:
            return
    cm, pm = _meta(claim), _meta(pod)
    raise EphemeralError(
        f"PVC {cm.get('namespace') or ''}/{cm.get('name') or ''} was not created for pod "
        f"{pm.get('namespace') or ''}/{pm.get('name') or ''} (pod is not owner)"
    )
