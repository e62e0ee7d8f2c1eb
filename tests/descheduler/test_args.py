"""Decoding plugin args with the messages of Go's ``encoding/json`` (descheduler ``pkg/api`` types decoded
strictly, as ``serializer.EnableStrict`` in upstream's ``pkg/api/v1alpha2/conversion.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.descheduler.args import ArgsError, Fields


@pytest.mark.parametrize(
    ("value", "json_type", "go_type"),
    [
        (True, "bool", "uint"),
        (3, "number", "string"),
        (1.5, "number", "string"),
        ("x", "string", "uint"),
        ([1], "array", "uint"),
        ({"a": 1}, "object", "uint"),
    ],
    ids=["bool", "int", "float", "string", "array", "object"],
)
def test_a_wrong_type_names_the_json_type_as_go_does(value: Any, json_type: str, go_type: str) -> None:
    """encoding/json UnmarshalTypeError: ``cannot unmarshal <JSON type> into Go struct field S.f of type T``."""
    f = Fields({"name": value}, "RemoveFailedPodsArgs")
    assert (f.string("name") if go_type == "string" else f.uint("name")) in ("", None)
    with pytest.raises(ArgsError) as info:
        f.done()
    assert info.value.errors == [
        f"json: cannot unmarshal {json_type} into Go struct field RemoveFailedPodsArgs.name of type {go_type}"
    ]


@pytest.mark.parametrize(
    ("raw", "json_type"),
    [("x", "string"), ([], "array"), (7, "number"), (False, "bool")],
    ids=["string", "array", "number", "bool"],
)
def test_args_that_are_not_an_object_fail_as_a_go_value(raw: Any, json_type: str) -> None:
    """encoding/json decoding a non-object into a struct: ``cannot unmarshal <JSON type> into Go value of type``."""
    f = Fields(raw, "RemoveFailedPodsArgs")
    with pytest.raises(ArgsError) as info:
        f.done()
    assert str(info.value) == f"json: cannot unmarshal {json_type} into Go value of type RemoveFailedPodsArgs"


def test_null_args_are_an_empty_object() -> None:
    """A ``null`` (absent) args is no error: upstream leaves the Args nil and defaulting fills them."""
    f = Fields(None, "RemoveFailedPodsArgs")
    assert f.uint("minPodLifetimeSeconds") is None
    f.done()


def test_errors_aggregate_in_order() -> None:
    """Several problems: one ``[a, b]`` message (utilerrors aggregate), the unknown field after the reads."""
    f = Fields({"minPodLifetimeSeconds": "1h", "bogus": 1}, "RemoveFailedPodsArgs")
    f.uint("minPodLifetimeSeconds")
    with pytest.raises(ArgsError) as info:
        f.done()
    assert str(info.value) == (
        "[json: cannot unmarshal string into Go struct field RemoveFailedPodsArgs.minPodLifetimeSeconds of type uint, "
        'strict decoding error: unknown field "bogus"]'
    )
