"""Kubernetes ``resource.Quantity``: parsing, exact arithmetic and canonical output, as apimachinery does it.

Upstream is ``k8s.io/apimachinery/pkg/api/resource`` (``quantity.go``, ``suffix.go``, ``amount.go``); the
behaviour pinned in ``tests/api/test_quantity.py`` comes from its ``quantity_test.go``.

Representation and invariants
-----------------------------
A :class:`Quantity` is ``nanos`` (an exact Python int, the value times 10^9) plus a :class:`Format` tag.
Every quantity that parsing can produce is a whole number of nano-units, because upstream rounds any non-zero
value below 1n *up* (away from zero) to the next nano when parsing ("if you want some resources, you should
get some resources"). Sums, differences, negations and integer multiples of such values stay whole nanos, so
one int is an exact representation: no floats anywhere, equality and ordering are int comparisons, and the
hash is consistent with ``==`` (which, as upstream's ``Cmp``/``Equal``, ignores the format).

The format is remembered from the suffix the value was written with and decides the canonical output
(``str(q)``): the mantissa is an integer, the exponent is a multiple of 3 (or of 10 for binary suffixes) and
as large as possible, so ``"1000m"`` prints ``"1"``, ``"1.5Gi"`` prints ``"1536Mi"``, ``"0.1"`` prints
``"100m"``. BinarySI values that are not whole numbers, or lie strictly between -1024 and 1024, print as
DecimalSI; decimal exponents with no SI suffix (beyond ``E``) and binary exponents beyond ``Ei`` fall back to
exponent notation, as upstream does since it stopped dropping the magnitude there.

Grammar: ``[+-]? digits? ('.' digits?)? suffix`` with suffix one of ``"" n u m k M G T P E``,
``Ki Mi Gi Ti Pi Ei`` or ``e``/``E`` followed by a signed integer of at most 2^31-1 in magnitude. Like
upstream's scanner, the number part may be empty, so bare suffixes such as ``"Ki"``, ``"m"``, ``"-"`` or
``"."`` parse as zero (kubernetes/apimachinery#165, never changed); where upstream's decimal fallback path
needs digits (an exponent below -9, or ``Pi``/``Ei``) a digitless string is an error, as there.

Deliberate deviations (none reachable by a sane manifest)
--------------------------------------------------------
* Magnitudes of 10^1000 or more are rejected (upstream accepts exponents up to 2^31-1 and would allocate the
  digits); the error says so.
* ``value()``/``milli_value()``/``scaled_value()`` return exact ints instead of wrapping or saturating at
  int64 as upstream's ``ScaledValue`` does.
* JSON numbers arrive as Python floats, so a JSON ``1e5`` is seen as ``100000.0`` (DecimalSI ``100k``,
  upstream keeps DecimalExponent ``100e3``); the value is the same.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

__all__ = [
    "NANO",
    "Format",
    "Quantity",
    "QuantityError",
    "parse_milli",
    "parse_quantity",
    "parse_value",
]

NANO = 10**9
"""Nano-units per unit: ``Quantity.nanos`` is the value times this."""

_MAX_INT64 = 2**63 - 1
_MAX_INT32 = 2**31 - 1
_BINARY_CAP_NANOS = _MAX_INT64 * NANO  # upstream caps parsed BinarySI magnitudes at 2^63-1
_MAX_INTEGER_DIGITS = 1000  # kubeplane's own bound: |value| < 10^1000
_BINARY_FRACTION_DIGITS = 80  # >= 9 + 60 fraction digits decide a binary value's rounding exactly

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_ERR_FORMAT = f"quantities must match the regular expression '{_SPLIT_RE}'"
_ERR_NUMERIC = "unable to parse numeric part of quantity"
_ERR_SUFFIX = "unable to parse quantity's suffix"

# The upstream scanner as one regular expression: sign, leading zeros, integer digits, optional fraction,
# then suffix letters, an optional sign and digits. Matching greedily splits exactly where the scanner does.
_SCANNER = re.compile(r"([+-]?)(0*)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[+-]?[0-9]+")
# Go's unicode.IsSpace, which strings.TrimSpace (used by UnmarshalJSON) strips.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(map(chr, range(0x2000, 0x200B)))


class Format(enum.StrEnum):
    """How a quantity is written; the value is the same whatever the format."""

    DECIMAL_EXPONENT = "DecimalExponent"  # 12e6
    BINARY_SI = "BinarySI"  # 12Mi (12 * 2^20)
    DECIMAL_SI = "DecimalSI"  # 12M (12 * 10^6)


class QuantityError(ValueError):
    """A string (or JSON value) that is not a Kubernetes quantity; the message names it and says why.
    ``reason`` is upstream's error alone (``ErrFormatWrong``, ``ErrNumeric``, ``ErrSuffix`` ...), which is what
    kube-apiserver answers for a body that holds such a quantity."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}  # fmt: skip
_BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]  # index: power of 1024


def _error(text: str, reason: str) -> QuantityError:
    return QuantityError(f"invalid quantity {text!r}: {reason}", reason)


def _interpret(text: str, suffix: str) -> tuple[int, int, Format]:
    """``(base, exponent, format)`` of a suffix, as upstream's suffixer; raises for an unknown suffix."""
    exponent = _DECIMAL_SUFFIXES.get(suffix)
    if exponent is not None:
        return 10, exponent, Format.DECIMAL_SI
    exponent = _BINARY_SUFFIXES.get(suffix)
    if exponent is not None:
        return 2, exponent, Format.BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT.fullmatch(suffix, 1):
        exponent = int(suffix[1:])
        # an exponent outside the int32 scale is rejected rather than truncated (upstream, 1.3x)
        if -_MAX_INT32 <= exponent <= _MAX_INT32:
            return 10, exponent, Format.DECIMAL_EXPONENT
    raise _error(text, _ERR_SUFFIX)


def _pow10(exponent: int) -> int:
    """10^exponent for ``exponent >= 0`` (typed: ``int ** int`` is not an int to mypy)."""
    result: int = 10**exponent
    return result


def _too_large(text: str) -> QuantityError:
    return _error(text, f"magnitude must be below 10^{_MAX_INTEGER_DIGITS} (kubeplane limit)")


def _decimal_nanos(text: str, digits: str, shift: int) -> int:
    """``ceil(int(digits) * 10^shift)`` for non-empty ``digits`` without leading zeros (so non-zero)."""
    if len(digits) + shift - 9 > _MAX_INTEGER_DIGITS:
        raise _too_large(text)
    if shift >= 0:
        return int(digits) * _pow10(shift)
    drop = -shift
    if drop >= len(digits):
        return 1  # below 1n: rounds up to 1n
    head, tail = digits[:-drop], digits[-drop:]
    return int(head) + (1 if tail.strip("0") else 0)


def _binary_nanos(num: str, denom: str, exponent: int) -> int:
    """``ceil(num.denom * 2^exponent * 10^9)`` capped at 2^63-1 units; ``num`` has no leading zeros."""
    if len(num) > 19:  # >= 10^19 > 2^63-1 even before the suffix: capped
        return _BINARY_CAP_NANOS
    sticky = False
    if len(denom) > _BINARY_FRACTION_DIGITS:
        # 10^80 is a multiple of 2^60 * 10^9, so digits past the 80th only decide "round up by one".
        sticky = bool(denom[_BINARY_FRACTION_DIGITS:].strip("0"))
        denom = denom[:_BINARY_FRACTION_DIGITS]
    numerator = int(num + denom or "0") * (NANO << exponent)
    quotient, remainder = divmod(numerator, _pow10(len(denom)))
    nanos = quotient + (1 if remainder or sticky else 0)
    return min(nanos, _BINARY_CAP_NANOS)


@lru_cache(maxsize=8192)
def _parse(text: str) -> Quantity:
    if text == "0":
        return _ZERO
    match = _SCANNER.fullmatch(text) if text else None
    if match is None:
        raise _error(text, _ERR_FORMAT)
    sign, zeros, num, denom, suffix = match.group(1, 2, 3, 4, 5)
    denom = denom or ""
    base, exponent, fmt = _interpret(text, suffix)
    if not (zeros or num or denom):
        # Upstream's fast path turns an empty number into 0; its inf.Dec fallback needs a digit.
        slow = 13 - exponent * 3 // 10 < 0 if base == 2 else exponent < -9
        if slow:
            raise _error(text, _ERR_NUMERIC)
        return Quantity(0, fmt)
    if base == 2:
        nanos = _binary_nanos(num, denom, exponent)
        if 0 < nanos < NANO:
            fmt = Format.DECIMAL_SI  # a fraction of a unit cannot be written in binary
    else:
        digits = (num + denom).lstrip("0")
        nanos = _decimal_nanos(text, digits, exponent - len(denom) + 9) if digits else 0
    return Quantity(-nanos if sign == "-" else nanos, fmt)


def parse_quantity(text: str) -> Quantity:
    """Parse a quantity string exactly as upstream ``ParseQuantity`` (no surrounding whitespace allowed).

    Raises :class:`QuantityError` naming ``text``. Results are cached; quantities are immutable.
    """
    return _parse(text)


def _away_from_zero(nanos: int, divisor: int) -> int:
    """``nanos / divisor`` rounded to an int away from zero, as upstream's ``ScaledValue``."""
    magnitude = -(-abs(nanos) // divisor)
    return -magnitude if nanos < 0 else magnitude


@lru_cache(maxsize=8192)
def _canonical(nanos: int, fmt: Format) -> str:
    """Upstream ``CanonicalizeBytes`` for the value ``nanos * 10^-9`` written in ``fmt``."""
    if nanos == 0:
        return "0"
    sign = "-" if nanos < 0 else ""
    magnitude = abs(nanos)
    if fmt is Format.BINARY_SI:
        if magnitude < 1024 * NANO or magnitude % NANO:
            fmt = Format.DECIMAL_SI  # small or fractional: show exactly, as DecimalSI
        else:
            units = magnitude // NANO
            power = ((units & -units).bit_length() - 1) // 10
            if power < len(_BINARY_BY_POWER):
                return f"{sign}{units >> (10 * power)}{_BINARY_BY_POWER[power]}"
            fmt = Format.DECIMAL_EXPONENT  # beyond Ei: exact decimal instead of a dropped suffix
    digits = str(magnitude)
    mantissa = digits.rstrip("0")
    exponent = len(digits) - len(mantissa) - 9
    pad = exponent % 3
    mantissa += "0" * pad
    exponent -= pad
    suffix = _DECIMAL_BY_EXPONENT.get(exponent) if fmt is Format.DECIMAL_SI else None
    if suffix is None:
        suffix = f"e{exponent}" if exponent else ""
    return f"{sign}{mantissa}{suffix}"


@dataclass(frozen=True, slots=True, eq=False)
class Quantity:
    """An exact, immutable resource quantity: ``nanos * 10^-9`` written in ``format``.

    ``==``, ordering and ``hash`` use the value only (``Quantity(1000 * NANO, BINARY_SI) == parse("1k")``);
    ``str()`` is the canonical form upstream serialises. Adding to or subtracting from a zero quantity
    adopts the other operand's format, as upstream's ``Add``/``Sub``.
    """

    nanos: int
    format: Format = Format.DECIMAL_SI

    def __post_init__(self) -> None:
        if type(self.nanos) is not int:
            raise TypeError(f"Quantity.nanos must be an int, got {type(self.nanos).__name__}")
        if not isinstance(self.format, Format):
            raise TypeError(f"Quantity.format must be a Format, got {self.format!r}")

    @classmethod
    def parse(cls, value: str | int | float) -> Quantity:
        """The JSON boundary (upstream ``UnmarshalJSON``): a string, with surrounding whitespace trimmed as
        the API server does, or a JSON number (int or float). Raises :class:`QuantityError`."""
        if isinstance(value, str):
            return _parse(value.strip(_GO_SPACE))
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise QuantityError(f"invalid quantity {value!r}: must be a string or a number")
        if isinstance(value, int):
            if abs(value) >= 10**_MAX_INTEGER_DIGITS:
                raise _too_large("<integer>")
            return _parse(str(value))
        return _parse(repr(value))

    @classmethod
    def from_int(cls, value: int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``value`` units (upstream ``NewQuantity``)."""
        return cls(value * NANO, format)

    @classmethod
    def from_milli(cls, value: int, format: Format = Format.DECIMAL_SI) -> Quantity:
        """``value`` thousandths of a unit (upstream ``NewMilliQuantity``)."""
        return cls(value * (NANO // 1000), format)

    def __str__(self) -> str:
        return _canonical(self.nanos, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, {self.format.value})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.nanos == other.nanos
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.nanos)

    def __lt__(self, other: object) -> bool:
        return self.nanos < other.nanos if isinstance(other, Quantity) else NotImplemented

    def __le__(self, other: object) -> bool:
        return self.nanos <= other.nanos if isinstance(other, Quantity) else NotImplemented

    def __gt__(self, other: object) -> bool:
        return self.nanos > other.nanos if isinstance(other, Quantity) else NotImplemented

    def __ge__(self, other: object) -> bool:
        return self.nanos >= other.nanos if isinstance(other, Quantity) else NotImplemented

    def __add__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self.nanos + other.nanos, other.format if self.nanos == 0 else self.format)

    def __sub__(self, other: object) -> Quantity:
        if not isinstance(other, Quantity):
            return NotImplemented
        return Quantity(self.nanos - other.nanos, other.format if self.nanos == 0 else self.format)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    def __mul__(self, factor: int) -> Quantity:
        if type(factor) is not int:
            return NotImplemented
        return Quantity(self.nanos * factor, self.format)

    __rmul__ = __mul__

    def cmp(self, other: Quantity) -> int:
        """-1, 0 or 1 as upstream ``Cmp``."""
        return (self.nanos > other.nanos) - (self.nanos < other.nanos)

    def sign(self) -> int:
        """-1, 0 or 1."""
        return (self.nanos > 0) - (self.nanos < 0)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def scaled_value(self, scale: int) -> int:
        """The value in units of 10^scale, rounded away from zero (upstream ``ScaledValue``)."""
        if scale <= -9:
            return self.nanos * _pow10(-9 - scale)
        return _away_from_zero(self.nanos, _pow10(scale + 9))

    def value(self) -> int:
        """Whole units, rounded away from zero (upstream ``Value``): ``1500m`` -> 2, ``-1500m`` -> -2."""
        return _away_from_zero(self.nanos, NANO)

    def milli_value(self) -> int:
        """Thousandths, rounded away from zero (upstream ``MilliValue``): ``0.0005`` -> 1."""
        return _away_from_zero(self.nanos, NANO // 1000)

    def as_fraction(self) -> Fraction:
        """The exact value."""
        return Fraction(self.nanos, NANO)

    def as_approximate_float(self) -> float:
        """The value as the nearest float (``inf`` when out of range)."""
        try:
            return self.nanos / NANO
        except OverflowError:
            return float("inf") if self.nanos > 0 else float("-inf")


_ZERO = Quantity(0, Format.DECIMAL_SI)


@lru_cache(maxsize=8192, typed=True)
def parse_milli(value: str | int | float) -> int:
    """``Quantity.parse(value).milli_value()``, cached: the scheduler's hot path for cpu."""
    return Quantity.parse(value).milli_value()


@lru_cache(maxsize=8192, typed=True)
def parse_value(value: str | int | float) -> int:
    """``Quantity.parse(value).value()``, cached: the scheduler's hot path for memory, storage, counts."""
    return Quantity.parse(value).value()
