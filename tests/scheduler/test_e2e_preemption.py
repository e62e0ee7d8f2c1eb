"""End to end over the local transport: priority and preemption on the seeds' 3-node cluster (issue 7's
acceptance: a high-priority pod preempts lower-priority pods — victims gone, nominatedNodeName set, then bound).

There is no kubelet here: the test finishes a victim's graceful deletion itself (delete with grace 0), as the
kubelet does once the containers have stopped."""

from __future__ import annotations

from typing import Any

from kubeplane.client.interface import Obj
from tests.scheduler.test_e2e_local import Cluster, cluster, pod

__all__ = ["cluster"]  # the fixture, re-exported for pytest


async def _priority_classes(c: Cluster) -> None:
    res = c.client.resource("priorityclasses")
    for name, value, policy in (
        ("low", 100, "PreemptLowerPriority"),
        ("high", 1000, "PreemptLowerPriority"),
        ("high-never", 1000, "Never"),
    ):
        obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
        await c.client.create(res, {**obj, "value": value, "preemptionPolicy": policy})


async def _fill_workers(c: Cluster) -> dict[str, list[str]]:
    """Two low-priority pods of 1500m on each worker (4 CPUs): 1 CPU left on each."""
    placed: dict[str, list[str]] = {}
    for i in range(4):
        worker = "node01" if i < 2 else "node02"
        await c.create(
            pod(f"low-{i}", cpu="1500m", priorityClassName="low", nodeSelector={"kubernetes.io/hostname": worker})
        )
        placed.setdefault(await c.node_of(f"low-{i}"), []).append(f"low-{i}")
    return placed


async def _nominated(c: Cluster, name: str) -> str:
    async def check() -> str:
        return str((await c.get_pod(name)).get("status", {}).get("nominatedNodeName") or "")

    return str(await c.wait_for(f"{name} to be nominated", check))


async def test_high_priority_pod_preempts_one_low_priority_pod_then_binds(cluster: Cluster) -> None:
    await _priority_classes(cluster)
    placed = await _fill_workers(cluster)
    high = await cluster.create(pod("high", cpu="2", priorityClassName="high"))
    assert high["spec"]["priority"] == 1000

    node = await _nominated(cluster, "high")
    assert node in ("node01", "node02")
    await cluster.scheduler.wait_for_bindings()

    async def deleting() -> list[Obj]:
        pods = [await cluster.get_pod(name) for name in placed[node]]
        return [p for p in pods if p["metadata"].get("deletionTimestamp")]

    victims = await cluster.wait_for("a victim to be deleting", deleting)
    assert len(victims) == 1  # one 1500m pod must go for 2 CPUs; the other is reprieved
    victim = victims[0]
    target = [c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert [(c["status"], c["reason"], c["message"]) for c in target] == [
        ("True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
    ]

    async def preempted_event() -> list[Obj]:
        return [e for e in await cluster.events_for(victim["metadata"]["name"]) if e["reason"] == "Preempted"]

    events = await cluster.wait_for("Preempted event", preempted_event)
    assert events[0]["message"] == f"Preempted by pod {high['metadata']['uid']} on node {node}"
    assert (await cluster.get_pod("high"))["spec"].get("nodeName") is None  # the victim still holds its CPUs

    # The kubelet would now finish the deletion; the preemptor then lands on its nominated node.
    await cluster.client.delete(cluster.pods, victim["metadata"]["name"], namespace="default", grace_period_seconds=0)
    assert await cluster.node_of("high") == node
    survivors = [await cluster.get_pod(n) for n in placed[node] if n != victim["metadata"]["name"]]
    assert [p["metadata"].get("deletionTimestamp") for p in survivors] == [None]
    other = "node02" if node == "node01" else "node01"
    untouched = [await cluster.get_pod(n) for n in placed[other]]
    assert [p["metadata"].get("deletionTimestamp") for p in untouched] == [None, None]


async def test_preemption_policy_never_stays_pending_without_evicting(cluster: Cluster) -> None:
    await _priority_classes(cluster)
    placed = await _fill_workers(cluster)
    await cluster.create(pod("polite", cpu="2", priorityClassName="high-never"))
    message = await cluster.failed_message("polite")
    assert message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.."
    )
    pods: list[dict[str, Any]] = [await cluster.get_pod(n) for names in placed.values() for n in names]
    assert not any(p["metadata"].get("deletionTimestamp") for p in pods)
    assert not (await cluster.get_pod("polite")).get("status", {}).get("nominatedNodeName")


async def test_equal_priority_finds_no_victims(cluster: Cluster) -> None:
    await _priority_classes(cluster)
    await _fill_workers(cluster)
    await cluster.create(pod("peer", cpu="2", priorityClassName="low"))
    message = await cluster.failed_message("peer")
    assert message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, "
        "2 No preemption victims found for incoming pod.."
    )
