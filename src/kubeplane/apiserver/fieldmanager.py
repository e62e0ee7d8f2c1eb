"""managedFields on every write, as kube-apiserver's field manager (apimachinery ``util/managedfields/internal``:
``fieldmanager.go``, ``managedfieldsupdater.go``, ``stripmeta.go``, ``capmanagers.go``, ``buildmanagerinfo.go``,
``skipnonapplied.go``, ``lastappliedmanager.go``, ``lastappliedupdater.go``, ``conflict.go``).

* The manager of a write is ``?fieldManager=`` or the User-Agent up to its first ``/`` (``managerOrUserAgent``,
  ``prefixFromUserAgent``), ``unknown`` if empty; its entry is identified by (manager, operation, apiVersion for
  updates, subresource) and carries the time of its last change (RFC 3339, seconds).
* :func:`track_update` (create, update, non-apply patch, status, scale): the managedFields a client sends replace
  the live ones when they decode (``[]`` or ``[{}]`` reset them; invalid ones are ignored, the live ones kept:
  ``decodeLiveOrNew``); a subresource write always keeps the live ones. An update of an object whose
  managedFields are empty does not start tracking (``skipNonAppliedManager``); a create always does.
* :func:`apply` (PATCH ``application/apply-patch+yaml``): see :mod:`kubeplane.api.smd.update`; conflicts are a
  409 with upstream's message and ``FieldManagerConflict`` causes; for the manager ``kubectl``, conflicts with
  what the live object's ``kubectl.kubernetes.io/last-applied-configuration`` covers are forced (the upgrade from
  client-side apply), and that annotation is kept in step with what is applied.
* After either: ``apiVersion``, ``kind`` and the server-set metadata are stripped from every set; empty sets
  are dropped; more than 10 Update entries fold the oldest into ``ancient-changes`` (per apiVersion).

Cost: an update whose objects compare equal outside managedFields keeps the live entries untouched without
decoding them; otherwise the comparison skips equal subtrees (see :func:`kubeplane.api.smd.typed.compare`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import orjson

from kubeplane.api import meta as apimeta
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.shapes import ShapeMemo, shape_key
from kubeplane.api.smd import fieldsv1, schema, typed
from kubeplane.api.smd import update as smd
from kubeplane.api.smd.fieldpath import FieldsError, Set, element_key, path_string
from kubeplane.api.validation.field import ErrorList, invalid, new_path, too_long

from . import errors

Obj = dict[str, Any]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_UPDATE_MANAGERS = 10
ANCIENT = "ancient-changes"
_STRIPPED_METADATA = (
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
)
"""The metadata fields no manager owns (upstream ``stripmeta.go``'s ``NewStripMetaManager``)."""
_STRIP = Set.of(
    (("f", "apiVersion"),),
    (("f", "kind"),),
    (("f", "metadata"),),
    *((("f", "metadata"), ("f", name)) for name in _STRIPPED_METADATA),
)


FIELD_MANAGER_MAX_LENGTH = 128
"""apimachinery ``metav1validation.FieldManagerMaxLength``."""


def validate_field_manager(name: str | None, *, options_kind: str) -> None:
    """``ValidateFieldManager`` (apimachinery pkg/apis/meta/v1/validation), run by ``ValidateCreateOptions``,
    ``ValidateUpdateOptions`` and ``ValidatePatchOptions``: at most 128 bytes, every character printable (Go's
    ``unicode.IsPrint``, which Python's ``str.isprintable`` matches per character; the position is Go's byte
    offset). A 422 naming the options kind; nothing runs."""
    if not name:
        return
    path = new_path("fieldManager")
    found: ErrorList = []
    raw = name.encode("utf-8", "surrogatepass")
    if len(raw) > FIELD_MANAGER_MAX_LENGTH:
        found.append(too_long(path, FIELD_MANAGER_MAX_LENGTH))
    offset = 0
    for char in name:
        if not char.isprintable():
            found.append(invalid(path, name, detail=f"invalid character U+{ord(char):04X} (at position {offset})"))
        offset += len(char.encode("utf-8", "surrogatepass"))
    if found:
        raise errors.invalid("meta.k8s.io", options_kind, "", found)


def manager_name(field_manager: str | None, user_agent: str) -> str:
    """``managerOrUserAgent``."""
    return field_manager or user_agent.split("/", 1)[0]


@lru_cache(maxsize=1024)
def _identifier(manager: str, operation: str, api_version: str, subresource: str) -> str:
    """``BuildManagerIdentifier``: the entry as JSON without time and fields (nor apiVersion for Apply).
    Memoised (a pure function of four strings; a cluster has few managers)."""
    entry: dict[str, str] = {"manager": manager, "operation": operation}
    if operation == "Update":
        entry["apiVersion"] = api_version
    if subresource:
        entry["subresource"] = subresource
    return json.dumps(entry, separators=(",", ":"))


Decoded = tuple[smd.Managers, dict[str, str | None]]


def decode(entries: Any) -> Decoded:
    """``DecodeManagedFields``; ValueError with upstream's message when an entry does not decode."""
    if not isinstance(entries, list):
        raise ValueError("managedFields must be a list")
    managers: smd.Managers = {}
    times: dict[str, str | None] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError("managed fields entry must be an object")
        operation = entry.get("operation")
        if operation not in ("Apply", "Update"):
            raise ValueError("operation must be `Apply` or `Update`")
        api_version = entry.get("apiVersion")
        if not api_version or not isinstance(api_version, str):
            raise ValueError("apiVersion must not be empty")
        fields_type = entry.get("fieldsType") or ""
        if fields_type != "FieldsV1":
            raise ValueError(
                f"missing fieldsType in managed fields entry {i}"
                if not fields_type
                else f"invalid fieldsType {fields_type!r} in managed fields entry {i}"
            )
        ident = _identifier(
            str(entry.get("manager") or ""), operation, api_version, str(entry.get("subresource") or "")
        )
        fields_v1 = entry.get("fieldsV1")
        if fields_v1 is not None and not isinstance(fields_v1, dict):  # Set.FromJSON reads an object only
            raise ValueError(f"error decoding versioned set: expected an object, got {type(fields_v1).__name__}")
        try:
            fields = Set.from_fields_v1(fields_v1 or {})
        except FieldsError as exc:
            raise ValueError(f"error decoding versioned set: {exc}") from None
        managers[ident] = smd.VersionedSet(fields, api_version, operation == "Apply")
        times[ident] = entry.get("time")
    return managers, times


def encode(managers: smd.Managers, times: dict[str, str | None]) -> list[Obj]:
    """``encodeManagedFields``, sorted as ``sortEncodedManagedFields`` (operation, time, manager, apiVersion,
    subresource); keys in ManagedFieldsEntry's order."""
    out: list[Obj] = []
    for ident, owned in managers.items():
        manager, operation, subresource = _identity(ident)
        entry: Obj = {"manager": manager, "operation": operation, "apiVersion": owned.api_version}
        if times.get(ident):
            entry["time"] = times[ident]
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = owned.fields.to_fields_v1()
        if subresource:
            entry["subresource"] = subresource
        out.append(entry)
    out.sort(key=_entry_order)
    return out


@lru_cache(maxsize=1024)
def _identity(ident: str) -> tuple[str, str, str]:
    """(manager, operation, subresource) of an identifier (the inverse of :func:`_identifier`, memoised)."""
    info = json.loads(ident)
    return str(info["manager"]), str(info["operation"]), str(info.get("subresource") or "")


def _entry_order(entry: Obj) -> tuple[str, ...]:
    """``sortEncodedManagedFields``: operation, time, manager, apiVersion, subresource."""
    return (
        str(entry.get("operation")),
        str(entry.get("time") or ""),
        str(entry.get("manager") or ""),
        str(entry.get("apiVersion")),
        str(entry.get("subresource") or ""),
    )


_STRIP_META_KEYS = frozenset({".", *("f:" + name for name in _STRIPPED_METADATA)})
"""The ``metadata`` part of :data:`_STRIP` as FieldsV1 keys."""


def _strip_fields_v1(fields_v1: Obj) -> Obj:
    """:data:`_STRIP` applied to a FieldsV1 document directly (the create path's shortcut)."""
    out = {k: v for k, v in fields_v1.items() if k not in ("f:apiVersion", "f:kind")}
    meta = out.get("f:metadata")
    if meta is not None:
        rest = {k: v for k, v in meta.items() if k not in _STRIP_META_KEYS}
        if rest:
            out["f:metadata"] = rest
        else:
            del out["f:metadata"]
    return out


def _strip(managers: smd.Managers) -> smd.Managers:
    out: smd.Managers = {}
    for ident, owned in managers.items():
        fields = owned.fields.difference(_STRIP)
        if not fields.empty():
            out[ident] = smd.VersionedSet(fields, owned.api_version, owned.applied)
    return out


def _cap(managers: smd.Managers, times: dict[str, str | None]) -> None:
    """``capUpdateManagers``: fold the oldest Update entries into ``ancient-changes`` (one bucket per apiVersion)
    until at most 10 remain; the first entry of a version seeds its bucket, the bucket takes the newest time."""
    updaters = [m for m, s in managers.items() if not s.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda m: (times.get(m) or "", m))
    first_of: dict[str, str] = {}
    length = len(updaters)
    for ident in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        owned = managers[ident]
        version = owned.api_version
        bucket = _identifier(ANCIENT, "Update", version, "")
        first = first_of.get(version)
        if first is None:
            first_of[version] = ident
            continue
        if bucket not in managers:
            managers[bucket] = managers.pop(first)
        merged = owned.fields.union(managers[bucket].fields)
        managers[bucket] = smd.VersionedSet(merged, owned.api_version, owned.applied)
        del managers[ident]
        length -= 1
        times[bucket] = times.get(ident)


RESET_FIELDS: dict[tuple[str, str, str], tuple[tuple[str, ...], ...]] = {
    ("", "Pod", "status"): (("spec",), ("metadata", "deletionTimestamp"), ("metadata", "ownerReferences")),
    ("apps", "Deployment", "status"): (("spec",), ("metadata", "labels")),
}
"""Reset fields that differ from the common rule, by (group, kind, subresource), as the kinds' strategies'
``GetResetFields`` (pkg/registry/core/pod/strategy.go podStatusStrategy; pkg/registry/apps/deployment/strategy.go
deploymentStatusStrategy). Every other kind follows the common rule of its strategies (core node, namespace,
service; apps replicaset, statefulset, daemonset; batch job; ...; apiextensions customresource): the main
resource resets ``status`` when there is a status subresource, the status subresource resets ``spec``."""


def reset_fields(info: ResourceInfo, subresource: str) -> Set:
    """The fields a write through this endpoint never owns (upstream's ``GetResetFields``)."""
    paths = RESET_FIELDS.get((info.group, info.kind, subresource))
    if paths is None:
        if subresource == "status":
            paths = (("spec",),)
        elif not subresource and info.subresource("status") is not None:
            paths = (("status",),)
        else:
            paths = ()
    return Set.of(*(tuple(("f", name) for name in path) for path in paths))


def _without_fields(fields: Set, reset: Set) -> Set:
    """``fields`` less every reset path and what lies below it."""
    out = fields.copy()
    for pe in reset.members:
        out.members.discard(pe)
        out.children.pop(pe, None)
    for pe, child in reset.children.items():
        if pe in out.children:
            out.children[pe] = _without_fields(out.children[pe], child)
            if out.children[pe].empty():
                del out.children[pe]
    return out


def _without_managed(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _atom(info: ResourceInfo) -> schema.Atom:
    return schema.type_of(info.group, info.version, info.kind)


def _is_reset(entries: Any) -> bool:
    return entries in ([], [{}])


def track_update(
    info: ResourceInfo, live: Obj | None, new: Obj, manager: str, *, subresource: str = "", now: float
) -> None:
    """Set ``new``'s managedFields after ``manager`` wrote it over ``live`` (None: a create)."""
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        return
    sent = meta.pop("managedFields", None)
    live_entries = (live or {}).get("metadata", {}).get("managedFields") or []
    if subresource or sent is None or sent == live_entries:
        base: Any = live_entries
    elif _is_reset(sent):
        base = []
    else:
        base = sent
        try:
            if not decode(sent)[0]:
                base = live_entries
        except ValueError:
            base = live_entries
    live_obj = _without_managed(live) if live is not None else {}
    if live is not None and base is live_entries and live_obj == new:
        if live_entries:
            meta["managedFields"] = live_entries
        return
    if live is not None and not base:  # skipNonAppliedManager: an untracked object stays untracked
        return
    if base is not live_entries:
        try:
            decode(base)
        except ValueError:
            base = []
            if live is not None:
                return
    entries = _updated_entries(info, live_obj, new, base, manager, subresource, now)
    if entries:
        meta["managedFields"] = entries


CREATED_SPECS: ShapeMemo[bytes] = ShapeMemo()
"""(kind, a spec's encoding) -> the ``f:spec`` FieldsV1 of creating it (:mod:`kubeplane.api.shapes`)."""


def created_fields_v1(info: ResourceInfo, new: Obj) -> Obj:
    """``typed.added_fields_v1(new)``, the fields a create adds, with the ``spec`` part from :data:`CREATED_SPECS`.

    Exact because a map's FieldsV1 is the union of its entries', each computed from that entry's value and its
    schema type alone (the top level's keys sorted, as ``added_fields_v1`` sorts them): the spec's part depends
    on the kind and the spec, the rest (metadata with its per-object names, labels...) is computed every time.
    The kept part is bytes, decoded afresh for each object, since the entry ends in the object's
    managedFields."""
    atom = _atom(info)
    spec = new.get("spec")
    if not isinstance(spec, dict) or not spec or len(new) < 2:
        return _maps_fields_v1(info, new, atom)
    key = shape_key(spec)
    if key is None:
        return _maps_fields_v1(info, new, atom)
    key = info.api_version.encode() + b"/" + info.kind.encode() + b"\0" + key
    done = CREATED_SPECS.get(key)
    if done is None:
        part = typed.added_fields_v1({"spec": spec}, atom)
        if "f:spec" not in part:  # the kind is atomic: no per-entry field sets
            return typed.added_fields_v1(new, atom)
        done = orjson.dumps(part["f:spec"])
        CREATED_SPECS.put(key, done)
    out = _maps_fields_v1(info, {k: v for k, v in new.items() if k != "spec"}, atom)
    out["f:spec"] = orjson.loads(done)
    return {k: out[k] for k in sorted(out)}


CREATED_MAPS: ShapeMemo[tuple[schema.Atom, bytes]] = ShapeMemo()
"""(kind, the keys of an object made of maps and scalars) -> its schema type and the FieldsV1 of creating it."""


def _maps_fields_v1(info: ResourceInfo, obj: Obj, atom: schema.Atom) -> Obj:
    """``typed.added_fields_v1(obj, atom)``, from :data:`CREATED_MAPS` when ``obj`` holds no list.

    Exact because a create's FieldsV1 of maps and scalars depends on the keys alone: a scalar entry is a leaf
    whatever its value, a map entry is granular or a leaf by its schema type (``atom``'s, the same for the same
    kind and keys) -- so an Event's fields, unique per event, are computed once per shape. A hit is used only
    for the very ``atom`` it was computed with: a custom resource's type changes with its definition."""
    shape = _key_shape(obj)
    if shape is None:
        return typed.added_fields_v1(obj, atom)
    key = shape_key(shape)
    if key is not None:
        key = info.api_version.encode() + b"/" + info.kind.encode() + b"\0" + key
    done = CREATED_MAPS.get(key)
    if done is not None and done[0] is atom:
        fields: Obj = orjson.loads(done[1])
        return fields
    fields = typed.added_fields_v1(obj, atom)
    CREATED_MAPS.put(key, (atom, orjson.dumps(fields)))
    return fields


def _key_shape(value: Obj) -> list[Any] | None:
    """The keys of a map of maps and scalars, nested maps as ``[key, their shape]``; None when it holds a list."""
    out: list[Any] = []
    for k, v in value.items():
        if isinstance(v, dict):
            sub = _key_shape(v)
            if sub is None:
                return None
            out.append([k, sub])
        elif isinstance(v, list):
            return None
        else:
            out.append(k)
    return out


def _touches(fields_v1: Any, paths: Set) -> bool:
    """Whether the FieldsV1 document owns a member of ``paths`` (walks ``paths``, which is small: what a write
    changed, not the document)."""
    if not isinstance(fields_v1, dict):
        return True
    for pe in paths.members:
        node = fields_v1.get(element_key(pe))
        if node is not None and (not node or "." in node):
            return True
    for pe, child in paths.children.items():
        node = fields_v1.get(element_key(pe))
        if node and _touches(node, child):
            return True
    return False


def _updated_entries(
    info: ResourceInfo, live: Obj, new: Obj, base: list[Obj], manager: str, subresource: str, now: float
) -> list[Obj]:
    """The Update of ``managedfieldsupdater.go`` over ``structuredmerge.go``, decoding only the entries the write
    touches: the others lose nothing, so their encoded form is kept as it is."""
    if not live and not base:  # a create: everything is added, the creator owns it all
        fields_v1 = _strip_fields_v1(created_fields_v1(info, new))
        if not fields_v1:
            return []
        entry: Obj = {
            "manager": manager or "unknown",
            "operation": "Update",
            "apiVersion": info.api_version,
            "time": apimeta.format_time(now),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1,
        }
        if subresource:
            entry["subresource"] = subresource
        return [entry]
    comparison = typed.compare(live, new, _atom(info))
    if comparison.is_same() and base:
        return base
    changed = _union(comparison.modified, comparison.added)
    ident = _identifier(manager or "unknown", "Update", info.api_version, subresource)
    kept: list[Obj] = []
    touched: list[Obj] = []
    for entry in base:
        key = _identifier(
            str(entry.get("manager") or ""),
            str(entry.get("operation")),
            str(entry.get("apiVersion")),
            str(entry.get("subresource") or ""),
        )
        fields = entry.get("fieldsV1")
        if key == ident or _touches(fields, changed) or _touches(fields, comparison.removed):
            touched.append(entry)
        else:
            kept.append(entry)
    lost = _union(changed, comparison.removed)
    mine = changed.difference(_STRIP) if _meets(changed, _STRIP) else changed
    native = _updated_in_place(touched, ident, lost, mine, info.api_version, now)
    if native is not None:
        entries = kept + native
    else:
        entries = kept + _updated_by_sets(touched, ident, lost, mine, info.api_version, now)
    if sum(1 for e in entries if e.get("operation") == "Update") > MAX_UPDATE_MANAGERS:
        all_managers, all_times = decode(entries)
        _cap(all_managers, all_times)
        return encode(all_managers, all_times)
    entries.sort(key=_entry_order)
    return entries


def _union(a: Set, b: Set) -> Set:
    """``a.union(b)``, or one of them itself when the other has nothing at all (the sets of one write's update
    are read, never changed, so sharing one is safe and saves the copy)."""
    if not b.members and not b.children:
        return a
    if not a.members and not a.children:
        return b
    return a.union(b)


def _meets(a: Set, b: Set) -> bool:
    """Whether ``a`` and ``b`` share a top-level element: when not, ``a.difference(b)`` equals ``a`` (the sets of a
    comparison hold no empty child for the difference to drop)."""
    return not (a.members.isdisjoint(b.members) and a.members.isdisjoint(b.children)) or not (
        a.children.keys().isdisjoint(b.members) and a.children.keys().isdisjoint(b.children)
    )


def _updated_by_sets(touched: list[Obj], ident: str, lost: Set, mine: Set, api_version: str, now: float) -> list[Obj]:
    """The touched entries after the write, through decoded field sets (the general path)."""
    managers, times = decode(touched)
    out: smd.Managers = {}
    for key, owned in managers.items():
        rest = owned.fields.difference(lost)
        if key == ident or not rest.empty():
            out[key] = smd.VersionedSet(rest, owned.api_version, owned.applied)
    if not mine.empty():
        previous = out.get(ident)
        out[ident] = smd.VersionedSet(mine if previous is None else mine.union(previous.fields), api_version, False)
        times[ident] = apimeta.format_time(now)
    elif ident in out and out[ident].fields.empty():
        del out[ident]
    return encode(out, times)


def _updated_in_place(
    touched: list[Obj], ident: str, lost: Set, mine: Set, api_version: str, now: float
) -> list[Obj] | None:
    """:func:`_updated_by_sets`'s answer computed on the FieldsV1 documents themselves
    (:func:`fieldsv1.subtract_and_add`: no decode, no set copies, no re-encode of untouched subtrees' sets);
    None when an entry is one the general path must read (it does not decode, two entries share an identity,
    a document the walk leaves to the sets). Entries sorted as :func:`encode` sorts them."""
    gains = not mine.empty()
    seen: set[str] = set()
    out: list[Obj] = []
    for entry in touched:
        operation = entry.get("operation")
        version = entry.get("apiVersion")
        fields_v1 = entry.get("fieldsV1")
        if (
            operation not in ("Apply", "Update")
            or not version
            or not isinstance(version, str)
            or (entry.get("fieldsType") or "") != "FieldsV1"
            or (fields_v1 is not None and not isinstance(fields_v1, dict))
        ):
            return None
        key = _identifier(str(entry.get("manager") or ""), operation, version, str(entry.get("subresource") or ""))
        if key in seen:
            return None
        seen.add(key)
        own = key == ident
        body = fieldsv1.subtract_and_add(fields_v1 or {}, lost, mine if own and gains else None)
        if body is None:
            return None
        if not body:  # an emptied entry is dropped (the writer's only when it gains nothing: ``mine`` is in it)
            continue
        out.append(_entry(key, version, apimeta.format_time(now) if own and gains else entry.get("time"), body))
    if gains and ident not in seen:
        out.append(_entry(ident, api_version, apimeta.format_time(now), mine.to_fields_v1()))
    out.sort(key=_entry_order)
    return out


def _entry(ident: str, api_version: str, time: Any, fields_v1: Obj) -> Obj:
    """One encoded entry, keys in ManagedFieldsEntry's order (as :func:`encode` writes it)."""
    manager, operation, subresource = _identity(ident)
    entry: Obj = {"manager": manager, "operation": operation, "apiVersion": api_version}
    if time:
        entry["time"] = time
    entry["fieldsType"] = "FieldsV1"
    entry["fieldsV1"] = fields_v1
    if subresource:
        entry["subresource"] = subresource
    return entry


def _conflict_error(conflicts: list[smd.Conflict]) -> errors.APIError:
    """``NewConflictError``: 409 Conflict, one FieldManagerConflict cause per path."""

    def printable(ident: str) -> str:
        info = json.loads(ident)
        text = json.dumps(info["manager"])
        if info.get("subresource"):
            text += f" with subresource {json.dumps(info['subresource'])}"
        if info["operation"] == "Update":
            text += f" using {info.get('apiVersion', '')}"
        return text

    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {printable(c.manager)}",
            "field": path_string(c.path),
        }
        for c in conflicts
    ]
    if len(conflicts) == 1:
        c = conflicts[0]
        message = f"Apply failed with 1 conflict: conflict with {printable(c.manager)}: {path_string(c.path)}"
    else:
        by_manager: dict[str, list[str]] = {}
        for c in conflicts:
            by_manager.setdefault(printable(c.manager), []).append(path_string(c.path))
        lines: list[str] = []
        for name in sorted(by_manager):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {p}" for p in by_manager[name])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return errors.APIError(code=409, reason="Conflict", message=message, details={"causes": causes})


def _allowed_by_last_applied(live: Obj, atom: schema.Atom, api_version: str) -> Set | None:
    """``allowedConflictsFromLastApplied``: the fields the annotation covers and the live object still holds."""
    text = (live.get("metadata", {}).get("annotations") or {}).get(LAST_APPLIED)
    if not text:
        return None
    try:
        last = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != api_version:
        return None
    fields = typed.to_field_set(last, atom)
    comparison = typed.compare(last, live, atom)
    return fields.difference(comparison.modified).difference(comparison.added).difference(comparison.removed)


def _last_applied_value(config: Obj) -> str:
    """``buildLastApplied``: the applied object without the annotation, as Go encodes an unstructured object."""
    copy = json.loads(json.dumps(config))
    annotations = copy.get("metadata", {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    return json.dumps(copy, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"


def apply(
    info: ResourceInfo, live: Obj, config: Obj, manager: str, *, force: bool, subresource: str = "", now: float
) -> Obj:
    """The object after ``manager`` applied ``config`` to ``live`` (an empty object for a create-on-apply)."""
    if config.get("apiVersion") != info.api_version:
        raise errors.bad_request(
            "Incorrect version specified in apply patch. "
            f"Specified patch version: {config.get('apiVersion') or ''}, expected: {info.api_version}"
        )
    if config.get("metadata", {}).get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    try:
        managers, times = decode(live.get("metadata", {}).get("managedFields") or [])
    except ValueError as exc:
        raise errors.APIError(
            code=500, reason="InternalError", message=f"Internal error occurred: failed to decode managed fields: {exc}"
        ) from None
    atom = _atom(info)
    ident = _identifier(manager, "Apply", info.api_version, subresource)
    live_obj = _without_managed(live)
    try:
        new, updated = smd.apply(live_obj, config, atom, info.api_version, managers, ident, force=force)
    except smd.Conflicts as exc:
        conflicts = exc.conflicts
        allowed = _allowed_by_last_applied(live_obj, atom, info.api_version) if manager == "kubectl" else None
        if allowed is None:
            raise _conflict_error(conflicts) from None
        rest = [c for c in conflicts if not allowed.has(c.path)]
        if rest:
            raise _conflict_error(rest) from None
        new, updated = smd.apply(live_obj, config, atom, info.api_version, managers, ident, force=True)
    updated = _strip(updated)
    reset = reset_fields(info, subresource)
    if not reset.empty() and ident in updated:
        mine = updated[ident]
        updated[ident] = smd.VersionedSet(_without_fields(mine.fields, reset), mine.api_version, True)
        if updated[ident].fields.empty():
            del updated[ident]
    if new is None:  # nothing changed: the applier's time stays (managedfieldsupdater.go Apply)
        new = json.loads(json.dumps(live_obj))
    else:
        times[ident] = apimeta.format_time(now)
    _cap(updated, times)
    if manager == "kubectl" and LAST_APPLIED in (new.get("metadata", {}).get("annotations") or {}):
        new.setdefault("metadata", {})["annotations"] = {
            **new["metadata"]["annotations"],
            LAST_APPLIED: _last_applied_value(config),
        }
    meta = new.setdefault("metadata", {})
    if updated:
        meta["managedFields"] = encode(updated, times)
    else:
        meta.pop("managedFields", None)
    result: Obj = new
    return result
