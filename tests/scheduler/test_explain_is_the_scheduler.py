"""Explain runs the scheduler's own cycle: on random clusters, for every scheduler profile in the repository's
examples, the node ``explain`` selects is the node a running Scheduler (same seed, same objects, over the local
transport) binds the pod to, and when explain says the pod fits nowhere the scheduler's FailedScheduling
condition carries explain's message (upstream: one schedulePod for both; there is no second algorithm).

Clusters reach past 100 nodes so that percentageOfNodesToScore sampling (numFeasibleNodesToFind) and the
seeded tie-break both decide some of the cases.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import KubeSchedulerConfiguration, default_config, load_config
from kubeplane.scheduler.explain import explain
from kubeplane.scheduler.scheduler import Scheduler

ROOT = Path(__file__).resolve().parents[2]
CONFIG_FILES = (
    "examples/sim/default.yaml",
    "examples/sim/fgd.yaml",
    "examples/sim/least-allocated.yaml",
    "examples/sim/most-allocated.yaml",
    "examples/seeds/custom-scheduler-config.yaml",
    "examples/seeds/scheduler-config-002.yaml",
)
ZONES = ("a", "b", "c")


def _profiles() -> list[tuple[str, KubeSchedulerConfiguration, str]]:
    out = [("default", default_config(), "default-scheduler")]
    for name in CONFIG_FILES:
        config = load_config(ROOT / name)
        out += [(name, config, p.scheduler_name) for p in config.profiles]
    return out


PROFILES = _profiles()


@st.composite
def clusters(draw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    n = draw(st.sampled_from([1, 3, 8, 40, 120]))
    nodes = []
    for i in range(n):
        cpu = draw(st.sampled_from(["2", "4"]))
        capacity = {"cpu": cpu, "memory": draw(st.sampled_from(["4Gi", "8Gi"])), "pods": "20"}
        spec: dict[str, Any] = {}
        if draw(st.integers(0, 9)) == 0:
            spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
        labels = {"zone": draw(st.sampled_from(ZONES)), "kubernetes.io/hostname": f"n{i:03d}"}
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i:03d}", "labels": labels},
                "spec": spec,
                "status": {"capacity": capacity, "allocatable": capacity},
            }
        )
    placed = []
    for j in range(draw(st.integers(0, min(2 * n, 30)))):
        cpu = draw(st.sampled_from(["500m", "1", "2"]))
        placed.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"e{j}", "namespace": "default", "labels": {"app": "web"}},
                "spec": {
                    "nodeName": f"n{draw(st.integers(0, n - 1)):03d}",
                    "containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}],
                },
            }
        )
    spec = {
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "resources": {"requests": {"cpu": draw(st.sampled_from(["100m", "1500m", "3"]))}},
            }
        ]
    }
    if draw(st.booleans()):
        spec["nodeSelector"] = {"zone": draw(st.sampled_from(ZONES))}
    if draw(st.booleans()):
        term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
        spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": term}
        ]}}  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    return nodes, placed, pod


async def _scheduled(
    config: KubeSchedulerConfiguration, nodes: list[dict[str, Any]], placed: list[dict[str, Any]], pod: Any
) -> tuple[str, str]:
    """(node the scheduler bound the pod to, "") or ("", its FailedScheduling message)."""
    client = await LocalClient.in_memory()
    pods = client.resource("pods")
    for node in nodes:
        await client.create(client.resource("nodes"), node)
    for p in placed:
        await client.create(pods, p, namespace="default")
    scheduler = Scheduler(client, config=config, rng=random.Random(7))
    task = asyncio.ensure_future(scheduler.run())
    try:
        await scheduler.start()
        await client.create(pods, pod, namespace="default")
        for _ in range(1000):
            got = await client.get(pods, "p", namespace="default")
            if got["spec"].get("nodeName"):
                return str(got["spec"]["nodeName"]), ""
            for c in (got.get("status") or {}).get("conditions") or ():
                if c.get("type") == "PodScheduled" and c.get("status") == "False":
                    return "", str(c.get("message"))
            await asyncio.sleep(0.01)
        raise AssertionError("the scheduler neither bound the pod nor reported why")
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize(("source", "config", "profile"), PROFILES, ids=[f"{s}:{p}" for s, _, p in PROFILES])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cluster=clusters())
def test_explain_selects_the_node_the_scheduler_binds(
    source: str, config: KubeSchedulerConfiguration, profile: str, cluster: Any
) -> None:
    nodes, placed, pod = cluster
    pod = {**pod, "spec": {**pod["spec"], "schedulerName": profile}}
    answer = explain(pod, nodes=nodes, pods=placed, config=config, seed=7)
    bound, message = asyncio.run(_scheduled(config, nodes, placed, pod))
    assert not answer.get("mismatches")
    if answer["selected"] is None:
        assert bound == "", f"explain: unschedulable ({answer['message']}); the scheduler bound it to {bound}"
        assert message == answer["message"]
    else:
        assert bound == answer["selected"], f"explain selected {answer['selected']}; the scheduler: {bound or message}"
