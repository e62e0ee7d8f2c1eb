"""The helpers the workload controllers share (kubeplane.controllers.controller_utils): IntOrString scaling,
metav1.Condition upkeep, the pod-template hash, pod predicates and claiming ReplicaSets. The pod flavour of
claiming, expectations and pod ordering are exercised by test_replicaset.py."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from kubeplane.api import labels as apilabels
from kubeplane.api import meta as apimeta
from kubeplane.api.views import is_being_deleted
from kubeplane.client.errors import InvalidError, NotFoundError
from kubeplane.client.interface import Obj
from kubeplane.controllers.controller_ref_manager import ReplicaSetControllerRefManager
from kubeplane.controllers.controller_utils import (
    AggregateError,
    IntOrPercentError,
    compute_hash,
    fnv32a,
    safe_encode_string,
    scaled_value_from_int_or_percent,
    set_status_condition,
)
from kubeplane.controllers.podutil import is_pod_available, is_pod_terminating

NOW = 1_800_000_000.0

# --- IntOrString -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "total", "round_up", "want"),
    [
        (3, 10, True, 3),
        ("50%", 5, True, 3),
        ("50%", 5, False, 2),
        ("34%", 3, True, 2),
        ("0%", 7, True, 0),
        ("100%", 7, False, 7),
    ],
)
def test_scaled_value_from_int_or_percent(value: int | str, total: int, round_up: bool, want: int) -> None:
    assert scaled_value_from_int_or_percent(value, total, round_up) == want


@pytest.mark.parametrize("value", ["50", "x%", None])
def test_scaled_value_rejects_non_percentages(value: str | None) -> None:
    with pytest.raises(IntOrPercentError):
        scaled_value_from_int_or_percent(value, 10, True)


# --- conditions --------------------------------------------------------------------------------------------


def test_set_status_condition_keeps_transition_time_unless_status_changes() -> None:
    conditions: list[Obj] = []
    set_status_condition(conditions, {"type": "A", "status": "True", "reason": "R1"}, NOW)
    first = apimeta.format_time(NOW)
    assert conditions == [{"type": "A", "status": "True", "reason": "R1", "lastTransitionTime": first}]
    set_status_condition(conditions, {"type": "A", "status": "True", "reason": "R2", "message": "m"}, NOW + 10)
    assert conditions[0]["lastTransitionTime"] == first
    assert (conditions[0]["reason"], conditions[0]["message"]) == ("R2", "m")
    set_status_condition(conditions, {"type": "A", "status": "False", "reason": "R3"}, NOW + 20)
    assert conditions[0]["lastTransitionTime"] == apimeta.format_time(NOW + 20)
    assert len(conditions) == 1


# --- the pod-template hash ---------------------------------------------------------------------------------


def test_hash_and_safe_encoding() -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    h0 = compute_hash(template, None)
    assert h0 == compute_hash(copy.deepcopy(template), None)
    assert h0 != compute_hash(template, 1)
    assert compute_hash(template, 1) != compute_hash(template, 2)
    assert set(h0) <= set("bcdfghjklmnpqrstvwxz2456789")
    # upstream rand.SafeEncodeString maps each byte mod 27 into the alphabet: digits become 4-9 and b, c, d, f
    assert safe_encode_string("0123456789") == "456789bcdf"
    # FNV-32a reference values, and a seed continues a hash
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C
    assert fnv32a(b"bc", fnv32a(b"a")) == fnv32a(b"abc")


def test_hash_ignores_key_order() -> None:
    a = {"metadata": {"labels": {"x": "1", "y": "2"}}, "spec": {}}
    b = {"spec": {}, "metadata": {"labels": {"y": "2", "x": "1"}}}
    assert compute_hash(a, None) == compute_hash(b, None)


# --- pod predicates ----------------------------------------------------------------------------------------


def _ready_pod(since: float | None, *, phase: str = "Running", deleting: bool = False) -> Obj:
    condition: Obj = {"type": "Ready", "status": "True"}
    if since is not None:
        condition["lastTransitionTime"] = apimeta.format_time(since)
    meta: Obj = {"name": "p", "namespace": "default"}
    if deleting:
        meta["deletionTimestamp"] = apimeta.format_time(NOW)
    return {"metadata": meta, "status": {"phase": phase, "conditions": [condition]}}


@pytest.mark.parametrize(
    ("since", "min_ready", "want"),
    [
        (NOW - 10, 0, True),
        (None, 0, True),
        (None, 5, False),  # no transition time: never available with minReadySeconds
        (NOW - 10, 5, True),
        (NOW - 5, 5, False),  # strictly after, as upstream's Before
        (NOW - 4, 5, False),
    ],
)
def test_is_pod_available(since: float | None, min_ready: int, want: bool) -> None:
    assert is_pod_available(_ready_pod(since), min_ready, NOW) is want


def test_being_deleted_is_not_terminating_once_terminal() -> None:
    pod = _ready_pod(NOW, phase="Succeeded", deleting=True)
    assert is_being_deleted(pod)
    assert not is_pod_terminating(pod)
    assert is_pod_terminating(_ready_pod(NOW, deleting=True))


# --- claiming ReplicaSets ----------------------------------------------------------------------------------


class _FakeClient:
    """Just enough of a Client for ReplicaSetControllerRefManager: records patches, fails on request."""

    def __init__(self, failures: Mapping[str, Exception] | None = None) -> None:
        self.patches: list[tuple[str, dict[str, Any]]] = []
        self.failures = dict(failures or {})

    def resource(self, name: str) -> str:
        return name

    async def patch(self, resource: str, name: str, patch: dict[str, Any], **_: Any) -> Obj:
        self.patches.append((name, patch))
        if name in self.failures:
            raise self.failures[name]
        return {"metadata": {"name": name, "resourceVersion": "fresh"}}


DEPLOYMENT: Obj = {"metadata": {"name": "web", "namespace": "default", "uid": "d-uid"}}


def _rs(name: str, *, labels: Mapping[str, str], owner: str | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "uid": f"{name}-uid", "labels": dict(labels)}
    if owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "uid": owner, "controller": True}]
    return {"metadata": meta}


async def _allow() -> None:
    return None


def _manager(client: _FakeClient, controller: Obj = DEPLOYMENT) -> ReplicaSetControllerRefManager:
    return ReplicaSetControllerRefManager(
        client,  # type: ignore[arg-type]
        controller,
        apilabels.label_selector_as_selector({"matchLabels": {"app": "web"}}),
        api_version="apps/v1",
        kind="Deployment",
        can_adopt=_allow,
    )


async def test_claim_replica_sets_adopts_keeps_releases_and_ignores() -> None:
    client = _FakeClient()
    owned = _rs("owned", labels={"app": "web"}, owner="d-uid")
    stray = _rs("stray", labels={"app": "other"}, owner="d-uid")
    orphan = _rs("orphan", labels={"app": "web"})
    foreign = _rs("foreign", labels={"app": "web"}, owner="other-uid")
    claimed = await _manager(client).claim_replica_sets([owned, stray, orphan, foreign])
    # the owned one as cached, the adopted one as the patch returned it
    assert claimed == [owned, {"metadata": {"name": "orphan", "resourceVersion": "fresh"}}]
    patched = dict(client.patches)
    assert patched["stray"]["metadata"]["ownerReferences"] == [{"$patch": "delete", "uid": "d-uid"}]
    assert patched["orphan"]["metadata"]["uid"] == "orphan-uid"
    assert patched["orphan"]["metadata"]["ownerReferences"][0]["uid"] == "d-uid"
    assert "foreign" not in patched


async def test_claim_replica_sets_skips_vanished_and_aggregates_failures() -> None:
    client = _FakeClient(
        {
            "gone": NotFoundError({"message": "gone"}),
            "replaced": InvalidError({"message": "uid precondition"}),
            "released": InvalidError({"message": "uid precondition"}),
        }
    )
    rss = [
        _rs("gone", labels={"app": "web"}),
        _rs("released", labels={"app": "other"}, owner="d-uid"),
        _rs("replaced", labels={"app": "web"}),
    ]
    with pytest.raises(AggregateError) as err:
        await _manager(client).claim_replica_sets(rss)
    # NotFound (adopt) and Invalid (release) are not errors; Invalid on adoption is (upstream AdoptReplicaSet)
    assert [type(e) for e in err.value.errors] == [InvalidError]


async def test_claim_replica_sets_leaves_everything_while_the_deployment_is_deleted() -> None:
    client = _FakeClient()
    deleting = {"metadata": {**DEPLOYMENT["metadata"], "deletionTimestamp": apimeta.format_time(NOW)}}
    owned = _rs("owned", labels={"app": "web"}, owner="d-uid")
    claimed = await _manager(client, deleting).claim_replica_sets(
        [owned, _rs("stray", labels={"app": "other"}, owner="d-uid"), _rs("orphan", labels={"app": "web"})]
    )
    assert claimed == [owned]
    assert client.patches == []


@pytest.mark.parametrize(
    ("errors", "text"),
    [
        ([ValueError("a")], "a"),
        ([ValueError("a"), ValueError("b")], "[a, b]"),
        ([ValueError("a"), ValueError("a"), ValueError("b")], "[a, b]"),
    ],
    ids=["TestSingularAggregate", "TestPluralAggregate", "TestDedupePluralAggregate"],
)
def test_aggregate_error_reads_as_utilerrors_aggregate(errors: list[Exception], text: str) -> None:
    """apimachinery util/errors ``aggregate.Error()``; every error is kept for the caller."""
    err = AggregateError(errors)
    assert (str(err), err.errors) == (text, errors)
