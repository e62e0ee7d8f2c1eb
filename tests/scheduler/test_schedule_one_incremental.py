"""The vectorised cycle decides like the per-node reference across a sequence of cycles whose pods are assumed in
between (the scheduler cache refreshing the snapshot's NodeTable rows): the per-row columns kept across cycles
(RowMemo for NodeResourcesFit's mask and the allocation scores, DomainSums and RowCounts for PodTopologySpread,
Census for InterPodAffinity) follow what changed, with pods of repeated shapes so that columns are built and
then updated (DESIGN decision 6; upstream's scheduleOne, one pod after the other, assumed in the cache)."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.cache import Cache
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import default_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.registry import new_in_tree_registry
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import FitError, SchedulingCycle

ZONES = ["a", "b", "c"]

SHAPES: list[dict[str, Any]] = [
    {"cpu": "100m", "memory": "64Mi"},
    {"cpu": "700m", "memory": "1Gi"},
    {"cpu": "1", "memory": "128Mi", "spread": True},
    {"cpu": "300m", "memory": "256Mi", "selector": "b"},
    {"cpu": "200m", "memory": "64Mi", "anti": True},
    {"cpu": "150m", "memory": "64Mi", "soft": True},
]


def _node(i: int, draw: Any) -> dict[str, Any]:
    cpu = draw(st.sampled_from(["1", "2", "4"]))
    capacity = {"cpu": cpu, "memory": draw(st.sampled_from(["2Gi", "4Gi"])), "pods": str(draw(st.integers(2, 6)))}
    spec: dict[str, Any] = {}
    if draw(st.integers(0, 7)) == 0:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    if draw(st.integers(0, 11)) == 0:
        spec["unschedulable"] = True
    name = f"n{i}"
    return {
        "metadata": {"name": name, "labels": {"zone": draw(st.sampled_from(ZONES)), "kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _pod(k: int, shape: dict[str, Any]) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": shape["cpu"], "memory": shape["memory"]}}}
    spec: dict[str, Any] = {"containers": [container]}
    labels = {"app": "web"}
    if shape.get("spread"):
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
        # Scores pull every pod to zone a: only the spread Filter (its counts kept across cycles) spreads them.
        preference = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": preference}]
            }
        }
    if shape.get("soft"):
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    if shape.get("selector"):
        spec["nodeSelector"] = {"zone": shape["selector"]}
    if shape.get("anti"):
        labels = {"app": "solo"}
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "solo"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
    return {"metadata": {"name": f"p{k}", "namespace": "d", "uid": f"p{k}", "labels": labels}, "spec": spec}


@st.composite
def runs(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    nodes = [_node(i, draw) for i in range(draw(st.integers(1, 40)))]
    order = draw(st.lists(st.integers(0, len(SHAPES) - 1), min_size=1, max_size=12))
    pods = [_pod(k, SHAPES[s]) for k, s in enumerate(j for j in order for _ in range(3))]
    return nodes, pods


def _run(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], *, warm: bool) -> list[tuple[str, int] | str]:
    """``warm``: one snapshot, framework and NodeTable for the whole run, the vector path (columns kept across
    cycles). Else, each cycle from scratch: a fresh snapshot and framework (no memo of any plugin), the per-node
    reference path."""
    cache = Cache(FakeClock())
    for node in nodes:
        cache.add_node(node)
    cycle = SchedulingCycle(rng=random.Random(3))
    snapshot = Snapshot()
    fwk = build_profiles(default_config(), Handle(snapshot_lister=snapshot), new_in_tree_registry())[
        "default-scheduler"
    ]
    out: list[tuple[str, int] | str] = []
    for obj in pods:
        if not warm:
            snapshot = Snapshot()
            handle = Handle(snapshot_lister=snapshot)
            fwk = build_profiles(default_config(), handle, new_in_tree_registry())["default-scheduler"]
        cache.update_snapshot(snapshot)
        pod = PodInfo(obj)
        table = snapshot.node_table if warm else None
        try:
            result = cycle.schedule(fwk, CycleState(), pod, snapshot.list(), table)
        except FitError as exc:
            out.append(str(exc))
            continue
        cache.assume_pod(pod, result.suggested_host)
        out.append((result.suggested_host, result.evaluated_nodes))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(runs())
def test_columns_kept_across_cycles_decide_like_the_reference(run: Any) -> None:
    nodes, pods = run
    assert _run(nodes, pods, warm=True) == _run(nodes, pods, warm=False)
