"""PodLifeTime, RemoveFailedPods, RemovePodsHavingTooManyRestarts and RemoveDuplicates, translated from upstream's
``TestPodLifeTime``, ``TestRemoveFailedPods``, ``TestRemovePodsHavingTooManyRestarts`` and
``TestFindDuplicatePods`` (v0.36); ages are relative to the harness clock."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.descheduler.evictor import DefaultEvictorArgs
from kubeplane.descheduler.plugins import duplicates, pod_state
from tests.descheduler.builders import Harness, node, pod

NODES = [node("n1"), node("n2")]


def _terminated(reason: str, code: int = 1) -> dict[str, Any]:
    return {"containerStatuses": [{"name": "c", "state": {"terminated": {"reason": reason, "exitCode": code}}}]}


def _with_status(p: dict[str, Any], **status: Any) -> dict[str, Any]:
    p["status"] = {**p["status"], **status}
    return p


LIFETIME_CASES = [
    ("older-than-max-evicted-oldest-first", [pod("young", node_name="n1", age=60), pod("old", node_name="n1", age=700),
     pod("older", node_name="n2", age=900)], {"maxPodLifeTimeSeconds": 600}, {}, ["older", "old"]),
    ("states-phase", [pod("a", node_name="n1", phase="Pending"), pod("b", node_name="n1")], {"states": ["Pending"]},
     {}, ["a"]),
    ("states-container-reason", [_with_status(pod("a", node_name="n1"), **_terminated("OOMKilled")),
     pod("b", node_name="n1")], {"states": ["OOMKilled"]}, {}, ["a"]),
    ("ownerKinds-exclude", [pod("a", node_name="n1", age=900, owner="Job"), pod("b", node_name="n1", age=900)],
     {"maxPodLifeTimeSeconds": 600, "ownerKinds": {"exclude": ["Job"]}}, {}, ["b"]),
    ("maxNoOfPodsToEvictPerNode-skips-only-that-pod", [pod("a", node_name="n1", age=900),
     pod("b", node_name="n1", age=800), pod("c", node_name="n2", age=700)], {"maxPodLifeTimeSeconds": 600},
     {"max_per_node": 1}, ["a", "c"]),
    ("exitCodes", [_with_status(pod("a", node_name="n1"), **_terminated("Error", 137)), pod("b", node_name="n1")],
     {"exitCodes": [137]}, {}, ["a"]),
]  # fmt: skip


@pytest.mark.parametrize(("pods", "args", "limits", "expected"), [c[1:] for c in LIFETIME_CASES],
                         ids=[c[0] for c in LIFETIME_CASES])  # fmt: skip
def test_pod_lifetime(pods: list[Any], args: dict[str, Any], limits: dict[str, Any], expected: list[str]) -> None:
    assert Harness(NODES, pods, **limits).run(pod_state.PodLifeTime, pod_state.parse_lifetime_args(args)) == expected


FAILED_CASES = [
    ("failed-pod-evicted-after-default-min-lifetime", [pod("a", node_name="n1", phase="Failed", age=4000),
     pod("b", node_name="n1", phase="Failed", age=100), pod("c", node_name="n1")], {}, ["a"]),
    ("minPodLifetimeSeconds-0", [pod("b", node_name="n1", phase="Failed", age=100)],
     {"minPodLifetimeSeconds": 0}, ["b"]),
    ("reasons-match-container", [_with_status(pod("a", node_name="n1", phase="Failed"), **_terminated("NodeAffinity")),
     _with_status(pod("b", node_name="n1", phase="Failed"), **_terminated("OOMKilled"))],
     {"minPodLifetimeSeconds": 0, "reasons": ["NodeAffinity"]}, ["a"]),
    ("reasons-match-pod-reason", [_with_status(pod("a", node_name="n1", phase="Failed"), reason="Evicted")],
     {"minPodLifetimeSeconds": 0, "reasons": ["Evicted"]}, ["a"]),
    ("excludeOwnerKinds", [pod("a", node_name="n1", phase="Failed", owner="Job", age=4000)],
     {"excludeOwnerKinds": ["Job"]}, []),
]  # fmt: skip


@pytest.mark.parametrize(("pods", "args", "expected"), [c[1:] for c in FAILED_CASES], ids=[c[0] for c in FAILED_CASES])
def test_remove_failed_pods(pods: list[Any], args: dict[str, Any], expected: list[str]) -> None:
    assert Harness(NODES, pods).run(pod_state.RemoveFailedPods, pod_state.parse_failed_args(args)) == expected


def _restarts(name: str, count: int, *, waiting: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"name": "c", "restartCount": count, "state": {}}
    if waiting:
        status["state"] = {"waiting": {"reason": waiting}}
    return _with_status(pod(name, node_name="n1"), containerStatuses=[status])


RESTART_CASES = [
    ("over-threshold-most-restarted-first", [_restarts("a", 30), _restarts("b", 50), _restarts("c", 1)],
     {"podRestartThreshold": 25}, ["b", "a"]),
    ("states-CrashLoopBackOff", [_restarts("a", 30, waiting="CrashLoopBackOff"), _restarts("b", 30)],
     {"podRestartThreshold": 25, "states": ["CrashLoopBackOff"]}, ["a"]),
]  # fmt: skip


@pytest.mark.parametrize(("pods", "args", "expected"), [c[1:] for c in RESTART_CASES],
                         ids=[c[0] for c in RESTART_CASES])  # fmt: skip
def test_too_many_restarts(pods: list[Any], args: dict[str, Any], expected: list[str]) -> None:
    plugin = pod_state.RemovePodsHavingTooManyRestarts
    assert Harness(NODES, pods).run(plugin, pod_state.parse_restarts_args(args)) == expected


@pytest.mark.parametrize(
    ("plugin", "raw", "errors"),
    [
        ("restarts", {}, ["invalid PodsHavingTooManyRestarts threshold"]),
        ("restarts", {"podRestartThreshold": 1, "states": ["Pending"]},
         ["states must be one of [CrashLoopBackOff Running]"]),
        ("lifetime", {"states": ["Bogus"]},
         ["states must be one of [" + " ".join(sorted(pod_state.LIFETIME_STATES)) + "]"]),
        ("lifetime", {"maxPodLifeTimeSeconds": 1, "ownerKinds": {"include": ["a"], "exclude": ["b"]}},
         ["only one of Include/Exclude ownerKinds can be set"]),
    ],
    ids=["restart-threshold-below-1", "restart-states", "lifetime-states", "lifetime-owner-kinds"],
)  # fmt: skip
def test_validation(plugin: str, raw: dict[str, Any], errors: list[str]) -> None:
    if plugin == "restarts":
        assert pod_state.validate_restarts(pod_state.parse_restarts_args(raw)) == errors
    else:
        assert pod_state.validate_lifetime(pod_state.parse_lifetime_args(raw)) == errors


DUPLICATE_CASES = [
    ("three-duplicates-on-one-node-of-two", [pod(f"p{i}", node_name="n1") for i in range(1, 4)], NODES, {},
     ["p3"]),  # 3 pods over 2 nodes: share ceil(3/2) = 2, so one of the two duplicates goes
    ("different-images-are-not-duplicates", [pod("p1", node_name="n1"), pod("p2", node_name="n1", image="redis")],
     NODES, {}, []),
    ("no-second-target-node", [pod(f"p{i}", node_name="n1") for i in range(1, 4)],
     [node("n1"), node("n2", taints=[{"key": "k", "effect": "NoSchedule"}])], {}, []),
    ("excludeOwnerKinds", [pod(f"p{i}", node_name="n1") for i in range(1, 4)], NODES,
     {"excludeOwnerKinds": ["ReplicaSet"]}, []),
    ("bare-pods-ignored", [pod(f"p{i}", node_name="n1", owner=None) for i in range(1, 4)], NODES, {}, []),
]  # fmt: skip


@pytest.mark.parametrize(("pods", "nodes", "args", "expected"), [c[1:] for c in DUPLICATE_CASES],
                         ids=[c[0] for c in DUPLICATE_CASES])  # fmt: skip
def test_remove_duplicates(pods: list[Any], nodes: list[Any], args: dict[str, Any], expected: list[str]) -> None:
    harness = Harness(nodes, pods, evictor_args=DefaultEvictorArgs())
    assert harness.run(duplicates.RemoveDuplicates, duplicates.parse_args(args)) == expected
