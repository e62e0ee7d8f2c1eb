"""Decode Kubernetes protobuf request bodies into the wire-format JSON dicts the rest of kubeplane uses.

Why: kubectl's typed clientset sends built-in types as ``application/vnd.kubernetes.protobuf`` (``kubectl create
deployment``, ``create namespace``, ``create secret`` ...). The API server speaks JSON, so such a body is turned
into exactly the dict the same object would have been as JSON, and everything downstream is unchanged.

The envelope (``k8s.io/apimachinery/pkg/runtime/serializer/protobuf``): the 4-byte magic ``k8s\\x00``, then a
``runtime.Unknown`` message -- ``typeMeta`` (1: ``apiVersion`` 1, ``kind`` 2), ``raw`` (2: the object's own
message), ``contentEncoding`` (3, always empty) and ``contentType`` (4). ``raw`` is decoded with the tables
generated from upstream's ``generated.proto`` files (``proto_tables.json``, written by
``tools/gen_proto_tables.py``): per message, field number -> JSON name, type and flags.

Wire-format invariants relied on:

* Field keys are varints ``number << 3 | wire type``; wire types 0 (varint), 1 (64-bit), 2 (length-delimited)
  and 5 (32-bit). Groups (3, 4) do not occur in k8s.io protos and are rejected. Unknown field numbers are
  skipped, as every protobuf decoder does, so newer clients still decode.
* Repeated scalars are accepted packed (one length-delimited run) and unpacked (one key per element).
* Maps are repeated entry messages with the key in field 1 and the value in field 2; a missing key or value
  is its type's zero value.
* A singular field that appears twice keeps the last occurrence (no message merging).
* Go's generated marshallers write every non-pointer scalar, zero or not, and a pointer only when set. The
  JSON form omits zero ``omitempty`` values and keeps a set pointer even at zero, so a zero scalar is dropped
  unless its field is flagged "keep zero" in the tables (pointers such as ``replicas``, non-omitempty numbers).
  Empty embedded messages stay (``"strategy": {}``, ``"status": {}``) as they do in JSON; a zero ``Time`` (no
  bytes) is omitted, as kubectl v1.37's JSON omits ``creationTimestamp`` (``omitzero``).

Types with their own JSON form: ``resource.Quantity`` -> its string (``"0"`` when empty);
``intstr.IntOrString`` -> number (type 0) or string (type 1); ``meta.v1.Time`` -> RFC 3339 seconds (omitted when
empty, like Go's zero time); ``meta.v1.MicroTime`` -> RFC 3339 with 6 fraction digits; ``meta.v1.Duration``
-> Go duration string; ``runtime.RawExtension`` and ``meta.v1.FieldsV1`` -> their raw JSON, parsed; ``bytes`` ->
standard base64 (``Secret.data``); fields embedded with ``json:",inline"`` are merged into their parent.

Depth: the decoder recurses once per embedded message, and the generated tables have no cycle (the deepest
chain is about 13 messages), so no body can drive it deep. The one free-form part, raw JSON in ``FieldsV1`` and
``RawExtension``, is parsed by orjson (no recursion); :class:`NestingError` marks raw JSON too deep for orjson,
and the API server checks the decoded object's depth as it does a JSON body's (:mod:`kubeplane.api.jsondepth`).
"""

from __future__ import annotations

import base64
import functools
import importlib.resources
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import orjson

from kubeplane.api import jsondepth
from kubeplane.api.durations import format_duration

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
_RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"
_TIME, _MICRO_TIME = _META + "Time", _META + "MicroTime"
_DURATION, _FIELDS_V1, _VERBS = _META + "Duration", _META + "FieldsV1", _META + "Verbs"
_META_KINDS = "meta.k8s.io/v1"

_VARINT, _FIXED64, _LEN, _FIXED32 = 0, 1, 2, 5
_VARINT_TYPES = frozenset({"int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool"})
_FIXED32_TYPES = frozenset({"fixed32", "sfixed32", "float"})
_FIXED64_TYPES = frozenset({"fixed64", "sfixed64", "double"})
_PACKABLE = _VARINT_TYPES | _FIXED32_TYPES | _FIXED64_TYPES
_SCALARS = _PACKABLE | {"string", "bytes"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_REPEATED, _INLINE, _KEEP_ZERO = 1, 2, 4
MAX_MESSAGE_DEPTH: Final = 64
"""How deeply embedded messages may nest in a body. The tables have recursive messages (scheduling.k8s.io's
CompositePodGroupTemplate holds CompositePodGroupTemplates; validation caps the tree at 4), so the decoder, which
recurses once per embedded message, bounds the depth itself: no built-in object nests messages 20 deep, and 64
levels stay far inside Python's frame limit. Deeper is the JSON depth error (:class:`NestingError`)."""


class ProtobufError(ValueError):
    """The body is not a well-formed Kubernetes protobuf object; the message says what is wrong."""


class NestingError(ProtobufError):
    """Free-form JSON inside the body (``FieldsV1``, ``RawExtension``) nests deeper than
    :data:`~kubeplane.api.jsondepth.MAX_DEPTH`; ``bracket`` opens the first container too deep, ``kind`` and
    ``api_version`` are the envelope's (set once known)."""

    def __init__(self, bracket: str) -> None:
        super().__init__(jsondepth.syntax_error(bracket))
        self.bracket = bracket
        self.kind = self.api_version = ""


@dataclass(frozen=True, slots=True)
class ProtoField:
    """One field of a message table: JSON name, type (scalar, message name, or the map's value type)."""

    name: str
    type: str
    repeated: bool = False
    inline: bool = False
    keep_zero: bool = False
    map_key: str | None = None


@dataclass(frozen=True, slots=True)
class ProtoTables:
    """Decoding tables: ``kinds[apiVersion][kind]`` -> message; ``messages[message][number]`` -> field."""

    kinds: Mapping[str, Mapping[str, str]]
    messages: Mapping[str, Mapping[int, ProtoField]]

    def message_for(self, api_version: str, kind: str) -> str | None:
        """The message of ``kind`` in ``api_version``; meta/v1 kinds (DeleteOptions ...) in any version."""
        found = self.kinds.get(api_version, {}).get(kind)
        return found if found is not None else self.kinds[_META_KINDS].get(kind)


def parse_tables(raw: bytes) -> ProtoTables:
    """Build :class:`ProtoTables` from the JSON written by ``tools/gen_proto_tables.py``."""
    doc = orjson.loads(raw)
    messages: dict[str, dict[int, ProtoField]] = {}
    for message, fields in doc["messages"].items():
        table: dict[int, ProtoField] = {}
        for number, name, spelled, flags in fields:
            key: str | None = None
            typ = spelled
            if spelled.startswith("map<"):
                key, typ = spelled[4:-1].split(",", 1)
            table[number] = ProtoField(
                name, typ, bool(flags & _REPEATED), bool(flags & _INLINE), bool(flags & _KEEP_ZERO), key
            )
        messages[message] = table
    return ProtoTables(kinds=doc["kinds"], messages=messages)


@functools.cache
def load_tables() -> ProtoTables:
    """The packaged tables (``kubeplane/api/proto_tables.json``), parsed once."""
    return parse_tables(importlib.resources.files("kubeplane.api").joinpath("proto_tables.json").read_bytes())


def decode_object(data: bytes, *, tables: ProtoTables | None = None) -> dict[str, Any]:
    """Decode a ``k8s\\x00``-prefixed ``runtime.Unknown`` body into the object's JSON dict.

    ``kind`` and ``apiVersion`` come from the envelope's ``typeMeta``; the rest from ``raw``. Raises
    :class:`ProtobufError` for a missing magic, malformed wire data, or a kind without a table.
    """
    tables = tables or load_tables()
    if not data.startswith(MAGIC):
        raise ProtobufError("not a Kubernetes protobuf object: the body must start with the magic bytes k8s\\x00")
    api_version = kind = encoding = content_type = ""
    raw = b""
    for number, wire, value in _fields(data, len(MAGIC), "runtime.Unknown"):
        if number == 1 and isinstance(value, bytes):
            for sub, sub_wire, sub_value in _fields(value, 0, "runtime.TypeMeta"):
                if sub in (1, 2) and isinstance(sub_value, bytes):
                    if sub == 1:
                        api_version = _text(sub_value)
                    else:
                        kind = _text(sub_value)
                elif sub in (1, 2):
                    raise ProtobufError(f"runtime.TypeMeta field {sub}: wire type {sub_wire}, expected 2")
        elif number == 2 and isinstance(value, bytes):
            raw = value
        elif number == 3 and isinstance(value, bytes):
            encoding = _text(value)
        elif number == 4 and isinstance(value, bytes):
            content_type = _text(value)
        elif number in (1, 2, 3, 4):
            raise ProtobufError(f"runtime.Unknown field {number}: wire type {wire}, expected 2")
    if encoding:
        raise ProtobufError(f"unsupported contentEncoding {encoding!r} in the protobuf envelope")
    if content_type and content_type != CONTENT_TYPE:
        raise ProtobufError(f"unsupported contentType {content_type!r} in the protobuf envelope")
    if not kind or not api_version:
        raise ProtobufError("the protobuf envelope names no apiVersion and kind")
    message = tables.message_for(api_version, kind)
    if message is None:
        raise ProtobufError(f"no protobuf schema for {kind} in {api_version}; send this object as JSON")
    obj: dict[str, Any] = {"kind": kind, "apiVersion": api_version}
    try:
        obj.update(decode_message(raw, message, tables=tables))
    except NestingError as exc:
        exc.kind, exc.api_version = kind, api_version
        raise
    return obj


def decode_message(raw: bytes, message: str, *, tables: ProtoTables | None = None) -> dict[str, Any]:
    """Decode one message (no envelope) into its JSON dict; ``message`` is a fully qualified name."""
    tables = tables or load_tables()
    if message not in tables.messages:
        raise ProtobufError(f"unknown protobuf message {message}")
    value = _message(raw, message, tables, 1)
    if not isinstance(value, dict):
        raise ProtobufError(f"{message} does not decode to a JSON object")
    return value


def _message(buf: bytes, message: str, tables: ProtoTables, depth: int) -> Any:
    if depth > MAX_MESSAGE_DEPTH:  # a recursive message (CompositePodGroupTemplate) nested past any real object
        raise NestingError("{")
    special = _SPECIAL.get(message)
    if special is not None:
        return special(buf, message)
    table = tables.messages.get(message)
    if table is None:
        raise ProtobufError(f"unknown protobuf message {message}")
    out: dict[str, Any] = {}
    for number, wire, value in _fields(buf, 0, message):
        field = table.get(number)
        if field is None:
            continue
        if field.map_key is not None:
            if not isinstance(value, bytes):
                raise ProtobufError(f"{message}.{field.name}: map entry has wire type {wire}, expected 2")
            key, item = _map_entry(value, field, message, tables, depth)
            out.setdefault(field.name, {})[key] = item
        elif field.repeated:
            items = out.setdefault(field.name, [])
            if isinstance(value, bytes) and field.type in _PACKABLE:
                items.extend(_packed(value, field.type, message, field.name))
            else:
                items.append(_value(wire, value, field, message, tables, depth))
        elif field.inline:
            decoded = _value(wire, value, field, message, tables, depth)
            if not isinstance(decoded, dict):
                raise ProtobufError(f"{message}.{field.name}: inline field is not a message")
            out.update(decoded)
        else:
            decoded = _value(wire, value, field, message, tables, depth)
            if decoded is None or (field.type in _SCALARS and not field.keep_zero and not decoded):
                out.pop(field.name, None)
            else:
                out[field.name] = decoded
    return out


def _map_entry(buf: bytes, field: ProtoField, message: str, tables: ProtoTables, depth: int) -> tuple[Any, Any]:
    assert field.map_key is not None
    key_field = ProtoField(field.name, field.map_key)
    key: Any = _zero(field.map_key, tables, depth)
    item: Any = None
    for number, wire, value in _fields(buf, 0, f"{message}.{field.name} entry"):
        if number == 1:
            key = _value(wire, value, key_field, message, tables, depth)
        elif number == 2:
            item = _value(wire, value, field, message, tables, depth)
    return key, (_zero(field.type, tables, depth) if item is None else item)


def _zero(typ: str, tables: ProtoTables, depth: int) -> Any:
    if typ in ("string", "bytes"):
        return ""
    if typ == "bool":
        return False
    if typ in _SCALARS:
        return 0
    return _message(b"", typ, tables, depth + 1)


def _value(wire: int, value: int | bytes, field: ProtoField, message: str, tables: ProtoTables, depth: int) -> Any:
    typ = field.type
    if typ in _SCALARS:
        return _scalar(wire, value, typ, message, field.name)
    if not isinstance(value, bytes):
        raise ProtobufError(f"{message}.{field.name}: wire type {wire} for a message, expected 2")
    return _message(value, typ, tables, depth + 1)


def _scalar(wire: int, value: int | bytes, typ: str, message: str, name: str) -> Any:
    expected = (
        _VARINT if typ in _VARINT_TYPES else _FIXED32 if typ in _FIXED32_TYPES else
        _FIXED64 if typ in _FIXED64_TYPES else _LEN
    )  # fmt: skip
    if wire != expected:
        raise ProtobufError(f"{message}.{name}: wire type {wire} for {typ}, expected {expected}")
    if isinstance(value, bytes):
        return _text(value) if typ == "string" else base64.b64encode(value).decode("ascii")
    if typ == "bool":
        return value != 0
    if typ in ("int32", "sint32", "sfixed32"):
        value = _zigzag(value) if typ == "sint32" else value
        value &= 0xFFFFFFFF
        return value - (1 << 32) if value >= 1 << 31 else value
    if typ in ("int64", "sint64", "sfixed64"):
        value = _zigzag(value) if typ == "sint64" else value
        value &= 0xFFFFFFFFFFFFFFFF
        return value - (1 << 64) if value >= 1 << 63 else value
    if typ == "uint32":
        return value & 0xFFFFFFFF
    if typ == "float":
        return struct.unpack("<f", value.to_bytes(4, "little"))[0]
    if typ == "double":
        return struct.unpack("<d", value.to_bytes(8, "little"))[0]
    return value  # uint64, fixed32, fixed64


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _packed(buf: bytes, typ: str, message: str, name: str) -> list[Any]:
    out: list[Any] = []
    pos, end = 0, len(buf)
    while pos < end:
        if typ in _VARINT_TYPES:
            raw, pos = _varint(buf, pos, message)
            out.append(_scalar(_VARINT, raw, typ, message, name))
            continue
        size = 4 if typ in _FIXED32_TYPES else 8
        if pos + size > end:
            raise ProtobufError(f"{message}.{name}: truncated packed {typ} values")
        raw = int.from_bytes(buf[pos : pos + size], "little")
        out.append(_scalar(_FIXED32 if size == 4 else _FIXED64, raw, typ, message, name))
        pos += size
    return out


def _varint(buf: bytes, pos: int, where: str) -> tuple[int, int]:
    result = shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise ProtobufError(f"{where}: truncated varint at byte {pos}")
        if shift >= 70:
            raise ProtobufError(f"{where}: varint longer than 10 bytes at byte {pos}")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def _fields(buf: bytes, pos: int, where: str) -> Iterator[tuple[int, int, int | bytes]]:
    """Yield ``(number, wire type, value)``: an int for varint/fixed wire types, bytes for length-delimited."""
    end = len(buf)
    while pos < end:
        key, pos = _varint(buf, pos, where)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise ProtobufError(f"{where}: field number 0 at byte {pos}")
        if wire == _VARINT:
            value, pos = _varint(buf, pos, where)
            yield number, wire, value
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            if pos + size > end:
                raise ProtobufError(f"{where}: field {number} truncated ({size}-byte value)")
            yield number, wire, int.from_bytes(buf[pos : pos + size], "little")
            pos += size
        elif wire == _LEN:
            length, pos = _varint(buf, pos, where)
            if pos + length > end:
                raise ProtobufError(f"{where}: field {number} declares {length} bytes, {end - pos} remain")
            yield number, wire, bytes(buf[pos : pos + length])
            pos += length
        else:
            raise ProtobufError(f"{where}: field {number} has unsupported wire type {wire}")


def _text(value: bytes) -> str:
    # Go's JSON encoder replaces invalid UTF-8 with U+FFFD; do the same rather than fail.
    return value.decode("utf-8", "replace")


def _scalar_fields(buf: bytes, message: str) -> dict[int, int | bytes]:
    return {number: value for number, _, value in _fields(buf, 0, message)}


def _signed64(value: int | bytes | None) -> int:
    if not isinstance(value, int):
        return 0
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


def _as_bytes(value: int | bytes | None, where: str) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, bytes):
        raise ProtobufError(f"{where}: expected a length-delimited value")
    return value


def _quantity(buf: bytes, message: str) -> str:
    return _text(_as_bytes(_scalar_fields(buf, message).get(1), message)) or "0"


def _int_or_string(buf: bytes, message: str) -> int | str:
    fields = _scalar_fields(buf, message)
    if _signed64(fields.get(1)) == 1:
        return _text(_as_bytes(fields.get(3), message))
    value = _signed64(fields.get(2)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _timestamp(buf: bytes, message: str) -> str | None:
    if not buf:
        return None  # Go's zero time marshals to no bytes and to JSON null
    fields = _scalar_fields(buf, message)
    seconds, nanos = _signed64(fields.get(1)), _signed64(fields.get(2))
    try:
        when = _EPOCH + timedelta(seconds=seconds)
    except OverflowError as exc:
        raise ProtobufError(f"{message}: seconds {seconds} out of range") from exc
    if not 1 <= when.year <= 9999:
        raise ProtobufError(f"{message}: seconds {seconds} out of range")
    text = f"{when.year:04d}-{when.month:02d}-{when.day:02d}T{when.hour:02d}:{when.minute:02d}:{when.second:02d}"
    if message == _MICRO_TIME:
        text += f".{(nanos // 1000) % 1_000_000:06d}"
    return text + "Z"


def _duration(buf: bytes, message: str) -> str:
    return format_duration(_signed64(_scalar_fields(buf, message).get(1)))


def _raw_json(buf: bytes, message: str) -> Any:
    raw = _as_bytes(_scalar_fields(buf, message).get(1), message)
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        found = jsondepth.raw_too_deep(raw)  # orjson stops at 1024 levels: report it as the depth limit
        if found is not None and found[0] < exc.pos:
            raise NestingError(found[1]) from None
        raise ProtobufError(f"{message}: raw bytes are not JSON ({exc})") from exc


def _verbs(buf: bytes, message: str) -> list[str]:
    return [_text(_as_bytes(v, message)) for n, _, v in _fields(buf, 0, message) if n == 1]


_SPECIAL = {
    _QUANTITY: _quantity,
    _INT_OR_STRING: _int_or_string,
    _TIME: _timestamp,
    _MICRO_TIME: _timestamp,
    _DURATION: _duration,
    _RAW_EXTENSION: _raw_json,
    _FIELDS_V1: _raw_json,
    _VERBS: _verbs,
}
