"""Scale-down planning: utilisation (utilization/info_test.go), eligibility (core/scaledown/eligibility/
eligibility_test.go), the removal simulation (simulator/cluster_test.go) and what is deleted when
(core/scaledown/planner, unneeded)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import NodeGroupSpec
from kubeplane.autoscaler.scaledown import (
    UnneededTracker,
    is_node_ready,
    plan_scale_down,
    select_for_deletion,
    utilization,
)
from kubeplane.autoscaler.simulator import ClusterSimulator
from tests.autoscaler.fake_provider import FakeProvider, node_object
from tests.autoscaler.objects import pod_object

NOW = 1_800_000_000.0
DS_OWNER = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "uid": "ds-uid", "controller": True}

UTILIZATION = [
    ("max of cpu and memory: cpu", [pod_object("a", cpu="1", memory="1Gi")], {}, 0.5, False),
    ("max of cpu and memory: memory", [pod_object("a", cpu="100m", memory="3Gi")], {}, 0.75, False),
    ("DaemonSet pods count by default", [pod_object("d", cpu="1", owner=DS_OWNER)], {}, 0.5, False),
    (
        "ignore-daemonsets-utilization",
        [pod_object("d", cpu="1", owner=DS_OWNER)],
        {"ignore_daemonsets_utilization": True},
        0.0,
        False,
    ),
    ("terminal pods do not count", [pod_object("a", cpu="1", phase="Succeeded")], {}, 0.0, False),
]


@pytest.mark.parametrize(
    ("pods", "flags", "value", "gpu"), [c[1:] for c in UTILIZATION], ids=[c[0] for c in UTILIZATION]
)
def test_utilization(pods: list[dict[str, Any]], flags: dict[str, Any], value: float, gpu: bool) -> None:
    node = node_object("n", cpu="2", memory="4Gi")
    util, is_gpu = utilization(node, pods, AutoscalerOptions(**flags))
    assert util == pytest.approx(value)
    assert is_gpu is gpu


def test_gpu_node_is_judged_by_gpu_alone() -> None:
    node = node_object("n", cpu="2", extra={"nvidia.com/gpu": "4"})
    pods = [pod_object("a", cpu="2", extra={"nvidia.com/gpu": "1"})]
    assert utilization(node, pods, AutoscalerOptions()) == (0.25, True)


def _setup(
    nodes: int, pods: list[dict[str, Any]], *, min_size: int = 0, cpu: str = "2"
) -> tuple[FakeProvider, list[dict[str, Any]], ClusterSimulator]:
    provider = FakeProvider([NodeGroupSpec("g", min_size, 10, {"cpu": cpu, "memory": "4Gi"})])
    objs = provider.add_existing("g", nodes)
    return provider, objs, ClusterSimulator(objs, pods)


def _plan(provider: FakeProvider, objs: list[dict[str, Any]], sim: ClusterSimulator, **flags: Any) -> Any:
    return plan_scale_down(sim, objs, provider=provider, options=AutoscalerOptions(**flags), pdbs=[], now=NOW)


def test_eligibility_reasons() -> None:
    provider, objs, _ = _setup(4, [])
    objs[0]["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
    objs[1]["spec"]["taints"] = [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"}]
    pods = [pod_object("busy", cpu="1500m", node="g-2")]
    unowned = node_object("static")
    sim = ClusterSimulator([*objs, unowned], pods)
    plan = _plan(provider, [*objs, unowned], sim)
    assert plan.unremovable == {
        "g-0": "ScaleDownDisabledAnnotation",
        "g-1": "CurrentlyBeingDeleted",
        "g-2": "NotUnderutilized",
    }
    assert list(plan.unneeded) == ["g-3"]  # an unowned node is never considered


def test_threshold_is_exclusive() -> None:
    """A node exactly at the threshold is not underutilized (utilization >= threshold)."""
    provider, objs, sim = _setup(2, [pod_object("half", cpu="1", node="g-0")])
    assert _plan(provider, objs, sim).unremovable["g-0"] == "NotUnderutilized"


def test_pods_that_fit_elsewhere_make_the_node_unneeded() -> None:
    provider, objs, sim = _setup(2, [pod_object("a", cpu="500m", node="g-0"), pod_object("b", cpu="900m", node="g-1")])
    plan = _plan(provider, objs, sim)
    assert list(plan.unneeded) == ["g-0"]  # the less utilised node first; then g-1 has nowhere to go
    assert [p["metadata"]["name"] for p in plan.unneeded["g-0"].pods_to_move] == ["a"]
    assert plan.unremovable["g-1"] == "NoPlaceToMovePods"


def test_blocking_pod_names_the_rule() -> None:
    provider, objs, sim = _setup(2, [pod_object("naked", cpu="100m", node="g-0", owner=None)])
    plan = _plan(provider, objs, sim)
    assert plan.unremovable["g-0"] == "BlockedByPod: default/naked is not replicated"
    assert list(plan.unneeded) == ["g-1"]


def test_empty_nodes_come_first_and_daemonset_pods_do_not_make_a_node_busy() -> None:
    provider, objs, sim = _setup(2, [pod_object("d", cpu="100m", node="g-1", owner=DS_OWNER)])
    plan = _plan(provider, objs, sim)
    assert set(plan.unneeded) == {"g-0", "g-1"}
    assert plan.unneeded["g-1"].empty


def _deletable(provider: FakeProvider, plan: Any, tracker: UnneededTracker, now: float, **flags: Any) -> list[str]:
    removals = select_for_deletion(
        plan, tracker, provider=provider, options=AutoscalerOptions(**flags), now=now, deleting={}
    )
    return [r.node for r in removals]


def test_unneeded_time_must_pass() -> None:
    provider, objs, sim = _setup(2, [])
    plan = _plan(provider, objs, sim)
    tracker = UnneededTracker()
    tracker.update(list(plan.unneeded), NOW)
    assert _deletable(provider, plan, tracker, NOW + 599) == []
    assert _deletable(provider, plan, tracker, NOW + 600) == ["g-0", "g-1"]


def test_tracker_restarts_when_a_node_is_needed_again() -> None:
    tracker = UnneededTracker()
    tracker.update(["a"], NOW)
    tracker.update([], NOW + 10)
    tracker.update(["a"], NOW + 20)
    assert tracker.since == {"a": NOW + 20}


def test_min_size_is_kept() -> None:
    provider, objs, sim = _setup(3, [], min_size=2)
    plan = _plan(provider, objs, sim)
    tracker = UnneededTracker()
    tracker.update(list(plan.unneeded), NOW - 600)
    assert _deletable(provider, plan, tracker, NOW) == ["g-0"]
    assert plan.unremovable["g-1"] == plan.unremovable["g-2"] == "NodeGroupMinSizeReached"


def test_empty_batch_and_drain_parallelism() -> None:
    pods = [pod_object(f"p{i}", cpu="100m", node=f"g-{i}") for i in range(3)]
    provider, objs, sim = _setup(6, pods)
    plan = _plan(provider, objs, sim)
    tracker = UnneededTracker()
    tracker.update(list(plan.unneeded), NOW - 600)
    chosen = _deletable(provider, plan, tracker, NOW, max_empty_bulk_delete=2)
    empty = [n for n in chosen if plan.unneeded[n].empty]
    drained = [n for n in chosen if not plan.unneeded[n].empty]
    assert (len(empty), len(drained)) == (2, 1)  # max-empty-bulk-delete 2, max-drain-parallelism 1


READINESS = [
    ("Ready condition True, no taint", node_object("n"), True),
    ("Ready condition False", node_object("n", ready=False), False),
    (
        "Ready but still tainted not-ready (lifecycle controller not caught up)",
        node_object("n", taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]),
        False,
    ),
    (
        "Ready but tainted unreachable",
        node_object("n", taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]),
        False,
    ),
]


@pytest.mark.parametrize(("node", "ready"), [c[1:] for c in READINESS], ids=[c[0] for c in READINESS])
def test_readiness_as_upstream_get_readiness_state(node: dict[str, Any], ready: bool) -> None:
    assert is_node_ready(node) is ready


def test_expendable_pods_need_no_new_place() -> None:
    """expendable-pods-priority-cutoff: such pods are evicted with the node, never rescheduled."""
    pods = [pod_object("low", cpu="900m", node="g-0", priority=-20), pod_object("full", cpu="900m", node="g-1")]
    provider, objs, sim = _setup(2, pods, cpu="1")
    plan = _plan(provider, objs, sim, scale_down_utilization_threshold=1.0)
    assert plan.unneeded["g-0"].pods_to_move == ()
    assert [p["metadata"]["name"] for p in plan.unneeded["g-0"].pods_to_evict] == ["low"]
    assert plan.unremovable["g-1"] == "NoPlaceToMovePods"
