"""The field manager without a server, pinned to apimachinery util/managedfields/internal: capmanagers.go
(10 Update managers, the oldest folded into ancient-changes), fieldmanager.go decodeLiveOrNew (sent entries
replace the live ones when they decode, else ignored; a subresource keeps the live ones), skipnonapplied.go
(an untracked object stays untracked on update), managedfields.go DecodeManagedFields' messages,
handlers/fieldmanager's prefixFromUserAgent."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.resources import ResourceInfo, default_table
from kubeplane.apiserver import fieldmanager

CONFIGMAPS = default_table().get("", "v1", "configmaps")
DEPLOYMENTS = default_table().get("apps", "v1", "deployments")


def _cm(data: dict[str, str], managed: Any = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "c", "namespace": "d", "uid": "u"}
    if managed is not None:
        meta["managedFields"] = managed
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def test_manager_name() -> None:
    assert fieldmanager.manager_name(None, "kubectl/v1.37.0 (linux/amd64) kubernetes/abc") == "kubectl"
    assert fieldmanager.manager_name("mine", "kubectl/v1.37.0") == "mine"
    assert fieldmanager.manager_name("", "") == ""


def test_create_then_update_then_cap() -> None:
    assert CONFIGMAPS is not None
    obj = _cm({"k0": "v"})
    fieldmanager.track_update(CONFIGMAPS, None, obj, "", now=0)
    (entry,) = obj["metadata"]["managedFields"]
    assert entry == {
        "manager": "unknown",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "1970-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {".": {}, "f:k0": {}}},
    }
    for i in range(1, 12):
        new = _cm({**obj["data"], f"k{i}": "v"})
        fieldmanager.track_update(CONFIGMAPS, obj, new, f"m{i}", now=i * 10)
        obj = new
    names = [e["manager"] for e in obj["metadata"]["managedFields"]]
    assert len(names) == 10
    assert names[0] == "ancient-changes"
    assert not {"unknown", "m1", "m2"} & set(names)  # the bucket counts as one of the 10
    ancient = obj["metadata"]["managedFields"][0]
    assert ancient["fieldsV1"] == {"f:data": {".": {}, "f:k0": {}, "f:k1": {}, "f:k2": {}}}
    assert ancient["time"] == "1970-01-01T00:00:20Z"  # the newest folded entry's


def test_sent_entries_reset_invalid_and_untracked() -> None:
    assert CONFIGMAPS is not None
    live = _cm({"a": "1"})
    fieldmanager.track_update(CONFIGMAPS, None, live, "x", now=0)
    # invalid entries sent: ignored, the live ones kept (and updated)
    new = _cm({"a": "2"}, managed=[{"manager": "x", "operation": "Bogus"}])
    fieldmanager.track_update(CONFIGMAPS, live, new, "y", now=1)
    entries = {e["manager"]: e["fieldsV1"] for e in new["metadata"]["managedFields"]}
    assert entries == {"x": {"f:data": {}}, "y": {"f:data": {"f:a": {}}}}  # x keeps the map it created
    # [] resets; the object is then untracked, and an update keeps it so
    reset = _cm({"a": "3"}, managed=[])
    fieldmanager.track_update(CONFIGMAPS, new, reset, "z", now=2)
    assert "managedFields" not in reset["metadata"]
    later = _cm({"a": "4"})
    fieldmanager.track_update(CONFIGMAPS, reset, later, "z", now=3)
    assert "managedFields" not in later["metadata"]


def test_unchanged_update_keeps_entries_as_they_are() -> None:
    assert CONFIGMAPS is not None
    live = _cm({"a": "1"})
    fieldmanager.track_update(CONFIGMAPS, None, live, "x", now=0)
    same = _cm({"a": "1"})
    fieldmanager.track_update(CONFIGMAPS, live, same, "other", now=99)
    assert same["metadata"]["managedFields"] is live["metadata"]["managedFields"]


def test_status_subresource_entry() -> None:
    assert DEPLOYMENTS is not None
    live: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 1},
    }
    fieldmanager.track_update(DEPLOYMENTS, None, live, "kubectl", now=0)
    new = {**copy.deepcopy(live), "status": {"replicas": 1}}
    fieldmanager.track_update(DEPLOYMENTS, live, new, "kcm", subresource="status", now=1)
    entry = new["metadata"]["managedFields"][1]
    assert (entry["manager"], entry["subresource"], entry["fieldsV1"]) == (
        "kcm",
        "status",
        {"f:status": {".": {}, "f:replicas": {}}},
    )
    assert list(entry)[-1] == "subresource"
    assert new["spec"] == {"replicas": 1}  # ManagedFieldsEntry's field order


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"operation": "Patch"}, "operation must be `Apply` or `Update`"),
        ({"operation": "Update"}, "apiVersion must not be empty"),
        ({"operation": "Update", "apiVersion": "v1"}, "missing fieldsType in managed fields entry 0"),
        (
            {"operation": "Update", "apiVersion": "v1", "fieldsType": "V2"},
            "invalid fieldsType 'V2' in managed fields entry 0",
        ),
    ],
)
def test_decode_errors(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fieldmanager.decode([entry])


def test_sent_fields_v1_that_is_not_an_object_is_ignored() -> None:
    """fieldpath.Set.FromJSON reads an object only, so ``fieldsV1: []`` sent by a client (a JSON patch on
    managedFields) fails DecodeManagedFields and decodeLiveOrNew keeps the live entries: nothing unreadable is
    stored (the official client refuses a non-object fieldsV1). Found by the soak fuzz on a Lease."""
    assert CONFIGMAPS is not None
    with pytest.raises(ValueError, match="error decoding versioned set"):
        fieldmanager.decode([{"operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": []}])
    live = _cm({"a": "1"})
    fieldmanager.track_update(CONFIGMAPS, None, live, "x", now=0)
    sent = [{"manager": "x", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": []}]
    new = _cm({"a": "2"}, managed=sent)
    fieldmanager.track_update(CONFIGMAPS, live, new, "y", now=1)
    assert all(isinstance(e["fieldsV1"], dict) for e in new["metadata"]["managedFields"])
    assert [e["manager"] for e in new["metadata"]["managedFields"]] == ["x", "y"]


def test_noop_apply_keeps_the_applier_time() -> None:
    # managedfieldsupdater.go Apply: a merge that changes nothing leaves the entry's time, so nothing is written
    assert CONFIGMAPS is not None
    config = _cm({"a": "1"})
    del config["metadata"]["uid"], config["metadata"]["namespace"]
    live = fieldmanager.apply(CONFIGMAPS, _cm({}), config, "tool", force=False, now=0)
    again = fieldmanager.apply(CONFIGMAPS, live, config, "tool", force=False, now=100)
    assert again == live
    assert again["metadata"]["managedFields"][0]["time"] == "1970-01-01T00:00:00Z"


def test_reset_fields_per_kind() -> None:
    # pkg/registry/*/strategy.go GetResetFields: pods/status resets spec, metadata.deletionTimestamp and
    # metadata.ownerReferences; deployments/status resets spec and metadata.labels; others the common rule
    pods = default_table().get("", "v1", "pods")
    nodes = default_table().get("", "v1", "nodes")
    assert pods is not None
    assert nodes is not None
    assert DEPLOYMENTS is not None
    assert CONFIGMAPS is not None

    def paths(info: ResourceInfo, sub: str) -> list[tuple[tuple[str, str], ...]]:
        return sorted(fieldmanager.reset_fields(info, sub).paths())

    assert paths(pods, "status") == [
        (("f", "metadata"), ("f", "deletionTimestamp")),
        (("f", "metadata"), ("f", "ownerReferences")),
        (("f", "spec"),),
    ]
    assert paths(pods, "") == [(("f", "status"),)]
    assert paths(DEPLOYMENTS, "status") == [(("f", "metadata"), ("f", "labels")), (("f", "spec"),)]
    assert paths(nodes, "status") == [(("f", "spec"),)]
    assert paths(CONFIGMAPS, "") == []


def test_status_apply_does_not_own_reset_labels() -> None:
    live = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "labels": {"a": "1"}},
        "spec": {"replicas": 1},
    }
    config = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default", "labels": {"a": "1"}},
        "status": {"replicas": 1},
    }
    assert DEPLOYMENTS is not None
    out = fieldmanager.apply(DEPLOYMENTS, live, config, "kcm", force=False, subresource="status", now=0)
    (entry,) = [e for e in out["metadata"]["managedFields"] if e["manager"] == "kcm"]
    assert entry["fieldsV1"] == {"f:status": {"f:replicas": {}}}


@pytest.mark.parametrize(
    ("meta_change", "owned_meta"),
    [
        ({"generation": 2}, None),
        ({"generation": 2, "labels": {"a": "b"}}, {"f:labels": {".": {}, "f:a": {}}}),
        ({"labels": {"a": "b"}}, {"f:labels": {".": {}, "f:a": {}}}),
    ],
    ids=["stripmeta-generation-not-owned", "stripmeta-labels-owned-generation-not", "labels-owned"],
)
def test_update_never_owns_server_set_metadata(meta_change: dict[str, Any], owned_meta: Any) -> None:
    """stripmeta.go: an Update whose change includes metadata.generation (the server bumps it with the spec)
    does not own it; what else it changed it owns."""
    assert CONFIGMAPS is not None
    live = _cm({"k": "v"}, managed=[])
    fieldmanager.track_update(CONFIGMAPS, None, live, "creator", now=0)
    new = copy.deepcopy(live)
    new["data"]["k"] = "w"
    new["metadata"].update(meta_change)
    fieldmanager.track_update(CONFIGMAPS, live, new, "editor", now=10)
    (edited,) = [e for e in new["metadata"]["managedFields"] if e["manager"] == "editor"]
    expected: dict[str, Any] = {"f:data": {"f:k": {}}}
    if owned_meta is not None:
        expected["f:metadata"] = owned_meta
    assert edited["fieldsV1"] == expected
