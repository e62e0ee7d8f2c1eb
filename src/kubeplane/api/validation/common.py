"""Small rules and helpers that validators of more than one kind share, each written once.

Upstream keeps these in ``pkg/apis/core/validation`` (``ValidateNonnegativeField``, ``ValidatePortNumOrName``,
``ValidateImmutableField``), ``pkg/apis/apps/validation`` (``ValidatePositiveIntOrPercent``,
``IsNotMoreThan100Percent``, which policy reuses) and apimachinery's ``apiequality.Semantic``. Everything here is
pure: values and paths in, errors out (``validate_*``), or a :class:`~.reader.Reader` whose ``errs`` receive
the errors (``check_*`` and the ``read_*`` helpers that read and check at once).

Invariants
    * Messages are upstream's, byte for byte: clients match on them.
    * :func:`semantic` is the one equality for "did this change": kinds choose whether zero values count as
      absent (core/v1 non-pointer fields) and whether resource lists compare by quantity value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

from kubeplane.api import labels
from kubeplane.api.validation import field, names
from kubeplane.api.validation.field import ErrorList, Path
from kubeplane.api.validation.reader import Reader, parse_quantity, type_error

__all__ = [
    "IMMUTABLE_MSG",
    "MAX_INT32",
    "NEGATIVE_MSG",
    "PROTOCOLS",
    "CreateValidator",
    "UpdateValidator",
    "check_enum",
    "int_or_percent_value",
    "invalid_each",
    "is_ipv6",
    "is_not_more_than_100_percent",
    "normalize",
    "read_nonnegative",
    "read_optional_nonnegative",
    "semantic",
    "spec_diff",
    "utf8_len",
    "validate_immutable_field",
    "validate_nonnegative_field",
    "validate_port_num_or_name",
    "validate_positive_int_or_percent",
]

CreateValidator: TypeAlias = Callable[[Mapping[str, Any]], ErrorList]
"""``validate(obj)`` for a create; the registry's tables map ``(group, kind)`` to one."""
UpdateValidator: TypeAlias = Callable[[Mapping[str, Any], Mapping[str, Any]], ErrorList]
"""``validate(new, old)`` for an update of the main resource or of the ``/status`` subresource."""

NEGATIVE_MSG: Final = "must be greater than or equal to 0"
IMMUTABLE_MSG: Final = "field is immutable"
MAX_INT32: Final = 2**31 - 1
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")  # sets.List order: sorted


def utf8_len(s: str) -> int:
    """Go's ``len`` of a string: its UTF-8 bytes."""
    return len(s.encode("utf-8", "surrogatepass"))


def is_ipv6(ip: str) -> bool:
    """``ip`` is a valid IPv6 address (the family test of upstream's dual-stack rules)."""
    return not names.is_valid_ipv6_address(None, ip)


def invalid_each(path: Path | None, value: object, msgs: list[str]) -> ErrorList:
    """One ``Invalid value`` per message of a ``names.is_*`` check (none when the value passed)."""
    return [field.invalid(path, value, detail=m) for m in msgs]


def check_enum(r: Reader, key: str, allowed: tuple[str, ...], *, required: bool = True) -> None:
    """A string member that must be one of ``allowed``: ``Required value`` when empty (if ``required``),
    ``Unsupported value`` when unknown."""
    value = r.string(key)
    if not value:
        if required:
            r.errs.append(field.required(r.at(key)))
    elif value not in allowed:
        r.errs.append(field.not_supported(r.at(key), value, supported=allowed))


# --- numbers ------------------------------------------------------------------------------------------------


def validate_nonnegative_field(value: int, path: Path) -> ErrorList:
    """Upstream ``ValidateNonnegativeField``."""
    return [field.invalid(path, value, detail=NEGATIVE_MSG)] if value < 0 else []


def read_nonnegative(r: Reader, *keys: str, bits: int | None = None) -> dict[str, int]:
    """Reads integer members (absent is Go's 0), appending ``ValidateNonnegativeField`` errors in order."""
    out: dict[str, int] = {}
    for key in keys:
        value = r.integer(key, bits=bits)
        out[key] = 0 if value is None else value
        r.errs.extend(validate_nonnegative_field(out[key], r.at(key)))
    return out


def read_optional_nonnegative(r: Reader, key: str, *, bits: int | None = None) -> int | None:
    """Reads an optional integer member (a Go pointer), checking ``ValidateNonnegativeField`` only when set."""
    value = r.integer(key, None, bits=bits)
    if value is not None:
        r.errs.extend(validate_nonnegative_field(value, r.at(key)))
    return value


def _percent(value: int | str) -> int | None:
    """Upstream ``getPercentValue``: the number of a valid ``"N%"``, else None."""
    if isinstance(value, str) and not names.is_valid_percent(value):
        return int(value[:-1])
    return None


def int_or_percent_value(value: int | str) -> int:
    """Upstream ``getIntOrPercentValue``: a percent's number, an int, or a string read as Go's ``Atoi`` (0)."""
    pct = _percent(value)
    if pct is not None:
        return pct
    if isinstance(value, int):
        return value
    return labels.parse_int64(value) or 0


def validate_positive_int_or_percent(value: int | str, path: Path) -> ErrorList:
    """Upstream ``ValidatePositiveIntOrPercent``: a non-negative int or a valid percent string."""
    if isinstance(value, str):
        return invalid_each(path, value, names.is_valid_percent(value))
    return validate_nonnegative_field(value, path)


def is_not_more_than_100_percent(value: int | str, path: Path) -> ErrorList:
    """Upstream ``IsNotMoreThan100Percent`` (ints are not percentages and always pass)."""
    pct = _percent(value)
    if pct is None or pct <= 100:
        return []
    return [field.invalid(path, value, detail="must not be greater than 100%")]


def validate_port_num_or_name(r: Reader, key: str) -> ErrorList:
    """Upstream ``ValidatePortNumOrName`` on an IntOrString member: a port number or an IANA service name.

    An absent member is Go's zero value, port 0, which is not a valid port number.
    """
    raw = r.data.get(key, 0)
    path = r.at(key)
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        return [type_error(path, raw, "integer or string", dialect=r.dialect)]
    if isinstance(raw, int):
        return invalid_each(path, raw, names.is_valid_port_num(raw))
    return invalid_each(path, raw, names.is_valid_port_name(raw))


# --- semantic equality ------------------------------------------------------------------------------------

_RESOURCE_LISTS: Final = ("limits", "requests", "overhead", "capacity")


def semantic(value: Any, *, omit_zero: bool = False, quantities: bool = False) -> Any:
    """``value`` normalised so that ``==`` is upstream's ``apiequality.Semantic.DeepEqual`` on JSON.

    Null members and empty objects and lists are always dropped: Go treats nil and empty maps and slices
    alike, and on the wire either may also be a missing member. ``omit_zero`` drops ``""``, ``0`` and ``false``
    too, for objects whose fields are Go non-pointer fields (core/v1 reads an absent one as its zero value; a
    change between an explicit zero and an absent *pointer* field is then not seen). ``quantities`` compares
    the entries of resource lists (``limits``, ``requests``, ``overhead``, ``capacity``) by value, as
    Semantic's ``Quantity`` equality does. (A nil pointer and a pointer to an empty struct compare equal too,
    which upstream would not tell apart; no field compared here can after defaulting.)
    """
    return _semantic(value, "", omit_zero=omit_zero, quantities=quantities)


def _semantic(value: Any, key: str, *, omit_zero: bool, quantities: bool) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if quantities and key in _RESOURCE_LISTS and isinstance(v, str | int | float):
                q = parse_quantity(v)
                nv: Any = v if q is None else q
            else:
                nv = _semantic(v, k, omit_zero=omit_zero, quantities=quantities)
            if not _is_empty(nv, omit_zero=omit_zero):
                out[k] = nv
        return out
    if isinstance(value, list):
        return [_semantic(v, key, omit_zero=omit_zero, quantities=quantities) for v in value]
    return value


def _is_empty(value: Any, *, omit_zero: bool) -> bool:
    if value is None or (isinstance(value, dict | list) and not value):
        return True
    return omit_zero and isinstance(value, str | int) and not value  # bool is an int: False is dropped too


def normalize(value: Any) -> Any:
    """:func:`semantic` for core/v1 objects: zero values count as absent, quantities compare by value."""
    return semantic(value, omit_zero=True, quantities=True)


def validate_immutable_field(new: Any, old: Any, path: Path) -> ErrorList:
    """Upstream ``ValidateImmutableField`` (core/v1 equality): ``Invalid value: <new>: field is immutable``."""
    return [] if normalize(new) == normalize(old) else [field.invalid(path, new, detail=IMMUTABLE_MSG)]


def _show(value: Any) -> str:
    return json.dumps(value, default=str, separators=(",", ":"), sort_keys=True)


def _diff(old: Any, new: Any, path: str, out: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            _diff(old.get(k), new.get(k), f"{path}.{k}", out)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _diff(a, b, f"{path}[{i}]", out)
    else:
        out.append(f"{path}: {_show(old)} -> {_show(new)}")


def spec_diff(old: Any, new: Any, path: str) -> str:
    """``<path>: <old> -> <new>`` per changed field of two normalized values (kubeplane's ``cmp.Diff``).

    Upstream prints ``cmp.Diff`` of the Go structs after "may not change" errors; one line per changed field,
    values as JSON, carries the same information.
    """
    out: list[str] = []
    _diff(old, new, path, out)
    return "\n".join(out)
