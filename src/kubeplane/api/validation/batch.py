"""batch/v1 validation: CronJob rules and the registry's tables for Job and CronJob.

Upstream is ``pkg/apis/batch/validation/validation.go`` (v1.37). Job rules are in :mod:`.batch_job` and the Job
status rules in :mod:`.batch_status`; this module adds ``ValidateCronJobCreate``/``ValidateCronJobUpdate``
(schedule parse errors from robfig/cron's ``ParseStandard`` through :mod:`kubeplane.api.cron`, the parser the
CronJob controller runs; ``TZ=`` in the schedule, ``timeZone``, concurrencyPolicy, the job template, the history
limits, the 52-character name limit on create) and exposes the three tables the API server merges
(``CREATE_VALIDATORS``, ``UPDATE_VALIDATORS``, ``STATUS_UPDATE_VALIDATORS``). A CronJob's status update is not
validated upstream (an empty list).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api import cron
from kubeplane.api.validation import field
from kubeplane.api.validation.batch_job import check_job_spec_common, validate_job_create, validate_job_update
from kubeplane.api.validation.batch_status import validate_job_status_update
from kubeplane.api.validation.common import CreateValidator, UpdateValidator, read_optional_nonnegative
from kubeplane.api.validation.field import ErrorList
from kubeplane.api.validation.reader import NAMED_GROUPS, Reader
from kubeplane.api.validation.selectors import read_label_selector

__all__ = ["CREATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS", "UPDATE_VALIDATORS"]

GROUP: Final = "batch"
CRONJOB_NAME_MAX: Final = 52  # DNS1035LabelMaxLength (63) - 11: the controller appends "-<timestamp>"
_CONCURRENCY: Final = ("Allow", "Forbid", "Replace")
_TZ_PART: Final = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")


def _schedule(spec: Reader, old_schedule: str | None, time_zone: str | None) -> None:
    errs, path = spec.errs, spec.at("schedule")
    schedule = spec.string("schedule")
    if not schedule:
        errs.append(field.required(path))
        return
    allow_tz = old_schedule is not None and "TZ" in old_schedule
    try:
        cron.parse_schedule(schedule)
    except ValueError as exc:  # robfig/cron's ParseStandard message
        errs.append(field.invalid(path, schedule, detail=str(exc)))
    if allow_tz and "TZ" in schedule and time_zone is not None:
        errs.append(
            field.invalid(path, schedule, detail="cannot use both timeZone field and TZ or CRON_TZ in schedule")
        )
    elif not allow_tz and "TZ" in schedule:
        errs.append(
            field.invalid(path, schedule, detail="cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
        )


def _time_zone(spec: Reader, time_zone: str | None) -> None:
    """Upstream ``validateTimeZone``: IANA name parts, not ``Local``, loadable."""
    if time_zone is None:
        return
    errs, path = spec.errs, spec.at("timeZone")
    if not time_zone:
        errs.append(field.invalid(path, time_zone, detail="timeZone must be nil or non-empty string"))
        return
    for part in time_zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART.match(part):
            errs.append(field.invalid(path, time_zone, detail=f"unknown time zone {time_zone}"))
            return
    if time_zone.lower() == "local":
        detail = "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        errs.append(field.invalid(path, time_zone, detail=detail))
    try:
        cron.load_location(time_zone)
    except ValueError as exc:  # Go's time.LoadLocation message
        errs.append(field.invalid(path, time_zone, detail=str(exc)))


def _job_template(spec: Reader) -> None:
    """Upstream ``ValidateJobTemplateSpec``: the shared Job rules; no selector, no manual selector."""
    tpl = spec.child("jobTemplate").child("spec")
    check_job_spec_common(tpl)
    if tpl.has("selector"):
        sel = read_label_selector(tpl.with_errs([]), "selector")
        tpl.errs.append(field.invalid(tpl.at("selector"), sel, detail="`selector` will be auto-generated"))
    manual = tpl.with_errs([]).boolean("manualSelector")
    if manual is True:
        tpl.errs.append(field.not_supported(tpl.at("manualSelector"), manual, supported=("nil", "false")))


def _cron_job_spec(cron_job: Mapping[str, Any], old: Mapping[str, Any] | None, errs: ErrorList) -> None:
    """Upstream ``validateCronJobSpec``."""
    spec = NAMED_GROUPS.root(cron_job, errs).child("spec")
    old_spec = NAMED_GROUPS.root(old, []).child("spec") if old is not None else None
    time_zone = spec.opt_string("timeZone")
    _schedule(spec, old_spec.string("schedule") if old_spec is not None else None, time_zone)
    read_optional_nonnegative(spec, "startingDeadlineSeconds", bits=64)
    if old_spec is None or old_spec.opt_string("timeZone") != time_zone:
        _time_zone(spec, time_zone)
    policy = spec.string("concurrencyPolicy")
    if not policy:
        errs.append(field.required(spec.at("concurrencyPolicy")))
    elif policy not in _CONCURRENCY:
        errs.append(field.not_supported(spec.at("concurrencyPolicy"), policy, supported=_CONCURRENCY))
    _job_template(spec)
    read_optional_nonnegative(spec, "successfulJobsHistoryLimit")
    read_optional_nonnegative(spec, "failedJobsHistoryLimit")


def validate_cron_job_create(cron_job: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateCronJobCreate`` (metadata is validated generically): the spec, then the name limit."""
    errs: ErrorList = []
    _cron_job_spec(cron_job, None, errs)
    name = str((cron_job.get("metadata") or {}).get("name") or "")
    if len(name) > CRONJOB_NAME_MAX:
        detail = f"must be no more than {CRONJOB_NAME_MAX} characters"
        errs.append(field.invalid(field.new_path("metadata", "name"), name, detail=detail))
    return field.dedupe(errs)


def validate_cron_job_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    """Upstream ``ValidateCronJobUpdate``: no name limit (older CronJobs with long names stay editable)."""
    errs: ErrorList = []
    _cron_job_spec(new, old, errs)
    return field.dedupe(errs)


def _no_rules(_new: Mapping[str, Any], _old: Mapping[str, Any]) -> ErrorList:
    return []


CREATE_VALIDATORS: Final[dict[tuple[str, str], CreateValidator]] = {
    (GROUP, "Job"): validate_job_create,
    (GROUP, "CronJob"): validate_cron_job_create,
}
UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "Job"): validate_job_update,
    (GROUP, "CronJob"): validate_cron_job_update,
}
STATUS_UPDATE_VALIDATORS: Final[dict[tuple[str, str], UpdateValidator]] = {
    (GROUP, "Job"): validate_job_status_update,
    (GROUP, "CronJob"): _no_rules,
}
