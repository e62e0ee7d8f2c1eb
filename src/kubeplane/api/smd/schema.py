"""Type information for server-side apply: which maps are granular or atomic, which lists atomic, sets or maps
keyed by which fields, for every built-in kind; a deduced type for kinds without a schema.

Built-in kinds pair two generated files: ``gotypes.json`` (the Go structs' JSON fields and types) and
``smd_types.json`` (their ``+listType``/``+listMapKey``/``+mapType``/``+structType`` markers and patch
strategies, see ``tools/gen_smd_types.py``), as kube-apiserver derives its structured-merge-diff schema from the
OpenAPI those markers produce (kube-openapi ``schemaconv``). Defaults there: a list without a marker is atomic, a
map (Go map or struct) granular.

Kinds without one (custom resources before a schema is plugged in) use structured-merge-diff's deduced type
(``__untyped_deduced_``): maps granular all the way down, lists atomic, scalars leaves. A schema source for those
(the CRD work) registers itself with :func:`register_schema`.

Types are :class:`Atom` nodes built lazily, once per Go type, and shared: never mutate them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

SCALAR, STRUCT, MAP, LIST = "scalar", "struct", "map", "list"
ATOMIC, GRANULAR, SET, ASSOCIATIVE = "atomic", "granular", "set", "map"


class Atom:
    """One type. ``kind``: scalar, struct (``fields``, the JSON key's type; ``elem`` for keys it does not name,
    None for a Go struct), map (``elem``), list (``elem``, ``rel``: atomic, set or map with ``keys``).
    ``rel`` of a struct or map: atomic or granular. ``deduced``: the value decides its own shape."""

    __slots__ = ("deduced", "elem", "fields", "keys", "kind", "rel")

    def __init__(
        self,
        kind: str,
        *,
        rel: str = GRANULAR,
        fields: dict[str, Atom] | None = None,
        elem: Atom | None = None,
        keys: tuple[str, ...] = (),
        deduced: bool = False,
    ) -> None:
        self.kind = kind
        self.rel = rel
        self.fields = fields
        self.elem = elem
        self.keys = keys
        self.deduced = deduced

    def field(self, key: str) -> Atom | None:
        """The type of a map entry or struct field; None for a field a struct does not declare."""
        if self.fields is not None:
            found = self.fields.get(key)
            if found is not None:
                return found
        return self.elem

    def __repr__(self) -> str:
        return f"Atom({self.kind}, {self.rel}, keys={self.keys})"


SCALAR_ATOM = Atom(SCALAR, rel=ATOMIC)
UNTYPED_ATOMIC = Atom(SCALAR, rel=ATOMIC, deduced=True)
"""``__untyped_atomic_``: whatever the value, one leaf."""
DEDUCED = Atom(MAP, rel=GRANULAR, deduced=True)
"""``__untyped_deduced_``: a map is granular (its entries deduced), a list atomic, a scalar a leaf."""
DEDUCED.elem = DEDUCED

SchemaSource = Callable[[str, str, str], "Atom | None"]
_sources: list[SchemaSource] = []


def register_schema(source: SchemaSource) -> None:
    """Add a source of types for (group, version, kind) that the built-in tables do not know (CRDs)."""
    _sources.append(source)


def unregister_schema(source: SchemaSource) -> None:
    _sources.remove(source)


@cache
def _tables() -> tuple[dict[str, Any], dict[str, Any]]:
    pkg = resources.files("kubeplane.api")
    go = json.loads((pkg / "gotypes.json").read_text())
    smd = json.loads((pkg / "smd_types.json").read_text())
    return go, smd


_SPECIAL_DEDUCED = {"any"}


class _Builder:
    def __init__(self) -> None:
        go, smd = _tables()
        self.types: dict[str, Any] = go["types"]
        self.roots: dict[str, str] = go["roots"]
        self.marks: dict[str, dict[str, list[Any]]] = smd["fields"]
        self.atomic_structs = set(smd["atomic_structs"])
        self.built: dict[str, Atom] = {}

    def expr(self, expr: str, mark: list[Any] | None = None) -> Atom:
        if expr.startswith("[]"):
            if expr == "[]uint8":
                return SCALAR_ATOM  # []byte: a base64 string
            elem = self.expr(expr[2:])
            if mark is not None and mark[0] == "list":
                return Atom(LIST, rel=mark[1], elem=elem, keys=tuple(mark[2]))
            return Atom(LIST, rel=ATOMIC, elem=elem)
        if expr.startswith("map["):
            depth, i = 0, 4
            while True:
                ch = expr[i]
                if ch == "[":
                    depth += 1
                elif ch == "]":
                    if depth == 0:
                        break
                    depth -= 1
                i += 1
            rel = mark[1] if mark is not None and mark[0] == "map" else GRANULAR
            return Atom(MAP, rel=rel, elem=self.expr(expr[i + 1 :]))
        if expr == "any":
            return DEDUCED
        entry = self.types.get(expr)
        if entry is None:
            return SCALAR_ATOM  # a Go builtin
        if entry[0] == "special":
            return UNTYPED_ATOMIC if entry[2] == "any" else SCALAR_ATOM
        if entry[0] == "named":
            return self.expr(entry[2], mark)
        atom = self.built.get(expr)
        if atom is None:
            rel = ATOMIC if expr in self.atomic_structs else GRANULAR
            atom = self.built[expr] = Atom(STRUCT, rel=rel, fields={})
            marks = self.marks.get(expr, {})
            assert atom.fields is not None
            for key, child in entry[2].items():
                atom.fields[key] = self.expr(child, marks.get(key))
        if mark is not None and mark[0] == "map" and mark[1] == ATOMIC and atom.rel != ATOMIC:
            return Atom(STRUCT, rel=ATOMIC, fields=atom.fields)
        return atom


@cache
def _builder() -> _Builder:
    return _Builder()


@cache
def _builtin(group: str, version: str, kind: str) -> Atom | None:
    builder = _builder()
    root = builder.roots.get(f"{group}/{version}/{kind}")
    return None if root is None else builder.expr(root)


def type_of(group: str, version: str, kind: str) -> Atom:
    """The type of a kind: built-in, from a registered source, else deduced."""
    found = _builtin(group, version, kind)
    if found is not None:
        return found
    for source in _sources:
        atom = source(group, version, kind)
        if atom is not None:
            return atom
    return DEDUCED


def go_type(name: str) -> Atom:
    """The type of a Go type of the generated tables by its full name (``k8s.io/apimachinery/pkg/apis/meta/v1
    .ObjectMeta``), as a CRD's schema refers to ObjectMeta."""
    return _builder().expr(name)
