"""Go's ``time.Parse`` for the two layouts the API decodes, with Go's error messages.

``metav1.Time`` decodes with ``time.Parse(time.RFC3339, s)`` and ``metav1.MicroTime`` with
``time.Parse("2006-01-02T15:04:05.000000Z07:00", s)`` (apimachinery pkg/apis/meta/v1/time.go, micro_time.go).
kube-apiserver answers a malformed timestamp in a body with the parse error itself, e.g.
``parsing time "2024-13-01T00:00:00Z": month out of range``, so this module follows Go's ``time/format.go``
chunk by chunk: each layout element consumes a prefix of the value or fails with ``cannot parse "<rest of the
value>" as "<layout element>"``; range errors and leftover text have their own forms. Only acceptance and the
message are computed; callers that need the instant use :func:`kubeplane.api.meta.parse_time`.
"""

from __future__ import annotations

from typing import Final

from kubeplane.api.validation.field import go_quote

RFC3339: Final = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO: Final = "2006-01-02T15:04:05.000000Z07:00"

__all__ = ["RFC3339", "RFC3339_MICRO", "GoTimeError", "check_time"]


class GoTimeError(ValueError):
    """A value Go's ``time.Parse`` refuses; the message is Go's ``ParseError.Error()``."""


def _is_digit(s: str, i: int) -> bool:
    return i < len(s) and "0" <= s[i] <= "9"


def _getnum(s: str, fixed: bool) -> tuple[int, str] | None:
    """Go's getnum: one or two leading digits (exactly two when ``fixed``)."""
    if not _is_digit(s, 0):
        return None
    if not _is_digit(s, 1):
        return None if fixed else (int(s[0]), s[1:])
    return int(s[:2]), s[2:]


_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _days_in(month: int, year: int) -> int:
    """Go's daysIn (year 0 exists and is a leap year, unlike in Python's calendar)."""
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _DAYS[month - 1]


class _Parse:
    def __init__(self, layout: str, value: str) -> None:
        self.layout, self.value = layout, value

    def bad(self, value_elem: str, layout_elem: str) -> GoTimeError:
        return GoTimeError(
            f"parsing time {go_quote(self.value)} as {go_quote(self.layout)}: cannot parse "
            f"{go_quote(value_elem)} as {go_quote(layout_elem)}"
        )

    def message(self, text: str) -> GoTimeError:
        return GoTimeError(f"parsing time {go_quote(self.value)}{text}")


def check_time(value: str, layout: str = RFC3339) -> None:
    """Raise :class:`GoTimeError` with Go's message unless ``time.Parse(layout, value)`` succeeds."""
    p = _Parse(layout, value)
    micro = layout == RFC3339_MICRO
    rest = value
    # 2006: four characters starting with a digit, all digits
    if len(rest) < 4 or not _is_digit(rest, 0) or not rest[:4].isdigit() or not rest[:4].isascii():
        raise p.bad(rest, "2006")
    year, rest = int(rest[:4]), rest[4:]
    fields: list[int] = []
    for literal, elem, fixed, limit, name in (
        ("-", "01", True, 12, "month"),
        ("-", "02", True, 31, ""),
        ("T", "15", False, 23, "hour"),
        (":", "04", True, 59, "minute"),
        (":", "05", True, 59, "second"),
    ):
        if not rest.startswith(literal):
            raise p.bad(rest, literal)
        rest = rest[len(literal) :]
        got = _getnum(rest, fixed)
        if got is None:
            raise p.bad(rest, elem)
        number, after = got
        if name and (number > limit or (name == "month" and number == 0)):
            raise p.message(f": {name} out of range")
        fields.append(number)
        rest = after
    if micro:
        if len(rest) < 7 or rest[0] not in ".," or not rest[1:7].isdigit() or not rest[1:7].isascii():
            raise p.bad(rest, ".000000")
        rest = rest[7:]
    elif len(rest) >= 2 and rest[0] in ".," and _is_digit(rest, 1):  # a fraction the layout does not name
        n = 2
        while _is_digit(rest, n):
            n += 1
        if n > 11:  # Go's parseNanoseconds: at most 9 digits
            raise p.message(": fractional second out of range")
        rest = rest[n:]
    if rest.startswith("Z"):
        rest = rest[1:]
    else:
        if len(rest) < 6 or rest[3] != ":" or rest[0] not in "+-":
            raise p.bad(rest, "Z07:00")
        hours, minutes = _getnum(rest[1:3], True), _getnum(rest[4:6], True)
        if hours is None or minutes is None or hours[1] or minutes[1]:
            raise p.bad(rest, "Z07:00")
        if hours[0] > 24:
            raise p.message(": time zone offset hour out of range")
        if minutes[0] > 60:
            raise p.message(": time zone offset minute out of range")
        rest = rest[6:]
    if rest:
        raise p.message(f": extra text: {go_quote(rest)}")
    month, day = fields[0], fields[1]
    if day < 1 or day > _days_in(month, year):
        raise p.message(": day out of range")
