"""Validation of a custom resource against its structural schema, as kube-apiserver does it.

Upstream validates a custom resource with kube-openapi's ``validate.SchemaValidator``
(k8s.io/kube-openapi/pkg/validation/validate: type, string, number, slice and object validators) and turns its
result into field errors with apiextensions-apiserver's ``kubeOpenAPIResultToFieldErrors``
(pkg/apiserver/validation/validation.go): required → ``Required value``, enum → ``Unsupported value``, maxLength →
``Too long``, maxItems and maxProperties → ``Too many``, a wrong type → ``Invalid value: "<json type>": <name> in
body must be of type <type>: "<json type>"``, everything else → ``Invalid value: <value>: <message>``. Names are
kube-openapi's: properties joined with ``.``, list items as ``[i]``, rooted at the object (``spec.replicas``).

Order within one object follows the validators: additional properties, then properties (in the schema's order;
upstream walks a Go map), then ``required``; within an array, items before ``minItems``/``maxItems``.
Formats other than ``int32``/``int64`` bounds are not checked (see docs/apiserver.md).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from kubeplane.api.crd import cel
from kubeplane.api.validation.field import (
    ErrorList,
    ErrorType,
    Path,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
)
from kubeplane.api.validation.reader import json_type

Schema = Mapping[str, Any]

__all__ = ["go_value", "json_type", "validate_resource", "validate_value"]


def go_value(value: float) -> str:
    """Go's ``%v`` of a float64 (``1``, ``1.5``, ``1e+21``): the bounds named in kube-openapi's messages."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, _, exponent = text.partition("e")
        sign = "-" if exponent.startswith("-") else "+"
        digits = exponent.lstrip("+-").rjust(2, "0")
        return f"{mantissa}e{sign}{digits}"
    return text


def _path(name: str) -> Path:
    """The field path of a kube-openapi name (``spec.items[0].name``): one element, printed as is."""
    return Path(name)


def _type_ok(value: object, schema: Schema) -> tuple[bool, str]:
    """Whether ``value`` has the schema's type, and the type string kube-openapi names in its message."""
    if schema.get("x-kubernetes-int-or-string"):
        return (isinstance(value, int | str) and not isinstance(value, bool)), "integer,string"
    wanted = schema.get("type")
    if not wanted:
        return True, ""
    kind = json_type(value)
    if kind == wanted:
        return True, wanted
    if wanted == "number" and kind == "integer":
        return True, wanted
    if wanted == "integer" and kind == "number" and isinstance(value, float) and value.is_integer():
        return True, wanted
    return False, wanted


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def validate_value(value: Any, schema: Schema, name: str = "") -> ErrorList:
    """Field errors of ``value`` against ``schema`` (a JSONSchemaProps as JSON), named from ``name``.

    Recursion depth is that of the value, which the request's nesting limit bounds (api/jsondepth.py)."""
    errs: ErrorList = []
    _validate(value, schema, name, errs)
    return errs


_BLOCKING = (ErrorType.TYPE_INVALID, ErrorType.NOT_SUPPORTED)
_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


def validate_resource(obj: Mapping[str, Any], schema: Schema, old: Mapping[str, Any] | None = None) -> ErrorList:
    """A custom resource's errors as the strategy's ``Validate``/``ValidateUpdate`` collects them: the schema's
    (``metadata`` left to ObjectMeta validation), then its ``x-kubernetes-validations`` rules (:mod:`.cel`) with
    ``old`` on update -- unless a type or enum error already blocks them (strategy.go ``hasBlockingErr``), when
    one ``<nil>: Invalid value: "null": some validation rules were not checked ...`` stands for them."""
    errs = validate_value({k: v for k, v in obj.items() if k != "metadata"}, schema)
    if not cel.has_rules(schema):
        return errs
    if any(e.type in _BLOCKING for e in errs):
        errs.append(invalid(None, "null", detail=_NOT_CHECKED))
        return errs
    errs.extend(cel.validate(obj, schema, old))
    return errs


def _validate(value: Any, schema: Schema, name: str, errs: ErrorList) -> None:
    if value is None and (
        schema.get("nullable") or not (schema.get("type") or schema.get("x-kubernetes-int-or-string"))
    ):
        return
    ok, wanted = _type_ok(value, schema)
    if not ok:
        kind = json_type(value)
        errs.append(type_invalid(_path(name), kind, detail=f'{name} in body must be of type {wanted}: "{kind}"'))
        return
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        supported = [v if isinstance(v, str) else _json(v) for v in enum]
        errs.append(not_supported(_path(name), value, supported=supported))
    if isinstance(value, str):
        _string(value, schema, name, errs)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        _number(value, schema, name, errs)
    elif isinstance(value, list):
        _array(value, schema, name, errs)
    elif isinstance(value, dict):
        _object(value, schema, name, errs)
    for key in ("allOf", "anyOf", "oneOf"):
        branches = schema.get(key)
        if key == "allOf" and branches:
            for branch in branches:
                _validate(value, branch, name, errs)


def _json(value: object) -> str:
    import orjson

    return orjson.dumps(value).decode()


def _string(value: str, schema: Schema, name: str, errs: ErrorList) -> None:
    max_length = schema.get("maxLength")
    if max_length is not None and len(value) > max_length:
        errs.append(too_long(_path(name), int(max_length)))
    min_length = schema.get("minLength")
    if min_length is not None and len(value) < min_length:
        errs.append(invalid(_path(name), value, detail=f"{name} in body should be at least {min_length} chars long"))
    pattern = schema.get("pattern")
    if pattern is not None:
        compiled = _regex(pattern)
        if compiled is not None and compiled.search(value) is None:
            errs.append(invalid(_path(name), value, detail=f"{name} in body should match '{pattern}'"))


def _number(value: float, schema: Schema, name: str, errs: ErrorList) -> None:
    maximum = schema.get("maximum")
    if maximum is not None:
        if schema.get("exclusiveMaximum") and value >= maximum:
            errs.append(invalid(_path(name), value, detail=f"{name} in body should be less than {go_value(maximum)}"))
        elif value > maximum:
            detail = f"{name} in body should be less than or equal to {go_value(maximum)}"
            errs.append(invalid(_path(name), value, detail=detail))
    minimum = schema.get("minimum")
    if minimum is not None:
        if schema.get("exclusiveMinimum") and value <= minimum:
            detail = f"{name} in body should be greater than {go_value(minimum)}"
            errs.append(invalid(_path(name), value, detail=detail))
        elif value < minimum:
            detail = f"{name} in body should be greater than or equal to {go_value(minimum)}"
            errs.append(invalid(_path(name), value, detail=detail))
    multiple = schema.get("multipleOf")
    if multiple:
        quotient = value / multiple
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            detail = f"{name} in body should be a multiple of {go_value(multiple)}"
            errs.append(invalid(_path(name), value, detail=detail))


def _array(value: list[Any], schema: Schema, name: str, errs: ErrorList) -> None:
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _validate(item, items, f"{name}[{i}]", errs)
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        errs.append(invalid(_path(name), len(value), detail=f"{name} in body should have at least {min_items} items"))
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        errs.append(too_many(_path(name), actual=len(value), maximum=int(max_items)))
    if schema.get("uniqueItems"):
        seen: list[Any] = []
        for item in value:
            if item in seen:
                errs.append(invalid(_path(name), value, detail=f"{name} in body shouldn't contain duplicates"))
                break
            seen.append(item)


def _object(value: dict[str, Any], schema: Schema, name: str, errs: ErrorList) -> None:
    count = len(value)
    min_props = schema.get("minProperties")
    if min_props is not None and count < min_props:
        detail = f"{name} in body should have at least {min_props} properties"
        errs.append(invalid(_path(name), count, detail=detail))
        return
    max_props = schema.get("maxProperties")
    if max_props is not None and count > max_props:
        errs.append(too_many(_path(name), actual=count, maximum=int(max_props)))
        return
    properties: Mapping[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    prefix = f"{name}." if name else ""
    if isinstance(additional, Mapping):
        for key, item in value.items():
            if key not in properties:
                _validate(item, additional, f"{name}.{key}", errs)
    for key, sub in properties.items():
        if key in value:
            _validate(value[key], sub, prefix + key, errs)
    for key in schema.get("required") or ():
        if key not in value:
            errs.append(required(_path(f"{name}.{key}".removeprefix("."))))
    if schema.get("x-kubernetes-embedded-resource"):
        for key in ("apiVersion", "kind"):
            if not value.get(key):
                errs.append(required(_path(prefix + key), "must not be empty"))
