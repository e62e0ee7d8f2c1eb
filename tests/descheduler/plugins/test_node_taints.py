"""RemovePodsViolatingNodeTaints, translated from upstream's ``TestDeletePodsViolatingNodeTaints``
(pkg/framework/plugins/removepodsviolatingnodetaints/node_taint_test.go, v0.36)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.descheduler.args import ArgsError
from kubeplane.descheduler.evictor import DefaultEvictorArgs
from kubeplane.descheduler.plugins.node_taints import RemovePodsViolatingNodeTaints, parse_args, validate
from kubeplane.descheduler.podutil import SYSTEM_CRITICAL_PRIORITY
from tests.descheduler.builders import Harness, node, pod, taint, toleration

T1 = taint("testTaint1", "test1")
TESTING1 = taint("testingTaint1", "testing1")
PREFER1 = taint("testTaint1", "test1", "PreferNoSchedule")
TOL1 = [toleration("testTaint1", "test1")]
TOLX = [toleration("testTaintX1", "testX1")]
LOCAL = [{"name": "v", "hostPath": {"path": "/x"}}]


def critical(name: str, node_name: str) -> dict[str, Any]:
    return pod(name, node_name=node_name, namespace="kube-system", priority=SYSTEM_CRITICAL_PRIORITY)


def mirror(name: str, node_name: str) -> dict[str, Any]:
    return pod(name, node_name=node_name, annotations={"kubernetes.io/config.mirror": "x"})


CASES = [
    ("not-tolerating-evicted", [pod("p1", node_name="n1", tolerations=TOL1), pod("p2", node_name="n1"),
     pod("p3", node_name="n1", tolerations=TOL1)], [node("n1", taints=[T1])], {}, {}, ["p2"]),
    ("other-toleration-evicted", [pod("p1", node_name="n1", tolerations=TOL1),
     pod("p4", node_name="n1", tolerations=TOLX)], [node("n1", taints=[T1])], {}, {}, ["p4"]),
    ("maxNoOfPodsToEvictTotal", [pod("p5", node_name="n1"), pod("p6", node_name="n1")], [node("n1", taints=[T1])],
     {"max_per_node": 2, "max_total": 1}, {}, ["p5"]),
    ("maxPodsToEvictPerNode", [pod("p5", node_name="n1"), pod("p6", node_name="n1")], [node("n1", taints=[T1])],
     {"max_per_node": 1}, {}, ["p5"]),
    ("maxNoOfPodsToEvictPerNamespace", [pod("p5", node_name="n1"), pod("p6", node_name="n1")],
     [node("n1", taints=[T1])], {"max_per_namespace": 1}, {}, ["p5"]),
    ("critical-daemonset-localstorage-mirror-protected",
     [critical("p7", "n2"), pod("p8", node_name="n2", owner="DaemonSet"), pod("p9", node_name="n2", volumes=LOCAL),
      mirror("p10", "n2")], [node("n2", taints=[TESTING1])], {}, {}, []),
    ("evictLocalStoragePods", [critical("p7", "n2"), pod("p8", node_name="n2", owner="DaemonSet"),
     pod("p9", node_name="n2", volumes=LOCAL), mirror("p10", "n2")], [node("n2", taints=[TESTING1])], {},
     {"evict_local_storage_pods": True}, ["p9"]),
    ("evictSystemCriticalPods", [pod("p2", node_name="n1"), critical("p7", "n2"),
     pod("p9", node_name="n2", volumes=LOCAL), mirror("p10", "n2")],
     [node("n1", taints=[T1]), node("n2", taints=[TESTING1])], {}, {"evict_system_critical_pods": True}, ["p2", "p7"]),
    ("nodeFit-other-node-tainted", [pod("p2", node_name="n1")],
     [node("n1", taints=[T1]), node("n2", taints=[TESTING1])], {}, {"node_fit": True}, []),
    ("nodeFit-other-node-unschedulable", [pod("p2", node_name="n1")],
     [node("n1", taints=[T1]), node("n4", unschedulable=True)], {}, {"node_fit": True}, []),
    ("nodeFit-other-node-too-small", [pod("p2", node_name="n1")],
     [node("n1", taints=[T1]), node("n6", 1, 1, 1, taints=[PREFER1])], {}, {"node_fit": True}, []),
    ("nodeFit-other-node-fits", [pod("p2", node_name="n1")], [node("n1", taints=[T1]), node("n2")],
     {}, {"node_fit": True}, ["p2"]),
]  # fmt: skip

ARG_CASES = [
    ("PreferNoSchedule-ignored-by-default", [pod("p13", node_name="n5")], [node("n5", taints=[PREFER1])], {}, []),
    ("includePreferNoSchedule", [pod("p13", node_name="n5")], [node("n5", taints=[PREFER1])],
     {"includePreferNoSchedule": True}, ["p13"]),
    ("excludedTaints-by-key", [pod("p2", node_name="n1")], [node("n1", taints=[T1])],
     {"excludedTaints": ["excludedTaint1", "testTaint1"]}, []),
    ("excludedTaints-by-key-and-value", [pod("p2", node_name="n1")], [node("n1", taints=[T1])],
     {"excludedTaints": ["testTaint1=test1"]}, []),
    ("excludedTaints-value-differs", [pod("p2", node_name="n1")], [node("n1", taints=[T1])],
     {"excludedTaints": ["testTaint1=test2"]}, ["p2"]),
    ("includedTaints-tolerated", [pod("p1", node_name="n7", tolerations=TOL1)], [node("n7", taints=[T1, TESTING1])],
     {"includedTaints": ["testTaint1=test1"]}, []),
    ("includedTaints-not-on-node", [pod("p2", node_name="n1")], [node("n1", taints=[T1])],
     {"includedTaints": ["testTaint2=test2"]}, []),
    ("includedTaints-violated", [pod("p1", node_name="n1", tolerations=TOL1), pod("p2", node_name="n1")],
     [node("n1", taints=[T1])], {"includedTaints": ["testTaint1=test1"]}, ["p2"]),
    ("all-taints-count-without-includedTaints", [pod("p14", node_name="n7", tolerations=TOL1),
     pod("p15", node_name="n7", tolerations=[*TOL1, toleration("testingTaint1", "testing1")])],
     [node("n7", taints=[T1, TESTING1])], {}, ["p14"]),
]  # fmt: skip


@pytest.mark.parametrize(("pods", "nodes", "limits", "evictor", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_evicts_pods_not_tolerating_their_nodes_taints(
    pods: list[Any], nodes: list[Any], limits: dict[str, Any], evictor: dict[str, Any], expected: list[str]
) -> None:
    harness = Harness(nodes, pods, evictor_args=DefaultEvictorArgs(**evictor), **limits)
    assert harness.run(RemovePodsViolatingNodeTaints, parse_args({})) == expected


@pytest.mark.parametrize(("pods", "nodes", "args", "expected"), [c[1:] for c in ARG_CASES],
                         ids=[c[0] for c in ARG_CASES])  # fmt: skip
def test_taint_selection_args(pods: list[Any], nodes: list[Any], args: dict[str, Any], expected: list[str]) -> None:
    assert Harness(nodes, pods).run(RemovePodsViolatingNodeTaints, parse_args(args)) == expected


@pytest.mark.parametrize(
    ("raw", "errors"),
    [
        ({"excludedTaints": ["a"], "includedTaints": ["b"]},
         ["either includedTaints or excludedTaints can be set, but not both"]),
        ({"namespaces": {"include": ["a"], "exclude": ["b"]}}, ["only one of Include/Exclude namespaces can be set"]),
        ({}, []),
    ],
    ids=["included-and-excluded-taints", "include-and-exclude-namespaces", "empty-args-valid"],
)  # fmt: skip
def test_validation(raw: dict[str, Any], errors: list[str]) -> None:
    assert validate(parse_args(raw)) == errors


def test_unknown_arg_is_a_strict_decoding_error() -> None:
    with pytest.raises(ArgsError, match='strict decoding error: unknown field "excludeTaints"'):
        parse_args({"excludeTaints": ["a"]})


def test_unknown_nested_field_names_its_path() -> None:
    with pytest.raises(ArgsError, match=r'strict decoding error: unknown field "namespaces\.includes"'):
        parse_args({"namespaces": {"includes": ["a"]}})
