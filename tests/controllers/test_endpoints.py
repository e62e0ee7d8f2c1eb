"""The Endpoints, EndpointSlice and EndpointSlice-mirroring controllers over the in-process API server, after
upstream's ``endpoints_controller_test.go``, ``endpointslice_controller_test.go`` / ``reconciler_test.go`` and
``endpointslicemirroring_controller_test.go``; and the pure helpers (``RepackSubsets``, ``truncateEndpoints``,
``FindPort``) after their Go tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.errors import NotFoundError
from kubeplane.controllers.endpoints import EndpointsController
from kubeplane.controllers.endpoints_mirroring import EndpointSliceMirroringController
from kubeplane.controllers.endpoints_slice import EndpointSliceController
from kubeplane.controllers.endpoints_subsets import repack_subsets, truncate
from kubeplane.controllers.endpoints_util import find_port
from kubeplane.controllers.manager import available_controllers
from tests.controllers import harness
from tests.controllers.harness import eventually

NS = "default"
LABELS = {"app": "web"}
Obj = dict[str, Any]
Env = harness.Env[EndpointsController]


async def _setup_node(env: Env) -> None:
    node = {"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}}}
    await env.client.create(env.res("nodes"), node)


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with harness.running(
        EndpointsController,
        EndpointSliceController,
        EndpointSliceMirroringController,
        setup=_setup_node,
        options={"endpointslice": {"maxEndpointsPerSlice": 2}},
    ) as e:
        yield e


async def make_service(env: Env, name: str = "web", *, selector: dict[str, str] | None = None, **spec: Any) -> Obj:
    families = {} if spec.get("type") == "ExternalName" else {"ipFamilies": ["IPv4"]}
    body: Obj = {
        "metadata": {"name": name, "labels": {"team": "a"}},
        "spec": {
            **families,
            "ports": [{"name": "http", "port": 80, "targetPort": "http"}],
            **({"selector": selector} if selector is not None else {}),
            **spec,
        },
    }
    return await env.client.create(env.res("services"), body, namespace=NS)


async def make_pod(env: Env, name: str, ip: str, *, ready: bool = True, node: str = "n1") -> Obj:
    pod = {
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "nginx", "ports": [{"name": "http", "containerPort": 8080}]}],
        },
    }
    created = await env.client.create(env.res("pods"), pod, namespace=NS)
    return await set_status(env, name, ip, ready=ready, created=created)


async def set_status(env: Env, name: str, ip: str, *, ready: bool, created: Obj | None = None) -> Obj:
    pod = created or await env.client.get(env.res("pods"), name, namespace=NS)
    when = "2027-01-01T00:00:00Z" if ready else "2027-01-01T00:00:05Z"
    status = {**harness.ready_status(when, ready=ready), "podIP": ip, "podIPs": [{"ip": ip}]}
    pod["status"] = {**(pod.get("status") or {}), **status}
    return await env.client.update(env.res("pods"), pod, namespace=NS, subresource="status")


async def get_endpoints(env: Env, name: str = "web") -> Obj | None:
    try:
        return await env.client.get(env.res("endpoints"), name, namespace=NS)
    except NotFoundError:
        return None


async def slices(env: Env, manager: str = "endpointslice-controller.k8s.io") -> list[Obj]:
    items = (await env.client.list(env.res("endpointslices"), namespace=NS))["items"]
    return [s for s in items if s["metadata"]["labels"].get("endpointslice.kubernetes.io/managed-by") == manager]


def addresses(slice_list: list[Obj]) -> dict[str, dict[str, bool]]:
    return {e["addresses"][0]: e["conditions"] for s in slice_list for e in s.get("endpoints") or []}


# --- registration -----------------------------------------------------------------------------------------


def test_the_manager_runs_the_three_controllers() -> None:
    names = list(available_controllers())
    assert {"endpoint", "endpointslice", "endpointslicemirroring"} <= set(names)


# --- Endpoints (pkg/controller/endpoint) ------------------------------------------------------------------


async def test_endpoints_list_ready_and_not_ready_pods_with_resolved_ports(env: Env) -> None:
    """Upstream TestSyncEndpointsItemsPreexisting / TestSyncEndpointsNotReady*: ready pods in addresses, others in
    notReadyAddresses; a named targetPort resolves to the container port; labels come from the Service; no
    headless label for a Service with a ClusterIP; the last-change-trigger-time annotation."""
    await make_service(env, selector=LABELS)
    p1 = await make_pod(env, "p1", "10.0.0.1")
    await make_pod(env, "p2", "10.0.0.2", ready=False)

    async def both() -> Obj | None:
        ep = await get_endpoints(env)
        subsets = (ep or {}).get("subsets") or []
        return ep if subsets and subsets[0].get("addresses") and subsets[0].get("notReadyAddresses") else None

    ep = await eventually(both, "endpoints with both pods")
    assert ep is not None
    (subset,) = ep["subsets"]
    assert subset["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    assert subset["addresses"] == [
        {
            "ip": "10.0.0.1",
            "nodeName": "n1",
            "targetRef": {"kind": "Pod", "namespace": NS, "name": "p1", "uid": p1["metadata"]["uid"]},
        }
    ]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.0.0.2"]
    assert ep["metadata"]["labels"] == {"team": "a"}  # the Service has a ClusterIP: no headless label
    assert "endpoints.kubernetes.io/last-change-trigger-time" in ep["metadata"]["annotations"]

    await set_status(env, "p2", "10.0.0.2", ready=True)

    async def two_ready() -> bool:
        ep = await get_endpoints(env)
        return [a["ip"] for a in ep["subsets"][0].get("addresses") or []] == ["10.0.0.1", "10.0.0.2"] if ep else False

    await eventually(two_ready, "p2 ready")


async def test_publish_not_ready_addresses_and_terminating_pods(env: Env) -> None:
    """Upstream TestSyncEndpointsItemsPreexistingLabelsChange/…PublishNotReady: with publishNotReadyAddresses every
    pod with an IP is an address; without it a terminating pod leaves the Endpoints."""
    await make_service(env, "open", selector=LABELS, publishNotReadyAddresses=True)
    await make_service(env, selector=LABELS)
    await make_pod(env, "p1", "10.0.0.1", ready=False)

    async def published() -> bool:
        ep = await get_endpoints(env, "open")
        return bool(ep and ep.get("subsets") and ep["subsets"][0].get("addresses"))

    await eventually(published, "not-ready pod published")
    pod = await env.client.get(env.res("pods"), "p1", namespace=NS)
    await set_status(env, "p1", "10.0.0.1", ready=True, created=pod)
    await env.client.delete(env.res("pods"), "p1", namespace=NS)  # graceful: bound, so it lingers terminating

    async def gone_from_web() -> bool:
        ep = await get_endpoints(env)
        return ep is not None and not ep.get("subsets")

    await eventually(gone_from_web, "terminating pod dropped from Endpoints")


async def test_endpoints_follow_the_service(env: Env) -> None:
    """Upstream TestSyncEndpointsServiceNotFound and the ExternalName / selector-less skips."""
    await make_service(env, selector=LABELS)
    await make_pod(env, "p1", "10.0.0.1")
    await eventually(lambda: get_endpoints(env), "endpoints created")
    await env.client.delete(env.res("services"), "web", namespace=NS)

    async def deleted() -> bool:
        return await get_endpoints(env) is None

    await eventually(deleted, "endpoints deleted with the service")
    await make_service(env, "ext", type="ExternalName", externalName="example.com", ports=[])
    await make_service(env, "manual")
    await harness.settle(200)
    assert await get_endpoints(env, "ext") is None
    assert await get_endpoints(env, "manual") is None


# --- EndpointSlices (pkg/controller/endpointslice, k8s.io/endpointslice) ------------------------------------


async def test_slices_name_label_own_and_split_at_the_maximum(env: Env) -> None:
    """Upstream TestReconcile1Pod / TestReconcileManyPods: slices named by generateName ``<service>-``, labelled
    with the service name, managed-by and the Service's labels, owned by the Service, at most
    maxEndpointsPerSlice endpoints each (2 here, 100 by default)."""
    svc = await make_service(env, selector=LABELS)
    for i in range(1, 6):
        await make_pod(env, f"p{i}", f"10.0.0.{i}", ready=i != 5)

    async def five() -> list[Obj] | None:
        found = await slices(env)
        return found if len(addresses(found)) == 5 else None

    found = await eventually(five, "5 endpoints")
    assert found is not None
    assert sorted(len(s["endpoints"]) for s in found) == [1, 2, 2]
    for s in found:
        assert s["metadata"]["name"].startswith("web-")
        assert len(s["metadata"]["name"]) == len("web-") + 5
        assert s["metadata"]["labels"] == {
            "team": "a",
            "kubernetes.io/service-name": "web",
            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
        }
        (owner,) = s["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Service",
            "web",
            svc["metadata"]["uid"],
            True,
        )
        assert s["addressType"] == "IPv4"
        assert s["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    endpoint = next(e for s in found for e in s["endpoints"] if e["addresses"] == ["10.0.0.1"])
    assert endpoint["nodeName"] == "n1"
    assert endpoint["zone"] == "z1"
    assert endpoint["targetRef"]["name"] == "p1"
    assert addresses(found)["10.0.0.5"] == {"ready": False, "serving": False, "terminating": False}
    assert addresses(found)["10.0.0.1"] == {"ready": True, "serving": True, "terminating": False}


async def test_terminating_pods_stay_serving_then_a_placeholder_remains(env: Env) -> None:
    """Upstream TestPodToEndpoint (terminating: ready false, serving as Ready, terminating true) and
    TestReconcileEmpty (a Service without endpoints keeps one empty placeholder slice)."""
    await make_service(env, selector=LABELS)
    await make_pod(env, "p1", "10.0.0.1")
    await eventually(lambda: _has(env, "10.0.0.1"), "endpoint")
    await env.client.delete(env.res("pods"), "p1", namespace=NS)

    async def terminating() -> bool:
        return addresses(await slices(env)).get("10.0.0.1") == {"ready": False, "serving": True, "terminating": True}

    await eventually(terminating, "terminating endpoint")
    await env.client.delete(env.res("pods"), "p1", namespace=NS, grace_period_seconds=0)

    async def placeholder() -> list[Obj] | None:
        found = await slices(env)
        return found if len(found) == 1 and not found[0].get("endpoints") else None

    found = await eventually(placeholder, "placeholder slice")
    assert found is not None
    (empty,) = found
    assert empty["addressType"] == "IPv4"


async def _has(env: Env, ip: str) -> bool:
    return ip in addresses(await slices(env))


async def test_a_deleted_slice_is_recreated(env: Env) -> None:
    """Upstream TestOnEndpointSliceDelete: an unexpected deletion of a managed slice queues its Service."""
    await make_service(env, selector=LABELS)
    await make_pod(env, "p1", "10.0.0.1")
    await eventually(lambda: _has(env, "10.0.0.1"), "endpoint")
    (first,) = await slices(env)
    await env.client.delete(env.res("endpointslices"), first["metadata"]["name"], namespace=NS)

    async def recreated() -> bool:
        found = await slices(env)
        return (
            len(found) == 1
            and found[0]["metadata"]["name"] != first["metadata"]["name"]
            and "10.0.0.1" in addresses(found)
        )

    await env.advance_until(recreated, "slice recreated", step=0.5)


# --- mirroring (pkg/controller/endpointslicemirroring) ------------------------------------------------------


async def test_custom_endpoints_are_mirrored_until_skip_mirror(env: Env) -> None:
    """Upstream TestReconcile (mirroring): a selector-less Service's Endpoints mirrored (ready and not-ready
    addresses, ports, labels, owner reference to the Endpoints); skip-mirror removes the slices."""
    await make_service(env, "db", ports=[{"name": "pg", "port": 5432}])
    body = {
        "metadata": {"name": "db", "labels": {"tier": "data"}},
        "subsets": [
            {
                "addresses": [{"ip": "192.168.1.10"}],
                "notReadyAddresses": [{"ip": "192.168.1.11"}, {"ip": "not-an-ip"}],
                "ports": [{"name": "pg", "port": 5432}],
            }
        ],
    }
    ep = await env.client.create(env.res("endpoints"), body, namespace=NS)
    manager = "endpointslicemirroring-controller.k8s.io"

    async def mirrored() -> list[Obj] | None:
        found = await slices(env, manager)
        return found if found and len(addresses(found)) == 2 else None

    found = await eventually(mirrored, "mirrored slice")
    assert found is not None
    (s,) = found
    assert addresses([s]) == {"192.168.1.10": {"ready": True}, "192.168.1.11": {"ready": False}}
    assert s["ports"] == [{"name": "pg", "protocol": "TCP", "port": 5432}]
    assert s["metadata"]["labels"] == {
        "tier": "data",
        "kubernetes.io/service-name": "db",
        "endpointslice.kubernetes.io/managed-by": manager,
    }
    (owner,) = s["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("Endpoints", ep["metadata"]["uid"])

    ep = await env.client.get(env.res("endpoints"), "db", namespace=NS)
    ep["metadata"]["labels"]["endpointslice.kubernetes.io/skip-mirror"] = "true"
    await env.client.update(env.res("endpoints"), ep, namespace=NS)

    async def unmirrored() -> bool:
        return not await slices(env, manager)

    await eventually(unmirrored, "mirrored slices deleted")


# --- pure helpers -------------------------------------------------------------------------------------------


def _addr(ip: str, uid: str = "") -> Obj:
    return {"ip": ip, "targetRef": {"kind": "Pod", "uid": uid}} if uid else {"ip": ip}


def test_repack_subsets_groups_addresses_by_their_ports() -> None:
    """Upstream pkg/api/v1/endpoints TestPackSubsets: one address on two ports packs into one subset; an address
    not ready on a port is not-ready there; addresses sort by IP."""
    http, https = {"name": "http", "port": 80, "protocol": "TCP"}, {"name": "https", "port": 443, "protocol": "TCP"}
    packed = repack_subsets(
        [
            {"addresses": [_addr("10.0.0.2")], "ports": [http]},
            {"addresses": [_addr("10.0.0.1")], "ports": [http]},
            {"addresses": [_addr("10.0.0.1")], "ports": [https]},
            {"addresses": [_addr("10.0.0.2")], "ports": [https]},
            {"notReadyAddresses": [_addr("10.0.0.3")], "ports": [http]},
            {"addresses": [_addr("10.0.0.3")], "ports": [http]},
        ]
    )
    assert packed == [
        {"addresses": [_addr("10.0.0.1"), _addr("10.0.0.2")], "ports": [https]},
        {
            "addresses": [_addr("10.0.0.1"), _addr("10.0.0.2")],
            "notReadyAddresses": [_addr("10.0.0.3")],
            "ports": [http],
        },
    ] or packed == [
        {
            "addresses": [_addr("10.0.0.1"), _addr("10.0.0.2")],
            "notReadyAddresses": [_addr("10.0.0.3")],
            "ports": [http],
        },
        {"addresses": [_addr("10.0.0.1"), _addr("10.0.0.2")], "ports": [https]},
    ]
    assert repack_subsets([{"addresses": [_addr("10.0.0.9")]}]) == [{"addresses": [_addr("10.0.0.9")]}]


def test_truncate_keeps_ready_addresses_first() -> None:
    """Upstream TestTruncateEndpoints: over 1000 addresses, not-ready ones are cut first, in proportion."""
    subsets: list[Obj] = [
        {"addresses": [_addr(f"10.0.{i // 250}.{i % 250}") for i in range(600)],
         "notReadyAddresses": [_addr(f"10.1.{i // 250}.{i % 250}") for i in range(300)]},
        {"addresses": [_addr(f"10.2.{i // 250}.{i % 250}") for i in range(200)],
         "notReadyAddresses": [_addr(f"10.3.{i // 250}.{i % 250}") for i in range(100)]},
    ]  # fmt: skip
    assert truncate(subsets)
    assert [len(s["addresses"]) for s in subsets] == [600, 200]
    assert [len(s.get("notReadyAddresses") or []) for s in subsets] == [150, 50]
    assert not truncate([{"addresses": [_addr("10.0.0.1")]}])


def test_find_port_by_number_and_by_name() -> None:
    """Upstream TestFindPort: a number as is; a name among the containers' ports of the same protocol."""
    pod = {"spec": {"containers": [{"name": "c", "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]}}
    assert find_port(pod, {"port": 80, "targetPort": 8080}) == 8080
    assert find_port(pod, {"port": 53, "targetPort": "dns", "protocol": "UDP"}) == 53
    assert find_port(pod, {"port": 53, "targetPort": "dns", "protocol": "TCP"}) is None
    assert find_port(pod, {"port": 80, "targetPort": "http"}) is None


async def test_over_capacity_endpoints_are_truncated_and_annotated(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream TestSyncEndpointsCapacity (maxCapacity 1000, lowered to 2 here): the Endpoints keep ready
    addresses up to the capacity and carry ``endpoints.kubernetes.io/over-capacity: truncated``; back under it,
    the annotation goes."""
    from kubeplane.controllers import endpoints as endpoints_module
    from kubeplane.controllers import endpoints_subsets

    monkeypatch.setattr(endpoints_subsets, "MAX_CAPACITY", 2)
    monkeypatch.setattr(endpoints_module, "MAX_CAPACITY", 2)
    await make_service(env, selector=LABELS)
    for i in range(1, 4):
        await make_pod(env, f"p{i}", f"10.0.0.{i}", ready=i != 3)

    async def truncated() -> Obj | None:
        ep = await get_endpoints(env)
        annotations = (ep or {}).get("metadata", {}).get("annotations") or {}
        return ep if annotations.get("endpoints.kubernetes.io/over-capacity") == "truncated" else None

    ep = await eventually(truncated, "over-capacity annotation")
    assert ep is not None
    (subset,) = ep["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["10.0.0.1", "10.0.0.2"]
    assert "notReadyAddresses" not in subset
    await env.client.delete(env.res("pods"), "p3", namespace=NS, grace_period_seconds=0)

    async def relieved() -> bool:
        ep = await get_endpoints(env)
        return ep is not None and "endpoints.kubernetes.io/over-capacity" not in (
            ep["metadata"].get("annotations") or {}
        )

    await eventually(relieved, "annotation removed")
