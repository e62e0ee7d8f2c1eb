"""Typed decoding of request bodies: kube-apiserver's JSON-into-Go-structs step, on kubeplane's dicts.

Why: kube-apiserver decodes every body into the Go types of k8s.io/api (sigs.k8s.io/json, a fork of
encoding/json that matches keys case-sensitively) before admission, defaulting or anything derived from the object
runs. A field of the wrong JSON type never reaches storage: the request is a 400 whose message is the decoder's,
``json: cannot unmarshal number into Go struct field PodSpec.spec.schedulerName of type string``. kubeplane keeps
objects as JSON dicts, so :func:`decode` walks a decoded body against the Go types (``gotypes.json``, generated from
the Go source by ``tools/gen_gotypes.py``) and returns what a decode and re-encode would keep.

What it follows (Go's ``encoding/json`` decode.go, the fork's copy):

* A value of the wrong JSON type is an ``UnmarshalTypeError``: ``Struct`` is the innermost struct whose field was
  being decoded (its Go name), ``Field`` the JSON keys from the root joined with ``.`` (list indices and map keys
  are not part of it), ``Type`` the Go type wanted (named types by name: ``v1.RestartPolicy``, ``v1.ResourceList``;
  pointers indirected). Decoding goes on and the *first* such error is reported.
* An integer field given a fraction or an out-of-range number reports ``number <text>`` (Go quotes the JSON text;
  kubeplane only has the parsed value, so ``1e3`` reads back as ``1000.0``: the one place the text may differ).
* Types with their own ``UnmarshalJSON`` fail at once with their own error, which the decoder does not wrap (it
  comes from another package's decoder): ``resource.Quantity`` (``quantities must match the regular expression
  ...``), ``intstr.IntOrString`` (``json: cannot unmarshal bool into Go value of type int32``), ``metav1.Time`` and
  ``MicroTime`` (Go's ``time.Parse`` errors, :mod:`kubeplane.api.gotime`), ``metav1.Duration``.
* ``null`` decodes to the zero value: a struct field given ``null`` is dropped (omitted as Go would omit the zero of
  an ``omitempty`` field); a list or map element given ``null`` becomes its type's zero (``""``, ``0``,
  ``false``, ``{}``).
* Keys a struct does not declare are dropped (Go ignores them; strict field validation reports them separately,
  :mod:`kubeplane.api.schema`). ``[]byte`` takes a base64 string (or, as Go, an array of bytes, re-encoded).

Invariant: the walk's recursion follows the Go type graph, not the input: free-form values (``RawExtension``,
``FieldsV1``) are kept without descending, so its depth is bounded by the deepest Go type, whatever the body.
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib.resources
from typing import Any, Final

import orjson

from kubeplane.api.durations import parse_duration
from kubeplane.api.gotime import RFC3339, RFC3339_MICRO, GoTimeError, check_time
from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.strategicpatch_meta import go_type

__all__ = ["TypedDecodeError", "decode", "decode_with_unknown", "go_json_type", "has_go_type", "split_map"]

_META_GROUP: Final = "meta.k8s.io"

# Kinds of compiled types.
_STRUCT, _SLICE, _BYTES, _MAP, _STRING, _BOOL, _INT, _FLOAT, _ANY = range(9)
_QUANTITY, _INT_OR_STRING, _TIME, _MICRO_TIME, _DURATION = range(9, 14)
_SPECIAL: Final = {
    "quantity": _QUANTITY,
    "int-or-string": _INT_OR_STRING,
    "time": _TIME,
    "microtime": _MICRO_TIME,
    "duration": _DURATION,
    "any": _ANY,
}
_INT_RANGES: Final = {
    "int": (-(2**63), 2**63 - 1),
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint": (0, 2**64 - 1),
    "uint8": (0, 2**8 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}
_INT32: Final = _INT_RANGES["int32"]


class TypedDecodeError(ValueError):
    """A body Go's decoder refuses; ``str()`` is the decoder's message, as kube-apiserver quotes it."""


class _Type:
    """One Go type, compiled: ``code`` says how values are read, ``go`` is what reflect prints for it."""

    __slots__ = ("always", "code", "elem", "fields", "go", "kind", "name", "range")

    def __init__(self, code: int, go: str, kind: str = "") -> None:
        self.code = code
        self.go = go
        self.kind = kind  # reflect's Kind of a scalar (string, bool, int32, float64 ...), named types included
        self.name = ""  # a struct's Go name (the Struct of an UnmarshalTypeError)
        self.fields: dict[str, _Type] = {}
        self.always: tuple[str, ...] = ()  # a struct's fields Go encodes even when unset (no omitempty, no pointer)
        self.elem: _Type | None = None  # slice and map elements
        self.range: tuple[int, int] = (0, 0)


@functools.cache
def _table() -> dict[str, Any]:
    raw = importlib.resources.files("kubeplane.api").joinpath("gotypes.json").read_bytes()
    table: dict[str, Any] = orjson.loads(raw)
    return table


def split_map(expr: str) -> tuple[str, str]:
    """``map[K]V`` -> (K, V), brackets balanced (``tools/gen_gotypes.py`` writes these expressions)."""
    depth = 0
    for i in range(3, len(expr)):
        if expr[i] == "[":
            depth += 1
        elif expr[i] == "]":
            depth -= 1
            if depth == 0:
                return expr[4:i], expr[i + 1 :]
    raise ValueError(f"malformed map type {expr!r}")


_compiled: dict[str, _Type] = {}


def _compile(expr: str, go_name: str | None = None) -> _Type:
    """The compiled type of a type expression of ``gotypes.json`` (memoised; recursive types share nodes)."""
    key = expr if go_name is None else f"{go_name}={expr}"
    found = _compiled.get(key)
    if found is not None:
        return found
    types = _table()["types"]
    t: _Type
    if expr.startswith("[]"):
        elem = _compile(expr[2:])
        t = _Type(_BYTES if elem.code == _INT and elem.go == "uint8" else _SLICE, go_name or "[]" + elem.go)
        t.elem = elem
    elif expr.startswith("map["):
        key_expr, value_expr = split_map(expr)
        t = _Type(_MAP, go_name or f"map[{_compile(key_expr).go}]{_compile(value_expr).go}")
        _compiled[key] = t
        t.elem = _compile(value_expr)
    elif expr in _INT_RANGES:
        t = _Type(_INT, go_name or expr, expr)
        t.range = _INT_RANGES[expr]
    elif expr in ("float32", "float64"):
        t = _Type(_FLOAT, go_name or expr, expr)
    elif expr in ("string", "bool"):
        t = _Type(_STRING if expr == "string" else _BOOL, go_name or expr, expr)
    elif expr == "any":
        t = _Type(_ANY, go_name or "interface {}")
    else:
        entry = types[expr]
        if entry[0] == "named":
            return _compile(entry[2], go_name or entry[1])
        if entry[0] == "special":
            t = _Type(_SPECIAL[entry[2]], entry[1])
        else:
            t = _Type(_STRUCT, go_name or _go_name(expr))
            t.name = entry[1]
            _compiled[key] = t  # before the fields: a field may refer back to this struct
            t.fields = {field: _compile(child) for field, child in entry[2].items()}
            t.always = tuple(entry[3])
    _compiled[key] = t
    return t


def _go_name(type_id: str) -> str:
    """reflect's String() of a named type: the package's name (its last path element), a dot, the type name."""
    package, name = type_id.rsplit(".", 1)
    return f"{package.rsplit('/', 1)[-1]}.{name}"


def _root(group: str, version: str, kind: str) -> _Type | None:
    roots = _table()["roots"]
    type_id = roots.get(f"{group}/{version}/{kind}")
    if type_id is None and kind in ("DeleteOptions", "Status"):
        type_id = roots.get(f"{_META_GROUP}/v1/{kind}")
    return None if type_id is None else _compile(type_id)


def has_go_type(*, group: str, version: str, kind: str) -> bool:
    return _root(group, version, kind) is not None


def decode(obj: dict[str, Any], *, group: str, version: str, kind: str, unstructured: bool = False) -> dict[str, Any]:
    """``obj`` as Go's decoder would keep it (unknown keys and nulls dropped), or :class:`TypedDecodeError`.

    ``obj`` is not changed; the result shares no container with it (scalars and free-form values are shared: they
    are immutable, or stored as given). A kind without Go types is returned as a shallow copy.

    ``unstructured``: convert as apimachinery's ``DefaultUnstructuredConverter.FromUnstructured`` instead of
    ``encoding/json`` (kube-apiserver's strategic-merge-patch path, patch.go ``applyPatchToObject``): integral
    floats fit integer fields, integers wrap into narrower ones, and the first problem stops the conversion
    with the converter's message (``cannot convert int64 to string``, ``unrecognized type: int32``,
    ``cannot restore struct from: string`` ...), which names no field.
    """
    return decode_with_unknown(obj, group=group, version=version, kind=kind, unstructured=unstructured)[0]


def decode_with_unknown(
    obj: dict[str, Any], *, group: str, version: str, kind: str, unstructured: bool = False
) -> tuple[dict[str, Any], bool]:
    """:func:`decode`, and whether any key was unknown to its struct (dropped): without one, strict field
    validation has only duplicates left to look for. A kind without Go types reports no unknown key."""
    root = _root(group, version, kind)
    if root is None:
        return dict(obj), False
    walk = _Walk(unstructured)
    out = walk.struct(obj, root, "")
    if walk.error is not None:
        raise TypedDecodeError(walk.error)
    return out, walk.unknown


def go_json_type(value: object) -> str:
    """The JSON type name Go's decoder reports (``cannot unmarshal array into ...``)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "value"


def _number_text(value: int | float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


_ZERO: Final = {_STRING: "", _BOOL: False, _INT: 0, _FLOAT: 0}
_ABSENT: Final = object()


def _zero(t: _Type) -> Any:
    """What Go encodes for an unset always-encoded field of type ``t``: scalars' zero, an empty list or map (Go
    writes null for a nil one; kubeplane writes the empty value, which every Go reader decodes alike and the
    official client accepts where it requires the field), a struct with its own always-encoded fields. Free-form
    and custom types (Time encodes null) are left out (:data:`_ABSENT`)."""
    zero = _ZERO.get(t.code)
    if zero is not None:
        return zero
    if t.code == _SLICE:
        return []
    if t.code == _MAP:
        return {}
    if t.code == _STRUCT:
        out = {}
        for key in t.always:
            value = _zero(t.fields[key])
            if value is not _ABSENT:
                out[key] = value
        return out
    return _ABSENT


class _Walk:
    """One decode: the first saved error; hard errors (custom unmarshalers) raise at once."""

    __slots__ = ("error", "unknown", "unstructured")

    def __init__(self, unstructured: bool = False) -> None:
        self.error: str | None = None
        self.unknown = False
        self.unstructured = unstructured

    def mismatch(self, what: str, t: _Type, struct: str, path: str) -> None:
        if self.unstructured:
            raise AssertionError("the unstructured conversion reports through convert()")  # pragma: no cover
        if self.error is None:
            where = f"Go struct field {struct}.{path}" if struct else "Go value"
            self.error = f"json: cannot unmarshal {what} into {where} of type {t.go}"

    def struct(self, value: dict[str, Any], t: _Type, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        fields, name = t.fields, t.name
        for key in t.always:  # as Go re-encodes them: present, at their zero value when the body has none
            if value.get(key) is None:
                zero = _zero(fields[key])
                if zero is not _ABSENT:
                    out[key] = zero
        for key, child in value.items():
            field = fields.get(key)
            if field is None:
                self.unknown = True
                continue
            if child is None:
                continue
            child_path = f"{path}.{key}" if path else key
            out[key] = self.value(child, field, name, child_path)
        return out

    def elem(self, value: Any, t: _Type, struct: str, path: str) -> Any:
        """A list or map element: ``null`` is the element type's zero (:func:`_zero`; None where Go writes null)."""
        if value is None:
            zero = _zero(t)
            return None if zero is _ABSENT else zero
        return self.value(value, t, struct, path)

    def value(self, value: Any, t: _Type, struct: str, path: str) -> Any:
        code = t.code
        if self.unstructured and code not in _CUSTOM:
            return self.convert(value, t, struct, path)
        if code == _STRING:
            if type(value) is not str:
                self.mismatch(go_json_type(value), t, struct, path)
            return value
        if code == _STRUCT:
            if type(value) is not dict and not isinstance(value, dict):
                self.mismatch(go_json_type(value), t, struct, path)
                return value
            return self.struct(value, t, path)
        if code == _SLICE:
            if type(value) is not list:
                self.mismatch(go_json_type(value), t, struct, path)
                return value
            elem = t.elem
            assert elem is not None
            return [self.elem(v, elem, struct, path) for v in value]
        if code == _MAP:
            if type(value) is not dict and not isinstance(value, dict):
                self.mismatch(go_json_type(value), t, struct, path)
                return value
            elem = t.elem
            assert elem is not None
            return {k: self.elem(v, elem, struct, path) for k, v in value.items()}
        if code == _INT:
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.mismatch(go_json_type(value), t, struct, path)
            elif isinstance(value, float) or not t.range[0] <= value <= t.range[1]:
                self.mismatch(f"number {_number_text(value)}", t, struct, path)
            return value
        if code == _BOOL:
            if type(value) is not bool:
                self.mismatch(go_json_type(value), t, struct, path)
            return value
        if code == _FLOAT:
            if isinstance(value, bool) or not isinstance(value, int | float):
                self.mismatch(go_json_type(value), t, struct, path)
            return value
        if code == _ANY:
            return value
        if code == _QUANTITY:
            return _quantity(value)
        if code == _INT_OR_STRING:
            _int_or_string(value)
            return value
        if code in (_TIME, _MICRO_TIME, _DURATION):
            _time_like(value, code)
            return value
        if code == _BYTES:
            return self.bytes(value, t, struct, path)
        raise AssertionError(f"unknown type code {code}")  # pragma: no cover

    def bytes(self, value: Any, t: _Type, struct: str, path: str) -> Any:
        """``[]byte``: a base64 string (std encoding), or an array of numbers 0-255 (re-encoded as base64)."""
        if type(value) is str:
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                if self.error is None:
                    self.error = f"illegal base64 data at input byte {_base64_error_offset(value)}"
            return value
        if type(value) is list:
            elem = t.elem
            assert elem is not None
            for v in value:
                self.value(v, elem, struct, path)
            if self.error is None:
                return base64.b64encode(bytes(value)).decode()
            return value
        self.mismatch(go_json_type(value), t, struct, path)
        return value

    def convert(self, value: Any, t: _Type, struct: str, path: str) -> Any:
        """FromUnstructured's conversion of one value (converter.go ``fromUnstructured``)."""
        code = t.code
        if code == _STRUCT:
            if type(value) is not dict and not isinstance(value, dict):
                raise TypedDecodeError(f"cannot restore struct from: {_go_kind(value)}")
            return self.struct(value, t, path)
        if code == _MAP:
            if type(value) is not dict and not isinstance(value, dict):
                raise TypedDecodeError(f"cannot restore map from {_go_kind(value)}")
            elem = t.elem
            assert elem is not None
            return {k: self.elem(v, elem, struct, path) for k, v in value.items()}
        if code in (_SLICE, _BYTES):
            if code == _BYTES and type(value) is str:
                if value:
                    try:
                        base64.b64decode(value, validate=True)
                    except (binascii.Error, ValueError):
                        offset = _base64_error_offset(value)
                        raise TypedDecodeError(
                            f"error decoding from json: illegal base64 data at input byte {offset}"
                        ) from None
                return value
            if type(value) is not list:
                raise TypedDecodeError(f"cannot restore slice from {_go_kind(value)}")
            elem = t.elem
            assert elem is not None
            items = [self.elem(v, elem, struct, path) for v in value]
            return base64.b64encode(bytes(items)).decode() if code == _BYTES else items
        if code == _ANY:
            return value
        return _convert_scalar(value, t)


_KINDS: Final = {"[]interface {}": "slice", "map[string]interface {}": "map"}


def _go_kind(value: object) -> str:
    """reflect's Kind of a value of an unstructured object: its Go type (:func:`go_type`), containers by kind."""
    name = go_type(value)
    return _KINDS.get(name, name)


def _wrap(value: int, t: _Type) -> int:
    """Go's integer conversion: two's complement truncation to the destination's width."""
    lo, hi = t.range
    span = hi - lo + 1
    return (value - lo) % span + lo


def _convert_scalar(value: Any, t: _Type) -> Any:
    """Assignable or convertible within JSON's four groups (bools, integers, floats, strings), else an error:
    ``cannot convert`` when Go's reflect could convert across groups (an integer into a string, a fraction into
    an integer), ``unrecognized type`` when it could not."""
    code, src = t.code, _go_kind(value)
    if code == _STRING:
        if src == "string":
            return value
        if src == "int64":  # reflect converts integers to strings (as runes); JSON must not
            raise TypedDecodeError(f"cannot convert int64 to {t.go}")
    elif code == _BOOL:
        if src == "bool":
            return value
    elif code == _INT:
        if src == "int64":
            return _wrap(value, t)
        if src == "float64":
            if value == int(value):
                return _wrap(int(value), t)
            raise TypedDecodeError(f"cannot convert float64 to {t.go}")
    elif code == _FLOAT and src in ("int64", "float64"):
        return value
    raise TypedDecodeError(f"unrecognized type: {t.kind}")


_CUSTOM: Final = frozenset({_QUANTITY, _INT_OR_STRING, _TIME, _MICRO_TIME, _DURATION})

_B64: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _base64_error_offset(text: str) -> int:
    """Where Go's base64.StdEncoding stops: the first byte outside the alphabet (padding only at the end of a
    quantum), else the start of an incomplete final quantum."""
    for i, ch in enumerate(text):
        if ch == "=":
            quantum_end = (i // 4) * 4 + 4
            if i % 4 < 2 or text[i:quantum_end].strip("=") or len(text) != quantum_end:
                return i
            return len(text)
        if ch not in _B64:
            return i
    return (len(text) // 4) * 4


def _quantity(value: Any) -> Any:
    """Quantity.UnmarshalJSON: the JSON text without quotes, trimmed, through ParseQuantity. A number comes back as
    the string Go encodes it as (``1.5`` -> ``"1500m"``: Quantity always marshals to its canonical string); a string
    is kept as given."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            parsed = Quantity.parse(value)
        except QuantityError as exc:
            raise TypedDecodeError(exc.reason) from None
        return value if isinstance(value, str) else str(parsed)
    # true/false/objects/arrays reach ParseQuantity as their JSON text, which never matches the format
    raise TypedDecodeError(_quantity_format_error())


@functools.cache
def _quantity_format_error() -> str:
    try:
        Quantity.parse("{}")
    except QuantityError as exc:
        return exc.reason
    raise AssertionError("'{}' parsed as a quantity")  # pragma: no cover


def _int_or_string(value: Any) -> None:
    """IntOrString.UnmarshalJSON: a string, else json.Unmarshal into an int32 (its own decoder: no context)."""
    if isinstance(value, str):
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypedDecodeError(f"json: cannot unmarshal {go_json_type(value)} into Go value of type int32")
    if isinstance(value, float) or not _INT32[0] <= value <= _INT32[1]:
        raise TypedDecodeError(f"json: cannot unmarshal number {_number_text(value)} into Go value of type int32")


def _time_like(value: Any, code: int) -> None:
    """Time, MicroTime and Duration: json.Unmarshal into a string, then time.Parse / time.ParseDuration."""
    if not isinstance(value, str):
        raise TypedDecodeError(f"json: cannot unmarshal {go_json_type(value)} into Go value of type string")
    try:
        if code == _DURATION:
            parse_duration(value)
        else:
            check_time(value, RFC3339_MICRO if code == _MICRO_TIME else RFC3339)
    except (GoTimeError, ValueError) as exc:
        raise TypedDecodeError(str(exc)) from None
