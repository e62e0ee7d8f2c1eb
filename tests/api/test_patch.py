"""Pins JSON merge patch (RFC 7386), JSON patch (RFC 6902) and kube-apiserver's patch limits and status codes.

Cases are the RFCs' appendix examples, the index and pointer rules of RFC 6901/6902, and the 400/413/422
split of ``applyJSPatch`` in upstream's ``endpoints/handlers/patch.go``; properties hold the functions to
"never mutate the input" and to ``merge(a, create_merge_patch(a, b)) == b``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.patch import (
    MAX_JSON_PATCH_COPY_BYTES,
    MAX_JSON_PATCH_OPERATIONS,
    PatchError,
    check_merge_patch,
    create_merge_patch,
    json_equal,
    json_merge_patch,
    json_patch,
)

# --- RFC 7386 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "patch", "expected"),
    [
        pytest.param({"a": "b"}, {"a": "c"}, {"a": "c"}, id="rfc7386-A-replace-member"),
        pytest.param({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}, id="rfc7386-A-add-member"),
        pytest.param({"a": "b"}, {"a": None}, {}, id="rfc7386-A-null-deletes"),
        pytest.param({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}, id="rfc7386-A-null-deletes-only-that"),
        pytest.param({"a": ["b"]}, {"a": "c"}, {"a": "c"}, id="rfc7386-A-scalar-replaces-array"),
        pytest.param({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}, id="rfc7386-A-array-replaces-scalar"),
        pytest.param({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}, id="rfc7386-A-recursive"),
        pytest.param({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}, id="rfc7386-A-arrays-replace-not-merge"),
        pytest.param(["a", "b"], ["c", "d"], ["c", "d"], id="rfc7386-A-array-document"),
        pytest.param({"a": "b"}, ["c"], ["c"], id="rfc7386-A-array-patch-replaces-document"),
        pytest.param({"a": "foo"}, None, None, id="rfc7386-A-null-patch-replaces-document"),
        pytest.param({"a": "foo"}, "bar", "bar", id="rfc7386-A-scalar-patch-replaces-document"),
        pytest.param({"e": None}, {"a": 1}, {"e": None, "a": 1}, id="rfc7386-A-existing-null-kept"),
        pytest.param([1, 2], {"a": "b", "c": None}, {"a": "b"}, id="rfc7386-A-object-patch-on-array"),
        pytest.param({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}, id="rfc7386-A-nulls-pruned-when-new"),
        pytest.param({"a": 1}, {}, {"a": 1}, id="empty-patch-is-identity"),
        pytest.param({"a": {"x": 1}}, {"a": [None]}, {"a": [None]}, id="nulls-inside-arrays-are-values"),
    ],
)  # fmt: skip
def test_json_merge_patch_rfc7386(original: Any, patch: Any, expected: Any) -> None:
    before_original, before_patch = copy.deepcopy(original), copy.deepcopy(patch)
    assert json_merge_patch(original, patch) == expected
    assert original == before_original
    assert patch == before_patch


def test_merge_patch_result_shares_nothing_with_inputs() -> None:
    original = {"keep": {"deep": [1]}, "x": 1}
    patch = {"new": {"list": [1, 2]}}
    result = json_merge_patch(original, patch)
    result["keep"]["deep"].append(2)
    result["new"]["list"].append(3)
    assert original == {"keep": {"deep": [1]}, "x": 1}
    assert patch == {"new": {"list": [1, 2]}}


@pytest.mark.parametrize(
    "patch",
    [
        pytest.param(None, id="apiserver-null-merge-patch-400"),
        pytest.param("x", id="apiserver-string-merge-patch-400"),
        pytest.param(5, id="apiserver-number-merge-patch-400"),
        pytest.param(True, id="apiserver-bool-merge-patch-400"),
    ],
)
def test_check_merge_patch_refuses_null_and_scalars(patch: Any) -> None:
    with pytest.raises(PatchError, match="Invalid JSON Patch") as info:
        check_merge_patch(patch)
    assert info.value.code == 400


@pytest.mark.parametrize("patch", [{}, {"a": None}, [1]], ids=["object", "null-member", "array-passes-as-upstream"])
def test_check_merge_patch_accepts_objects_and_arrays(patch: Any) -> None:
    check_merge_patch(patch)


@pytest.mark.parametrize(
    ("original", "modified", "expected"),
    [
        pytest.param({"a": 1}, {"a": 1}, {}, id="unchanged-is-empty-patch"),
        pytest.param({"a": 1, "b": 2}, {"a": 1}, {"b": None}, id="removed-member-is-null"),
        pytest.param({"a": 1}, {"a": 2, "c": 3}, {"a": 2, "c": 3}, id="changed-and-added"),
        pytest.param({"a": {"x": 1, "y": 2}}, {"a": {"x": 1, "y": 3}}, {"a": {"y": 3}}, id="objects-recurse"),
        pytest.param({"a": {"x": 1}}, {"a": {"x": 1}}, {}, id="unchanged-nested-omitted"),
        pytest.param({"a": [1, 2]}, {"a": [1, 3]}, {"a": [1, 3]}, id="arrays-replaced-whole"),
        pytest.param({"a": 1}, {"a": 1.0}, {}, id="numbers-compare-by-value"),
        pytest.param({"a": 1}, {"a": True}, {"a": True}, id="bool-is-not-a-number"),
        pytest.param({"a": {"x": 1}}, {"a": "s"}, {"a": "s"}, id="object-to-scalar"),
        pytest.param([1], {"a": 1}, {"a": 1}, id="non-object-side-patch-is-modified"),
    ],
)  # fmt: skip
def test_create_merge_patch(original: Any, modified: Any, expected: Any) -> None:
    patch = create_merge_patch(original, modified)
    assert patch == expected
    assert json_merge_patch(original, patch) == modified


# Objects reachable through objects carry no null members (RFC 7386 cannot set one); arrays carry anything.
_SCALARS = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "a", "b"])
_ANY = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abcd"), inner, max_size=3),
    max_leaves=12,
)
_ARRAYS = st.lists(_ANY, max_size=3)
_NO_NULL_MEMBERS = st.recursive(
    st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "a"]) | _ARRAYS,
    lambda inner: st.dictionaries(st.sampled_from("abcd"), inner, max_size=4),
    max_leaves=12,
)
_OBJECTS = st.dictionaries(st.sampled_from("abcd"), _NO_NULL_MEMBERS, max_size=4)


@settings(max_examples=300, deadline=None)
@given(original=st.dictionaries(st.sampled_from("abcd"), _ANY, max_size=4), modified=_OBJECTS)
def test_merge_patch_of_diff_gives_target(original: dict[str, Any], modified: dict[str, Any]) -> None:
    before = copy.deepcopy(original)
    patch = create_merge_patch(original, modified)
    assert json_merge_patch(original, patch) == modified
    assert original == before


# --- RFC 6902 -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("document", "operations", "expected"),
    [
        pytest.param({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}],
                     {"baz": "qux", "foo": "bar"}, id="rfc6902-A.1-add-object-member"),
        pytest.param({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}],
                     {"foo": ["bar", "qux", "baz"]}, id="rfc6902-A.2-add-array-element"),
        pytest.param({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}],
                     {"foo": "bar"}, id="rfc6902-A.3-remove-object-member"),
        pytest.param({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}],
                     {"foo": ["bar", "baz"]}, id="rfc6902-A.4-remove-array-element"),
        pytest.param({"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}],
                     {"baz": "boo", "foo": "bar"}, id="rfc6902-A.5-replace"),
        pytest.param({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
                     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
                     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}, id="rfc6902-A.6-move-value"),
        pytest.param({"foo": ["all", "grass", "cows", "eat"]}, [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
                     {"foo": ["all", "cows", "eat", "grass"]}, id="rfc6902-A.7-move-array-element"),
        pytest.param({"baz": "qux", "foo": ["a", 2, "c"]},
                     [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
                     {"baz": "qux", "foo": ["a", 2, "c"]}, id="rfc6902-A.8-test-success"),
        pytest.param({"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
                     {"foo": "bar", "child": {"grandchild": {}}}, id="rfc6902-A.10-add-nested-member"),
        pytest.param({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
                     {"foo": "bar", "baz": "qux"}, id="rfc6902-A.11-ignore-unrecognized-members"),
        pytest.param({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}],
                     {"/": 9, "~1": 10}, id="rfc6902-A.14-escape-ordering"),
        pytest.param({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
                     {"foo": ["bar", ["abc", "def"]]}, id="rfc6902-A.16-add-array-value-at-end"),
        pytest.param({"a/b": 1}, [{"op": "replace", "path": "/a~1b", "value": 2}], {"a/b": 2}, id="rfc6901-tilde-1"),
        pytest.param({"m~n": 1}, [{"op": "remove", "path": "/m~0n"}], {}, id="rfc6901-tilde-0"),
        pytest.param({"": 1}, [{"op": "replace", "path": "/", "value": 2}], {"": 2}, id="rfc6901-empty-key"),
        pytest.param({"a": 1}, [{"op": "add", "path": "", "value": [1]}], [1], id="add-root-replaces-document"),
        pytest.param({"a": 1}, [{"op": "replace", "path": "", "value": {"b": 2}}], {"b": 2}, id="replace-root"),
        pytest.param({"a": [1, 2]}, [{"op": "add", "path": "/a/2", "value": 3}], {"a": [1, 2, 3]},
                     id="add-at-array-length-appends"),
        pytest.param({"a": 1}, [{"op": "add", "path": "/a", "value": 2}], {"a": 2}, id="add-existing-member-replaces"),
        pytest.param({"a": {"b": [1]}}, [{"op": "copy", "from": "/a", "path": "/c"}],
                     {"a": {"b": [1]}, "c": {"b": [1]}}, id="copy"),
        pytest.param({"a": 1}, [{"op": "move", "from": "/a", "path": "/a"}], {"a": 1}, id="move-to-itself-no-op"),
        pytest.param({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}], {"a": 1}, id="test-numbers-by-value"),
        pytest.param({"a": {"x": [1, {"y": None}]}},
                     [{"op": "test", "path": "", "value": {"a": {"x": [1, {"y": None}]}}}],
                     {"a": {"x": [1, {"y": None}]}}, id="test-whole-document"),
        pytest.param({"a": 1}, [], {"a": 1}, id="empty-patch-is-identity"),
        pytest.param([1, 2, 3], [{"op": "remove", "path": "/0"}, {"op": "add", "path": "/-", "value": 4}],
                     [2, 3, 4], id="array-document"),
    ],
)  # fmt: skip
def test_json_patch_applies(document: Any, operations: list[Any], expected: Any) -> None:
    before_document, before_operations = copy.deepcopy(document), copy.deepcopy(operations)
    assert json_patch(document, operations) == expected
    assert document == before_document
    assert operations == before_operations


@pytest.mark.parametrize(
    ("document", "operations", "message"),
    [
        pytest.param({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}],
                     'jsonpatch test operation does not apply: value at "/baz" is "qux", not "bar"',
                     id="rfc6902-A.9-test-error"),
        pytest.param({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}],
                     '"/baz" does not exist', id="rfc6902-A.12-add-to-nonexistent-target"),
        pytest.param({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}],
                     "is 10, not \"10\"", id="rfc6902-A.15-string-is-not-number"),
        pytest.param({"a": 1}, [{"op": "test", "path": "/a", "value": True}], "is 1, not true",
                     id="test-bool-is-not-number"),
        pytest.param({"a": 1}, [{"op": "test", "path": "/b", "value": None}], '"/b" does not exist',
                     id="test-missing-path-fails-even-against-null"),
        pytest.param({"a": 1}, [{"op": "remove", "path": "/b"}], '"/b" does not exist', id="remove-missing-member"),
        pytest.param({"a": 1}, [{"op": "replace", "path": "/b", "value": 1}], '"/b" does not exist',
                     id="replace-missing-member"),
        pytest.param({"a": [1]}, [{"op": "add", "path": "/a/2", "value": 1}], "index 2 is out of bounds",
                     id="add-past-array-length"),
        pytest.param({"a": [1]}, [{"op": "replace", "path": "/a/1", "value": 1}], "index 1 is out of bounds",
                     id="replace-at-array-length"),
        pytest.param({"a": [1]}, [{"op": "remove", "path": "/a/-"}], '"-" is not a valid array index',
                     id="dash-only-for-add"),
        pytest.param({"a": [1, 2]}, [{"op": "remove", "path": "/a/01"}], '"01" is not a valid array index',
                     id="rfc6901-leading-zero-index"),
        pytest.param({"a": [1, 2]}, [{"op": "remove", "path": "/a/-1"}], '"-1" is not a valid array index',
                     id="negative-index-refused"),
        pytest.param({"a": [1]}, [{"op": "add", "path": "/a/x", "value": 1}], '"x" is not a valid array index',
                     id="non-numeric-index"),
        pytest.param({"a": 1}, [{"op": "add", "path": "/a/b", "value": 1}], "the parent is a number",
                     id="add-below-scalar"),
        pytest.param({"a": "s"}, [{"op": "remove", "path": "/a/b/c"}], '"/a/b" is inside a string',
                     id="walk-through-scalar"),
        pytest.param({"a": 1}, [{"op": "add", "path": "a", "value": 1}], 'must be empty or start with "/"',
                     id="pointer-must-start-with-slash"),
        pytest.param({"a": 1}, [{"op": "remove", "path": "/~2"}], "invalid escape", id="rfc6901-bad-escape"),
        pytest.param({"a": 1}, [{"op": "remove"}],
                     'jsonpatch remove operation does not apply: the operation has no "path"', id="missing-path"),
        pytest.param({"a": 1}, [{"op": "remove", "path": 3}], "got a number", id="path-not-a-string"),
        pytest.param({"a": 1}, [{"op": "add", "path": "/b"}], 'has no "value"', id="add-without-value"),
        pytest.param({"a": 1}, [{"op": "copy", "path": "/b"}], 'the operation has no "from"',
                     id="copy-without-from"),
        pytest.param({"a": 1}, [{"op": "copy", "from": "/x", "path": "/b"}], '"/x" does not exist',
                     id="copy-from-missing"),
        pytest.param({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}], "into its own child",
                     id="move-into-own-child"),
        pytest.param({"a": 1}, [{"op": "move", "from": "/x", "path": "/x"}], '"/x" does not exist',
                     id="move-to-itself-needs-source"),
        pytest.param({"a": 1}, [{"op": "remove", "path": ""}], "whole document cannot be removed",
                     id="remove-root"),
        pytest.param({"a": 1}, [{"op": "frobnicate", "path": "/a"}], 'unexpected JSON patch op "frobnicate"',
                     id="unknown-op"),
        pytest.param({"a": 1}, [{"path": "/a"}], "unexpected JSON patch op null", id="missing-op"),
    ],
)  # fmt: skip
def test_json_patch_does_not_apply_422(document: Any, operations: list[Any], message: str) -> None:
    before = copy.deepcopy(document)
    with pytest.raises(PatchError) as info:
        json_patch(document, operations)
    assert message in str(info.value)
    assert info.value.code == 422
    assert document == before


def test_failed_test_fails_the_whole_patch() -> None:
    document = {"a": 1}
    operations = [{"op": "add", "path": "/b", "value": 2}, {"op": "test", "path": "/a", "value": 9}]
    with pytest.raises(PatchError, match=r"operation 1\)") as info:
        json_patch(document, operations)
    assert info.value.code == 422
    assert document == {"a": 1}


@pytest.mark.parametrize(
    ("operations", "message"),
    [
        pytest.param({"op": "add"}, "must be an array of operations, got an object", id="decode-patch-not-array"),
        pytest.param(None, "got null", id="decode-patch-null"),
        pytest.param([{"op": "test", "path": "", "value": 1}, "add"], "operation 1 must be an object",
                     id="decode-patch-element-not-object"),
    ],
)  # fmt: skip
def test_json_patch_malformed_400(operations: Any, message: str) -> None:
    with pytest.raises(PatchError, match=message) as info:
        json_patch({"a": 1}, operations)
    assert info.value.code == 400


def test_json_patch_operation_limit_413() -> None:
    ok = [{"op": "test", "path": "/a", "value": 1}] * MAX_JSON_PATCH_OPERATIONS
    assert json_patch({"a": 1}, ok) == {"a": 1}
    with pytest.raises(PatchError) as info:
        json_patch({"a": 1}, [*ok, {"op": "test", "path": "/a", "value": 1}])
    assert info.value.code == 413
    assert str(info.value) == "The allowed maximum operations in a JSON patch is 10000, got 10001"
    assert isinstance(info.value, ValueError)


def test_json_patch_result_shares_nothing_with_inputs() -> None:
    document = {"a": {"list": [1]}, "b": 1}
    operations: list[Any] = [{"op": "add", "path": "/c", "value": {"inner": [1]}}]
    result = json_patch(document, operations)
    result["a"]["list"].append(2)
    result["c"]["inner"].append(2)
    assert document == {"a": {"list": [1]}, "b": 1}
    assert operations[0]["value"] == {"inner": [1]}


def test_too_deep_document_is_a_patch_error() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(PatchError, match="nested too deeply"):
        json_patch(deep, [])
    with pytest.raises(PatchError, match="nested too deeply"):
        json_merge_patch({}, {"a": deep})


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        pytest.param(1, 1.0, True, id="int-float"),
        pytest.param(True, 1, False, id="bool-int"),
        pytest.param(False, 0.0, False, id="bool-float"),
        pytest.param(None, None, True, id="nulls"),
        pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, True, id="member-order"),
        pytest.param([1, 2], [2, 1], False, id="array-order"),
        pytest.param([1, {"a": 1}], [1.0, {"a": 1.0}], True, id="arrays-compare-as-json"),
        pytest.param([1], [True], False, id="bool-in-array-is-not-number"),
        pytest.param({"a": None}, {}, False, id="null-member-is-not-absent"),
        pytest.param("1", 1, False, id="string-number"),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal


_POINTER_TOKENS = st.sampled_from(["a", "b", "0", "1", "-", "~0", "~1"])
_OPERATIONS = st.lists(
    st.fixed_dictionaries(
        {
            "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]),
            "path": st.lists(_POINTER_TOKENS, max_size=3).map(lambda ts: "".join("/" + t for t in ts)),
            "from": st.lists(_POINTER_TOKENS, max_size=3).map(lambda ts: "".join("/" + t for t in ts)),
            "value": _ANY,
        }
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(document=_ANY, operations=_OPERATIONS)
def test_json_patch_never_mutates_and_fails_cleanly(document: Any, operations: list[Any]) -> None:
    before_document, before_operations = copy.deepcopy(document), copy.deepcopy(operations)
    codes = set()
    try:
        json_patch(document, operations)
    except PatchError as err:
        codes.add(err.code)
    assert codes <= {422}
    assert document == before_document
    assert operations == before_operations


def test_copies_that_double_the_document_are_stopped_at_upstreams_limit() -> None:
    """CVE-2019-1002100: 20 ``copy`` operations, each copying the growing map into itself, double the document
    each time (a 2.6 KB patch drove kubeplane to 3 GB). Upstream caps the accumulated copied size at
    JSONPatchMaxCopyBytes (3 MiB) with evanphx json-patch v4's message, as a 422."""
    document = {"metadata": {"annotations": {"a": "x" * 1000}}}
    operations = [
        {"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/k{i}"} for i in range(20)
    ]
    with pytest.raises(PatchError) as caught:
        json_patch(document, operations)
    assert caught.value.code == 422
    message = str(caught.value)
    assert message.startswith("Unable to complete the copy, the accumulated size increase of copy is ")
    assert message.endswith(f", exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}")
    assert MAX_JSON_PATCH_COPY_BYTES == 3 * 1024 * 1024


def test_copies_under_the_limit_apply() -> None:
    document = {"a": {"b": "x" * 1000}}
    patched = json_patch(document, [{"op": "copy", "from": "/a", "path": f"/c{i}"} for i in range(100)])
    assert patched["c99"] == {"b": "x" * 1000}


def _nest(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def _deepening(copies: int) -> list[dict[str, Any]]:
    """``copy`` /v into its own innermost object ``copies`` times: /v starts 200 deep and doubles each time."""
    ops, innermost = [], "/a" * 199
    for _ in range(copies):
        ops.append({"op": "copy", "from": "/v", "path": f"/v{innermost}/b"})
        innermost += "/b" + innermost
    return ops


def test_a_json_patch_may_nest_the_document_past_pythons_stack() -> None:
    """``add`` and ``copy`` can nest the document far deeper than any body (evanphx applies such patches; the
    API server refuses the result afterwards, see apiserver/test_limits.py). Every step of the patch, the copy
    budget's size count, ``test`` and its message included, runs without recursion: 7 copies make /v 25,600
    deep (they raised RecursionError, a 400, before)."""
    from kubeplane.api.jsondepth import too_deep

    patched = json_patch({"v": _nest(200)}, [*_deepening(7), {"op": "copy", "from": "/v", "path": "/w"}])
    assert too_deep(patched["v"], 25_600) is None
    assert too_deep(patched["v"], 25_599) == "{"
    assert json_equal(patched["v"], patched["w"])
    assert patched["v"] is not patched["w"]
    with pytest.raises(PatchError) as caught:
        json_patch({"v": _nest(200)}, [*_deepening(2), {"op": "test", "path": "/v", "value": 1}])
    shown = ('{"a":' * 16)[:77] + "..."
    assert str(caught.value) == (
        f'jsonpatch test operation does not apply: value at "/v" is {shown}, not 1 (operation 2)'
    )
    assert caught.value.code == 422


def test_the_copy_budget_counts_values_too_deep_for_orjson_by_their_compact_size() -> None:
    """evanphx counts a copied value's JSON length; a value past orjson's 254 levels is measured without it."""
    deep = {"v": _nest(300), "n": [1, "é", None, 2.5, True]}
    expected = len(json.dumps(deep, separators=(",", ":"), ensure_ascii=False).encode())
    copies = MAX_JSON_PATCH_COPY_BYTES // expected + 1
    with pytest.raises(PatchError) as caught:
        json_patch({"d": deep}, [{"op": "copy", "from": "/d", "path": f"/c{i}"} for i in range(copies)])
    assert f"the accumulated size increase of copy is {expected * copies}," in str(caught.value)
