"""LowNodeUtilization and HighNodeUtilization, translated from upstream's ``TestLowNodeUtilization`` and
``TestHighNodeUtilization`` (pkg/framework/plugins/nodeutilization/*_test.go, v0.36; requests only)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.descheduler.evictor import DefaultEvictorArgs
from kubeplane.descheduler.plugins.node_utilization import (
    HighNodeUtilization,
    LowNodeUtilization,
    parse_high_args,
    parse_low_args,
    validate_high,
    validate_low,
)
from kubeplane.descheduler.podutil import SYSTEM_CRITICAL_PRIORITY
from tests.descheduler.builders import Harness, node, pod

LOCAL = [{"name": "v", "hostPath": {"path": "/x"}}]
CPU_PODS_30 = {"cpu": 30, "pods": 30}
CPU_PODS_50 = {"cpu": 50, "pods": 50}


def three_nodes(n1_pods: int = 9) -> list[dict[str, Any]]:
    return [node("n1", 4000, 3000, n1_pods), node("n2", 4000, 3000, 10), node("n3", 4000, 3000, 10, unschedulable=True)]


def unevictable(on: str = "n1") -> list[dict[str, Any]]:
    """p6 (DaemonSet), p7 (local storage, mirror), p8 (system critical): upstream's pods that stay."""
    return [
        pod("p6", 400, node_name=on, owner="DaemonSet"),
        pod("p7", 400, node_name=on, volumes=LOCAL, annotations={"kubernetes.io/config.mirror": "x"}),
        pod("p8", 400, node_name=on, namespace="kube-system", priority=SYSTEM_CRITICAL_PRIORITY),
    ]


def five(**kw: Any) -> list[dict[str, Any]]:
    return [pod(f"p{i}", 400, node_name="n1", **kw) for i in range(1, 6)]


LOW_CASES = [
    ("no-evictable-pods", {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50}, three_nodes(),
     [pod(f"p{i}", 400, node_name="n1", owner="DaemonSet") for i in range(1, 5)] + unevictable()
     + [pod("p9", 400, node_name="n2")], []),
    ("without-priorities-stops-when-room-on-underutilized-runs-out",
     {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50}, three_nodes(),
     five() + unevictable() + [pod("p9", 400, node_name="n2")], ["p1", "p2", "p3", "p4"]),
    ("with-priorities-lowest-first", {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50}, three_nodes(),
     [pod(f"p{i}", 400, node_name="n1", priority=10000) for i in range(1, 5)]
     + [pod("p5", 400, node_name="n1", priority=100)] + unevictable() + [pod("p9", 400, node_name="n2")],
     ["p5", "p1", "p2", "p3"]),
    ("best-effort-before-burstable", {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50}, three_nodes(),
     [pod(f"p{i}", 400, node_name="n1") for i in range(1, 4)] + [pod("p4", 0, node_name="n1"),
     pod("p5", 0, node_name="n1")] + unevictable() + [pod("p9", 400, node_name="n2")], ["p4", "p5", "p1", "p2"]),
    ("evictableNamespaces-exclude", {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50,
     "evictableNamespaces": {"exclude": ["namespace1"]}}, three_nodes(),
     [pod(f"p{i}", 400, node_name="n1", namespace="namespace1") for i in range(1, 4)]
     + [pod("p4", 400, node_name="n1"), pod("p5", 400, node_name="n1")] + unevictable()
     + [pod("p9", 400, node_name="n2")], ["p4", "p5"]),
    ("only-other-node-unschedulable", {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50},
     [node("n1", 4000, 3000, 9), node("n2", 4000, 3000, 10, unschedulable=True)], five() + unevictable(), []),
    ("evictionLimits-node", {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50,
     "evictionLimits": {"node": 2}}, three_nodes(), five() + unevictable() + [pod("p9", 400, node_name="n2")],
     ["p1", "p2"]),
    ("deviation-thresholds", {"thresholds": {"cpu": 5, "pods": 5}, "targetThresholds": {"cpu": 5, "pods": 5},
     "useDeviationThresholds": True}, three_nodes(), five() + unevictable() + [pod("p9", 400, node_name="n2")],
     ["p1", "p2"]),
    ("numberOfNodes-not-exceeded", {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50, "numberOfNodes": 1},
     three_nodes(), five() + unevictable() + [pod("p9", 400, node_name="n2")], []),
    ("all-nodes-underutilized", {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50},
     [node("n1", 4000, 3000, 10), node("n2", 4000, 3000, 10)], [pod("p1", 400, node_name="n1")], []),
    ("pod-not-tolerating-underutilized-node-taint-skipped",
     {"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50},
     [node("n1", 4000, 3000, 9), node("n2", 4000, 3000, 10, taints=[{"key": "k", "effect": "NoSchedule"}])],
     five() + unevictable() + [pod("p9", 400, node_name="n2")], []),
]  # fmt: skip


@pytest.mark.parametrize(("args", "nodes", "pods", "expected"), [c[1:] for c in LOW_CASES],
                         ids=[c[0] for c in LOW_CASES])  # fmt: skip
def test_low_node_utilization(args: dict[str, Any], nodes: list[Any], pods: list[Any], expected: list[str]) -> None:
    assert Harness(nodes, pods).run(LowNodeUtilization, parse_low_args(args)) == expected


HIGH_CASES = [
    ("without-priorities", {"thresholds": CPU_PODS_30},
     [node("n1", 4000, 3000, 10), node("n2", 4000, 3000, 10), node("n3", 4000, 3000, 10, unschedulable=True)],
     [pod("p1", 400, node_name="n1"),
      pod("p2", 400, node_name="n1", namespace="kube-system", priority=SYSTEM_CRITICAL_PRIORITY)]
     + [pod(f"p{i}", 400, node_name="n2") for i in range(3, 7)] + [pod("p7", 400, node_name="n3")], ["p7", "p1"]),
    ("with-priorities", {"thresholds": {"cpu": 30}},
     [node("n1", 4000, 3000, 10), node("n2", 2000, 3000, 10), node("n3", 2000, 3000, 10, unschedulable=True)],
     [pod("p1", 400, node_name="n1", priority=100), pod("p2", 400, node_name="n1", priority=10000)]
     + [pod(f"p{i}", 400, node_name="n2") for i in range(5, 9)] + [pod("p9", 400, node_name="n3", owner="DaemonSet")],
     ["p1"]),
    ("no-node-below-threshold", {"thresholds": {"cpu": 10}},
     [node("n1", 4000, 3000, 10), node("n2", 4000, 3000, 10)],
     [pod("p1", 800, node_name="n1"), pod("p2", 800, node_name="n2")], []),
    ("OnlyThresholdingResources-skips-pods-without-the-resource",
     {"thresholds": {"cpu": 30}, "evictionModes": ["OnlyThresholdingResources"]},
     [node("n1", 4000, 3000, 10), node("n2", 4000, 3000, 10)],
     [pod("p1", 0, 100, node_name="n1")] + [pod(f"p{i}", 400, node_name="n2") for i in range(2, 6)], []),
]  # fmt: skip


@pytest.mark.parametrize(("args", "nodes", "pods", "expected"), [c[1:] for c in HIGH_CASES],
                         ids=[c[0] for c in HIGH_CASES])  # fmt: skip
def test_high_node_utilization(args: dict[str, Any], nodes: list[Any], pods: list[Any], expected: list[str]) -> None:
    assert Harness(nodes, pods).run(HighNodeUtilization, parse_high_args(args)) == expected


def test_low_node_utilization_nodefit_keeps_pods_that_fit_nowhere() -> None:
    """DefaultEvictor ``nodeFit`` (PreEvictionFilter): p4, p5 select a label no other node has."""
    pods = [pod(f"p{i}", 400, node_name="n1") for i in range(1, 4)]
    pods += [pod(f"p{i}", 400, node_name="n1", node_selector={"zone": "x"}) for i in (4, 5)]
    pods += [*unevictable(), pod("p9", 400, node_name="n2")]
    harness = Harness(three_nodes(), pods, evictor_args=DefaultEvictorArgs(node_fit=True))
    args = parse_low_args({"thresholds": CPU_PODS_30, "targetThresholds": CPU_PODS_50})
    assert harness.run(LowNodeUtilization, args) == ["p1", "p2", "p3"]


@pytest.mark.parametrize(
    ("raw", "errors"),
    [
        ({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 80}}, []),
        ({"thresholds": {}, "targetThresholds": {"cpu": 80}},
         ["thresholds config is not valid: no resource threshold is configured"]),
        ({"thresholds": {"cpu": 120}, "targetThresholds": {"cpu": 80}},
         ["thresholds config is not valid: cpu threshold not in [0, 100] range"]),
        ({"thresholds": {"cpu": 20}, "targetThresholds": {"memory": 80}},
         ["thresholds and targetThresholds configured different resources"]),
        ({"thresholds": {"cpu": 90}, "targetThresholds": {"cpu": 80}},
         ["thresholds' cpu percentage is greater than targetThresholds'"]),
        ({"thresholds": {"cpu": 90}, "targetThresholds": {"cpu": 80}, "useDeviationThresholds": True}, []),
        ({"thresholds": {"cpu": 20}, "targetThresholds": {"cpu": 80}, "evictableNamespaces": {"include": ["a"]}},
         ["only Exclude namespaces can be set, inclusion is not supported"]),
    ],
    ids=["valid", "no-thresholds", "out-of-range", "different-resources", "threshold-above-target",
         "deviation-allows-threshold-above-target", "include-namespaces-refused"],
)  # fmt: skip
def test_low_validation(raw: dict[str, Any], errors: list[str]) -> None:
    assert validate_low(parse_low_args(raw)) == errors


@pytest.mark.parametrize(
    ("raw", "errors"),
    [({"thresholds": {"cpu": 20}}, []), ({"thresholds": {"cpu": 20}, "evictionModes": ["Bogus"]},
      ["invalid eviction mode Bogus"])],
    ids=["valid", "unknown-eviction-mode"],
)  # fmt: skip
def test_high_validation(raw: dict[str, Any], errors: list[str]) -> None:
    assert validate_high(parse_high_args(raw)) == errors
