"""The OpenAPI v3 documents kube-apiserver serves under ``/openapi/v3``, built from the resource table.

Why: kubectl v1.37 ``apply`` (and ``create``/``replace``/``patch``) validates server side by default, but only
after checking that the server supports it: cli-runtime's ``queryParamVerifierV3`` fetches ``/openapi/v3``, then
the group version's document, finds the first PATCH operation whose ``x-kubernetes-group-version-kind`` is the
object's GVK and looks for a ``fieldValidation`` entry among that operation's own (inline) ``parameters``.
So every PATCH operation of a kind carries the GVK extension and an inline ``fieldValidation`` parameter, status
and scale subresources included (Go map order decides which one kubectl finds first).

Shapes follow kube-openapi's handler3:

* root (:func:`openapi_root`): ``{"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=H"}}}``
  where ``H`` is the upper-case hex SHA-512 of the group version document's JSON (:func:`document_hash`), so
  clients cache a document per hash;
* group version (:func:`openapi_group_version`): an ``openapi: 3.0.0`` document with the resources' collection,
  item and subresource paths (operations as the verbs allow, upstream operation ids, ``x-kubernetes-action``)
  and ``components.schemas`` for every type they reach, from :mod:`kubeplane.api.schema`.

Schemas are built under the official Python client's names (``V1Pod``, those of ``schemas.json``) and served
under upstream's (``io.k8s.api.core.v1.Pod``, :func:`kubeplane.api.openapi_docs.upstream_name`): kubectl looks
kinds up by the GVK extension, but ``kubectl explain`` prints the last segment of the name as a field's type.
Descriptions, formats (int32/int64/double/byte/date-time), defaults and enums are upstream's, from the Go doc
comments of k8s.io/api (:mod:`kubeplane.api.openapi_docs`); a ``$ref`` property with a description or default is
written as upstream's v3 documents write it, ``{"allOf": [{"$ref": ...}], "description": ..., "default": ...}``.
The documents are pure functions of the table: the API server builds them once
and serves the bytes of :func:`document_bytes`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable
from typing import Any, Final

import orjson

from kubeplane.api.crd.openapi import LIST_META, OBJECT_META, add_custom_resources, custom_infos
from kubeplane.api.openapi_docs import load_docs, type_docs, upstream_name
from kubeplane.api.resources import ResourceInfo, ResourceTable, Subresource
from kubeplane.api.schema import load_schemas, root_type
from kubeplane.api.strategicpatch_meta import BUILTIN_SCHEMA

__all__ = [
    "PATCH_CONTENT_TYPES",
    "document_bytes",
    "document_hash",
    "group_version_path",
    "openapi_group_version",
    "openapi_root",
]

PATCH_CONTENT_TYPES: Final = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_JSON: Final = "application/json"
_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_PATCH: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
_API_RESOURCE_LIST: Final = "V1APIResourceList"
_SPECIAL_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    _QUANTITY: {
        "description": "A fixed-point number: a JSON string such as '100m' or '1Gi', or a JSON number.",
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
    _INT_OR_STRING: {
        "description": "An integer or a string such as '25%'.",
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    _PATCH: {
        "description": "The body of a PATCH request, in the format its Content-Type names.",
        "type": "object",
    },
}


def _query(name: str, type_: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "description": description, "schema": {"type": type_, "uniqueItems": True}}


_P_DRY_RUN: Final = _query("dryRun", "string", "When present (All), modifications are not persisted.")
_P_FIELD_MANAGER: Final = _query("fieldManager", "string", "The name of the actor making these changes.")
_P_FIELD_VALIDATION: Final = _query(
    "fieldValidation",
    "string",
    "How to handle unknown or duplicate fields: Ignore, Warn (a warning per field) or Strict (fail).",
)
_P_FORCE: Final = _query("force", "boolean", "Force an apply request to take fields owned by other managers.")
_P_PRETTY: Final = _query("pretty", "string", "If 'true', the output is pretty printed.")
_LIST_PARAMS: Final = tuple(
    _query(n, t, d)
    for n, t, d in (
        ("allowWatchBookmarks", "boolean", "Request watch events of type BOOKMARK."),
        ("continue", "string", "The continue token of the previous page."),
        ("fieldSelector", "string", "Restrict the list by the objects' fields."),
        ("labelSelector", "string", "Restrict the list by the objects' labels."),
        ("limit", "integer", "The maximum number of objects to return."),
        ("resourceVersion", "string", "The resource version to serve the request at."),
        ("resourceVersionMatch", "string", "How resourceVersion applies to list calls."),
        ("sendInitialEvents", "boolean", "Start a watch with synthetic events for the current state."),
        ("timeoutSeconds", "integer", "Timeout for the list or watch call."),
        ("watch", "boolean", "Watch for changes instead of listing."),
    )
)
_DELETE_PARAMS: Final = (
    _P_DRY_RUN,
    _query("gracePeriodSeconds", "integer", "Seconds before the object should be deleted."),
    _query("orphanDependents", "boolean", "Deprecated: use propagationPolicy."),
    _query("propagationPolicy", "string", "Orphan, Background or Foreground garbage collection."),
)
_WRITE_PARAMS: Final = (_P_DRY_RUN, _P_FIELD_MANAGER, _P_FIELD_VALIDATION)
_PATCH_PARAMS: Final = (*_WRITE_PARAMS, _P_FORCE)


def group_version_path(group: str, version: str) -> str:
    """The key in the root document and the path under ``/openapi/v3``: ``api/v1`` or ``apis/<group>/<v>``."""
    return f"apis/{group}/{version}" if group else f"api/{version}"


def document_bytes(doc: dict[str, Any]) -> bytes:
    """The canonical JSON of a document (sorted keys): what is served, and what :func:`document_hash` hashes."""
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def document_hash(data: bytes) -> str:
    """kube-openapi's ``computeETag``: upper-case hex SHA-512 of the served bytes."""
    return hashlib.sha512(data).hexdigest().upper()


def openapi_root(table: ResourceTable) -> dict[str, Any]:
    """The ``/openapi/v3`` discovery document: one ``serverRelativeURL`` with the content hash per group version."""
    paths: dict[str, Any] = {}
    for group, version in _group_versions(table):
        gv_path = group_version_path(group, version)
        digest = document_hash(document_bytes(openapi_group_version(table, group, version)))
        paths[gv_path] = {"serverRelativeURL": f"/openapi/v3/{gv_path}?hash={digest}"}
    return {"paths": paths}


def openapi_group_version(table: ResourceTable, group: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.0 document of one group version; ``LookupError`` if the table serves none of it."""
    resources = [r for r in table if r.group == group and r.version == version]
    if not resources:
        raise LookupError(f"group version {group_version_path(group, version)} is not served")
    prefix = "/" + group_version_path(group, version)
    paths: dict[str, Any] = {
        prefix + "/": {"get": _api_resources_op(group, version)},
    }
    refs: set[str] = {_PATCH, _API_RESOURCE_LIST}
    for r in resources:
        for path, item in _resource_paths(r, prefix=prefix, refs=refs):
            paths[path] = item
    gvks = [(r.group, r.version) for r in table]
    if custom_infos(resources):  # custom kinds reference ObjectMeta and ListMeta (api/crd/openapi.py)
        refs.update((OBJECT_META, LIST_META))
    schemas = _components(refs, served_group_versions=gvks)
    names = {name: upstream_name(name) for name in schemas}
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "paths": _renamed(dict(sorted(paths.items())), names),
        "components": {"schemas": dict(sorted((names[n], _renamed(s, names)) for n, s in schemas.items()))},
    }
    return add_custom_resources(doc, resources)


_REF_PREFIX: Final = "#/components/schemas/"


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """``value`` with every ``$ref`` pointing at the upstream component name (:func:`upstream_name`)."""
    if isinstance(value, dict):
        out = {k: _renamed(v, names) for k, v in value.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            target = ref[len(_REF_PREFIX) :]
            out["$ref"] = _REF_PREFIX + names.get(target, target)
        return out
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def _group_versions(table: ResourceTable) -> list[tuple[str, str]]:
    return list(dict.fromkeys((r.group, r.version) for r in table))


def _op_group(group: str, version: str) -> str:
    """Upstream's operation id infix: ``CoreV1``, ``AppsV1``, ``RbacAuthorizationV1`` (``.k8s.io`` dropped)."""
    name = group.removesuffix(".k8s.io") or "core"
    return "".join(p[:1].upper() + p[1:] for p in name.split(".")) + version[:1].upper() + version[1:]


def _tag(group: str, version: str) -> str:
    op = _op_group(group, version)
    base = op[: -len(version)]
    return f"{base[:1].lower()}{base[1:]}_{version}"


def _api_resources_op(group: str, version: str) -> dict[str, Any]:
    return {
        "tags": [_tag(group, version)],
        "description": "get available resources",
        "operationId": f"get{_op_group(group, version)}APIResources",
        "responses": {"200": _response(_API_RESOURCE_LIST), "401": {"description": "Unauthorized"}},
    }


def _schema_ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _response(type_name: str | None, description: str = "OK") -> dict[str, Any]:
    if type_name is None:
        return {"description": description}
    return {"description": description, "content": {_JSON: {"schema": _schema_ref(type_name)}}}


def _body(type_name: str, content_types: Iterable[str] = (_JSON,)) -> dict[str, Any]:
    return {"content": {ct: {"schema": _schema_ref(type_name)} for ct in content_types}, "required": True}


def _gvk(group: str, version: str, kind: str) -> dict[str, str]:
    return {"group": group, "kind": kind, "version": version}


def _resource_paths(r: ResourceInfo, *, prefix: str, refs: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Collection, all-namespaces list, item and subresource path items of one resource."""
    ns = "/namespaces/{namespace}" if r.namespaced else ""
    scope = "Namespaced" if r.namespaced else ""
    g = _op_group(r.group, r.version)
    gvk = _gvk(r.group, r.version, r.kind)
    kind_t = root_type(group=r.group, version=r.version, kind=r.kind)
    list_t = root_type(group=r.group, version=r.version, kind=r.list_kind)
    status_t = root_type(group="meta.k8s.io", version="v1", kind="Status")
    delete_t = root_type(group="meta.k8s.io", version="v1", kind="DeleteOptions")
    refs.update(t for t in (kind_t, list_t, status_t, delete_t) if t is not None)
    tags = [_tag(r.group, r.version)]
    name_param = {"name": "name", "in": "path", "required": True, "schema": {"type": "string", "uniqueItems": True}}
    ns_param = {"name": "namespace", "in": "path", "required": True, "schema": {"type": "string", "uniqueItems": True}}
    path_params = [name_param, *([ns_param] if r.namespaced else []), _P_PRETTY]
    coll_params = [*([ns_param] if r.namespaced else []), _P_PRETTY]

    def op(action: str, op_id: str, params: Iterable[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "tags": tags,
            "operationId": op_id,
            "parameters": list(params),
            **extra,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }

    out: list[tuple[str, dict[str, Any]]] = []
    coll: dict[str, Any] = {"parameters": coll_params}
    if "list" in r.verbs:
        coll["get"] = op("list", f"list{g}{scope}{r.kind}", _LIST_PARAMS, responses=_responses(list_t))
    if "create" in r.verbs and kind_t is not None:
        coll["post"] = op(
            "post",
            f"create{g}{scope}{r.kind}",
            _WRITE_PARAMS,
            requestBody=_body(kind_t),
            responses=_responses(kind_t, 201, 202),
        )
    if "deletecollection" in r.verbs and delete_t is not None:
        coll["delete"] = op(
            "deletecollection",
            f"delete{g}Collection{scope}{r.kind}",
            (*_DELETE_PARAMS, *_LIST_PARAMS),
            requestBody=_body(delete_t),
            responses=_responses(status_t),
        )
    out.append((f"{prefix}{ns}/{r.plural}", coll))
    if r.namespaced and "list" in r.verbs:
        all_ns = {"get": op("list", f"list{g}{r.kind}ForAllNamespaces", _LIST_PARAMS, responses=_responses(list_t))}
        out.append((f"{prefix}/{r.plural}", {"parameters": [_P_PRETTY], **all_ns}))
    item: dict[str, Any] = {"parameters": path_params}
    base_id = f"{g}{scope}{r.kind}"
    _item_ops(item, op, base_id=base_id, verbs=r.verbs, type_name=kind_t, delete_t=delete_t, status_t=status_t)
    out.append((f"{prefix}{ns}/{r.plural}/{{name}}", item))
    for sub in r.subresources:
        out.append(
            (
                f"{prefix}{ns}/{r.plural}/{{name}}/{sub.name}",
                _subresource_item(sub, r, base_id, path_params, tags, refs),
            )
        )
    return out


def _responses(type_name: str | None, *extra_codes: int) -> dict[str, Any]:
    codes = {"200": _response(type_name)}
    for code in extra_codes:
        codes[str(code)] = _response(type_name, "Created" if code == 201 else "Accepted")
    codes["401"] = {"description": "Unauthorized"}
    return codes


def _item_ops(
    item: dict[str, Any],
    op: Callable[..., dict[str, Any]],
    *,
    base_id: str,
    verbs: Iterable[str],
    type_name: str | None,
    delete_t: str | None,
    status_t: str | None,
) -> None:
    """get/put/patch/delete on an object (or a subresource acting as one), as ``verbs`` allow."""
    verbs = set(verbs)
    if "get" in verbs:
        item["get"] = op("get", f"read{base_id}", (), responses=_responses(type_name))
    if "update" in verbs and type_name is not None:
        item["put"] = op(
            "put",
            f"replace{base_id}",
            _WRITE_PARAMS,
            requestBody=_body(type_name),
            responses=_responses(type_name, 201),
        )
    if "patch" in verbs:
        item["patch"] = op(
            "patch",
            f"patch{base_id}",
            _PATCH_PARAMS,
            requestBody=_body(_PATCH, PATCH_CONTENT_TYPES),
            responses=_responses(type_name, 201),
        )
    if "delete" in verbs and delete_t is not None:
        item["delete"] = op(
            "delete",
            f"delete{base_id}",
            _DELETE_PARAMS,
            requestBody=_body(delete_t),
            responses=_responses(type_name or status_t, 202),
        )


def _subresource_item(
    sub: Subresource,
    r: ResourceInfo,
    base_id: str,
    path_params: list[dict[str, Any]],
    tags: list[str],
    refs: set[str],
) -> dict[str, Any]:
    """A subresource path: object-like subresources get object verbs; connect ones (exec, proxy) get ``connect``."""
    gvk = _gvk(sub.group, sub.version, sub.kind)
    suffix = sub.name[:1].upper() + sub.name[1:]
    type_name = root_type(group=sub.group, version=sub.version, kind=sub.kind)
    if type_name is not None:
        refs.add(type_name)

    def op(action: str, op_id: str, params: Iterable[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "tags": tags,
            "operationId": op_id + suffix,
            "parameters": list(params),
            **extra,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }

    item: dict[str, Any] = {"parameters": path_params}
    if sub.kind.endswith("Options"):  # connect subresources take query parameters, not bodies
        methods = {"get": "get", "create": "post", "update": "put", "patch": "patch", "delete": "delete"}
        for verb in sub.verbs:
            m = methods[verb]
            item[m] = op("connect", f"connect{m.capitalize()}{base_id}", (), responses=_responses(None))
        return item
    if "create" in sub.verbs and type_name is not None:
        item["post"] = op(
            "post",
            f"create{base_id}",
            _WRITE_PARAMS,
            requestBody=_body(type_name),
            responses=_responses(type_name, 201, 202),
        )
    delete_t = root_type(group="meta.k8s.io", version="v1", kind="DeleteOptions")
    status_t = root_type(group="meta.k8s.io", version="v1", kind="Status")
    _item_ops(item, op, base_id=base_id, verbs=sub.verbs, type_name=type_name, delete_t=delete_t, status_t=status_t)
    return item


# --- components ----------------------------------------------------------------------------------------


def _components(refs: set[str], *, served_group_versions: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Schemas of ``refs`` and everything they reach, with the GVK extension on kinds (roots of schemas.json)."""
    schemas = load_schemas()
    gvks_by_type: dict[str, list[dict[str, str]]] = {}
    for key, type_name in schemas.roots.items():
        group, version, kind = key.split("/")
        gvks_by_type.setdefault(type_name, []).append(_gvk(group, version, kind))
    delete_t = schemas.roots.get("meta.k8s.io/v1/DeleteOptions")
    if delete_t is not None:  # upstream registers DeleteOptions in every group version
        for group, version in dict.fromkeys(served_group_versions):
            gvks_by_type[delete_t].append(_gvk(group, version, "DeleteOptions"))
    out: dict[str, Any] = {}
    pending = sorted(refs)
    while pending:
        name = pending.pop()
        if name in out:
            continue
        if name in _SPECIAL_SCHEMAS:
            out[name] = _special_schema(name)
            continue
        fields = schemas.types[name]
        props: dict[str, Any] = {}
        patch_meta = _patch_extensions()
        docs = type_docs(name)
        field_docs = docs.get("fields", {})
        for field, ref in fields.items():
            props[field] = _documented(_ref_schema(ref, pending), field_docs.get(field))
            tags = patch_meta.get((name, field))
            if tags is not None:
                strategy, merge_key = tags
                props[field]["x-kubernetes-patch-strategy"] = strategy
                if merge_key:
                    props[field]["x-kubernetes-patch-merge-key"] = merge_key
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if docs.get("description"):
            schema["description"] = docs["description"]
        required = schemas.required.get(name)
        if required:
            schema["required"] = list(required)
        if name in gvks_by_type:
            schema["x-kubernetes-group-version-kind"] = sorted(
                gvks_by_type[name], key=lambda g: (g["group"], g["version"], g["kind"])
            )
        out[name] = schema
    return dict(sorted(out.items()))


def _special_schema(name: str) -> dict[str, Any]:
    """Quantity, IntOrString, Patch: their fixed shape, with the Go type's description where upstream has one."""
    schema = dict(_SPECIAL_SCHEMAS[name])
    go_id = {_QUANTITY: "k8s.io/apimachinery/pkg/api/resource.Quantity"}.get(name)
    go_id = go_id or {_INT_OR_STRING: "k8s.io/apimachinery/pkg/util/intstr.IntOrString"}.get(name)
    description = load_docs()["types"].get(go_id or "", {}).get("description")
    if description:
        schema["description"] = description
    return schema


def _with_docs(schema: dict[str, Any], *, fmt: str | None, default: Any, enum: Any) -> dict[str, Any]:
    """One schema (a property or its items) with a format, default and enum; a bare ``$ref`` with a default is
    wrapped in ``allOf`` (OpenAPI 3.0 ignores the siblings of ``$ref``)."""
    numeric = schema.get("type") in ("integer", "number")
    if fmt and (numeric or (fmt == "byte" and schema.get("type") == "string")):
        schema["format"] = fmt
    if enum is not None and schema.get("type") == "string":
        schema["enum"] = enum
    if default is not None:
        if "$ref" in schema:
            schema = {"allOf": [{"$ref": schema.pop("$ref")}], **schema}
        schema["default"] = default
    return schema


def _documented(schema: dict[str, Any], docs: dict[str, Any] | None) -> dict[str, Any]:
    """A property's schema with its upstream description, format, default and enum (openapi-gen's
    ``generateProperty``): for arrays and maps, the format, enum and element default go on the items."""
    if not docs:
        return schema
    fmt, enum = docs.get("format"), docs.get("enum")
    inner = schema.get("items") or schema.get("additionalProperties")
    if schema.get("type") in ("array", "object") and isinstance(inner, dict):
        key = "items" if "items" in schema else "additionalProperties"
        schema[key] = _with_docs(inner, fmt=fmt, default=docs.get("items_default"), enum=enum)
        schema = _with_docs(schema, fmt=None, default=docs.get("default"), enum=None)
    else:
        schema = _with_docs(schema, fmt=fmt, default=docs.get("default"), enum=enum)
    if docs.get("description"):
        if "$ref" in schema:
            schema = {"allOf": [{"$ref": schema.pop("$ref")}], **schema}
        schema["description"] = docs["description"]
    return schema


@functools.cache
def _patch_extensions() -> dict[tuple[str, str], tuple[str, str]]:
    """``(schema type, field) -> (patch strategy, merge key)`` for every tagged field of the built-in kinds.

    kubectl (apply, and the patches it computes) reads strategic-merge metadata from these OpenAPI extensions,
    so they must say what the server's strategic merge patch does: both come from one table,
    :data:`kubeplane.api.strategicpatch_meta.BUILTIN_SCHEMA`, walked in step with ``schemas.json`` from each
    kind's root type.
    """
    schemas = load_schemas()
    roots: dict[tuple[str, str], list[str]] = {}
    for key, type_name in schemas.roots.items():
        group, _version, kind = key.split("/")
        roots.setdefault((group, kind), []).append(type_name)
    stack = [
        (tag_root, oa_root)
        for (group, kind), tag_root in BUILTIN_SCHEMA.kinds.items()
        for oa_root in roots.get((group, kind), [])
    ]
    out: dict[tuple[str, str], tuple[str, str]] = {}
    seen: set[tuple[str, str]] = set()
    while stack:
        tag_type, oa_type = stack.pop()
        if (tag_type, oa_type) in seen:
            continue
        seen.add((tag_type, oa_type))
        oa_fields = schemas.types.get(oa_type) or {}
        for name, tag in (BUILTIN_SCHEMA.types.get(tag_type) or {}).items():
            ref = oa_fields.get(name)
            if ref is None:
                continue
            if tag.strategy:
                out[(oa_type, name)] = (tag.strategy, tag.merge_key)
            while ref.startswith(("[]", "{}")):
                ref = ref[2:]
            if tag.type is not None and ref in schemas.types:
                stack.append((tag.type, ref))
    return out


_PRIMITIVE_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "string": {"type": "string"},
    "integer": {"type": "integer"},
    "number": {"type": "number", "format": "double"},
    "boolean": {"type": "boolean"},
    "date-time": {"type": "string", "format": "date-time"},
    "byte": {"type": "string", "format": "byte"},
    "any": {"x-kubernetes-preserve-unknown-fields": True},
}


def _ref_schema(ref: str, pending: list[str]) -> dict[str, Any]:
    """A ``schemas.json`` ref as an OpenAPI schema; referenced types are queued on ``pending``."""
    if ref.startswith("[]"):
        return {"type": "array", "items": _ref_schema(ref[2:], pending)}
    if ref.startswith("{}"):
        return {"type": "object", "additionalProperties": _ref_schema(ref[2:], pending)}
    if ref in _PRIMITIVE_SCHEMAS:
        return dict(_PRIMITIVE_SCHEMAS[ref])
    target = {"quantity": _QUANTITY, "int-or-string": _INT_OR_STRING}.get(ref, ref)
    pending.append(target)
    return _schema_ref(target)
