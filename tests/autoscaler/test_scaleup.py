"""Scale-up planning (cluster-autoscaler core/scaleup/orchestrator_test.go's kinds of cases) against the fake
provider: which group grows by how much, and the events' messages."""

from __future__ import annotations

import random
from typing import Any

from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import NodeGroupSpec
from kubeplane.autoscaler.scaleup import (
    filter_out_schedulable,
    not_triggered_message,
    plan_scale_up,
    unschedulable_pods,
)
from kubeplane.autoscaler.simulator import ClusterSimulator, pod_key
from tests.autoscaler.fake_provider import FakeProvider, node_object
from tests.autoscaler.objects import pod_object

NOW = 1_800_000_000.0


def _group(
    name: str,
    *,
    min_size: int = 0,
    max_size: int = 5,
    cpu: str = "2",
    labels: dict[str, str] | None = None,
    price: float = 0.0,
) -> NodeGroupSpec:
    return NodeGroupSpec(
        name, min_size, max_size, {"cpu": cpu, "memory": "4Gi", "labels": labels or {}}, price_per_hour=price
    )


def _plan(
    provider: FakeProvider,
    pending: list[dict[str, Any]],
    options: AutoscalerOptions | None = None,
    nodes: list[dict[str, Any]] | None = None,
) -> Any:
    sim = ClusterSimulator(nodes or [], [])
    total = sum(provider.target_size(g.name) for g in provider.node_groups())
    return plan_scale_up(
        sim, pending, provider=provider, options=options or AutoscalerOptions(), rng=random.Random(0), total_nodes=total
    )


def test_pending_pods_grow_the_group_by_the_estimate() -> None:
    provider = FakeProvider([_group("g", max_size=3)])
    provider.add_existing("g", 1)
    pods = [pod_object(f"p{i}", cpu="1500m") for i in range(2)]
    plan = _plan(provider, pods)
    assert [str(i) for i in plan.infos] == ["{g 1->3 (max: 3)}"]
    assert {pod_key(p) for p in plan.triggered} == {"default/p0", "default/p1"}
    assert plan.remaining == []


def test_group_at_max_size_gives_max_node_group_size_reached() -> None:
    provider = FakeProvider([_group("g", max_size=1)])
    provider.add_existing("g", 1)
    pod = pod_object("p", cpu="1500m")
    plan = _plan(provider, [pod])
    assert plan.infos == []
    message = not_triggered_message(plan.reasons[pod_key(pod)])
    assert message == "pod didn't trigger scale-up: 1 max node group size reached"


def test_reasons_are_counted_per_group_and_sorted() -> None:
    """ReasonsMessage: "<groups> <reason>" sorted, joined by ", "."""
    provider = FakeProvider([_group("a"), _group("b"), _group("full", max_size=0)])
    pod = pod_object("p", node_selector={"disk": "ssd"})
    plan = _plan(provider, [pod])
    assert not_triggered_message(plan.reasons[pod_key(pod)]) == (
        "pod didn't trigger scale-up: 1 max node group size reached, "
        "2 node(s) didn't match Pod's node affinity/selector"
    )


def test_only_groups_whose_template_fits_are_options() -> None:
    provider = FakeProvider([_group("plain"), _group("ssd", labels={"disk": "ssd"})])
    plan = _plan(provider, [pod_object("p", node_selector={"disk": "ssd"})])
    assert [str(i) for i in plan.infos] == ["{ssd 0->1 (max: 5)}"]


def test_max_nodes_total_reached_tries_nothing() -> None:
    provider = FakeProvider([_group("g")])
    provider.add_existing("g", 2)
    plan = _plan(provider, [pod_object("p", cpu="1500m")], AutoscalerOptions(max_nodes_total=2))
    assert (plan.infos, plan.remaining, plan.error) == ([], [], "max node total count already reached")


def test_max_nodes_total_caps_the_estimate() -> None:
    provider = FakeProvider([_group("g")])
    plan = _plan(provider, [pod_object(f"p{i}", cpu="1500m") for i in range(4)], AutoscalerOptions(max_nodes_total=3))
    assert [str(i) for i in plan.infos] == ["{g 0->3 (max: 5)}"]
    assert plan.remaining == []  # GetRemainingPods: the group could take it: no NotTriggerScaleUp
    assert len(plan.awaiting) == 1  # GetPodsAwaitingEvaluation


def test_balance_similar_node_groups_spreads_the_nodes() -> None:
    """processors/nodegroupset: groups alike but for zone labels share the scale-up, smallest first."""
    a = _group("a", labels={"topology.kubernetes.io/zone": "z1"})
    b = _group("b", labels={"topology.kubernetes.io/zone": "z2"})
    provider = FakeProvider([a, b])
    provider.add_existing("a", 1)
    pods = [pod_object(f"p{i}", cpu="1500m") for i in range(3)]
    plan = _plan(provider, pods, AutoscalerOptions(balance_similar_node_groups=True))
    assert sorted(str(i) for i in plan.infos) == ["{a 1->2 (max: 5)}", "{b 0->2 (max: 5)}"]


def test_without_balancing_one_group_takes_all() -> None:
    a = _group("a", labels={"topology.kubernetes.io/zone": "z1"})
    b = _group("b", labels={"topology.kubernetes.io/zone": "z2"})
    plan = _plan(FakeProvider([a, b]), [pod_object(f"p{i}", cpu="1500m") for i in range(3)])
    assert len(plan.infos) == 1
    assert plan.infos[0].new == 3


def test_different_groups_are_not_balanced() -> None:
    a = _group("a", cpu="2")
    b = _group("b", cpu="4")
    plan = _plan(
        FakeProvider([a, b]),
        [pod_object(f"p{i}", cpu="1500m") for i in range(2)],
        AutoscalerOptions(balance_similar_node_groups=True, expander="least-waste"),
    )
    assert [str(i) for i in plan.infos] == ["{b 0->1 (max: 5)}"]  # least waste, and b is not similar to a


def test_filter_out_schedulable_keeps_placements() -> None:
    """FilterOutSchedulable: a pod fitting an existing (or upcoming) node needs no scale-up; the room it takes is
    gone for the next pod."""
    sim = ClusterSimulator([node_object("n", cpu="2")], [])
    pods = [pod_object("a", cpu="1500m"), pod_object("b", cpu="1500m")]
    assert [p["metadata"]["name"] for p in filter_out_schedulable(sim, pods)] == ["b"]


def test_unschedulable_pods_selection() -> None:
    pods = [
        pod_object("pending", unschedulable=True, created="2027-01-15T07:50:00Z"),
        pod_object("no-condition"),
        pod_object("bound", unschedulable=True, node="n"),
        pod_object("expendable", unschedulable=True, priority=-11),
        pod_object("young", unschedulable=True, created="2027-01-15T07:59:50Z"),
    ]
    names = [p["metadata"]["name"] for p in unschedulable_pods(pods, now=NOW, options=AutoscalerOptions())]
    assert names == ["pending", "young"]
    delayed = AutoscalerOptions(new_pod_scale_up_delay=30)
    names = [p["metadata"]["name"] for p in unschedulable_pods(pods, now=NOW, options=delayed)]
    assert names == ["pending"]
