"""The API server's create path with the shape memos (kubeplane.api.shapes) against the direct path.

Pins: the managed fields of a create (apimachinery's managedfields Update on create: every field the object
sets, owned by the creating manager, as ``typed.added_fields_v1`` computes it) and the pod's ``status.qosClass``
(upstream's ``ComputePodQOS``, set by podStrategy.PrepareForCreate) are the same with the memo as without, for
pods, other kinds with a spec and kinds without one; a whole create through the registry stores and returns
byte-identical objects with memos on and off (same seed, same clock); and a consumer that mutates what the
registry returned (the local transport hands a create's answer on, shared) cannot change the memo or the store.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.api import pods as podutil
from kubeplane.api.resources import default_table
from kubeplane.api.shapes import ShapeMemo
from kubeplane.api.smd import schema, typed
from kubeplane.apiserver import fieldmanager, strategies
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore
from tests.api.test_shapes import _pods
from tests.api.validation.test_pods import CREATE_CASES, pod

Obj = dict[str, Any]
TABLE = default_table()
PODS = TABLE.get("", "v1", "pods")
DEPLOYMENTS = TABLE.get("apps", "v1", "deployments")
EVENTS = TABLE.get("", "v1", "events")
assert PODS is not None
assert DEPLOYMENTS is not None
assert EVENTS is not None


@pytest.fixture(autouse=True)
def _memos_on() -> Iterator[None]:
    ShapeMemo.enabled = True
    yield
    ShapeMemo.enabled = True


def _fields_equal(info: Any, obj: Obj) -> None:
    direct = typed.added_fields_v1(copy.deepcopy(obj), fieldmanager._atom(info))
    for _ in range(2):  # cold, warm
        assert orjson.dumps(fieldmanager.created_fields_v1(info, copy.deepcopy(obj))) == orjson.dumps(direct)


@pytest.mark.parametrize("case", CREATE_CASES, ids=[c[0] for c in CREATE_CASES])
def test_created_fields_of_every_pod_case(case: Any) -> None:
    p = pod()
    case[1](p)
    _fields_equal(PODS, p)
    _qos_equal(p)


def _qos_equal(p: Obj) -> None:
    try:
        expected = str(podutil.pod_qos_class(copy.deepcopy(p)))
    except Exception as exc:  # a malformed quantity fails the same way with or without the memo
        with pytest.raises(type(exc)):
            strategies.qos_class(copy.deepcopy(p))
        return
    for _ in range(2):  # cold, warm
        assert strategies.qos_class(copy.deepcopy(p)) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pods())
def test_created_fields_and_qos_of_random_pods(p: Obj) -> None:
    _fields_equal(PODS, p)
    _qos_equal(p)


def test_created_fields_of_other_kinds() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "n", "labels": {"app": "a"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    _fields_equal(DEPLOYMENTS, deployment)
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "n"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "n"},
        "reason": "Scheduled",
        "count": 1,
    }
    _fields_equal(EVENTS, event)
    _fields_equal(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})


BODY: Obj = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "pod-", "labels": {"app": "a"}},
    "spec": {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {"limits": {"cpu": "100m", "memory": "500Mi"}},
            }
        ]
    },
}


async def _stored_after_creates(memo: bool, mutate: bool) -> list[bytes]:
    """Four creates of BODY on a fresh registry (seeded, fixed clock): what the store holds, in order."""
    ShapeMemo.enabled = memo
    registry = Registry(store=MemoryStore(), rng=__import__("random").Random(7), now=lambda: 1_700_000_000.0)
    await registry.start()
    try:
        await registry.create(TABLE.get("", "v1", "namespaces"), None, {"metadata": {"name": "ns"}})  # type: ignore[arg-type]
        names = []
        for _ in range(4):
            created = await registry.create(PODS, "ns", copy.deepcopy(BODY), manager="bench")  # type: ignore[arg-type]
            names.append(created["metadata"]["name"])
            if mutate:  # a consumer editing its (shared) answer: the spec, its defaults, its managed fields
                created["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "9"
                created["spec"]["restartPolicy"] = "Never"
                created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].clear()
                created["status"]["qosClass"] = "BestEffort"
        out = []
        for name in names:
            kv = await registry.store.get(PODS.key(name, "ns"))  # type: ignore[union-attr]
            assert kv is not None
            out.append(kv.value)
        return out
    finally:
        await registry.stop()
        await registry.store.close()
        ShapeMemo.enabled = True


async def test_creates_store_the_same_bytes_with_and_without_memos() -> None:
    direct = await _stored_after_creates(memo=False, mutate=False)
    assert await _stored_after_creates(memo=True, mutate=False) == direct
    stored = orjson.loads(direct[0])
    assert stored["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m", "memory": "500Mi"}
    assert stored["status"]["qosClass"] == "Guaranteed"
    assert "f:spec" in stored["metadata"]["managedFields"][0]["fieldsV1"]


async def test_mutating_consumers_cannot_corrupt_the_memo_or_the_store() -> None:
    """The registry's answer to a create is the caller's to keep (the local transport passes it on): editing it
    after the write changes neither what was stored nor what the next create of the same spec stores."""
    direct = await _stored_after_creates(memo=False, mutate=False)
    for memo in (True, False):
        assert await _stored_after_creates(memo=memo, mutate=True) == direct


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
_MAPS = st.recursive(
    st.dictionaries(st.sampled_from(("a", "b", "c")), _SCALARS, max_size=3),
    lambda inner: st.dictionaries(st.sampled_from(("a", "b", "c")), st.one_of(_SCALARS, inner), max_size=3),
    max_leaves=8,
)
_EVENT_KEYS = ("metadata", "involvedObject", "source", "series", "related", "reason", "count", "x-unknown")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(_EVENT_KEYS), st.one_of(_SCALARS, _MAPS), max_size=6), st.data())
def test_created_fields_of_maps_depend_on_keys_alone(event: Obj, data: st.DataObject) -> None:
    """Objects of maps and scalars (an Event's shape, unique values per event) share one memo entry per shape of
    keys: a second object of the same keys and other scalar values gets its own direct answer."""
    _fields_equal(EVENTS, event)
    other = _revalue(event, data)
    _fields_equal(EVENTS, other)


def _revalue(obj: Obj, data: st.DataObject) -> Obj:
    return {k: _revalue(v, data) if isinstance(v, dict) else data.draw(_SCALARS) for k, v in obj.items()}


def test_created_fields_memo_is_per_schema_type() -> None:
    """A hit is used only with the schema type it was computed with (a custom resource's changes with its
    definition): the same kind and keys under another type get that type's fields."""
    events = EVENTS
    assert events is not None
    obj = {"metadata": {"name": "e"}, "involvedObject": {"kind": "Pod"}}
    events_type = fieldmanager._atom(events)
    assert fieldmanager._maps_fields_v1(events, obj, events_type) == typed.added_fields_v1(obj, events_type)
    deduced = schema.DEDUCED
    assert fieldmanager._maps_fields_v1(events, obj, deduced) == typed.added_fields_v1(obj, deduced)
    assert typed.added_fields_v1(obj, deduced) != typed.added_fields_v1(obj, events_type)  # involvedObject atomic
