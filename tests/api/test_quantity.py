"""``kubeplane.api.quantity`` against upstream apimachinery ``resource.Quantity``.

Tables are taken from ``staging/src/k8s.io/apimachinery/pkg/api/resource/quantity_test.go`` (the test each
table mirrors is named above it); property tests check the exact-arithmetic invariants against ``Fraction``.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.quantity import NANO, Format, Quantity, QuantityError, parse_milli, parse_quantity, parse_value

DSI, BSI, DEXP = Format.DECIMAL_SI, Format.BINARY_SI, Format.DECIMAL_EXPONENT
MAX_INT64 = 2**63 - 1


def dec(mantissa: int, exponent: int) -> int:
    """Nanos of ``mantissa * 10^exponent`` (upstream's ``decQuantity``), exponent >= -9."""
    return mantissa * int(10 ** (exponent + 9))


# TestQuantityParse: input -> (nanos, format).
PARSE_CASES: list[tuple[str, int, Format]] = [
    ("0", 0, DSI),
    ("0n", 0, DSI),
    ("0u", 0, DSI),
    ("0m", 0, DSI),
    ("0Ki", 0, BSI),
    ("0k", 0, DSI),
    ("0Mi", 0, BSI),
    ("0M", 0, DSI),
    ("0Gi", 0, BSI),
    ("0G", 0, DSI),
    ("0Ti", 0, BSI),
    ("0T", 0, DSI),
    ("1", dec(1, 0), DSI),
    ("1Ki", dec(1024, 0), BSI),
    ("8Ki", dec(8 * 1024, 0), BSI),
    ("7Mi", dec(7 * 1024**2, 0), BSI),
    ("6Gi", dec(6 * 1024**3, 0), BSI),
    ("5Ti", dec(5 * 1024**4, 0), BSI),
    ("4Pi", dec(4 * 1024**5, 0), BSI),
    ("3Ei", dec(3 * 1024**6, 0), BSI),
    ("10Ti", dec(10 * 1024**4, 0), BSI),
    ("100Ti", dec(100 * 1024**4, 0), BSI),
    ("5n", dec(5, -9), DSI),
    ("4u", dec(4, -6), DSI),
    ("3m", dec(3, -3), DSI),
    ("9", dec(9, 0), DSI),
    ("8k", dec(8, 3), DSI),
    ("50k", dec(5, 4), DSI),
    ("7M", dec(7, 6), DSI),
    ("6G", dec(6, 9), DSI),
    ("5T", dec(5, 12), DSI),
    ("40T", dec(4, 13), DSI),
    ("300T", dec(3, 14), DSI),
    ("2P", dec(2, 15), DSI),
    ("1E", dec(1, 18), DSI),
    ("1E-3", dec(1, -3), DEXP),
    ("1e3", dec(1, 3), DEXP),
    ("1E6", dec(1, 6), DEXP),
    ("1e9", dec(1, 9), DEXP),
    ("1E12", dec(1, 12), DEXP),
    ("1e15", dec(1, 15), DEXP),
    ("1E18", dec(1, 18), DEXP),
    ("1e14", dec(1, 14), DEXP),
    ("1e13", dec(1, 13), DEXP),
    ("100.035k", dec(100035, 0), DSI),
    ("0.001", dec(1, -3), DSI),
    ("0.0005k", dec(5, -1), DSI),
    ("0.005", dec(5, -3), DSI),
    ("0.05", dec(5, -2), DSI),
    ("0.5", dec(5, -1), DSI),
    ("0.00050k", dec(5, -1), DSI),
    ("0.00500", dec(5, -3), DSI),
    ("0.05000", dec(5, -2), DSI),
    ("0.50000", dec(5, -1), DSI),
    ("0.5e0", dec(5, -1), DEXP),
    ("0.5e-1", dec(5, -2), DEXP),
    ("0.5e-2", dec(5, -3), DEXP),
    ("10.035M", dec(10035, 3), DSI),
    ("1.2e3", dec(12, 2), DEXP),
    ("1.3E+6", dec(13, 5), DEXP),
    ("1.40e9", dec(14, 8), DEXP),
    ("1.53E12", dec(153, 10), DEXP),
    ("1.6e15", dec(16, 14), DEXP),
    ("1.7E18", dec(17, 17), DEXP),
    ("9.01", dec(901, -2), DSI),
    ("8.1k", dec(81, 2), DSI),
    ("7.123456M", dec(7123456, 0), DSI),
    ("6.987654321G", dec(6987654321, 0), DSI),
    ("5.444T", dec(5444, 9), DSI),
    ("40.1T", dec(401, 11), DSI),
    ("300.2T", dec(3002, 11), DSI),
    ("2.5P", dec(25, 14), DSI),
    ("1.01E", dec(101, 16), DSI),
    # things that saturate or round: below 1n rounds *up*, BinarySI caps at 2^63-1
    ("3.001n", dec(4, -9), DSI),
    ("1.1E-9", dec(2, -9), DEXP),
    ("0.0000000001", dec(1, -9), DSI),
    ("0.0000000005", dec(1, -9), DSI),
    ("0.00000000050", dec(1, -9), DSI),
    ("0.5e-9", dec(1, -9), DEXP),
    ("0.9n", dec(1, -9), DSI),
    ("0.00000012345", dec(124, -9), DSI),
    ("0.00000012354", dec(124, -9), DSI),
    ("9Ei", dec(MAX_INT64, 0), BSI),
    ("9223372036854775807Ki", dec(MAX_INT64, 0), BSI),
    ("12E", dec(12, 18), DSI),  # DecimalSI is not capped: exact beyond int64
    # fractional binary values are accepted
    ("100.035Ki", dec(10243584, -2), BSI),
    ("0.5Mi", dec(512 * 1024, 0), BSI),
    ("0.05Gi", dec(536870912, -1), BSI),
    ("0.025Ti", dec(274877906944, -1), BSI),
    # "things written by trolls"
    ("0.000000000001Ki", dec(2, -9), DSI),  # rounds up, and a fraction of a unit changes the format
    (".001", dec(1, -3), DSI),
    (".0001k", dec(100, -3), DSI),
    ("1.", dec(1, 0), DSI),
    ("1.G", dec(1, 9), DSI),
    # the scanner accepts an empty number: a bare suffix is zero (kubernetes/apimachinery#165)
    ("Ki", 0, BSI),
    ("m", 0, DSI),
    ("e5", 0, DEXP),
    (".", 0, DSI),
]


@pytest.mark.parametrize("prefix", ["", "-", "+"], ids=["unsigned", "negative", "explicit-plus"])
@pytest.mark.parametrize(("text", "nanos", "fmt"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES])
def test_parse_matches_upstream_table(prefix: str, text: str, nanos: int, fmt: Format) -> None:
    got = parse_quantity(prefix + text)
    assert got.nanos == (-nanos if prefix == "-" else nanos)
    assert got.format is fmt


# TestQuantityParse "invalid", plus the grammar errors named in kubeplane's brief.
INVALID = [
    "",
    "1.1.M",
    "1+1.0M",
    "0.1mi",
    "0.1am",
    "aoeu",
    ".5i",
    "1i",
    "-3.01i",
    "-3.01e-",
    "1e4294967297",  # exponent beyond int32 is rejected, not truncated to 1e1
    "E2147483648",
    " 1",  # ParseQuantity allows no whitespace (only the JSON boundary trims)
    "1 ",
    "1.5.2",
    "1 Gi",
    "1Gb",
    "1e",
    "1e+",
    "1Kii",
    "--1",
    "+-1",
    "Pi",  # digitless and on upstream's inf.Dec path: "unable to parse numeric part"
    "e-10",
    "-.e-10",
    "1e1000",  # kubeplane's magnitude limit (10^1000)
]


@pytest.mark.parametrize("text", INVALID, ids=[repr(t) for t in INVALID])
def test_invalid_strings_raise_naming_the_string(text: str) -> None:
    with pytest.raises(QuantityError) as excinfo:
        parse_quantity(text)
    assert repr(text) in str(excinfo.value)
    assert isinstance(excinfo.value, ValueError)


def test_format_error_message_is_upstreams() -> None:
    with pytest.raises(QuantityError, match=r"quantities must match the regular expression"):
        parse_quantity("1Gb")
    with pytest.raises(QuantityError, match=r"unable to parse quantity's suffix"):
        parse_quantity("1i")


def test_long_fractions_round_up_exactly() -> None:
    """Digits far below 1n still round up by exactly one nano, in decimal and in binary."""
    tail = "0" * 200 + "1"
    assert parse_quantity("1." + tail).nanos == NANO + 1
    assert parse_quantity("1." + tail + "Ki").nanos == 1024 * NANO + 1
    assert parse_quantity("1." + "0" * 200 + "Ki").nanos == 1024 * NANO
    assert parse_quantity("0.5" + "0" * 5000 + "Ei").value() == 2**59  # longer than int()'s digit limit


def test_largest_exponent_within_kubeplane_limit_is_exact() -> None:
    assert parse_quantity("1e999").nanos == 10 ** (999 + 9)
    assert str(parse_quantity("1e999")) == "1e999"
    assert parse_quantity("1e-2147483647").nanos == 1  # int32 bound: accepted, rounds up to 1n


# TestQuantityString: (nanos, format) -> canonical string, and an alternate spelling of the same value.
STRING_CASES: list[tuple[int, Format, str, str | None]] = [
    (dec(1024**3, 0), BSI, "1Gi", "1024Mi"),
    (dec(300 * 1024**2, 0), BSI, "300Mi", "307200Ki"),
    (dec(6 * 1024, 0), BSI, "6Ki", None),
    (dec(1001 * 1024**3, 0), BSI, "1001Gi", "1025024Mi"),
    (dec(1024**4, 0), BSI, "1Ti", "1024Gi"),
    (dec(5, 0), BSI, "5", "5000m"),
    (dec(500, -3), BSI, "500m", "0.5"),
    (dec(1, 9), DSI, "1G", "1000M"),
    (dec(1000, 6), DSI, "1G", "0.001T"),
    (dec(1000000000, 0), DSI, "1G", None),
    (dec(1, -3), DSI, "1m", "1000u"),
    (dec(80, -3), DSI, "80m", None),
    (dec(1080, -3), DSI, "1080m", "1.08"),
    (dec(108, -2), DSI, "1080m", "1080000000n"),
    (dec(300, 6), DSI, "300M", None),
    (dec(1, 12), DSI, "1T", None),
    (dec(1, 18), DSI, "1E", None),
    (dec(1, 21), DSI, "1e21", "1000E"),  # no SI suffix beyond E: exponent notation, not "1"
    (dec(5, 21), DSI, "5e21", "5000E"),
    (dec(1, 24), DSI, "1e24", "1000000E"),
    (dec(1, 70), BSI, "10e69", None),  # no binary suffix beyond Ei: exact decimal fallback
    (dec(2, 70), BSI, "20e69", None),
    (dec(1, 72), BSI, "1e72", None),
    (dec(1234567, 6), DSI, "1234567M", None),
    (dec(1234567, -3), BSI, "1234567m", None),
    (dec(3, 3), DSI, "3k", None),
    (dec(1025, 0), BSI, "1025", None),
    (0, DSI, "0", None),
    (0, BSI, "0", None),
    (dec(1, 9), DEXP, "1e9", ".001e12"),
    (dec(1, -3), DEXP, "1e-3", "0.001e0"),
    (dec(1, -9), DEXP, "1e-9", "1000e-12"),
    (dec(80, -3), DEXP, "80e-3", None),
    (dec(300, 6), DEXP, "300e6", None),
    (dec(1, 12), DEXP, "1e12", None),
    (dec(1, 3), DEXP, "1e3", None),
    (dec(3, 3), DEXP, "3e3", None),
    (0, DEXP, "0", "00"),
    (dec(1, -9), DSI, "1n", None),
    (dec(80, -9), DSI, "80n", None),
    (dec(1080, -9), DSI, "1080n", None),
    (dec(1, -6), DSI, "1u", None),
    (dec(80, -6), DSI, "80u", None),
    (dec(1080, -6), DSI, "1080u", None),
]


@pytest.mark.parametrize(
    ("nanos", "fmt", "expect", "alternate"),
    STRING_CASES,
    ids=[f"{c[1].value}-{c[2]}" + (f"-alt-{c[3]}" if c[3] else "") for c in STRING_CASES],
)
def test_canonical_string_matches_upstream(nanos: int, fmt: Format, expect: str, alternate: str | None) -> None:
    quantity = Quantity(nanos, fmt)
    assert str(quantity) == expect
    assert str(parse_quantity(expect)) == expect  # the canonical spelling parses back to itself
    assert parse_quantity(expect) == quantity
    if alternate is not None:
        assert str(parse_quantity(alternate)) == expect
    if nanos:
        assert str(-quantity) == "-" + expect  # never "-0", sign otherwise just prefixed


# TestQuantityParseEmit, plus the examples of quantity.go's doc comment.
EMIT_CASES = [
    ("1Ki", "1Ki"),
    ("1Mi", "1Mi"),
    ("1Gi", "1Gi"),
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000001Ki", "1024u"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
    ("1000m", "1"),
    ("1.5", "1500m"),
    ("1.5Gi", "1536Mi"),
    ("0.1", "100m"),
    ("1e3", "1e3"),
    ("100M", "100M"),
    ("1.3E+6", "1300e3"),
    ("0.5e-9", "1e-9"),
    ("100.035Ki", "102435840m"),
    ("9Ei", "9223372036854775807"),
    ("12E", "12E"),
    ("1.953125Ki", "2000"),  # BinarySI with base-1024 exponent 0 prints the bare integer (upstream 1.3x)
    ("2000", "2k"),
    ("0.9765625Ki", "1k"),  # BinarySI strictly inside (-1024, 1024) prints as DecimalSI
    ("1023.5Ki", "1048064"),
]


@pytest.mark.parametrize(("text", "expect"), EMIT_CASES, ids=[c[0] for c in EMIT_CASES])
def test_parse_then_emit(text: str, expect: str) -> None:
    assert str(parse_quantity(text)) == expect
    negative = parse_quantity("-" + text)
    assert str(negative) == ("-" + expect if negative.nanos else expect)


def test_binary_beyond_ei_round_trips_as_decimal_integer() -> None:
    """TestBinarySIPastEiArithmeticRoundTrip: 1Ei * 1024 has no binary suffix and prints all digits."""
    quantity = parse_quantity("1Ei") * 1024
    assert str(quantity) == "1180591620717411303424"
    assert parse_quantity(str(quantity)) == quantity


def test_most_negative_arithmetic_is_exact() -> None:
    """TestNegAndSubAtMostNegative / TestZeroSubMostNegativeInheritsFormat: no int64 wrap-around."""
    most_negative = Quantity.from_int(-(2**63))
    assert str(-most_negative) == "9223372036854775808"
    assert str(Quantity.from_int(1) - most_negative) == "9223372036854775809"
    assert str(Quantity.from_int(10) - most_negative) == "9223372036854775818"
    inherited = Quantity(0) - Quantity.from_int(-(2**63), BSI)
    assert inherited.format is BSI
    assert str(inherited) == "8Ei"
    assert parse_quantity("8Ei").value() == MAX_INT64  # parsing caps 8Ei back to 2^63-1 (#140674)


# TestNegativeValueRoundsAwayFromZero: Value() and MilliValue() round away from zero.
VALUE_CASES = [
    ("-.484785E-7466", -1, -1),
    (".484785E-7466", 1, 1),
    ("-.484785E-1", -1, -49),
    (".484785E-1", 1, 49),
    ("-0.0005", -1, -1),
    ("0.0005", 1, 1),
    ("-1500m", -2, -1500),
    ("1500m", 2, 1500),
    ("-9.5000000001Gi", -10200547329, -10200547328108),
    ("9.5000000001Gi", 10200547329, 10200547328108),
    ("-1", -1, -1000),
    ("1", 1, 1000),
    ("0", 0, 0),
    ("100m", 1, 100),
    ("1Gi", 1024**3, 1024**4 * 1000 // 1024),
]


@pytest.mark.parametrize(("text", "value", "milli"), VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_value_and_milli_value_round_away_from_zero(text: str, value: int, milli: int) -> None:
    quantity = parse_quantity(text)
    assert quantity.value() == value
    assert quantity.milli_value() == milli
    assert parse_value(text) == value
    assert parse_milli(text) == milli


# TestScaledValue: NewScaledQuantity(1, from).ScaledValue(to).
SCALED_CASES = [
    (-9, -9, 1), (-9, -6, 1), (-9, -3, 1), (-9, 0, 1),
    (-6, -9, 1000), (-6, -6, 1), (-6, -3, 1), (-6, 0, 1),
    (-3, -9, 10**6), (-3, -6, 1000), (-3, -3, 1), (-3, 0, 1),
    (0, -9, 10**9), (0, -6, 10**6), (0, -3, 1000), (0, 0, 1),
    (2, -2, 100 * 100),
]  # fmt: skip


@pytest.mark.parametrize(
    ("from_scale", "to_scale", "expected"), SCALED_CASES, ids=[f"1e{f}-in-1e{t}" for f, t, _ in SCALED_CASES]
)
def test_scaled_value(from_scale: int, to_scale: int, expected: int) -> None:
    assert Quantity(10 ** (from_scale + 9)).scaled_value(to_scale) == expected


# TestQuantityCmp.
CMP_CASES = [("0", "0", 0), ("100m", "50m", 1), ("50m", "100m", -1), ("10000T", "100Gi", 1), ("1k", "1e3", 0)]


@pytest.mark.parametrize(("x", "y", "expect"), CMP_CASES, ids=[f"{x}-vs-{y}" for x, y, _ in CMP_CASES])
def test_cmp(x: str, y: str, expect: int) -> None:
    a, b = parse_quantity(x), parse_quantity(y)
    assert a.cmp(b) == expect
    assert b.cmp(a) == -expect
    assert (a == b) is (expect == 0)
    assert (a < b) is (expect < 0)
    assert (a >= b) is (expect >= 0)


def test_equality_ignores_format_and_hash_agrees() -> None:
    values = [parse_quantity(s) for s in ("1k", "1000", "1e3", "1000000m", "0.9765625Ki")]
    assert len({q.format for q in values}) == 3
    assert len(set(values)) == 1
    assert all(hash(q) == hash(values[0]) for q in values)
    assert sorted([parse_quantity("1Gi"), parse_quantity("1G"), parse_quantity("1")]) == [
        parse_quantity("1"),
        parse_quantity("1G"),
        parse_quantity("1Gi"),
    ]
    assert parse_quantity("1") != 1  # no implicit comparison with plain numbers


# TestQuantityAddZeroPreservesSuffix / TestQuantitySubZeroPreservesSuffix.
@pytest.mark.parametrize("text", ["100m", "1Gi"])
def test_zero_operand_preserves_suffix(text: str) -> None:
    value, zero = parse_quantity(text), parse_quantity("0")
    assert str(value + zero) == text
    assert str(zero + value) == text
    assert str(value - zero) == text
    assert str(zero - value) == str(-value) == "-" + text


# TestAdd / TestSub: the receiver keeps its format unless it is zero.
ARITH_CASES = [
    ("add-same-format", Quantity(dec(10, 0)), "+", Quantity(dec(1, 1)), dec(20, 0), DSI),
    ("add-keeps-left-format", Quantity(dec(10, 0)), "+", Quantity(dec(1, 0), BSI), dec(11, 0), DSI),
    ("add-keeps-left-binary", Quantity(dec(10, 0), BSI), "+", Quantity(dec(1, 0)), dec(11, 0), BSI),
    ("add-to-zero-adopts-format", Quantity(0, DSI), "+", Quantity(dec(50, 0), BSI), dec(50, 0), BSI),
    ("sub-to-zero", Quantity(dec(10, 0)), "-", Quantity(dec(1, 1)), 0, DSI),
    ("sub-keeps-left-binary", Quantity(dec(10, 0), BSI), "-", Quantity(dec(1, 0)), dec(9, 0), BSI),
    ("sub-from-zero-adopts-format", Quantity(0, DSI), "-", Quantity(dec(50, 0), DEXP), dec(-50, 0), DEXP),
]


@pytest.mark.parametrize(
    ("left", "op", "right", "nanos", "fmt"), [c[1:] for c in ARITH_CASES], ids=[c[0] for c in ARITH_CASES]
)
def test_add_sub(left: Quantity, op: str, right: Quantity, nanos: int, fmt: Format) -> None:
    result = left + right if op == "+" else left - right
    assert result.nanos == nanos
    assert result.format is fmt


def test_neg_and_mul() -> None:
    """TestQuantityNeg, TestMul: exact, format kept."""
    assert str(-parse_quantity("9.01")) == "-9010m"
    assert (Quantity.from_int(MAX_INT64) * 2).value() == 2 * MAX_INT64
    assert 3 * parse_quantity("1Gi") == parse_quantity("3Gi")
    assert (parse_quantity("1Gi") * 3).format is BSI
    with pytest.raises(TypeError):
        _ = parse_quantity("1") * 1.5  # type: ignore[operator]


# TestMilliNewSet / TestNewSet.
CONSTRUCTOR_CASES = [
    ("milli-1", Quantity.from_milli(1), "1m"),
    ("milli-1000", Quantity.from_milli(1000), "1"),
    ("milli-1234000", Quantity.from_milli(1234000), "1234"),
    ("milli-1024-binary-prints-decimal", Quantity.from_milli(1024, BSI), "1024m"),
    ("milli-1Mi-binary-prints-decimal", Quantity.from_milli(1024 * 1024, BSI), "1048576m"),
    ("milli-exponent", Quantity.from_milli(1000000, DEXP), "1e3"),
    ("int-1", Quantity.from_int(1), "1"),
    ("int-1000", Quantity.from_int(1000), "1k"),
    ("int-1234000", Quantity.from_int(1234000), "1234k"),
    ("int-1024-binary", Quantity.from_int(1024, BSI), "1Ki"),
    ("int-1Mi-binary", Quantity.from_int(1024 * 1024, BSI), "1Mi"),
    ("int-exponent", Quantity.from_int(1000000, DEXP), "1e6"),
]


@pytest.mark.parametrize(
    ("quantity", "expect"), [c[1:] for c in CONSTRUCTOR_CASES], ids=[c[0] for c in CONSTRUCTOR_CASES]
)
def test_constructors(quantity: Quantity, expect: str) -> None:
    assert str(quantity) == expect


# TestJSONWhitespace and the JSON number forms: Quantity.parse is UnmarshalJSON.
JSON_CASES: list[tuple[str, str | int | float, str]] = [
    ("leading-space", " 1", "1"),
    ("trailing-space", "1 ", "1"),
    ("go-nbsp-is-space", "\u00a01Gi\n", "1Gi"),
    ("int", 10, "10"),
    ("negative-int", -1, "-1"),
    ("big-int-exact", 10**30, "1e30"),
    ("float", 1.5, "1500m"),
    ("float-tenth", 0.1, "100m"),
    ("float-exponent-form", 1e-05, "10e-6"),
]


@pytest.mark.parametrize(("raw", "expect"), [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES])
def test_json_boundary(raw: str | int | float, expect: str) -> None:
    assert str(Quantity.parse(raw)) == expect


@pytest.mark.parametrize(
    "raw",
    [True, None, [1], "\x1c1", float("nan"), float("inf"), 10**1000],
    ids=["bool", "null", "list", "python-only-whitespace", "nan", "inf", "huge-int"],
)
def test_json_boundary_rejects(raw: object) -> None:
    with pytest.raises(QuantityError):
        Quantity.parse(raw)  # type: ignore[arg-type]


def test_fast_helpers_are_cached_by_type() -> None:
    assert parse_milli("250m") == 250
    assert parse_milli(1) == 1000
    assert parse_value("1Gi") == 1024**3
    with pytest.raises(QuantityError):
        parse_milli(True)  # a cached 1 must not answer for True


def test_immutable_value_type() -> None:
    quantity = parse_quantity("1Gi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        quantity.nanos = 1  # type: ignore[misc]
    assert not hasattr(quantity, "__dict__")
    with pytest.raises(TypeError):
        Quantity(1.5)  # type: ignore[arg-type]
    assert repr(quantity) == "Quantity('1Gi', BinarySI)"
    assert quantity.as_fraction() == 1024**3
    assert parse_quantity("1.1Ki").as_approximate_float() == 1126.4  # TestStringQuantityAsApproximateFloat64


# --- properties -----------------------------------------------------------------------------------------

_decimal_nanos = st.one_of(
    st.integers(-(10**30), 10**30),
    st.builds(lambda m, k: m * 10**k, st.integers(-(10**6), 10**6), st.integers(0, 40)),
)
_binary_nanos = st.one_of(
    st.integers(-MAX_INT64 * NANO, MAX_INT64 * NANO),
    st.builds(lambda m, k: m * 1024**k * NANO, st.integers(-1023, 1023), st.integers(0, 6)).filter(
        lambda n: abs(n) <= MAX_INT64 * NANO
    ),
    st.builds(lambda m: m * NANO // 1000, st.integers(-(10**7), 10**7)),
)
quantities = st.one_of(
    st.builds(Quantity, _decimal_nanos, st.sampled_from([DSI, DEXP])),
    st.builds(Quantity, _binary_nanos, st.just(BSI)),  # |value| <= 2^63-1: parsing caps BinarySI
)


@settings(max_examples=300)
@given(quantities)
def test_parse_of_format_is_identity(quantity: Quantity) -> None:
    assert parse_quantity(str(quantity)) == quantity


@settings(max_examples=300)
@given(quantities)
def test_canonical_form_is_a_fixed_point(quantity: Quantity) -> None:
    once = str(parse_quantity(str(quantity)))
    if quantity.format is not BSI:
        assert once == str(quantity)
    # BinarySI integers with base-1024 exponent 0 print bare ("2000") and re-parse as DecimalSI ("2k");
    # one more round is always stable.
    assert str(parse_quantity(once)) == once


@settings(max_examples=200)
@given(quantities, quantities, st.integers(-1000, 1000))
def test_arithmetic_agrees_with_fractions(a: Quantity, b: Quantity, k: int) -> None:
    fa, fb = a.as_fraction(), b.as_fraction()
    assert (a + b).as_fraction() == fa + fb
    assert (a - b).as_fraction() == fa - fb
    assert (-a).as_fraction() == -fa
    assert (a * k).as_fraction() == fa * k
    assert a.cmp(b) == (fa > fb) - (fa < fb)
    assert (a < b) is (fa < fb)
    assert (a == b) is (fa == fb)


@settings(max_examples=200)
@given(quantities)
def test_milli_value_is_ceiling_away_from_zero(quantity: Quantity) -> None:
    value = quantity.as_fraction()
    sign = -1 if value < 0 else 1
    assert quantity.milli_value() == sign * math.ceil(abs(value) * 1000)
    assert quantity.value() == sign * math.ceil(abs(value))


_SUFFIX_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_EXPONENTS = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_suffixes = st.one_of(
    st.sampled_from(sorted(_SUFFIX_EXPONENTS) + sorted(_BINARY_EXPONENTS)),
    st.builds(lambda e, s, n: f"{e}{s}{n}", st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), st.integers(0, 40)),
)


@settings(max_examples=300)
@given(
    st.sampled_from(["", "+", "-"]),
    st.text("0123456789", max_size=22),
    st.none() | st.text("0123456789", max_size=22),
    _suffixes,
)
def test_parse_agrees_with_exact_reference(sign: str, whole: str, fraction: str | None, suffix: str) -> None:
    """Any well-formed string: exact value, rounded up to 1n, BinarySI capped, as quantity.go describes."""
    if not (whole or fraction):
        return  # digitless strings are pinned in the tables above
    text = sign + whole + ("" if fraction is None else "." + fraction)
    mantissa = Fraction(int(whole or "0")) + (Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0)
    fmt = DSI
    if suffix in _SUFFIX_EXPONENTS:
        exact = mantissa * Fraction(10) ** _SUFFIX_EXPONENTS[suffix]
    elif suffix in _BINARY_EXPONENTS:
        exact, fmt = mantissa * 2 ** _BINARY_EXPONENTS[suffix], BSI
    else:
        exact, fmt = mantissa * Fraction(10) ** int(suffix[1:]), DEXP
    nanos = math.ceil(exact * NANO)
    if fmt is BSI:
        nanos = min(nanos, MAX_INT64 * NANO)
        if 0 < nanos < NANO:
            fmt = DSI
    got = parse_quantity(text + suffix)
    assert got.nanos == (-nanos if sign == "-" else nanos)
    assert got.format is fmt
