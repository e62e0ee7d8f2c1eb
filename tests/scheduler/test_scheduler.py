"""The running Scheduler's cycles beyond the default plugins: scheduling gates (PreEnqueue), a Permit plugin that
waits and is allowed or times out, a Bind failure that forgets the assumed pod and retries, several profiles,
and a bad configuration refused at start (upstream schedule_one.go / scheduler.go behaviours)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.backend.queue_events import EVENT_UNSCHEDULABLE_TIMEOUT
from kubeplane.scheduler.config import ConfigError, parse_config
from kubeplane.scheduler.config.features import parse_feature_gates
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState, Status
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins import default_binder
from kubeplane.scheduler.plugins.registry import new_in_tree_registry
from kubeplane.scheduler.scheduler import Scheduler

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def node(name: str) -> Obj:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def pod(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], **spec},
    }


class WaitingPermit:
    """Permit: every pod waits up to ``timeout`` seconds; the test allows it through the framework."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.timeout = float(args.get("timeout", 30))

    def name(self) -> str:
        return "WaitingPermit"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return Status(Code.WAIT), self.timeout


class FlakyBinder:
    """Bind fails the first ``failures`` times, then binds as DefaultBinder does (the only Bind plugin)."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.failures = int(args.get("failures", 1))
        self.calls = 0
        self.binder = default_binder.new({}, handle)

    def name(self) -> str:
        return "FlakyBinder"

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.calls += 1
        if self.calls <= self.failures:
            return Status.from_error("binding refused")
        return await self.binder.bind(state, pod, node_name)


async def _start(config: dict[str, Any] | None = None) -> tuple[LocalClient, Scheduler, asyncio.Task[None]]:
    client = await LocalClient.in_memory()
    for n in ("node01", "node02"):
        await client.create(client.resource("nodes"), node(n))
    registry = new_in_tree_registry()
    registry.register("WaitingPermit", WaitingPermit)
    registry.register("FlakyBinder", FlakyBinder)
    cfg = parse_config({**HEADER, **(config or {})})
    scheduler = Scheduler(client, config=cfg, registry=registry, rng=random.Random(1))
    return client, scheduler, asyncio.ensure_future(scheduler.run())


@pytest.fixture
async def stopper() -> AsyncIterator[list[tuple[Scheduler, asyncio.Task[None]]]]:
    running: list[tuple[Scheduler, asyncio.Task[None]]] = []
    yield running
    for scheduler, task in running:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _node_of(client: LocalClient, name: str, timeout: float = 10.0) -> str:
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        got = await client.get(client.resource("pods"), name, namespace="default")
        if got["spec"].get("nodeName"):
            return str(got["spec"]["nodeName"])
        await asyncio.sleep(0.01)
    return ""


async def test_gated_pod_waits_until_its_gates_are_removed(stopper: list[Any]) -> None:
    client, scheduler, task = await _start()
    stopper.append((scheduler, task))
    await client.create(
        client.resource("pods"), pod("gated", schedulingGates=[{"name": "example.com/wait"}]), namespace="default"
    )
    assert await _node_of(client, "gated", timeout=0.3) == ""
    assert "default/gated" in scheduler.queue
    current = await client.get(client.resource("pods"), "gated", namespace="default")
    current["spec"]["schedulingGates"] = []
    await client.update(client.resource("pods"), current, namespace="default")
    assert await _node_of(client, "gated") != ""


async def test_permit_wait_then_allow_binds(stopper: list[Any]) -> None:
    config = {
        "profiles": [
            {"schedulerName": "default-scheduler", "plugins": {"permit": {"enabled": [{"name": "WaitingPermit"}]}}}
        ]
    }
    client, scheduler, task = await _start(config)
    stopper.append((scheduler, task))
    created = await client.create(client.resource("pods"), pod("waits"), namespace="default")
    fwk = scheduler.profiles["default-scheduler"]
    uid = created["metadata"]["uid"]
    for _ in range(500):
        if fwk.get_waiting_pod(uid) is not None:
            break
        await asyncio.sleep(0.01)
    waiting = fwk.get_waiting_pod(uid)
    assert waiting is not None, "the pod never reached Permit"
    assert await _node_of(client, "waits", timeout=0.2) == ""
    waiting.allow("WaitingPermit")
    assert await _node_of(client, "waits") in ("node01", "node02")


async def test_permit_timeout_rejects_and_requeues(stopper: list[Any]) -> None:
    config = {
        "podInitialBackoffSeconds": 1,
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"permit": {"enabled": [{"name": "WaitingPermit"}]}},
                "pluginConfig": [{"name": "WaitingPermit", "args": {"timeout": 0.05}}],
            }
        ],
    }
    client, scheduler, task = await _start(config)
    stopper.append((scheduler, task))
    await client.create(client.resource("pods"), pod("times-out"), namespace="default")

    async def condition() -> str:
        got = await client.get(client.resource("pods"), "times-out", namespace="default")
        for c in got.get("status", {}).get("conditions") or []:
            if c["type"] == "PodScheduled" and c["status"] == "False":
                return str(c["message"])
        return ""

    message = ""
    for _ in range(500):
        message = await condition()
        if message:
            break
        await asyncio.sleep(0.01)
    assert message == "0/1 nodes are available: 1 rejected due to timeout after waiting 50ms at plugin WaitingPermit."
    # The assumed pod was forgotten: an assumed pod is skipped without a cycle, so a second attempt (which an empty
    # activeQ pops from backoffQ at once, SchedulerPopFromBackoffQ) shows it. The cache may hold the pod again by
    # then (assumed by that attempt), so its count pins nothing.
    registry = scheduler.metrics.registry
    labels = {"result": "unschedulable", "profile": "default-scheduler"}
    for _ in range(500):
        if (registry.get_sample_value("scheduler_schedule_attempts_total", labels) or 0.0) >= 2:
            break
        await asyncio.sleep(0.01)
    assert (registry.get_sample_value("scheduler_schedule_attempts_total", labels) or 0.0) >= 2


async def test_bind_failure_forgets_and_retries(stopper: list[Any]) -> None:
    config = {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"bind": {"enabled": [{"name": "FlakyBinder"}], "disabled": [{"name": "DefaultBinder"}]}},
            }
        ]
    }
    client, scheduler, task = await _start(config)
    stopper.append((scheduler, task))
    await client.create(client.resource("pods"), pod("flaky"), namespace="default")
    assert await _node_of(client, "flaky", timeout=15) in ("node01", "node02")
    binder = scheduler.profiles["default-scheduler"].plugins["FlakyBinder"]
    assert isinstance(binder, FlakyBinder)
    assert binder.calls == 2
    assert scheduler.cache.pod_count() == 1


async def test_two_profiles_each_schedule_their_pods(stopper: list[Any]) -> None:
    config = {
        "profiles": [
            {"schedulerName": "default-scheduler"},
            {
                "schedulerName": "packer",
                "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}],
            },
        ]
    }
    client, scheduler, task = await _start(config)
    stopper.append((scheduler, task))
    assert set(scheduler.profiles) == {"default-scheduler", "packer"}
    await client.create(client.resource("pods"), pod("a", schedulerName="packer"), namespace="default")
    await client.create(client.resource("pods"), pod("b"), namespace="default")
    assert await _node_of(client, "a") != ""
    assert await _node_of(client, "b") != ""
    await scheduler.wait_for_bindings()
    assert await _scheduled_by(client, 2) == {"a": "packer", "b": "default-scheduler"}


async def _scheduled_by(client: LocalClient, expected: int) -> dict[str, str]:
    """pod name -> reportingComponent of its Scheduled event (each profile reports as its schedulerName), once
    ``expected`` pods have one (events are written asynchronously)."""
    found: dict[str, str] = {}
    for _ in range(500):
        events = (await client.list(client.resource("events"), namespace="default"))["items"]
        found = {e["involvedObject"]["name"]: e["reportingComponent"] for e in events if e["reason"] == "Scheduled"}
        if len(found) >= expected:
            break
        await asyncio.sleep(0.01)
    return found


async def test_two_scheduler_instances_each_take_only_their_pods(stopper: list[Any]) -> None:
    """A default scheduler and a custom-scheduler (seed 002) in one cluster: each binds only its own pods; a pod
    for a scheduler that does not run stays Pending."""
    client, default, task = await _start()
    stopper.append((default, task))
    custom = Scheduler(client, config=parse_config({**HEADER, "profiles": [{"schedulerName": "custom-scheduler"}]}))
    stopper.append((custom, asyncio.ensure_future(custom.run())))
    pods = client.resource("pods")
    for i in range(6):
        name = "custom-scheduler" if i % 2 else "default-scheduler"
        await client.create(pods, pod(f"p{i}", schedulerName=name), namespace="default")
    await client.create(pods, pod("orphan", schedulerName="nobody"), namespace="default")
    for i in range(6):
        assert await _node_of(client, f"p{i}") != ""
    await default.wait_for_bindings()
    await custom.wait_for_bindings()
    assert (default.scheduled, custom.scheduled) == (3, 3)
    by = await _scheduled_by(client, 6)
    assert {name: by[name] for name in sorted(by)} == {
        f"p{i}": ("custom-scheduler" if i % 2 else "default-scheduler") for i in range(6)
    }
    assert (await client.get(pods, "orphan", namespace="default"))["spec"].get("nodeName") is None


def test_unknown_plugin_is_refused_at_start() -> None:
    cfg = parse_config(
        {**HEADER, "profiles": [{"schedulerName": "x", "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]}
    )

    async def build() -> None:
        client = await LocalClient.in_memory()
        Scheduler(client, config=cfg)

    with pytest.raises(ConfigError, match='plugin "Nope" does not exist'):
        asyncio.run(build())


async def test_terminal_pods_are_ignored_and_never_break_the_cache(stopper: list[Any]) -> None:
    """A pod already Succeeded when first seen is not cached; its updates and deletion are no-ops (upstream's
    informer filters terminal pods); a running pod that finishes frees its node's resources."""
    client, scheduler, task = await _start()
    stopper.append((scheduler, task))
    pods = client.resource("pods")
    done = await client.create(pods, pod("done", nodeName="node01"), namespace="default")
    done["status"]["phase"] = "Succeeded"
    done = await client.update(pods, done, namespace="default", subresource="status")
    done["metadata"]["labels"] = {"x": "y"}
    await client.update(pods, done, namespace="default")
    await client.delete(pods, "done", namespace="default")

    running = await client.create(pods, pod("running", nodeName="node02"), namespace="default")
    for _ in range(200):
        if scheduler.cache.pod_count() == 1:
            break
        await asyncio.sleep(0.01)
    assert scheduler.cache.pod_count() == 1
    running["status"]["phase"] = "Failed"
    await client.update(pods, running, namespace="default", subresource="status")
    for _ in range(200):
        if scheduler.cache.pod_count() == 0:
            break
        await asyncio.sleep(0.01)
    assert scheduler.cache.pod_count() == 0
    await client.create(pods, pod("next"), namespace="default")
    assert await _node_of(client, "next") != ""


@pytest.mark.parametrize("enabled", [True, False], ids=["SchedulerPopFromBackoffQ", "SchedulerPopFromBackoffQ=false"])
async def test_the_pop_from_backoff_q_gate_reaches_the_queue(enabled: bool) -> None:
    """``--feature-gates SchedulerPopFromBackoffQ`` (beta, on in v1.37): off, an empty activeQ does not pop
    backoffQ (upstream passes no backoffQPopper to activeQ)."""
    client = await LocalClient.in_memory()
    gates = parse_feature_gates({"SchedulerPopFromBackoffQ": enabled})
    scheduler = Scheduler(client, config=parse_config(HEADER, feature_gates=gates))
    queue = scheduler.queue
    queue.add(PodInfo(pod("p")))
    qpi = queue.pop_nowait()
    assert qpi is not None
    qpi.unschedulable_plugins.add("NodeResourcesFit")
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle())
    queue.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert queue.where(qpi.key) == "Backoff"
    assert (queue.pop_nowait() is qpi) is enabled
