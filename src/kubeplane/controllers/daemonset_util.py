"""What the DaemonSet controller computes without the API (upstream ``pkg/controller/daemon/util`` and the
placement predicates of ``pkg/controller/daemon/daemon_controller.go``): the daemon pod's tolerations and node
affinity, the node a pod targets, whether a node should run the daemon pod, which pods are of the current
revision, and the rolling-update limits. Pure functions over wire-format dicts; nothing here changes its
arguments except :func:`add_daemon_pod_tolerations`, which fills the spec it is given.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Final

from kubeplane.api import labels as apilabels
from kubeplane.api.nodeaffinity import get_required_node_affinity
from kubeplane.api.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, find_matching_untolerated_taint
from kubeplane.api.views import annotations_of, is_being_deleted, labels_of, meta_of, name_of, section, spec_of
from kubeplane.client.interface import Obj
from kubeplane.controllers.controller_utils import scaled_value_from_int_or_percent

__all__ = [
    "HASH_LABEL",
    "TEMPLATE_GENERATION_ANNOTATION",
    "TEMPLATE_GENERATION_LABEL",
    "TargetNodeError",
    "add_daemon_pod_tolerations",
    "allows_surge",
    "find_updated_pods_on_node",
    "is_pod_updated",
    "new_daemon_pod",
    "node_should_run_daemon_pod",
    "pod_sort_key",
    "replace_node_name_affinity",
    "rolling_update_params",
    "surge_count",
    "target_node_name",
    "template_generation",
    "unavailable_count",
]

HASH_LABEL: Final = "controller-revision-hash"
TEMPLATE_GENERATION_LABEL: Final = "pod-template-generation"
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"

_NODE_NAME_FIELD: Final = "metadata.name"


_DAEMON_TOLERATIONS: Final = (
    ("node.kubernetes.io/not-ready", EFFECT_NO_EXECUTE),
    ("node.kubernetes.io/unreachable", EFFECT_NO_EXECUTE),
    ("node.kubernetes.io/disk-pressure", EFFECT_NO_SCHEDULE),
    ("node.kubernetes.io/memory-pressure", EFFECT_NO_SCHEDULE),
    ("node.kubernetes.io/pid-pressure", EFFECT_NO_SCHEDULE),
    ("node.kubernetes.io/unschedulable", EFFECT_NO_SCHEDULE),
)
_NETWORK_UNAVAILABLE: Final = ("node.kubernetes.io/network-unavailable", EFFECT_NO_SCHEDULE)


def _add_or_update_toleration(spec: Obj, toleration: Obj) -> None:
    """Upstream ``AddOrUpdateTolerationInPodSpec``: replace tolerations matching on key, effect, operator and
    value, else append."""
    existing: list[Obj] = list(spec.get("tolerations") or [])
    out: list[Obj] = []
    updated = False
    for current in existing:
        if all(current.get(k, "") == toleration.get(k, "") for k in ("key", "effect", "operator", "value")):
            out.append(toleration)
            updated = True
        else:
            out.append(current)
    if not updated:
        out.append(toleration)
    spec["tolerations"] = out


def add_daemon_pod_tolerations(spec: Obj) -> None:
    """Upstream ``AddOrUpdateDaemonPodTolerations`` on a pod spec dict, in place (no tolerationSeconds: the
    NoExecute ones are forever)."""
    wanted = list(_DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(_NETWORK_UNAVAILABLE)
    for key, effect in wanted:
        _add_or_update_toleration(spec, {"key": key, "operator": "Exists", "effect": effect})


def replace_node_name_affinity(affinity: Obj | None, node_name: str) -> Obj:
    """Upstream ``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required node affinity becomes the single term
    ``matchFields metadata.name In [node_name]``; preferred terms and pod (anti-)affinity are kept."""
    term = {"matchFields": [{"key": _NODE_NAME_FIELD, "operator": "In", "values": [node_name]}]}
    out: Obj = copy.deepcopy(affinity) if affinity else {}
    node_affinity = out.setdefault("nodeAffinity", {})
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    else:
        required["nodeSelectorTerms"] = [term]
    return out


class TargetNodeError(ValueError):
    pass


def target_node_name(pod: Mapping[str, Any]) -> str:
    """Upstream ``GetTargetNodeName``: ``spec.nodeName``, or before binding the node named by the required
    affinity's ``metadata.name In`` field term. Raises :class:`TargetNodeError` with upstream's messages."""
    spec = spec_of(pod)
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    meta = meta_of(pod)
    who = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    required = section(spec, "affinity", "nodeAffinity").get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        raise TargetNodeError(
            f"no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod {who}"
        )
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        raise TargetNodeError(f"no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod {who}")
    for term in terms:
        for expr in term.get("matchFields") or ():
            if expr.get("key") == _NODE_NAME_FIELD and expr.get("operator") == "In":
                values = expr.get("values") or []
                if len(values) != 1:
                    raise TargetNodeError(f"the matchFields value of '{_NODE_NAME_FIELD}' is not unique for pod {who}")
                return str(values[0])
    raise TargetNodeError(f"no node name found for pod {who}")


def template_generation(ds: Mapping[str, Any]) -> int | None:
    """Upstream ``GetTemplateGeneration``: the deprecated annotation as an int (None when absent or bad)."""
    raw = annotations_of(ds).get(TEMPLATE_GENERATION_ANNOTATION)
    return apilabels.parse_int64(raw) if isinstance(raw, str) else None


def is_pod_updated(pod: Mapping[str, Any], hash_: str, generation: int | None) -> bool:
    """Upstream ``IsPodUpdated``: the pod carries the current hash (or the deprecated template generation)."""
    pod_labels = labels_of(pod)
    template_matches = generation is not None and pod_labels.get(TEMPLATE_GENERATION_LABEL) == str(generation)
    return (bool(hash_) and pod_labels.get(HASH_LABEL) == hash_) or template_matches


def new_daemon_pod(ds: Mapping[str, Any], node_name: str) -> Obj:
    """Upstream ``NewPod``: the template as it would run on ``node_name`` (for the placement predicates)."""
    template = spec_of(ds).get("template") or {}
    spec = copy.deepcopy(template.get("spec") or {})
    spec["nodeName"] = node_name
    add_daemon_pod_tolerations(spec)
    meta = copy.deepcopy(template.get("metadata") or {})
    meta["namespace"] = meta_of(ds).get("namespace", "")
    return {"metadata": meta, "spec": spec}


_SCHEDULE_EFFECTS: Final = frozenset({EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE})


def node_should_run_daemon_pod(node: Mapping[str, Any], ds: Mapping[str, Any]) -> tuple[bool, bool]:
    """Upstream ``NodeShouldRunDaemonPod``: (shouldRun, shouldContinueRunning) for ``ds`` on ``node``."""
    node_name = name_of(node)
    pod = new_daemon_pod(ds, node_name)
    template_node = section(ds, "spec", "template", "spec").get("nodeName") or ""
    if template_node not in ("", node_name):
        return False, False
    fits_affinity, _ = get_required_node_affinity(pod).match(node)  # parse errors ignored, as upstream
    if not fits_affinity:
        return False, False
    taints = spec_of(node).get("taints") or []
    tolerations = spec_of(pod).get("tolerations") or []
    untolerated = find_matching_untolerated_taint(
        taints, tolerations, include=lambda t: t.get("effect") in _SCHEDULE_EFFECTS
    )
    if untolerated is not None:
        no_execute = find_matching_untolerated_taint(
            taints, tolerations, include=lambda t: t.get("effect") == EFFECT_NO_EXECUTE
        )
        return False, no_execute is None
    return True, True


def pod_sort_key(pod: Mapping[str, Any]) -> tuple[bool, str, str]:
    """Upstream ``podByCreationTimestampAndPhase``: bound pods first, then oldest, then by name."""
    meta = meta_of(pod)
    bound = bool(spec_of(pod).get("nodeName"))
    return (not bound, str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))


def rolling_update_params(ds: Mapping[str, Any]) -> Mapping[str, Any] | None:
    strategy = spec_of(ds).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    rolling: Mapping[str, Any] | None = strategy.get("rollingUpdate")
    return rolling


def surge_count(ds: Mapping[str, Any], number_to_schedule: int) -> int:
    """Upstream ``SurgeCount`` (the DaemonSetUpdateSurge gate is GA)."""
    rolling = rolling_update_params(ds)
    if rolling is None or rolling.get("maxSurge") is None:
        return 0
    return scaled_value_from_int_or_percent(rolling["maxSurge"], number_to_schedule, True)


def unavailable_count(ds: Mapping[str, Any], number_to_schedule: int) -> int:
    """Upstream ``UnavailableCount``."""
    rolling = rolling_update_params(ds)
    if rolling is None:
        return 0
    return scaled_value_from_int_or_percent(rolling.get("maxUnavailable"), number_to_schedule, True)


def allows_surge(ds: Mapping[str, Any]) -> bool:
    try:
        return surge_count(ds, 1) > 0
    except ValueError:
        return False


def find_updated_pods_on_node(
    pods: Iterable[Mapping[str, Any]], hash_: str, generation: int | None
) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None, bool]:
    """Upstream ``findUpdatedPodsOnNode``: (new pod, old pod, ok) among non-deleting pods; not ok when there
    are two of either kind (the manage loop prunes those first)."""
    new_pod: Mapping[str, Any] | None = None
    old_pod: Mapping[str, Any] | None = None
    for pod in pods:
        if is_being_deleted(pod):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new_pod is not None:
                return None, None, False
            new_pod = pod
        else:
            if old_pod is not None:
                return None, None, False
            old_pod = pod
    return new_pod, old_pod, True
