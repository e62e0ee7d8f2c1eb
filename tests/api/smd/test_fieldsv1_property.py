"""FieldsV1 algebra on the wire form (:func:`kubeplane.api.smd.fieldsv1.subtract_and_add`) against the Set path.

structured-merge-diff's managed-fields update is ``Set.FromJSON`` -> ``Difference`` -> ``Union`` -> ``ToJSON``
(fieldpath/serialize.go, set.go); kubeplane walks the document once instead. These tests hold the walk to
the Set path on random documents and sets: the same document (keys in upstream's order included) whenever the
walk answers, and an answer always for documents the Set path itself wrote.
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.shapes import ShapeMemo
from kubeplane.api.smd import fieldsv1
from kubeplane.api.smd.fieldpath import FieldsError, Path, PathElement, Set

ELEMENTS: list[PathElement] = [
    ("f", "status"),
    ("f", "conditions"),
    ("f", "phase"),
    ("f", "a"),
    ("f", "b"),
    ("k", (("type", "Ready"),)),
    ("k", (("type", "Initialized"),)),
    ("k", (("ip", "10.0.0.1"),)),
    ("k", (("containerPort", 80), ("protocol", "TCP"))),
    ("v", "x"),
    ("v", 2),
    ("i", 0),
]
PATHS = st.lists(st.lists(st.sampled_from(ELEMENTS), min_size=1, max_size=4).map(tuple), max_size=12)


def _set(paths: list[Path]) -> Set:
    return Set.of(*paths)


def _by_sets(doc: dict[str, Any], lost: Set, mine: Set) -> Any:
    try:
        return Set.from_fields_v1(doc).difference(lost).union(mine).to_fields_v1()
    except FieldsError:
        return "error"


def _shuffled(doc: Any, rng: random.Random) -> Any:
    """The same document with every object's keys in another order (a client may send any order)."""
    if not isinstance(doc, dict):
        return doc
    keys = list(doc)
    rng.shuffle(keys)
    return {k: _shuffled(doc[k], rng) for k in keys}


@settings(max_examples=400, deadline=None)
@given(PATHS, PATHS, PATHS, st.integers(0, 2**32 - 1))
def test_walk_is_the_set_path(owned: list[Path], lost_paths: list[Path], mine_paths: list[Path], seed: int) -> None:
    doc = _set(owned).to_fields_v1()
    lost, mine = _set(lost_paths), _set(mine_paths)
    expected = _by_sets(doc, lost, mine)
    got = fieldsv1.subtract_and_add(doc, lost, mine)
    assert got is not None  # what the Set path wrote always walks
    assert orjson.dumps(got) == orjson.dumps(expected)  # same keys, same order
    shuffled = _shuffled(doc, random.Random(seed))
    assert orjson.dumps(fieldsv1.subtract_and_add(shuffled, lost, mine)) == orjson.dumps(expected)
    assert orjson.dumps(fieldsv1.subtract_and_add(doc, None, None)) == orjson.dumps(_by_sets(doc, Set(), Set()))


@pytest.mark.parametrize(
    "doc",
    [
        {"f:a": {".": {"junk": 1}, "f:b": {}}},  # "."'s value is ignored
        {"f:a": {".": {}}},  # member only: written back as {}
        {"f:a": {"f:b": {".": {}}}},
        {".": {}, "f:a": {}},  # a top-level "." is dropped
    ],
    ids=["dot-value-ignored", "dot-only", "nested-dot-only", "top-level-dot"],
)
def test_walk_normalises_as_the_decode_does(doc: dict[str, Any]) -> None:
    """serialize.go readIterV1: ``"."`` marks membership whatever its value; ToJSON writes ``{}`` for a leaf."""
    mine = Set.of((("f", "c"),))
    assert orjson.dumps(fieldsv1.subtract_and_add(doc, None, mine)) == orjson.dumps(_by_sets(doc, Set(), mine))


@pytest.mark.parametrize(
    "doc",
    [
        {"f:a": []},  # not an object
        {"x:a": {}},  # no such prefix
        {'k:{"type":"Ready"}': {}, 'k:{"type": "Ready"}': {"f:status": {}}},  # one element spelt twice
        {'k:{"type":1}': {}, 'k:{"type":true}': {}},  # Python's 1 == True
    ],
    ids=["not-an-object", "bad-prefix", "one-element-twice", "int-and-bool"],
)
def test_irregular_documents_are_left_to_the_set_path(doc: dict[str, Any]) -> None:
    assert fieldsv1.subtract_and_add(doc, Set(), Set()) is fieldsv1.IRREGULAR


class _Never(ShapeMemo[bool]):
    """A memo that never hits: every untouched node walked (the reference for the copy-on-write one)."""

    def get(self, key: bytes | None) -> bool | None:
        return None


@settings(max_examples=300, deadline=None)
@given(PATHS, PATHS, PATHS, st.integers(0, 2**32 - 1), st.booleans())
def test_untouched_nodes_kept_by_identity_are_the_walked_ones(
    owned: list[Path], lost_paths: list[Path], mine_paths: list[Path], seed: int, shuffle: bool
) -> None:
    """The nodes the walk keeps as they are (a known canonical encoding, nothing below lost or gained) give the
    document walking them gives, byte for byte, for canonical and reordered documents alike; the input is left
    as it was."""
    doc = _set(owned).to_fields_v1()
    if shuffle:
        doc = _shuffled(doc, random.Random(seed))
    lost, mine = _set(lost_paths), _set(mine_paths)
    before = orjson.dumps(doc)
    warm = fieldsv1.subtract_and_add(doc, lost, mine)
    again = fieldsv1.subtract_and_add(doc, lost, mine)  # now with what the first call learnt
    with pytest.MonkeyPatch.context() as m:
        m.setattr(fieldsv1, "CANONICAL", _Never())
        walked = fieldsv1.subtract_and_add(doc, lost, mine)
    assert orjson.dumps(doc) == before
    assert orjson.dumps(warm) == orjson.dumps(walked)
    assert orjson.dumps(again) == orjson.dumps(walked)


def test_a_kubelets_untouched_conditions_are_shared_not_walked() -> None:
    """A status write that changes the Ready condition keeps the kubelet's other conditions' nodes as they are
    (the same objects), and writes the changed one afresh."""
    ready, init = ("k", (("type", "Ready"),)), ("k", (("type", "Initialized"),))
    status, conditions = ("f", "status"), ("f", "conditions")
    fields = [("f", "status"), ("f", "type"), ("f", "lastTransitionTime")]
    doc = Set.of(*[(status, conditions, c, f) for c in (ready, init) for f in fields]).to_fields_v1()
    lost = Set.of((status, conditions, ready, ("f", "status")))
    fieldsv1.subtract_and_add(doc, lost, lost)  # learns the untouched condition's encoding
    out = fieldsv1.subtract_and_add(doc, lost, lost)
    assert out is not None
    init_key, ready_key = 'k:{"type":"Initialized"}', 'k:{"type":"Ready"}'
    assert out["f:status"]["f:conditions"][init_key] is doc["f:status"]["f:conditions"][init_key]
    assert out["f:status"]["f:conditions"][ready_key] is not doc["f:status"]["f:conditions"][ready_key]
    assert orjson.dumps(out) == orjson.dumps(_by_sets(doc, lost, lost))
