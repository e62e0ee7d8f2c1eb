"""Deployment helpers: upstream ``pkg/controller/deployment/util``.

Everything here is pure (objects in, values out). Objects are wire-format dicts; functions never mutate their
arguments unless the docstring says "in place" (the controller hands them its own deep copies).

Conventions shared with upstream, kept verbatim because they are observable:

* ReplicaSets are named ``<deployment>-<pod-template-hash>``; the hash is also the ``pod-template-hash`` label on
  the ReplicaSet, its selector and its pod template
  (:func:`kubeplane.controllers.controller_utils.compute_hash`, whose one documented difference from upstream
  is what exactly is hashed).
* A ReplicaSet "is" the Deployment's new one when its template equals the Deployment's template ignoring the
  ``pod-template-hash`` label (:func:`equal_ignore_hash`), never by name: a rollback therefore reuses the old
  ReplicaSet whose template matches.
* Annotations on the ReplicaSets: ``deployment.kubernetes.io/revision`` (rollout sequence; the new ReplicaSet
  always has the highest), ``revision-history`` (earlier revisions a reused ReplicaSet had), ``desired-replicas``
  and ``max-replicas`` (the Deployment's replicas and replicas+maxSurge when the ReplicaSet was last scaled by
  the controller: they tell a scaling event from a rollout and drive proportional scaling).
* Percentages: maxSurge rounds up, maxUnavailable rounds down, and if both resolve to 0, maxUnavailable is 1
  (:func:`resolve_fenceposts`).

What the workload controllers share lives in :mod:`kubeplane.controllers.controller_utils`: the pod-template
hash, IntOrString scaling, and claiming ReplicaSets (``ReplicaSetControllerRefManager``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from kubeplane.api import meta as apimeta
from kubeplane.api.views import annotations_of, meta_of, name_of, section, spec_of, status_of, uid_of
from kubeplane.client.interface import Obj
from kubeplane.controllers.controller_utils import scaled_value_from_int_or_percent

__all__ = [
    "ANNOTATIONS_TO_SKIP",
    "DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY",
    "DESIRED_REPLICAS_ANNOTATION",
    "MAX_REPLICAS_ANNOTATION",
    "MAX_REV_HISTORY_LENGTH_IN_CHARS",
    "REVISION_ANNOTATION",
    "REVISION_HISTORY_ANNOTATION",
    "by_creation_timestamp",
    "deployment_complete",
    "deployment_progressing",
    "deployment_timed_out",
    "equal_ignore_hash",
    "filter_active_replica_sets",
    "find_active_or_latest",
    "find_new_replica_set",
    "find_old_replica_sets",
    "get_proportion",
    "is_saturated",
    "max_revision",
    "max_surge",
    "max_unavailable",
    "new_deployment_condition",
    "new_rs_new_replicas",
    "resolve_fenceposts",
    "set_deployment_condition",
    "set_new_replica_set_annotations",
    "set_replicas_annotations",
]

# --- names (upstream apps/v1 and deployment/util) -------------------------------------------------------------

DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: Final = "pod-template-hash"
REVISION_ANNOTATION: Final = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION: Final = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION: Final = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED_CONFIG_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
DEPRECATED_ROLLBACK_TO: Final = "deprecated.deployment.rollback.to"
MAX_REV_HISTORY_LENGTH_IN_CHARS: Final = 2000
"""Upstream's cap on the revision-history annotation."""

ANNOTATIONS_TO_SKIP: Final = frozenset(
    {
        LAST_APPLIED_CONFIG_ANNOTATION,
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        DEPRECATED_ROLLBACK_TO,
    }
)
"""Deployment annotations never copied to its ReplicaSets (the controller owns these on the ReplicaSet)."""

ROLLING_UPDATE: Final = "RollingUpdate"
RECREATE: Final = "Recreate"
MAX_INT32: Final = 2**31 - 1

# Condition types and reasons (upstream deployment/util constants).
PROGRESSING: Final = "Progressing"
AVAILABLE: Final = "Available"
REPLICA_FAILURE: Final = "ReplicaFailure"
REPLICA_SET_UPDATED_REASON: Final = "ReplicaSetUpdated"
FAILED_RS_CREATE_REASON: Final = "ReplicaSetCreateError"
NEW_REPLICA_SET_REASON: Final = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON: Final = "FoundNewReplicaSet"
NEW_RS_AVAILABLE_REASON: Final = "NewReplicaSetAvailable"
TIMED_OUT_REASON: Final = "ProgressDeadlineExceeded"
PAUSED_DEPLOY_REASON: Final = "DeploymentPaused"
RESUMED_DEPLOY_REASON: Final = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE: Final = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE: Final = "MinimumReplicasUnavailable"


# --- small accessors ---------------------------------------------------------------------------------------


def spec_replicas(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` (apps/v1 defaults an absent value to 1, as the API server does on write)."""
    value = spec_of(obj).get("replicas")
    return 1 if value is None else int(value)


def status_int(obj: Mapping[str, Any], field: str) -> int:
    return int(status_of(obj).get(field) or 0)


def is_rolling_update(deployment: Mapping[str, Any]) -> bool:
    return bool(section(deployment, "spec", "strategy").get("type", ROLLING_UPDATE) == ROLLING_UPDATE)


def has_progress_deadline(deployment: Mapping[str, Any]) -> bool:
    """Upstream ``HasProgressDeadline``: set and not MaxInt32 (kubectl's way of saying "no deadline")."""
    value = spec_of(deployment).get("progressDeadlineSeconds")
    return value is not None and int(value) != MAX_INT32


def has_revision_history_limit(deployment: Mapping[str, Any]) -> bool:
    value = spec_of(deployment).get("revisionHistoryLimit")
    return value is not None and int(value) != MAX_INT32


def prune_empty(value: Any) -> Any:
    """Drop None, empty maps/lists and empty strings recursively: apimachinery's semantic equality treats nil
    and empty alike, and Go's omitempty makes an empty string indistinguishable from an absent one."""
    if isinstance(value, Mapping):
        out = {k: prune_empty(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [prune_empty(v) for v in value]
    return value


def equal_ignore_hash(template1: Mapping[str, Any] | None, template2: Mapping[str, Any] | None) -> bool:
    """Upstream ``EqualIgnoreHash``: the templates are semantically equal once the ``pod-template-hash`` label
    is removed from both (the Deployment's template never has it; its ReplicaSets' templates do)."""
    copies = []
    for template in (template1 or {}, template2 or {}):
        t = copy.deepcopy(dict(template))
        labels = meta_of(t).get("labels")
        if isinstance(labels, dict):
            labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
        copies.append(prune_empty(t))
    return bool(copies[0] == copies[1])


def clone_and_add_label(labels: Mapping[str, str] | None, key: str, value: str) -> dict[str, str]:
    out = dict(labels or {})
    if key:
        out[key] = value
    return out


def clone_selector_and_add_label(selector: Mapping[str, Any] | None, key: str, value: str) -> Obj:
    """Upstream ``CloneSelectorAndAddLabel``: the selector with ``key=value`` added to matchLabels."""
    out: Obj = copy.deepcopy(dict(selector or {}))
    if key:
        out["matchLabels"] = clone_and_add_label(out.get("matchLabels"), key, value)
    return out


# --- ordering (upstream controller.ReplicaSetsBy*) ------------------------------------------------------------


def _creation_key(rs: Mapping[str, Any]) -> tuple[float, str]:
    stamp = meta_of(rs).get("creationTimestamp")
    try:
        when = apimeta.parse_time(str(stamp)).timestamp() if stamp else 0.0
    except ValueError:
        when = 0.0
    return when, name_of(rs)


def by_creation_timestamp(rss: Iterable[Obj]) -> list[Obj]:
    """Oldest first; ties by name (upstream ``ReplicaSetsByCreationTimestamp``)."""
    return sorted(rss, key=_creation_key)


def by_size_older(rss: Iterable[Obj]) -> list[Obj]:
    """Largest first; equal sizes oldest first (upstream ``ReplicaSetsBySizeOlder``: scale down old first)."""
    return sorted(by_creation_timestamp(rss), key=lambda rs: -spec_replicas(rs))


def by_size_newer(rss: Iterable[Obj]) -> list[Obj]:
    """Largest first; equal sizes newest first (upstream ``ReplicaSetsBySizeNewer``: scale up new first)."""
    newest_first = by_creation_timestamp(rss)
    newest_first.reverse()
    return sorted(newest_first, key=lambda rs: -spec_replicas(rs))


def revision(obj: Mapping[str, Any]) -> int:
    """The revision annotation (0 when absent); ValueError when it is not an integer."""
    value = annotations_of(obj).get(REVISION_ANNOTATION)
    return 0 if value is None else int(value)


def _revision_or_zero(obj: Mapping[str, Any]) -> int:
    try:
        return revision(obj)
    except ValueError:
        return 0


def by_revision(rss: Iterable[Obj]) -> list[Obj]:
    """Lowest revision first; equal revisions by creation (upstream ``ReplicaSetsByRevision``)."""
    return sorted(by_creation_timestamp(rss), key=_revision_or_zero)


def max_revision(rss: Iterable[Obj | None]) -> int:
    """The highest revision among ``rss`` (unparsable annotations are skipped, as upstream logs and skips)."""
    best = 0
    for rs in rss:
        if rs is None:
            continue
        try:
            best = max(best, revision(rs))
        except ValueError:
            continue
    return best


# --- finding the new and old ReplicaSets ---------------------------------------------------------------------


def find_new_replica_set(deployment: Mapping[str, Any], rs_list: Iterable[Obj]) -> Obj | None:
    """The oldest ReplicaSet whose template equals the Deployment's (ignoring the hash label); with several
    (possible after a hash collision) the oldest wins so the choice is stable."""
    template = spec_of(deployment).get("template")
    for rs in by_creation_timestamp(rs_list):
        if equal_ignore_hash(spec_of(rs).get("template"), template):
            return rs
    return None


def find_old_replica_sets(deployment: Mapping[str, Any], rs_list: Sequence[Obj]) -> tuple[list[Obj], list[Obj]]:
    """``(old ReplicaSets with replicas, all old ReplicaSets)``: every ReplicaSet but the new one."""
    new_rs = find_new_replica_set(deployment, rs_list)
    new_uid = uid_of(new_rs) if new_rs is not None else None
    required: list[Obj] = []
    every: list[Obj] = []
    for rs in rs_list:
        if new_uid is not None and uid_of(rs) == new_uid:
            continue
        every.append(rs)
        if spec_replicas(rs) != 0:
            required.append(rs)
    return required, every


def filter_active_replica_sets(rss: Iterable[Obj | None]) -> list[Obj]:
    """ReplicaSets that exist and want at least one replica."""
    return [rs for rs in rss if rs is not None and spec_replicas(rs) > 0]


def find_active_or_latest(new_rs: Obj | None, old_rss: Sequence[Obj]) -> Obj | None:
    """Upstream ``FindActiveOrLatest``: the only active ReplicaSet; with none active, the new one or else the
    newest old one; None when several are active (then proportional scaling applies)."""
    if new_rs is None and not old_rss:
        return None
    newest_first = list(reversed(by_creation_timestamp(old_rss)))
    active = filter_active_replica_sets([*newest_first, new_rs])
    if not active:
        return new_rs if new_rs is not None else newest_first[0]
    if len(active) == 1:
        return active[0]
    return None


def replica_count(rss: Iterable[Obj | None]) -> int:
    """Sum of ``spec.replicas`` (upstream ``GetReplicaCountForReplicaSets``)."""
    return sum(spec_replicas(rs) for rs in rss if rs is not None)


def status_count(rss: Iterable[Obj | None], field: str) -> int:
    """Sum of a ``status`` counter (replicas, readyReplicas, availableReplicas) over ``rss``."""
    return sum(status_int(rs, field) for rs in rss if rs is not None)


def terminating_count(rss: Iterable[Obj | None]) -> int | None:
    """Sum of ``status.terminatingReplicas``; None as soon as one ReplicaSet does not report it (upstream
    ``GetTerminatingReplicaCountForReplicaSets``: an unknown part makes the total unknown)."""
    total = 0
    for rs in rss:
        if rs is None:
            continue
        value = status_of(rs).get("terminatingReplicas")
        if value is None:
            return None
        total += int(value)
    return total


# --- maxSurge / maxUnavailable -------------------------------------------------------------------------------


def resolve_fenceposts(surge: int | str | None, unavailable: int | str | None, desired: int) -> tuple[int, int]:
    """Upstream ``ResolveFenceposts``: absolute maxSurge (percentages round up) and maxUnavailable (round
    down); when both come out 0, maxUnavailable becomes 1 so the rollout can still move (validation forbids
    both being literally 0, but rounding down can produce it). Raises IntOrPercentError on a bad value."""
    surge_n = scaled_value_from_int_or_percent(0 if surge is None else surge, desired, True)
    unavailable_n = scaled_value_from_int_or_percent(0 if unavailable is None else unavailable, desired, False)
    if surge_n == 0 and unavailable_n == 0:
        unavailable_n = 1
    return surge_n, unavailable_n


def _rolling_params(deployment: Mapping[str, Any]) -> Mapping[str, Any]:
    return section(deployment, "spec", "strategy").get("rollingUpdate") or {}


def max_surge(deployment: Mapping[str, Any]) -> int:
    """Absolute maxSurge; 0 for Recreate."""
    if not is_rolling_update(deployment):
        return 0
    params = _rolling_params(deployment)
    return resolve_fenceposts(params.get("maxSurge"), params.get("maxUnavailable"), spec_replicas(deployment))[0]


def max_unavailable(deployment: Mapping[str, Any]) -> int:
    """Absolute maxUnavailable, never above replicas; 0 for Recreate or 0 replicas."""
    replicas = spec_replicas(deployment)
    if not is_rolling_update(deployment) or replicas == 0:
        return 0
    params = _rolling_params(deployment)
    unavailable = resolve_fenceposts(params.get("maxSurge"), params.get("maxUnavailable"), replicas)[1]
    return min(unavailable, replicas)


def new_rs_new_replicas(deployment: Mapping[str, Any], all_rss: Sequence[Obj | None], new_rs: Obj) -> int:
    """Upstream ``NewRSNewReplicas``: how far the new ReplicaSet may grow now. RollingUpdate: up to
    replicas+maxSurge pods in total and never beyond replicas for the new one; Recreate: all of it."""
    replicas = spec_replicas(deployment)
    if is_rolling_update(deployment):
        surge = scaled_value_from_int_or_percent(_rolling_params(deployment).get("maxSurge", 0), replicas, True)
        current = replica_count(all_rss)
        max_total = replicas + surge
        if current >= max_total:
            return spec_replicas(new_rs)
        scale_up = min(max_total - current, replicas - spec_replicas(new_rs))
        return spec_replicas(new_rs) + scale_up
    if section(deployment, "spec", "strategy").get("type") == RECREATE:
        return replicas
    raise ValueError(f"deployment type {section(deployment, 'spec', 'strategy').get('type')} isn't supported")


def is_saturated(deployment: Mapping[str, Any], rs: Obj | None) -> bool:
    """The ReplicaSet has all the Deployment's replicas, was sized for exactly that, and all are available."""
    if rs is None:
        return False
    try:
        desired = int(annotations_of(rs).get(DESIRED_REPLICAS_ANNOTATION, ""))
    except ValueError:
        return False
    replicas = spec_replicas(deployment)
    return spec_replicas(rs) == replicas and desired == replicas and status_int(rs, "availableReplicas") == replicas


# --- annotations -------------------------------------------------------------------------------------------


def int_annotation(rs: Mapping[str, Any], key: str) -> int | None:
    """An integer annotation, or None when absent or not an int32 (upstream ``getIntFromAnnotation``)."""
    value = annotations_of(rs).get(key)
    if value is None:
        return None
    try:
        return int(value, 10)
    except ValueError:
        return None


def set_replicas_annotations(rs: Obj, desired: int, maximum: int) -> bool:
    """Set desired-replicas and max-replicas in place; True if anything changed."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS_ANNOTATION, str(desired)), (MAX_REPLICAS_ANNOTATION, str(maximum))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Mapping[str, Any], desired: int, maximum: int) -> bool:
    annotations = annotations_of(rs)
    return annotations.get(DESIRED_REPLICAS_ANNOTATION) != str(desired) or annotations.get(
        MAX_REPLICAS_ANNOTATION
    ) != str(maximum)


def _copy_deployment_annotations(deployment: Mapping[str, Any], rs: Obj) -> bool:
    """Copy the Deployment's annotations (but :data:`ANNOTATIONS_TO_SKIP`) onto the ReplicaSet in place. The
    revision is not copied: the ReplicaSet's is authoritative and the Deployment's is copied *from* it."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in annotations_of(deployment).items():
        if key in ANNOTATIONS_TO_SKIP or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    return changed


def set_new_replica_set_annotations(
    deployment: Mapping[str, Any],
    rs: Obj,
    new_revision: str,
    exists: bool,
    limit_in_chars: int = MAX_REV_HISTORY_LENGTH_IN_CHARS,
) -> bool:
    """Upstream ``SetNewReplicaSetAnnotations``, in place; True if anything changed.

    The ReplicaSet's revision only ever goes up (to ``new_revision``); a ReplicaSet that already had a revision
    and gets a higher one is being rolled back to, so its previous revision is appended to the revision-history
    annotation (oldest entries dropped to stay within ``limit_in_chars``). A ReplicaSet about to be created also
    gets the replicas annotations."""
    changed = _copy_deployment_annotations(deployment, rs)
    annotations = rs["metadata"]["annotations"]
    old_revision = annotations.get(REVISION_ANNOTATION)
    had_revision = old_revision is not None
    try:
        old_int = int(old_revision) if old_revision else 0
    except ValueError:
        return False
    try:
        new_int = int(new_revision)
    except ValueError:
        return False
    if old_int < new_int:
        annotations[REVISION_ANNOTATION] = new_revision
        changed = True
    if had_revision and old_int < new_int:
        history = annotations.get(REVISION_HISTORY_ANNOTATION, "")
        old_revisions = history.split(",")
        if not old_revisions[0]:
            annotations[REVISION_HISTORY_ANNOTATION] = old_revision
        else:
            total = len(history) + len(str(old_revision)) + 1
            start = 0
            while total > limit_in_chars and start < len(old_revisions):
                total -= len(old_revisions[start]) + 1
                start += 1
            if total <= limit_in_chars:
                annotations[REVISION_HISTORY_ANNOTATION] = ",".join([*old_revisions[start:], str(old_revision)])
    if not exists:
        replicas = spec_replicas(deployment)
        if set_replicas_annotations(rs, replicas, replicas + max_surge(deployment)):
            changed = True
    return changed


def set_deployment_revision(deployment: Obj, revision_value: str) -> bool:
    """Set the Deployment's revision annotation in place; True if it changed."""
    annotations = deployment.setdefault("metadata", {}).setdefault("annotations", {})
    if annotations.get(REVISION_ANNOTATION) != revision_value:
        annotations[REVISION_ANNOTATION] = revision_value
        return True
    return False


# --- proportional scaling ----------------------------------------------------------------------------------


def round_to_int32(value: float) -> int:
    """Upstream ``integer.RoundToInt32``: half away from zero."""
    return int(value - 0.5) if value < 0 else int(value + 0.5)


def _replica_set_fraction(rs: Mapping[str, Any], deployment: Mapping[str, Any]) -> int:
    """How many replicas ``rs`` should gain (negative: lose) for the Deployment's new size, in proportion to its
    share of the size recorded in its max-replicas annotation (or the Deployment's current status.replicas)."""
    replicas = spec_replicas(deployment)
    if replicas == 0:
        return -spec_replicas(rs)
    deployment_max = replicas + max_surge(deployment)
    annotated = int_annotation(rs, MAX_REPLICAS_ANNOTATION)
    if annotated is None:
        annotated = status_int(deployment, "replicas")
    if annotated == 0:
        return 0  # upstream divides by zero here (it never proportionally scales up from zero)
    new_size = spec_replicas(rs) * deployment_max / annotated
    return round_to_int32(new_size) - spec_replicas(rs)


def get_proportion(rs: Obj | None, deployment: Mapping[str, Any], to_add: int, added: int) -> int:
    """Upstream ``GetProportion``: ``rs``'s share of ``to_add``, never exceeding what is left of it."""
    if rs is None or spec_replicas(rs) == 0 or to_add in (0, added):
        return 0
    fraction = _replica_set_fraction(rs, deployment)
    allowed = to_add - added
    if to_add > 0:
        return min(fraction, allowed)
    return max(fraction, allowed)


# --- conditions and progress ----------------------------------------------------------------------------------


def new_deployment_condition(cond_type: str, status: str, reason: str, message: str, now: float) -> Obj:
    stamp = apimeta.format_time(now)
    return {
        "type": cond_type,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_deployment_condition(status: Mapping[str, Any], cond_type: str) -> Obj | None:
    for condition in status.get("conditions") or ():
        if condition.get("type") == cond_type:
            return dict(condition)
    return None


def remove_deployment_condition(status: Obj, cond_type: str) -> None:
    status["conditions"] = [c for c in status.get("conditions") or () if c.get("type") != cond_type]


def set_deployment_condition(status: Obj, condition: Obj) -> None:
    """Upstream ``SetDeploymentCondition``, in place: nothing happens when a condition of the type already has
    this status and reason; otherwise it replaces it (moved to the end), keeping lastTransitionTime when only
    the reason changed."""
    current = get_deployment_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"]:
        if current.get("reason") == condition.get("reason"):
            return
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_deployment_condition(status, condition["type"])
    status["conditions"].append(condition)


def replica_set_to_deployment_condition(condition: Mapping[str, Any]) -> Obj:
    return {
        "type": condition.get("type"),
        "status": condition.get("status"),
        "lastUpdateTime": condition.get("lastTransitionTime"),
        "lastTransitionTime": condition.get("lastTransitionTime"),
        "reason": condition.get("reason"),
        "message": condition.get("message"),
    }


def deployment_complete(deployment: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """Every replica updated and available, no old ones left, and the current generation observed."""
    replicas = spec_replicas(deployment)
    return (
        int(new_status.get("updatedReplicas") or 0) == replicas
        and int(new_status.get("replicas") or 0) == replicas
        and int(new_status.get("availableReplicas") or 0) == replicas
        and int(new_status.get("observedGeneration") or 0) >= int(meta_of(deployment).get("generation") or 0)
    )


def deployment_progressing(deployment: Mapping[str, Any], new_status: Mapping[str, Any]) -> bool:
    """More updated/ready/available replicas or fewer old ones than the stored status says."""
    old = status_of(deployment)

    def get(status: Mapping[str, Any], field: str) -> int:
        return int(status.get(field) or 0)

    old_old = get(old, "replicas") - get(old, "updatedReplicas")
    new_old = get(new_status, "replicas") - get(new_status, "updatedReplicas")
    return (
        get(new_status, "updatedReplicas") > get(old, "updatedReplicas")
        or new_old < old_old
        or get(new_status, "readyReplicas") > get(old, "readyReplicas")
        or get(new_status, "availableReplicas") > get(old, "availableReplicas")
    )


def condition_time(condition: Mapping[str, Any], field: str) -> float | None:
    value = condition.get(field)
    if not value:
        return None
    try:
        return apimeta.parse_time(str(value)).timestamp()
    except ValueError:
        return None


def deployment_timed_out(deployment: Mapping[str, Any], new_status: Mapping[str, Any], now: float) -> bool:
    """The Progressing condition was last updated more than progressDeadlineSeconds before ``now`` (never after
    a completed rollout; always once timed out)."""
    if not has_progress_deadline(deployment):
        return False
    condition = get_deployment_condition(new_status, PROGRESSING)
    if condition is None:
        return False
    if condition.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if condition.get("reason") == TIMED_OUT_REASON:
        return True
    since = condition_time(condition, "lastUpdateTime")
    if since is None:
        return False
    return since + int(spec_of(deployment)["progressDeadlineSeconds"]) < now
