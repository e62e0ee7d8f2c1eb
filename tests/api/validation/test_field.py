"""Pins apimachinery util/validation/field: path rendering and ``Error.Error()`` text, byte for byte."""

from __future__ import annotations

import pytest

from kubeplane.api.validation import field
from kubeplane.api.validation.field import OMIT_VALUE, Error, ErrorType, new_path

LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(new_path("root"), "root", id="root"),
        pytest.param(new_path("root", "first", "second"), "root.first.second", id="new-path-more-names"),
        pytest.param(new_path("root").child("first", "second"), "root.first.second", id="child-more-names"),
        pytest.param(new_path("root").index(0), "root[0]", id="index"),
        pytest.param(new_path("root").key("k"), "root[k]", id="key-unquoted"),
        pytest.param(new_path("root").index(0).child("first"), "root[0].first", id="child-after-index"),
        pytest.param(new_path("root").key("a").key("b"), "root[a][b]", id="nested-subscripts"),
        pytest.param(
            new_path("spec").child("containers").index(0).child("resources", "requests").key("cpu"),
            "spec.containers[0].resources.requests[cpu]",
            id="design-doc-example",
        ),
        pytest.param(new_path(""), "[]", id="empty-root-renders-as-subscript"),
    ],
)
def test_path_rendering(path: field.Path, expected: str) -> None:
    assert str(path) == expected


def test_path_root_and_sharing() -> None:
    spec = new_path("spec")
    a = spec.child("a")
    b = spec.child("b")
    assert (str(a), str(b), str(spec)) == ("spec.a", "spec.b", "spec")
    assert a.index(3).root() is spec


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        pytest.param(
            field.required(new_path("spec", "containers").index(0).child("image")),
            "spec.containers[0].image: Required value",
            id="required-no-detail",
        ),
        pytest.param(
            field.required(new_path("f"), "must be set"),
            "f: Required value: must be set",
            id="required-detail",
        ),
        pytest.param(
            field.invalid(new_path("metadata", "name"), "A", detail=LABEL_MSG),
            f'metadata.name: Invalid value: "A": {LABEL_MSG}',
            id="invalid-string-quoted",
        ),
        pytest.param(field.invalid(new_path("bla"), 2, detail="details"), "bla: Invalid value: 2: details", id="int"),
        pytest.param(field.invalid(new_path("bla"), 1.5, detail="d"), "bla: Invalid value: 1.5: d", id="float-go-v"),
        pytest.param(field.invalid(new_path("bla"), 3.0, detail="d"), "bla: Invalid value: 3: d", id="float-integral"),
        pytest.param(
            field.invalid(new_path("bla"), 1e21, detail="d"),
            "bla: Invalid value: 1e+21: d",
            id="float-exponent",
        ),
        pytest.param(
            field.invalid(new_path("bla"), 1e-5, detail="d"), "bla: Invalid value: 1e-05: d", id="float-small"
        ),
        pytest.param(field.invalid(new_path("bla"), True, detail="d"), "bla: Invalid value: true: d", id="bool"),
        pytest.param(field.invalid(new_path("bla"), None, detail="d"), "bla: Invalid value: null: d", id="null"),
        pytest.param(
            field.invalid(new_path("bla"), {"b": 1, "a": "<x>"}, detail="d"),
            'bla: Invalid value: {"b":1,"a":"\\u003cx\\u003e"}: d',
            id="dict-as-json-in-given-order-html-escaped",
        ),
        pytest.param(
            field.invalid(new_path("bla"), 'a"b\\c\n\x01é\u00a0', detail=""),
            'bla: Invalid value: "a\\"b\\\\c\\n\\x01é\\u00a0"',
            id="go-quote-escapes-no-detail",
        ),
        pytest.param(field.invalid(None, "v", detail="d"), '<nil>: Invalid value: "v": d', id="nil-path"),
        pytest.param(
            field.not_supported(new_path("f"), "v", supported=["a", "b", "c"]),
            'f: Unsupported value: "v": supported values: "a", "b", "c"',
            id="not-supported-lists-quoted-values",
        ),
        pytest.param(
            field.not_supported(new_path("f"), "v", supported=[]),
            'f: Unsupported value: "v"',
            id="not-supported-empty",
        ),
        pytest.param(field.duplicate(new_path("f"), "x"), 'f: Duplicate value: "x"', id="duplicate"),
        pytest.param(field.not_found(new_path("f"), "x"), 'f: Not found: "x"', id="not-found"),
        pytest.param(field.forbidden(new_path("f"), "disallowed"), "f: Forbidden: disallowed", id="forbidden"),
        pytest.param(
            field.too_long(new_path("f"), 10),
            "f: Too long: may not be more than 10 bytes",
            id="too-long-plural",
        ),
        pytest.param(field.too_long(new_path("f"), 1), "f: Too long: may not be more than 1 byte", id="too-long-1"),
        pytest.param(field.too_long(new_path("f"), -1), "f: Too long: value is too long", id="too-long-unbounded"),
        pytest.param(
            field.too_long_characters(new_path("f"), 63),
            "f: Too long: may not be more than 63 characters",
            id="too-long-characters",
        ),
        pytest.param(
            field.too_many(new_path("f"), actual=5, maximum=3),
            "f: Too many: 5: must have at most 3 items",
            id="too-many",
        ),
        pytest.param(
            field.too_many(new_path("f"), actual=5, maximum=1),
            "f: Too many: 5: must have at most 1 item",
            id="too-many-1",
        ),
        pytest.param(
            field.too_many(new_path("f"), actual=-1, maximum=-1),
            "f: Too many: has too many items",
            id="too-many-omit",
        ),
        pytest.param(field.internal_error(new_path("f"), ValueError("boom")), "f: Internal error: boom", id="internal"),
        pytest.param(
            field.type_invalid(new_path("f"), 1, detail="must be a string"),
            "f: Invalid value: 1: must be a string",
            id="type-invalid-renders-as-invalid",
        ),
        pytest.param(Error(ErrorType.INVALID, "f", OMIT_VALUE, "d"), "f: Invalid value: d", id="omit-value-sentinel"),
    ],
)
def test_error_text_matches_upstream(err: Error, expected: str) -> None:
    assert str(err) == expected


def test_error_types_are_status_cause_reasons() -> None:
    assert field.required(None).type == "FieldValueRequired"
    assert field.internal_error(None, "x").type == "InternalError"
    assert ErrorType.TYPE_INVALID.message == "Invalid value"
    assert {t.message for t in ErrorType} >= {"Required value", "Unsupported value", "Too many", "Not found"}


@pytest.mark.parametrize(
    ("messages", "text"),
    [
        ([], ""),
        (["err"], "err"),
        (["abc", "123"], "[abc, 123]"),
        (["abc", "abc"], "abc"),
        (["abc", "abc", "123"], "[abc, 123]"),
        (["abc", "123", "abc", "def", "123"], "[abc, 123, def]"),
        (["", "x"], "[, x]"),
    ],
    ids=[
        "TestEmptyAggregate",
        "TestSingularAggregate",
        "TestPluralAggregate",
        "TestDedupeAggregate",
        "TestDedupePluralAggregate",
        "dedupe-keeps-first-seen-order",
        "empty-message-is-a-message",
    ],
)
def test_aggregate_text_is_utilerrors_aggregate_error(messages: list[str], text: str) -> None:
    """apimachinery util/errors ``aggregate.Error()`` (errors_test.go): one message as is, several in brackets,
    each distinct message once in first-seen order; it takes any iterable (a generator too)."""
    assert field.aggregate_text(messages) == text
    assert field.aggregate_text(iter(messages)) == text


def test_error_list_helpers() -> None:
    a = field.invalid(new_path("f"), "v", detail="d")
    b = field.internal_error(new_path(""), "e")
    dup = field.duplicate(new_path("test"), "value")
    assert field.aggregate_message([]) == ""
    assert field.aggregate_message([a, a]) == 'f: Invalid value: "v": d'
    assert field.aggregate_message([a, b]) == '[f: Invalid value: "v": d, []: Internal error: e]'
    assert field.dedupe([a, a, b]) == [a, b]
    # upstream TestErrListFilter
    lst = [
        field.invalid(new_path("test.field"), "", detail=""),
        field.invalid(new_path("field.test"), "", detail=""),
        dup,
    ]
    assert len(field.filter_out(lst, ErrorType.DUPLICATE)) == 2
    assert len(field.filter_out(lst, ErrorType.INVALID)) == 1
    assert [e.detail for e in field.prefix_detail([a], "p: ")] == ["p: d"]
    assert a.detail == "d"  # helpers never mutate
    assert [e.origin for e in field.with_origin([a], "format=k8s-short-name")] == ["format=k8s-short-name"]


def test_go_quote_matches_strconv_quote() -> None:
    assert field.go_quote("plain") == '"plain"'
    assert field.go_quote("\t\x7f") == '"\\t\\x7f"'
    assert field.go_quote("\u200b") == '"\\u200b"'  # format char is not printable in Go either
    assert field.go_quote("\U0001f600") == '"\U0001f600"'  # printable emoji kept
    assert field.go_quote("\U000e0001") == '"\\U000e0001"'
