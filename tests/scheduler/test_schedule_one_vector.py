"""The vectorised node search and scoring (NodeTable fast path) make exactly the decisions of the per-node
reference path: same host (same seeded tie-break), same number of evaluated nodes, same FailedScheduling
message, on random clusters, including the rotating start index across consecutive pods (DESIGN decision 6)."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import default_config, parse_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.registry import new_in_tree_registry
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import FitError, SchedulingCycle

ZONES = ["a", "b", "c"]


@st.composite
def clusters(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    n = draw(st.integers(1, 140))
    nodes = []
    for i in range(n):
        cpu = draw(st.sampled_from(["1", "2", "4"]))
        capacity = {"cpu": cpu, "memory": draw(st.sampled_from(["2Gi", "8Gi"])), "pods": str(draw(st.integers(1, 5)))}
        spec: dict[str, Any] = {}
        if draw(st.integers(0, 9)) == 0:
            spec["taints"] = [
                {"key": "dedicated", "value": "x", "effect": draw(st.sampled_from(["NoSchedule", "PreferNoSchedule"]))}
            ]
        if draw(st.integers(0, 19)) == 0:
            spec["unschedulable"] = True
        nodes.append(
            {
                "metadata": {
                    "name": f"n{i}",
                    "labels": {"zone": draw(st.sampled_from(ZONES)), "kubernetes.io/hostname": f"n{i}"},
                },
                "spec": spec,
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
    existing = []
    for j in range(draw(st.integers(0, 60))):
        existing.append(
            {
                "metadata": {"name": f"e{j}", "namespace": "d", "uid": f"e{j}"},
                "spec": {
                    "nodeName": f"n{draw(st.integers(0, n - 1))}",
                    "containers": [
                        {"name": "c", "resources": {"requests": {"cpu": draw(st.sampled_from(["100m", "500m", "1"]))}}}
                    ],
                },
            }
        )
    pods = []
    for k in range(draw(st.integers(1, 4))):
        spec = {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": draw(st.sampled_from(["100m", "900m", "3"]))}}}
            ]
        }
        if draw(st.booleans()):
            spec["nodeSelector"] = {"zone": draw(st.sampled_from(ZONES))}
        if draw(st.booleans()):
            spec["affinity"] = {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": [draw(st.sampled_from(ZONES))]}
                                ]
                            },
                        }
                    ]
                }
            }
        if draw(st.booleans()):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
        pods.append({"metadata": {"name": f"p{k}", "namespace": "d", "uid": f"p{k}"}, "spec": spec})
    return nodes, existing, pods


class OddOut:
    """A Filter plugin without a vectorised path: rejects nodes whose index is odd."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        pass

    def name(self) -> str:
        return "OddOut"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status.unschedulable("odd node") if int(node.name[1:]) % 2 else None


class _Nominations:
    """Pods nominated to nodes, as the scheduling queue's nominator hands them to the cycle."""

    def __init__(self, by_node: Mapping[str, list[PodInfo]]) -> None:
        self.by_node = by_node

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self.by_node.get(node_name, ()))

    def nominated_node_names(self) -> Collection[str]:
        return self.by_node.keys()


def _decide(
    nodes: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    *,
    vector: bool,
    odd_out: bool = False,
    nominated: Mapping[str, list[PodInfo]] | None = None,
) -> list[tuple[str, int] | str]:
    snapshot = Snapshot.from_objects(nodes, existing)
    config = default_config()
    registry = new_in_tree_registry()
    if odd_out:
        registry.register("OddOut", OddOut)
        config = parse_config(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [
                    {"schedulerName": "default-scheduler", "plugins": {"filter": {"enabled": [{"name": "OddOut"}]}}}
                ],
            }
        )
    nominator = _Nominations(dict(nominated or {}))
    handle = Handle(snapshot_lister=snapshot, nominator=nominator)
    fwk = build_profiles(config, handle, registry)["default-scheduler"]
    assert snapshot.node_table is not None
    cycle = SchedulingCycle(rng=random.Random(5), percentage_of_nodes_to_score=None)
    out: list[tuple[str, int] | str] = []
    for pod in pods:
        try:
            result = cycle.schedule(
                fwk, CycleState(), PodInfo(pod), snapshot.list(), snapshot.node_table if vector else None
            )
            out.append((result.suggested_host, result.evaluated_nodes))
        except FitError as exc:
            out.append(str(exc))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters())
def test_vector_path_decides_like_the_reference(cluster: Any) -> None:
    nodes, existing, pods = cluster
    assert _decide(nodes, existing, pods, vector=True) == _decide(nodes, existing, pods, vector=False)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters())
def test_a_plugin_without_vector_path_is_asked_per_node(cluster: Any) -> None:
    nodes, existing, pods = cluster
    got = _decide(nodes, existing, pods, vector=True, odd_out=True)
    assert got == _decide(nodes, existing, pods, vector=False, odd_out=True)
    assert all(isinstance(d, str) or int(d[0][1:]) % 2 == 0 for d in got)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(clusters(), st.data())
def test_nominated_pods_are_counted_the_same_on_both_paths(cluster: Any, data: st.DataObject) -> None:
    """Pods nominated to some nodes (higher or lower priority than the incoming pods) reserve room there."""
    nodes, existing, pods = cluster
    nominated: dict[str, list[PodInfo]] = {}
    for i, node in enumerate(nodes):
        if data.draw(st.integers(0, 2)) == 0:
            cpu = data.draw(st.sampled_from(["500m", "1", "2"]))
            priority = data.draw(st.sampled_from([-1, 0, 5]))
            spec = {"priority": priority, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
            meta = {"name": f"nom{i}", "namespace": "d", "uid": f"nom{i}"}
            nominated[node["metadata"]["name"]] = [PodInfo({"metadata": meta, "spec": spec})]
    got = _decide(nodes, existing, pods, vector=True, nominated=nominated)
    assert got == _decide(nodes, existing, pods, vector=False, nominated=nominated)
