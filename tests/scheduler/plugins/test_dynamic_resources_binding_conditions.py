"""Device binding conditions end to end (DRADeviceBindingConditions, beta and on in v1.37): a running Scheduler on
the local transport, time driven by a FakeClock (no real sleeps; the real-time waits below are bounded polls for
the scheduler's tasks to run).

Pins upstream ``dynamicresources.go`` PreBind/bindClaim/isPodReadyForBinding/isClaimTimeout and the retry path
(Unreserve, then Filter's "resourceclaim not available on the node" and PostFilter's deallocation), as upstream's
``dynamicresources_test.go`` cases "bound-with-binding-conditions", "binding-failure" and "binding-timeout" and
the KEP-5007 flow describe them: PreBind writes allocation, ``reservedFor`` and ``allocationTimestamp``, records
``BindingConditionsPending``, polls every 5 s until the conditions are True (the pod is bound), a failure condition
is True or ``bindingTimeout`` (args, default 600 s) passes (the pod is not bound, the claim is deallocated and
allocated again).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api.meta import format_time
from kubeplane.client.clock import FakeClock
from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config.loading import parse_config
from kubeplane.scheduler.plugins.dynamic_resources_binding import binding_outcome
from kubeplane.scheduler.scheduler import Scheduler

DRIVER = "gpu.example.com"
ATTACHED = "dra.example.com/attached"
FAILED = "dra.example.com/failed"
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node01", "labels": {"kubernetes.io/hostname": "node01"}},
    "status": {
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}
SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "node01-gpu"},
    "spec": {
        "driver": DRIVER,
        "nodeName": "node01",
        "pool": {"name": "node01", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "bindsToNode": True,
                "bindingConditions": [ATTACHED],
                "bindingFailureConditions": [FAILED],
            }
        ],
    },
}
CLAIM = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "c", "namespace": "default"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "default"},
    "spec": {
        "containers": [{"name": "c", "image": "nginx", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}],
    },
}


@dataclass
class Env:
    client: LocalClient
    clock: FakeClock
    scheduler: Scheduler

    async def until(self, what: str, check: Callable[[], Awaitable[Any]], timeout: float = 20.0) -> Any:
        """Poll ``check`` in real time (bounded) while the scheduler's tasks run; time itself stays frozen."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            value = await check()
            if value:
                return value
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.01)

    async def claim(self) -> Obj:
        return await self.client.get(self.client.resource("resourceclaims"), "c", namespace="default")

    async def pod(self) -> Obj:
        return await self.client.get(self.client.resource("pods"), "p", namespace="default")

    async def allocated(self) -> Obj | None:
        claim = await self.claim()
        status = claim.get("status") or {}
        return claim if status.get("allocation") and status.get("reservedFor") else None

    async def set_condition(self, kind: str, reason: str, message: str) -> None:
        claim = await self.claim()
        result = claim["status"]["allocation"]["devices"]["results"][0]
        condition = {
            "type": kind,
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": format_time(self.clock.now()),
        }
        device = {k: result[k] for k in ("driver", "pool", "device")}
        claim["status"]["devices"] = [{**device, "conditions": [condition]}]
        await self.client.update(
            self.client.resource("resourceclaims"), claim, namespace="default", subresource="status"
        )

    async def scheduled_false_message(self) -> str:
        for c in (await self.pod()).get("status", {}).get("conditions") or ():
            if c["type"] == "PodScheduled" and c["status"] == "False":
                return str(c["message"])
        return ""

    async def advance(self, seconds: float, step: float = 1.0) -> None:
        """Advance in small steps, letting the scheduler's tasks (informers, writes) catch up in between."""
        left = seconds
        while left > 0:
            await self.clock.advance(min(step, left))
            left -= step
            await asyncio.sleep(0.005)


async def _env(config: dict[str, Any] | None) -> AsyncIterator[Env]:
    client = await LocalClient.in_memory()
    clock = FakeClock()
    for res, obj, ns in (
        ("nodes", NODE, None),
        ("deviceclasses", CLASS, None),
        ("resourceslices", SLICE, None),
        ("resourceclaims", CLAIM, "default"),
    ):
        await client.create(client.resource(res), obj, namespace=ns)
    kwargs: dict[str, Any] = {"config": parse_config(config)} if config else {}
    scheduler = Scheduler(client, clock=clock, rng=random.Random(0), **kwargs)
    task = asyncio.ensure_future(scheduler.run())
    try:
        await client.create(client.resource("pods"), POD, namespace="default")
        yield Env(client, clock, scheduler)
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async for e in _env(None):
        yield e


SHORT_TIMEOUT = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "DynamicResources", "args": {"bindingTimeout": "60s"}}],
        }
    ],
}


@pytest.fixture
async def env_60s() -> AsyncIterator[Env]:
    async for e in _env(SHORT_TIMEOUT):
        yield e


async def test_prebind_waits_until_the_binding_conditions_are_true(env: Env) -> None:
    claim = await env.until("the allocation and reservation written before the wait", env.allocated)
    allocation = claim["status"]["allocation"]
    result = allocation["devices"]["results"][0]
    assert result["bindingConditions"] == [ATTACHED]
    assert result["bindingFailureConditions"] == [FAILED]
    assert allocation["allocationTimestamp"] == format_time(env.clock.now())
    assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == ["node01"]

    async def pending_event() -> list[Obj]:
        items = (await env.client.list(env.client.resource("events"), namespace="default"))["items"]
        return [e for e in items if e["reason"] == "BindingConditionsPending"]

    (event,) = await env.until("the BindingConditionsPending event", pending_event)
    assert event["message"] == "waiting for binding conditions for device on node node01"
    await env.advance(30)
    assert not (await env.pod())["spec"].get("nodeName")  # still waiting: not bound

    await env.set_condition(ATTACHED, "Attached", "the device is attached")
    await env.advance(5)

    async def bound() -> str:
        return str((await env.pod())["spec"].get("nodeName") or "")

    assert await env.until("the pod bound once the condition is True", bound) == "node01"


async def test_a_failure_condition_fails_prebind_and_the_claim_is_allocated_again(env: Env) -> None:
    first = await env.until("the first allocation", env.allocated)
    await env.set_condition(FAILED, "Unavailable", 'fabric "a" lost the device')
    await env.advance(5)
    message = await env.until("PreBind's error on the pod", env.scheduled_false_message)
    assert message == (
        'running PreBind plugin "DynamicResources": claim c binding failed: reason=Unavailable, '
        'message="fabric \\"a\\" lost the device"'
    )
    assert not (await env.pod())["spec"].get("nodeName")

    async def reallocated() -> Obj | None:
        claim = await env.allocated()
        if claim is None or claim["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]:
            return None
        # A fresh allocation: the failed device status is gone with the old one.
        return claim if not claim["status"].get("devices") else None

    # Unreserve drops the reservation, the retry's PostFilter deallocates, the next attempt allocates afresh. With
    # SchedulerPopFromBackoffQ the pod that the deallocation moves to backoffQ is popped at once by an empty
    # activeQ, so the new allocation may follow at the same instant and the poll need not see the claim
    # unallocated; an allocation without the failed device status (which goes only with the old allocation) shows
    # the old one was cleared.
    for _ in range(40):
        if await reallocated():
            break
        await env.advance(1)
    again = await env.until("a new allocation", reallocated)
    assert again["status"]["reservedFor"][0]["name"] == "p"


async def test_the_binding_timeout_from_the_args_fails_prebind_then_the_claim_is_deallocated(env_60s: Env) -> None:
    env = env_60s
    first = await env.until("the allocation", env.allocated)
    await env.advance(55)
    assert await env.scheduled_false_message() == ""  # 55 s < 60 s: still waiting
    await env.advance(5)
    message = await env.until("PreBind's timeout on the pod", env.scheduled_false_message)
    assert message == 'running PreBind plugin "DynamicResources": device binding timeout'
    assert not (await env.pod())["spec"].get("nodeName")

    async def unreserved() -> bool:
        return not ((await env.claim()).get("status") or {}).get("reservedFor")

    await env.until("Unreserve removing the pod from reservedFor", unreserved)
    # Deallocated: no allocation, or (SchedulerPopFromBackoffQ: the retry the deallocation triggers is popped from
    # backoffQ at once by an empty activeQ) already a new one, allocated 60 s after the timed-out one.
    cleared = False
    for _ in range(40):
        allocation = ((await env.claim()).get("status") or {}).get("allocation")
        if allocation != first["status"]["allocation"]:
            cleared = True
            break
        await env.advance(1)
    assert cleared, "the timed-out allocation was never deallocated"


async def test_stopping_the_scheduler_ends_a_binding_wait(env: Env) -> None:
    """Upstream's binding goroutine ends when the scheduler's context is cancelled (PollUntilContextTimeout returns
    ``context canceled``): stop() must not wait out the 600 s binding timeout (frozen time here: it would hang)."""
    await env.until("PreBind waiting", env.allocated)
    await asyncio.wait_for(env.scheduler.stop(), timeout=20)
    assert not (await env.pod())["spec"].get("nodeName")


def _samples(env: Env, status: str) -> tuple[float, float, float]:
    """(allocations, waits, seconds waited) of the binding-conditions metrics for ``status`` (kubernetes#137284:
    ``scheduler_dra_bindingconditions_allocations_total`` and ``..._wait_duration_seconds``, labels profile,
    driver, status)."""
    registry = env.scheduler.metrics.registry
    labels = {"profile": "default-scheduler", "driver": DRIVER, "status": status}
    allocations = registry.get_sample_value("scheduler_dra_bindingconditions_allocations_total", labels) or 0.0
    waits = registry.get_sample_value("scheduler_dra_bindingconditions_wait_duration_seconds_count", labels) or 0.0
    seconds = registry.get_sample_value("scheduler_dra_bindingconditions_wait_duration_seconds_sum", labels) or 0.0
    return allocations, waits, seconds


async def test_the_binding_conditions_metrics_count_each_wait_by_outcome(env: Env) -> None:
    """One device result with binding conditions, one wait per driver, observed on the scheduler's clock: a wait
    that ends when the condition turns True is ``success`` and lasts the virtual time it waited."""
    before = _samples(env, "success")
    await env.until("the allocation written before the wait", env.allocated)
    await env.advance(30)
    await env.set_condition(ATTACHED, "Attached", "the device is attached")
    await env.advance(5)

    async def bound() -> str:
        return str((await env.pod())["spec"].get("nodeName") or "")

    await env.until("the pod bound", bound)
    allocations, waits, seconds = _samples(env, "success")
    assert (allocations - before[0], waits - before[1]) == (1.0, 1.0)
    assert 30 <= seconds - before[2] <= 40


async def test_a_failure_condition_counts_as_failure(env: Env) -> None:
    before = _samples(env, "failure")
    await env.until("the first allocation", env.allocated)
    await env.set_condition(FAILED, "Unavailable", "lost")
    await env.advance(5)
    await env.until("PreBind's error on the pod", env.scheduled_false_message)
    allocations, waits, _ = _samples(env, "failure")
    assert (allocations - before[0], waits - before[1]) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("message", "status"),
    [
        pytest.param(None, "success", id="ready: success"),
        pytest.param('claim c binding failed: reason=R, message="M"', "failure", id="failure condition True"),
        pytest.param("device binding timeout", "timeout", id="the plugin's bindingTimeout"),
        pytest.param("claim c binding timeout", "timeout", id="the claim's timeout"),
        pytest.param("context canceled", "error", id="the scheduler stopping: error"),
        pytest.param('resourceclaim.resource.k8s.io "c" not found', "error", id="the claim gone: error"),
    ],
)
def test_binding_outcome(message: str | None, status: str) -> None:
    assert binding_outcome(message) == status
