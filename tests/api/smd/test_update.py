"""Ownership, conflicts, force and pruning, pinned to structured-merge-diff merge/update.go (Updater.Update,
Updater.Apply, prune) and merge/conflict.go."""

from __future__ import annotations

import pytest

from kubeplane.api.smd import schema, update
from kubeplane.api.smd.fieldpath import path_string

CM = schema.type_of("", "v1", "ConfigMap")


def _fields(managers: update.Managers, name: str) -> dict[str, object]:
    return managers[name].fields.to_fields_v1()


def test_update_takes_changed_fields_from_others() -> None:
    live = {"data": {"a": "1", "b": "1"}}
    _, managers = update.apply({}, live, CM, "v1", {}, "applier", force=False)
    new = {"data": {"a": "2", "b": "1"}}
    managers = update.update(live, new, CM, "v1", managers, "editor")
    assert _fields(managers, "editor") == {"f:data": {"f:a": {}}}
    assert _fields(managers, "applier") == {"f:data": {"f:b": {}}}
    assert managers["applier"].applied
    assert not managers["editor"].applied


def test_apply_conflict_then_force() -> None:
    live = {"data": {"a": "1"}}
    _, managers = update.apply({}, live, CM, "v1", {}, "one", force=False)
    with pytest.raises(update.Conflicts) as caught:
        update.apply(live, {"data": {"a": "2"}}, CM, "v1", managers, "two", force=False)
    (conflict,) = caught.value.conflicts
    assert (conflict.manager, path_string(conflict.path)) == ("one", ".data.a")
    new, after = update.apply(live, {"data": {"a": "2"}}, CM, "v1", managers, "two", force=True)
    assert new == {"data": {"a": "2"}}
    assert "one" not in after  # its only field went to the forcing applier; empty sets are dropped
    # applying the same value another manager owns is shared ownership, not a conflict
    _, shared = update.apply(live, {"data": {"a": "1"}}, CM, "v1", managers, "two", force=False)
    assert _fields(shared, "one") == _fields(shared, "two") == {"f:data": {"f:a": {}}}


def test_apply_prunes_what_the_applier_stopped_applying_unless_owned() -> None:
    live = {"data": {"a": "1", "b": "2"}}
    _, managers = update.apply({}, live, CM, "v1", {}, "tool", force=False)
    new, _ = update.apply(live, {"data": {"a": "1"}}, CM, "v1", managers, "tool", force=False)
    assert new == {"data": {"a": "1"}}
    shared = update.update(live, {"data": {"a": "1", "b": "3"}}, CM, "v1", managers, "other")
    kept, _ = update.apply({"data": {"a": "1", "b": "3"}}, {"data": {"a": "1"}}, CM, "v1", shared, "tool", force=False)
    assert kept is None  # b is now other's: it stays, so nothing changes (Apply returns nil on a no-op)
