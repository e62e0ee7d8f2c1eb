"""The kubelet's DRA manager in the fleet (upstream pkg/kubelet/cm/dra/manager.go v1.37 prepareResources /
unprepareResources, kuberuntime SyncPod's FailedPrepareDynamicResources event): a pod starts only once each claim
is allocated to this node's devices and reserved for it; otherwise it stays ContainerCreating with upstream's
event, and is synced again after the resync interval."""

from __future__ import annotations

from typing import Any

from kubeplane.client.interface import Obj
from kubeplane.kubelet.dra.manager import FAILED_PREPARE_REASON, RESYNC_INTERVAL
from kubeplane.kubelet.fleet import FleetOptions
from tests.kubelet.harness import Env, running_fleet

GPU = {"driver": "gpu.example.com", "count": 2, "attributes": {"model": "A100"}}
CONFIG: dict[str, Any] = {
    "csiDrivers": [],
    "nodes": [{"name": "node01", "devices": [GPU]}, {"name": "node02", "devices": [GPU]}, {"name": "bare"}],
}
CLAIM_SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}


def allocation(node: str, device: str = "gpu-0", driver: str = "gpu.example.com") -> Obj:
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {
        "devices": {"results": [{"request": "gpu", "driver": driver, "pool": node, "device": device}]},
        "nodeSelector": {"nodeSelectorTerms": [term]},
    }


async def claim(env: Env, name: str, status: Obj | None = None) -> Obj:
    res = env.client.resource("resourceclaims")
    body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name}, "spec": CLAIM_SPEC}
    made = await env.client.create(res, body, namespace="default")
    if status is not None:
        made = await env.client.update(res, {**made, "status": status}, namespace="default", subresource="status")
    return made


async def set_status(env: Env, name: str, status: Obj) -> None:
    res = env.client.resource("resourceclaims")
    current = await env.client.get(res, name, namespace="default")
    await env.client.update(res, {**current, "status": status}, namespace="default", subresource="status")


async def dra_pod(env: Env, name: str, claim_name: str, node: str = "node01", **kw: Any) -> Obj:
    containers = [{"name": "app", "image": "nginx:1.27", "resources": {"claims": [{"name": "gpu"}]}}]
    return await env.create_pod(
        name, node=node, containers=containers, resourceClaims=[{"name": "gpu", "resourceClaimName": claim_name}], **kw
    )


def reserved(pod: Obj) -> list[Obj]:
    return [{"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}]


async def failures(env: Env, pod: str) -> list[str]:
    return [e["message"] for e in await env.events(pod) if e["reason"] == FAILED_PREPARE_REASON]


async def test_unreserved_claim_blocks_until_reserved_then_runs_and_unprepares() -> None:
    """prepareResources: "pod %s (%s) is not allowed to use ResourceClaim %s (%s)", then success on resync."""
    async with running_fleet(CONFIG, FleetOptions()) as env:
        made = await claim(env, "c1", {"allocation": allocation("node01")})
        pod = await dra_pod(env, "p1", "c1")

        async def failed() -> bool:
            return bool(await failures(env, "p1"))

        await env.until(failed, "the FailedPrepareDynamicResources event")
        [message] = await failures(env, "p1")
        assert message == (
            "Failed to prepare dynamic resources: prepare dynamic resources: pod p1 "
            f"({pod['metadata']['uid']}) is not allowed to use ResourceClaim c1 ({made['metadata']['uid']})"
        )
        assert await env.phase("p1") == "Pending"
        waiting = (await env.pod("p1"))["status"]["containerStatuses"][0]["state"]["waiting"]
        assert waiting["reason"] == "ContainerCreating"
        await set_status(env, "c1", {"allocation": allocation("node01"), "reservedFor": reserved(pod)})
        await env.clock.advance(RESYNC_INTERVAL)
        await env.until(lambda: env.is_phase("p1", "Running"), "p1 running", step=1.0)
        assert env.fleet.dra.prepared_devices("node01") == {"default/c1": [("gpu.example.com", "node01", "gpu-0")]}
        await env.client.delete(env.pods, "p1", namespace="default")

        async def unprepared() -> bool:
            return env.fleet.dra.prepared_devices("node01") == {}

        await env.until(unprepared, "the claim unprepared", step=1.0)


async def test_claim_allocated_to_another_node_is_refused() -> None:
    """The simulated driver's NodePrepareResources refuses an allocation for another node's pool; upstream frames
    it as "NodePrepareResources failed for ResourceClaim %s: %s"."""
    async with running_fleet(CONFIG, FleetOptions()) as env:
        await claim(env, "c2")
        pod = await dra_pod(env, "p2", "c2")
        await set_status(env, "c2", {"allocation": allocation("node02"), "reservedFor": reserved(pod)})
        await env.clock.advance(RESYNC_INTERVAL)

        async def refused() -> bool:
            return any("NodePrepareResources failed" in m for m in await failures(env, "p2"))

        await env.until(refused, "the refusal", step=1.0)
        message = next(m for m in await failures(env, "p2") if "NodePrepareResources" in m)
        assert message.startswith(
            "Failed to prepare dynamic resources: prepare dynamic resources: "
            "NodePrepareResources failed for ResourceClaim c2: "
        )
        assert "does not match node node01" in message
        assert await env.phase("p2") == "Pending"
        assert env.fleet.dra.prepared_devices("node01") == {}


async def test_unallocated_claim_unknown_driver_and_missing_claim() -> None:
    """ "pod %s (%s) is not allowed to use ResourceClaim %s (%s)" (a claim neither allocated nor reserved: the API
    refuses reservedFor without an allocation, so upstream's "not allocated" check cannot be reached through it),
    "DRA driver %s is not registered", "fetch ResourceClaim %s: ..." and resourceclaim.Name's "ResourceClaim not
    created yet" for a template claim not recorded in the pod status."""
    async with running_fleet(CONFIG, FleetOptions()) as env:
        await claim(env, "c3")
        await dra_pod(env, "p3", "c3", node="bare")
        await claim(env, "c4")
        pod4 = await dra_pod(env, "p4", "c4", node="bare")
        await set_status(env, "c4", {"allocation": allocation("bare"), "reservedFor": reserved(pod4)})
        await dra_pod(env, "p5", "nope", node="bare")
        containers = [{"name": "app", "image": "nginx:1.27"}]
        await env.create_pod(
            "p6", node="bare", containers=containers, resourceClaims=[{"name": "g", "resourceClaimTemplateName": "t"}]
        )
        await env.clock.advance(RESYNC_INTERVAL)

        async def all_failed() -> bool:
            return all([await failures(env, p) for p in ("p3", "p4", "p5", "p6")])

        await env.until(all_failed, "four failures", step=1.0)
        prefix = "Failed to prepare dynamic resources: prepare dynamic resources: "
        assert any(
            m.startswith(prefix + "pod p3 (") and "is not allowed to use ResourceClaim c3 (" in m
            for m in await failures(env, "p3")
        )
        assert prefix + "DRA driver gpu.example.com is not registered" in await failures(env, "p4")
        assert any(m.startswith(prefix + "fetch ResourceClaim nope: ") for m in await failures(env, "p5"))
        assert prefix + 'pod "default/p6": ResourceClaim not created yet' in await failures(env, "p6")


async def test_shared_claim_is_unprepared_by_its_last_pod() -> None:
    """unprepareResources: a claim other pods still reference is only dereferenced."""
    async with running_fleet(CONFIG, FleetOptions()) as env:
        await claim(env, "shared")
        a = await dra_pod(env, "a", "shared")
        b = await dra_pod(env, "b", "shared")
        await set_status(env, "shared", {"allocation": allocation("node01"), "reservedFor": reserved(a) + reserved(b)})
        await env.clock.advance(RESYNC_INTERVAL)
        await env.until(lambda: env.is_phase("a", "Running"), "a running", step=1.0)
        await env.until(lambda: env.is_phase("b", "Running"), "b running", step=1.0)
        assert env.fleet.dra.prepared["node01"]["default/shared"].pods == {a["metadata"]["uid"], b["metadata"]["uid"]}
        await env.client.delete(env.pods, "a", namespace="default")

        async def only_b() -> bool:
            entry = env.fleet.dra.prepared["node01"].get("default/shared")
            return entry is not None and entry.pods == {b["metadata"]["uid"]}

        await env.until(only_b, "a dereferenced", step=1.0)
