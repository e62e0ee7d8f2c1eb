"""DynamicResources' extended resources backed by DRA through the API (an in-memory API server): what PreBind,
Unreserve and PostFilter write, and the request/mapping layout.

Pins upstream v1.37 ``dynamicresources_test.go`` TestPlugin's follow-ups of the cases the conformance table
replays only up to Reserve: "extended-resource-name-with-resources" (PreBind creates
``my-pod-extended-resources-*`` reserved for the pod and sets ``pod.status.extendedResourceClaimStatus``),
"extended-resource-name-bind-failure" (Unreserve deletes the created claim),
"extended-resource-name-claim-creation-failure" (PreBind's error), "extended-resource-name-with-resources-has-claim"
(PostFilter: "deletion of ResourceClaim completed", the claim deleted); ``createRequestsAndMappings`` for init,
sidecar and regular containers; the claim assume cache's wait for a created claim
(``waitForExtendedClaimInAssumeCache``).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.dra.extended import DeviceClassResolver, requests_and_mappings
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState, NodeToStatus
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import dynamic_resources
from kubeplane.scheduler.plugins.dynamic_resources_claims import InFlight

GPU = "example.com/gpu"
CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "my-resource-class"},
    "spec": {"extendedResourceName": GPU},
}
SLICE = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceSlice",
    "metadata": {"name": "worker-some-driver"},
    "spec": {
        "driver": "some-driver",
        "nodeName": "worker",
        "pool": {"name": "worker", "generation": 0, "resourceSliceCount": 1},
        "devices": [{"name": "instance-1"}],
    },
}
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "worker", "labels": {"kubernetes.io/hostname": "worker"}},
    "status": {"capacity": {"pods": "32"}, "allocatable": {"pods": "32"}},
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "my-pod", "namespace": "default"},
    "spec": {
        "containers": [{"name": "con0", "image": "pause", "resources": {"requests": {GPU: "1"}, "limits": {GPU: "1"}}}]
    },
}


class Cluster:
    """An in-memory API server and a synchronous view of its DRA objects for ``Handle.list_objects`` (refreshed
    with :meth:`sync`, as the scheduler's informers would be)."""

    def __init__(self, client: LocalClient) -> None:
        self.client = client
        self.objects: dict[str, list[Mapping[str, Any]]] = {}

    async def sync(self) -> None:
        for plural in ("deviceclasses", "resourceclaims", "resourceslices"):
            self.objects[plural] = list((await self.client.list(self.client.resource(plural)))["items"])

    def list_objects(self, plural: str, namespace: str) -> Sequence[Mapping[str, Any]]:
        items = self.objects.get(plural, [])
        return [o for o in items if not namespace or o["metadata"].get("namespace") == namespace]

    async def claims(self) -> list[dict[str, Any]]:
        return list((await self.client.list(self.client.resource("resourceclaims"), namespace="default"))["items"])


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    client = await LocalClient.in_memory(clock=FakeClock())
    for obj, plural in ((CLASS, "deviceclasses"), (SLICE, "resourceslices"), (NODE, "nodes")):
        await client.create(client.resource(plural), copy.deepcopy(obj))
    c = Cluster(client)
    await c.sync()
    yield c
    await client.close()


async def _schedule(cluster: Cluster, pod: Mapping[str, Any]) -> tuple[Any, CycleState, PodInfo]:
    """PreFilter, Filter and Reserve on the one node, as the scheduling cycle runs them."""
    handle = Handle(client=cluster.client, clock=FakeClock(), list_objects=cluster.list_objects)
    plugin = dynamic_resources.new({}, handle)
    info, state = PodInfo(pod), CycleState()
    assert plugin.pre_filter(state, info, [NodeInfo(NODE)]) == (None, None)
    assert plugin.filter(state, info, NodeInfo(NODE)) is None
    assert plugin.reserve(state, info, "worker") is None
    return plugin, state, info


async def _created_pod(cluster: Cluster) -> dict[str, Any]:
    return dict(await cluster.client.create(cluster.client.resource("pods"), copy.deepcopy(POD), namespace="default"))


async def test_prebind_creates_the_claim_and_names_it_in_the_pod_status(cluster: Cluster) -> None:
    pod = await _created_pod(cluster)
    plugin, state, info = await _schedule(cluster, pod)
    assert await plugin.pre_bind(state, info, "worker") is None
    (claim,) = await cluster.claims()
    meta = claim["metadata"]
    assert meta["name"].startswith("my-pod-extended-resources-")
    assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
    assert meta["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]
    assert meta["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["request"], result["pool"], result["device"]) == ("container-0-request-0", "worker", "instance-1")
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "my-pod", "uid": pod["metadata"]["uid"]}]
    got = await cluster.client.get(cluster.client.resource("pods"), "my-pod", namespace="default")
    assert got["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [{"containerName": "con0", "resourceName": GPU, "requestName": "container-0-request-0"}],
        "resourceClaimName": meta["name"],
    }
    # the created claim stays assumed (its device in use) although the informer has not delivered it yet
    uid = meta["uid"]
    assert uid in plugin.in_flight.assumed
    assert uid in plugin.in_flight.created
    (seen,) = plugin.in_flight.overlay([], 0.0)
    assert seen["metadata"]["uid"] == uid


async def test_unreserve_deletes_a_created_claim(cluster: Cluster) -> None:
    """ "extended-resource-name-bind-failure": binding fails after PreBind, Unreserve deletes the claim."""
    pod = await _created_pod(cluster)
    plugin, state, info = await _schedule(cluster, pod)
    assert await plugin.pre_bind(state, info, "worker") is None
    assert len(await cluster.claims()) == 1
    plugin.unreserve(state, info, "worker")
    await asyncio.gather(*plugin._tasks)
    assert await cluster.claims() == []
    assert plugin.in_flight.assumed == {}
    assert plugin.in_flight.claims == {}


async def test_claim_creation_failure_fails_prebind(cluster: Cluster) -> None:
    """ "extended-resource-name-claim-creation-failure": PreBind returns the creation error; nothing in flight."""
    pod = await _created_pod(cluster)
    plugin, state, info = await _schedule(cluster, pod)

    async def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("claim creation errors")

    cluster.client.create = refuse  # type: ignore[method-assign]
    status = await plugin.pre_bind(state, info, "worker")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.message() == "create claim for extended resources default/: claim creation errors"
    assert plugin.in_flight.claims == {}


async def test_postfilter_deletes_a_claim_left_by_a_former_cycle(cluster: Cluster) -> None:
    """ "extended-resource-name-with-resources-has-claim": Filter rejects the stale claim ("cannot schedule
    extended resource claim"), PostFilter deletes it ("deletion of ResourceClaim completed")."""
    pod = await _created_pod(cluster)
    stale = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": "my-pod-extended-resources-0",
            "namespace": "default",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "my-pod", "uid": pod["metadata"]["uid"], "controller": True}
            ],
            "finalizers": ["resource.kubernetes.io/delete-protection"],
        },
        "spec": {
            "devices": {
                "requests": [{"name": "container-0-request-0", "exactly": {"deviceClassName": "my-resource-class"}}]
            }
        },
    }
    await cluster.client.create(cluster.client.resource("resourceclaims"), stale, namespace="default")
    await cluster.sync()
    handle = Handle(client=cluster.client, clock=FakeClock(), list_objects=cluster.list_objects)
    plugin = dynamic_resources.new({}, handle)
    info, state = PodInfo(pod), CycleState()
    assert plugin.pre_filter(state, info, [NodeInfo(NODE)]) == (None, None)
    status = plugin.filter(state, info, NodeInfo(NODE))
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("cannot schedule extended resource claim",)
    _, post = plugin.post_filter(state, info, NodeToStatus())
    assert post is not None
    assert post.code == Code.UNSCHEDULABLE
    assert post.reasons == ("deletion of ResourceClaim completed",)
    await asyncio.gather(*plugin._tasks)
    assert await cluster.claims() == []


def test_a_created_claim_stays_assumed_until_delivered_or_expired() -> None:
    """``waitForExtendedClaimInAssumeCache``: at most 120 s (AssumeExtendedResourceTimeoutDefaultSeconds)."""
    flight = InFlight()
    claim = {"metadata": {"uid": "u", "name": "c", "resourceVersion": "3"}, "status": {"allocation": {}}}
    flight.assume_created("u", claim, until=120.0)
    assert flight.overlay([], 10.0) == [claim]
    assert flight.overlay([claim], 20.0) == [claim]
    assert flight.created == {}
    flight.assume_created("u", claim, until=120.0)
    assert flight.overlay([], 120.0) == []
    assert flight.assumed == {}


def _resolver() -> DeviceClassResolver:
    return DeviceClassResolver.from_classes([CLASS])


def _container(name: str, gpus: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": {"cpu": "1", GPU: str(gpus)}}, **extra}


def test_requests_and_mappings_regular_containers() -> None:
    """Request ``container-<i>-request-<j>``: j is the resource's index in the container's sorted requests."""
    pod = {"spec": {"containers": [_container("a", 1), _container("b", 2)]}}
    requests, mappings = requests_and_mappings(pod, [GPU], _resolver())
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [
        ("container-0-request-1", 1),
        ("container-1-request-1", 2),
    ]
    assert [(m["containerName"], m["requestName"]) for m in mappings] == [
        ("a", "container-0-request-1"),
        ("b", "container-1-request-1"),
    ]


def test_requests_and_mappings_init_containers_reuse_later_requests() -> None:
    """Non-sidecar init containers first reuse the long-lived containers' requests after them; the largest
    remainder is their one request (upstream ``createRequestsAndMappings``)."""
    pod = {
        "spec": {
            "initContainers": [
                _container("init0", 3),
                _container("init1", 1),
                _container("sidecar", 1, restartPolicy="Always"),
            ],
            "containers": [_container("main", 1)],
        }
    }
    requests, mappings = requests_and_mappings(pod, [GPU], _resolver())
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [
        ("container-0-request-1", 1),  # init0: 3 - the 2 it reuses (sidecar's and main's)
        ("container-2-request-1", 1),
        ("container-3-request-1", 1),
    ]
    assert [(m["containerName"], m["requestName"]) for m in mappings] == [
        ("sidecar", "container-2-request-1"),
        ("main", "container-3-request-1"),
        ("init0", "container-2-request-1"),
        ("init0", "container-3-request-1"),
        ("init0", "container-0-request-1"),
        ("init1", "container-2-request-1"),
    ]


def test_resolver_prefers_the_class_created_last() -> None:
    """KEP-5004: several classes naming one resource -> the newest, then the name sorted first."""

    def cls(name: str, created: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "creationTimestamp": created}, "spec": {"extendedResourceName": GPU}}

    resolver = DeviceClassResolver.from_classes(
        [cls("b", "2026-01-02T00:00:00Z"), cls("c", "2026-01-02T00:00:00Z"), cls("a", "2026-01-01T00:00:00Z")]
    )
    assert resolver.class_name(GPU) == "b"
    assert resolver.class_name("deviceclass.resource.kubernetes.io/a") == "a"


async def test_pre_bind_pre_flight_succeeds_with_claims_and_skips_without(cluster: Cluster) -> None:
    """Upstream ``PreBindPreFlight``: Success when the pod has claims (here only the special extended-resource
    claim), Skip for a pod without any (PreFilter skipped it), an error without the plugin's state."""
    pod = await _created_pod(cluster)
    plugin, state, info = await _schedule(cluster, pod)
    assert plugin.pre_bind_pre_flight(state, info, "worker") is None
    plain = PodInfo({**pod, "spec": {"containers": [{"name": "c", "image": "pause"}]}})
    no_claims = CycleState()
    _, skipped = plugin.pre_filter(no_claims, plain, [NodeInfo(NODE)])
    assert skipped is not None
    assert skipped.code == Code.SKIP
    status = plugin.pre_bind_pre_flight(no_claims, plain, "worker")
    assert status is not None
    assert status.code == Code.SKIP
    missing = plugin.pre_bind_pre_flight(CycleState(), plain, "worker")
    assert missing is not None
    assert missing.code == Code.ERROR
