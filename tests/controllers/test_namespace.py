"""The namespace controller: deletion conditions (tables after upstream's status_condition_utils_test.go) and
namespaces emptied then removed end to end over the in-process API server, including pods that take their
grace period to go and a controller restarted half way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.controllers.namespace import (
    CONDITION_TYPES,
    ContentTotals,
    NamespaceController,
    deletion_conditions,
    update_conditions,
)
from tests.controllers import harness

NOW = "2027-01-01T00:00:00Z"
LATER = "2027-01-01T00:01:00Z"
HOLD = "example.com/hold"

# --- pure logic --------------------------------------------------------------------------------------------


def _by_type(conditions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in conditions}


def test_all_ok_conditions_when_nothing_remains() -> None:
    status: dict[str, Any] = {}
    assert update_conditions(status, deletion_conditions(ContentTotals(), [], NOW), NOW)
    got = _by_type(status["conditions"])
    assert list(got) == list(CONDITION_TYPES)
    assert {c["status"] for c in got.values()} == {"False"}
    assert got["NamespaceContentRemaining"]["reason"] == "ContentRemoved"
    assert got["NamespaceContentRemaining"]["message"] == "All content successfully removed"
    assert got["NamespaceDeletionContentFailure"]["message"] == (
        "All content successfully deleted, may be waiting on finalization"
    )
    assert not update_conditions(status, deletion_conditions(ContentTotals(), [], LATER), LATER)  # unchanged


@pytest.mark.parametrize(
    ("totals", "errors", "want"),
    [
        (
            ContentTotals({"pods.": 2, "deployments.apps": 1}),
            [],
            {
                "NamespaceContentRemaining": (
                    "SomeResourcesRemain",
                    "Some resources are remaining: deployments.apps has 1 resource instances, "
                    "pods. has 2 resource instances",
                )
            },
        ),
        (
            ContentTotals({"pods.": 2}, {"b/x": 1, "a/y": 2}),
            [],
            {
                "NamespaceFinalizersRemaining": (
                    "SomeFinalizerRemain",
                    "Some finalizers are remaining: a/y in 2 resource instances, b/x in 1 resource instances",
                )
            },
        ),
        (
            ContentTotals(),
            ["zz failed", "aa failed"],
            {
                "NamespaceDeletionContentFailure": (
                    "ContentDeletionFailed",
                    "Failed to delete all resource types, 2 remaining: aa failed, zz failed",
                )
            },
        ),
    ],
)
def test_failing_conditions(totals: ContentTotals, errors: list[str], want: dict[str, tuple[str, str]]) -> None:
    got = _by_type(deletion_conditions(totals, errors, NOW))
    for ctype, (reason, message) in want.items():
        assert got[ctype]["status"] == "True"
        assert (got[ctype]["reason"], got[ctype]["message"]) == (reason, message)


def test_transition_time_moves_only_when_status_flips() -> None:
    status: dict[str, Any] = {}
    update_conditions(status, deletion_conditions(ContentTotals({"pods.": 1}), [], NOW), NOW)
    assert update_conditions(status, deletion_conditions(ContentTotals({"pods.": 2}), [], LATER), LATER)
    remaining = _by_type(status["conditions"])["NamespaceContentRemaining"]
    assert remaining["lastTransitionTime"] == NOW
    assert "pods. has 2" in remaining["message"]
    assert update_conditions(status, deletion_conditions(ContentTotals(), [], LATER), LATER)
    remaining = _by_type(status["conditions"])["NamespaceContentRemaining"]
    assert (remaining["status"], remaining["lastTransitionTime"]) == ("False", LATER)


# --- end to end --------------------------------------------------------------------------------------------


@dataclass
class Env(harness.Env[NamespaceController]):
    async def eventually(self, check: Callable[[], Awaitable[bool]], what: str, *, step: float = 1.0) -> None:
        """Poll ``check`` a bounded number of times, moving the fake clock ``step`` seconds each time."""
        await self.advance_until(check, what, step=step, tries=300, interval=0.002)

    async def namespace(self, name: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(self.res("namespaces"), name)
        except NotFoundError:
            return None

    async def names(self, resource: str, namespace: str) -> list[str]:
        listed = await self.client.list(self.res(resource), namespace=namespace)
        return sorted(i["metadata"]["name"] for i in listed["items"])


def running(client: LocalClient | None = None, clock: FakeClock | None = None) -> AbstractAsyncContextManager[Env]:
    # a new client's API server stamps deletion timestamps on the controller's clock
    return harness.running(NamespaceController, env_cls=Env, client=client, clock=clock)


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with running() as e:
        yield e


async def create_namespace(client: LocalClient, name: str, *, finalizers: tuple[str, ...] = ()) -> None:
    meta: dict[str, Any] = {"name": name}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    await client.create(client.resource("namespaces"), {"metadata": meta})


async def create_pod(client: LocalClient, ns: str, name: str, *, node: str = "") -> None:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node
    await client.create(
        client.resource("pods"), {"metadata": {"name": name, "namespace": ns}, "spec": spec}, namespace=ns
    )


async def populate(client: LocalClient, ns: str) -> None:
    await create_pod(client, ns, "web")
    await client.create(client.resource("configmaps"), {"metadata": {"name": "cfg"}, "data": {"a": "b"}}, namespace=ns)
    service = {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}
    await client.create(client.resource("services"), service, namespace=ns)


async def kubelet_remove(client: LocalClient, ns: str, name: str) -> None:
    """What a kubelet does once a terminating pod's containers stopped: delete it with grace 0."""
    await client.delete(client.resource("pods"), name, namespace=ns, grace_period_seconds=0)


async def test_namespace_is_emptied_then_removed(env: Env) -> None:
    await create_namespace(env.client, "doomed")
    await create_namespace(env.client, "bystander")
    await populate(env.client, "doomed")
    await populate(env.client, "bystander")
    await env.client.delete(env.client.resource("namespaces"), "doomed")
    ns = await env.namespace("doomed")
    assert ns is not None
    assert ns["status"]["phase"] == "Terminating"

    async def gone() -> bool:
        return await env.namespace("doomed") is None

    await env.eventually(gone, "the namespace removed")
    for resource in ("pods", "configmaps", "services"):
        assert await env.names(resource, "doomed") == []
    assert await env.names("pods", "bystander") == ["web"]  # other namespaces keep their content
    assert await env.namespace("bystander") is not None


async def test_namespace_waits_for_terminating_pods(env: Env) -> None:
    await create_namespace(env.client, "slow")
    await create_pod(env.client, "slow", "bound", node="node-1")  # bound: deleted gracefully (30 s)
    await env.client.create(env.client.resource("configmaps"), {"metadata": {"name": "cfg"}}, namespace="slow")
    await env.client.delete(env.client.resource("namespaces"), "slow")

    async def pod_terminating() -> bool:
        pods = (await env.client.list(env.client.resource("pods"), namespace="slow"))["items"]
        return bool(pods) and bool(pods[0]["metadata"].get("deletionTimestamp"))

    await env.eventually(pod_terminating, "the pod marked for graceful deletion")
    assert await env.names("configmaps", "slow") == []
    for _ in range(5):  # well past the first requeue (estimate 30 s -> 16 s), still waiting for the pod
        await env.clock.advance(5)
        await asyncio.sleep(0.002)
    ns = await env.namespace("slow")
    assert ns is not None
    assert ns["spec"]["finalizers"] == ["kubernetes"]

    await kubelet_remove(env.client, "slow", "bound")

    async def gone() -> bool:
        return await env.namespace("slow") is None

    await env.eventually(gone, "the namespace removed once its pod went")


async def test_conditions_report_remaining_content(env: Env) -> None:
    # a metadata finalizer keeps the namespace after ours is released, so its conditions can be read
    await create_namespace(env.client, "held", finalizers=(HOLD,))
    await create_pod(env.client, "held", "bound", node="node-1")
    await env.client.delete(env.client.resource("namespaces"), "held")

    async def remaining_reported() -> bool:
        ns = await env.namespace("held")
        conditions = _by_type((ns or {}).get("status", {}).get("conditions") or [])
        c = conditions.get("NamespaceContentRemaining")
        return c is not None and c["status"] == "True"

    await env.eventually(remaining_reported, "NamespaceContentRemaining", step=0.5)
    ns = await env.namespace("held")
    assert ns is not None
    conditions = _by_type(ns["status"]["conditions"])
    assert conditions["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: pods. has 1 resource instances"
    )
    assert conditions["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
    assert conditions["NamespaceFinalizersRemaining"]["status"] == "False"
    assert conditions["NamespaceDeletionDiscoveryFailure"]["reason"] == "ResourcesDiscovered"

    await kubelet_remove(env.client, "held", "bound")

    async def finalized() -> bool:
        ns = await env.namespace("held")
        return ns is not None and not ns["spec"].get("finalizers")

    await env.eventually(finalized, "our finalizer released")
    ns = await env.namespace("held")
    assert ns is not None
    conditions = _by_type(ns["status"]["conditions"])
    assert conditions["NamespaceContentRemaining"]["status"] == "False"
    assert conditions["NamespaceContentRemaining"]["message"] == "All content successfully removed"
    await env.client.patch(env.client.resource("namespaces"), "held", {"metadata": {"finalizers": None}})
    assert await env.namespace("held") is None


async def test_restart_half_way() -> None:
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)  # deletion timestamps on the controller's clock
    try:
        async with running(client, clock) as env:
            await create_namespace(client, "ns1")
            await populate(client, "ns1")
            await create_pod(client, "ns1", "bound", node="node-1")
            await client.delete(client.resource("namespaces"), "ns1")

            async def only_bound_left() -> bool:
                return await env.names("configmaps", "ns1") == [] and await env.names("pods", "ns1") == ["bound"]

            await env.eventually(only_bound_left, "the first pass")

        await kubelet_remove(client, "ns1", "bound")
        assert await env.namespace("ns1") is not None  # nobody finalizes it while the controller is down

        async with running(client, clock) as env:

            async def gone() -> bool:
                return await env.namespace("ns1") is None

            await env.eventually(gone, "the restarted controller finishing the namespace")
    finally:
        await client.close()


async def test_each_resource_is_emptied_at_one_version(env: Env) -> None:
    """Upstream's deleter walks ``ServerPreferredNamespacedResources``: one version per group and resource, so
    PodGroups (served at v1beta1 and v1alpha3 over one storage) are listed and deleted once, at v1beta1."""
    deletable = env.controller.deletable_resources()
    pairs = [(r.group, r.plural) for r in deletable]
    assert len(pairs) == len(set(pairs))
    assert [r.version for r in deletable if (r.group, r.plural) == ("scheduling.k8s.io", "podgroups")] == ["v1beta1"]
