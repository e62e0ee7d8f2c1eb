"""The loop end to end on the real API (LocalClient.in_memory, a fake clock) and the fake provider: RunOnce
scales up for unschedulable pods, records upstream's events, writes the status ConfigMap, and scales down an
unneeded node through taint, eviction and the provider."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml

from kubeplane.autoscaler.loop import Autoscaler
from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import NodeGroupSpec
from kubeplane.client.clock import FakeClock
from kubeplane.client.local import LocalClient
from tests.autoscaler.fake_provider import FakeProvider
from tests.autoscaler.objects import pod_object

pytestmark = pytest.mark.asyncio


class Env:
    def __init__(self, client: LocalClient, clock: FakeClock, provider: FakeProvider, autoscaler: Autoscaler) -> None:
        self.client, self.clock, self.provider, self.autoscaler = client, clock, provider, autoscaler

    async def settle(self) -> None:
        for _ in range(30):
            await asyncio.sleep(0)

    async def create_pod(self, pod: dict[str, Any]) -> None:
        pods = self.client.resource("pods")
        status = pod.pop("status", {})
        created = await self.client.create(pods, pod, namespace="default")
        if status:
            merged = {**created, "status": {**created.get("status", {}), **status}}
            await self.client.update(pods, merged, namespace="default", subresource="status")

    async def events(self, reason: str) -> list[dict[str, Any]]:
        await self.autoscaler.recorder.flush()
        listed = await self.client.list(self.client.resource("events"))
        return [e for e in listed["items"] if e.get("reason") == reason]

    async def status(self) -> dict[str, Any]:
        cm = await self.client.get(
            self.client.resource("configmaps"), "cluster-autoscaler-status", namespace="kube-system"
        )
        doc = yaml.safe_load(cm["data"]["status"])
        assert cm["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/last-updated"] == doc["time"]
        return dict(doc)


async def _env(groups: list[NodeGroupSpec], existing: dict[str, int], options: AutoscalerOptions) -> Env:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    provider = FakeProvider(groups, client=client)
    for group, count in existing.items():
        for node in provider.add_existing(group, count):
            await client.create(client.resource("nodes"), node)
    autoscaler = Autoscaler(client, provider=provider, options=options, clock=clock, rng=random.Random(0))
    return Env(client, clock, provider, autoscaler)


@pytest.fixture
async def env(request: pytest.FixtureRequest) -> AsyncIterator[Env]:
    groups, existing, options = request.param
    e = await _env(groups, existing, options)
    await e.autoscaler.start()
    try:
        yield e
    finally:
        await e.autoscaler.stop()
        await e.client.close()


ONE_GROUP = ([NodeGroupSpec("g", 1, 3, {"cpu": "2", "memory": "4Gi"})], {"g": 1}, AutoscalerOptions())
FULL_GROUP = ([NodeGroupSpec("g", 1, 1, {"cpu": "2", "memory": "4Gi"})], {"g": 1}, AutoscalerOptions())
SCALE_DOWN = (
    [NodeGroupSpec("g", 1, 3, {"cpu": "2", "memory": "4Gi"})],
    {"g": 2},
    AutoscalerOptions(scale_down_unneeded_time=60.0),
)


@pytest.mark.parametrize("env", [ONE_GROUP], indirect=True, ids=["RunOnce scale-up: TriggeredScaleUp, status"])
async def test_scale_up_for_an_unschedulable_pod(env: Env) -> None:
    await env.create_pod(pod_object("busy", cpu="1500m", node="g-0"))
    await env.create_pod(pod_object("pending", cpu="1500m", unschedulable=True))
    await env.settle()
    result = await env.autoscaler.run_once()
    assert [str(i) for i in result.scale_up.infos] == ["{g 1->2 (max: 3)}"]
    assert env.provider.increases == [("g", 1)]
    node = await env.client.get(env.client.resource("nodes"), "g-1")
    assert node["metadata"]["labels"]["autoscaling.kubeplane.io/node-group"] == "g"
    [event] = await env.events("TriggeredScaleUp")
    assert event["involvedObject"]["name"] == "pending"
    assert event["message"] == "pod triggered scale-up: [{g 1->2 (max: 3)}]"
    scaled = [e["message"] for e in await env.events("ScaledUpGroup")]
    assert scaled == [
        "Scale-up: setting group g size to 2 instead of 1 (max: 3)",
        "Scale-up: group g size set to 2 instead of 1 (max: 3)",
    ]
    status = await env.status()
    assert status["autoscalerStatus"] == "Running"
    [group] = status["nodeGroups"]
    assert (group["name"], group["health"]["cloudProviderTarget"], group["health"]["minSize"]) == ("g", 2, 1)
    assert group["health"]["maxSize"] == 3
    assert status["clusterWide"]["health"]["status"] == "Healthy"


@pytest.mark.parametrize("env", [ONE_GROUP], indirect=True, ids=["FilterOutSchedulable: room on a node"])
async def test_no_scale_up_when_the_pod_fits_an_existing_node(env: Env) -> None:
    await env.create_pod(pod_object("pending", cpu="500m", unschedulable=True))
    await env.settle()
    result = await env.autoscaler.run_once()
    assert result.scale_up.infos == []
    assert env.provider.increases == []
    assert await env.events("NotTriggerScaleUp") == []


@pytest.mark.parametrize("env", [FULL_GROUP], indirect=True, ids=["NotTriggerScaleUp: max node group size"])
async def test_not_triggered_event_names_the_reason(env: Env) -> None:
    await env.create_pod(pod_object("busy", cpu="1500m", node="g-0"))
    await env.create_pod(pod_object("pending", cpu="1500m", unschedulable=True))
    await env.settle()
    await env.autoscaler.run_once()
    [event] = await env.events("NotTriggerScaleUp")
    assert event["message"] == "pod didn't trigger scale-up: 1 max node group size reached"


@pytest.mark.parametrize("env", [SCALE_DOWN], indirect=True, ids=["scale-down: unneeded time, taint, evict, delete"])
async def test_scale_down_of_an_unneeded_node(env: Env) -> None:
    for name, node in (("a", "g-0"), ("b", "g-1")):
        pod = pod_object(name, cpu="500m", node=node)
        pod["spec"]["terminationGracePeriodSeconds"] = 0
        await env.create_pod(pod)
    await env.settle()
    first = await env.autoscaler.run_once()
    assert list(first.scale_down.unneeded) == ["g-0"]
    assert first.deleting == []
    status = await env.status()
    assert status["clusterWide"]["scaleDown"] == {
        **status["clusterWide"]["scaleDown"],
        "status": "CandidatesPresent",
        "candidates": 1,
    }
    await env.clock.advance(60)
    second = await env.autoscaler.run_once()
    assert second.deleting == ["g-0"]
    await env.autoscaler.actuator.wait()
    assert env.provider.deletions == [("g", ["g-0"])]
    nodes = await env.client.list(env.client.resource("nodes"))
    assert [n["metadata"]["name"] for n in nodes["items"]] == ["g-1"]
    marked = await env.events("ScaleDown")
    by_kind = {(e["involvedObject"]["kind"], e["involvedObject"]["name"]): e["message"] for e in marked}
    assert by_kind[("Node", "g-0")] == "marked the node as toBeDeleted/unschedulable"
    assert by_kind[("Pod", "a")] == "deleting pod for node scale down"
    assert by_kind[("ConfigMap", "cluster-autoscaler-status")] == "Scale-down: node g-0 removed with drain"
    # min size 1 keeps g-1 even once it is unneeded
    await env.settle()
    await env.clock.advance(120)
    third = await env.autoscaler.run_once()
    assert third.deleting == []


@pytest.mark.parametrize("env", [ONE_GROUP], indirect=True, ids=["run: RunOnce every scan-interval on the clock"])
async def test_run_loops_on_the_injected_clock(env: Env) -> None:
    task = asyncio.get_running_loop().create_task(env.autoscaler.run())
    try:
        await env.settle()
        first = (await env.status())["time"]
        await env.create_pod(pod_object("busy", cpu="1500m", node="g-0"))
        await env.create_pod(pod_object("pending", cpu="1500m", unschedulable=True))
        await env.settle()
        assert env.provider.increases == []  # nothing until the next scan
        await env.clock.advance(10)
        await env.settle()
        assert env.provider.increases == [("g", 1)]
        assert (await env.status())["time"] != first
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("env", [ONE_GROUP], indirect=True, ids=["upcoming node: room to come, no second scale-up"])
async def test_pods_fitting_an_upcoming_node_do_not_scale_up_again(env: Env) -> None:
    await env.create_pod(pod_object("busy", cpu="1500m", node="g-0"))
    await env.create_pod(pod_object("pending", cpu="1500m", unschedulable=True))
    await env.settle()
    await env.autoscaler.run_once()
    nodes = env.client.resource("nodes")
    booting = await env.client.get(nodes, "g-1")  # as a booting kubelet's node: NotReady, tainted not-ready
    booting["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
    booting = await env.client.update(nodes, booting)
    booting["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    await env.client.update(nodes, booting, subresource="status")
    await env.settle()
    await env.clock.advance(10)
    second = await env.autoscaler.run_once()
    assert second.scale_up.infos == []
    assert env.provider.increases == [("g", 1)]
    [group] = (await env.status())["nodeGroups"]
    assert group["health"]["nodeCounts"]["registered"]["notStarted"] == 1
    assert group["scaleUp"]["status"] == "InProgress"


PRIORITY: tuple[list[NodeGroupSpec], dict[str, int], AutoscalerOptions] = (
    [
        NodeGroupSpec("cheap", 0, 3, {"cpu": "2", "memory": "4Gi"}, extra={"priority": 1}),
        NodeGroupSpec("preferred", 0, 3, {"cpu": "2", "memory": "4Gi"}, extra={"priority": 5}),
    ],
    {},
    AutoscalerOptions(expander="priority"),
)


@pytest.mark.parametrize("env", [PRIORITY], indirect=True, ids=["priority expander: the ConfigMap's regexes win"])
async def test_priority_expander_reads_the_configmap(env: Env) -> None:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cluster-autoscaler-priority-expander", "namespace": "kube-system"},
        "data": {"priorities": "10:\n  - ^che.*\n1:\n  - .*\n"},
    }
    await env.client.create(env.client.resource("configmaps"), cm, namespace="kube-system")
    await env.create_pod(pod_object("pending", cpu="1500m", unschedulable=True))
    await env.settle()
    result = await env.autoscaler.run_once()
    assert [i.group for i in result.scale_up.infos] == ["cheap"]


@pytest.mark.parametrize("env", [PRIORITY], indirect=True, ids=["priority expander: the groups' priority fields"])
async def test_priority_expander_falls_back_to_the_groups_priorities(env: Env) -> None:
    await env.create_pod(pod_object("pending", cpu="1500m", unschedulable=True))
    await env.settle()
    result = await env.autoscaler.run_once()
    assert [i.group for i in result.scale_up.infos] == ["preferred"]


UNHEALTHY = ([NodeGroupSpec("g", 1, 9, {"cpu": "2", "memory": "4Gi"})], {"g": 5}, AutoscalerOptions())


@pytest.mark.parametrize("env", [UNHEALTHY], indirect=True, ids=["IsClusterHealthy: 4 of 5 unready, no scaling"])
async def test_an_unhealthy_cluster_is_not_autoscaled(env: Env) -> None:
    nodes = env.client.resource("nodes")
    for i in range(1, 5):  # NotReady and tainted, as the node lifecycle controller leaves them
        node = await env.client.get(nodes, f"g-{i}")
        node["spec"]["taints"] = [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
        node = await env.client.update(nodes, node)
        node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
        await env.client.update(nodes, node, subresource="status")
    await env.clock.advance(3600)  # past max-node-provision-time: unready, not upcoming
    await env.create_pod(pod_object("busy", cpu="1500m", node="g-0"))
    await env.create_pod(pod_object("pending", cpu="1500m", unschedulable=True))
    await env.settle()
    result = await env.autoscaler.run_once()
    assert result.scale_up.infos == []
    assert env.provider.increases == []
    assert (await env.status())["clusterWide"]["health"]["status"] == "Unhealthy"
