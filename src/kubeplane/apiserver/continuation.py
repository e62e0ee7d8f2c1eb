"""Continue tokens of paged lists, in kube-apiserver's format and with its decoding errors.

Upstream (``apiserver/pkg/storage/continue.go``): a token is ``base64.RawURLEncoding`` of the JSON
``{"v": "meta.k8s.io/v1", "rv": <revision>, "start": <next key relative to the collection prefix>}``.
``DecodeContinue`` refuses, each as a 400 ``invalid continue token: continue key is not valid...`` (the storage's
``ValidateListOptions`` wraps it in a BadRequest):

* bytes that are not unpadded URL-safe base64 (Go's ``illegal base64 data at input byte N``);
* JSON that does not decode into the token struct (encoding/json's messages: syntax errors, a field of the
  wrong type, a value that is not an object);
* ``rv`` 0, an empty ``start``, a version other than ``meta.k8s.io/v1``;
* a ``start`` that ``path.Clean`` would change (``..``, ``//``, ``/./``): the key can never leave the prefix.

A negative ``rv`` is valid and means "the newest revision" (upstream: ``continueRV < 0``).
"""

from __future__ import annotations

import base64
import json
import string
from typing import Any

import orjson

from . import errors

__all__ = ["decode", "encode"]

VERSION = "meta.k8s.io/v1"
_NOT_VALID = "continue key is not valid"
_ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")
_FIELDS = {"v": "string", "rv": "int64", "start": "string"}
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def encode(revision: int, start: str) -> str:
    """``EncodeContinue``: ``start`` is the next key with the collection prefix removed."""
    raw = orjson.dumps({"v": VERSION, "rv": revision, "start": start})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str) -> tuple[int, str]:
    """``DecodeContinue``: ``(revision, start)`` with ``start`` relative to the collection prefix (appended to
    it, it can never leave it); raises upstream's 400 for a token it refuses."""
    data = _raw_url_decode(token)
    fields = _unmarshal(data)
    version, revision, start = fields.get("v", ""), fields.get("rv", 0), fields.get("start", "")
    if version != VERSION:
        _refuse(f"{_NOT_VALID}: server does not recognize this encoded version {version}")
    if revision == 0:
        _refuse(f"{_NOT_VALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not start:
        _refuse(f"{_NOT_VALID}: encoded start key empty (version meta.k8s.io/v1)")
    key = start if start.startswith("/") else "/" + start
    cleaned = clean_path(key)
    if cleaned != key:
        _refuse(f"{_NOT_VALID}: {start}")
    return int(revision), cleaned[1:]


def _refuse(why: str) -> None:
    raise errors.bad_request(f"invalid continue token: {why}")


def _raw_url_decode(token: str) -> bytes:
    """Go's ``base64.RawURLEncoding.DecodeString``: no padding, ``\\r``/``\\n`` skipped, any other character
    outside the URL-safe alphabet (or a dangling single character) is ``illegal base64 data at input byte N``."""
    chars: list[str] = []
    for index, ch in enumerate(token):
        if ch in "\r\n":
            continue
        if ch not in _ALPHABET:
            _refuse(f"{_NOT_VALID}: illegal base64 data at input byte {index}")
        chars.append(ch)
    if len(chars) % 4 == 1:
        _refuse(f"{_NOT_VALID}: illegal base64 data at input byte {len(token) - 1}")
    text = "".join(chars)
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class _Number:
    """A JSON number kept as its literal, so a value int64 cannot hold is reported as Go reports it."""

    __slots__ = ("literal",)

    def __init__(self, literal: str) -> None:
        self.literal = literal


def _no_constant(name: str) -> Any:
    raise ValueError(name.lstrip("-"))


def _unmarshal(data: bytes) -> dict[str, Any]:
    """``json.Unmarshal(data, &continueToken{})``: the decoded fields, or upstream's 400."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    try:
        value = json.loads(text, parse_int=_Number, parse_float=_Number, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        _refuse(f"{_NOT_VALID}: {_syntax_error(exc)}")
    except ValueError as exc:  # NaN, Infinity: not JSON to Go
        _refuse(f"{_NOT_VALID}: invalid character {_go_char(str(exc)[:1])} looking for beginning of value")
    except RecursionError:
        _refuse(f"{_NOT_VALID}: exceeded max depth")
    if value is None:
        return {}
    if not isinstance(value, dict):
        _refuse(f"{_NOT_VALID}: json: cannot unmarshal {_type_name(value)} into Go value of type storage.continueToken")
    fields: dict[str, Any] = {}
    first_error = ""
    for key, item in value.items():
        name = key if key in _FIELDS else next((f for f in _FIELDS if f.lower() == key.lower()), None)
        if name is None or item is None:
            continue
        go_type = _FIELDS[name]
        decoded: Any = None
        if go_type == "string" and isinstance(item, str):
            decoded = item
        elif go_type == "int64" and isinstance(item, _Number):
            try:
                number = int(item.literal)
            except ValueError:
                number = None
            if number is not None and _INT64_MIN <= number <= _INT64_MAX:
                decoded = number
        if decoded is None:
            found = f"number {item.literal}" if isinstance(item, _Number) and go_type == "int64" else _type_name(item)
            first_error = first_error or (
                f"json: cannot unmarshal {found} into Go struct field continueToken.{name} of type {go_type}"
            )
            continue
        fields[name] = decoded
    if first_error:
        _refuse(f"{_NOT_VALID}: {first_error}")
    return fields


def _type_name(value: Any) -> str:
    if isinstance(value, _Number):
        return "number"
    return errors.json_type(value)


def _syntax_error(exc: json.JSONDecodeError) -> str:
    """encoding/json's ``SyntaxError`` text for the common cases Python's decoder reports."""
    if exc.pos >= len(exc.doc) or not exc.doc.strip():
        return "unexpected end of JSON input"
    char = _go_char(exc.doc[exc.pos])
    if exc.msg.startswith("Extra data"):
        return f"invalid character {char} after top-level value"
    if exc.msg.startswith("Expecting property name"):
        return f"invalid character {char} looking for beginning of object key string"
    if exc.msg.startswith("Expecting ':'"):
        return f"invalid character {char} after object key"
    if exc.msg.startswith("Expecting ','"):
        return f"invalid character {char} after object key:value pair"
    return f"invalid character {char} looking for beginning of value"


def _go_char(ch: str) -> str:
    """encoding/json's ``quoteChar``."""
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    if ch.isprintable():
        return f"'{ch}'"
    code = ord(ch)
    return f"'\\x{code:02x}'" if code < 0x80 else f"'\\u{code:04x}'"


def clean_path(path: str) -> str:
    """Go's ``path.Clean`` (lexical: collapse ``//``, drop ``.``, resolve ``..`` against what precedes)."""
    if not path:
        return "."
    rooted = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not rooted:
                parts.append("..")
            continue
        parts.append(part)
    cleaned = "/".join(parts)
    if rooted:
        return "/" + cleaned
    return cleaned or "."
