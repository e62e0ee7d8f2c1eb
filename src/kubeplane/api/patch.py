"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902), pure and non-mutating, with kube-apiserver's limits.

Upstream is ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`` (``applyJSPatch``), which hands
both patch types to ``github.com/evanphx/json-patch``; ``tests/api/test_patch.py`` pins the RFC appendix
examples and the status codes below.

Invariants
    Neither function mutates its arguments, and the result shares no mutable container with them: inputs are
    deep-copied, so the caller may keep using the original object and hand the result on. A JSON patch is
    all-or-nothing -- any failing operation, a failed ``test`` included, fails the whole patch and no partial
    document escapes. Values compare as JSON does: ``1 == 1.0`` but ``true != 1``.

Errors (:class:`PatchError`, with ``code`` the HTTP status kube-apiserver answers with)
    * 400 Bad Request -- the body is not a JSON patch at all (not an array of objects: upstream's
      ``DecodePatch`` fails), or a merge patch is ``null`` or a scalar (evanphx's ``ErrBadJSONPatch``).
    * 413 Request Entity Too Large -- more than :data:`MAX_JSON_PATCH_OPERATIONS` operations, with upstream's
      message ``The allowed maximum operations in a JSON patch is 10000, got N``.
    * 422 Unprocessable Entity -- a well-formed patch that does not apply: unknown op, missing or malformed
      ``path``/``from``/``value``, a path that does not exist, a bad array index, a failed ``test``, or
      ``copy`` operations whose copied values add up to more than :data:`MAX_JSON_PATCH_COPY_BYTES` (upstream's
      ``JSONPatchMaxCopyBytes``, since CVE-2019-1002100: a few ``copy`` operations that each copy the growing
      document would otherwise double it each time, a 2.6 KB patch reaching gigabytes).

Depth (:mod:`kubeplane.api.jsondepth`)
    The API server hands these functions documents and patches nested at most ``jsondepth.MAX_DEPTH`` deep
    (it refuses deeper bodies, and stores nothing deeper). The recursive walks here descend one level of the
    patch, or of a value taken from it, per call, so they stay that shallow: a merge patch's result is no
    deeper than its document or its patch. A JSON patch is different: ``add`` puts a value at the end of a
    path and ``copy`` can put the document inside itself, so its document can grow far deeper (as deep as the
    copy budget allows). Everything that touches the document while a JSON patch runs is therefore iterative
    (pointer walks, the ``copy`` operation's copy and size, messages), and the API server checks the depth of
    the result once, when the patch is done (``apiserver/subresources.py``, upstream's decode of the patched
    JSON).

Deliberate deviations from evanphx/json-patch v4, where it departs from the RFCs (the RFC wins here):
negative array indices are refused (evanphx accepts ``/a/-1`` as the last element); ``test`` of a missing path
fails even against ``null``; ``add``/``replace``/``test`` without ``value`` fail instead of using ``null``; a
merge patch copies arrays verbatim (evanphx prunes null members of objects inside arrays added where the
target had nothing).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import orjson

from kubeplane.api import jsondepth

__all__ = [
    "MAX_JSON_PATCH_COPY_BYTES",
    "MAX_JSON_PATCH_OPERATIONS",
    "PatchError",
    "check_merge_patch",
    "create_merge_patch",
    "json_equal",
    "json_merge_patch",
    "json_patch",
]

MAX_JSON_PATCH_OPERATIONS: Final = 10000
"""kube-apiserver's ``maxJSONPatchOperations``: a longer JSON patch is refused with 413 before it is applied."""

MAX_JSON_PATCH_COPY_BYTES: Final = 3 * 1024 * 1024
"""kube-apiserver's ``JSONPatchMaxCopyBytes`` (evanphx's ``AccumulatedCopySizeLimit``): the total size, as compact
JSON, of the values a patch's ``copy`` operations may copy."""

_INDEX = re.compile(r"0|[1-9][0-9]*", re.ASCII)
_BAD_ESCAPE = re.compile(r"~(?![01])")


class PatchError(ValueError):
    """A patch that is malformed or does not apply. ``code`` is the HTTP status: 400, 413 or 422 (see module)."""

    def __init__(self, message: str, *, code: int = 422) -> None:
        super().__init__(message)
        self.code = code


def _copy(value: Any) -> Any:
    """A deep copy; recursive, so only for values bounded by the API server's depth check (see module)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _copy_any_depth(value: Any) -> Any:
    """:func:`_copy` with an explicit stack, for a value of any depth (what a JSON patch ``copy`` copies)."""
    if not isinstance(value, dict | list):
        return value
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        pairs = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in pairs:
            copied = item
            if isinstance(item, dict | list):
                copied = {} if isinstance(item, dict) else []
                stack.append((item, copied))
            if isinstance(target, dict):
                target[key] = copied
            else:
                target.append(copied)
    return root


def _compact_size(value: Any) -> int:
    """The length in bytes of ``value`` as compact JSON, for a value of any depth (explicit stack)."""
    size = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            size += 2 + max(len(item) - 1, 0) + sum(len(_scalar_json(key)) + 1 for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            size += 2 + max(len(item) - 1, 0)
            stack.extend(item)
        else:
            size += len(_scalar_json(item))
    return size


def _scalar_json(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):  # an integer past 64 bits
        return json.dumps(value, ensure_ascii=False).encode()


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality (RFC 6902 section 4.6): numbers by value, booleans only equal booleans, objects ignore
    member order, arrays compare element-wise. An explicit stack: a ``test`` compares the patch's value with
    whatever the document holds there, at any depth."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, bool) or isinstance(y, bool):
            if x is not y:
                return False
        elif isinstance(x, int | float) and isinstance(y, int | float):
            if x != y:
                return False
        elif isinstance(x, dict):
            if not isinstance(y, dict) or x.keys() != y.keys():
                return False
            stack.extend([(x[key], y[key]) for key in x])
        elif isinstance(x, list):
            if not isinstance(y, list) or len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif type(x) is not type(y) or not bool(x == y):
            return False
    return True


# --- RFC 7386 ----------------------------------------------------------------------------------------------------


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return _copy(patch)
    result = _copy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def json_merge_patch(original: Any, patch: Any) -> Any:
    """RFC 7386 ``MergePatch(original, patch)``: a ``null`` member deletes, object members merge recursively,
    anything else (arrays included) replaces; a patch that is not an object replaces the whole document.

    The API server first calls :func:`check_merge_patch`, which refuses the top-level ``null`` and scalars
    upstream refuses; this function itself is the plain RFC algorithm."""
    try:
        return _merge(original, patch)
    except RecursionError:
        raise PatchError("the document or patch is nested too deeply", code=400) from None


def check_merge_patch(patch: Any) -> None:
    """Refuse, with 400 as kube-apiserver, a merge patch that is ``null`` or a scalar ("Invalid JSON Patch").

    An array passes, as upstream: it replaces the document, and the server then rejects the non-object result
    when it decodes it (422)."""
    if not isinstance(patch, dict | list):
        raise PatchError(f"Invalid JSON Patch: a merge patch must be a JSON object, got {_kind(patch)}", code=400)


def _diff(original: dict[str, Any], modified: dict[str, Any]) -> dict[str, Any]:
    patch: dict[str, Any] = {key: None for key in original if key not in modified}
    for key, value in modified.items():
        if key not in original:
            patch[key] = _copy(value)
            continue
        before = original[key]
        if isinstance(before, dict) and isinstance(value, dict):
            nested = _diff(before, value)
            if nested:
                patch[key] = nested
        elif not json_equal(before, value):
            patch[key] = _copy(value)
    return patch


def create_merge_patch(original: Any, modified: Any) -> Any:
    """The smallest merge patch taking ``original`` to ``modified`` (evanphx ``CreateMergePatch``, as kubectl
    uses it): removed members become ``null``, changed objects recurse, any other change (arrays included) is
    the new value; ``{}`` when nothing changed. When either side is not an object, the patch is ``modified``.

    ``json_merge_patch(original, create_merge_patch(original, modified)) == modified`` holds whenever
    ``modified`` has no ``null`` object member outside arrays -- RFC 7386 cannot set a member to null."""
    if isinstance(original, dict) and isinstance(modified, dict):
        return _diff(original, modified)
    return _copy(modified)


# --- RFC 6902 ----------------------------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


class _Op:
    """One operation being applied: carries the op name and position so every error says which one failed."""

    __slots__ = ("index", "name", "raw")

    def __init__(self, index: int, raw: dict[str, Any]) -> None:
        self.index, self.raw = index, raw
        name = raw.get("op")
        self.name = name if isinstance(name, str) else ""

    def error(self, detail: str) -> PatchError:
        return PatchError(f"jsonpatch {self.name} operation does not apply: {detail} (operation {self.index})")

    def pointer(self, member: str) -> tuple[str, list[str]]:
        pointer = self.raw.get(member)
        if member not in self.raw:
            raise self.error(f'the operation has no "{member}"')
        if not isinstance(pointer, str):
            raise self.error(f'"{member}" must be a JSON pointer string, got {_kind(pointer)}')
        if pointer == "":
            return pointer, []
        if not pointer.startswith("/"):
            raise self.error(f'{member} "{pointer}" is not a JSON pointer: it must be empty or start with "/"')
        if _BAD_ESCAPE.search(pointer):
            raise self.error(f'{member} "{pointer}" has an invalid escape: "~" must be followed by "0" or "1"')
        return pointer, [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]

    def value(self) -> Any:
        if "value" not in self.raw:
            raise self.error('the operation has no "value"')
        return _copy(self.raw["value"])


def _array_index(op: _Op, pointer: str, token: str, length: int, *, end_ok: bool) -> int:
    if token == "-" and end_ok:
        return length
    if not _INDEX.fullmatch(token):
        raise op.error(f'path "{pointer}": "{token}" is not a valid array index')
    index = int(token)
    if index > length or (index == length and not end_ok):
        raise op.error(f'path "{pointer}": index {index} is out of bounds for an array of length {length}')
    return index


def _parent(op: _Op, doc: Any, pointer: str, tokens: list[str]) -> Any:
    """The container holding the location ``tokens`` names; every step but the last must exist."""
    node = doc
    for depth, token in enumerate(tokens[:-1]):
        prefix = "/" + "/".join(tokens[: depth + 1])
        if isinstance(node, dict):
            if token not in node:
                raise op.error(f'path "{pointer}": "{prefix}" does not exist')
            node = node[token]
        elif isinstance(node, list):
            node = node[_array_index(op, pointer, token, len(node), end_ok=False)]
        else:
            raise op.error(f'path "{pointer}": "{prefix}" is inside {_kind(node)}, not an object or array')
    if not isinstance(node, dict | list):
        raise op.error(f'path "{pointer}": the parent is {_kind(node)}, not an object or array')
    return node


def _get(op: _Op, doc: Any, pointer: str, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent, last = _parent(op, doc, pointer, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise op.error(f'path "{pointer}" does not exist')
        return parent[last]
    return parent[_array_index(op, pointer, last, len(parent), end_ok=False)]


def _add(op: _Op, doc: Any, pointer: str, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _parent(op, doc, pointer, tokens), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    else:
        parent.insert(_array_index(op, pointer, last, len(parent), end_ok=True), value)
    return doc


def _remove(op: _Op, doc: Any, pointer: str, tokens: list[str]) -> Any:
    if not tokens:
        raise op.error("the whole document cannot be removed")
    parent, last = _parent(op, doc, pointer, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise op.error(f'path "{pointer}" does not exist')
        return parent.pop(last)
    return parent.pop(_array_index(op, pointer, last, len(parent), end_ok=False))


def _replace(op: _Op, doc: Any, pointer: str, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent, last = _parent(op, doc, pointer, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise op.error(f'path "{pointer}" does not exist')
        parent[last] = value
    else:
        parent[_array_index(op, pointer, last, len(parent), end_ok=False)] = value
    return doc


_OPS: Final = ("add", "remove", "replace", "move", "copy", "test")


class _CopyBudget:
    """The bytes a patch's ``copy`` operations have copied so far (evanphx's ``accumulatedCopySize``: each copied
    value counts its compact JSON length), refused past :data:`MAX_JSON_PATCH_COPY_BYTES`."""

    __slots__ = ("spent",)

    def __init__(self) -> None:
        self.spent = 0

    def spend(self, value: Any) -> Any:
        """Count ``value``'s size, refuse past the limit, and return a deep copy of it.

        A patch may nest a document far deeper than any body (each ``copy`` can put the document inside
        itself), so this works at any depth: orjson encodes and decodes up to 254 levels, an explicit stack
        does the rest."""
        try:
            data: bytes | None = orjson.dumps(value)
        except (orjson.JSONEncodeError, TypeError):  # nested past orjson's limit, or a number past 64 bits
            data = None
        self.spent += len(data) if data is not None else _compact_size(value)
        if self.spent > MAX_JSON_PATCH_COPY_BYTES:
            raise PatchError(
                "Unable to complete the copy, the accumulated size increase of copy is "
                f"{self.spent}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
            )
        return orjson.loads(data) if data is not None else _copy_any_depth(value)


def _apply(op: _Op, doc: Any, budget: _CopyBudget) -> Any:
    if op.name not in _OPS:
        raise PatchError(
            f"unexpected JSON patch op {_short(op.raw.get('op'))} (operation {op.index}): "
            "must be one of add, remove, replace, move, copy, test"
        )
    pointer, tokens = op.pointer("path")
    match op.name:
        case "add":
            return _add(op, doc, pointer, tokens, op.value())
        case "remove":
            _remove(op, doc, pointer, tokens)
            return doc
        case "replace":
            return _replace(op, doc, pointer, tokens, op.value())
        case "move":
            source, source_tokens = op.pointer("from")
            if source_tokens == tokens[: len(source_tokens)] and len(source_tokens) < len(tokens):
                raise op.error(f'"{source}" cannot be moved into its own child "{pointer}"')
            if source_tokens == tokens:
                _get(op, doc, source, source_tokens)
                return doc
            return _add(op, doc, pointer, tokens, _remove(op, doc, source, source_tokens))
        case "copy":
            source, source_tokens = op.pointer("from")
            return _add(op, doc, pointer, tokens, budget.spend(_get(op, doc, source, source_tokens)))
        case _:  # test
            expected, actual = op.value(), _get(op, doc, pointer, tokens)
            if not json_equal(actual, expected):
                raise op.error(f'value at "{pointer}" is {_short(actual)}, not {_short(expected)}')
            return doc


def _short(value: Any, limit: int = 80) -> str:
    """``value`` as JSON for a message, cut to ``limit``; a value too deep to render whole (a document a patch
    nested past the depth limit) is shown as its first characters."""
    if jsondepth.too_deep(value, 100) is not None:
        return jsondepth.compact_prefix(value, limit - 3) + "..."
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_patch(document: Any, operations: Any) -> Any:
    """Apply the RFC 6902 patch ``operations`` to ``document`` and return the new document.

    Pointers follow RFC 6901 (``~1`` is ``/``, ``~0`` is ``~``; ``""`` is the whole document). Array indices
    are ``0`` or digits without a leading zero; ``add`` may insert at the length or at ``-`` (the end), the
    other operations need an existing element. ``move`` into the moved value's own child is refused; members
    an operation does not define are ignored. Raises :class:`PatchError` (400, 413 or 422)."""
    if not isinstance(operations, list):
        raise PatchError(f"a JSON patch must be an array of operations, got {_kind(operations)}", code=400)
    for index, raw in enumerate(operations):
        if not isinstance(raw, dict):
            raise PatchError(f"JSON patch operation {index} must be an object, got {_kind(raw)}", code=400)
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(operations)}",
            code=413,
        )
    try:
        doc = _copy(document)
        budget = _CopyBudget()
        for index, raw in enumerate(operations):
            doc = _apply(_Op(index, raw), doc, budget)
    except RecursionError:
        raise PatchError("the document or patch is nested too deeply", code=400) from None
    return doc
