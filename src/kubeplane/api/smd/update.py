"""Ownership of fields per manager (structured-merge-diff ``merge.Updater``), for one API version.

* :func:`update` (a create, update or non-apply patch): every other manager loses the fields the write modified,
  added or removed... precisely: they lose what was modified or added (forced: an update never conflicts) and
  what was removed; the writer gains what was modified or added and loses what was removed.
* :func:`apply`: merge the configuration into the live object, give the applier exactly the configuration's
  field set, prune what the applier applied last time and no longer applies (unless another manager owns it),
  then the same comparison as an update, where a field another manager owns and the apply changes is a
  :class:`Conflicts` unless ``force`` (then the other manager loses it).

Managers whose set becomes empty are dropped. Versions: kubeplane serves one version per kind, so every
manager's set is read at that version (upstream converts between versions; a kind with several versions would
need the converter). ``reconcileManagedFieldsWithSchemaChanges`` is not needed for the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fieldpath import Path, Set, path_string
from .schema import Atom
from .typed import (
    Comparison,
    compare,
    ensure_named_fields_are_members,
    merge,
    remove_from_object,
    to_field_set,
)


@dataclass(slots=True)
class VersionedSet:
    fields: Set
    api_version: str
    applied: bool


Managers = dict[str, VersionedSet]


@dataclass(frozen=True, slots=True)
class Conflict:
    manager: str
    path: Path

    def __str__(self) -> str:
        return f"conflict with {self.manager!r}: {path_string(self.path)}"


class Conflicts(Exception):
    """``merge.Conflicts``, sorted by manager then path (upstream's order follows Go's map iteration; sorted is
    one of its orders, and stable)."""

    def __init__(self, conflicts: list[Conflict]) -> None:
        super().__init__(f"{len(conflicts)} conflicts")
        self.conflicts = conflicts


def _update(
    live: Any, new: Any, atom: Atom, managers: Managers, workflow: str, *, force: bool
) -> tuple[Managers, Comparison]:
    comparison = compare(live, new, atom)
    if comparison.is_same():
        return managers, comparison
    changed = comparison.modified.union(comparison.added)
    conflicts: dict[str, Set] = {}
    for manager, owned in managers.items():
        if manager == workflow:
            continue
        clash = owned.fields.intersection(changed)
        if not clash.empty():
            conflicts[manager] = clash
    if conflicts and not force:
        raise Conflicts([Conflict(m, p) for m in sorted(conflicts) for p in conflicts[m].paths()])
    out: Managers = {}
    for manager, owned in managers.items():
        fields = owned.fields
        if manager != workflow:
            if manager in conflicts:
                fields = fields.difference(conflicts[manager])
            if not comparison.removed.empty():
                fields = fields.difference(comparison.removed)
        if manager == workflow or not fields.empty():
            out[manager] = (fields is owned.fields and owned) or VersionedSet(fields, owned.api_version, owned.applied)
    return out, comparison


def update(live: Any, new: Any, atom: Atom, api_version: str, managers: Managers, manager: str) -> Managers:
    """``Updater.Update``: the managers after ``manager`` wrote ``new`` over ``live`` (never conflicts)."""
    managers, comparison = _update(live, new, atom, managers, manager, force=True)
    if comparison.is_same():
        return managers
    previous = managers.get(manager)
    fields = previous.fields if previous is not None else Set()
    fields = fields.difference(comparison.removed).union(comparison.modified).union(comparison.added)
    out = dict(managers)
    if fields.empty():
        out.pop(manager, None)
    else:
        out[manager] = VersionedSet(fields, api_version, False)
    return out


def apply(
    live: Any, config: Any, atom: Atom, api_version: str, managers: Managers, manager: str, *, force: bool
) -> tuple[Any, Managers]:
    """``Updater.Apply``: (the new object, or None when it equals ``live``; the managers), or :class:`Conflicts`."""
    merged = merge(live, config, atom)
    last = managers.get(manager)
    managers = dict(managers)
    applied = to_field_set(config, atom)
    managers[manager] = VersionedSet(applied, api_version, True)
    if last is not None and not last.fields.difference(applied).empty():  # something is no longer applied
        merged = _prune(merged, managers, last.fields, atom)
    managers, _ = _update(live, merged, atom, managers, manager, force=force)
    managers = {m: s for m, s in managers.items() if not s.fields.empty()}
    return (None if merged == live else merged), managers


def _prune(merged: Any, managers: Managers, last: Set, atom: Atom) -> Any:
    """Remove what the applier applied last time and applies no longer, unless another manager owns it
    (upstream ``prune``, ``addBackOwnedItems``, ``addBackDanglingItems``)."""
    last_e = ensure_named_fields_are_members(last, atom)
    pruned = remove_from_object(merged, last_e, atom)
    managed = Set()
    for owned in managers.values():
        managed = managed.union(owned.fields)
    merged_set = ensure_named_fields_are_members(to_field_set(merged, atom), atom)
    pruned_set = ensure_named_fields_are_members(to_field_set(pruned, atom), atom)
    keep = pruned_set.union(ensure_named_fields_are_members(managed, atom))
    pruned = remove_from_object(merged, merged_set.difference(keep), atom)
    pruned_set = ensure_named_fields_are_members(to_field_set(pruned, atom), atom)
    return remove_from_object(merged, merged_set.difference(pruned_set).intersection(last_e), atom)
