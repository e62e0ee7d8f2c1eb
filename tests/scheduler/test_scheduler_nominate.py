"""The binding cycle's nomination (NominatedNodeNameForExpectation, beta and on since v1.35), pinned to upstream
v1.37 ``schedule_one.go`` bindingCycle / handleBindingCycleError and KEP-5278:

* PreBindPreFlight runs first; when a PreBind plugin will work (Success) or Permit will make the pod wait, the
  pod's ``status.nominatedNodeName`` is set to the chosen node through pods/status before waiting;
* a PreBindPreFlight error fails the binding cycle (the pod is not bound, the error on its PodScheduled
  condition);
* a failed binding cycle records ``clearNominatedNode``: the nominator forgets the pod and the API field is
  cleared;
* with the gate off none of this happens (pre-1.35).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import parse_config
from kubeplane.scheduler.config.features import parse_feature_gates
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState, Status
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.registry import new_in_tree_registry
from kubeplane.scheduler.scheduler import Scheduler
from tests.scheduler.test_scheduler import HEADER, WaitingPermit, _node_of, node, pod


class FailingPreBind:
    """A PreBind plugin with work to do (PreBindPreFlight: Success, or an error with args ``preFlight: error``)
    whose PreBind always fails."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.pre_flight_error = args.get("preFlight") == "error"

    def name(self) -> str:
        return "FailingPreBind"

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status.from_error("volume backend unreachable") if self.pre_flight_error else None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return Status.from_error("attach failed")


async def _start(
    profile: dict[str, Any], gates: str | None = None
) -> tuple[LocalClient, Scheduler, asyncio.Task[None]]:
    client = await LocalClient.in_memory()
    await client.create(client.resource("nodes"), node("node01"))
    registry = new_in_tree_registry()
    registry.register("WaitingPermit", WaitingPermit)
    registry.register("FailingPreBind", FailingPreBind)
    document = {
        **HEADER,
        "podInitialBackoffSeconds": 100,  # no retry while the test looks
        "podMaxBackoffSeconds": 100,
        "profiles": [{"schedulerName": "default-scheduler", **profile}],
    }
    cfg = parse_config(document, feature_gates=parse_feature_gates(gates))
    scheduler = Scheduler(client, config=cfg, registry=registry, rng=random.Random(1))
    return client, scheduler, asyncio.ensure_future(scheduler.run())


async def _stop(scheduler: Scheduler, task: asyncio.Task[None]) -> None:
    await scheduler.stop()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def _until(what: str, check: Callable[[], Awaitable[Any]]) -> Any:
    for _ in range(1000):
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def _status(client: LocalClient, name: str) -> Callable[[], Awaitable[dict[str, Any]]]:
    async def get() -> dict[str, Any]:
        got = await client.get(client.resource("pods"), name, namespace="default")
        return dict(got.get("status") or {})

    return get


def _scheduled_false(status: dict[str, Any]) -> str:
    for c in status.get("conditions") or ():
        if c["type"] == "PodScheduled" and c["status"] == "False":
            return str(c["message"])
    return ""


PERMIT = {"plugins": {"permit": {"enabled": [{"name": "WaitingPermit"}]}}}


async def test_a_pod_waiting_on_permit_is_nominated_then_bound_and_the_binding_clears_it() -> None:
    client, scheduler, task = await _start(PERMIT)
    try:
        created = await client.create(client.resource("pods"), pod("waits"), namespace="default")
        status = _status(client, "waits")

        async def nominated() -> str:
            return str((await status()).get("nominatedNodeName") or "")

        assert await _until("the nomination", nominated) == "node01"
        waiting = scheduler.profiles["default-scheduler"].get_waiting_pod(created["metadata"]["uid"])
        assert waiting is not None
        waiting.allow("WaitingPermit")
        assert await _node_of(client, "waits") == "node01"
        assert await nominated() == ""
    finally:
        await _stop(scheduler, task)


async def test_with_the_gate_off_a_pod_waiting_on_permit_is_not_nominated() -> None:
    client, scheduler, task = await _start(PERMIT, "NominatedNodeNameForExpectation=false")
    try:
        created = await client.create(client.resource("pods"), pod("waits"), namespace="default")
        fwk = scheduler.profiles["default-scheduler"]
        uid = created["metadata"]["uid"]

        async def waiting() -> Any:
            return fwk.get_waiting_pod(uid)

        held = await _until("the pod to wait on Permit", waiting)
        for _ in range(5):
            await asyncio.sleep(0.01)
            assert not (await _status(client, "waits")()).get("nominatedNodeName")
        held.allow("WaitingPermit")
        assert await _node_of(client, "waits") == "node01"
    finally:
        await _stop(scheduler, task)


async def test_a_pre_bind_pre_flight_error_fails_the_binding_cycle() -> None:
    profile = {
        "plugins": {"preBind": {"enabled": [{"name": "FailingPreBind"}]}},
        "pluginConfig": [{"name": "FailingPreBind", "args": {"preFlight": "error"}}],
    }
    client, scheduler, task = await _start(profile)
    try:
        await client.create(client.resource("pods"), pod("p"), namespace="default")

        async def message() -> str:
            return _scheduled_false(await _status(client, "p")())

        got = await _until("the PodScheduled=False condition", message)
        assert got == 'running PreBindPreFlight "FailingPreBind": volume backend unreachable'
        current = await _status(client, "p")()
        assert not current.get("nominatedNodeName")
        assert await _node_of(client, "p", timeout=0.1) == ""
    finally:
        await _stop(scheduler, task)


async def test_a_failed_binding_cycle_clears_the_nomination_it_set() -> None:
    profile = {"plugins": {"preBind": {"enabled": [{"name": "FailingPreBind"}]}}}
    client, scheduler, task = await _start(profile)
    try:
        await client.create(client.resource("pods"), pod("p"), namespace="default")
        status = _status(client, "p")

        async def failed() -> dict[str, Any] | None:
            got = await status()
            return got if _scheduled_false(got) and not got.get("nominatedNodeName") else None

        got = await _until("the failure with the nomination cleared", failed)
        assert _scheduled_false(got) == 'running PreBind plugin "FailingPreBind": attach failed'
        assert scheduler.queue.nominated_pods_for_node("node01") == []
    finally:
        await _stop(scheduler, task)
