"""What the Job controller's modules share: names, the Job spec read with its API defaults, conditions, and the
pod predicates it counts by (upstream ``pkg/controller/job/util``, the condition helpers of ``job_controller.go``
and ``tracking_utils.go``'s finalizer helpers).

Feature gates: v1.37 has JobPodReplacementPolicy, JobManagedBy, JobSuccessPolicy, JobBackoffLimitPerIndex and
PodIndexLabel GA (always on), so the terminal conditions are always delayed behind the interim ``FailureTarget`` /
``SuccessCriteriaMet`` ones and terminating pods are always counted (``status.terminating``).

The spec accessors apply the API's defaults (``SetDefaults_Job``) themselves, so the controller behaves the same
whether or not the API server defaulted the object. Objects are wire-format dicts, never changed in place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubeplane.api import meta as apimeta
from kubeplane.api.views import annotations_of, is_being_deleted, meta_of, spec_of, status_of
from kubeplane.client.interface import Obj

__all__ = [
    "COMPLETION_INDEX_ANNOTATION",
    "CONTROLLER_NAME",
    "INDEX_FAILURE_COUNT_ANNOTATION",
    "INDEX_IGNORED_FAILURE_COUNT_ANNOTATION",
    "JOB_COMPLETE",
    "JOB_FAILED",
    "JOB_FAILURE_TARGET",
    "JOB_SUCCESS_CRITERIA_MET",
    "JOB_SUSPENDED",
    "JOB_TRACKING_FINALIZER",
    "backoff_limit",
    "completions",
    "ensure_condition_status",
    "finished_condition",
    "has_backoff_limit_per_index",
    "has_tracking_finalizer",
    "is_indexed",
    "is_job_finished",
    "is_pod_failed",
    "managed_by_external_controller",
    "new_condition",
    "only_replace_failed_pods",
    "parallelism",
    "remove_tracking_finalizer_patch",
    "suspended",
]

API_VERSION: Final = "batch/v1"
KIND: Final = "Job"
CONTROLLER_NAME: Final = "kubernetes.io/job-controller"
"""``spec.managedBy`` value (or absence) meaning "this controller" (upstream ``batch.JobControllerName``)."""

JOB_TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
"""Also the name of the label of the same value (PodIndexLabel, GA)."""
INDEX_FAILURE_COUNT_ANNOTATION: Final = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: Final = "batch.kubernetes.io/job-index-ignored-failure-count"

JOB_COMPLETE: Final = "Complete"
JOB_FAILED: Final = "Failed"
JOB_SUSPENDED: Final = "Suspended"
JOB_FAILURE_TARGET: Final = "FailureTarget"
JOB_SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"

# Condition reasons (upstream batch/v1 JobReason*).
REASON_POD_FAILURE_POLICY: Final = "PodFailurePolicy"
REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
REASON_MAX_FAILED_INDEXES_EXCEEDED: Final = "MaxFailedIndexesExceeded"
REASON_FAILED_INDEXES: Final = "FailedIndexes"
REASON_SUCCESS_POLICY: Final = "SuccessPolicy"
REASON_COMPLETIONS_REACHED: Final = "CompletionsReached"

MAX_INT32: Final = 2**31 - 1


# --- the spec, defaulted as the API server would (upstream SetDefaults_Job) --------------------------------


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def completions(job: Mapping[str, Any]) -> int | None:
    """``spec.completions``; 1 when both it and parallelism are unset (a non-parallel Job), else None (a work
    queue: done when any pod succeeds)."""
    spec = spec_of(job)
    value = _int_or_none(spec.get("completions"))
    if value is None and spec.get("parallelism") is None:
        return 1
    return value


def parallelism(job: Mapping[str, Any]) -> int:
    value = _int_or_none(spec_of(job).get("parallelism"))
    return 1 if value is None else value


def has_backoff_limit_per_index(job: Mapping[str, Any]) -> bool:
    return spec_of(job).get("backoffLimitPerIndex") is not None


def backoff_limit(job: Mapping[str, Any]) -> int:
    """``spec.backoffLimit``; 6 by default, MaxInt32 when backoffLimitPerIndex is set (upstream defaults)."""
    value = _int_or_none(spec_of(job).get("backoffLimit"))
    if value is not None:
        return value
    return MAX_INT32 if has_backoff_limit_per_index(job) else 6


def is_indexed(job: Mapping[str, Any]) -> bool:
    return spec_of(job).get("completionMode") == "Indexed"


def suspended(job: Mapping[str, Any]) -> bool:
    return spec_of(job).get("suspend") is True


def only_replace_failed_pods(job: Mapping[str, Any]) -> bool:
    """Replace a pod only once it is Failed, not while it terminates (upstream ``onlyReplaceFailedPods``):
    podReplacementPolicy Failed, which is also what any Job with a podFailurePolicy gets."""
    spec = spec_of(job)
    return spec.get("podReplacementPolicy") == "Failed" or spec.get("podFailurePolicy") is not None


def managed_by_external_controller(job: Mapping[str, Any]) -> str | None:
    """The ``spec.managedBy`` of a Job another controller reconciles, or None for ours."""
    value = spec_of(job).get("managedBy")
    if value and value != CONTROLLER_NAME:
        return str(value)
    return None


# --- conditions --------------------------------------------------------------------------------------------


def finished_condition(job: Mapping[str, Any]) -> str | None:
    """``Complete`` or ``Failed`` when that condition is True (upstream ``FinishedCondition``), else None."""
    for cond in status_of(job).get("conditions") or ():
        if cond.get("type") in (JOB_COMPLETE, JOB_FAILED) and cond.get("status") == "True":
            return str(cond["type"])
    return None


def is_job_finished(job: Mapping[str, Any]) -> bool:
    return finished_condition(job) is not None


def new_condition(cond_type: str, status: str, reason: str, message: str, now: float) -> Obj:
    """A JobCondition stamped ``now`` (probe and transition time alike, as upstream ``newCondition``)."""
    stamp = apimeta.format_time(now)
    cond: Obj = {"type": cond_type, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def ensure_condition_status(
    conditions: list[Obj], cond_type: str, status: str, reason: str, message: str, now: float
) -> bool:
    """Set the condition of ``cond_type`` to (status, reason, message) in place; a new one is appended only when
    its status is not False (nothing -> False is meaningless). Returns whether the list changed (upstream
    ``ensureJobConditionStatus``)."""
    existing = next((c for c in conditions if c.get("type") == cond_type), None)
    if existing is not None:
        if (
            existing.get("status") != status
            or (existing.get("reason") or "") != reason
            or (existing.get("message") or "") != message
        ):
            conditions[conditions.index(existing)] = new_condition(cond_type, status, reason, message, now)
            return True
        return False
    if status != "False":
        conditions.append(new_condition(cond_type, status, reason, message, now))
        return True
    return False


# --- pods --------------------------------------------------------------------------------------------------


def has_tracking_finalizer(pod: Mapping[str, Any]) -> bool:
    return JOB_TRACKING_FINALIZER in (meta_of(pod).get("finalizers") or ())


def remove_tracking_finalizer_patch(pod: Mapping[str, Any]) -> Obj | None:
    """The strategic-merge patch that drops the tracking finalizer, or None when the pod has none."""
    if not has_tracking_finalizer(pod):
        return None
    return {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}}


def is_pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Failed phase; or, unless only failed pods are replaced, deleted before it succeeded (an orphan that never
    reaches Failed is still a failure) (upstream ``isPodFailed``)."""
    phase = status_of(pod).get("phase")
    if phase == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    return is_being_deleted(pod) and phase != "Succeeded"


def pod_annotation(pod: Mapping[str, Any], name: str) -> str | None:
    value = annotations_of(pod).get(name)
    return None if value is None else str(value)


def uids(values: Sequence[Any] | None) -> list[str]:
    return [str(v) for v in values or ()]
