"""Generate ``src/kubeplane/api/schemas.json`` from the official Python client's generated models.

Why: kube-apiserver rejects (``fieldValidation=Strict``) or warns about (``Warn``) fields a built-in type does not
declare, and kubectl v1.37 validates server side by default. Knowing which fields exist needs the schema of every
built-in type; the official client (pinned in the test extras) carries exactly that in its pydantic models:
``openapi_types`` (python attribute -> type string) and ``attribute_map`` (python attribute -> JSON field name).
This tool is run by hand after bumping the client and its output is committed; kubeplane never imports the
``kubernetes`` package at runtime.

Output format (``schemas.json``, sorted and deterministic, one type per line)::

    {"roots": {"<group>/<version>/<Kind>": "<type>", ...},
     "types": {"<type>": {"<jsonField>": "<ref>", ...}, ...},
     "required": {"<type>": ["<jsonField>", ...], ...}}

A ``<ref>`` is a type name, ``[]<ref>`` (list), ``{}<ref>`` (map with string keys) or a primitive: ``string``,
``integer``, ``number``, ``boolean``, ``date-time``, ``byte`` (base64 string), ``quantity`` (string or number),
``int-or-string`` or ``any`` (free-form JSON: RawExtension, FieldsV1, JSON).

The client spells ``resource.Quantity`` as a plain ``str``, so the Quantity fields are listed here by hand
(:data:`QUANTITY_FIELDS`, from the upstream API types); the tool fails if one of them no longer exists.

Usage: ``.venv/bin/python tools/gen_schemas.py [--check]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

from kubernetes.client import models

from kubeplane.api.resources import default_table

OUT = Path(__file__).resolve().parent.parent / "src" / "kubeplane" / "api" / "schemas.json"

# Upstream resource.Quantity fields, by model name without its version prefix (V1, V1beta2, CoreV1, ...).
QUANTITY_FIELDS: dict[str, tuple[str, ...]] = {
    "ResourceRequirements": ("limits", "requests"),
    "VolumeResourceRequirements": ("limits", "requests"),
    "PodSpec": ("overhead",),
    "NodeStatus": ("allocatable", "capacity"),
    "ResourceQuotaSpec": ("hard",),
    "ResourceQuotaStatus": ("hard", "used"),
    "LimitRangeItem": ("default", "default_request", "max", "max_limit_request_ratio", "min"),
    "PersistentVolumeSpec": ("capacity",),
    "PersistentVolumeClaimStatus": ("allocated_resources", "capacity"),
    "EmptyDirVolumeSource": ("size_limit",),
    "ResourceFieldSelector": ("divisor",),
    "ContainerStatus": ("allocated_resources",),
    "Overhead": ("pod_fixed",),
    "CSIStorageCapacity": ("capacity", "maximum_volume_size"),
    "MetricTarget": ("average_value", "value"),
    "MetricValueStatus": ("average_value", "value"),
    "DeviceCapacity": ("value",),
    "CapacityRequestPolicy": ("default", "valid_values"),
    "CapacityRequestPolicyRange": ("max", "min", "step"),
    "CapacityRequirements": ("requests",),
    "DeviceRequestAllocationResult": ("consumed_capacity",),
}

# Kinds that subresources and DELETE accept, beside the table's own kinds: (group, version, kind).
EXTRA_ROOTS: tuple[tuple[str, str, str], ...] = (
    ("autoscaling", "v1", "Scale"),
    ("policy", "v1", "Eviction"),
    ("", "v1", "Binding"),
    ("authentication.k8s.io", "v1", "TokenRequest"),
    ("meta.k8s.io", "v1", "DeleteOptions"),
    ("meta.k8s.io", "v1", "Status"),
)

_VERSION_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)?V\d+(?:(?:alpha|beta)\d+)?(?=[A-Z])")
_MODEL_REF = re.compile(r"^[A-Z]\w*$")


def _model_classes() -> dict[str, type[Any]]:
    found: dict[str, type[Any]] = {}
    for name in dir(models):
        cls = getattr(models, name)
        if isinstance(cls, type) and isinstance(getattr(cls, "openapi_types", None), dict):
            found[name] = cls
    return found


def _is_int_or_string(annotation: Any) -> bool:
    """IntOrString is ``object`` in ``openapi_types`` but ``Union[StrictInt, StrictStr]`` in the annotation."""
    args = {_strip_annotated(a) for a in _flatten_union(annotation)} - {type(None)}
    return args == {int, str}


def _flatten_union(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        out: list[Any] = []
        for a in typing.get_args(annotation):
            out.extend(_flatten_union(a))
        return out
    return [annotation]


def _strip_annotated(a: Any) -> Any:
    return typing.get_args(a)[0] if typing.get_origin(a) is typing.Annotated else a


_PRIMITIVES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "datetime": "date-time",
    "date": "date-time",
    "bytearray": "byte",
    "bytes": "byte",
    "object": "any",
}


def _convert(type_str: str, known: dict[str, type[Any]]) -> str:
    """Translate a client type string (``List[V1Container]``, ``Dict[str, str]``, ``V1ObjectMeta``) to a ref."""
    t = type_str.strip()
    for prefix in ("List[", "list["):
        if t.startswith(prefix) and t.endswith("]"):
            return "[]" + _convert(t[len(prefix) : -1], known)
    for prefix in ("Dict[str,", "dict(str,"):
        if t.startswith(prefix) and t.endswith(("]", ")")):
            return "{}" + _convert(t[len(prefix) : -1], known)
    if t in _PRIMITIVES:
        return _PRIMITIVES[t]
    if _MODEL_REF.match(t) and t in known:
        return t
    raise SystemExit(f"gen_schemas: unknown client type string {type_str!r}")


def _to_quantity(ref: str) -> str:
    if ref == "string":
        return "quantity"
    if ref.startswith(("[]", "{}")):
        return ref[:2] + _to_quantity(ref[2:])
    raise SystemExit(f"gen_schemas: a Quantity field has the non-string type {ref!r}")


def build() -> dict[str, Any]:
    classes = _model_classes()
    types: dict[str, dict[str, str]] = {}
    required: dict[str, list[str]] = {}
    quantity_hits: set[tuple[str, str]] = set()
    for name, cls in sorted(classes.items()):
        base = _VERSION_PREFIX.sub("", name)
        qfields = QUANTITY_FIELDS.get(base, ())
        fields: dict[str, str] = {}
        req: list[str] = []
        for attr, type_str in cls.openapi_types.items():
            json_name = cls.attribute_map[attr]
            ref = _convert(type_str, classes)
            model_field = cls.model_fields.get(attr)
            if ref == "any" and model_field is not None and _is_int_or_string(model_field.annotation):
                ref = "int-or-string"
            if attr in qfields:
                ref = _to_quantity(ref)
                quantity_hits.add((base, attr))
            fields[json_name] = ref
            if model_field is not None and model_field.is_required():
                req.append(json_name)
        types[name] = fields
        if req:
            required[name] = sorted(req)
    missing = {(b, f) for b, fs in QUANTITY_FIELDS.items() for f in fs} - quantity_hits
    if missing:
        raise SystemExit(f"gen_schemas: Quantity fields not found in the client: {sorted(missing)}")
    roots: dict[str, str] = {}
    gvks = {(r.group, r.version, r.kind) for r in default_table()}
    gvks |= {(s.group, s.version, s.kind) for r in default_table() for s in r.subresources}
    gvks |= set(EXTRA_ROOTS)
    for group, version, kind in sorted(gvks):
        for candidate in (kind, kind + "List"):
            model = _root_model(group, version, candidate, classes)
            if model is not None:
                roots[f"{group}/{version}/{candidate}"] = model
            elif candidate == kind and kind in {k for _, _, k in EXTRA_ROOTS}:
                raise SystemExit(f"gen_schemas: no client model for {group}/{version} {kind}")
    return {"roots": roots, "types": types, "required": required}


def _root_model(group: str, version: str, kind: str, classes: dict[str, type[Any]]) -> str | None:
    """The client names a kind ``V1Pod``, or ``CoreV1Event``/``EventsV1Event`` when two groups share the kind."""
    v = version[:1].upper() + version[1:]
    prefix = "Core" if group in ("", "meta.k8s.io") else group.split(".", maxsplit=1)[0].capitalize()
    for name in (f"{prefix}{v}{kind}", f"{v}{kind}"):
        if name in classes:
            return name
    return None  # connect options (PodExecOptions, ...) are query parameters, not bodies


def render(doc: dict[str, Any]) -> str:
    """Sorted JSON with one entry per line under each section, so a client bump reads as a small diff."""
    parts = []
    for section in sorted(doc):
        entries = doc[section]
        lines = [
            f"    {json.dumps(k)}: {json.dumps(entries[k], sort_keys=True, separators=(',', ':'))}"
            for k in sorted(entries)
        ]
        parts.append(f"  {json.dumps(section)}: {{\n" + ",\n".join(lines) + "\n  }")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="fail if schemas.json is not up to date")
    args = parser.parse_args(argv)
    text = render(build())
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date; run tools/gen_schemas.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
