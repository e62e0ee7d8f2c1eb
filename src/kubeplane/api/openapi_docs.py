"""Upstream's descriptions, formats, defaults and enums for the OpenAPI schemas (what ``kubectl explain`` prints).

Why: ``kubectl explain pod.spec`` prints each schema's and property's ``description`` from ``/openapi/v3``;
without them every field reads ``<empty>``. Upstream's text is the Go doc comments of k8s.io/api and
k8s.io/apimachinery as kube-openapi's openapi-gen renders them; ``tools/gen_openapi_docs.py`` applies the same
rules to the same source and writes ``openapi_docs.json.gz`` (keyed by Go type id, ~150 KB). kubeplane's schemas
(``schemas.json``) are named as the official Python client names them (``V1Pod``), so :func:`go_type_of` pairs the
two namings by walking both from each kind's root type, field by field (the docs record which struct a field
refers to). Invariant: a schema type gets only the docs of the Go type it was reached from; a type the walk does not
reach (or a field Go does not have) gets nothing rather than a guess.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
from collections.abc import Mapping
from typing import Any

import orjson

from kubeplane.api.schema import load_schemas

__all__ = ["TypeDocs", "go_type_of", "load_docs", "type_docs"]

TypeDocs = Mapping[str, Any]  # {"description": str, "fields": {json key: {description, format, default, ...}}}


@functools.cache
def load_docs() -> dict[str, Any]:
    """The packaged docs (``tag``, ``roots``, ``types``), parsed once per process."""
    raw = importlib.resources.files("kubeplane.api").joinpath("openapi_docs.json.gz").read_bytes()
    doc: dict[str, Any] = orjson.loads(gzip.decompress(raw))
    return doc


def _strip(ref: str) -> str:
    while ref.startswith(("[]", "{}")):
        ref = ref[2:]
    return ref


@functools.cache
def _schema_to_go() -> dict[str, str]:
    schemas = load_schemas()
    docs = load_docs()
    go_roots: Mapping[str, str] = docs["roots"]
    go_types: Mapping[str, Any] = docs["types"]
    out: dict[str, str] = {}
    stack = [(name, go_roots[key]) for key, name in schemas.roots.items() if key in go_roots]
    while stack:
        name, go_id = stack.pop()
        if name in out or go_id not in go_types:
            continue
        out[name] = go_id
        fields = go_types[go_id].get("fields", {})
        for field, ref in schemas.types.get(name, {}).items():
            child = _strip(ref)
            go_child = fields.get(field, {}).get("ref")
            if go_child is not None and child in schemas.types:
                stack.append((child, go_child))
    return out


def go_type_of(schema_name: str) -> str | None:
    """The Go type id (``k8s.io/api/core/v1.Pod``) a kubeplane schema name (``V1Pod``) stands for, if known."""
    return _schema_to_go().get(schema_name)


def type_docs(schema_name: str) -> TypeDocs:
    """Docs of one schema type (empty when its Go type is unknown)."""
    go_id = go_type_of(schema_name)
    if go_id is None:
        return {}
    found: TypeDocs = load_docs()["types"].get(go_id, {})
    return found


_META: str = "io.k8s.apimachinery.pkg.apis.meta.v1."
_UNWALKED: dict[str, str] = {"V1APIResourceList": _META + "APIResourceList", "V1APIResource": _META + "APIResource"}


def upstream_name(schema_name: str) -> str:
    """The component name kube-apiserver gives a schema: kube-openapi's REST-friendly name of its Go type
    (``k8s.io/api/core/v1.Pod`` -> ``io.k8s.api.core.v1.Pod``); ``kubectl explain`` prints its last segment as the
    field's type (``<[]Container>``). Names without a known Go type are kept."""
    go_id = go_type_of(schema_name)
    if go_id is None:
        return _UNWALKED.get(schema_name, schema_name)
    pkg, name = go_id.rsplit(".", 1)
    domain, _, rest = pkg.partition("/")
    return ".".join([*reversed(domain.split(".")), *rest.split("/"), name])
