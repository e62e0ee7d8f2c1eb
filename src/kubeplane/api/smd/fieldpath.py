"""Field paths and sets (structured-merge-diff ``fieldpath``), and their FieldsV1 wire form.

A path element is a tuple, hashable and cheap:

* ``("f", name)``: a field of a struct or map (``f:name``);
* ``("k", ((key, value), ...))``: an item of an associative list by its key fields, sorted by key name
  (``k:{"name":"nginx"}``);
* ``("v", value)``: an item of a set by its scalar value (``v:"a"``);
* ``("i", index)``: a list item by position (``i:0``); kubeplane reads and writes it but builds none, as the
  built-in types key every granular list.

A :class:`Set` is a tree: ``members`` are the paths that end at this node's children, ``children`` the subtrees.
A node both member and parent serialises as ``".": {}`` first in its object, as upstream's ``emitContentsV1``.
Ordering follows ``PathElement.Compare``: fields < keys < values < indexes; values compare numbers < strings <
booleans < lists < maps < null (``value.Compare``); Go compares strings bytewise, which is code-point order.
Sets are mutable while being built; the operations return new sets and never alias their inputs' nodes in a
way a later mutation could reach (results are built fresh or copied).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import orjson

PathElement = tuple[str, Any]
Path = tuple[PathElement, ...]


class FieldsError(ValueError):
    """A FieldsV1 document that does not decode (upstream ``SetFromValue``'s errors)."""


def _value_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if value is None:
        return (5, 0)
    return (3 if isinstance(value, list) else 4, orjson.dumps(value, option=orjson.OPT_SORT_KEYS))


_MEMO_SIZE = 4096
"""Entries of each string-keyed element memo below before it starts afresh (distinct keys are few: a kind's
condition types, container and port names)."""

_SORT_KEYS: dict[tuple[tuple[str, str], ...], tuple[Any, ...]] = {}
_ELEMENT_KEYS: dict[tuple[tuple[str, str], ...], str] = {}


def _string_keyed(payload: tuple[tuple[str, Any], ...]) -> bool:
    """Whether every key value of a ``k`` element is a string: the only payloads the memos take, since Python's
    ``1 == 1.0 == True`` would make a dict key of other scalars answer for a different JSON value."""
    return all(type(value) is str for _, value in payload)


def sort_key(pe: PathElement) -> tuple[Any, ...]:
    kind, payload = pe
    if kind == "f":
        return (0, payload)
    if kind == "k":
        if _string_keyed(payload):
            done = _SORT_KEYS.get(payload)
            if done is None:
                if len(_SORT_KEYS) >= _MEMO_SIZE:
                    _SORT_KEYS.clear()
                done = _SORT_KEYS[payload] = (1, tuple((name, (1, v)) for name, v in payload))
            return done
        return (1, tuple((name, _value_key(v)) for name, v in payload))
    if kind == "v":
        return (2, _value_key(_unfreeze(payload)))
    return (3, payload)


def freeze(value: Any) -> Any:
    """A hashable form of a JSON value (a set item's value may be any JSON value)."""
    if isinstance(value, (dict, list)):
        return ("__json__", orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())
    return value


def _unfreeze(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "__json__":
        return orjson.loads(value[1])
    return value


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _go_json(value: Any) -> str:
    """JSON as Go's ``encoding/json`` writes it, which structured-merge-diff uses for ``k:``/``v:`` keys
    (serialize-pe.go): ``<``, ``>``, ``&`` and U+2028/U+2029 escaped as ``\\u003c``... (HTML-safe by default).
    Those characters only occur inside JSON strings, so replacing them in the output is exact; decoding either
    spelling gives the same value, so a key a client wrote unescaped still parses."""
    return _json(value).translate(_GO_ESCAPES)


def element_string(pe: PathElement) -> str:
    """``PathElement.String``: ``.name``, ``[k=v,...]``, ``[=v]``, ``[i]``."""
    kind, payload = pe
    if kind == "f":
        return "." + str(payload)
    if kind == "k":
        return "[" + ",".join(f"{name}={_json(v)}" for name, v in payload) + "]"
    if kind == "v":
        return f"[={_json(_unfreeze(payload))}]"
    return f"[{payload}]"


def path_string(path: Path) -> str:
    return "".join(element_string(pe) for pe in path)


def element_key(pe: PathElement) -> str:
    """The FieldsV1 key of an element (``f:``, ``k:``, ``v:``, ``i:``)."""
    kind, payload = pe
    if kind == "f":
        return "f:" + str(payload)
    if kind == "k":
        if _string_keyed(payload):
            done = _ELEMENT_KEYS.get(payload)
            if done is None:
                if len(_ELEMENT_KEYS) >= _MEMO_SIZE:
                    _ELEMENT_KEYS.clear()
                done = _ELEMENT_KEYS[payload] = "k:" + _go_json(dict(payload))
            return done
        return "k:" + _go_json(dict(payload))
    if kind == "v":
        return "v:" + _go_json(_unfreeze(payload))
    return f"i:{payload}"


@lru_cache(maxsize=_MEMO_SIZE)
def parse_element(text: str) -> PathElement:
    """The inverse of :func:`element_key` (upstream ``DeserializePathElement``). Memoised: a pure function of a
    string whose answer is immutable (a failure raises and is not kept)."""
    prefix, sep, rest = text.partition(":")
    if not sep:
        raise FieldsError("unable to parse path element: no type prefix")
    if prefix == "f":
        return ("f", rest)
    try:
        if prefix == "k":
            keys = orjson.loads(rest)
            if not isinstance(keys, dict):
                raise FieldsError("expected key value pairs")
            return ("k", tuple(sorted((str(k), freeze(v)) for k, v in keys.items())))
        if prefix == "v":
            return ("v", freeze(orjson.loads(rest)))
        if prefix == "i":
            return ("i", int(rest))
    except (orjson.JSONDecodeError, ValueError) as exc:
        raise FieldsError(f"unable to parse path element {text!r}: {exc}") from None
    raise FieldsError(f"unknown path element type prefix {prefix!r}")


class Set:
    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[PathElement] = set()
        self.children: dict[PathElement, Set] = {}

    # -- building ------------------------------------------------------------------------------------------------

    def insert(self, path: Path) -> None:
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = Set()
            node = child
        if path:
            node.members.add(path[-1])

    def child(self, pe: PathElement) -> Set:
        node = self.children.get(pe)
        if node is None:
            node = self.children[pe] = Set()
        return node

    @classmethod
    def of(cls, *paths: Path) -> Set:
        out = cls()
        for path in paths:
            out.insert(path)
        return out

    def copy(self) -> Set:
        out = Set()
        out.members = set(self.members)
        out.children = {pe: c.copy() for pe, c in self.children.items()}
        return out

    # -- queries -------------------------------------------------------------------------------------------------

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def has(self, path: Path) -> bool:
        node: Set | None = self
        for pe in path[:-1]:
            assert node is not None
            node = node.children.get(pe)
            if node is None:
                return False
        return node is not None and bool(path) and path[-1] in node.members

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        """Every member path, in upstream's order (``Set.Iterate``: members before children at one node)."""
        for pe in sorted(self.members, key=sort_key):
            yield (*prefix, pe)
        for pe in sorted(self.children, key=sort_key):
            yield from self.children[pe].paths((*prefix, pe))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Set):
            return NotImplemented
        return list(self.paths()) == list(other.paths())

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return "Set(" + ", ".join(path_string(p) for p in self.paths()) + ")"

    # -- algebra -------------------------------------------------------------------------------------------------

    def union(self, other: Set) -> Set:
        out = Set()
        out.members = self.members | other.members
        for pe in self.children.keys() | other.children.keys():
            a, b = self.children.get(pe), other.children.get(pe)
            out.children[pe] = a.union(b) if a is not None and b is not None else (a or b).copy()  # type: ignore[union-attr]
        return out

    def difference(self, other: Set) -> Set:
        out = Set()
        out.members = self.members - other.members
        for pe, a in self.children.items():
            b = other.children.get(pe)
            child = a.copy() if b is None else a.difference(b)
            if not child.empty():
                out.children[pe] = child
        return out

    def intersection(self, other: Set) -> Set:
        out = Set()
        out.members = self.members & other.members
        for pe, a in self.children.items():
            b = other.children.get(pe)
            if b is not None:
                child = a.intersection(b)
                if not child.empty():
                    out.children[pe] = child
        return out

    # -- wire form -----------------------------------------------------------------------------------------------

    def to_fields_v1(self) -> dict[str, Any]:
        """The FieldsV1 object (``Set.ToJSON``), keys in upstream's order."""
        return self._emit(include_self=False)

    def _emit(self, *, include_self: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if include_self and (self.members or self.children):
            out["."] = {}
        for pe in sorted(self.members | self.children.keys(), key=sort_key):
            child = self.children.get(pe)
            if child is None:
                out[element_key(pe)] = {}
            else:
                out[element_key(pe)] = child._emit(include_self=pe in self.members)
        return out

    @classmethod
    def from_fields_v1(cls, doc: Any) -> Set:
        """``Set.FromJSON``; :class:`FieldsError` when it is not a FieldsV1 document."""
        if not isinstance(doc, dict):
            raise FieldsError("expected an object")
        out = cls()
        for key, value in doc.items():
            if key == ".":
                continue
            pe = parse_element(key)
            if not isinstance(value, dict):
                raise FieldsError("expected an object")
            if not value:
                out.members.add(pe)
                continue
            if "." in value:
                out.members.add(pe)
            child = cls.from_fields_v1(value)
            if child.members or child.children:
                out.children[pe] = child
        return out
