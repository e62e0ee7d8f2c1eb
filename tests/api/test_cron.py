"""The cron schedule parser and ``Next``, after robfig/cron v3's ``parser_test.go`` and ``spec_test.go``
(``TestNext``, ``TestErrors``, ``TestParseSchedule``, ``TestStandardSpecSchedule``), translated to the five-field
standard form that ``ParseStandard`` reads (robfig's six-field cases lose their leading seconds field ``0``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from kubeplane.api import cron

NY = ZoneInfo("America/New_York")


def _t(text: str) -> datetime:
    """robfig's ``getTime``: ``Mon Jul 9 14:45 2012`` (UTC) or an RFC 3339-ish time with an offset."""
    if text[:4].isdigit():
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S%z")
    return datetime.strptime(text, "%a %b %d %H:%M %Y").replace(tzinfo=UTC)


NEXT = [
    # Simple cases
    ("Mon Jul 9 14:45 2012", "0/15 * * * *", "Mon Jul 9 15:00 2012"),
    ("Mon Jul 9 14:59 2012", "0/15 * * * *", "Mon Jul 9 15:00 2012"),
    # Wrap around hours
    ("Mon Jul 9 15:45 2012", "20-35/15 * * * *", "Mon Jul 9 16:20 2012"),
    # Wrap around days
    ("Mon Jul 9 23:46 2012", "*/15 * * * *", "Tue Jul 10 00:00 2012"),
    ("Mon Jul 9 23:45 2012", "20-35/15 * * * *", "Tue Jul 10 00:20 2012"),
    ("Mon Jul 9 23:35 2012", "20-35/15 * * * *", "Tue Jul 10 00:20 2012"),
    ("Mon Jul 9 23:35 2012", "20-35/15 1/2 * * *", "Tue Jul 10 01:20 2012"),
    ("Mon Jul 9 23:35 2012", "20-35/15 10-12 * * *", "Tue Jul 10 10:20 2012"),
    ("Mon Jul 9 23:35 2012", "20-35/15 1/2 */2 * *", "Thu Jul 11 01:20 2012"),
    ("Mon Jul 9 23:35 2012", "20-35/15 * 9-20 * *", "Wed Jul 10 00:20 2012"),
    ("Mon Jul 9 23:35 2012", "20-35/15 * 9-20 Jul *", "Wed Jul 10 00:20 2012"),
    # Wrap around months
    ("Mon Jul 9 23:35 2012", "0 0 9 Apr-Oct ?", "Thu Aug 9 00:00 2012"),
    ("Mon Jul 9 23:35 2012", "0 0 */5 Apr,Aug,Oct Mon", "Wed Aug 1 00:00 2012"),
    ("Mon Jul 9 23:35 2012", "0 0 */5 Oct Mon", "Mon Oct 1 00:00 2012"),
    # Wrap around years
    ("Mon Jul 9 23:35 2012", "0 0 * Feb Mon", "Mon Feb 4 00:00 2013"),
    ("Mon Jul 9 23:35 2012", "0 0 * Feb Mon/2", "Fri Feb 1 00:00 2013"),
    # Wrap around minute, hour, day, month, and year
    ("Mon Dec 31 23:59 2012", "* * * * *", "Tue Jan 1 00:00 2013"),
    # Leap year
    ("Mon Jul 9 23:35 2012", "0 0 29 Feb ?", "Mon Feb 29 00:00 2016"),
    # Daylight savings time 2am EST (-5) -> 3am EDT (-4): 2:30 does not exist on March 11, 2012
    ("2012-03-11T00:00:00-0500", "TZ=America/New_York 30 2 11 Mar ?", "2013-03-11T02:30:00-0400"),
    # hourly job across the spring-forward gap
    ("2012-03-11T00:00:00-0500", "TZ=America/New_York 0 * * * ?", "2012-03-11T01:00:00-0500"),
    ("2012-03-11T01:00:00-0500", "TZ=America/New_York 0 * * * ?", "2012-03-11T03:00:00-0400"),
    # hourly job across the fall-back overlap: 1am comes twice
    ("2012-11-04T00:00:00-0400", "TZ=America/New_York 0 * * * ?", "2012-11-04T01:00:00-0400"),
    ("2012-11-04T01:00:00-0400", "TZ=America/New_York 0 * * * ?", "2012-11-04T01:00:00-0500"),
    ("2012-11-04T01:00:00-0500", "TZ=America/New_York 0 * * * ?", "2012-11-04T02:00:00-0500"),
    # 1am nightly job (runs twice)
    ("2012-11-04T00:00:00-0400", "TZ=America/New_York 0 1 * * ?", "2012-11-04T01:00:00-0400"),
    ("2012-11-04T01:00:00-0400", "TZ=America/New_York 0 1 * * ?", "2012-11-04T01:00:00-0500"),
    ("2012-11-04T01:00:00-0500", "TZ=America/New_York 0 1 * * ?", "2012-11-05T01:00:00-0500"),
    # Unsatisfiable
    ("Mon Jul 9 23:35 2012", "0 0 30 Feb ?", ""),
    ("Mon Jul 9 23:35 2012", "0 0 31 Apr ?", ""),
    # Monthly job
    ("2012-11-04T00:00:00-0400", "TZ=America/New_York 0 3 3 * ?", "2012-12-03T03:00:00-0500"),
]


@pytest.mark.parametrize(("start", "spec", "expected"), NEXT)
def test_next(start: str, spec: str, expected: str) -> None:
    """robfig ``TestNext``."""
    got = cron.parse_schedule(spec).next(_t(start))
    if not expected:
        assert got == cron.ZERO_TIME
    else:
        assert got == _t(expected)
        assert got.utcoffset() == _t(start).utcoffset()  # returned in the zone it was asked in


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("", "empty spec string"),
        ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
        ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
        ("* 5 j * *", 'failed to parse int from j: strconv.Atoi: parsing "j": invalid syntax'),
        ("@every Xm", 'failed to parse duration @every Xm: time: invalid duration "Xm"'),
        ("@unrecognized", "unrecognized descriptor: @unrecognized"),
        ("60 * * * *", "end of range (60) above maximum (59): 60"),
        ("* 24 * * *", "end of range (24) above maximum (23): 24"),
        ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
        ("* * * 13 *", "end of range (13) above maximum (12): 13"),
        ("* * * * 7", "end of range (7) above maximum (6): 7"),
        ("5-3 * * * *", "beginning of range (5) beyond end of range (3): 5-3"),
        ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ("*/2/3 * * * *", "too many slashes: */2/3"),
        ("*/0 * * * *", "step of range should be a positive number: */0"),
        ("*/-1 * * * *", "negative number (-1) not allowed: -1"),
        ("TZ=Not/AZone * * * * *", "provided bad location Not/AZone: unknown time zone Not/AZone"),
    ],
)
def test_errors(spec: str, error: str) -> None:
    """robfig ``TestErrors`` / ``TestParseScheduleErrors``: the messages upstream's validation and the
    controller's ``UnparseableSchedule`` event carry."""
    with pytest.raises(ValueError, match=r".") as info:
        cron.parse_schedule(spec)
    assert str(info.value) == error


def test_descriptors() -> None:
    """robfig ``TestParseSchedule`` descriptors and ``@every``."""
    t = datetime(2026, 2, 18, 13, 17, 5, tzinfo=UTC)  # a Wednesday
    expect = {
        "@yearly": datetime(2027, 1, 1, tzinfo=UTC),
        "@annually": datetime(2027, 1, 1, tzinfo=UTC),
        "@monthly": datetime(2026, 3, 1, tzinfo=UTC),
        "@weekly": datetime(2026, 2, 22, tzinfo=UTC),
        "@daily": datetime(2026, 2, 19, tzinfo=UTC),
        "@midnight": datetime(2026, 2, 19, tzinfo=UTC),
        "@hourly": datetime(2026, 2, 18, 14, tzinfo=UTC),
    }
    for spec, when in expect.items():
        assert cron.parse_schedule(spec).next(t) == when, spec
    assert cron.parse_schedule("@every 5m").next(t) == t + timedelta(minutes=5)
    assert cron.parse_schedule("@every 1.5s").next(t) == t + timedelta(seconds=1)  # truncated to whole seconds
    assert cron.parse_schedule("@every 100ms").next(t) == t + timedelta(seconds=1)  # at least one second
    assert cron.parse_schedule("@every 1h").next(t + timedelta(milliseconds=300)) == t + timedelta(hours=1)
    assert cron.parse_schedule("TZ=America/New_York @daily").next(t) == datetime(2026, 2, 19, tzinfo=NY)


def test_standard_syntax() -> None:
    """Names, ``?``, lists and Vixie cron's day rule: both day fields restricted means either may match."""
    s = cron.parse_schedule("0 0 1,15 * MON")
    start = datetime(2026, 2, 2, 0, 0, 30, tzinfo=UTC)  # Monday Feb 2
    got = [start]
    for _ in range(3):
        got.append(s.next(got[-1]))
    assert [d.day for d in got[1:]] == [9, 15, 16]
    assert cron.parse_schedule("0 0 ? * sun").next(start) == datetime(2026, 2, 8, tzinfo=UTC)
    assert cron.parse_schedule("0 0 1 JAN ?").next(start) == datetime(2027, 1, 1, tzinfo=UTC)
    assert cron.parse_schedule("*/5 * * * *").next(datetime(2026, 1, 1, 0, 4, 59, tzinfo=UTC)) == datetime(
        2026, 1, 1, 0, 5, tzinfo=UTC
    )


def test_time_zone_prefix_and_locations() -> None:
    """The parser reads ``TZ=``/``CRON_TZ=`` as robfig does (the controller itself builds ``TZ=<timeZone> ...``);
    refusing it in user schedules is validation's job, which :func:`cron.mentions_tz` serves. Zones load with
    Go's ``LoadLocation`` rules."""
    s = cron.parse_schedule("CRON_TZ=Asia/Tokyo 0 9 * * *")
    assert s.next(datetime(2025, 12, 31, 23, tzinfo=UTC)) == datetime(2026, 1, 1, 0, 0, tzinfo=UTC)
    assert cron.mentions_tz("CRON_TZ=UTC * * * * *")
    assert not cron.mentions_tz("* * * * *")
    assert cron.load_location("") is UTC
    assert cron.load_location("UTC") is UTC
    assert cron.load_location("Local") is cron.LOCAL
    assert cron.load_location("Europe/Paris") == ZoneInfo("Europe/Paris")
    with pytest.raises(ValueError, match=r"^time: invalid location name$"):
        cron.load_location("../etc/passwd")
    with pytest.raises(ValueError, match=r"^unknown time zone Mars/Olympus$"):
        cron.load_location("Mars/Olympus")
    # a schedule without a zone runs in the zone of the time it is asked about (Go's time.Local)
    plus2 = timezone(timedelta(hours=2))
    assert cron.parse_schedule("0 9 * * *").next(datetime(2026, 1, 1, tzinfo=plus2)) == datetime(
        2026, 1, 1, 9, tzinfo=plus2
    )
