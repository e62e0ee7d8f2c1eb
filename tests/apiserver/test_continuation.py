"""Continue tokens and query-parameter decoding in-process: the Go functions they reproduce, case by case."""

from __future__ import annotations

import pytest

from kubeplane.apiserver import continuation, params
from kubeplane.apiserver.errors import APIError


@pytest.mark.parametrize(
    ("path", "cleaned"),
    [  # Go's path.Clean (src/path/path_test.go cleantests)
        ("", "."),
        ("abc/", "abc"),
        ("abc//def//ghi", "abc/def/ghi"),
        ("//abc", "/abc"),
        ("///abc", "/abc"),
        ("abc/./def", "abc/def"),
        ("abc/../def", "def"),
        ("../../abc", "../../abc"),
        ("/../abc", "/abc"),
        ("abc/def/../../..", ".."),
        ("/abc/def/../../..", "/"),
        ("/default/p\x00", "/default/p\x00"),
    ],
)
def test_clean_path_is_gos(path: str, cleaned: str) -> None:
    assert continuation.clean_path(path) == cleaned


def test_a_token_round_trips() -> None:
    """EncodeContinue / DecodeContinue: the revision and the start key relative to the collection prefix."""
    token = continuation.encode(42, "default/p\x00")
    assert "=" not in token  # RawURLEncoding
    assert continuation.decode(token) == (42, "default/p\x00")


@pytest.mark.parametrize(
    ("value", "parsed", "message"),
    [  # strconv.ParseInt(s, 10, 64)
        ("12", 12, None),
        ("+12", 12, None),
        ("-12", -12, None),
        ("9223372036854775807", 2**63 - 1, None),
        ("9223372036854775808", None, 'strconv.ParseInt: parsing "9223372036854775808": value out of range'),
        ("1_000", None, 'strconv.ParseInt: parsing "1_000": invalid syntax'),
        ("\u0663", None, 'strconv.ParseInt: parsing "\u0663": invalid syntax'),  # Python's int() takes it
        ("0x10", None, 'strconv.ParseInt: parsing "0x10": invalid syntax'),
        ('"1"', None, 'strconv.ParseInt: parsing "\\"1\\"": invalid syntax'),
    ],
)
def test_parse_int64_is_strconv(value: str, parsed: int | None, message: str | None) -> None:
    if message is None:
        assert params.parse_int64(value) == parsed
        return
    with pytest.raises(APIError) as refused:
        params.parse_int64(value)
    assert (refused.value.code, refused.value.status["message"]) == (400, message)


@pytest.mark.parametrize(
    ("value", "result"),
    [("0", False), ("false", False), ("FALSE", False), ("", True), ("no", True), ("1", True), ("t", True)],
)
def test_go_bool_is_runtime_convert_slice_string_to_bool(value: str, result: bool) -> None:
    assert params.go_bool(value) is result


def test_first_values_keeps_each_parameters_first_value() -> None:
    assert params.first_values([("limit", "1"), ("limit", "2"), ("watch", "")]) == {"limit": "1", "watch": ""}
