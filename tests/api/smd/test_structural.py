"""Apply types of custom resources from CRD structural schemas, pinned to kube-openapi pkg/schemaconv/openapi.go
(parseObject, parseList; smd.go getListElementRelationship/getMapElementRelationship) and the OpenAPI builder's
root/embedded properties (apiextensions-apiserver pkg/controller/openapi/builder: addEmbeddedProperties)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.smd import schema, structural, update
from kubeplane.api.smd.fieldpath import path_string

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                    },
                },
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "selector": {
                    "type": "object",
                    "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "size": {"x-kubernetes-int-or-string": True},
                "blob": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {}},
                "replicas": {"type": "integer"},
            },
        }
    },
}
GVK = ("stable.example.com", "v1", "Widget")


@pytest.fixture
def atom() -> Any:
    structural.register("test", *GVK, SCHEMA)
    yield schema.type_of(*GVK)
    structural.unregister("test")


def _applied(managers: update.Managers, name: str) -> Any:
    return managers[name].fields.to_fields_v1()


def test_list_map_items_of_two_managers_both_kept(atom: Any) -> None:
    one = {"spec": {"ports": [{"name": "http", "port": 80}]}}
    live, managers = update.apply({}, one, atom, "v1", {}, "one", force=False)
    two = {"spec": {"ports": [{"name": "https", "port": 443}]}}
    live2, managers = update.apply(live, two, atom, "v1", managers, "two", force=False)
    assert live2["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    assert _applied(managers, "one")["f:spec"]["f:ports"] == {
        'k:{"name":"http"}': {".": {}, "f:name": {}, "f:port": {}}
    }
    # re-applying one's config without its item removes only its item
    live3, managers = update.apply(live2, {"spec": {"ports": []}}, atom, "v1", managers, "one", force=False)
    assert live3["spec"]["ports"] == [{"name": "https", "port": 443}]


def test_scalar_conflict(atom: Any) -> None:
    live, managers = update.apply({}, {"spec": {"replicas": 1}}, atom, "v1", {}, "one", force=False)
    with pytest.raises(update.Conflicts) as caught:
        update.apply(live, {"spec": {"replicas": 2}}, atom, "v1", managers, "two", force=False)
    assert [path_string(c.path) for c in caught.value.conflicts] == [".spec.replicas"]


def test_unmarked_list_and_atomic_map_replaced_whole(atom: Any) -> None:
    # a CRD list without x-kubernetes-list-type is atomic; x-kubernetes-map-type: atomic is one leaf
    first = {"spec": {"args": ["a", "b"], "selector": {"x": "1"}}}
    live, managers = update.apply({}, first, atom, "v1", {}, "one", force=False)
    assert _applied(managers, "one") == {"f:spec": {"f:args": {}, "f:selector": {}}}
    with pytest.raises(update.Conflicts) as caught:
        update.apply(live, {"spec": {"args": ["c"]}}, atom, "v1", managers, "two", force=False)
    assert [path_string(c.path) for c in caught.value.conflicts] == [".spec.args"]
    new, _ = update.apply(live, {"spec": {"args": ["c"]}}, atom, "v1", managers, "one", force=False)
    assert new["spec"]["args"] == ["c"]


def test_set_granular_map_and_deduced_fields(atom: Any) -> None:
    config = {
        "spec": {
            "tags": ["x"],
            "labels": {"a": "1"},
            "size": "10%",
            "blob": {"deep": {"k": 1}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"l": "v"}}},
        }
    }
    _, managers = update.apply({}, config, atom, "v1", {}, "one", force=False)
    spec = _applied(managers, "one")["f:spec"]
    assert spec["f:tags"] == {'v:"x"': {}}
    assert spec["f:labels"] == {"f:a": {}}  # a declared field holding a non-empty map is no member itself
    assert spec["f:size"] == {}
    assert spec["f:blob"] == {"f:deep": {".": {}, "f:k": {}}}  # undeclared keys are members (deduced)
    # embedded: metadata is ObjectMeta (declared fields), not deduced (every key a member)
    assert spec["f:template"]["f:metadata"] == {"f:labels": {"f:l": {}}}


def test_replace_and_unregister() -> None:
    structural.register("test", *GVK, SCHEMA)
    assert schema.type_of(*GVK).field("spec") is not None
    structural.register("test", *GVK, {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    spec = schema.type_of(*GVK).field("spec")
    assert spec is schema.DEDUCED
    structural.unregister("test")
    assert schema.type_of(*GVK) is schema.DEDUCED
