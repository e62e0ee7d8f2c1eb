"""What the StatefulSet controller computes without the API (upstream ``pkg/controller/statefulset/
stateful_set_utils.go``): pod identity (``<set>-<ordinal>``, the pod-name and pod-index labels, hostname and
subdomain), storage (one claim per volumeClaimTemplate named ``<template>-<set>-<ordinal>``), the claims'
owner references for ``persistentVolumeClaimRetentionPolicy``, pod readiness predicates, revisions as patches
(``getPatch`` / ``ApplyRevision``) and the status helpers.

Pure functions over wire-format dicts; every function that changes an object says so and changes only the
object it was given (callers pass copies of cached objects).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.strategicpatch import strategic_merge_patch
from kubeplane.api.views import is_being_deleted, labels_of, meta_of, spec_of, status_of
from kubeplane.client.interface import Obj
from kubeplane.controllers.controller_utils import (
    get_pod_from_template,
    new_controller_ref,
    scaled_value_from_int_or_percent,
)
from kubeplane.controllers.history import go_template, new_controller_revision
from kubeplane.controllers.podutil import is_pod_available, is_pod_ready

__all__ = [
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "REVISION_LABEL",
    "apply_revision",
    "complete_rolling_update",
    "end_ordinal",
    "get_ordinal",
    "get_parent_name_and_ordinal",
    "get_patch",
    "get_pod_name",
    "get_pod_revision",
    "get_pvc_name",
    "get_stateful_set_max_unavailable",
    "identity_matches",
    "inconsistent_status",
    "is_claim_owner_up_to_date",
    "is_created",
    "is_running_and_available",
    "is_running_and_ready",
    "is_unavailable",
    "new_revision",
    "new_versioned_stateful_set_pod",
    "persistent_volume_claims",
    "pod_in_ordinal_range",
    "start_ordinal",
    "storage_matches",
    "update_claim_owner_refs",
    "update_identity",
    "update_storage",
]

REVISION_LABEL: Final = "controller-revision-hash"
"""Upstream ``apps.StatefulSetRevisionLabel``."""
POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
"""Upstream ``apps.StatefulSetPodNameLabel``."""
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
"""Upstream ``apps.PodIndexLabel`` (the PodIndexLabel gate is GA)."""

SET_API_VERSION: Final = "apps/v1"
SET_KIND: Final = "StatefulSet"
RETAIN: Final = "Retain"
DELETE: Final = "Delete"

_POD_REGEX: Final = re.compile(r"(.*)-([0-9]+)$", re.DOTALL)


# --- identity --------------------------------------------------------------------------------------------------


def get_parent_name_and_ordinal(pod: Mapping[str, Any]) -> tuple[str, int]:
    """Upstream ``getParentNameAndOrdinal``: from ``<parent>-<ordinal>``; ("", -1) for other names (an ordinal
    that does not fit an int32 is -1 with the parent kept, as upstream)."""
    match = _POD_REGEX.search(str(meta_of(pod).get("name") or ""))
    if match is None:
        return "", -1
    value = int(match.group(2))
    return match.group(1), value if value < 2**31 else -1


def get_ordinal(pod: Mapping[str, Any]) -> int:
    return get_parent_name_and_ordinal(pod)[1]


def start_ordinal(sts: Mapping[str, Any]) -> int:
    """Upstream ``getStartOrdinal``: ``spec.ordinals.start`` (StatefulSetStartOrdinal is GA), else 0."""
    ordinals = spec_of(sts).get("ordinals")
    return int(ordinals.get("start") or 0) if isinstance(ordinals, Mapping) else 0


def replicas_of(sts: Mapping[str, Any]) -> int:
    value = spec_of(sts).get("replicas")
    return int(value) if isinstance(value, int) else 1


def end_ordinal(sts: Mapping[str, Any]) -> int:
    """Upstream ``getEndOrdinal`` (inclusive)."""
    return start_ordinal(sts) + replicas_of(sts) - 1


def pod_in_ordinal_range(pod: Mapping[str, Any], sts: Mapping[str, Any]) -> bool:
    ordinal = get_ordinal(pod)
    return start_ordinal(sts) <= ordinal <= end_ordinal(sts)


def get_pod_name(sts: Mapping[str, Any], ordinal: int) -> str:
    return f"{meta_of(sts).get('name')}-{ordinal}"


def get_pvc_name(sts: Mapping[str, Any], claim: Mapping[str, Any], ordinal: int) -> str:
    """Upstream ``getPersistentVolumeClaimName``: ``<template>-<set>-<ordinal>``."""
    return f"{meta_of(claim).get('name')}-{meta_of(sts).get('name')}-{ordinal}"


def is_member_of(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Upstream ``isMemberOf``: the pod's name says it is one of the set's."""
    return get_parent_name_and_ordinal(pod)[0] == meta_of(sts).get("name")


def identity_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Upstream ``identityMatches``: name, namespace and the pod-name label agree with the ordinal."""
    parent, ordinal = get_parent_name_and_ordinal(pod)
    meta = meta_of(pod)
    return (
        ordinal >= 0
        and meta_of(sts).get("name") == parent
        and meta.get("name") == get_pod_name(sts, ordinal)
        and meta.get("namespace") == meta_of(sts).get("namespace")
        and labels_of(pod).get(POD_NAME_LABEL) == meta.get("name")
    )


def update_identity(sts: Mapping[str, Any], pod: Obj) -> None:
    """Upstream ``updateIdentity`` (changes ``pod``): name, namespace, the pod-name and pod-index labels."""
    ordinal = get_ordinal(pod)
    meta = pod.setdefault("metadata", {})
    meta["name"] = get_pod_name(sts, ordinal)
    meta["namespace"] = meta_of(sts).get("namespace")
    labels = meta.setdefault("labels", {})
    labels[POD_NAME_LABEL] = meta["name"]
    labels[POD_INDEX_LABEL] = str(ordinal)


def _init_identity(sts: Mapping[str, Any], pod: Obj) -> None:
    """Upstream ``initIdentity``: the identity, plus hostname and subdomain (immutable: set on creation only)."""
    update_identity(sts, pod)
    spec = pod.setdefault("spec", {})
    spec["hostname"] = pod["metadata"]["name"]
    service_name = spec_of(sts).get("serviceName")
    if service_name:
        spec["subdomain"] = service_name
    else:
        spec.pop("subdomain", None)


# --- storage -----------------------------------------------------------------------------------------------------


def _claim_templates(sts: Mapping[str, Any]) -> list[Obj]:
    return [t for t in spec_of(sts).get("volumeClaimTemplates") or () if isinstance(t, dict)]


def storage_matches(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Upstream ``storageMatches``: every template has a volume of its name using the ordinal's claim."""
    ordinal = get_ordinal(pod)
    if ordinal < 0:
        return False
    volumes = {v.get("name"): v for v in spec_of(pod).get("volumes") or () if isinstance(v, Mapping)}
    for claim in _claim_templates(sts):
        volume = volumes.get(meta_of(claim).get("name"))
        source = volume.get("persistentVolumeClaim") if volume is not None else None
        if not isinstance(source, Mapping) or source.get("claimName") != get_pvc_name(sts, claim, ordinal):
            return False
    return True


def persistent_volume_claims(sts: Mapping[str, Any], pod: Mapping[str, Any]) -> dict[str, Obj]:
    """Upstream ``getPersistentVolumeClaims``: template name -> the claim for this pod's ordinal (the template
    with the ordinal's name, the set's namespace, and the selector's matchLabels over the template's labels)."""
    ordinal = get_ordinal(pod)
    match_labels = (spec_of(sts).get("selector") or {}).get("matchLabels") or {}
    claims: dict[str, Obj] = {}
    for template in _claim_templates(sts):
        claim = copy.deepcopy(dict(template))
        claim.pop("status", None)
        meta = claim.setdefault("metadata", {})
        meta["name"] = get_pvc_name(sts, template, ordinal)
        meta["namespace"] = meta_of(sts).get("namespace")
        meta["labels"] = {**(meta.get("labels") or {}), **match_labels}
        claim["apiVersion"], claim["kind"] = "v1", "PersistentVolumeClaim"
        claims[str(meta_of(template).get("name"))] = claim
    return claims


def update_storage(sts: Mapping[str, Any], pod: Obj) -> None:
    """Upstream ``updateStorage`` (changes ``pod``): a volume per template using its claim, ahead of the pod's
    other volumes; a pod volume named like a template is replaced."""
    claims = persistent_volume_claims(sts, pod)
    spec = pod.setdefault("spec", {})
    new_volumes: list[Obj] = [
        {"name": name, "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
        for name, claim in claims.items()
    ]
    new_volumes.extend(v for v in spec.get("volumes") or () if v.get("name") not in claims)
    spec["volumes"] = new_volumes


# --- claim retention (persistentVolumeClaimRetentionPolicy) ----------------------------------------------------


def retention_policy(sts: Mapping[str, Any]) -> tuple[str, str]:
    """(whenDeleted, whenScaled); Retain for what is unset (upstream ``getPersistentVolumeClaimRetentionPolicy``)."""
    policy = spec_of(sts).get("persistentVolumeClaimRetentionPolicy")
    if not isinstance(policy, Mapping):
        return RETAIN, RETAIN
    return str(policy.get("whenDeleted") or RETAIN), str(policy.get("whenScaled") or RETAIN)


def _refs(obj: Mapping[str, Any]) -> list[Obj]:
    return [r for r in meta_of(obj).get("ownerReferences") or () if isinstance(r, dict)]


def _matches_ref(ref: Mapping[str, Any], obj: Mapping[str, Any], api_version: str, kind: str) -> bool:
    return (
        ref.get("apiVersion") == api_version and ref.get("kind") == kind and ref.get("name") == meta_of(obj).get("name")
    )


def _is_set_ref(ref: Mapping[str, Any], sts: Mapping[str, Any]) -> bool:
    return _matches_ref(ref, sts, SET_API_VERSION, SET_KIND)


def _is_pod_ref(ref: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    return _matches_ref(ref, pod, "v1", "Pod")


def has_unexpected_controller(claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Upstream ``hasUnexpectedController``: under a non-Retain policy, a controller other than the set or pod
    (or a ref to them with a stale UID)."""
    if retention_policy(sts) == (RETAIN, RETAIN):
        return False
    for ref in _refs(claim):
        if _is_set_ref(ref, sts):
            if ref.get("uid") != meta_of(sts).get("uid"):
                return True
            continue
        if _is_pod_ref(ref, pod):
            if ref.get("uid") != meta_of(pod).get("uid"):
                return True
            continue
        if ref.get("controller") is True:
            return True
    return False


def _has_non_controller_owner(claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    uids = {meta_of(sts).get("uid"), meta_of(pod).get("uid")}
    return any(ref.get("uid") in uids and ref.get("controller") is not True for ref in _refs(claim))


def has_owner_ref(target: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = meta_of(owner).get("uid")
    return any(ref.get("uid") == uid for ref in _refs(target))


def has_stale_owner_ref(target: Mapping[str, Any], obj: Mapping[str, Any], api_version: str, kind: str) -> bool:
    """Upstream ``hasStaleOwnerRef``: the first ref naming ``obj`` carries another UID."""
    for ref in _refs(target):
        if _matches_ref(ref, obj, api_version, kind):
            return ref.get("uid") != meta_of(obj).get("uid")
    return False


def is_claim_owner_up_to_date(claim: Mapping[str, Any], sts: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """Upstream ``isClaimOwnerUpToDate``: the claim's refs agree with the policy (Retain/Retain: none;
    whenDeleted Delete: the set; whenScaled Delete: the pod once it is scaled away). Stale refs or a foreign
    controller leave the claim alone (True)."""
    if has_stale_owner_ref(claim, sts, SET_API_VERSION, SET_KIND) or has_stale_owner_ref(claim, pod, "v1", "Pod"):
        return True
    if has_unexpected_controller(claim, sts, pod):
        return not (has_owner_ref(claim, sts) or has_owner_ref(claim, pod))
    if _has_non_controller_owner(claim, sts, pod):
        return False
    when_deleted, when_scaled = retention_policy(sts)
    scaled_down = not pod_in_ordinal_range(pod, sts)
    set_ref, pod_ref = has_owner_ref(claim, sts), has_owner_ref(claim, pod)
    if when_scaled == RETAIN and when_deleted == DELETE:
        return set_ref and not pod_ref
    if when_scaled == DELETE and when_deleted == RETAIN:
        return not set_ref and scaled_down == pod_ref
    if when_scaled == DELETE and when_deleted == DELETE:
        return scaled_down != set_ref and scaled_down == pod_ref
    return not (set_ref or pod_ref)  # Retain/Retain, and unknown policies treated as Retain


def update_claim_owner_refs(claim: Obj, sts: Mapping[str, Any], pod: Mapping[str, Any]) -> None:
    """Upstream ``updateClaimOwnerRefForSetAndPod`` (changes ``claim``): scrub refs to the set and pod, then add
    the controller refs the policy asks for (none when another controller manages the claim)."""
    unexpected = has_unexpected_controller(claim, sts, pod)
    refs = [r for r in _refs(claim) if not (_is_set_ref(r, sts) or _is_pod_ref(r, pod))]
    if not unexpected:
        when_deleted, when_scaled = retention_policy(sts)
        scaled_down = not pod_in_ordinal_range(pod, sts)
        if when_scaled == DELETE and scaled_down:
            refs = _add_controller_ref(refs, pod, "v1", "Pod")
        if when_deleted == DELETE and (when_scaled == RETAIN or not scaled_down):
            refs = _add_controller_ref(refs, sts, SET_API_VERSION, SET_KIND)
    claim.setdefault("metadata", {})["ownerReferences"] = refs


def _add_controller_ref(refs: list[Obj], owner: Mapping[str, Any], api_version: str, kind: str) -> list[Obj]:
    if any(r.get("uid") == meta_of(owner).get("uid") for r in refs):
        return refs
    return [*refs, new_controller_ref(owner, api_version=api_version, kind=kind)]


# --- pod state ---------------------------------------------------------------------------------------------------


def is_running_and_ready(pod: Mapping[str, Any]) -> bool:
    return status_of(pod).get("phase") == "Running" and is_pod_ready(pod)


def is_running_and_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    return is_pod_available(pod, min_ready_seconds, now)


def is_created(pod: Mapping[str, Any]) -> bool:
    """Upstream ``isCreated``: the API server has given it a phase (a pod only planned here has none)."""
    return bool(status_of(pod).get("phase"))


def is_healthy(pod: Mapping[str, Any]) -> bool:
    return is_running_and_ready(pod) and not is_being_deleted(pod)


def is_unavailable(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """Upstream ``isUnavailable``: not healthy, or not yet available for minReadySeconds."""
    return not is_healthy(pod) or not is_running_and_available(pod, min_ready_seconds, now)


def get_pod_revision(pod: Mapping[str, Any]) -> str:
    return str(labels_of(pod).get(REVISION_LABEL) or "")


# --- new pods ----------------------------------------------------------------------------------------------------


def new_stateful_set_pod(sts: Mapping[str, Any], ordinal: int) -> Obj:
    """Upstream ``newStatefulSetPod``: the template as the pod of ``ordinal`` (identity, storage, owner)."""
    ref = new_controller_ref(sts, api_version=SET_API_VERSION, kind=SET_KIND)
    pod = get_pod_from_template(spec_of(sts).get("template") or {}, sts, ref)
    pod["metadata"].pop("generateName", None)
    pod["metadata"]["name"] = get_pod_name(sts, ordinal)
    _init_identity(sts, pod)
    update_storage(sts, pod)
    return pod


def new_versioned_stateful_set_pod(
    current_set: Mapping[str, Any], update_set: Mapping[str, Any], current_rev: str, update_rev: str, ordinal: int
) -> Obj:
    """Upstream ``newVersionedStatefulSetPod``: below the partition (or, without a rollingUpdate block, below
    the current replicas) the pod is made from the current revision, else from the update revision. Go's
    ``a && b || c`` precedence is kept: the partition clause applies whatever the strategy type."""
    strategy = spec_of(current_set).get("updateStrategy") or {}
    rolling = strategy.get("rollingUpdate")
    start = start_ordinal(current_set)
    current_replicas = int(status_of(current_set).get("currentReplicas") or 0)
    use_current = (
        strategy.get("type") == "RollingUpdate" and rolling is None and ordinal < start + current_replicas
    ) or (isinstance(rolling, Mapping) and ordinal < start + int(rolling.get("partition") or 0))
    pod = new_stateful_set_pod(current_set if use_current else update_set, ordinal)
    pod["metadata"].setdefault("labels", {})[REVISION_LABEL] = current_rev if use_current else update_rev
    return pod


# --- revisions ---------------------------------------------------------------------------------------------------


def get_patch(sts: Mapping[str, Any]) -> Obj:
    """Upstream ``getPatch``: ``{"spec": {"template": <template, "$patch": "replace">}}`` — the patch that
    restores this template (kubectl's ``rollout undo`` applies it as a strategic merge patch)."""
    template = go_template(spec_of(sts).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def new_revision(sts: Mapping[str, Any], revision: int, collision_count: int) -> Obj:
    """Upstream ``newRevision``: the set's patch as a ControllerRevision, with the set's annotations."""
    cr = new_controller_revision(
        sts,
        api_version=SET_API_VERSION,
        kind=SET_KIND,
        template_labels=(spec_of(sts).get("template") or {}).get("metadata", {}).get("labels"),
        data=get_patch(sts),
        revision=revision,
        collision_count=collision_count,
    )
    annotations = dict(meta_of(sts).get("annotations") or {})
    if annotations:
        cr["metadata"]["annotations"] = annotations
    return cr


def apply_revision(sts: Mapping[str, Any], revision: Mapping[str, Any]) -> Obj:
    """Upstream ``ApplyRevision``: the set with the revision's data applied as a strategic merge patch."""
    data = revision.get("data")
    if not isinstance(data, Mapping):
        return copy.deepcopy(dict(sts))
    return strategic_merge_patch(copy.deepcopy(dict(sts)), dict(data), kind=("apps", "StatefulSet"))


# --- status ------------------------------------------------------------------------------------------------------


_STATUS_COUNTS: Final = ("replicas", "currentReplicas", "readyReplicas", "updatedReplicas", "availableReplicas")


def inconsistent_status(sts: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Upstream ``inconsistentStatus``: a newer observedGeneration or any count or revision differs."""
    old = status_of(sts)
    if int(status.get("observedGeneration") or 0) > int(old.get("observedGeneration") or 0):
        return True
    if any(int(status.get(k) or 0) != int(old.get(k) or 0) for k in _STATUS_COUNTS):
        return True
    return any((status.get(k) or "") != (old.get(k) or "") for k in ("currentRevision", "updateRevision"))


def complete_rolling_update(sts: Mapping[str, Any], status: Obj) -> None:
    """Upstream ``completeRollingUpdate`` (changes ``status``): once every replica is updated and ready the
    update revision becomes the current one."""
    replicas = replicas_of(sts)
    strategy = spec_of(sts).get("updateStrategy") or {}
    if (
        strategy.get("type") == "RollingUpdate"
        and status.get("updatedReplicas") == replicas
        and status.get("readyReplicas") == replicas
        and status.get("replicas") == replicas
    ):
        status["currentReplicas"] = status["updatedReplicas"]
        status["currentRevision"] = status["updateRevision"]


def get_stateful_set_max_unavailable(max_unavailable: int | str | None, replicas: int) -> int:
    """Upstream ``getStatefulSetMaxUnavailable``: default 1, percentages rounded down, never below 1."""
    value = scaled_value_from_int_or_percent(1 if max_unavailable is None else max_unavailable, replicas, False)
    return max(value, 1)


def selector_of(sts: Mapping[str, Any]) -> apilabels.Selector:
    return apilabels.label_selector_as_selector(spec_of(sts).get("selector"))


def sorted_by_ordinal(pods: Iterable[Obj], *, descending: bool = False) -> list[Obj]:
    return sorted(pods, key=get_ordinal, reverse=descending)


def overlapping_order(sets: Sequence[Obj]) -> list[Obj]:
    """Upstream ``overlappingStatefulSets``: oldest first, then by name."""
    return sorted(sets, key=lambda s: (str(meta_of(s).get("creationTimestamp") or ""), str(meta_of(s).get("name"))))
