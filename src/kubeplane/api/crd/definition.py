"""The CustomResourceDefinition object itself (apiextensions.k8s.io/v1): defaulting and validation.

Follows apiextensions-apiserver's pkg/apis/apiextensions/v1/defaults.go (``singular`` = lower-case kind,
``listKind`` = kind + ``List``, ``conversion.strategy`` = ``None``) and pkg/apis/apiextensions/validation/
validation.go with the v1 options (schemas required, structural schemas required): ``metadata.name`` must be
``<plural>.<group>``; the group a DNS subdomain with a dot; the scope ``Cluster`` or ``Namespaced``; version
names DNS-1035 labels, unique, exactly one storage version; names required and DNS-1035 (kinds in mixed case);
every version's ``schema.openAPIV3Schema`` present and structural (pkg/apiserver/schema/validation.go:
``type`` at the root ``object``, set wherever properties or items are specified); printer columns and the scale
subresource's paths. Updates keep the group and plural (and scope and kind once established), and
``status.storedVersions`` must keep naming versions of the spec.

Departure: where upstream quotes the whole ``spec.versions`` value (Go's internal structs marshalled), the value
here is the versions' JSON as sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.api.validation import names as vnames
from kubeplane.api.validation.field import (
    ErrorList,
    Path,
    forbidden,
    invalid,
    new_path,
    not_supported,
    required,
)

from . import celdefinition
from .resource import crd_versions, storage_version

__all__ = [
    "COLUMN_TYPES",
    "default_crd",
    "is_established",
    "validate_crd",
    "validate_crd_status_update",
    "validate_crd_update",
]

Obj = dict[str, Any]
COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")
_SCOPES = ("Cluster", "Namespaced")


def default_crd(crd: Obj) -> None:
    """apiextensions v1 defaults, in place."""
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str) and names["kind"]:
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", names["kind"] + "List")
    conversion = spec.get("conversion")
    if conversion is None:
        spec["conversion"] = {"strategy": "None"}
    elif isinstance(conversion, dict):
        conversion.setdefault("strategy", "None")
    for version in spec.get("versions") or ():
        if isinstance(version, dict):
            version.setdefault("served", False)
            version.setdefault("storage", False)


def is_established(crd: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or ()
        if isinstance(c, Mapping)
    )


def _joined(errors: list[str]) -> str:
    return ",".join(errors)


def validate_crd(crd: Mapping[str, Any]) -> ErrorList:
    """``ValidateCustomResourceDefinition`` (metadata name rule, spec, status)."""
    spec = crd.get("spec") if isinstance(crd.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    names = spec.get("names") if isinstance(spec.get("names"), Mapping) else {}
    assert isinstance(names, Mapping)
    errs: ErrorList = []
    name = str((crd.get("metadata") or {}).get("name") or "")
    wanted = f"{names.get('plural', '')}.{spec.get('group', '')}"
    if name and name != wanted:
        errs.append(invalid(new_path("metadata", "name"), name, detail='must be spec.names.plural+"."+spec.group'))
    errs.extend(_validate_spec(spec, new_path("spec")))
    status = crd.get("status")
    if isinstance(status, Mapping):
        accepted = status.get("acceptedNames")
        if isinstance(accepted, Mapping):
            errs.extend(_validate_names(accepted, new_path("status", "acceptedNames")))
    return errs


def validate_crd_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    errs = validate_crd(new)
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    path = new_path("spec")
    immutable = [("group",), ("names", "plural")]
    if is_established(old):
        immutable += [("scope",), ("names", "kind")]
    for keys in immutable:
        value, old_value = _dig(spec, keys), _dig(old_spec, keys)
        if value != old_value:
            errs.append(invalid(path.child(*keys), value, detail="field is immutable"))
    errs.extend(_validate_stored_versions(new))
    return errs


def validate_crd_status_update(new: Mapping[str, Any], old: Mapping[str, Any]) -> ErrorList:
    status = new.get("status")
    if isinstance(status, Mapping) and isinstance(status.get("acceptedNames"), Mapping):
        return _validate_names(status["acceptedNames"], new_path("status", "acceptedNames"))
    return []


def _dig(obj: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    cur: Any = obj
    for key in keys:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _validate_stored_versions(crd: Mapping[str, Any]) -> ErrorList:
    """``ValidateCustomResourceDefinitionStoredVersions``."""
    stored = list((crd.get("status") or {}).get("storedVersions") or [])
    path = new_path("status", "storedVersions")
    if not stored:
        return [invalid(path, stored, detail="must have at least one stored version")]
    errs: ErrorList = []
    names = [str(v.get("name")) for v in crd_versions(crd)]
    for version in crd_versions(crd):
        if version.get("storage") and version.get("name") not in stored:
            errs.append(invalid(path, dict(version), detail=f"must have the storage version {version.get('name')}"))
    for i, value in enumerate(stored):
        if value not in names:
            errs.append(invalid(path.index(i), value, detail="must appear in spec.versions"))
    return errs


def _validate_spec(spec: Mapping[str, Any], path: Path) -> ErrorList:
    errs: ErrorList = []
    group = spec.get("group")
    if not group:
        errs.append(required(path.child("group")))
    elif problems := vnames.is_dns1123_subdomain(str(group)):
        errs.append(invalid(path.child("group"), group, detail=_joined(problems)))
    elif len(str(group).split(".")) < 2:
        errs.append(invalid(path.child("group"), group, detail="should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(required(path.child("scope")))
    elif scope not in _SCOPES:
        errs.append(not_supported(path.child("scope"), scope, supported=_SCOPES))
    versions = [v for v in spec.get("versions") or () if isinstance(v, Mapping)]
    seen: set[str] = set()
    unique = True
    storage_count = 0
    for i, version in enumerate(versions):
        vpath = path.child("versions").index(i)
        vname = str(version.get("name") or "")
        if version.get("storage"):
            storage_count += 1
        if vname in seen:
            unique = False
        seen.add(vname)
        if problems := vnames.is_dns1035_label(vname):
            errs.append(invalid(vpath.child("name"), vname, detail=_joined(problems)))
        errs.extend(_validate_version(version, vpath))
    raw_versions = [dict(v) for v in versions]
    if not unique:
        errs.append(invalid(path.child("versions"), raw_versions, detail="must contain unique version names"))
    if storage_count != 1:
        errs.append(
            invalid(
                path.child("versions"), raw_versions, detail="must have exactly one version marked as storage version"
            )
        )
    names = spec.get("names") if isinstance(spec.get("names"), Mapping) else {}
    assert isinstance(names, Mapping)
    for key in ("plural", "singular", "kind", "listKind"):
        if not names.get(key):
            errs.append(required(path.child("names", key)))
    errs.extend(_validate_names(names, path.child("names")))
    conversion = spec.get("conversion")
    if isinstance(conversion, Mapping):
        strategy = conversion.get("strategy")
        cpath = path.child("conversion")
        if not strategy:
            errs.append(required(cpath.child("strategy")))
        elif strategy not in ("None", "Webhook"):
            errs.append(not_supported(cpath.child("strategy"), strategy, supported=("None", "Webhook")))
        elif strategy == "Webhook":
            errs.append(forbidden(cpath.child("strategy"), "conversion webhooks are not supported by kubeplane"))
    return errs


def _validate_names(names: Mapping[str, Any], path: Path) -> ErrorList:
    """``ValidateCustomResourceDefinitionNames``."""
    errs: ErrorList = []
    for key in ("plural", "singular"):
        value = str(names.get(key) or "")
        if value and (problems := vnames.is_dns1035_label(value)):
            errs.append(invalid(path.child(key), value, detail=_joined(problems)))
    for key in ("kind", "listKind"):
        value = str(names.get(key) or "")
        if value and (problems := vnames.is_dns1035_label(value.lower())):
            detail = "may have mixed case, but should otherwise match: " + _joined(problems)
            errs.append(invalid(path.child(key), value, detail=detail))
    for i, short in enumerate(names.get("shortNames") or ()):
        if problems := vnames.is_dns1035_label(str(short)):
            errs.append(invalid(path.child("shortNames").index(i), short, detail=_joined(problems)))
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        errs.append(invalid(path.child("listKind"), names["listKind"], detail="kind and listKind may not be the same"))
    for i, category in enumerate(names.get("categories") or ()):
        if problems := vnames.is_dns1035_label(str(category)):
            errs.append(invalid(path.child("categories").index(i), category, detail=_joined(problems)))
    return errs


def _validate_version(version: Mapping[str, Any], path: Path) -> ErrorList:
    errs: ErrorList = []
    schema = (
        (version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version.get("schema"), Mapping) else None
    )
    spath = path.child("schema", "openAPIV3Schema")
    if not isinstance(schema, Mapping):
        errs.append(required(spath, "schemas are required"))
    else:
        errs.extend(_validate_structural(schema, spath, root=True))
        errs.extend(celdefinition.validate_rules_of_schema(schema, spath))
    subresources = version.get("subresources")
    if isinstance(subresources, Mapping) and isinstance(subresources.get("scale"), Mapping):
        scale = subresources["scale"]
        scale_path = path.child("subresources", "scale")
        for key, under in (("specReplicasPath", ".spec"), ("statusReplicasPath", ".status")):
            value = scale.get(key)
            if not value:
                errs.append(required(scale_path.child(key)))
            elif not str(value).startswith(under + "."):
                errs.append(invalid(scale_path.child(key), value, detail=f"should be a json path under {under}"))
        selector = scale.get("labelSelectorPath")
        if selector and not str(selector).startswith((".spec.", ".status.")):
            errs.append(
                invalid(
                    scale_path.child("labelSelectorPath"),
                    selector,
                    detail="should be a json path under either .spec or .status",
                )
            )
    for i, column in enumerate(version.get("additionalPrinterColumns") or ()):
        if isinstance(column, Mapping):
            errs.extend(_validate_column(column, path.child("additionalPrinterColumns").index(i)))
    return errs


def _validate_column(column: Mapping[str, Any], path: Path) -> ErrorList:
    """``ValidateCustomResourceColumnDefinition``."""
    errs: ErrorList = []
    if not column.get("name"):
        errs.append(required(path.child("name")))
    ctype = column.get("type")
    if not ctype:
        errs.append(required(path.child("type"), f"must be one of {', '.join(COLUMN_TYPES)}"))
    elif ctype not in COLUMN_TYPES:
        errs.append(not_supported(path.child("type"), ctype, supported=COLUMN_TYPES))
    if not column.get("jsonPath"):
        errs.append(required(path.child("jsonPath")))
    if (priority := column.get("priority")) is not None and isinstance(priority, int) and priority < 0:
        errs.append(invalid(path.child("priority"), priority, detail="must be greater than or equal to 0"))
    return errs


_SCHEMA_TYPES = ("array", "boolean", "integer", "number", "object", "string")


def _validate_structural(schema: Mapping[str, Any], path: Path, *, root: bool = False, via: str = "") -> ErrorList:
    """The structural rules that matter for serving (pkg/apiserver/schema/validation.go
    ``validateStructuralInvariants`` and ``validateStructuralCompleteness``): a type on every node (``object`` at
    the root) unless int-or-string or preserve-unknown-fields, no ``additionalProperties`` next to
    ``properties``, no ``uniqueItems``, ``items`` for arrays. ``via`` names how the node was reached."""
    errs: ErrorList = []
    stype = schema.get("type")
    untyped_ok = bool(schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields"))
    if root:
        if not stype:
            errs.append(required(path.child("type"), "must not be empty at the root"))
        elif stype != "object":
            errs.append(invalid(path.child("type"), stype, detail="must be object at the root"))
    elif not stype and not untyped_ok:
        errs.append(required(path.child("type"), f"must not be empty for specified {via}"))
    if stype and stype not in _SCHEMA_TYPES:
        errs.append(not_supported(path.child("type"), stype, supported=_SCHEMA_TYPES))
    if schema.get("properties") and schema.get("additionalProperties") not in (None, True):
        detail = "additionalProperties and properties are mutual exclusive"
        errs.append(forbidden(path.child("additionalProperties"), detail))
    if schema.get("uniqueItems") is True:
        detail = "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        errs.append(forbidden(path.child("uniqueItems"), detail))
    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            errs.extend(_validate_structural(sub, path.child("properties").key(str(key)), via="object fields"))
    items = schema.get("items")
    if isinstance(items, Mapping):
        errs.extend(_validate_structural(items, path.child("items"), via="array items"))
    elif stype == "array" and items is None:
        errs.append(required(path.child("items"), "must be specified"))
    additional = schema.get("additionalProperties")
    if isinstance(additional, Mapping):
        errs.extend(_validate_structural(additional, path.child("additionalProperties"), via="object fields"))
    return errs


def storage_of(crd: Mapping[str, Any]) -> str:
    return storage_version(crd)
