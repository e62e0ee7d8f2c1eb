"""Job ``/status`` validation: upstream ``ValidateJobUpdateStatus`` with the options the v1.37 Job strategy
computes (``getStatusValidationOptions`` with JobManagedBy GA).

Most transition rules fire only when the status fields they look at changed (so a controller can keep
updating unrelated fields of a Job whose status an older version left inconsistent); counters may never go
down (succeeded may, for an Indexed Job whose completions equal its parallelism: elastic scale-down), terminal
conditions may never be switched off, and completionTime may never move. Messages and paths are upstream's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.meta import parse_time
from kubeplane.api.validation import field
from kubeplane.api.validation.batch_job import IndexesError, parse_index_interval, validate_indexes_format
from kubeplane.api.validation.common import read_nonnegative, read_optional_nonnegative
from kubeplane.api.validation.field import OMIT_VALUE, ErrorList
from kubeplane.api.validation.reader import NAMED_GROUPS

__all__ = ["validate_job_status_update"]

_Obj = Mapping[str, Any]


def _status(job: _Obj) -> _Obj:
    status = job.get("status")
    return status if isinstance(status, Mapping) else {}


def _spec(job: _Obj) -> _Obj:
    spec = job.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def is_condition_true(job: _Obj, kind: str) -> bool:
    """Upstream ``IsConditionTrue`` on ``status.conditions``."""
    conditions = _status(job).get("conditions")
    return any(
        isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
        for c in (conditions if isinstance(conditions, list) else [])
    )


def is_job_finished(job: _Obj) -> bool:
    return is_condition_true(job, "Complete") or is_condition_true(job, "Failed")


def _overlap_error(completed: str, failed: str, completions: int) -> str | None:
    """Upstream ``validateFailedIndexesNotOverlapCompleted`` (intervals that do not parse are skipped)."""
    if not completed or not failed:
        return None

    def parsed(parts: list[str]) -> list[tuple[int, int]]:
        out = []
        for part in parts:
            try:
                out.append(parse_index_interval(part, completions))
            except IndexesError:
                continue
        return out

    for cx, cy in parsed(completed.split(",")):
        for fx, fy in parsed(failed.split(",")):
            if cx <= fy and fx <= cy:
                return f"failedIndexes and completedIndexes overlap at index: {max(cx, fx)}"
    return None


def _validate_status(job: _Obj, old: _Obj, errs: ErrorList) -> None:
    st = NAMED_GROUPS.root(job, errs).child("status")
    c = read_nonnegative(st, "active", "succeeded", "failed")
    ready = read_optional_nonnegative(st, "ready")
    terminating = read_optional_nonnegative(st, "terminating")
    status, old_status, spec = _status(job), _status(old), _spec(job)
    path = field.new_path("status")
    uncounted = status.get("uncountedTerminatedPods")
    if isinstance(uncounted, Mapping):
        seen: set[str] = set()
        for key in ("succeeded", "failed"):
            for i, uid in enumerate(uncounted.get(key) or []):
                p = path.child("uncountedTerminatedPods", key).index(i)
                if uid == "":
                    errs.append(field.invalid(p, uid, detail="must not be empty"))
                elif uid in seen:
                    errs.append(field.duplicate(p, uid))
                else:
                    seen.add(uid)
    complete, failed = is_condition_true(job, "Complete"), is_condition_true(job, "Failed")
    failure_target = is_condition_true(job, "FailureTarget")
    criteria_met = is_condition_true(job, "SuccessCriteriaMet")
    finished = complete or failed

    def changed(key: str) -> bool:
        return status.get(key) != old_status.get(key)

    finished_changed = finished != is_job_finished(old)
    complete_changed = complete != is_condition_true(old, "Complete")
    failed_changed = failed != is_condition_true(old, "Failed")
    target_changed = failure_target != is_condition_true(old, "FailureTarget")
    completed_changed = (status.get("completedIndexes") or "") != (old_status.get("completedIndexes") or "")
    failed_idx_changed = changed("failedIndexes")
    conditions = path.child("conditions")

    def bad(at: str, value: object, detail: str) -> None:
        errs.append(field.invalid(path.child(at), value, detail=detail))

    if (complete_changed or failed_changed) and complete and failed:
        errs.append(field.invalid(conditions, OMIT_VALUE, detail="cannot set Complete=True and Failed=true conditions"))
    if (complete_changed or target_changed) and complete and failure_target:
        detail = "cannot set Complete=True and FailureTarget=true conditions"
        errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    completion_time, start_time = status.get("completionTime"), status.get("startTime")
    if (complete_changed or changed("completionTime")) and completion_time and not complete:
        bad("completionTime", completion_time, "cannot set completionTime when there is no Complete=True condition")
    if (complete_changed or changed("completionTime")) and not completion_time and complete:
        errs.append(field.required(path.child("completionTime"), "completionTime is required for Complete jobs"))
    if (changed("startTime") or changed("completionTime")) and _before(completion_time, start_time):
        bad("completionTime", completion_time, "completionTime cannot be set before startTime")
    if (failed_changed or target_changed) and failed and not failure_target:
        detail = "cannot set Failed=True condition without the FailureTarget=true condition"
        errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    if complete_changed and complete and not criteria_met:
        detail = "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"
        errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    if (finished_changed or changed("active")) and c["active"] > 0 and finished:
        bad("active", c["active"], "active>0 is invalid for finished job")
    if (finished_changed or changed("startTime")) and not start_time and finished:
        errs.append(field.required(path.child("startTime"), "startTime is required for finished job"))
    pending = isinstance(uncounted, Mapping) and bool(uncounted.get("failed") or uncounted.get("succeeded"))
    if (finished_changed or changed("uncountedTerminatedPods")) and finished and pending:
        detail = "uncountedTerminatedPods needs to be empty for finished job"
        bad("uncountedTerminatedPods", dict(uncounted or {}), detail)
    completions = spec.get("completions")
    completed_indexes = status.get("completedIndexes") or ""
    failed_indexes = status.get("failedIndexes")
    if completed_changed and isinstance(completions, int):
        try:
            validate_indexes_format(str(completed_indexes), completions)
        except IndexesError as exc:
            bad("completedIndexes", completed_indexes, f"error parsing completedIndexes: {exc}")
    per_index = spec.get("backoffLimitPerIndex")
    if failed_idx_changed and isinstance(completions, int) and per_index is not None and failed_indexes is not None:
        try:
            validate_indexes_format(str(failed_indexes), completions)
        except IndexesError as exc:
            bad("failedIndexes", failed_indexes, f"error parsing failedIndexes: {exc}")
    indexed = spec.get("completionMode") == "Indexed"
    if completed_changed and completed_indexes and not indexed:
        detail = "cannot set non-empty completedIndexes when non-indexed completion mode"
        bad("completedIndexes", completed_indexes, detail)
    if failed_idx_changed and per_index is None and failed_indexes is not None:
        bad("failedIndexes", failed_indexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null")
    if (failed_idx_changed or completed_changed) and isinstance(completions, int) and failed_indexes is not None:
        overlap = _overlap_error(str(completed_indexes), str(failed_indexes), completions)
        if overlap is not None:
            bad("failedIndexes", failed_indexes, overlap)
    if criteria_met and failed:
        detail = "cannot set SuccessCriteriaMet=True and Failed=true conditions"
        errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    if criteria_met and failure_target:
        detail = "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"
        errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    if spec.get("successPolicy") is not None and not criteria_met and complete:
        detail = "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"
        errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    if (finished_changed or changed("terminating")) and terminating is not None and terminating > 0 and finished:
        bad("terminating", terminating, "terminating>0 is invalid for finished job")
    if (changed("ready") or changed("active")) and ready is not None and ready > c["active"]:
        bad("ready", ready, "cannot set more ready pods than active")


def validate_job_status_update(new: _Obj, old: _Obj) -> ErrorList:
    """The Job status strategy's ``ValidateUpdate`` (metadata is validated generically)."""
    errs: ErrorList = []
    _validate_status(new, old, errs)
    status, old_status, spec = _status(new), _status(old), _spec(new)
    path = field.new_path("status")
    conditions = path.child("conditions")
    for kind in ("Failed", "Complete", "FailureTarget"):
        if is_condition_true(old, kind) and not is_condition_true(new, kind):
            detail = f"cannot disable the terminal {kind}=True condition"
            errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    failed, old_failed = _count(status, "failed"), _count(old_status, "failed")
    if failed < old_failed:
        errs.append(field.invalid(path.child("failed"), failed, detail="cannot decrease the failed counter"))
    indexed = spec.get("completionMode") == "Indexed"
    if not indexed or spec.get("completions") != spec.get("parallelism"):
        succeeded = _count(status, "succeeded")
        if succeeded < _count(old_status, "succeeded"):
            errs.append(
                field.invalid(path.child("succeeded"), succeeded, detail="cannot decrease the succeeded counter")
            )
    new_ct, old_ct = status.get("completionTime"), old_status.get("completionTime")
    if new_ct and old_ct and new_ct != old_ct:
        errs.append(field.invalid(path.child("completionTime"), new_ct, detail="completionTime cannot be mutated"))
    old_st = old_status.get("startTime")
    if old_st and old_st != status.get("startTime") and spec.get("suspend") is not True:
        errs.append(field.required(path.child("startTime"), "startTime cannot be removed for unsuspended job"))
    if is_condition_true(old, "SuccessCriteriaMet") and not is_condition_true(new, "SuccessCriteriaMet"):
        detail = "cannot disable the SuccessCriteriaMet=True condition"
        errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    if (
        is_condition_true(old, "Complete")
        and not is_condition_true(old, "SuccessCriteriaMet")
        and is_condition_true(new, "SuccessCriteriaMet")
    ):
        detail = "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"
        errs.append(field.invalid(conditions, OMIT_VALUE, detail=detail))
    return field.dedupe(errs)


def _before(later: object, earlier: object) -> bool:
    """``later`` is a time strictly before ``earlier`` (both set and parsable)."""
    if not isinstance(later, str) or not isinstance(earlier, str):
        return False
    try:
        return parse_time(later) < parse_time(earlier)
    except ValueError:
        return False


def _count(status: _Obj, key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
