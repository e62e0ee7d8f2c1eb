"""Custom resource validation messages, as kube-openapi's validators word them and apiextensions-apiserver's
``kubeOpenAPIResultToFieldErrors`` (pkg/apiserver/validation/validation.go) turns them into field errors."""

from __future__ import annotations

from typing import Any

from kubeplane.api.crd.values import go_value, validate_value

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["cronSpec"],
            "properties": {
                "cronSpec": {"type": "string", "pattern": "^a+$", "minLength": 2, "maxLength": 5},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                "ratio": {"type": "number", "minimum": 0.5, "exclusiveMinimum": True, "multipleOf": 0.5},
                "mode": {"type": "string", "enum": ["Fast", "Slow"]},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1, "items": {"type": "string"}},
                "items": {
                    "type": "array",
                    "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "opt": {"type": "string", "nullable": True},
            },
        }
    },
}


def messages(value: Any) -> list[str]:
    return [str(e) for e in validate_value(value, SCHEMA)]


def test_valid_object_has_no_errors() -> None:
    spec = {"cronSpec": "aaa", "replicas": 3, "ratio": 1.5, "mode": "Fast", "port": "http", "tags": ["x"]}
    assert messages({"spec": {**spec, "labels": {"a": "b"}, "opt": None, "items": [{"name": "n"}]}}) == []


def test_wrong_type_names_the_json_type() -> None:
    """type.go ``typeValidator``: InvalidType with the value's JSON type, as TypeInvalid."""
    assert messages({"spec": {"cronSpec": "aa", "replicas": "string"}}) == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'
    ]
    assert messages({"spec": {"cronSpec": "aa", "replicas": 1.5}}) == [
        'spec.replicas: Invalid value: "number": spec.replicas in body must be of type integer: "number"'
    ]
    assert messages({"spec": {"cronSpec": "aa", "port": True}}) == [
        'spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'
    ]


def test_required_enum_and_bounds() -> None:
    assert messages({"spec": {}}) == ["spec.cronSpec: Required value"]
    assert messages({"spec": {"cronSpec": "aa", "mode": "Medium"}}) == [
        'spec.mode: Unsupported value: "Medium": supported values: "Fast", "Slow"'
    ]
    assert messages({"spec": {"cronSpec": "aa", "replicas": 0}}) == [
        "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
    ]
    assert messages({"spec": {"cronSpec": "aa", "replicas": 11}}) == [
        "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
    ]
    assert messages({"spec": {"cronSpec": "aa", "ratio": 0.5}}) == [
        "spec.ratio: Invalid value: 0.5: spec.ratio in body should be greater than 0.5"
    ]
    assert messages({"spec": {"cronSpec": "aa", "ratio": 1.2}}) == [
        "spec.ratio: Invalid value: 1.2: spec.ratio in body should be a multiple of 0.5"
    ]


def test_string_rules() -> None:
    assert messages({"spec": {"cronSpec": "b"}}) == [
        'spec.cronSpec: Invalid value: "b": spec.cronSpec in body should be at least 2 chars long',
        "spec.cronSpec: Invalid value: \"b\": spec.cronSpec in body should match '^a+$'",
    ]
    assert messages({"spec": {"cronSpec": "aaaaaa"}}) == ["spec.cronSpec: Too long: may not be more than 5 bytes"]


def test_arrays_items_then_counts() -> None:
    """slice_validator.go: items (named ``[i]``) first, then minItems/maxItems (TooMany)."""
    assert messages({"spec": {"cronSpec": "aa", "tags": ["a", 1, "c"]}}) == [
        'spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer"',
        "spec.tags: Too many: 3: must have at most 2 items",
    ]
    assert messages({"spec": {"cronSpec": "aa", "tags": []}}) == [
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"
    ]
    assert messages({"spec": {"cronSpec": "aa", "items": [{}]}}) == ["spec.items[0].name: Required value"]


def test_additional_properties_and_null() -> None:
    assert messages({"spec": {"cronSpec": "aa", "labels": {"a": 1}}}) == [
        'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"'
    ]
    assert messages({"spec": {"cronSpec": None}}) == [
        'spec.cronSpec: Invalid value: "null": spec.cronSpec in body must be of type string: "null"'
    ]


def test_go_value_prints_floats_as_go() -> None:
    assert [go_value(1.0), go_value(1.5), go_value(1e21), go_value(3)] == ["1", "1.5", "1e+21", "3"]
