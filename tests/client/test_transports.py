"""Both transports behave identically: the same scripted operations give the same results, errors and watch
streams over HTTP (a real uvicorn server in this event loop) and in-process.

Each side gets its own registry with the same seeded randomness and the same frozen clock, so uids, names,
timestamps and resourceVersions must match exactly, not just in shape.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn

from kubeplane.apiserver.http.app import APIServerApp
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
