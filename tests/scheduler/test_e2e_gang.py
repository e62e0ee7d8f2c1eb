"""Gang scheduling end to end (issue 25's acceptance): with room for 3 pods, a PodGroup of minCount 4 binds none
- three pods wait at Permit, the fourth does not fit - and after upstream's 5-minute Permit timeout they are
rejected with upstream's message (waiting_pods_map.go: ``rejected due to timeout after waiting 5m0s at plugin
GangScheduling``) and their nodes freed; adding a node lets all four bind together. Time is the injected clock."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from kubeplane.client.clock import FakeClock
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import parse_config
from kubeplane.scheduler.scheduler import Scheduler

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
GANG_CONFIG = {**HEADER, "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}}]}


def node(name: str, cpu: str = "3") -> Obj:
    capacity = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def gang_pod(name: str, group: str = "train") -> Obj:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [container], "schedulingGroup": {"podGroupName": group}},
    }


def pod_group(name: str, min_count: int, version: str = "v1beta1") -> Obj:
    return {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


async def _settle(clock: FakeClock, rounds: int = 60) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0.01)


async def _pods(client: LocalClient) -> list[dict[str, Any]]:
    return list((await client.list(client.resource("pods"), namespace="default"))["items"])


async def _wait_for(client: LocalClient, check: Any, tries: int = 500) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = []
    for _ in range(tries):
        pods = await _pods(client)
        if check(pods):
            return pods
        await asyncio.sleep(0.01)
    return pods


def _bound(pods: list[dict[str, Any]]) -> list[str]:
    return sorted(p["metadata"]["name"] for p in pods if p["spec"].get("nodeName"))


def _messages(pods: list[dict[str, Any]]) -> set[str]:
    out = set()
    for p in pods:
        for c in p.get("status", {}).get("conditions") or []:
            if c["type"] == "PodScheduled" and c["status"] == "False":
                out.add(c["message"])
    return out


async def test_gang_of_four_binds_none_with_room_for_three_then_all_after_a_node_is_added() -> None:
    client = await LocalClient.in_memory()
    await client.create(client.resource("nodes"), node("node01"))
    clock = FakeClock()
    scheduler = Scheduler(client, config=parse_config(GANG_CONFIG), clock=clock, rng=random.Random(1))
    task = asyncio.ensure_future(scheduler.run())
    try:
        # created at v1alpha3: the scheduler's informer (v1beta1) sees the same stored object
        v1alpha3 = client.resource("podgroups.v1alpha3.scheduling.k8s.io")
        await client.create(v1alpha3, pod_group("train", 4, "v1alpha3"), namespace="default")
        for i in range(4):
            await client.create(client.resource("pods"), gang_pod(f"worker-{i}"), namespace="default")

        # Three pods fit and wait at Permit; the fourth is unschedulable; nothing binds.
        for _ in range(500):
            if len(scheduler.profiles["default-scheduler"].waiting_pods) == 3:
                break
            await asyncio.sleep(0.01)
        fwk = scheduler.profiles["default-scheduler"]
        assert len(fwk.waiting_pods) == 3
        await _settle(clock)
        assert _bound(await _pods(client)) == []

        # Upstream's 5-minute Permit timeout: all three rejected with upstream's message, nodes freed.
        await clock.advance(300)
        pods = await _wait_for(
            client,
            lambda ps: any(
                "rejected due to timeout after waiting 5m0s at plugin GangScheduling" in m for m in _messages(ps)
            ),
        )
        assert "0/1 nodes are available: 1 rejected due to timeout after waiting 5m0s at plugin GangScheduling." in (
            _messages(pods)
        )
        assert _bound(pods) == []

        # Room for a fourth pod: the whole gang binds together.
        await client.create(client.resource("nodes"), node("node02", cpu="1"))
        for _ in range(20):
            pods = await _wait_for(client, lambda ps: len(_bound(ps)) == 4, tries=50)
            if len(_bound(pods)) == 4:
                break
            await clock.advance(1)
        assert _bound(pods) == [f"worker-{i}" for i in range(4)]
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_pre_enqueue_holds_pods_until_min_count_exist() -> None:
    """upstream TestGangScheduling PreEnqueue "pod group with fewer than minCount pods": held, never attempted."""
    client = await LocalClient.in_memory()
    await client.create(client.resource("nodes"), node("node01", cpu="8"))
    clock = FakeClock()
    scheduler = Scheduler(client, config=parse_config(GANG_CONFIG), clock=clock, rng=random.Random(1))
    task = asyncio.ensure_future(scheduler.run())
    try:
        await client.create(client.resource("podgroups"), pod_group("g", 3), namespace="default")
        for i in range(2):
            await client.create(client.resource("pods"), gang_pod(f"p-{i}", "g"), namespace="default")
        await _settle(clock)
        assert scheduler.queue.pending_pod_counts()["gated"] == 2
        assert _bound(await _pods(client)) == []
        await client.create(client.resource("pods"), gang_pod("p-2", "g"), namespace="default")
        pods = await _wait_for(client, lambda ps: len(_bound(ps)) == 3)
        assert _bound(pods) == ["p-0", "p-1", "p-2"]
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
