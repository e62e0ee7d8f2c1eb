"""Cron schedules as robfig/cron v3's ``ParseStandard`` reads them, and their ``Next`` instant.

kube-controller-manager's CronJob controller and kube-apiserver's CronJob validation both call
``cron.ParseStandard(schedule)`` (github.com/robfig/cron/v3 ``parser.go``, ``spec.go``, ``constantdelay.go``);
this module is that code in Python, with its error messages byte for byte, so a schedule is accepted, refused and
stepped exactly as upstream does:

* **Five fields**, minute hour day-of-month month day-of-week (``expected exactly 5 fields, found N: [...]``), each a
  comma list of ``*``/``?``, ``N``, ``N-M``, with an optional ``/step`` (``N/step`` means ``N-max/step``); months
  ``jan``-``dec`` and days ``sun``-``sat`` by name, case-insensitively. Day-of-week is 0-6 (7 is refused, as in
  robfig). When either day field is ``*``/``?`` (an unstepped star) a day must match both, otherwise either
  (Vixie cron's rule).
* **Descriptors** ``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/``@midnight``, ``@hourly`` and
  ``@every <Go duration>`` (a constant delay, at least one second, truncated to whole seconds).
* **A ``TZ=``/``CRON_TZ=`` prefix** names the schedule's zone. The parser accepts it because robfig does and the
  controller itself builds ``TZ=<spec.timeZone> <schedule>`` to evaluate a CronJob in its ``timeZone``; users
  may not write it: upstream validation refuses any schedule containing ``TZ`` ("cannot use TZ or CRON_TZ in
  schedule, use timeZone field instead"), which is the validation's business, not the parser's (see
  :func:`mentions_tz`).

Time zones load from the IANA database through :mod:`zoneinfo` with Go's ``time.LoadLocation`` rules
(:func:`load_location`). Go's ``time.Local`` is :data:`LOCAL` (``None``): such a schedule runs in the zone of
the instant it is asked about, which for kubeplane's controllers is UTC (as in upstream's distroless images).

``Schedule.next(t)`` mirrors robfig's ``SpecSchedule.Next`` step by step, including its handling of days whose
midnight does not exist and Go's ``time.Date`` normalisation of wall times that fall in a DST gap, and returns
:data:`ZERO_TIME` (Go's zero ``time.Time``) when nothing matches within five years (e.g. ``0 0 30 2 *``): the
CronJob controller turns that into "time difference between two schedules is less than 1 second".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo
from typing import Final, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kubeplane.api.durations import parse_duration

__all__ = [
    "LOCAL",
    "ZERO_TIME",
    "ConstantDelaySchedule",
    "Schedule",
    "SpecSchedule",
    "load_location",
    "mentions_tz",
    "parse_schedule",
]

LOCAL: Final = None
"""Go's ``time.Local``: a schedule without a zone runs in the zone of the time it is given."""

ZERO_TIME: Final = datetime(1, 1, 1, tzinfo=UTC)
"""Go's zero ``time.Time`` (January 1, year 1, UTC): what ``Next`` returns when no time matches."""

_STAR_BIT: Final = 1 << 63
_EPOCH_ORDINAL: Final = date(1970, 1, 1).toordinal()


@dataclass(frozen=True)
class _Bounds:
    min: int
    max: int
    names: dict[str, int] | None = None


_SECONDS: Final = _Bounds(0, 59)
_MINUTES: Final = _Bounds(0, 59)
_HOURS: Final = _Bounds(0, 23)
_DOM: Final = _Bounds(1, 31)
_MONTHS: Final = _Bounds(
    1,
    12,
    {
        m: i + 1
        for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
    },
)
_DOW: Final = _Bounds(0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))})


class Schedule(Protocol):
    """robfig's ``cron.Schedule``: the next activation strictly after ``t`` (in ``t``'s zone)."""

    def next(self, t: datetime) -> datetime: ...


def mentions_tz(schedule: str) -> bool:
    """Upstream's test for a zone in the schedule text (``strings.Contains(schedule, "TZ")``), used by the
    validation ("cannot use TZ or CRON_TZ in schedule, use timeZone field instead") and by the controller's
    ``formatSchedule`` (the ``UnsupportedSchedule`` warning)."""
    return "TZ" in schedule


def load_location(name: str) -> tzinfo | None:
    """Go's ``time.LoadLocation``: ``""`` and ``"UTC"`` are UTC, ``"Local"`` is :data:`LOCAL` (None), anything
    else an IANA name; ValueError with Go's message ("unknown time zone X", "time: invalid location name")."""
    if name in ("", "UTC"):
        return UTC
    if name == "Local":
        return LOCAL
    if ".." in name or name[0] in "/\\":
        raise ValueError("time: invalid location name")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValueError(f"unknown time zone {name}") from exc


# --- instants in a zone, with Go's time.Date semantics -----------------------------------------------------


def _offset(u: int, loc: tzinfo) -> int:
    off = datetime.fromtimestamp(u, loc).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def _go_date(year: int, month: int, day: int, hour: int, minute: int, second: int, loc: tzinfo) -> int:
    """Go's ``time.Date(...).Unix()``: out-of-range fields normalise (month 13 is January of the next year, day
    32 rolls over); a wall time in a DST gap or overlap takes the offset Go's lookup gives it."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    days = date(year, month, 1).toordinal() + day - 1 - _EPOCH_ORDINAL
    unix = days * 86400 + hour * 3600 + minute * 60 + second
    offset = _offset(unix, loc)
    if offset != 0:
        offset = _offset(unix - offset, loc)
    return unix - offset


def _in(u: int, loc: tzinfo) -> datetime:
    return datetime.fromtimestamp(u, loc)


def _step(u: int, c: datetime, value: int, bits: int, unit: int, loc: tzinfo) -> tuple[int, datetime, bool]:
    """robfig's minute or second loop (add one ``unit`` until the field is allowed; wrap when it comes round to
    0), in one jump when the zone's offset does not change on the way (the loop's result is then the same); one
    step at a time otherwise. Returns the new instant, its fields and whether the loop wrapped."""
    ahead = next((v for v in range(value + 1, 60) if 1 << v & bits), 60)
    target = u + (ahead - value) * unit
    if _offset(target, loc) == _offset(u, loc):
        c = _in(target, loc)
        return target, c, ahead == 60
    while True:
        u += unit
        c = _in(u, loc)
        field = c.minute if unit == 60 else c.second
        if field == 0:
            return u, c, True
        if 1 << field & bits:
            return u, c, False


def _weekday(t: datetime) -> int:
    """Go's ``Weekday()``: Sunday is 0."""
    return (t.weekday() + 1) % 7


# --- schedules -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpecSchedule:
    """robfig's ``SpecSchedule``: one bit per allowed value of each field (bit 63 marks an unstepped ``*``)."""

    second: int
    minute: int
    hour: int
    dom: int
    month: int
    dow: int
    location: tzinfo | None = LOCAL

    def _day_matches(self, t: datetime) -> bool:
        dom_match = bool(1 << t.day & self.dom)
        dow_match = bool(1 << _weekday(t) & self.dow)
        if self.dom & _STAR_BIT or self.dow & _STAR_BIT:
            return dom_match and dow_match
        return dom_match or dow_match

    def _never(self) -> bool:
        """A field with no value at all (only commas) never matches; robfig then searches five years and gives
        up, which is the same answer, reached without the search."""
        return any(f & ~_STAR_BIT == 0 for f in (self.second, self.minute, self.hour, self.dom | self.dow, self.month))

    def next(self, t: datetime) -> datetime:
        orig = t.tzinfo or UTC
        loc = self.location if self.location is not None else orig
        if self._never():
            return ZERO_TIME
        u = math.floor(t.timestamp()) + 1  # the upcoming whole second
        added = False
        year_limit = _in(u, loc).year + 5
        while True:  # robfig's WRAP label
            c = _in(u, loc)
            if c.year > year_limit:
                return ZERO_TIME
            wrapped = False
            while not 1 << c.month & self.month:
                if not added:
                    added = True
                    u = _go_date(c.year, c.month, 1, 0, 0, 0, loc)
                    c = _in(u, loc)
                u = _go_date(c.year, c.month + 1, c.day, c.hour, c.minute, c.second, loc)
                c = _in(u, loc)
                if c.month == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not self._day_matches(c):
                if not added:
                    added = True
                    u = _go_date(c.year, c.month, c.day, 0, 0, 0, loc)
                    c = _in(u, loc)
                u = _go_date(c.year, c.month, c.day + 1, c.hour, c.minute, c.second, loc)
                c = _in(u, loc)
                if c.hour != 0:  # midnight did not exist (DST): robfig nudges back to a day boundary
                    u += (24 - c.hour) * 3600 if c.hour > 12 else -c.hour * 3600
                    c = _in(u, loc)
                if c.day == 1:
                    wrapped = True
                    break
            if wrapped:
                continue
            while not 1 << c.hour & self.hour:
                if not added:
                    added = True
                    u = _go_date(c.year, c.month, c.day, c.hour, 0, 0, loc)
                u += 3600
                c = _in(u, loc)
                if c.hour == 0:
                    wrapped = True
                    break
            if wrapped:
                continue
            if not 1 << c.minute & self.minute:
                if not added:
                    added = True
                    u -= u % 60
                    c = _in(u, loc)
                u, c, wrapped = _step(u, c, c.minute, self.minute, 60, loc)
            if wrapped:
                continue
            if not 1 << c.second & self.second:
                added = True
                u, c, wrapped = _step(u, c, c.second, self.second, 1, loc)
            if wrapped:
                continue
            return _in(u, orig)


@dataclass(frozen=True)
class ConstantDelaySchedule:
    """robfig's ``ConstantDelaySchedule`` (``@every``): ``delay`` whole seconds after ``t``'s whole second."""

    delay: int

    def next(self, t: datetime) -> datetime:
        return _in(math.floor(t.timestamp()) + self.delay, t.tzinfo or UTC)


def every(duration_ns: int) -> ConstantDelaySchedule:
    """robfig's ``Every``: at least one second, the rest truncated to whole seconds."""
    seconds = max(duration_ns, 1_000_000_000) // 1_000_000_000
    return ConstantDelaySchedule(seconds)


# --- parsing -------------------------------------------------------------------------------------------------


def _go_fields(fields: list[str]) -> str:
    """Go's ``%s`` of a ``[]string``."""
    return "[" + " ".join(fields) + "]"


def _atoi(expr: str) -> int:
    """Go's ``strconv.Atoi`` with its error text (a sign is allowed; 64-bit range)."""
    digits = expr[1:] if expr[:1] in "+-" else expr
    if not digits or not all("0" <= ch <= "9" for ch in digits):
        raise ValueError(f'strconv.Atoi: parsing "{expr}": invalid syntax')
    value = int(expr)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f'strconv.Atoi: parsing "{expr}": value out of range')
    return value


def _must_parse_int(expr: str) -> int:
    try:
        num = _atoi(expr)
    except ValueError as exc:
        raise ValueError(f"failed to parse int from {expr}: {exc}") from None
    if num < 0:
        raise ValueError(f"negative number ({num}) not allowed: {expr}")
    return num


def _parse_int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _bits(start: int, end: int, step: int) -> int:
    if step == 1:
        return ~(~0 << (end + 1)) & (~0 << start)
    bits = 0
    for i in range(start, end + 1, step):
        bits |= 1 << i
    return bits


def _all(r: _Bounds) -> int:
    return _bits(r.min, r.max, 1) | _STAR_BIT


def _get_range(expr: str, r: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single_digit = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end = r.min, r.max
        extra = _STAR_BIT
    else:
        start = _parse_int_or_name(low_and_high[0], r.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], r.names)
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single_digit:  # "N/step" means "N-max/step"
            end = r.max
        if step > 1:
            extra = 0
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < r.min:
        raise ValueError(f"beginning of range ({start}) below minimum ({r.min}): {expr}")
    if end > r.max:
        raise ValueError(f"end of range ({end}) above maximum ({r.max}): {expr}")
    if start > end:
        raise ValueError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise ValueError(f"step of range should be a positive number: {expr}")
    return _bits(start, end, step) | extra


def _get_field(text: str, r: _Bounds) -> int:
    bits = 0
    for expr in (part for part in text.split(",") if part):
        bits |= _get_range(expr, r)
    return bits


def _parse_descriptor(descriptor: str, loc: tzinfo | None) -> Schedule:
    sec, mins, hrs, dom1, mon1, sun = (1 << b.min for b in (_SECONDS, _MINUTES, _HOURS, _DOM, _MONTHS, _DOW))
    fields: dict[str, tuple[int, int, int, int, int, int]] = {
        "@yearly": (sec, mins, hrs, dom1, mon1, _all(_DOW)),
        "@monthly": (sec, mins, hrs, dom1, _all(_MONTHS), _all(_DOW)),
        "@weekly": (sec, mins, hrs, _all(_DOM), _all(_MONTHS), sun),
        "@daily": (sec, mins, hrs, _all(_DOM), _all(_MONTHS), _all(_DOW)),
        "@hourly": (sec, mins, _all(_HOURS), _all(_DOM), _all(_MONTHS), _all(_DOW)),
    }
    fields["@annually"] = fields["@yearly"]
    fields["@midnight"] = fields["@daily"]
    if descriptor in fields:
        return SpecSchedule(*fields[descriptor], location=loc)
    prefix = "@every "
    if descriptor.startswith(prefix):
        try:
            duration = parse_duration(descriptor[len(prefix) :])
        except ValueError as exc:
            raise ValueError(f"failed to parse duration {descriptor}: {exc}") from None
        return every(duration)
    raise ValueError(f"unrecognized descriptor: {descriptor}")


def parse_schedule(text: str) -> Schedule:
    """robfig/cron v3 ``ParseStandard(text)``; ValueError carrying robfig's message (what upstream's validation
    reports as ``spec.schedule``'s Invalid detail and the controller as ``UnparseableSchedule``)."""
    spec = text
    if not spec:
        raise ValueError("empty spec string")
    loc: tzinfo | None = LOCAL
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        eq = spec.find("=")
        if space < 0:  # robfig slices spec[eq+1:-1] and panics; refuse instead
            raise ValueError(f"provided bad location {spec[eq + 1 :]}: missing schedule after time zone")
        name = spec[eq + 1 : space]
        try:
            loc = load_location(name)
        except ValueError as exc:
            raise ValueError(f"provided bad location {name}: {exc}") from None
        spec = spec[space:].strip()
    if spec.startswith("@"):
        return _parse_descriptor(spec, loc)
    fields = spec.split()
    if len(fields) != 5:
        raise ValueError(f"expected exactly 5 fields, found {len(fields)}: {_go_fields(fields)}")
    minute = _get_field(fields[0], _MINUTES)
    hour = _get_field(fields[1], _HOURS)
    dom = _get_field(fields[2], _DOM)
    month = _get_field(fields[3], _MONTHS)
    dow = _get_field(fields[4], _DOW)
    return SpecSchedule(1 << _SECONDS.min, minute, hour, dom, month, dow, location=loc)
