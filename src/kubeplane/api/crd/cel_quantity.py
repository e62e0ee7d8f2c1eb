"""The Kubernetes CEL ``quantity`` library (k8s.io/apiserver pkg/cel/library/quantity.go) for cel-python.

Parsing follows apimachinery's ``resource.ParseQuantity`` (pkg/api/resource/quantity.go
``parseQuantityString`` and the suffixer): a sign, digits, an optional fraction, then a suffix that is a
binary-SI (``Ki`` .. ``Ei``), decimal-SI (``n u m k M G T P E``) or decimal-exponent (``e3``, ``E-2``) one,
with upstream's three errors. Values are exact (``Decimal``), so comparisons and sums are exact as
``inf.Dec``'s; ``asInteger`` fails with ``cannot convert value to integer`` outside int64 or for a fraction;
``mul``, ``div`` (rounded half up to 4 or the given 0..10 decimals) and ``divInt`` by an integer.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from celpy import celtypes

from .cel_types import error

__all__ = ["FUNCTIONS", "Quantity", "parse_quantity"]

SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT = f"quantities must match the regular expression '{SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"

_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_CTX = decimal.Context(prec=200)
_INT64 = (-(2**63), 2**63 - 1)


class Quantity:
    """A parsed quantity; equality and order are numeric (``Quantity.Cmp``)."""

    __slots__ = ("text", "value")

    def __init__(self, value: Decimal, text: str = "") -> None:
        self.value = value
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.text or self.value})"


def _split(text: str) -> tuple[str, str, str, str]:
    """``parseQuantityString``: (sign and digits, numerator, denominator, suffix); ValueError(ERR_FORMAT)."""
    pos, end = 0, len(text)
    if pos < end and text[0] in "+-":
        pos += 1
    start = pos
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        dstart = pos
        while pos < end and text[pos].isdigit() and text[pos].isascii():
            pos += 1
        denom = text[dstart:pos]
    suffix_start = pos
    while pos < end and text[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    if pos < end:
        raise ValueError(ERR_FORMAT)
    return text[:1] if text[:1] in "+-" else "", num, denom, text[suffix_start:]


def _multiplier(suffix: str) -> Decimal:
    if suffix in _BINARY:
        return Decimal(2) ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return Decimal(10) ** _DECIMAL[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            exponent = int(suffix[1:])
        except ValueError:
            raise ValueError(ERR_SUFFIX) from None
        return _CTX.power(Decimal(10), exponent)
    raise ValueError(ERR_SUFFIX)


def parse_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``; ValueError with upstream's message when ``text`` is not a quantity."""
    if not text:
        raise ValueError(ERR_FORMAT)
    sign, num, denom, suffix = _split(text)
    multiplier = _multiplier(suffix)
    try:
        magnitude = Decimal(f"{num}.{denom or '0'}")
    except decimal.InvalidOperation:
        raise ValueError(ERR_NUMERIC) from None
    value = _CTX.multiply(magnitude, multiplier)
    if value != 0 and value.copy_abs() < Decimal("1e-9"):  # upstream rounds below nano up to 1n
        value = Decimal("1e-9")
    return Quantity(-value if sign == "-" else value, text)


def _quantity(s: Any) -> Any:
    if not isinstance(s, str):
        raise TypeError("quantity")
    try:
        return parse_quantity(str(s))
    except ValueError as exc:
        return error(str(exc))


def _is_quantity(s: Any) -> Any:
    if not isinstance(s, str):
        raise TypeError("isQuantity")
    try:
        parse_quantity(str(s))
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _q(value: Any) -> Quantity:
    if not isinstance(value, Quantity):
        raise TypeError("quantity expected")
    return value


def _as_int64(q: Quantity) -> int | None:
    if q.value != q.value.to_integral_value():
        return None
    n = int(q.value)
    return n if _INT64[0] <= n <= _INT64[1] else None


def _sign(q: Any) -> Any:
    v = _q(q).value
    return celtypes.IntType((v > 0) - (v < 0))


def _is_integer(q: Any) -> Any:
    return celtypes.BoolType(_as_int64(_q(q)) is not None)


def _as_integer(q: Any) -> Any:
    n = _as_int64(_q(q))
    return error("cannot convert value to integer") if n is None else celtypes.IntType(n)


def _as_approximate_float(q: Any) -> Any:
    return celtypes.DoubleType(float(_q(q).value))


def _operand(other: Any) -> Decimal:
    if isinstance(other, Quantity):
        return other.value
    if isinstance(other, int) and not isinstance(other, bool):
        return Decimal(int(other))
    raise TypeError("quantity or int expected")


def _add(q: Any, other: Any) -> Any:
    return Quantity(_CTX.add(_q(q).value, _operand(other)))


def _sub(q: Any, other: Any) -> Any:
    return Quantity(_CTX.subtract(_q(q).value, _operand(other)))


def _int_operand(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("int expected")
    return int(value)


def _mul(q: Any, n: Any) -> Any:
    return Quantity(_CTX.multiply(_q(q).value, Decimal(_int_operand(n))))


_DIV_BY_ZERO = "internal error: division by zero error"  # upstream panics; cel-go reports the recovered panic


def _div(q: Any, n: Any, places: Any = None) -> Any:
    """``div``: the quotient rounded half up to ``places`` decimals (4 unless given; 0 to 10)."""
    value, denominator = _q(q).value, _int_operand(n)
    if denominator == 0:
        return error(_DIV_BY_ZERO)
    digits = 4 if places is None else _int_operand(places)
    if digits > 10 or digits < 0:
        return error(f"the valid range for roundVal is 0 to 10 but {digits} was passed")
    quotient = _CTX.divide(value, Decimal(denominator))
    return Quantity(quotient.quantize(Decimal(1).scaleb(-digits), rounding=decimal.ROUND_HALF_UP, context=_CTX))


def _div_int(q: Any, n: Any) -> Any:
    """``divInt``: the quotient truncated to an integer."""
    value, denominator = _q(q).value, _int_operand(n)
    if denominator == 0:
        return error(_DIV_BY_ZERO)
    quotient = _CTX.divide(value, Decimal(denominator))
    return Quantity(quotient.to_integral_value(rounding=decimal.ROUND_DOWN, context=_CTX))


def _compare_to(q: Any, other: Any) -> Any:
    a, b = _q(q).value, _q(other).value
    return celtypes.IntType((a > b) - (a < b))


def _is_greater_than(q: Any, other: Any) -> Any:
    from .cel_semver import Semver, compare

    if isinstance(q, Semver):
        return celtypes.BoolType(compare(q, other) > 0)
    return celtypes.BoolType(_q(q).value > _q(other).value)


def _is_less_than(q: Any, other: Any) -> Any:
    from .cel_semver import Semver, compare

    if isinstance(q, Semver):
        return celtypes.BoolType(compare(q, other) < 0)
    return celtypes.BoolType(_q(q).value < _q(other).value)


def compare_to(q: Any, other: Any) -> Any:
    """``compareTo`` for quantities and semvers (both libraries declare it)."""
    from .cel_semver import Semver, compare

    if isinstance(q, Semver):
        return celtypes.IntType(compare(q, other))
    return _compare_to(q, other)


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": _sign,
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": _as_approximate_float,
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "div": _div,
    "divInt": _div_int,
    "compareTo": compare_to,
    "isGreaterThan": _is_greater_than,
    "isLessThan": _is_less_than,
}
