"""Field sets and their FieldsV1 form, pinned to structured-merge-diff's fieldpath (set.go, serialize.go,
element.go, path.go)."""

from __future__ import annotations

import pytest

from kubeplane.api.smd import fieldpath
from kubeplane.api.smd.fieldpath import FieldsError, Set, element_key, parse_element, path_string


def test_fields_v1_round_trip_with_dot_and_order() -> None:
    # serialize.go emitContentsV1: "." first for a node that is also a member; then fields < keys < values
    doc = {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {
            "f:containers": {'k:{"name":"a"}': {".": {}, "f:image": {}}},
            "f:finalizers": {'v:"x"': {}},
        },
    }
    fields = Set.from_fields_v1(doc)
    assert fields.to_fields_v1() == doc
    assert list(fields.to_fields_v1()["f:metadata"]["f:labels"]) == [".", "f:app"]
    assert fields.has((("f", "metadata"), ("f", "labels")))
    assert not fields.has((("f", "metadata"),))


def test_element_kinds_sort_fields_keys_values_indexes() -> None:
    # element.go PathElement.Compare: FieldName < Key < Value < Index
    s = Set()
    for element in ("i:0", 'v:"a"', 'k:{"name":"a"}', "f:z"):
        s.members.add(parse_element(element))
    assert list(s.to_fields_v1()) == ["f:z", 'k:{"name":"a"}', 'v:"a"', "i:0"]


def test_path_strings() -> None:
    # path.go Path.String: .field, [key="v",...], [=value], [index]
    path = (("f", "spec"), ("f", "ports"), ("k", (("port", 80), ("protocol", "TCP"))), ("f", "name"))
    assert path_string(path) == '.spec.ports[port=80,protocol="TCP"].name'
    assert path_string((("f", "finalizers"), ("v", "x"))) == '.finalizers[="x"]'


def test_set_algebra() -> None:
    a = Set.of((("f", "a"),), (("f", "b"), ("f", "c")))
    b = Set.of((("f", "b"), ("f", "c")), (("f", "d"),))
    assert list(a.union(b).paths()) == [(("f", "a"),), (("f", "d"),), (("f", "b"), ("f", "c"))]
    assert list(a.difference(b).paths()) == [(("f", "a"),)]
    assert list(a.intersection(b).paths()) == [(("f", "b"), ("f", "c"))]
    assert a.difference(a).empty()


@pytest.mark.parametrize("doc", [[], {"x:y": {}}, {"f:a": []}, {"k:[1]": {}}])
def test_bad_fields_v1(doc: object) -> None:
    with pytest.raises(FieldsError):
        Set.from_fields_v1(doc)


def test_keys_use_go_html_escaping() -> None:
    # structured-merge-diff fieldpath/serialize-pe.go writes k:/v: values with Go's encoding/json, which escapes
    # <, >, & (and U+2028/U+2029) as \u003c, \u003e, \u0026
    from kubeplane.api.smd.fieldpath import element_key, parse_element

    assert element_key(("v", "a<b>&c\u2028")) == 'v:"a\\u003cb\\u003e\\u0026c\\u2028"'
    assert element_key(("k", (("name", "x&y"),))) == 'k:{"name":"x\\u0026y"}'
    assert parse_element('v:"a\\u003cb"') == parse_element('v:"a<b"') == ("v", "a<b")


@pytest.mark.parametrize(
    "keys",
    [
        ['k:{"type":"Ready"}', 'k:{"type":1}', 'k:{"type":true}', 'k:{"type":1.5}', 'k:{"type":"1"}'],
        ['k:{"containerPort":80,"protocol":"TCP"}', 'k:{"containerPort":"80","protocol":"TCP"}'],
    ],
    ids=["scalar-types", "mixed-key-values"],
)
def test_memoised_element_keys_keep_json_types_apart(keys: list[str]) -> None:
    """serialize-pe.go / element.go: ``k:{"type":1}`` and ``k:{"type":true}`` are different elements. The memos of
    element keys and sort keys take string-valued keys only, so Python's ``1 == True`` cannot make one answer for
    the other: each key round-trips and sorts the same whatever was asked before it."""
    expected = {key: (fieldpath.sort_key(parse_element(key)), element_key(parse_element(key))) for key in keys}
    for _ in range(2):  # the second pass answers from the memos
        for key in keys:
            pe = parse_element(key)
            assert element_key(pe) == key
            assert (fieldpath.sort_key(pe), element_key(pe)) == expected[key]
    assert fieldpath.sort_key(parse_element('k:{"type":true}')) != fieldpath.sort_key(parse_element('k:{"type":1}'))
