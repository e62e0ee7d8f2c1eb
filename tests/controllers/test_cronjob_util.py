"""The CronJob controller's time helpers: upstream ``utils_test.go`` ``TestMostRecentScheduleTime``,
``TestNextScheduleTimeDuration`` and ``TestByJobStartTime`` (case names are upstream's)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubeplane.api import cron
from kubeplane.api.meta import format_time
from kubeplane.client.interface import Obj
from kubeplane.controllers import cronjob_util as cu

TOP = datetime(2016, 5, 19, 10, tzinfo=UTC)
M, H = timedelta(minutes=1), timedelta(hours=1)


def _cj(schedule: str, *, created: datetime = TOP, last: datetime | None = None, sds: int | None = None) -> Obj:
    cj: Obj = {"metadata": {"creationTimestamp": format_time(created)}, "spec": {"schedule": schedule}, "status": {}}
    if last is not None:
        cj["status"]["lastScheduleTime"] = format_time(last)
    if sds is not None:
        cj["spec"]["startingDeadlineSeconds"] = sds
    return cj


NONE, FEW, MANY = cu.Missed.NONE, cu.Missed.FEW, cu.Missed.MANY
MOST_RECENT = {
    "now before next schedule": (_cj("0 * * * *"), False, TOP + timedelta(seconds=30), TOP, None, NONE),
    "now just after next schedule": (_cj("0 * * * *"), False, TOP + 61 * M, TOP, TOP + 60 * M, NONE),
    "missed 5 schedules": (
        _cj("0 * * * *", created=TOP + timedelta(seconds=10)),
        False,
        TOP + 301 * M,
        TOP + timedelta(seconds=10),
        TOP + 300 * M,
        FEW,
    ),
    "complex schedule": (
        _cj("30 6-16/4 * * 1-5", last=TOP + 30 * M),
        False,
        TOP + 24 * H + 31 * M,
        TOP + 30 * M,
        TOP + 24 * H + 30 * M,
        FEW,
    ),
    "another complex schedule": (
        _cj("30 10,11,12 * * 1-5", last=TOP + 30 * M),
        False,
        TOP + 30 * H + 30 * M,
        TOP + 30 * M,
        None,
        FEW,
    ),
    "complex schedule with longer diff between executions": (
        _cj("30 6-16/4 * * 1-5", last=TOP + 30 * M),
        False,
        TOP + 96 * H + 31 * M,
        TOP + 30 * M,
        TOP + 96 * H + 30 * M,
        FEW,
    ),
    "complex schedule with shorter diff between executions": (
        _cj("30 6-16/4 * * 1-5"),
        False,
        TOP + 24 * H + 31 * M,
        TOP,
        TOP + 24 * H + 30 * M,
        FEW,
    ),
    "@every schedule": (
        _cj("@every 1h", created=TOP - 59 * M, last=TOP + M, sds=10),
        False,
        TOP + 7 * 24 * H,
        TOP + M,
        TOP + 6 * 24 * H + 23 * H + M,
        MANY,
    ),
    "earliestTime being CreationTimestamp and LastScheduleTime": (
        _cj("0 * * * *", last=TOP),
        False,
        TOP + timedelta(seconds=30),
        TOP,
        None,
        NONE,
    ),
    "earliestTime being LastScheduleTime": (
        _cj("*/5 * * * *", last=TOP + 30 * M),
        False,
        TOP + 31 * M,
        TOP + 30 * M,
        None,
        NONE,
    ),
    "earliestTime being LastScheduleTime (within StartingDeadlineSeconds)": (
        _cj("*/5 * * * *", last=TOP + 30 * M, sds=60),
        False,
        TOP + 31 * M,
        TOP + 30 * M,
        None,
        NONE,
    ),
    "earliestTime being LastScheduleTime (outside StartingDeadlineSeconds)": (
        _cj("*/5 * * * *", last=TOP + 30 * M, sds=60),
        True,
        TOP + 32 * M,
        TOP + 31 * M,
        None,
        NONE,
    ),
}


@pytest.mark.parametrize("name", list(MOST_RECENT))
def test_most_recent_schedule_time(name: str) -> None:
    """Upstream ``TestMostRecentScheduleTime``."""
    cj, include_sds, now, earliest, recent, missed = MOST_RECENT[name]
    sched = cron.parse_schedule(cj["spec"]["schedule"])
    assert cu.most_recent_schedule_time(cj, now, sched, include_sds) == (earliest, recent, missed)


def test_most_recent_schedule_time_rogue_cronjob() -> None:
    """Upstream ``TestMostRecentScheduleTime`` "rogue cronjob": 31 February never comes."""
    cj = _cj("59 23 31 2 *", created=TOP + timedelta(seconds=10))
    with pytest.raises(ValueError, match=r"^time difference between two schedules is less than 1 second$"):
        cu.most_recent_schedule_time(cj, TOP + H, cron.parse_schedule("59 23 31 2 *"), False)


NEXT_DURATION = {
    "complex schedule skipping weekend": (
        _cj("30 6-16/4 * * 1-5", last=TOP + 30 * M),
        TOP + 24 * H + 31 * M,
        3 * H + 59 * M,
    ),
    "another complex schedule skipping weekend": (
        _cj("30 10,11,12 * * 1-5", last=TOP + 30 * M),
        TOP + 30 * H + 30 * M,
        66 * H,
    ),
    "once a week cronjob, missed two runs": (
        _cj("0 12 * * 4", last=TOP + 2 * H),
        TOP + 19 * 24 * H + H + 30 * M,
        48 * H + 30 * M,
    ),
    "no previous run of a cronjob": (_cj("0 12 * * 5"), TOP + 6 * H, 20 * H),
}


@pytest.mark.parametrize("name", list(NEXT_DURATION))
def test_next_schedule_time_duration(name: str) -> None:
    """Upstream ``TestNextScheduleTimeDuration``: just after the next activation (plus ``nextScheduleDelta``)."""
    cj, now, expected = NEXT_DURATION[name]
    got = cu.next_schedule_time_duration(cj, now, cron.parse_schedule(cj["spec"]["schedule"]))
    assert got == expected + cu.NEXT_SCHEDULE_DELTA


class _Rec:
    def __init__(self) -> None:
        self.events: list[str] = []

    def record(self, obj: object, event_type: str, reason: str, message: str) -> None:
        self.events.append(f"{event_type} {reason} {message}")


def test_next_schedule_time_too_many_missed() -> None:
    """Upstream ``TestNextScheduleTime`` "many missed": more than 100 missed activations still run the latest one
    and warn ``TooManyMissedTimes`` with upstream's message; a few missed do not warn."""
    rec = _Rec()
    cj = _cj("* * * * *", created=TOP - 200 * M)
    assert cu.next_schedule_time(cj, TOP + timedelta(seconds=30), cron.parse_schedule("* * * * *"), rec) == TOP
    assert rec.events == [
        "Warning TooManyMissedTimes too many missed start times. Set or decrease .spec.startingDeadlineSeconds or "
        "check clock skew"
    ]
    rec.events.clear()
    cj = _cj("* * * * *", created=TOP - 50 * M)
    assert cu.next_schedule_time(cj, TOP + timedelta(seconds=30), cron.parse_schedule("* * * * *"), rec) == TOP
    assert rec.events == []
    # with a starting deadline the search starts at now-deadline: nothing is "many" any more
    cj = _cj("* * * * *", created=TOP - 200 * M, sds=200)
    assert cu.next_schedule_time(cj, TOP + timedelta(seconds=30), cron.parse_schedule("* * * * *"), rec) == TOP
    assert rec.events == []


def _job(name: str, start: str | None) -> Obj:
    return {"metadata": {"name": name}, "status": {"startTime": start} if start else {}}


def test_by_job_start_time() -> None:
    """Upstream ``TestByJobStartTime``: started Jobs first, oldest first, then by name."""
    a_nil, b_nil = _job("a", None), _job("b", None)
    a_set, b_set = _job("a", "2016-05-19T10:00:00Z"), _job("b", "2016-05-19T10:00:00Z")
    a_later = _job("a", "2016-05-19T10:01:00Z")
    assert cu.sorted_by_start_time([b_nil, a_nil]) == [a_nil, b_nil]
    assert cu.sorted_by_start_time([a_nil, b_set]) == [b_set, a_nil]
    assert cu.sorted_by_start_time([b_set, a_set]) == [a_set, b_set]
    assert cu.sorted_by_start_time([a_later, b_set]) == [b_set, a_later]


def test_format_schedule() -> None:
    """Upstream ``formatSchedule``: ``TZ=<timeZone>`` prefixed when the zone loads; a schedule that names a zone
    itself is kept and warned about (``UnsupportedSchedule``), only when a recorder is given."""
    rec = _Rec()
    cj = _cj("0 * * * *")
    cj["spec"]["timeZone"] = "America/New_York"
    assert cu.format_schedule(cj, rec) == "TZ=America/New_York 0 * * * *"
    cj["spec"]["timeZone"] = "Not/AZone"
    assert cu.format_schedule(cj, rec) == "0 * * * *"
    cj["spec"]["schedule"] = "CRON_TZ=UTC 0 * * * *"
    assert cu.format_schedule(cj, None) == "CRON_TZ=UTC 0 * * * *"
    assert rec.events == []
    assert cu.format_schedule(cj, rec) == "CRON_TZ=UTC 0 * * * *"
    assert rec.events == [
        'Warning UnsupportedSchedule CRON_TZ or TZ used in schedule "CRON_TZ=UTC 0 * * * *" is not officially '
        "supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
    ]
