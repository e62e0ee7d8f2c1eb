"""Controllers' timestamp parsing (kubeplane.controllers.podutil.parse_timestamp): metav1.Time and MicroTime as
Go's ``time.Parse(time.RFC3339, ...)`` reads them, the API server's UTC shapes by a quicker path that must give
the same instant (or the same refusal) as the RFC 3339 parser."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.api import meta
from kubeplane.api.meta import format_micro_time, format_time
from kubeplane.controllers.podutil import parse_timestamp


def _rfc3339(value: str) -> float | None:
    try:
        return meta.parse_time(value).timestamp()
    except ValueError:
        return None


@pytest.mark.parametrize(
    "value",
    [
        "2027-01-15T08:00:03Z",
        "2027-01-15T08:00:03.123456Z",
        "2027-01-15T08:00:03.000000Z",
        "2027-01-15T08:00:03+02:00",
        "2027-01-15T08:00:03.5Z",
        "2027-01-15T25:00:03.123456Z",
        "2027-02-30T08:00:03Z",
        "2027-01-15 08:00:03.123456Z",
        "2027-01-15T08:00:03,123456Z",
        "2027-01-15T08:00:03.12345xZ",
        "",
    ],
    ids=[
        "time",
        "micro-time",
        "micro-time-whole-second",
        "an-offset",
        "a-short-fraction",
        "hour-out-of-range",
        "no-such-day",
        "a-space-for-T",
        "a-comma-for-the-point",
        "a-letter-in-the-fraction",
        "empty-is-go-zero-time",
    ],
)
def test_every_shape_parses_as_rfc3339_does(value: str) -> None:
    assert parse_timestamp(value) == _rfc3339(value)


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30)))
def test_written_times_read_back_as_the_rfc3339_parser_reads_them(moment: datetime) -> None:
    t = moment.replace(tzinfo=UTC).timestamp()
    for text in (format_time(t), format_micro_time(t)):
        assert parse_timestamp(text) == _rfc3339(text)
