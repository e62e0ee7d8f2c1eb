"""NominatedNodeNameForExpectation and ClearingNominatedNodeNameAfterBinding end to end: the in-process Scheduler
over the local transport, read back through the API.

Pins KEP-5278 as upstream v1.37 ships it (``schedule_one.go`` bindingCycle; ``pkg/registry/core/pod/storage``
``setPodNodeAndMetadata``; the integration tests ``test/integration/scheduler/nominated_node_name``):

* a pod whose PreBind has work (an unbound WaitForFirstConsumer PVC; a DRA claim waiting for its device's
  binding conditions) carries ``status.nominatedNodeName`` = the chosen node while the binding cycle waits in
  PreBind, and the binding clears it;
* a pod without PreBind work (no PVC, no claim) is bound without ever being nominated;
* with ``NominatedNodeNameForExpectation=false`` the waiting pod is not nominated (the pre-1.35 behaviour).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import default_config
from kubeplane.scheduler.config.features import parse_feature_gates
from kubeplane.scheduler.config.loading import parse_config
from kubeplane.scheduler.scheduler import Scheduler
from tests.scheduler.plugins.test_dynamic_resources_binding_conditions import ATTACHED
from tests.scheduler.plugins.test_dynamic_resources_binding_conditions import Env as DraEnv
from tests.scheduler.plugins.test_dynamic_resources_binding_conditions import _env as dra_env
from tests.scheduler.test_e2e_volume_binding import SELECTED_NODE, Env, claim, node, pod, storage_class, volume

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


async def _running(gates: str | None) -> AsyncIterator[Env]:
    client = await LocalClient.in_memory()
    for n in ("node-a", "node-b"):
        await client.create(client.resource("nodes"), node(n))
    config = default_config() if gates is None else parse_config(CONFIG, feature_gates=parse_feature_gates(gates))
    scheduler = Scheduler(client, rng=random.Random(0), config=config)
    task = asyncio.ensure_future(scheduler.run())
    try:
        yield Env(client)
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async for e in _running(None):
        yield e


@pytest.fixture
async def env_gate_off() -> AsyncIterator[Env]:
    async for e in _running("NominatedNodeNameForExpectation=false"):
        yield e


async def _nominated(env: Env, name: str) -> str:
    got = await env.client.get(env.pods, name, namespace="default")
    return str((got.get("status") or {}).get("nominatedNodeName") or "")


async def _held_in_pre_bind(env: Env) -> str:
    """A pod with an unbound WFFC claim: returns the node PreBind selected, the pod still unbound."""
    await env.create(storage_class("wffc", "csi.kubeplane.io"))
    await env.create(claim("data", "wffc"))
    await env.create(pod("web", "data"))

    async def selected() -> str:
        pvc = await env.client.get(env.pvcs, "data", namespace="default")
        return str((pvc["metadata"].get("annotations") or {}).get(SELECTED_NODE) or "")

    chosen = str(await env.wait_for("the PVC's selected-node", selected))
    assert await env.node_of("web") == ""
    return chosen


async def test_a_pod_with_an_unbound_wffc_claim_is_nominated_before_prebind_and_binding_clears_it(env: Env) -> None:
    chosen = await _held_in_pre_bind(env)
    # Set before PreBind ran (PreBind wrote selected-node after it) and kept while PreBind waits.
    assert await _nominated(env, "web") == chosen
    await env.create(volume("pvc-data", "wffc", chosen))
    await env.bind_claim("data", "pvc-data")

    async def bound() -> str:
        return await env.node_of("web")

    assert await env.wait_for("the pod to be bound", bound) == chosen
    assert await _nominated(env, "web") == ""  # the binding subresource cleared it


async def test_with_the_gate_off_the_waiting_pod_is_not_nominated(env_gate_off: Env) -> None:
    env = env_gate_off
    chosen = await _held_in_pre_bind(env)
    for _ in range(5):
        await asyncio.sleep(0.02)
        assert await _nominated(env, "web") == ""
    await env.create(volume("pvc-data", "wffc", chosen))
    await env.bind_claim("data", "pvc-data")

    async def bound() -> str:
        return await env.node_of("web")

    assert await env.wait_for("the pod to be bound", bound) == chosen


async def test_a_plain_pod_is_bound_without_ever_being_nominated(env: Env) -> None:
    pods = env.client.resource("pods")
    listed = await env.client.list(pods, namespace="default")
    versions: list[dict[str, Any]] = []
    watch = await env.client.watch(pods, namespace="default", resource_version=listed["metadata"]["resourceVersion"])
    plain = pod("plain", "unused")
    del plain["spec"]["volumes"]
    await env.create(plain)

    async def bound() -> str:
        return await env.node_of("plain")

    assert await env.wait_for("the pod to be bound", bound)
    async with asyncio.timeout(10):
        async for event in watch:  # every version of the pod, in order, up to the bound one
            obj = event.get("object") or {}
            if event.get("type") == "BOOKMARK":
                continue
            versions.append(obj)
            if (obj.get("spec") or {}).get("nodeName"):
                break
    await watch.close()
    assert versions, "the watch saw no version of the pod"
    assert all(not (v.get("status") or {}).get("nominatedNodeName") for v in versions)


@pytest.fixture
async def dra() -> AsyncIterator[DraEnv]:
    async for e in dra_env(None):
        yield e


async def test_a_pod_with_a_dra_claim_is_nominated_while_prebind_waits_for_binding_conditions(dra: DraEnv) -> None:
    await dra.until("the allocation written by PreBind", dra.allocated)

    async def nominated() -> str:
        return str(((await dra.pod()).get("status") or {}).get("nominatedNodeName") or "")

    assert await dra.until("the nomination", nominated) == "node01"
    assert not (await dra.pod())["spec"].get("nodeName")
    await dra.set_condition(ATTACHED, "Attached", "the device is attached")
    await dra.advance(5)

    async def bound() -> str:
        return str((await dra.pod())["spec"].get("nodeName") or "")

    assert await dra.until("the pod bound", bound) == "node01"
    assert await nominated() == ""
