"""Pruning and defaulting of custom resources by their structural schema (upstream apiextensions-apiserver
pkg/apiserver/schema/pruning/algorithm.go and schema/defaulting/algorithm.go).

* Pruning drops every field the schema does not specify, except under ``x-kubernetes-preserve-unknown-fields:
  true``; ``apiVersion``, ``kind`` and ``metadata`` are kept at the root and in ``x-kubernetes-embedded-resource``
  objects. The dropped paths (``spec.foo``, ``spec.list[0].bar``) are what strict field validation reports as
  ``unknown field "<path>"`` and ``Warn`` as warnings.
* Defaulting sets each missing property that has a ``default`` (a copy), and replaces a ``null`` in a
  non-nullable field by its default; a ``null`` in a non-nullable field without a default is dropped
  (``PruneNonNullableNullsWithoutDefaults``). Defaults are applied after pruning, as upstream's decoder does.

Both walk the value, whose nesting the request limit bounds (api/jsondepth.py). Inputs are not modified.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]

__all__ = ["apply_defaults", "drop_nulls_without_defaults", "prune"]

_ROOT_KEEP = ("apiVersion", "kind", "metadata")


def prune(obj: Mapping[str, Any], schema: Schema) -> tuple[dict[str, Any], list[str]]:
    """``obj`` without the fields ``schema`` does not specify, and the paths of those fields in document order."""
    pruned: list[str] = []
    out = _object(obj, schema, "", pruned, keep=_ROOT_KEEP)
    return out, pruned


def _value(value: Any, schema: Schema | None, path: str, pruned: list[str]) -> Any:
    if schema is None:
        return value
    if isinstance(value, dict):
        keep = _ROOT_KEEP if schema.get("x-kubernetes-embedded-resource") else ()
        return _object(value, schema, path, pruned, keep=keep)
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return value if schema.get("x-kubernetes-preserve-unknown-fields") else list(value)
        return [_value(item, items, f"{path}[{i}]", pruned) for i, item in enumerate(value)]
    return value


def _object(
    obj: Mapping[str, Any], schema: Schema, path: str, pruned: list[str], *, keep: tuple[str, ...]
) -> dict[str, Any]:
    properties: Mapping[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
    out: dict[str, Any] = {}
    prefix = f"{path}." if path else ""
    for key, value in obj.items():
        sub = properties.get(key)
        if sub is not None:
            out[key] = _value(value, sub, prefix + key, pruned)
        elif key in keep:
            out[key] = value
        elif isinstance(additional, Mapping):
            out[key] = _value(value, additional, prefix + key, pruned)
        elif preserve or additional is True:
            out[key] = value
        else:
            pruned.append(prefix + key)
    return out


def apply_defaults(obj: dict[str, Any], schema: Schema) -> None:
    """Set ``schema``'s defaults in ``obj`` in place (upstream ``structuraldefaulting.Default`` together with
    ``PruneNonNullableNullsWithoutDefaults``)."""
    _default(obj, schema)


def _default(value: Any, schema: Schema) -> None:
    if isinstance(value, dict):
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        for key, sub in properties.items():
            if key not in value:
                if "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
            elif value[key] is None and not sub.get("nullable"):
                if "default" in sub:
                    value[key] = copy.deepcopy(sub["default"])
                else:
                    del value[key]
        additional = schema.get("additionalProperties")
        for key, item in list(value.items()):
            found = properties.get(key)
            if found is None and isinstance(additional, Mapping):
                found = additional
            if found is not None:
                _default(item, found)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                if item is None and not items.get("nullable") and "default" in items:
                    value[index] = copy.deepcopy(items["default"])
                else:
                    _default(item, items)


def drop_nulls_without_defaults(obj: dict[str, Any], schema: Schema) -> None:
    """Upstream ``PruneNonNullableNullsWithoutDefaults`` alone (no defaults set): a ``null`` in a non-nullable
    property or item that has no ``default`` is dropped, in place (what the schema coercer does after a
    conversion, with the target version's schema)."""
    _drop_nulls(obj, schema)


def _drop_nulls(value: Any, schema: Schema) -> None:
    if isinstance(value, dict):
        properties: Mapping[str, Schema] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key, item in list(value.items()):
            sub = properties.get(key)
            if sub is None and isinstance(additional, Mapping):
                sub = additional
            if sub is None:
                continue
            if item is None and not sub.get("nullable") and "default" not in sub:
                del value[key]
            else:
                _drop_nulls(item, sub)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                _drop_nulls(item, items)
