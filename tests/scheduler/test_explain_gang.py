"""``kubeplane explain`` on a pod of a gang: the PodGroup's state next to the cycle's verdict.

Pinned to GangScheduling's gates (upstream plugins/gangscheduling, v1.37): PreEnqueue holds a gang's pods until
the PodGroup exists and ``minCount`` pods exist; Permit holds placed pods until ``minCount`` are placed.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from kubeplane.scheduler.explain import explain, render_table
from kubeplane.scheduler.explain_gang import gang_state


def _node(name: str) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": alloc, "allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _pod(name: str, node: str = "", group: str = "g") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        "schedulingGroup": {"podGroupName": group},
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def _group(min_count: int | None) -> dict[str, Any]:
    policy: dict[str, Any] = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"schedulingPolicy": policy},
    }


def test_waiting_at_permit_counts_placed_of_min_count() -> None:
    placed = [_pod(f"p{i}", node="n1") for i in range(3)]
    result = explain(_pod("p3"), nodes=[_node("n1")], pods=placed, objects=[_group(4)])
    gang = result["gang"]
    assert (gang["podGroup"], gang["exists"], gang["minCount"], gang["pods"], gang["placed"], gang["pending"]) == (
        "default/g",
        True,
        4,
        4,
        3,
        1,
    )
    assert gang["message"].startswith("3 of minCount 4 pods placed, 1 pending: pods that fit wait at Permit")
    console = Console(width=200, record=True)
    console.print(render_table(result))
    assert "gang default/g: 3 of minCount 4 pods placed" in console.export_text()


def test_fewer_pods_than_min_count_wait_in_pre_enqueue() -> None:
    gang = gang_state(_pod("p0"), [_pod("p1"), _pod("other", group="h")], [_group(4)])
    assert gang is not None
    assert (gang["pods"], gang["placed"]) == (2, 0)
    assert gang["message"] == "2 of minCount 4 pods exist: they wait in PreEnqueue until 4 exist"


def test_missing_group_and_basic_policy_and_no_group() -> None:
    missing = gang_state(_pod("p0"), [], [])
    assert missing is not None
    assert missing["exists"] is False
    assert "waits in PreEnqueue until it appears" in missing["message"]
    basic = gang_state(_pod("p0"), [], [_group(None)])
    assert basic is not None
    assert (basic["policy"], basic["minCount"]) == ("basic", None)
    plain = _pod("p0")
    del plain["spec"]["schedulingGroup"]
    assert gang_state(plain, [], [_group(4)]) is None


def test_terminal_pods_do_not_count_and_a_full_gang_is_scheduled() -> None:
    done = _pod("done", node="n1")
    done["status"] = {"phase": "Succeeded"}
    bound = [_pod(f"p{i}", node="n1") for i in range(2)]
    gang = gang_state(_pod("p9", node="n1"), [*bound, done], [_group(3)])
    assert gang is not None
    assert (gang["pods"], gang["placed"]) == (3, 3)
    assert gang["message"] == "3 of minCount 3 pods placed: the gang is scheduled"
