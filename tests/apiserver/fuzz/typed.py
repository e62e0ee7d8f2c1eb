"""Is a stored object readable by a typed client? The official Python client's models, plus Go's stricter reads.

Why: an object the API server stores must decode into the kind's Go struct, or kubectl and every controller fail
to read it (``json: cannot unmarshal object into Go struct field Container.spec.containers.args of type
[]string``). The official client (``kubernetes`` v37, pydantic models with ``StrictStr``/``StrictInt``/...)
rejects wrong JSON types, bad timestamps and missing required fields, so it is the first check
(``ApiClient.deserialize`` into the kind's model, exactly what its typed APIs do with a response).

A ``null`` is what Go reads as the zero value without complaint, so nulls are dropped before the client reads
the object (a required field then counts as missing, except where upstream itself writes null:
:data:`_UPSTREAM_NULLS`); everything else the client refuses counts.

It is laxer than Go where its models spell a type loosely, so three checks follow upstream's decoders:

* ``resource.Quantity`` (a plain ``str`` in the client): apimachinery's ``ParseQuantity`` grammar
  (``k8s.io/apimachinery/pkg/api/resource/quantity.go``, ``<signedNumber><suffix>``);
* ``[]byte`` (Secret ``data``, ConfigMap ``binaryData``): standard base64, as ``encoding/json`` decodes it;
* integers: the range of the Go field's type, ``int32`` or ``int64`` as ``generated.proto`` declares it
  (``proto_tables.json``; e.g. ``json: cannot unmarshal number 4294967296 into Go struct field
  PodSpec.spec.priority of type int32``).
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib.resources
import json
import re
from typing import Any, Final

import orjson
from pydantic import ValidationError

from kubeplane.api.schema import load_schemas, root_type

# parseQuantityString and quantitySuffixer.interpret: an optional sign, digits (possibly none: "M" and "." are
# zero), an optional fraction, then a binary or decimal suffix or a signed decimal exponent; not empty
# (ErrFormatWrong); UnmarshalJSON trims spaces first.
_QUANTITY: Final = re.compile(
    r"^(?=.)[+-]?[0-9]*(?:\.[0-9]*)?(?:Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$"
)
_RANGES: Final = {"int32": (-(2**31), 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-(2**63), 2**63 - 1)}
_MAX_PROBLEMS: Final = 5
# The official client parses responses with json.loads, which stops at Python's recursion limit (1,000 frames,
# some of them the caller's); the checks here recurse too. Go's decoder would read deeper, but no typed field
# nests this deep, so such an object has a wrongly typed field or a free-form one nobody can read back.
MAX_DEPTH: Final = 500
# Required in the OpenAPI, yet written as null by upstream itself (a zero non-pointer, non-omitempty field):
# events.k8s.io/v1 Event.eventTime of an Event created through core/v1 (k8s.io/api/events/v1 MicroTime).
_UPSTREAM_NULLS: Final = frozenset({("EventsV1Event", "eventTime")})


@functools.cache
def _client() -> Any:
    from kubernetes.client import ApiClient

    return ApiClient()


@functools.cache
def _proto() -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """(kinds: "group/version" -> kind -> message, messages: message -> json name -> field type)."""
    raw = importlib.resources.files("kubeplane.api").joinpath("proto_tables.json").read_bytes()
    doc = orjson.loads(raw)
    kinds = {gv: dict(k) for gv, k in doc["kinds"].items()}
    messages = {name: {f[1]: f[2] for f in fields} for name, fields in doc["messages"].items()}
    return kinds, messages


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(node, dict):
            stack.extend((v, level + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, level + 1) for v in node)
    return deepest


def _without_nulls(value: Any) -> Any:
    """``value`` without ``null`` members: Go decodes a null into the zero value, as if the field were absent."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def model_name(group: str, version: str, kind: str) -> str | None:
    return root_type(group=group, version=version, kind=kind)


def problems(obj: Any, *, group: str, version: str, kind: str) -> list[str]:
    """Why a typed client cannot read ``obj`` as ``group/version/kind`` (empty: it can)."""
    root = model_name(group, version, kind)
    if root is None:
        return [f"no model for {group}/{version}/{kind}"]
    depth = _depth(obj)
    if depth > MAX_DEPTH:
        return [f"nested {depth} levels: deeper than a typed client's decoder reads"]
    out: list[str] = []
    try:
        _client().deserialize(json.dumps(_without_nulls(obj)), root, "application/json")
    except ValidationError as exc:
        errors = [e for e in exc.errors() if (exc.title, *e["loc"]) not in _UPSTREAM_NULLS]
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first["loc"])
            out.append(f"official client {exc.title}.{where}: {first['msg']} [{first['type']}] ({len(errors)} errors)")
    except Exception as exc:  # the client's own errors on a malformed shape
        out.append(f"official client {root}: {type(exc).__name__}: " + " ".join(str(exc).split())[:300])
    kinds, _ = _proto()
    message = kinds.get(f"{group}/{version}" if group else version, {}).get(kind)
    _walk(obj, root, message, "", out)
    return out


def _walk(value: Any, ref: str, message: str | None, path: str, out: list[str]) -> None:
    """Explicit-stack walk (input may be nested deeper than Python's recursion limit)."""
    types = load_schemas().types
    _, messages = _proto()
    stack: list[tuple[Any, str, str | None, str]] = [(value, ref, message, path)]
    while stack and len(out) < _MAX_PROBLEMS:
        node, ref, msg, at = stack.pop()
        if node is None:
            continue
        if ref.startswith("[]"):
            if isinstance(node, list):
                stack.extend((v, ref[2:], msg, f"{at}[{i}]") for i, v in enumerate(node))
            continue
        if ref.startswith("{}"):
            if isinstance(node, dict):
                stack.extend((v, ref[2:], msg, f"{at}.{k}") for k, v in node.items())
            continue
        if ref == "quantity":
            if not (isinstance(node, str) and _QUANTITY.match(node.strip())):
                out.append(f"{at}: quantity {node!r} does not match resource.ParseQuantity")
            continue
        if ref == "byte":
            if isinstance(node, str):
                try:
                    base64.b64decode(node, validate=True)
                except (binascii.Error, ValueError):
                    out.append(f"{at}: {node[:40]!r} is not standard base64 ([]byte)")
            continue
        if ref == "integer":
            if isinstance(node, int) and not isinstance(node, bool) and msg in _RANGES:
                low, high = _RANGES[msg]
                if not low <= node <= high:
                    out.append(f"{at}: {node} overflows {msg}")
            continue
        fields = types.get(ref)
        if fields is None or not isinstance(node, dict):
            continue
        proto_fields = messages.get(msg or "", {})
        for key, child in node.items():
            child_ref = fields.get(key)
            if child_ref is None:
                continue
            proto_type = proto_fields.get(key)
            if proto_type is not None and proto_type.startswith("map<"):
                proto_type = proto_type[4:-1].split(",", 1)[1]
            stack.append((child, child_ref, proto_type, f"{at}.{key}" if at else key))
