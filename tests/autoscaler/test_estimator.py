"""The binpacking estimator (cluster-autoscaler estimator/binpacking_estimator_test.go's kinds of cases): first-fit
decreasing on template copies, through the scheduler's filters, capped by the node limit."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.autoscaler.estimator import binpacking_estimate
from kubeplane.autoscaler.simulator import ClusterSimulator
from tests.autoscaler.fake_provider import node_object
from tests.autoscaler.objects import pod_object


def _pods(n: int, cpu: str, **kw: Any) -> list[dict[str, Any]]:
    return [pod_object(f"p{i}", cpu=cpu, memory="10Mi", **kw) for i in range(n)]


def _host_port(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for p in pods:
        p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80, "protocol": "TCP"}]
    return pods


CASES = [
    (
        "simple resource-based binpacking: 10 x 350m on 1050m nodes -> 4 nodes",
        _pods(10, "350m"),
        node_object("t", cpu="1050m"),
        10,
        4,
        10,
    ),
    ("node limit caps the estimate", _pods(10, "350m"), node_object("t", cpu="1050m"), 2, 2, 6),
    ("pod larger than the template: no node", _pods(2, "2"), node_object("t", cpu="1"), 10, 0, 0),
    (
        "decreasing order packs 600m+400m pairs",
        [*_pods(2, "600m"), *[pod_object(f"s{i}", cpu="400m", memory="10Mi") for i in range(2)]],
        node_object("t", cpu="1"),
        10,
        2,
        4,
    ),
    ("host port conflict: one pod per node", _host_port(_pods(3, "100m")), node_object("t", cpu="4"), 10, 3, 3),
    (
        "pods allocatable limits pods per node",
        _pods(5, "10m"),
        {
            **node_object("t", cpu="4"),
            "status": {
                "allocatable": {"cpu": "4", "memory": "4Gi", "pods": "2"},
                "capacity": {"cpu": "4", "memory": "4Gi", "pods": "2"},
            },
        },
        10,
        3,
        5,
    ),
]


@pytest.mark.parametrize(
    ("pods", "template", "limit", "nodes", "scheduled"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_binpacking(
    pods: list[dict[str, Any]], template: dict[str, Any], limit: int, nodes: int, scheduled: int
) -> None:
    sim = ClusterSimulator([], [])
    estimate = binpacking_estimate(sim, pods, template, limit=limit, prefix="template-node-for-g")
    assert (estimate.node_count, len(estimate.pods)) == (nodes, scheduled)
    assert sim.node_names() == []  # the caller's simulator is unchanged


def test_estimate_respects_filters_of_the_template() -> None:
    """A pod whose nodeSelector the template's labels do not satisfy gets no node."""
    pods = [pod_object("p", node_selector={"disk": "ssd"})]
    estimate = binpacking_estimate(ClusterSimulator([], []), pods, node_object("t"), limit=5, prefix="x")
    assert estimate.node_count == 0
    estimate = binpacking_estimate(
        ClusterSimulator([], []), pods, node_object("t", labels={"disk": "ssd"}), limit=5, prefix="x"
    )
    assert estimate.node_count == 1
