"""Go's time.Parse for metav1.Time (RFC 3339) and MicroTime layouts: acceptance and ParseError messages
(time/format.go: ``cannot parse "<rest>" as "<layout element>"``, range errors, extra text)."""

from __future__ import annotations

import pytest

from kubeplane.api.gotime import RFC3339_MICRO, GoTimeError, check_time


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-28T00:00:00Z",
        "2026-11-28T23:59:59+05:30",
        "2026-11-28T00:00:00.123Z",  # a fraction the layout does not name is accepted (format.go stdSecond)
        "2024-02-29T00:00:00Z",
        "0000-02-29T00:00:00Z",  # year 0 is a leap year to Go
        "2026-11-28T1:00:00Z",  # stdHour takes one digit
    ],
)
def test_rfc3339_accepts_what_go_accepts(value: str) -> None:
    check_time(value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x", 'parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"'),
        (
            "2026-11-28 00:00:00Z",
            'parsing time "2026-11-28 00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 00:00:00Z" as "T"',
        ),
        (
            "2026-1-28T00:00:00Z",
            'parsing time "2026-1-28T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot parse "1-28T00:00:00Z" as "01"',
        ),
        ("2026-13-28T00:00:00Z", 'parsing time "2026-13-28T00:00:00Z": month out of range'),
        ("2026-02-29T00:00:00Z", 'parsing time "2026-02-29T00:00:00Z": day out of range'),
        ("2026-11-28T24:00:00Z", 'parsing time "2026-11-28T24:00:00Z": hour out of range'),
        ("2026-11-28T00:00:00Zjunk", 'parsing time "2026-11-28T00:00:00Zjunk": extra text: "junk"'),
        (
            "2026-11-28T00:00:00",
            'parsing time "2026-11-28T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"',
        ),
    ],
)
def test_rfc3339_refuses_with_gos_message(value: str, message: str) -> None:
    with pytest.raises(GoTimeError) as info:
        check_time(value)
    assert str(info.value) == message


def test_micro_time_needs_exactly_six_fraction_digits() -> None:
    check_time("2026-11-28T00:00:00.123456Z", RFC3339_MICRO)
    with pytest.raises(GoTimeError) as info:
        check_time("2026-11-28T00:00:00Z", RFC3339_MICRO)
    assert str(info.value) == (
        'parsing time "2026-11-28T00:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"'
    )
