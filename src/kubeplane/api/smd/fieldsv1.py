"""Set algebra on the FieldsV1 wire form: ``(decode(doc) - lost) | mine``, encoded, in one walk of ``doc``.

A write's managed-fields update decodes each entry it touches (:meth:`Set.from_fields_v1`), takes away what the
write changed, gives the writer what it set and encodes the result again (:meth:`Set.to_fields_v1`): for a
kubelet's status patch that is the kubelet's whole ``f:status`` entry decoded, copied twice and re-encoded, to
change a few leaves. :func:`subtract_and_add` does the same in one pass over the document, building only the
output, with the same answer:

* the output is what ``(Set.from_fields_v1(doc).difference(lost).union(mine)).to_fields_v1()`` gives: keys in
  upstream's order (``"."`` first for a node that is both member and parent, then :func:`sort_key`), nodes
  normalised as the decode normalises them (``"."`` read as membership, its value ignored; a key whose value is
  ``{}`` is a member; a node left with no member and no child dropped), whatever order ``doc`` came in;
* when ``doc`` is not something the decode would read as it reads a plain document, it answers
  :data:`IRREGULAR` and the caller takes the Set path (which also reports the error): a value that is not an
  object, a key that does not parse, or two keys of one node that name one element (a spelling variant of a
  ``k:`` key, or Python's ``1 == true`` meeting a set's own conflation) -- the decode merges those in a way this
  walk does not replay;
* inputs are never mutated; the output shares with ``doc`` only nodes the write does not reach that are
  already written as the walk would write them (copy-on-write: :data:`CANONICAL`), so whoever holds the output
  must not change it -- the rule for every managed-fields set the API server stores or hands out.

Cost: a node nothing below which is lost or gained is not walked when its encoding is one the walk has already
written back unchanged (:data:`CANONICAL`): a kubelet's status write walks the conditions it changed, not the
ones it left alone, nor its IPs.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from kubeplane.api.shapes import ShapeMemo, shape_key

from .fieldpath import FieldsError, PathElement, Set, element_key, parse_element, sort_key

Obj = dict[str, Any]


class _Irregular(Exception):
    pass


IRREGULAR: Final = None
"""What :func:`subtract_and_add` answers for a document the Set path must handle."""


def subtract_and_add(doc: Any, lost: Set | None, mine: Set | None) -> Obj | None:
    """``((Set.from_fields_v1(doc) - lost) | mine).to_fields_v1()``, or :data:`IRREGULAR` (module docstring).
    ``lost`` and ``mine`` may be None for nothing."""
    if not isinstance(doc, dict):
        return IRREGULAR
    try:
        return _walk(doc, lost, mine)
    except (_Irregular, RecursionError):
        return IRREGULAR


_KEYS: dict[str, tuple[PathElement, Any, str]] = {}
_KEYS_SIZE: Final = 8192


def _key(text: str) -> tuple[PathElement, Any, str]:
    """(element, its sort key, its canonical FieldsV1 key) of a FieldsV1 key, memoised by the key's text (a pure
    function of a string; a key that does not parse raises and is not kept)."""
    found = _KEYS.get(text)
    if found is None:
        try:
            pe = parse_element(text)
        except FieldsError:
            raise _Irregular from None
        if len(_KEYS) >= _KEYS_SIZE:
            _KEYS.clear()
        found = _KEYS[text] = (pe, sort_key(pe), element_key(pe))
    return found


def _walk(doc: Obj, lost: Set | None, mine: Set | None) -> Obj:
    """The emitted contents of one node (without its own ``"."``)."""
    rows: list[tuple[Any, str, bool, Obj | None, PathElement]] = []
    seen: set[PathElement] = set()
    for key, value in doc.items():
        if key == ".":
            continue
        if type(value) is not dict:
            raise _Irregular
        pe, order, canonical = _key(key)
        if pe in seen:
            raise _Irregular
        seen.add(pe)
        has_child = len(value) > 1 or (len(value) == 1 and "." not in value)
        rows.append((order, canonical, not value or "." in value, value if has_child else None, pe))
    if mine is not None:
        for pe in mine.members | mine.children.keys():
            if pe not in seen:
                rows.append((sort_key(pe), element_key(pe), False, None, pe))
    rows.sort(key=_first)
    lost_members = lost.members if lost is not None else _NONE
    lost_children = lost.children if lost is not None else _NO_CHILDREN
    mine_members = mine.members if mine is not None else _NONE
    mine_children = mine.children if mine is not None else _NO_CHILDREN
    out: Obj = {}
    for _, canonical, was_member, child_doc, pe in rows:
        member = (was_member and pe not in lost_members) or pe in mine_members
        added = mine_children.get(pe)
        if child_doc is not None:
            below = lost_children.get(pe)
            if below is None and added is None and member == was_member:
                node = _untouched(child_doc, member)
                if node is not None:
                    out[canonical] = node
                continue
            body = _walk(child_doc, below, added)
        elif added is not None:
            body = added.to_fields_v1()
        else:
            body = {}
        if body:
            out[canonical] = {".": {}, **body} if member else body
        elif member:
            out[canonical] = {}
    return out


CANONICAL: ShapeMemo[bool] = ShapeMemo()
"""Encodings of nodes (with children) that the walk writes back exactly as they are: keys in upstream's order,
``"."`` as ``{}`` and first, no empty node. A node with nothing lost or gained below it and one of these
encodings is the walk's answer itself (equal encodings are equal documents, key order and value types
included), so it is kept by identity and not walked."""


def _untouched(doc: Obj, member: bool) -> Obj | None:
    """The emitted node of ``doc``, a node (with children) nothing below which is lost or gained and whose
    membership stays (None: nothing emitted): ``doc`` itself when :data:`CANONICAL` knows its encoding, else
    walked, and its encoding learnt when the walk wrote it back unchanged."""
    key = shape_key(doc)
    if CANONICAL.get(key):
        return doc
    body = _walk(doc, None, None)
    node = ({".": {}, **body} if member else body) if body else ({} if member else None)
    if key is not None and node is not None and orjson.dumps(node) == key:
        CANONICAL.put(key, True)
    return node


def _first(row: tuple[Any, ...]) -> Any:
    return row[0]


_NONE: Final[frozenset[PathElement]] = frozenset()
_NO_CHILDREN: Final[dict[PathElement, Set]] = {}
