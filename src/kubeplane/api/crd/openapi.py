"""OpenAPI v3 schemas of custom resources, from their CRDs (apiextensions-apiserver pkg/controller/openapi/
builder: ``BuildOpenAPIV3``).

Each served version's ``openAPIV3Schema`` becomes a component named as upstream names it (the group reversed,
then version and kind: ``com.example.stable.v1.CronTab``) carrying ``x-kubernetes-group-version-kind``, with
``apiVersion``, ``kind`` and ``metadata`` (a reference to ObjectMeta) added as upstream's builder adds them; and
a ``...List`` component. kubectl finds a kind's schema by that extension (``kubectl explain``) and reads the
descriptions from it; server-side field validation support is detected from the PATCH operations the table's
paths already carry. Descriptions of apiVersion/kind/metadata are upstream's (``metav1.TypeMeta`` docs).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from kubeplane.api.openapi_docs import upstream_name

from .resource import CustomResourceInfo

__all__ = ["LIST_META", "OBJECT_META", "add_custom_resources", "component_name"]

OBJECT_META = "V1ObjectMeta"
LIST_META = "V1ListMeta"
_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this from "
    "the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_METADATA_DOC = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
_LIST_METADATA_DOC = (
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)


def component_name(info: CustomResourceInfo, kind: str | None = None) -> str:
    """``com.example.stable.v1.CronTab``: upstream's definition name for a custom kind."""
    reversed_group = ".".join(reversed(info.group.split(".")))
    return f"{reversed_group}.{info.version}.{kind or info.kind}"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _object_schema(info: CustomResourceInfo) -> dict[str, Any]:
    schema: dict[str, Any] = copy.deepcopy(dict(info.schema)) if info.schema else {"type": "object"}
    props: dict[str, Any] = dict(schema.get("properties") or {})
    props["apiVersion"] = {"description": _API_VERSION_DOC, "type": "string"}
    props["kind"] = {"description": _KIND_DOC, "type": "string"}
    props["metadata"] = {"allOf": [_ref(upstream_name(OBJECT_META))], "description": _METADATA_DOC}
    schema["properties"] = dict(sorted(props.items()))
    schema["x-kubernetes-group-version-kind"] = [{"group": info.group, "kind": info.kind, "version": info.version}]
    return schema


def _list_schema(info: CustomResourceInfo) -> dict[str, Any]:
    return {
        "description": f"{info.kind}List is a list of {info.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "items": {
                "description": f"List of {info.plural}. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                "type": "array",
                "items": _ref(component_name(info)),
            },
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {"allOf": [_ref(upstream_name(LIST_META))], "description": _LIST_METADATA_DOC},
        },
        "x-kubernetes-group-version-kind": [{"group": info.group, "kind": info.list_kind, "version": info.version}],
    }


def custom_infos(resources: Iterable[Any]) -> list[CustomResourceInfo]:
    return [r for r in resources if isinstance(r, CustomResourceInfo)]


def add_custom_resources(doc: dict[str, Any], resources: Iterable[Any]) -> dict[str, Any]:
    """``doc`` (a group version's document) with the custom kinds' components added and their operations'
    bodies and responses pointing at them (in place; returned)."""
    infos = custom_infos(resources)
    if not infos:
        return doc
    schemas: dict[str, Any] = doc.setdefault("components", {}).setdefault("schemas", {})
    by_gvk: dict[tuple[str, str, str], str] = {}
    for info in infos:
        name, list_name = component_name(info), component_name(info, info.list_kind)
        schemas[name] = _object_schema(info)
        schemas[list_name] = _list_schema(info)
        by_gvk[(info.group, info.version, info.kind)] = name
        by_gvk[(info.group, info.version, info.list_kind)] = list_name
    for item in (doc.get("paths") or {}).values():
        if not isinstance(item, Mapping):
            continue
        for method, op in item.items():
            if not isinstance(op, dict) or "x-kubernetes-group-version-kind" not in op:
                continue
            gvk = op["x-kubernetes-group-version-kind"]
            target = by_gvk.get((gvk.get("group"), gvk.get("version"), gvk.get("kind")))
            if target is None:
                continue
            if op.get("x-kubernetes-action") == "list":
                target = by_gvk.get((gvk.get("group"), gvk.get("version"), gvk.get("kind") + "List"), target)
            _point_at(op, method, target)
    doc["components"]["schemas"] = dict(sorted(schemas.items()))
    return doc


def _point_at(op: dict[str, Any], method: str, target: str) -> None:
    for code in ("200", "201"):
        response = (op.get("responses") or {}).get(code)
        if isinstance(response, dict):
            response["content"] = {"application/json": {"schema": _ref(target)}}
    if method in ("post", "put") and "requestBody" not in op:
        op["requestBody"] = {"content": {"application/json": {"schema": _ref(target)}}, "required": True}
