"""The example out-of-tree plugins (``examples/scheduler-plugins``): args and Filter semantics, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.validation import field as fielderr
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState
from kubeplane.scheduler.framework.plugin_args import decode_args
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane_example_plugins import (
    CheckPodCountLimit,
    CheckPodCountLimitArgs,
    CheckPodLimitResources,
    CheckPodLimitResourcesArgs,
)
from tests.examples.example_dist import REINSTALL, declared_entry_points, installed_entry_points

ARGS = fielderr.new_path("args")


def _pod(name: str, *, phase: str | None = "Running", limits: dict[str, str] | None = None, **extra: Any) -> PodInfo:
    container: dict[str, Any] = {"name": "c", "image": "nginx"}
    if limits is not None:
        container["resources"] = {"limits": limits}
    spec: dict[str, Any] = {"containers": [container], **extra}
    pod: dict[str, Any] = {"metadata": {"name": name, "namespace": "default", "uid": name}, "spec": spec}
    if phase is not None:
        pod["status"] = {"phase": phase}
    return PodInfo(pod)


def _node(pods: list[PodInfo], allocatable: dict[str, str] | None = None) -> NodeInfo:
    alloc = allocatable if allocatable is not None else {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return NodeInfo({"metadata": {"name": "n"}, "status": {"allocatable": alloc}}, pods)


def test_entry_points_are_declared_by_the_distribution() -> None:
    assert installed_entry_points() == declared_entry_points(), f"stale install of the example plugins: {REINSTALL}"
    assert declared_entry_points() == {
        "CheckPodCountLimit": "kubeplane_example_plugins.pod_count_limit:CheckPodCountLimit",
        "CheckPodLimitResources": "kubeplane_example_plugins.pod_limit_resources:CheckPodLimitResources",
        "CheckCSIStorageCapacity": "kubeplane_example_plugins.csi_storage_capacity:CheckCSIStorageCapacity",
        "LvmVolumeCapacity": "kubeplane_example_plugins.lvm_volume_capacity:LvmVolumeCapacity",
    }


# --- CheckPodCountLimit ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "errors"),
    [
        ({"podCountLimit": 0}, []),
        ({"podCountLimit": 3}, []),
        ({}, ["args.podCountLimit: Required value"]),
        ({"podCountLimit": "2"}, ['args.podCountLimit: Invalid value: "2": must be of type integer']),
        ({"podCountLimit": 1.5}, ["args.podCountLimit: Invalid value: 1.5: must be of type integer"]),
        ({"podCountLimit": -1}, ["args.podCountLimit: Invalid value: -1: must be greater than or equal to 0"]),
        ({"podCountLimit": 1, "max": 2}, ['strict decoding error: unknown field "args.max"']),
    ],
)
def test_pod_count_limit_args(raw: dict[str, Any], errors: list[str]) -> None:
    assert decode_args(CheckPodCountLimitArgs, raw, ARGS)[1] == errors


@pytest.mark.parametrize(
    ("limit", "phases", "rejected"),
    [
        (2, [], False),
        (2, ["Running"], False),
        (2, ["Running", "Running"], True),
        (2, ["Running", "Pending"], True),
        (2, ["Running", None], True),  # a pod without a phase yet (just bound) counts
        (2, ["Running", "Succeeded", "Failed"], False),  # terminal pods do not
        (2, ["Running", "Running", "Running"], True),
        (0, [], True),
        (1, ["Failed"], False),
    ],
)
def test_pod_count_limit_filter(limit: int, phases: list[str | None], rejected: bool) -> None:
    plugin = CheckPodCountLimit(CheckPodCountLimitArgs(limit), Handle())
    node = _node([_pod(f"p{i}", phase=phase) for i, phase in enumerate(phases)])
    status = plugin.filter(CycleState(), _pod("new", phase=None), node)
    if not rejected:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE
        assert status.reasons == (f"node(s) already run {limit} pods (podCountLimit)",)


# --- CheckPodLimitResources -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "errors"),
    [
        ({"limitRatio": {"cpu": 0.7, "memory": 1}}, []),
        ({}, ["args.limitRatio: Required value"]),
        ({"limitRatio": {}}, ["args.limitRatio: Invalid value: {}: must name at least one resource"]),
        ({"limitRatio": {"cpu": "high"}}, ['args.limitRatio[cpu]: Invalid value: "high": must be of type number']),
        ({"limitRatio": {"cpu": 0}}, ["args.limitRatio[cpu]: Invalid value: 0.0: must be greater than 0"]),
        ({"limitRatio": {"cpu": -0.5}}, ["args.limitRatio[cpu]: Invalid value: -0.5: must be greater than 0"]),
        ({"limitRatio": 0.7}, ["args.limitRatio: Invalid value: 0.7: must be of type object"]),
    ],
)
def test_pod_limit_resources_args(raw: dict[str, Any], errors: list[str]) -> None:
    assert decode_args(CheckPodLimitResourcesArgs, raw, ARGS)[1] == errors


@pytest.mark.parametrize(
    ("ratios", "placed", "new", "allocatable", "reasons"),
    [
        # 4 cpu allocatable, ratio 0.7: pod cpu limits may add up to 2800m.
        ({"cpu": 0.7}, [{"cpu": "1"}], {"cpu": "1800m"}, None, []),
        (
            {"cpu": 0.7},
            [{"cpu": "1"}],
            {"cpu": "1801m"},
            None,
            ["node(s) would exceed 0.7 of allocatable cpu in pod limits"],
        ),
        ({"cpu": 0.7}, [{"memory": "1Gi"}], {"memory": "100Gi"}, None, []),  # memory is not listed
        # pods without a limit for the resource add nothing
        ({"cpu": 0.7}, [{}], {}, None, []),
        (
            {"cpu": 0.5, "memory": 0.5},
            [{"cpu": "2", "memory": "4Gi"}],
            {"cpu": "1m", "memory": "1"},
            None,
            [
                "node(s) would exceed 0.5 of allocatable cpu in pod limits",
                "node(s) would exceed 0.5 of allocatable memory in pod limits",
            ],
        ),
        ({"memory": 1.5}, [{"memory": "8Gi"}], {"memory": "4Gi"}, None, []),  # overcommit allowed above 1
        (
            {"memory": 1.5},
            [{"memory": "8Gi"}],
            {"memory": "5Gi"},
            None,
            ["node(s) would exceed 1.5 of allocatable memory in pod limits"],
        ),
        # a listed resource the node does not have: allocatable 0, only limit-free pods fit
        ({"example.com/gpu": 1}, [], {}, None, []),
        (
            {"example.com/gpu": 1},
            [],
            {"example.com/gpu": "1"},
            None,
            ["node(s) would exceed 1 of allocatable example.com/gpu in pod limits"],
        ),
        ({"example.com/gpu": 1}, [], {"example.com/gpu": "2"}, {"example.com/gpu": "2"}, []),
    ],
)
def test_pod_limit_resources_filter(
    ratios: dict[str, float],
    placed: list[dict[str, str]],
    new: dict[str, str],
    allocatable: dict[str, str] | None,
    reasons: list[str],
) -> None:
    plugin = CheckPodLimitResources(CheckPodLimitResourcesArgs(ratios), Handle())
    node = _node([_pod(f"p{i}", limits=lim) for i, lim in enumerate(placed)], allocatable)
    status = plugin.filter(CycleState(), _pod("new", phase=None, limits=new), node)
    if not reasons:
        assert status is None
    else:
        assert status is not None
        assert status.code == Code.UNSCHEDULABLE
        assert list(status.reasons) == reasons


def test_pod_limit_resources_ignores_terminal_pods_and_counts_overhead() -> None:
    plugin = CheckPodLimitResources(CheckPodLimitResourcesArgs({"cpu": 0.5}), Handle())
    done = _pod("done", phase="Succeeded", limits={"cpu": "4"})
    node = _node([done])
    assert plugin.filter(CycleState(), _pod("new", phase=None, limits={"cpu": "2"}), node) is None
    with_overhead = _pod("oh", phase=None, limits={"cpu": "2"}, overhead={"cpu": "1m"})
    status = plugin.filter(CycleState(), with_overhead, node)
    assert status is not None
    assert status.reasons == ("node(s) would exceed 0.5 of allocatable cpu in pod limits",)
