"""Both transports behave identically: the same scripted operations give the same results, errors and watch
streams over HTTP (a real uvicorn server in this event loop) and in-process.

Each side gets its own registry with the same seeded randomness and the same frozen clock, so uids, names,
timestamps and resourceVersions must match exactly, not just in shape.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import random
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

import pytest
import uvicorn

from kubeplane.api.resources import ResourceInfo
from kubeplane.apiserver import dispatch
from kubeplane.apiserver.http.app import APIServerApp
from kubeplane.apiserver.listing import ListOptions
from kubeplane.apiserver.registry import Registry
from kubeplane.client.errors import APIStatusError
from kubeplane.client.http import HTTPClient
from kubeplane.client.interface import Client, PatchType
from kubeplane.client.kubeconfig import ClientConfig
from kubeplane.client.local import LocalClient
from kubeplane.store.memory import MemoryStore

NOW = 1_800_000_000.0


def _registry() -> Registry:
    return Registry(store=MemoryStore(), now=lambda: NOW, rng=random.Random(42))


@pytest.fixture
async def http_client() -> AsyncIterator[HTTPClient]:
    registry = _registry()
    await registry.start()
    app = APIServerApp(registry, tokens={"secret": "admin"})
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.01)
    client = HTTPClient(ClientConfig(server=f"http://127.0.0.1:{sock.getsockname()[1]}", token="secret", qps=0))
    yield client
    await client.close()
    app.close_watches()
    server.should_exit = True
    await task
    sock.close()
    await registry.stop()


@pytest.fixture
async def local_client() -> AsyncIterator[LocalClient]:
    registry = _registry()
    await registry.start()
    client = LocalClient(registry)
    yield client
    await client.close()
    await registry.stop()


async def _outcome(call: Any) -> Any:
    try:
        return await call
    except APIStatusError as exc:
        return {"error": type(exc).__name__, "status": exc.status}


async def script(client: Client) -> tuple[list[Any], list[Any]]:
    """A sequence touching every verb and subresource; returns (results, watch events)."""
    pods, ns_res = client.resource("pods"), client.resource("namespaces")
    deployments, pdbs = client.resource("deployments"), client.resource("pdb")
    results: list[Any] = [await _outcome(client.create(ns_res, {"metadata": {"name": "t"}}))]
    start = results[0]["metadata"]["resourceVersion"]
    watch = await client.watch(pods, namespace="t", resource_version=start)
    spec = {"containers": [{"name": "c", "image": "nginx"}]}
    steps = [
        client.create(pods, {"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": spec}, namespace="t"),
        client.create(pods, {"metadata": {"generateName": "b-"}, "spec": spec}, namespace="t"),
        client.get(pods, "a", namespace="t"),
        client.list(pods, namespace="t", limit=1),
        client.list(pods, namespace="t", label_selector="app=x"),
        client.list(pods, namespace="t", field_selector="metadata.name=a"),
        client.patch(pods, "a", {"metadata": {"labels": {"tier": "web"}}}, namespace="t"),
        client.patch(
            pods,
            "a",
            [{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}],
            patch_type=PatchType.JSON,
            namespace="t",
        ),
        client.patch(pods, "a", {"status": {"phase": "Running"}}, namespace="t", subresource="status"),
        client.create(
            pods, {"metadata": {"name": "a"}, "target": {"name": "n1"}}, namespace="t", subresource="binding", name="a"
        ),
        client.get(pods, "zzz", namespace="t"),
        client.create(pods, {"metadata": {"name": "a"}, "spec": spec}, namespace="t"),
        client.update(pods, {"metadata": {"name": "a", "resourceVersion": "3"}, "spec": spec}, namespace="t"),
        client.create(
            pdbs,
            {"metadata": {"name": "p"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}},
            namespace="t",
        ),
        client.create(pods, {"metadata": {"name": "a"}}, namespace="t", subresource="eviction", name="a"),
        client.delete(pods, "a", namespace="t"),
        client.delete(pods, "a", namespace="t", grace_period_seconds=0),
        client.create(
            deployments,
            {
                "metadata": {"name": "d"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "d"}},
                    "template": {"metadata": {"labels": {"app": "d"}}, "spec": spec},
                },
            },
            namespace="t",
        ),
        client.get(deployments, "d", namespace="t", subresource="scale"),
        client.patch(deployments, "d", {"spec": {"replicas": 4}}, namespace="t", subresource="scale"),
        client.get(deployments, "d", namespace="t"),
    ]
    for step in steps:
        results.append(await _outcome(step))
    names = [p["metadata"]["name"] for p in (await client.list(pods, namespace="t"))["items"]]
    for name in names:
        results.append(await _outcome(client.delete(pods, name, namespace="t", grace_period_seconds=0)))
    events: list[Any] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(2):
            async for event in watch:
                events.append(event)
                if event["type"] == "DELETED" and len([e for e in events if e["type"] == "DELETED"]) == 2:
                    break
    await watch.close()
    return results, events


async def test_http_and_local_transports_behave_identically(http_client: HTTPClient, local_client: LocalClient) -> None:
    http_results, http_events = await script(http_client)
    local_results, local_events = await script(local_client)
    assert len(http_results) == len(local_results)
    for i, (over_http, in_process) in enumerate(zip(http_results, local_results, strict=True)):
        assert over_http == in_process, f"step {i} differs"
    errors = [r["error"] for r in http_results if isinstance(r, dict) and "error" in r]
    assert errors == ["NotFoundError", "AlreadyExistsError", "ConflictError", "TooManyRequestsError"]
    assert [e["type"] for e in http_events] == [e["type"] for e in local_events]
    assert http_events == local_events
    assert [e["type"] for e in http_events][:2] == ["ADDED", "ADDED"]
    assert http_events[-1]["type"] == "DELETED"


# -- every route of the API server's request table, on both transports ------------------------------------------


@pytest.fixture
def route_hits(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[tuple[str, str]]]:
    """Records which (verb, subresource) routes of :data:`dispatch.ROUTES` ran, per transport: both transports
    call the one table, so wrapping its handlers sees every request of either."""
    hits: dict[str, set[tuple[str, str]]] = {"current": set()}
    for key, route in list(dispatch.ROUTES.items()):

        def spy(handler: dispatch.Handler, key: tuple[str, str]) -> dispatch.Handler:
            async def recorded(registry: Registry, call: dispatch.Call) -> Any:
                hits["current"].add(key)
                return await handler(registry, call)

            return recorded

        monkeypatch.setitem(
            cast(dict[tuple[str, str], dispatch.Route], dispatch.ROUTES),
            key,
            dataclasses.replace(route, handler=spy(route.handler, key)),
        )
    return hits


async def _http_delete_collection(client: HTTPClient, resource: ResourceInfo, namespace: str, selector: str) -> Any:
    path = client._path(resource, namespace=namespace)
    return await client._request("DELETE", path, query={"labelSelector": selector})


async def _local_delete_collection(client: LocalClient, resource: ResourceInfo, namespace: str, selector: str) -> Any:
    options = ListOptions(label_selector=selector)
    call = dispatch.Call("deletecollection", resource, namespace, list_options=options)
    return await client._dispatch(call)


async def _token_claims(reply: Awaitable[Any]) -> Any:
    """A TokenRequest reply with its token replaced by the token's claims."""
    answer = dict(await reply)
    payload = answer["status"]["token"].split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return {**answer, "status": {**answer["status"], "token": claims}}


async def every_route(client: Client, delete_collection: Any) -> list[Any]:
    """One call per route of the table (and calls no route serves); deletecollection, which the Client protocol
    does not offer, through ``delete_collection`` (the transport's own way to the same request)."""
    pods, namespaces = client.resource("pods"), client.resource("namespaces")
    deployments, cms = client.resource("deployments"), client.resource("configmaps")
    sas = client.resource("serviceaccounts")
    spec = {"containers": [{"name": "c", "image": "nginx"}]}
    template = {"metadata": {"labels": {"app": "d"}}, "spec": spec}
    selector = {"matchLabels": {"app": "d"}}
    deployment = {"metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": selector, "template": template}}
    results: list[Any] = [await _outcome(client.create(namespaces, {"metadata": {"name": "r"}}))]
    watch = await client.watch(cms, namespace="r", resource_version=results[0]["metadata"]["resourceVersion"])

    def edited(step: int, **fields: Any) -> Any:  # the object an earlier step returned, with fields replaced
        return {**results[step], **fields}

    steps: list[Callable[[], Awaitable[Any]]] = [
        # create, get, get status, list, update, update status, patch, patch status: the main object and status
        lambda: client.create(pods, {"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": spec}, namespace="r"),
        lambda: client.get(pods, "a", namespace="r"),
        lambda: client.get(pods, "a", namespace="r", subresource="status"),
        lambda: client.list(pods, namespace="r"),
        lambda: client.update(
            pods, edited(2, metadata={**results[2]["metadata"], "labels": {"v": "2"}}), namespace="r"
        ),
        lambda: client.update(
            pods, edited(5, status={**results[5]["status"], "phase": "Running"}), namespace="r", subresource="status"
        ),
        lambda: client.patch(pods, "a", {"metadata": {"annotations": {"k": "v"}}}, namespace="r"),
        lambda: client.patch(pods, "a", {"status": {"message": "m"}}, namespace="r", subresource="status"),
        # binding and eviction (pods), scale (workloads)
        lambda: client.create(pods, {"target": {"name": "n1"}}, namespace="r", subresource="binding", name="a"),
        lambda: client.create(pods, {"metadata": {"name": "a"}}, namespace="r", subresource="eviction", name="a"),
        lambda: client.create(deployments, deployment, namespace="r"),
        lambda: client.get(deployments, "d", namespace="r", subresource="scale"),
        lambda: client.update(deployments, edited(12, spec={"replicas": 2}), namespace="r", subresource="scale"),
        lambda: client.patch(deployments, "d", {"spec": {"replicas": 3}}, namespace="r", subresource="scale"),
        # what no route serves, the same on both: pods have no scale subresource (404, as kube-apiserver for an
        # unknown subresource); pods/status takes no POST (405 MethodNotAllowed); a namespaced object needs its
        # namespace (404); kubeplane's scale takes only a merge patch (415; upstream takes every patch type)
        lambda: client.get(pods, "a", namespace="r", subresource="scale"),
        lambda: client.create(pods, {"metadata": {"name": "a"}}, namespace="r", subresource="status", name="a"),
        lambda: client.patch(
            deployments,
            "d",
            [{"op": "replace", "path": "/spec/replicas", "value": 1}],
            patch_type=PatchType.JSON,
            namespace="r",
            subresource="scale",
        ),
        lambda: client.get(pods, "a", namespace=None),
        # delete and deletecollection
        lambda: client.create(cms, {"metadata": {"name": "c1", "labels": {"dc": "1"}}}, namespace="r"),
        lambda: client.create(cms, {"metadata": {"name": "c2", "labels": {"dc": "1"}}}, namespace="r"),
        lambda: client.create(cms, {"metadata": {"name": "c3"}}, namespace="r"),
        lambda: delete_collection(client, cms, "r", "dc=1"),
        lambda: client.delete(cms, "c3", namespace="r"),
        lambda: client.list(cms, namespace="r"),
        # serviceaccounts/token (TokenRequest): the same claims (each side signs with its own key)
        lambda: client.create(sas, {"metadata": {"name": "s"}}, namespace="r"),
        lambda: _token_claims(client.create(sas, {"spec": {}}, namespace="r", subresource="token", name="s")),
        # namespaces/finalize: a terminating namespace whose last finalizer goes is removed
        lambda: client.delete(namespaces, "r"),
        lambda: client.update(namespaces, edited(27, spec={"finalizers": []}), subresource="finalize"),
        lambda: client.get(namespaces, "r"),
    ]
    for step in steps:
        results.append(await _outcome(step()))
    events: list[Any] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(2):
            async for event in watch:
                events.append(event)
                if event["type"] == "DELETED" and event["object"]["metadata"]["name"] == "c3":
                    break
    await watch.close()
    return [*results, events]


async def test_every_route_of_the_request_table_gives_the_same_result_on_both_transports(
    http_client: HTTPClient, local_client: LocalClient, route_hits: dict[str, set[tuple[str, str]]]
) -> None:
    """Each (verb, subresource) of dispatch.ROUTES, run over HTTP and in-process, answers identically (objects,
    Status errors, watch events); a route added to the table without a call here fails the test."""
    over_http = await every_route(http_client, _http_delete_collection)
    http_hits, route_hits["current"] = route_hits["current"], set()
    in_process = await every_route(local_client, _local_delete_collection)
    for i, (a, b) in enumerate(zip(over_http, in_process, strict=True)):
        assert a == b, f"step {i} differs"
    assert http_hits == route_hits["current"] == set(dispatch.ROUTES)
    errors = [r["status"]["code"] for r in over_http if isinstance(r, dict) and "error" in r]
    assert errors == [
        404,
        405,
        415,
        404,
        404,
    ]  # scale of a pod, create of a status, JSON scale patch, no namespace, gone
    assert [e["type"] for e in over_http[-1]] == ["ADDED"] * 3 + ["DELETED"] * 3
