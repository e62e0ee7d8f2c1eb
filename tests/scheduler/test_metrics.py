"""The scheduler's Prometheus metrics, end to end over the local transport, each test on its own registry."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from kubeplane.client.local import LocalClient
from kubeplane.metrics import SchedulerMetrics, exposition
from kubeplane.scheduler.scheduler import Scheduler
from tests.scheduler.test_e2e_local import CONTROL_PLANE_TAINT, Cluster, node, pod
from tests.scheduler.test_e2e_preemption import _fill_workers, _nominated, _priority_classes

PROFILE = "default-scheduler"


class MetricsCluster(Cluster):
    def __init__(self, client: LocalClient, scheduler: Scheduler, registry: CollectorRegistry) -> None:
        super().__init__(client, scheduler)
        self.registry = registry

    def value(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0

    async def wait_value(self, name: str, expect: float, **labels: str) -> None:
        async def check() -> bool:
            return self.value(name, **labels) == expect

        await self.wait_for(f"{name}{labels} == {expect}", check)


@pytest.fixture
async def mcluster() -> AsyncIterator[MetricsCluster]:
    client = await LocalClient.in_memory()
    for n in (node("master", taints=[CONTROL_PLANE_TAINT]), node("node01"), node("node02", zone="zone-b")):
        await client.create(client.resource("nodes"), n)
    registry = CollectorRegistry()
    scheduler = Scheduler(client, rng=random.Random(0), metrics_registry=registry)
    task = asyncio.ensure_future(scheduler.run())
    try:
        yield MetricsCluster(client, scheduler, registry)
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_scheduled_pods_count_attempts_and_extension_points(mcluster: MetricsCluster) -> None:
    for i in range(12):
        await mcluster.create(pod(f"p{i}"))
    for i in range(12):
        await mcluster.node_of(f"p{i}")
    await mcluster.scheduler.wait_for_bindings()
    c = mcluster
    assert c.value("scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 12
    assert c.value("scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE) == 0
    assert c.value("scheduler_scheduling_attempt_duration_seconds_count", result="scheduled", profile=PROFILE) == 12
    assert c.value("scheduler_scheduling_attempt_duration_seconds_sum", result="scheduled", profile=PROFILE) > 0
    point = "scheduler_framework_extension_point_duration_seconds_count"
    for ext in ("PreFilter", "PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"):
        assert c.value(point, extension_point=ext, status="Success", profile=PROFILE) == 12, ext
    # every 10th cycle is sampled for per-plugin durations
    plugin = "scheduler_plugin_execution_duration_seconds_count"
    assert c.value(plugin, plugin="NodeResourcesFit", extension_point="PreFilter", status="Success") == 1
    assert c.value(plugin, plugin="DefaultBinder", extension_point="Bind", status="Success") == 1
    for queue in ("active", "backoff", "unschedulable", "gated"):
        assert c.value("scheduler_pending_pods", queue=queue) == 0
    text = exposition(c.registry).decode()
    assert "# TYPE scheduler_schedule_attempts_total counter" in text
    assert "_created" not in text


async def test_unschedulable_and_gated_pods_are_pending(mcluster: MetricsCluster) -> None:
    await mcluster.create(pod("huge", cpu="64"))
    await mcluster.create(pod("gated", schedulingGates=[{"name": "example.com/wait"}]))
    await mcluster.wait_value("scheduler_schedule_attempts_total", 1, result="unschedulable", profile=PROFILE)
    await mcluster.wait_value("scheduler_pending_pods", 1, queue="unschedulable")
    await mcluster.wait_value("scheduler_pending_pods", 1, queue="gated")
    assert mcluster.value("scheduler_pending_pods", queue="active") == 0
    assert mcluster.value("scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == 0
    point = "scheduler_framework_extension_point_duration_seconds_count"
    assert mcluster.value(point, extension_point="PreFilter", status="Success", profile=PROFILE) == 1
    # upstream: UnschedulableAndUnresolvable for no node, Unschedulable otherwise; here no preemption helps
    assert mcluster.value(point, extension_point="PostFilter", status="Unschedulable", profile=PROFILE) == 1
    assert mcluster.value("scheduler_preemption_attempts_total") == 1
    assert mcluster.value("scheduler_preemption_victims_count") == 0


async def test_preemption_counts_attempts_and_victims(mcluster: MetricsCluster) -> None:
    await _priority_classes(mcluster)
    await _fill_workers(mcluster)
    await mcluster.create(pod("high", cpu="2", priorityClassName="high"))
    await _nominated(mcluster, "high")
    await mcluster.scheduler.wait_for_bindings()
    assert mcluster.value("scheduler_preemption_attempts_total") >= 1
    assert mcluster.value("scheduler_preemption_victims_count") == 1
    assert mcluster.value("scheduler_preemption_victims_sum") == 1
    assert mcluster.value("scheduler_preemption_victims_bucket", le="1.0") == 1
    assert mcluster.value("scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE) >= 1


async def test_schedulers_sharing_a_registry_share_its_metrics() -> None:
    registry = CollectorRegistry()
    first = await LocalClient.in_memory()
    second = await LocalClient.in_memory()
    a = Scheduler(first, metrics_registry=registry)
    b = Scheduler(second, metrics_registry=registry)
    assert a.metrics is b.metrics is SchedulerMetrics.for_registry(registry)
    assert registry.get_sample_value("scheduler_pending_pods", {"queue": "active"}) == 0
