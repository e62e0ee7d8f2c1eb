"""Field paths and field-level validation errors, as apimachinery's ``util/validation/field``.

A :class:`Path` names a position inside an object (``spec.containers[0].resources.requests[cpu]``); an
:class:`Error` pairs a path with an :class:`ErrorType`, the offending value and a detail. ``str(error)`` is
byte-for-byte upstream's ``Error.Error()``, because the API server turns these into the ``causes`` of a 422
``Status`` and clients (kubectl, the Python client, people's scripts) match on the text.

Invariants
    * Paths and errors are immutable; building a child path never changes its parent, so a prefix path can be
      shared by every error found below it.
    * An error list is a plain ``list[Error]``; the helpers below return new lists and never mutate.

Rendering of bad values (upstream ``ErrorBody``): ``Required``, ``Forbidden``, ``TooLong`` and ``Internal``
never show the value; the others show it as Go would: strings double-quoted with Go's ``%q`` escaping,
booleans as ``true``/``false``, numbers as Go's ``%v``, and anything else (``None``, dicts, lists) as compact,
HTML-safe JSON like Go's ``json.Marshal``. Dict keys keep their order: pass a dict in the Go struct's field
order (what upstream prints for a typed value) or sorted (what it prints for a Go map).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Final, TypeAlias

__all__ = [
    "OMIT_VALUE",
    "Error",
    "ErrorList",
    "ErrorType",
    "GoSyntax",
    "Path",
    "aggregate_message",
    "aggregate_text",
    "dedupe",
    "duplicate",
    "filter_out",
    "forbidden",
    "go_quote",
    "internal_error",
    "invalid",
    "new_path",
    "not_found",
    "not_supported",
    "prefix_detail",
    "required",
    "too_long",
    "too_long_characters",
    "too_many",
    "type_invalid",
    "with_origin",
]


@dataclass(frozen=True, slots=True)
class Path:
    """One element of a field path; the whole path is the chain of parents up to the root.

    As upstream, an element with an empty ``name`` is a ``[subscript]`` of its parent, so
    ``new_path("")`` renders as ``[]`` -- kept for fidelity, not something to rely on.
    """

    name: str
    subscript: str = ""
    parent: Path | None = None

    def root(self) -> Path:
        """The first element of this path."""
        p = self
        while p.parent is not None:
            p = p.parent
        return p

    def child(self, name: str, *more: str) -> Path:
        """``self.name`` (then ``.more[0]`` ...), upstream ``Path.Child``."""
        p = Path(name, parent=self)
        for n in more:
            p = Path(n, parent=p)
        return p

    def index(self, index: int) -> Path:
        """``self[index]`` for a list element (upstream ``Path.Index``)."""
        return Path("", subscript=str(index), parent=self)

    def key(self, key: str) -> Path:
        """``self[key]`` for a map entry, upstream ``Path.Key``; the key is not quoted."""
        return Path("", subscript=key, parent=self)

    def __str__(self) -> str:
        elems: list[Path] = []
        p: Path | None = self
        while p is not None:
            elems.append(p)
            p = p.parent
        parts: list[str] = []
        for e in reversed(elems):
            if e.name:
                if e.parent is not None:
                    parts.append(".")
                parts.append(e.name)
            else:
                parts.append(f"[{e.subscript}]")
        return "".join(parts)


def new_path(name: str, *more: str) -> Path:
    """A root path ``name.more[0].more[1]...`` (upstream ``field.NewPath``)."""
    p = Path(name)
    for n in more:
        p = Path(n, parent=p)
    return p


def _path_str(path: Path | None) -> str:
    return "<nil>" if path is None else str(path)


class ErrorType(enum.StrEnum):
    """Machine-readable reason; the value is the ``reason`` of a ``Status`` cause (``metav1.CauseType``)."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"

    @property
    def message(self) -> str:
        """The human text upstream's ``ErrorType.String()`` gives (``Required value``, ...)."""
        return _TYPE_MESSAGES[self]


_TYPE_MESSAGES: Final[dict[ErrorType, str]] = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.TYPE_INVALID: "Invalid value",
}

# Types whose body never shows the bad value (upstream ErrorBody's first case).
_VALUELESS: Final = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL})


class _OmitValue:
    """Sentinel bad value: the body shows the type only (upstream ``omitValue``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "OMIT_VALUE"


OMIT_VALUE: Final = _OmitValue()


@dataclass(frozen=True, slots=True)
class Error:
    """A field-level validation error; ``str()`` is upstream's ``Error.Error()``: ``<field>: <body>``."""

    type: ErrorType
    field: str
    bad_value: object
    detail: str = ""
    origin: str = ""
    """Which validation rule produced the error (upstream ``WithOrigin``); never part of the message."""

    def error_body(self) -> str:
        """The message without the field name (upstream ``ErrorBody``)."""
        if self.type in _VALUELESS or self.bad_value is OMIT_VALUE:
            s = self.type.message
        else:
            s = f"{self.type.message}: {_format_value(self.bad_value)}"
        if self.detail:
            s += f": {self.detail}"
        return s

    def with_origin(self, origin: str) -> Error:
        """A copy tagged with ``origin``."""
        return dataclasses.replace(self, origin=origin)

    def __str__(self) -> str:
        return f"{self.field}: {self.error_body()}"


ErrorList: TypeAlias = list[Error]


def not_found(path: Path | None, value: object) -> Error:
    """``Not found: <value>`` (upstream ``NotFound``)."""
    return Error(ErrorType.NOT_FOUND, _path_str(path), value)


def required(path: Path | None, detail: str = "") -> Error:
    """``Required value[: detail]`` (upstream ``Required``)."""
    return Error(ErrorType.REQUIRED, _path_str(path), "", detail)


def duplicate(path: Path | None, value: object) -> Error:
    """``Duplicate value: <value>`` (upstream ``Duplicate``)."""
    return Error(ErrorType.DUPLICATE, _path_str(path), value)


def invalid(path: Path | None, value: object, *, detail: str) -> Error:
    """``Invalid value: <value>: detail`` (upstream ``Invalid``)."""
    return Error(ErrorType.INVALID, _path_str(path), value, detail)


def type_invalid(path: Path | None, value: object, *, detail: str) -> Error:
    """Value of the wrong schema type; renders like ``Invalid`` (upstream ``TypeInvalid``)."""
    return Error(ErrorType.TYPE_INVALID, _path_str(path), value, detail)


def not_supported(path: Path | None, value: object, *, supported: Sequence[str]) -> Error:
    """``Unsupported value: <value>: supported values: "a", "b"`` (upstream ``NotSupported``)."""
    detail = ""
    if supported:
        detail = "supported values: " + ", ".join(go_quote(v) for v in supported)
    return Error(ErrorType.NOT_SUPPORTED, _path_str(path), value, detail)


def forbidden(path: Path | None, detail: str) -> Error:
    """``Forbidden: detail`` (upstream ``Forbidden``)."""
    return Error(ErrorType.FORBIDDEN, _path_str(path), "", detail)


def _too_long(path: Path | None, max_length: int, unit: str) -> Error:
    if max_length >= 0:
        msg = f"may not be more than {max_length} {unit if max_length == 1 else unit + 's'}"
    else:
        msg = "value is too long"
    return Error(ErrorType.TOO_LONG, _path_str(path), "<value omitted>", msg)


def too_long(path: Path | None, max_length: int) -> Error:
    """``Too long: may not be more than N bytes``; a negative ``max_length`` gives ``value is too long``.

    Upstream's ``TooLong`` also takes the value but never shows it, so it is not taken here.
    """
    return _too_long(path, max_length, "byte")


def too_long_characters(path: Path | None, max_length: int) -> Error:
    """As :func:`too_long`, counting characters (upstream ``TooLongCharacters``)."""
    return _too_long(path, max_length, "character")


def too_many(path: Path | None, *, actual: int, maximum: int) -> Error:
    """``Too many: <actual>: must have at most N items``; negatives omit the number (upstream ``TooMany``)."""
    if maximum >= 0:
        msg = f"must have at most {maximum} {'item' if maximum == 1 else 'items'}"
    else:
        msg = "has too many items"
    return Error(ErrorType.TOO_MANY, _path_str(path), actual if actual >= 0 else OMIT_VALUE, msg)


def internal_error(path: Path | None, err: BaseException | str) -> Error:
    """``Internal error: <err>`` for failures not caused by the input (upstream ``InternalError``)."""
    return Error(ErrorType.INTERNAL, _path_str(path), None, str(err))


# --- ErrorList helpers -------------------------------------------------------------------------------------


def dedupe(errors: Iterable[Error]) -> ErrorList:
    """Errors with distinct messages, first occurrence kept, as upstream ``ErrorList.ToAggregate`` does."""
    seen: set[str] = set()
    out: ErrorList = []
    for e in errors:
        msg = str(e)
        if msg not in seen:
            seen.add(msg)
            out.append(e)
    return out


def aggregate_text(messages: Iterable[str]) -> str:
    """The text of apimachinery's ``utilerrors.NewAggregate(errs).Error()`` for errors with these messages.

    No message gives ``""``; several are joined as ``[a, b]``, each distinct message once, in first-seen order
    (upstream drops repeats through a set while it visits the errors), so repeats of one message give that
    message alone, without brackets. Every Go ``Aggregate`` text kubeplane reproduces goes through here: the
    API's field errors, RBAC resolution errors, feature gates and the descheduler's policy errors.
    """
    unique = list(dict.fromkeys(messages))
    if len(unique) <= 1:
        return unique[0] if unique else ""
    return "[" + ", ".join(unique) + "]"


def aggregate_message(errors: Iterable[Error]) -> str:
    """The text of ``ErrorList.ToAggregate().Error()``: ``""``, ``msg``, or ``[msg1, msg2]`` after dedupe."""
    return aggregate_text(str(e) for e in errors)


def filter_out(errors: Iterable[Error], *types: ErrorType) -> ErrorList:
    """Errors whose type is not in ``types``, deduplicated like upstream ``ErrorList.Filter``."""
    drop = frozenset(types)
    return [e for e in dedupe(errors) if e.type not in drop]


def prefix_detail(errors: Iterable[Error], prefix: str) -> ErrorList:
    """Copies with ``prefix`` prepended to each detail (upstream ``ErrorList.PrefixDetail``)."""
    return [dataclasses.replace(e, detail=prefix + e.detail) for e in errors]


def with_origin(errors: Iterable[Error], origin: str) -> ErrorList:
    """Copies tagged with ``origin`` (upstream ``ErrorList.WithOrigin``)."""
    return [e.with_origin(origin) for e in errors]


# --- Go formatting -----------------------------------------------------------------------------------------

_GO_ESCAPES: Final[dict[str, str]] = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(s: str) -> str:
    """``s`` as Go's ``strconv.Quote`` / ``%q`` prints it: printable runes kept, others escaped."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return f'"{s}"'
    out = ['"']
    for ch in s:
        esc = _GO_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable():  # same classes as Go's unicode.IsPrint (only ASCII space among spaces)
            out.append(ch)
        else:
            cp = ord(ch)
            if cp < 0x80:
                out.append(f"\\x{cp:02x}")
            elif 0xD800 <= cp <= 0xDFFF:  # a lone surrogate is invalid UTF-8 to Go: U+FFFD
                out.append("\ufffd")
            elif cp < 0x10000:
                out.append(f"\\u{cp:04x}")
            else:
                out.append(f"\\U{cp:08x}")
    out.append('"')
    return "".join(out)


def _go_float(f: float) -> str:
    """Go's ``%v`` for a float64: shortest digits, exponent form below 1e-4 or from 1e21."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    d = Decimal(repr(f))
    sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    while len(digits) > 1 and digits[-1] == 0:  # repr keeps a trailing ".0"
        digits = digits[:-1]
        exp += 1
    x = len(digits) + exp - 1  # decimal exponent of the leading digit
    neg = "-" if sign else ""
    if x < -4 or x >= 21:
        mant = str(digits[0])
        if len(digits) > 1:
            mant += "." + "".join(map(str, digits[1:]))
        return f"{neg}{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    return neg + format(Decimal((0, digits, exp)), "f")


class GoSyntax(str):
    """A bad value already printed as Go's ``%#v`` would (e.g. an internal struct); shown verbatim."""

    __slots__ = ()


def _format_value(value: object) -> str:
    if isinstance(value, GoSyntax):
        return str.__str__(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:  # upstream prints the marshalling error instead
        return str(exc)
    # Go's json.Marshal escapes HTML-significant characters and the JS line separators.
    for ch, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return text
