"""Server-side apply types of custom resources from their CRD's structural schema, as kube-apiserver builds
them (apiextensions-apiserver ``customresource_handler.go``: ``buildOpenAPIModelsForApply`` then kube-openapi
``schemaconv.ToSchemaFromOpenAPI``, ``openapi.go``/``smd.go``).

Mapping (``parseSchema``, ``parseObject``, ``parseList``, ``getListElementRelationship``,
``getMapElementRelationship``):

* ``type: object``: a map whose ``properties`` are fields; ``x-kubernetes-map-type: atomic`` makes it one leaf
  (``granular`` or absent: walked by entry). Unknown keys: ``additionalProperties``' schema, else deduced when
  the object has no properties or ``x-kubernetes-preserve-unknown-fields`` holds here or on an ancestor.
* ``type: array``: ``x-kubernetes-list-type`` ``set`` (items ``v:``), ``map`` keyed by
  ``x-kubernetes-list-map-keys`` (items ``k:``), ``atomic``; a list without the marker is atomic.
* no type (``x-kubernetes-int-or-string``, a bare ``x-kubernetes-preserve-unknown-fields``): the value decides
  (upstream's untyped scalar with a deduced map and an atomic list, i.e. structured-merge-diff's deduced type).
* ``x-kubernetes-embedded-resource``: ``apiVersion``, ``kind`` and ``metadata`` (ObjectMeta) added, as the
  OpenAPI builder's ``addEmbeddedProperties``; the root gets the same (``BuildOpenAPIV3``).

Types are registered per (group, version, kind) and owner (the CRD's name) with :func:`register`, replaced by a
later registration and dropped by :func:`unregister`; :func:`kubeplane.api.smd.schema.type_of` consults them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import schema
from .schema import ATOMIC, DEDUCED, GRANULAR, LIST, SCALAR_ATOM, STRUCT, Atom

OBJECT_META = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"
GVK = tuple[str, str, str]


def _with_embedded(fields: dict[str, Atom]) -> None:
    fields["apiVersion"] = SCALAR_ATOM
    fields["kind"] = SCALAR_ATOM
    fields["metadata"] = schema.go_type(OBJECT_META)


def convert(node: Mapping[str, Any] | None, *, preserve: bool = False, root: bool = False) -> Atom:
    """The type of one structural schema node; ``preserve``: an ancestor preserves unknown fields."""
    node = node or {}
    preserve = preserve or node.get("x-kubernetes-preserve-unknown-fields") is True
    typ = node.get("type") or ""
    if typ == "object" or root:
        return _object(node, preserve=preserve, root=root)
    if typ == "array":
        return _list(node, preserve=preserve)
    if typ == "":
        return DEDUCED
    return SCALAR_ATOM


def _object(node: Mapping[str, Any], *, preserve: bool, root: bool) -> Atom:
    props: Mapping[str, Any] = node.get("properties") or {}
    fields = {name: convert(sub, preserve=preserve) for name, sub in props.items()}
    if root or node.get("x-kubernetes-embedded-resource") is True:
        _with_embedded(fields)
    extra = node.get("additionalProperties")
    elem: Atom | None
    if isinstance(extra, Mapping):
        elem = convert(extra, preserve=preserve)
    elif extra is False:
        elem = None
    elif preserve or not props or extra is True:
        elem = DEDUCED
    else:
        elem = None
    rel = ATOMIC if node.get("x-kubernetes-map-type") == "atomic" else GRANULAR
    return Atom(STRUCT, rel=rel, fields=fields, elem=elem)


def _list(node: Mapping[str, Any], *, preserve: bool) -> Atom:
    items = node.get("items")
    elem = convert(items, preserve=preserve) if isinstance(items, Mapping) else schema.UNTYPED_ATOMIC
    kind = node.get("x-kubernetes-list-type")
    if kind == "map":
        keys = tuple(str(k) for k in node.get("x-kubernetes-list-map-keys") or ())
        return Atom(LIST, rel=schema.ASSOCIATIVE, elem=elem, keys=keys)
    if kind == "set":
        return Atom(LIST, rel=schema.SET, elem=elem)
    return Atom(LIST, rel=ATOMIC, elem=elem)


_types: dict[GVK, dict[str, Atom]] = {}


def register(owner: str, group: str, version: str, kind: str, structural: Mapping[str, Any] | None) -> None:
    """Serve ``structural`` as the apply type of (group, version, kind) for ``owner``, replacing its previous
    one. An empty schema (a version without one) still gets the root's apiVersion/kind/metadata."""
    _types.setdefault((group, version, kind), {})[owner] = convert(structural, root=True)


def unregister(owner: str) -> None:
    """Drop every type ``owner`` registered."""
    for gvk in list(_types):
        owners = _types[gvk]
        owners.pop(owner, None)
        if not owners:
            del _types[gvk]


def lookup(group: str, version: str, kind: str) -> Atom | None:
    owners = _types.get((group, version, kind))
    if not owners:
        return None
    return next(reversed(owners.values()))


schema.register_schema(lookup)
