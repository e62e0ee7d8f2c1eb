"""StatefulSet helpers and ControllerRevision history without the API, as tables after upstream's
``stateful_set_utils_test.go`` and ``history/controller_history_test.go`` (each test names the upstream test)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.controllers.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    controller_revision_name,
    equal_revision,
    find_equal_revisions,
    fnv32,
    go_json,
    hash_controller_revision,
    new_controller_revision,
    next_revision,
    sort_controller_revisions,
)
from kubeplane.controllers.statefulset_utils import (
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    REVISION_LABEL,
    apply_revision,
    complete_rolling_update,
    get_parent_name_and_ordinal,
    get_patch,
    get_stateful_set_max_unavailable,
    identity_matches,
    is_claim_owner_up_to_date,
    new_revision,
    new_stateful_set_pod,
    new_versioned_stateful_set_pod,
    persistent_volume_claims,
    storage_matches,
    update_claim_owner_refs,
    update_identity,
    update_storage,
)


def _set(replicas: int = 3, *, name: str = "foo", start: int | None = None, **spec: Any) -> dict[str, Any]:
    """Upstream's ``newStatefulSet``: one container, a claim template per volume mount."""
    body: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default", "uid": "set-uid"},
        "spec": {
            "replicas": replicas,
            "serviceName": "governingsvc",
            "selector": {"matchLabels": {"foo": "bar"}},
            "template": {
                "metadata": {"labels": {"foo": "bar"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
            "volumeClaimTemplates": [{"metadata": {"name": "datadir"}}, {"metadata": {"name": "home"}}],
            "updateStrategy": {"type": "RollingUpdate"},
            "revisionHistoryLimit": 2,
            **spec,
        },
    }
    if start is not None:
        body["spec"]["ordinals"] = {"start": start}
    return body


# --- naming and identity -----------------------------------------------------------------------------------


def test_get_parent_name_and_ordinal() -> None:
    """TestGetParentNameAndOrdinal: the set's name and the ordinal parse back; other names give ("", -1)."""
    pod = new_stateful_set_pod(_set(), 1)
    assert get_parent_name_and_ordinal(pod) == ("foo", 1)
    assert get_parent_name_and_ordinal({"metadata": {"name": "1-bar"}}) == ("", -1)
    assert get_parent_name_and_ordinal({"metadata": {"name": "my-set-12"}}) == ("my-set", 12)


def test_identity_matches_and_update_identity() -> None:
    """TestIdentityMatches / TestUpdateIdentity: name, namespace and the pod-name label must agree."""
    sts = _set()
    pod = new_stateful_set_pod(sts, 1)
    assert identity_matches(sts, pod)
    assert pod["metadata"]["labels"][POD_NAME_LABEL] == "foo-1"
    assert pod["metadata"]["labels"][POD_INDEX_LABEL] == "1"
    assert pod["spec"]["hostname"] == "foo-1"
    assert pod["spec"]["subdomain"] == "governingsvc"
    for change in ("namespace", "label"):
        broken = copy.deepcopy(pod)
        if change == "namespace":
            broken["metadata"]["namespace"] = "other"
        else:
            del broken["metadata"]["labels"][POD_NAME_LABEL]
        assert not identity_matches(sts, broken)
        update_identity(sts, broken)
        assert identity_matches(sts, broken)


def test_storage_matches_and_update_storage() -> None:
    """TestStorageMatches / TestUpdateStorage: one volume per template using ``<template>-<set>-<ordinal>``;
    a pod volume named like a template is replaced, others are kept."""
    sts = _set()
    pod = new_stateful_set_pod(sts, 1)
    assert storage_matches(sts, pod)
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"]}
    assert claims == {"datadir": "datadir-foo-1", "home": "home-foo-1"}
    pod["spec"]["volumes"] = [{"name": "datadir", "emptyDir": {}}, {"name": "extra", "emptyDir": {}}]
    assert not storage_matches(sts, pod)
    update_storage(sts, pod)
    assert storage_matches(sts, pod)
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["datadir", "home", "extra"]


def test_get_persistent_volume_claims_merge_selector_labels() -> None:
    """TestGetPersistentVolumeClaims: the template's labels plus the selector's matchLabels."""
    sts = _set()
    sts["spec"]["volumeClaimTemplates"][0]["metadata"]["labels"] = {"tier": "db"}
    claims = persistent_volume_claims(sts, new_stateful_set_pod(sts, 0))
    assert claims["datadir"]["metadata"] == {
        "name": "datadir-foo-0",
        "namespace": "default",
        "labels": {"tier": "db", "foo": "bar"},
    }
    assert claims["home"]["metadata"]["labels"] == {"foo": "bar"}


def test_new_pod_controller_ref() -> None:
    """TestNewPodControllerRef: the pod is controlled by the set."""
    ref = new_stateful_set_pod(_set(), 0)["metadata"]["ownerReferences"][0]
    assert ref == {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "name": "foo",
        "uid": "set-uid",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def test_versioned_pod_follows_the_partition_and_start_ordinal() -> None:
    """newVersionedStatefulSetPod: ordinals below start+partition come from the current revision."""
    current = _set(start=5, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 1}})
    update = copy.deepcopy(current)
    update["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    old = new_versioned_stateful_set_pod(current, update, "cur", "upd", 5)
    new = new_versioned_stateful_set_pod(current, update, "cur", "upd", 6)
    assert (old["metadata"]["labels"][REVISION_LABEL], old["spec"]["containers"][0]["image"]) == ("cur", "nginx")
    assert (new["metadata"]["labels"][REVISION_LABEL], new["spec"]["containers"][0]["image"]) == ("upd", "nginx:2")


@pytest.mark.parametrize(
    ("max_unavailable", "replicas", "want"),
    [(None, 10, 1), (3, 10, 3), ("30%", 10, 3), ("1%", 10, 1), ("100%", 5, 5)],
)
def test_get_stateful_set_max_unavailable(max_unavailable: Any, replicas: int, want: int) -> None:
    """TestGetStatefulSetMaxUnavailable: default 1, percentages round down but never below 1."""
    assert get_stateful_set_max_unavailable(max_unavailable, replicas) == want


def test_complete_rolling_update() -> None:
    """completeRollingUpdate: only when replicas, ready and updated all equal spec.replicas."""
    sts = _set(3)
    status: dict[str, Any] = {"replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "currentReplicas": 1}
    status |= {"currentRevision": "a", "updateRevision": "b"}
    complete_rolling_update(sts, status)
    assert (status["currentRevision"], status["currentReplicas"]) == ("b", 3)
    status = {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "currentRevision": "a", "updateRevision": "b"}
    complete_rolling_update(sts, status)
    assert status["currentRevision"] == "a"


# --- retention policy --------------------------------------------------------------------------------------

_POD = {"metadata": {"name": "foo-1", "namespace": "default", "uid": "pod-uid"}}
_SET_REF = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "foo", "uid": "set-uid", "controller": True}
_POD_REF = {"apiVersion": "v1", "kind": "Pod", "name": "foo-1", "uid": "pod-uid", "controller": True}


@pytest.mark.parametrize(
    ("when_scaled", "when_deleted", "replicas", "refs", "want"),
    [
        ("Retain", "Retain", 3, [], True),
        ("Retain", "Retain", 3, [_SET_REF], False),
        ("Retain", "Delete", 3, [_SET_REF], True),
        ("Retain", "Delete", 3, [], False),
        ("Delete", "Retain", 3, [], True),  # in range: no pod ref yet
        ("Delete", "Retain", 1, [_POD_REF], True),  # scaled away: the pod owns it
        ("Delete", "Retain", 1, [], False),
        ("Delete", "Delete", 3, [_SET_REF], True),
        ("Delete", "Delete", 1, [_POD_REF], True),
        ("Delete", "Delete", 1, [_SET_REF], False),
        # a stale set reference (another UID): left alone
        ("Delete", "Delete", 3, [{**_SET_REF, "uid": "old"}], True),
    ],
)
def test_claim_owner_up_to_date(
    when_scaled: str, when_deleted: str, replicas: int, refs: list[dict[str, Any]], want: bool
) -> None:
    """TestIsClaimOwnerUpToDate: which owner refs each retention policy asks for."""
    sts = _set(replicas, persistentVolumeClaimRetentionPolicy={"whenScaled": when_scaled, "whenDeleted": when_deleted})
    claim: dict[str, Any] = {"metadata": {"name": "datadir-foo-1", "ownerReferences": refs}}
    assert is_claim_owner_up_to_date(claim, sts, _POD) is want
    if not want and refs != [{**_SET_REF, "uid": "old"}]:
        update_claim_owner_refs(claim, sts, _POD)
        assert is_claim_owner_up_to_date(claim, sts, _POD)


# --- revisions ---------------------------------------------------------------------------------------------


def test_create_apply_revision() -> None:
    """TestCreateApplyRevision: a revision of the set restores its template onto a changed set; its data is
    upstream's getPatch (the template as Go marshals it — with ``resources: {}``, without ``creationTimestamp`` — with
    ``$patch: replace``, keys sorted) and it carries the set's annotations."""
    sts = _set()
    sts["metadata"]["annotations"] = {"kubernetes.io/change-cause": "first"}
    revision = new_revision(sts, 1, 0)
    go_template = {
        "metadata": {"labels": {"foo": "bar"}},
        "spec": {"containers": [{"image": "nginx", "name": "nginx", "resources": {}}]},
    }
    assert revision["data"] == {"spec": {"template": {"$patch": "replace", **go_template}}}
    assert go_json(revision["data"]) == (
        b'{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"foo":"bar"}},'
        b'"spec":{"containers":[{"image":"nginx","name":"nginx","resources":{}}]}}}}'
    )
    assert list(revision["data"]["spec"]["template"]) == ["$patch", "metadata", "spec"]
    assert revision["metadata"]["annotations"] == {"kubernetes.io/change-cause": "first"}
    assert revision["metadata"]["labels"]["foo"] == "bar"
    assert revision["metadata"]["name"] == f"foo-{revision['metadata']['labels'][CONTROLLER_REVISION_HASH_LABEL]}"
    changed = copy.deepcopy(sts)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    changed["spec"]["template"]["metadata"]["labels"]["extra"] = "x"
    restored = apply_revision(changed, revision)
    assert restored["spec"]["template"] == go_template
    assert get_patch(restored) == get_patch(sts)


def test_hash_is_fnv1_32_over_go_json_and_the_probe() -> None:
    """HashControllerRevision: ``fnv.New32`` (FNV-1) over the data's JSON then the probe's digits."""
    assert fnv32(b"") == 0x811C9DC5
    assert fnv32(b"a") == 0x050C5D7E  # FNV-1 (FNV-1a of "a" is 0xE40C292C)
    revision = {"data": {"b": "<&>", "a": 1}}
    assert go_json(revision["data"]) == b'{"a":1,"b":"\\u003c\\u0026\\u003e"}'
    assert hash_controller_revision(revision, None) != hash_controller_revision(revision, 0)
    assert hash_controller_revision(revision, 1) != hash_controller_revision(revision, 0)
    assert controller_revision_name("x" * 300, "h") == "x" * 223 + "-h"


def _revision(data: Any, number: int, name: str = "", created: str = "") -> dict[str, Any]:
    parent = {"metadata": {"name": "foo", "uid": "set-uid"}}
    cr = new_controller_revision(
        parent,
        api_version="apps/v1",
        kind="StatefulSet",
        template_labels={},
        data=data,
        revision=number,
        collision_count=None,
    )
    if name:
        cr["metadata"]["name"] = name
    if created:
        cr["metadata"]["creationTimestamp"] = created
    return cr


def test_equal_and_find_equal_revisions() -> None:
    """TestEqualRevision / TestFindEqualRevisions: equal data is equal whatever the names; order is kept."""
    a1, a2, b = _revision({"x": 1}, 1, "a1"), _revision({"x": 1}, 2, "a2"), _revision({"x": 2}, 3, "b")
    assert equal_revision(None, None)
    assert not equal_revision(a1, None)
    assert equal_revision(a1, a2)
    assert not equal_revision(a1, b)
    assert [r["metadata"]["name"] for r in find_equal_revisions([b, a2, a1], a1)] == ["a2", "a1"]


def test_sort_controller_revisions_and_next_revision() -> None:
    """TestSortControllerRevisions: by revision, then creation time, then name; nextRevision is last + 1."""
    revs = [
        _revision({}, 3, "c"),
        _revision({}, 1, "b", "2026-01-02T00:00:00Z"),
        _revision({}, 1, "a", "2026-01-02T00:00:00Z"),
        _revision({}, 1, "z", "2026-01-01T00:00:00Z"),
    ]
    ordered = sort_controller_revisions(revs)
    assert [r["metadata"]["name"] for r in ordered] == ["z", "a", "b", "c"]
    assert next_revision(ordered) == 4
    assert next_revision([]) == 1
