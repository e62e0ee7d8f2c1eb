"""Per-shape plans (framework/shape_plan.py) against the unplanned framework: pods of repeated and of nearly equal
shapes get the same PreFilter and PreScore outcomes (result, status, rejecting plugins, SKIP sets, the state's
entries) and the same decisions, cycle after cycle, their pods assumed in between (upstream's scheduleOne runs
every plugin for every pod: a plan must be indistinguishable from that)."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.cache import Cache
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import default_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.shape_plan import LIVE, Outcome, ShapePlans, record, shape_key
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.registry import new_in_tree_registry
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import FitError, SchedulingCycle

ZONES = ["a", "b", "c"]

# Shape fragments that the planned plugins read (requests, ports, selectors, affinity, tolerations, nodeName,
# volumes) and ones they must not confuse (two namespaces, labels that differ between pods of one shape).
REQUESTS = [{"cpu": "100m", "memory": "64Mi"}, {"cpu": "700m", "memory": "1Gi"}, {}]
EXTRAS: list[dict[str, Any]] = [
    {},
    {"nodeSelector": {"zone": "b"}},
    {"nodeSelector": {"zone": "z"}},  # matches no node: NodeAffinity rejects every one
    {"ports": True},
    {"nodeName": "n1"},
    {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n0", "n2"]}]}
                    ]
                }
            }
        }
    },
    {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["c"]}]},
                    }
                ]
            }
        }
    },
    {"tolerations": [{"key": "soft", "operator": "Exists", "effect": "PreferNoSchedule"}]},
    {"volumes": [{"name": "v", "hostPath": {"path": "/x"}}]},
    {"volumes": [{"name": "v", "gcePersistentDisk": {"pdName": "d"}}]},
]


def _node(i: int, draw: Any) -> dict[str, Any]:
    capacity = {"cpu": draw(st.sampled_from(["1", "2"])), "memory": "2Gi", "pods": str(draw(st.integers(2, 5)))}
    spec: dict[str, Any] = {}
    effect = draw(st.sampled_from([None, None, "PreferNoSchedule", "NoSchedule"]))
    if effect is not None:
        spec["taints"] = [{"key": "soft", "value": "x", "effect": effect}]
    name = f"n{i}"
    labels = {"zone": draw(st.sampled_from(ZONES)), "kubernetes.io/hostname": name}
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _pod(k: int, requests: int, extra: int, namespace: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "img:1"}
    if REQUESTS[requests]:
        container["resources"] = {"requests": REQUESTS[requests]}
    spec: dict[str, Any] = {"containers": [container]}
    fragment = dict(EXTRAS[extra])
    if fragment.pop("ports", False):
        container["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    spec.update(fragment)
    meta = {"name": f"p{k}", "namespace": namespace, "uid": f"u{k}", "labels": {"pod": str(k)}}
    return {"metadata": meta, "spec": spec}


@st.composite
def runs(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [_node(i, draw) for i in range(draw(st.integers(1, 6)))]
    shape = st.tuples(st.integers(0, len(REQUESTS) - 1), st.integers(0, len(EXTRAS) - 1), st.sampled_from("xy"))
    order = draw(st.lists(shape, min_size=1, max_size=8))
    pods = [_pod(k, *s) for k, s in enumerate(s for s in order for _ in range(draw(st.integers(1, 3))))]
    return nodes, pods


_OBJECT_EQ: Any = object.__eq__


def _norm(value: Any, depth: int = 0) -> Any:
    """A comparable form of a state value: records by type and fields, objects without ``__eq__`` (compiled
    tolerations) by their attributes, so a replayed value equals a rebuilt one exactly when their contents do."""
    if value is None or isinstance(value, (str, bytes, int, float, frozenset, set)):
        return value
    if depth > 6:
        return repr(type(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # ``vector``: NodeAffinity's column form, compiled on first use from the record's other fields (a replayed
        # record may carry the one an earlier pod's cycle compiled).
        fields = [f for f in dataclasses.fields(value) if f.name != "vector"]
        return (type(value).__name__, tuple(_norm(getattr(value, f.name), depth + 1) for f in fields))
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return tuple(sorted(((repr(k), _norm(v, depth + 1)) for k, v in value.items()), key=repr))
    if getattr(type(value), "__eq__", None) is _OBJECT_EQ:
        if depth >= 2:  # deep inside (a lister's handle, the snapshot): cluster objects, not the pod's state
            return type(value).__name__
        names = [n for cls in type(value).__mro__ for n in getattr(cls, "__slots__", ())] or list(
            getattr(value, "__dict__", ())
        )
        return (type(value).__name__, tuple((n, _norm(getattr(value, n, None), depth + 1)) for n in names))
    return value


def _entries(state: CycleState) -> dict[str, Any]:
    return {key: _norm(value) for key, value in state.entries().items()}


def _outcomes(fwk: Framework, pod: PodInfo, nodes: Any) -> tuple[Any, ...]:
    state = CycleState()
    pre_filter = fwk.run_pre_filter_plugins(state, pod, nodes)
    after_filter = (_entries(state), set(state.skip_filter_plugins))
    pre_score = fwk.run_pre_score_plugins(state, pod, nodes) if pre_filter[1] is None else None
    return pre_filter, after_filter, pre_score, _entries(state), set(state.skip_score_plugins)


def _run(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], *, planned: bool) -> list[Any]:
    cache = Cache(FakeClock())
    for node in nodes:
        cache.add_node(node)
    snapshot = Snapshot()
    fwk = build_profiles(default_config(), Handle(snapshot_lister=snapshot), new_in_tree_registry())[
        "default-scheduler"
    ]
    assert fwk.shape_plans is not None  # the default profile has plugins that opt in
    if not planned:
        fwk.shape_plans = None
    cycle = SchedulingCycle(rng=random.Random(3))
    out: list[Any] = []
    for obj in pods:
        cache.update_snapshot(snapshot)
        pod = PodInfo(obj)
        out.append(_outcomes(fwk, pod, snapshot.list()))
        try:
            result = cycle.schedule(fwk, CycleState(), pod, snapshot.list(), snapshot.node_table)
        except FitError as exc:
            out.append(str(exc))
            continue
        cache.assume_pod(pod, result.suggested_host)
        out.append((result.suggested_host, result.evaluated_nodes, result.feasible_nodes))
    if planned:
        assert fwk.shape_plans is not None
        assert len(fwk.shape_plans) > 0
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(runs())
def test_planned_cycles_equal_unplanned_ones(run: Any) -> None:
    nodes, pods = run
    assert _run(nodes, pods, planned=True) == _run(nodes, pods, planned=False)


def test_the_third_pod_of_a_shape_replays_the_seconds_outcomes() -> None:
    """NodeResourcesFit, NodePorts and TaintToleration opt in; InterPodAffinity and PodTopologySpread read the
    cluster and never do; the first pod of a shape leaves its key, the second records, the third (other name,
    labels, uid) replays the same state values."""
    nodes = [
        {"metadata": {"name": "n0", "labels": {"zone": "a"}}, "status": {"allocatable": {"cpu": "2", "pods": "9"}}}
    ]
    cache, snapshot = Cache(FakeClock()), Snapshot()
    cache.add_node(nodes[0])
    cache.update_snapshot(snapshot)
    fwk = build_profiles(default_config(), Handle(snapshot_lister=snapshot), new_in_tree_registry())[
        "default-scheduler"
    ]
    pods = [PodInfo(_pod(k, 0, 3, "x")) for k in range(3)]
    assert shape_key(pods[0]) == shape_key(pods[2])
    states = []
    for pod in pods:
        state = CycleState()
        assert fwk.run_pre_filter_plugins(state, pod, snapshot.list())[1] is None
        assert fwk.run_pre_score_plugins(state, pod, snapshot.list()) is None
        states.append(state)
    plan = fwk.shape_plans.plan(pods[0]) if fwk.shape_plans is not None else None
    assert plan is not None
    names = [p.name() for p in fwk.pre_filter_plugins]
    slots = dict(zip(names, plan.pre_filter, strict=True))
    assert isinstance(slots["NodeResourcesFit"], Outcome)
    assert isinstance(slots["NodePorts"], Outcome)
    assert slots["InterPodAffinity"] == LIVE
    assert slots["PodTopologySpread"] == LIVE
    for key in ("PreFilterNodeResourcesFit", "PreFilterNodePorts", "PreScoreTaintToleration"):
        assert states[2].read(key) is states[1].read(key)  # the second pod recorded, the third replayed
        assert states[1].read(key) is not states[0].read(key)  # the first ran live, recording nothing


def test_a_plan_records_no_mutable_value_no_deletion_and_no_error() -> None:
    class Mutable:
        def clone(self) -> Mutable:
            return Mutable()

    state = CycleState()
    state.write("kept", 1)
    before = dict(state.entries())
    state.write("new", Mutable())
    assert record(before, state, None, None) == LIVE  # a value a later step could change in place
    state.delete("new")
    state.delete("kept")
    assert record(before, state, None, None) == LIVE  # a deletion is not replayable
    state.write("kept", 1)
    assert record(before, state, None, None) == Outcome(None, None, ())


def test_plans_are_bounded_and_forgotten_at_once() -> None:
    plans = ShapePlans(1, 1, limit=2)
    for k in range(3):
        assert plans.plan(PodInfo(_pod(k, 0, k, "x"))) is None  # first of its shape
    assert len(plans) == 1
    assert plans.plan(PodInfo(_pod(9, 0, 2, "x"))) is not None


@pytest.mark.parametrize("namespace", ["x", "y"], ids=["namespace-x", "namespace-y"])
def test_the_shape_key_holds_namespace_spec_and_status_only(namespace: str) -> None:
    a = _pod(0, 1, 1, namespace)
    b = {**_pod(1, 1, 1, namespace), "status": {"phase": "Pending"}}
    assert shape_key(PodInfo(a)) == shape_key(PodInfo(_pod(7, 1, 1, namespace)))  # name, uid, labels ignored
    assert shape_key(PodInfo(a)) != shape_key(PodInfo(b))
    assert shape_key(PodInfo(a)) != shape_key(PodInfo(_pod(0, 1, 1, "other")))
