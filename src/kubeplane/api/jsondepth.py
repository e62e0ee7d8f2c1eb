"""How deeply JSON values nest: the one limit that keeps every walk of a request's data inside Python's stack.

Upstream: Go's ``encoding/json`` scanner, and ``sigs.k8s.io/json``'s copy of it that kube-apiserver decodes
request bodies and patches with, refuse a document whose containers nest more than ``maxNestingDepth`` (10000)
deep, with the ``SyntaxError`` ``invalid character '{' exceeded max depth`` (the character is the opening bracket
that went one level too deep). Depth counts containers: ``{"a": 1}`` is 1 deep, ``{"a": [1]}`` is 2.

kubeplane's limit, :data:`MAX_DEPTH`, is lower, because of what it can store and serve: objects are encoded by
orjson, whose encoder refuses values nested more than :data:`ORJSON_MAX_DEPTH` containers deep, and an object is
served inside envelopes up to :data:`ENVELOPE_DEPTH` containers deep (a Table watch event with
``includeObject=Object``: event -> Table -> rows -> row -> object). So an object may nest at most
``ORJSON_MAX_DEPTH - ENVELOPE_DEPTH`` deep, and a body nested deeper is refused with upstream's message before
any other work is done on it. Nothing the Kubernetes types define comes near: without free-form fields
(``metadata.managedFields[].fieldsV1``) the deepest built-in object is about 15 containers deep.

Invariant that the rest of the API server relies on: every value a request carries into a handler, and every
object stored, is at most :data:`MAX_DEPTH` deep. A recursive walk that descends one container per call (patches,
schema pruning, validation, deep copies) therefore recurses at most ``MAX_DEPTH`` times, which Python's default
limit of 1000 frames holds with room to spare; ``tests/api/test_jsondepth.py`` runs each such walk at the limit.

The functions here never recurse themselves, so they are safe on values of any depth.
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

__all__ = [
    "ENVELOPE_DEPTH",
    "MAX_DEPTH",
    "ORJSON_MAX_DEPTH",
    "UPSTREAM_MAX_DEPTH",
    "compact_prefix",
    "raw_too_deep",
    "summarize",
    "syntax_error",
    "too_deep",
]

UPSTREAM_MAX_DEPTH: Final = 10000
"""Go ``encoding/json``'s (and ``sigs.k8s.io/json``'s) ``maxNestingDepth``."""

ORJSON_MAX_DEPTH: Final = 254
"""The deepest nesting ``orjson.dumps`` encodes (255 containers raise "Recursion limit reached")."""

ENVELOPE_DEPTH: Final = 4
"""The deepest envelope an object is served in: a Table watch event (event, Table, rows, row)."""

MAX_DEPTH: Final = ORJSON_MAX_DEPTH - ENVELOPE_DEPTH
"""kubeplane's nesting limit for request bodies, patches and patched objects (250)."""

_BRACKETS: Final = {ord("{"): "{", ord("["): "["}
# A JSON string (the unrolled ``"(?:[^"\\]|\\.)*"``, which runs without backtracking) or one bracket.
_TOKENS: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def syntax_error(bracket: str) -> str:
    """Go's scanner error for a container opened one level past the limit, ``bracket`` being ``{`` or ``[``."""
    return f"invalid character '{bracket}' exceeded max depth"


def too_deep(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """The opening bracket (``{`` or ``[``) of the first container, in document order, nested deeper than
    ``limit``; ``None`` if ``value`` nests at most ``limit`` deep.

    Fast path, for a limit orjson can test: ``value`` wrapped in ``ORJSON_MAX_DEPTH - limit`` lists encodes
    exactly when it nests at most ``limit`` deep (at ``MAX_DEPTH``, when it can be served in the deepest
    envelope), at orjson's speed (a pod: about 2 us against 25 us for the walk). Otherwise, and to name the
    bracket, it walks level by level (each level's containers in document order, so the first of the level past
    the limit is the one Go's scanner stops at), touching each value once: linear in the size of ``value``."""
    if not isinstance(value, dict | list):
        return None
    if 0 <= limit <= ORJSON_MAX_DEPTH:
        wrapped = value
        for _ in range(ORJSON_MAX_DEPTH - limit):
            wrapped = [wrapped]
        try:
            orjson.dumps(wrapped)
        except (orjson.JSONEncodeError, TypeError):  # too deep, or something else orjson refuses: walk
            pass
        else:
            return None
    level = [value]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return "{" if isinstance(level[0], dict) else "["
        below: list[Any] = []
        for container in level:
            children = container.values() if isinstance(container, dict) else container
            below.extend([child for child in children if isinstance(child, dict | list)])
        level = below
    return None


def raw_too_deep(raw: bytes, limit: int = MAX_DEPTH) -> tuple[int, str] | None:
    """For JSON text: the offset and bracket of the first container nested deeper than ``limit``, or ``None``.

    Used where the text could not be decoded (orjson stops at 1024 levels), to tell a body that is too deep
    from one that is malformed and to name the bracket as Go's scanner does. Brackets inside strings do not
    count; the text is not otherwise validated."""
    depth = 0
    for match in _TOKENS.finditer(raw):
        first = raw[match.start()]
        if first in _BRACKETS:
            depth += 1
            if depth > limit:
                return match.start(), _BRACKETS[first]
        elif first != ord('"'):
            depth -= 1
    return None


def summarize(raw: bytes, size: int = 30) -> str:
    """Upstream's ``summarizeData`` (``endpoints/handlers/rest.go``), which ends the message of a body it
    cannot decode: the first ``size`` bytes as text when the body starts with ``{``, else as hex; `` ...`` when
    cut."""
    if not raw:
        return "<empty>"
    head = raw[:size]
    text = head.decode("utf-8", "replace") if raw[:1] == b"{" else head.hex()
    return text + " ..." if len(raw) > size else text


class _Text(str):
    """Literal JSON text in :func:`compact_prefix`'s work stack (a ``str`` value there is a JSON string)."""


def compact_prefix(value: Any, size: int) -> str:
    """The first ``size`` characters of ``value`` as compact JSON with sorted keys (what Go's ``json.Marshal``
    writes for the generic maps evanphx/json-patch patches), for values of any depth; stops as soon as it has
    ``size`` characters, so it costs little more than the prefix."""
    out: list[str] = []
    length = 0
    stack: list[Any] = [value]
    while stack and length < size:
        item = stack.pop()
        if isinstance(item, _Text):
            text = str(item)
        elif isinstance(item, dict):
            parts: list[Any] = [_Text("}")]
            for index, key in enumerate(sorted(item, reverse=True)):
                parts.append(item[key])
                sep = "," if index < len(item) - 1 else ""
                parts.append(_Text(sep + orjson.dumps(key).decode() + ":"))
            parts.append(_Text("{"))
            stack.extend(parts)
            continue
        elif isinstance(item, list):
            parts = [_Text("]")]
            for index in range(len(item) - 1, -1, -1):
                parts.append(item[index])
                if index:
                    parts.append(_Text(","))
            parts.append(_Text("["))
            stack.extend(parts)
            continue
        else:
            text = orjson.dumps(item).decode()
        out.append(text)
        length += len(text)
    return "".join(out)[:size]
