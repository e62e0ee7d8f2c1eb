"""RemovePodsViolatingNodeAffinity and RemovePodsViolatingInterPodAntiAffinity, translated from upstream's
``TestRemovePodsViolatingNodeAffinity`` and ``TestPodAntiAffinity`` (v0.36)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.descheduler.evictor import DefaultEvictorArgs
from kubeplane.descheduler.plugins.anti_affinity import RemovePodsViolatingInterPodAntiAffinity
from kubeplane.descheduler.plugins.anti_affinity import parse_args as anti_args
from kubeplane.descheduler.plugins.node_affinity import RemovePodsViolatingNodeAffinity, parse_args, validate
from tests.descheduler.builders import Harness, node, pod

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
LABEL = {"kubernetes.io/desiredNode": "yes"}
TERM = {"matchExpressions": [{"key": "kubernetes.io/desiredNode", "operator": "In", "values": ["yes"]}]}
REQUIRED_AFFINITY = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [TERM]}}}
PREFERRED_AFFINITY = {"nodeAffinity": {PREFERRED: [{"weight": 10, "preference": TERM}]}}


def _pods(affinity: dict[str, Any], node_name: str = "n1") -> list[dict[str, Any]]:
    return [pod(f"p{i}", node_name=node_name, affinity=affinity) for i in range(1, 4)]


AFFINITY_CASES = [
    ("required-no-node-selected-anymore-but-another-fits", [REQUIRED], _pods(REQUIRED_AFFINITY),
     [node("n1"), node("n2", labels=LABEL)], {}, ["p1", "p2", "p3"]),
    ("required-current-node-still-matches", [REQUIRED], _pods(REQUIRED_AFFINITY, "n2"),
     [node("n1"), node("n2", labels=LABEL)], {}, []),
    ("required-no-node-matches", [REQUIRED], _pods(REQUIRED_AFFINITY), [node("n1"), node("n2")], {}, []),
    ("required-maxPodsToEvictPerNode", [REQUIRED], _pods(REQUIRED_AFFINITY), [node("n1"), node("n2", labels=LABEL)],
     {"max_per_node": 1}, ["p1"]),
    ("required-maxNoOfPodsToEvictTotal", [REQUIRED], _pods(REQUIRED_AFFINITY),
     [node("n1"), node("n2", labels=LABEL)], {"max_total": 2}, ["p1", "p2"]),
    ("required-other-node-unschedulable", [REQUIRED], _pods(REQUIRED_AFFINITY),
     [node("n1"), node("n2", labels=LABEL, unschedulable=True)], {}, []),
    ("preferred-better-node-exists", [PREFERRED], _pods(PREFERRED_AFFINITY), [node("n1"), node("n2", labels=LABEL)],
     {}, ["p1", "p2", "p3"]),
    ("preferred-already-on-best-node", [PREFERRED], _pods(PREFERRED_AFFINITY, "n2"),
     [node("n1"), node("n2", labels=LABEL)], {}, []),
    ("required-type-ignores-preferred-pods", [REQUIRED], _pods(PREFERRED_AFFINITY),
     [node("n1"), node("n2", labels=LABEL)], {}, []),
]  # fmt: skip


@pytest.mark.parametrize(("types", "pods", "nodes", "limits", "expected"), [c[1:] for c in AFFINITY_CASES],
                         ids=[c[0] for c in AFFINITY_CASES])  # fmt: skip
def test_node_affinity(
    types: list[str], pods: list[Any], nodes: list[Any], limits: dict[str, Any], expected: list[str]
) -> None:
    harness = Harness(nodes, pods, **limits)
    assert harness.run(RemovePodsViolatingNodeAffinity, parse_args({"nodeAffinityType": types})) == expected


def test_node_affinity_validation() -> None:
    assert validate(parse_args({})) == ["nodeAffinityType needs to be set"]


def _anti(value: str) -> dict[str, Any]:
    return {"podAntiAffinity": {REQUIRED: [{"labelSelector": {"matchExpressions": [
        {"key": "foo", "operator": "In", "values": [value]}]}, "topologyKey": "region"}]}}  # fmt: skip


ANTI_CASES = [
    ("lower-priority-of-two-violators-evicted",
     [pod("p1", node_name="n1", labels={"foo": "bar"}, affinity=_anti("bar"), priority=100),
      pod("p2", node_name="n1", labels={"foo": "bar"}, affinity=_anti("bar"), priority=200)],
     [node("n1", labels={"region": "main"}), node("n2", labels={"region": "main"})], {}, ["p1"]),
    ("violator-on-another-node-in-the-same-region",
     [pod("p1", node_name="n1", labels={"foo": "bar"}, affinity=_anti("bar")), pod("p2", node_name="n2",
      labels={"foo": "bar"})], [node("n1", labels={"region": "main"}), node("n2", labels={"region": "main"})],
     {}, ["p1"]),
    ("different-regions-no-violation",
     [pod("p1", node_name="n1", labels={"foo": "bar"}, affinity=_anti("bar")), pod("p2", node_name="n2",
      labels={"foo": "bar"})], [node("n1", labels={"region": "a"}), node("n2", labels={"region": "b"})], {}, []),
    ("selector-does-not-match",
     [pod("p1", node_name="n1", labels={"foo": "bar"}, affinity=_anti("baz")), pod("p2", node_name="n1",
      labels={"foo": "bar"})], [node("n1", labels={"region": "main"}), node("n2")], {}, []),
    ("maxNoOfPodsToEvictTotal",
     [pod(f"p{i}", node_name="n1", labels={"foo": "bar"}, affinity=_anti("bar")) for i in range(1, 4)],
     [node("n1", labels={"region": "main"}), node("n2")], {"max_total": 1}, ["p1"]),
]  # fmt: skip


@pytest.mark.parametrize(("pods", "nodes", "limits", "expected"), [c[1:] for c in ANTI_CASES],
                         ids=[c[0] for c in ANTI_CASES])  # fmt: skip
def test_inter_pod_anti_affinity(
    pods: list[Any], nodes: list[Any], limits: dict[str, Any], expected: list[str]
) -> None:
    harness = Harness(nodes, pods, evictor_args=DefaultEvictorArgs(), **limits)
    assert harness.run(RemovePodsViolatingInterPodAntiAffinity, anti_args({})) == expected
