"""Pruning and defaulting (apiextensions-apiserver pkg/apiserver/schema/pruning/algorithm.go,
schema/defaulting/algorithm.go)."""

from __future__ import annotations

from typing import Any

from kubeplane.api.crd.prune import apply_defaults, prune

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "default": 1},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {}},
                "name": {"type": "string"},
                "mode": {"type": "string", "default": "Fast"},
            },
        }
    },
}


def test_prune_reports_paths_and_keeps_root_meta() -> None:
    obj: dict[str, Any] = {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "n"},
        "spec": {"foo": 1, "free": {"any": {"thing": 1}}, "list": [{"a": "x", "b": 1}], "embedded": {"kind": "P"}},
        "extra": True,
    }
    pruned, paths = prune(obj, SCHEMA)
    assert paths == ["spec.foo", "spec.list[0].b", "extra"]
    assert pruned == {
        "apiVersion": "x/v1",
        "kind": "K",
        "metadata": {"name": "n"},
        "spec": {"free": {"any": {"thing": 1}}, "list": [{"a": "x"}], "embedded": {"kind": "P"}},
    }
    assert obj["spec"]["foo"] == 1  # the input is not changed


def test_defaults_fill_missing_and_null_fields() -> None:
    obj: dict[str, Any] = {"spec": {"mode": None, "name": None}}
    apply_defaults(obj, SCHEMA)
    assert obj == {"spec": {"replicas": 1, "mode": "Fast"}}  # null without default: dropped
