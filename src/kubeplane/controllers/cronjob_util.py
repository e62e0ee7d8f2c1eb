"""The CronJob controller's time and bookkeeping helpers (upstream ``pkg/controller/cronjob/utils.go``).

Invariants the controller relies on:

* **Schedule times are whole minutes at most once each.** A Job's name is ``<cronjob>-<scheduled time in minutes
  since the epoch>`` (:func:`get_job_name`), so two syncs racing for the same scheduled time create one Job (the
  second gets AlreadyExists); ``status.lastScheduleTime`` records the newest time acted on.
* **Only the most recent missed time runs.** :func:`most_recent_schedule_time` looks from ``lastScheduleTime``
  (else the CronJob's creation time), or from ``now - startingDeadlineSeconds`` when that is later, to ``now``
  and returns the *latest* activation in between, not all of them; it estimates how many were missed from the
  interval between the first two activations and classes more than 100 as "many" (the ``TooManyMissedTimes``
  warning).
* **Requeue lands just after the next activation.** :func:`next_schedule_time_duration` is the delay to the next
  activation plus 100 ms (``nextScheduleDelta``), so the sync that follows sees that activation as due.

All instants are aware ``datetime``s; ``now`` comes from the injected clock.
"""

from __future__ import annotations

import copy
import enum
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final, Protocol

from kubeplane.api import cron
from kubeplane.api.meta import format_time, parse_time
from kubeplane.api.validation.field import go_quote
from kubeplane.api.views import mappings, meta_of, section, spec_of, status_of
from kubeplane.client.events import EVENT_TYPE_WARNING
from kubeplane.client.interface import Obj
from kubeplane.controllers.controller_utils import new_controller_ref

__all__ = [
    "CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION",
    "NEXT_SCHEDULE_DELTA",
    "Missed",
    "Recorder",
    "delete_from_active_list",
    "finished_condition",
    "format_schedule",
    "get_job_from_template2",
    "get_job_name",
    "in_active_list",
    "in_active_list_by_name",
    "is_job_finished",
    "is_job_succeeded",
    "job_start_time_key",
    "most_recent_schedule_time",
    "next_schedule_time",
    "next_schedule_time_duration",
]

API_VERSION: Final = "batch/v1"
KIND: Final = "CronJob"

CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"
"""``batchv1.CronJobScheduledTimestampAnnotation``: the scheduled time, RFC 3339 in the CronJob's zone (the
``CronJobsScheduledAnnotation`` feature, GA and always on in v1.37)."""

NEXT_SCHEDULE_DELTA: Final = timedelta(milliseconds=100)
"""Upstream ``nextScheduleDelta``: requeue this long after the next activation, for clock skew."""


class Recorder(Protocol):
    """What the controller needs of an event recorder (``EventRecorder.record``; tests pass a fake)."""

    def record(self, obj: Mapping[str, Any], event_type: str, reason: str, message: str) -> None: ...


class Missed(enum.Enum):
    """Upstream ``missedSchedulesType``."""

    NONE = "none"
    FEW = "few"
    MANY = "many"


# --- status.active -----------------------------------------------------------------------------------------


def _active(cj: Obj) -> list[Mapping[str, Any]]:
    return mappings(status_of(cj), "active")


def in_active_list(cj: Obj, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in _active(cj))


def in_active_list_by_name(cj: Obj, namespace: str, name: str) -> bool:
    return any(ref.get("name") == name and ref.get("namespace") == namespace for ref in _active(cj))


def delete_from_active_list(cj: Obj | None, uid: str) -> None:
    if cj is None:
        return
    cj.setdefault("status", {})["active"] = [ref for ref in _active(cj) if ref.get("uid") != uid]


# --- Jobs (pkg/controller/job/util) ------------------------------------------------------------------------


def finished_condition(job: Obj) -> str:
    """The type of the Job's true ``Complete`` or ``Failed`` condition, or ``""`` (upstream
    ``FinishedCondition`` / the controller's ``getFinishedStatus``)."""
    for cond in mappings(status_of(job), "conditions"):
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return ""


def is_job_finished(job: Obj) -> bool:
    return bool(finished_condition(job))


def is_job_succeeded(job: Obj) -> bool:
    return any(
        c.get("type") == "Complete" and c.get("status") == "True" for c in mappings(status_of(job), "conditions")
    )


def job_start_time_key(job: Obj) -> tuple[int, datetime, str]:
    """Upstream ``byJobStartTime``: started Jobs first, oldest first, name breaking ties."""
    start = status_of(job).get("startTime")
    name = str(meta_of(job).get("name") or "")
    if not start:
        return (1, cron.ZERO_TIME, name)
    return (0, parse_time(str(start)), name)


# --- schedule times ----------------------------------------------------------------------------------------


def _time_field(obj: Obj, part: str, key: str) -> datetime | None:
    value = section(obj, part).get(key)
    return parse_time(str(value)) if value else None


def format_schedule(cj: Obj, recorder: Recorder | None) -> str:
    """Upstream ``formatSchedule``: the schedule as ``ParseStandard`` should read it — prefixed with
    ``TZ=<spec.timeZone>`` when that zone loads; a schedule naming a zone itself is used as written, with an
    ``UnsupportedSchedule`` warning when a recorder is given."""
    spec = spec_of(cj)
    schedule = str(spec.get("schedule") or "")
    if cron.mentions_tz(schedule):
        if recorder is not None:
            recorder.record(
                cj,
                EVENT_TYPE_WARNING,
                "UnsupportedSchedule",
                f"CRON_TZ or TZ used in schedule {go_quote(schedule)} is not officially supported, see "
                "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
            )
        return schedule
    time_zone = spec.get("timeZone")
    if time_zone is not None:
        try:
            cron.load_location(str(time_zone))
        except ValueError:
            return schedule
        return f"TZ={time_zone} {schedule}"
    return schedule


def most_recent_schedule_time(
    cj: Obj, now: datetime, schedule: cron.Schedule, include_starting_deadline_seconds: bool
) -> tuple[datetime, datetime | None, Missed]:
    """Upstream ``mostRecentScheduleTime``: (the earliest time looked from, the most recent activation not after
    ``now`` or None, how many were missed). ValueError "time difference between two schedules is less than 1
    second" for a schedule that never fires (e.g. ``59 23 31 2 *``)."""
    earliest = _time_field(cj, "metadata", "creationTimestamp") or cron.ZERO_TIME
    missed = Missed.NONE
    last = _time_field(cj, "status", "lastScheduleTime")
    if last is not None:
        earliest = last
    deadline = spec_of(cj).get("startingDeadlineSeconds")
    if include_starting_deadline_seconds and deadline is not None:
        scheduling_deadline = now - timedelta(seconds=int(deadline))
        earliest = max(earliest, scheduling_deadline)
    t1 = schedule.next(earliest)
    t2 = schedule.next(t1)
    if now < t1:
        return earliest, None, missed
    if now < t2:
        return earliest, t1, missed
    gap = (t2 - t1).total_seconds()
    between = int(math.copysign(math.floor(abs(gap) + 0.5), gap))  # Duration.Round(time.Second)
    if between < 1:
        raise ValueError("time difference between two schedules is less than 1 second")
    elapsed = int((now - t1).total_seconds())
    number_missed = elapsed // between + 1
    most_recent: datetime | None = None
    potential_earliest = t1 + timedelta(seconds=(number_missed - 1 - 1) * between)
    t = schedule.next(potential_earliest)
    while t <= now and t != cron.ZERO_TIME:
        most_recent = t
        t = schedule.next(t)
    if number_missed > 100:
        missed = Missed.MANY
    elif number_missed > 0:
        missed = Missed.FEW
    return earliest, most_recent, missed


def next_schedule_time_duration(cj: Obj, now: datetime, schedule: cron.Schedule) -> timedelta:
    """Upstream ``nextScheduleTimeDuration``: how long until just after the next activation."""
    try:
        earliest, most_recent, missed = most_recent_schedule_time(cj, now, schedule, False)
    except ValueError:
        most_recent = now  # still requeue: aim for the next slot from now
    else:
        if most_recent is None:
            most_recent = earliest if missed is Missed.NONE else now
    return schedule.next(most_recent) + NEXT_SCHEDULE_DELTA - now


def next_schedule_time(cj: Obj, now: datetime, schedule: cron.Schedule, recorder: Recorder) -> datetime | None:
    """Upstream ``nextScheduleTime``: the activation to act on now (the most recent unmet one), or None; records
    ``TooManyMissedTimes`` when more than 100 were missed. ValueError as :func:`most_recent_schedule_time`."""
    _, most_recent, missed = most_recent_schedule_time(cj, now, schedule, True)
    if most_recent is None or most_recent > now:
        return None
    if missed is Missed.MANY:
        recorder.record(
            cj,
            EVENT_TYPE_WARNING,
            "TooManyMissedTimes",
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
        )
    return most_recent


# --- the Job a CronJob creates ------------------------------------------------------------------------------


def get_time_hash_in_minutes(scheduled: datetime) -> int:
    return int(scheduled.timestamp()) // 60


def get_job_name(cj: Obj, scheduled: datetime) -> str:
    return f"{meta_of(cj).get('name')}-{get_time_hash_in_minutes(scheduled)}"


def format_rfc3339_in(t: datetime, loc: tzinfo | None) -> str:
    """Go's ``t.In(loc).Format(time.RFC3339)``: whole seconds, ``Z`` for a zero offset, else ``±hh:mm``."""
    local = t.astimezone(loc or UTC)
    offset = local.utcoffset() or timedelta(0)
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def get_job_from_template2(cj: Obj, scheduled: datetime) -> Obj:
    """Upstream ``getJobFromTemplate2``: the template's labels, annotations (plus the scheduled-timestamp one)
    and spec, the deterministic name, and a controller reference to the CronJob. ValueError when
    ``spec.timeZone`` does not load."""
    template = section(cj, "spec", "jobTemplate")
    tmeta = meta_of(template)
    labels = dict(section(tmeta, "labels"))
    annotations = dict(section(tmeta, "annotations"))
    loc = cron.load_location(str(spec_of(cj).get("timeZone") or ""))
    annotations[CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] = format_rfc3339_in(scheduled, loc)
    meta: Obj = {
        "name": get_job_name(cj, scheduled),
        "creationTimestamp": format_time(scheduled),
        "annotations": annotations,
        "ownerReferences": [new_controller_ref(cj, api_version=API_VERSION, kind=KIND)],
    }
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": copy.deepcopy(dict(spec_of(template))),
    }


def sorted_by_start_time(jobs: Sequence[Obj]) -> list[Obj]:
    return sorted(jobs, key=job_start_time_key)
