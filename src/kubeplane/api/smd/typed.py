"""Typed walks of JSON objects (structured-merge-diff ``typed``): the field set of a value (``ToFieldSet``), the
comparison of two values (``Compare``: added, modified, removed), the merge of an applied configuration into a
live object (``Merge``, the right-hand side wins), and the removal of a set's items (``RemoveItems``).

Shapes follow :mod:`.schema`: a granular map or struct is walked by entry (an entry of a struct's declared field
becomes a member only when null or an empty object, as upstream; an undeclared key, a map's entry, always); a
set or associative list by item (``v:`` / ``k:`` elements; every item is a member); everything else (scalars,
atomic lists and maps, deduced lists) is one leaf. A value whose shape disagrees with its type (a list where a
map is declared) is a leaf too, where upstream would fail validation: kubeplane validates objects elsewhere.

Performance: :func:`compare` skips a subtree as soon as both sides are equal (one C-level ``==``), so an update
costs in proportion to what changed, not to the object's size.
"""

from __future__ import annotations

from typing import Any

from .fieldpath import PathElement, Set, element_key, freeze, sort_key
from .schema import ATOMIC, DEDUCED, LIST, MAP, STRUCT, Atom

MISSING: Any = object()
KEY_DEFAULTS = {"protocol": "TCP"}
"""Key fields with an OpenAPI default (ContainerPort, ServicePort, EndpointPort ``protocol``): an item that omits
one is keyed by the default, as structured-merge-diff's ``keyedAssociativeListItemToPathElement`` does."""


def _granular_map(value: Any, atom: Atom) -> bool:
    return isinstance(value, dict) and atom.kind in (STRUCT, MAP) and atom.rel != ATOMIC


def _granular_list(value: Any, atom: Atom) -> bool:
    return isinstance(value, list) and atom.kind == LIST and atom.rel != ATOMIC and not atom.deduced


def item_element(item: Any, atom: Atom) -> PathElement:
    """The path element of a list item: ``k:`` by the keys of an associative list, ``v:`` in a set."""
    if atom.keys:
        if not isinstance(item, dict):
            return ("v", freeze(item))
        fields = []
        for key in atom.keys:
            if key in item:
                fields.append((key, freeze(item[key])))
            elif key in KEY_DEFAULTS:
                fields.append((key, KEY_DEFAULTS[key]))
        return ("k", tuple(sorted(fields)))
    return ("v", freeze(item))


def _field(atom: Atom, key: str) -> tuple[Atom, bool]:
    """(type of the entry, whether a struct declares it)."""
    if atom.fields is not None:
        found = atom.fields.get(key)
        if found is not None:
            return found, True
    return (atom.elem or DEDUCED), False


# -- ToFieldSet ----------------------------------------------------------------------------------------------------


def to_field_set(value: Any, atom: Atom) -> Set:
    out = Set()
    _children(value, atom, out)
    return out


def _children(value: Any, atom: Atom, node: Set) -> bool:
    """Fill ``node`` with the children of ``value``; False when the value is a leaf."""
    if _granular_map(value, atom):
        for key, child in value.items():
            child_atom, declared = _field(atom, key)
            pe = ("f", key)
            sub = Set()
            if not _children(child, child_atom, sub) or child is None or child == {} or not declared:
                node.members.add(pe)
            if sub.members or sub.children:
                node.children[pe] = sub
        return True
    if _granular_list(value, atom):
        elem = atom.elem or DEDUCED
        for item in value:
            pe = item_element(item, atom)
            node.members.add(pe)
            sub = Set()
            _children(item, elem, sub)
            if sub.members or sub.children:
                node.children[pe] = sub
        return True
    return False


# -- Compare -------------------------------------------------------------------------------------------------------


class Comparison:
    """What changed from lhs to rhs: ``added``, ``modified``, ``removed`` (upstream ``typed.Comparison``)."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added = Set()
        self.modified = Set()
        self.removed = Set()

    def is_same(self) -> bool:
        return self.added.empty() and self.modified.empty() and self.removed.empty()


def compare(lhs: Any, rhs: Any, atom: Atom) -> Comparison:
    out = Comparison()
    if lhs is rhs or lhs == rhs:
        return out
    _compare_children(lhs, rhs, atom, out)
    return out


def _compare_children(lhs: Any, rhs: Any, atom: Atom, out: Comparison) -> None:
    """Each entry (map key or list item's element) of either side through :func:`_compare_entry`, an entry equal
    on both sides skipped here already (the common case: a write changes a few leaves). The order entries are
    visited in does not matter: the answer is sets."""
    if (lhs is MISSING or _granular_map(lhs, atom)) and (rhs is MISSING or _granular_map(rhs, atom)):
        left = _NOTHING if lhs is MISSING else lhs
        right = _NOTHING if rhs is MISSING else rhs
        for key, value in left.items():
            other = right.get(key, MISSING)
            if other is not MISSING and (value is other or value == other):
                continue
            _compare_entry(value, other, _field(atom, key)[0], ("f", key), out)
        for key, other in right.items():
            if key not in left:
                _compare_entry(MISSING, other, _field(atom, key)[0], ("f", key), out)
        return
    elem = atom.elem or DEDUCED
    if lhs is not MISSING and rhs is not MISSING and _paired(lhs, rhs, atom):
        for value, other in zip(lhs, rhs, strict=True):
            if value is not other and value != other:
                _compare_entry(value, other, elem, item_element(other, atom), out)
        return
    left_items = _NOTHING if lhs is MISSING else {item_element(i, atom): i for i in reversed(lhs)}
    right_items = _NOTHING if rhs is MISSING else {item_element(i, atom): i for i in reversed(rhs)}
    for pe, value in left_items.items():
        other = right_items.get(pe, MISSING)
        if other is not MISSING and (value is other or value == other):
            continue
        _compare_entry(value, other, elem, pe, out)
    for pe, other in right_items.items():
        if pe not in left_items:
            _compare_entry(MISSING, other, elem, pe, out)


def _paired(lhs: list[Any], rhs: list[Any], atom: Atom) -> bool:
    """Whether two sides of an associative list with one key field hold the same items in the same order, each
    keyed by a string once (a pod's conditions, IPs and containers before and after a write): then the items
    at one position are the ones the general walk pairs by path element, and only the unequal pairs need their
    element built."""
    keys = atom.keys
    if len(keys) != 1 or len(lhs) != len(rhs):
        return False
    key = keys[0]
    seen: set[str] = set()
    for left, right in zip(lhs, rhs, strict=True):
        if type(left) is not dict or type(right) is not dict:
            return False
        name = left.get(key)
        if type(name) is not str or right.get(key) != name or name in seen:
            return False
        seen.add(name)
    return True


_NOTHING: dict[Any, Any] = {}
"""The entries of a missing side (never written)."""


def _compare_entry(lhs: Any, rhs: Any, atom: Atom, pe: PathElement, out: Comparison) -> None:
    if lhs is not MISSING and rhs is not MISSING and (lhs is rhs or lhs == rhs):
        return
    some = rhs if lhs is MISSING else lhs
    other = lhs if lhs is MISSING else rhs
    granular = (_granular_map(some, atom) or _granular_list(some, atom)) and (
        other is MISSING or type(other) is type(some)
    )
    if not granular:
        target = out.added if lhs is MISSING else out.removed if rhs is MISSING else out.modified
        target.members.add(pe)
        return
    if lhs is MISSING:
        out.added.members.add(pe)
    elif rhs is MISSING:
        out.removed.members.add(pe)
    sub = Comparison()
    _compare_children(lhs, rhs, atom, sub)
    for mine, theirs in ((out.added, sub.added), (out.modified, sub.modified), (out.removed, sub.removed)):
        if theirs.members or theirs.children:
            mine.children[pe] = theirs


# -- Merge ---------------------------------------------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, atom: Atom) -> Any:
    """``lhs.Merge(rhs)``: the applied ``rhs`` over the live ``lhs``; a struct field merged to null is dropped
    (Go's decoder would leave it unset)."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        return rhs
    if _granular_map(rhs, atom) and isinstance(lhs, dict):
        out = dict(lhs)
        for key, value in rhs.items():
            child_atom, declared = _field(atom, key)
            merged = merge(lhs.get(key, MISSING), value, child_atom)
            if merged is None and declared:
                out.pop(key, None)
            else:
                out[key] = merged
        return out
    if _granular_list(rhs, atom) and isinstance(lhs, list):
        return _merge_list(lhs, rhs, atom)
    return rhs


def _merge_list(lhs: list[Any], rhs: list[Any], atom: Atom) -> list[Any]:
    """Upstream's ``mergingWalker.visitListItems``: the live order, with the applied items that are new inserted
    where the applied list puts them and shared items kept in the applied list's order."""
    elem = atom.elem or DEDUCED
    lpes = [item_element(i, atom) for i in lhs]
    rpes = [item_element(i, atom) for i in rhs]
    lobs: dict[PathElement, Any] = {}
    for pe, item in zip(lpes, lhs, strict=True):
        lobs.setdefault(pe, item)
    robs: dict[PathElement, Any] = {}
    for pe, item in zip(rpes, rhs, strict=True):
        robs.setdefault(pe, item)
    shared = [pe for pe in rpes if pe in lobs]
    next_shared = 0
    merged_rhs: set[PathElement] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(lpes) or ri < len(rpes):
        if li < len(lpes) and ri < len(rpes):
            pe = lpes[li]
            if pe == rpes[ri]:
                merged_rhs.add(pe)
                out.append(merge(lobs[pe], robs[pe], elem))
                li += 1
                ri += 1
                if next_shared < len(shared) and shared[next_shared] == pe:
                    next_shared += 1
                continue
            if pe in robs and next_shared < len(shared) and shared[next_shared] != pe:
                li += 1
                continue
        if li < len(lpes):
            pe = lpes[li]
            if pe not in robs:
                out.append(lhs[li])
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
                continue
        if ri < len(rpes):
            pe = rpes[ri]
            merged_rhs.add(pe)
            out.append(merge(lobs.get(pe, MISSING), robs[pe], elem))
            ri += 1
            if next_shared < len(shared) and shared[next_shared] == pe:
                next_shared += 1
    return out


# -- RemoveItems ---------------------------------------------------------------------------------------------------


def remove_items(value: Any, remove: Set, atom: Atom) -> Any:
    """``RemoveItems``: ``value`` without the members of ``remove`` (and, below them, what their children name).
    A map or list left empty becomes MISSING to its parent, which drops it."""
    if _granular_map(value, atom):
        out = {}
        for key, child in value.items():
            pe = ("f", key)
            if pe in remove.members:
                continue
            sub = remove.children.get(pe)
            kept = child if sub is None else remove_items(child, sub, _field(atom, key)[0])
            if kept is not MISSING:
                out[key] = kept
        return out if out else MISSING
    if _granular_list(value, atom):
        elem = atom.elem or DEDUCED
        items = []
        for item in value:
            pe = item_element(item, atom)
            if pe in remove.members:
                continue
            sub = remove.children.get(pe)
            kept = item if sub is None else remove_items(item, sub, elem)
            items.append({} if kept is MISSING else kept)
        return items if items else MISSING
    return value


def remove_from_object(obj: dict[str, Any], remove: Set, atom: Atom) -> dict[str, Any]:
    out = remove_items(obj, remove, atom)
    return {} if out is MISSING else dict(out)


def ensure_named_fields_are_members(fields: Set, atom: Atom) -> Set:
    """``EnsureNamedFieldsAreMembers``: every struct field with children is also a member (so removing the set
    removes the field itself)."""
    out = Set()
    out.members = set(fields.members)
    for pe, child in fields.children.items():
        child_atom = atom
        if pe[0] == "f":
            if atom.kind == STRUCT and atom.fields is not None and pe[1] in atom.fields:
                out.members.add(pe)
            child_atom = _field(atom, pe[1])[0]
        else:
            child_atom = atom.elem or DEDUCED
        out.children[pe] = ensure_named_fields_are_members(child, child_atom)
    return out


def added_fields_v1(value: Any, atom: Atom) -> dict[str, Any]:
    """``compare({}, value).added`` in its FieldsV1 form, built in one walk without a :class:`Set` (a create's
    field set: every entry added, each granular parent with its ``"."``). Equal to
    ``compare(MISSING-or-{}, value, atom).added.to_fields_v1()``; the create path's shortcut."""
    return _added(value, atom) or {}


def _added(value: Any, atom: Atom) -> dict[str, Any] | None:
    """The children of ``value`` as FieldsV1 (None: a leaf)."""
    if _granular_map(value, atom):
        out: dict[str, Any] = {}
        for key in sorted(value):
            child = value[key]
            # a scalar is a leaf whatever its type says: no schema lookup, no call (most entries of an object)
            sub = _added(child, _field(atom, key)[0]) if isinstance(child, dict | list) else None
            out["f:" + key] = {".": {}, **sub} if sub else {}
        return out
    if _granular_list(value, atom):
        elem = atom.elem or DEDUCED
        nodes: dict[PathElement, dict[str, Any]] = {}
        for item in value:
            sub = _added(item, elem) if isinstance(item, dict | list) else None
            nodes[item_element(item, atom)] = {".": {}, **sub} if sub else {}
        return {element_key(pe): nodes[pe] for pe in sorted(nodes, key=sort_key)}
    return None
