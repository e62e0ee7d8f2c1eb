"""The error of robfig/cron v3.0.1's ``ParseStandard``, as CronJob validation reports it.

kube-apiserver validates ``spec.schedule`` by parsing it with ``cron.ParseStandard`` and putting the parser's
error text in the field error (``pkg/apis/batch/validation`` ``validateScheduleFormat``). This module reproduces
that parser's acceptance and its messages byte for byte -- five fields (minute, hour, day of month, month, day of
week; month and weekday names), ``*``/``?``, ranges, steps, comma lists, the ``@yearly`` ... ``@hourly`` and
``@every <duration>`` descriptors, and a leading ``TZ=``/``CRON_TZ=`` -- and nothing else: computing the next
activation is the CronJob controller's business.

Pure: no clock; ``TZ=`` names are looked up in the system time-zone database, as Go's ``time.LoadLocation``.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass
from typing import Final

from kubeplane.api.durations import parse_duration

__all__ = ["load_location_error", "parse_standard_error"]


@dataclass(frozen=True, slots=True)
class _Bounds:
    low: int
    high: int
    names: tuple[str, ...] = ()  # names[i] is the value low + i


_MINUTES: Final = _Bounds(0, 59)
_HOURS: Final = _Bounds(0, 23)
_DOM: Final = _Bounds(1, 31)
_MONTHS: Final = _Bounds(1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))
_DOW: Final = _Bounds(0, 6, ("sun", "mon", "tue", "wed", "thu", "fri", "sat"))
_FIELDS: Final = (_MINUTES, _HOURS, _DOM, _MONTHS, _DOW)
_DESCRIPTORS: Final = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
_EVERY: Final = "@every "


class _CronError(ValueError):
    pass


def load_location_error(name: str) -> str | None:
    """Go's ``time.LoadLocation`` error for ``name`` (None when it loads): ``""`` and ``UTC`` are UTC."""
    if name in ("", "UTC", "Local"):
        return None
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return f"unknown time zone {name}"
    return None


def _atoi(text: str) -> int:
    """Go's ``strconv.Atoi`` (an optional sign, ASCII digits) or its error."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise _CronError(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def _must_parse_int(text: str) -> int:
    num = _atoi(text)
    if num < 0:
        raise _CronError(f"negative number ({num}) not allowed: {text}")
    return num


def _int_or_name(text: str, bounds: _Bounds) -> int:
    if bounds.names and text.lower() in bounds.names:
        return bounds.low + bounds.names.index(text.lower())
    return _must_parse_int(text)


def _check_range(expr: str, bounds: _Bounds) -> None:
    """robfig ``getRange``: ``number | number "-" number [ "/" number ]``, or ``*``/``?``."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_and_high[0], bounds)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds)
        else:
            raise _CronError(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if len(low_and_high) == 1:  # "N/step" means "N-max/step"
            end = bounds.high
    elif len(range_and_step) > 2:
        raise _CronError(f"too many slashes: {expr}")
    if start < bounds.low:
        raise _CronError(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise _CronError(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise _CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise _CronError(f"step of range should be a positive number: {expr}")


def _check_descriptor(spec: str) -> None:
    if spec in _DESCRIPTORS:
        return
    if spec.startswith(_EVERY):
        try:
            parse_duration(spec[len(_EVERY) :])
        except ValueError as exc:
            raise _CronError(f"failed to parse duration {spec}: {exc}") from None
        return
    raise _CronError(f"unrecognized descriptor: {spec}")


def _parse(spec: str) -> None:
    if not spec:
        raise _CronError("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        if space < 0:  # upstream slices spec[eq+1:-1] and panics; the TZ rule reports the schedule instead
            return
        name = spec[spec.index("=") + 1 : space]
        if (err := load_location_error(name)) is not None:
            raise _CronError(f"provided bad location {name}: {err}")
        spec = spec[space:].strip()
    if spec.startswith("@"):
        _check_descriptor(spec)
        return
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise _CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for text, bounds in zip(fields, _FIELDS, strict=True):
        for expr in (part for part in text.split(",") if part):
            _check_range(expr, bounds)


def parse_standard_error(spec: str) -> str | None:
    """``cron.ParseStandard(spec)``'s error text, or None when the schedule parses."""
    try:
        _parse(spec)
    except _CronError as exc:
        return str(exc)
    return None
