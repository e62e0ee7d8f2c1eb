"""DefaultBinder against upstream's default_binder_test.go (v1.37), on a real in-memory API server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.client.interface import Obj
from kubeplane.client.local import LocalClient
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import BindPlugin, Code, CycleState
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins import default_binder
from kubeplane.scheduler.plugins.default_binder import NAME, binding_for


@pytest.fixture
async def client() -> AsyncIterator[LocalClient]:
    c = await LocalClient.in_memory()
    try:
        yield c
    finally:
        await c.close()


def pod_dict(name: str = "foo") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "pause"}]},
    }


async def create_pod_and_node(client: LocalClient, name: str = "foo") -> PodInfo:
    await client.create(
        client.resource("namespaces"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}}
    )
    await client.create(client.resource("nodes"), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "foohost"}})
    created = await client.create(client.resource("pods"), pod_dict(name), namespace="ns")
    return PodInfo(created)


def test_plugin_shape() -> None:
    pl = default_binder.new({}, Handle())
    assert pl.name() == NAME == "DefaultBinder"
    assert isinstance(pl, BindPlugin)


def test_binding_object() -> None:
    pod = PodInfo({"metadata": {"name": "foo", "namespace": "ns", "uid": "u1"}})
    assert binding_for(pod, "foohost") == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "foo", "namespace": "ns", "uid": "u1"},
        "target": {"kind": "Node", "name": "foohost"},
    }


async def test_successful_bind_sets_node_name(client: LocalClient) -> None:
    """Upstream TestDefaultBinder "successful": the pod reads back with spec.nodeName and PodScheduled=True."""
    pod = await create_pod_and_node(client)
    assert pod.uid
    assert pod.uid != pod.key
    status = await default_binder.new({}, Handle(client=client)).bind(CycleState(), pod, "foohost")
    assert status is None
    bound = await client.get(client.resource("pods"), "foo", namespace="ns")
    assert bound["spec"]["nodeName"] == "foohost"
    conditions = {c["type"]: c["status"] for c in bound["status"]["conditions"]}
    assert conditions["PodScheduled"] == "True"


async def test_binding_an_already_bound_pod_is_an_error(client: LocalClient) -> None:
    """Upstream TestDefaultBinder "binding error": the API server's error becomes an ERROR status."""
    pod = await create_pod_and_node(client)
    pl = default_binder.new({}, Handle(client=client))
    assert await pl.bind(CycleState(), pod, "foohost") is None
    status = await pl.bind(CycleState(), pod, "other")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.error is not None
    assert "already assigned" in status.message()


async def test_binding_a_missing_pod_is_an_error(client: LocalClient) -> None:
    pod = PodInfo(pod_dict("ghost"))
    status = await default_binder.new({}, Handle(client=client)).bind(CycleState(), pod, "foohost")
    assert status is not None
    assert status.code == Code.ERROR


async def test_bind_without_client_is_an_error() -> None:
    status = await default_binder.new({}, Handle()).bind(CycleState(), PodInfo(pod_dict()), "foohost")
    assert status is not None
    assert status.code == Code.ERROR
    assert "no client" in status.message()


class RecordingClient:
    """Captures the create call (upstream's reactor on "create pods/binding")."""

    def __init__(self, inner: LocalClient) -> None:
        self.inner = inner
        self.calls: list[tuple[str, Obj, dict[str, Any]]] = []

    def resource(self, name: str) -> Any:
        return self.inner.resource(name)

    async def create(self, resource: Any, obj: Obj, **kwargs: Any) -> Obj:
        self.calls.append((resource.plural, obj, kwargs))
        return await self.inner.create(resource, obj, **kwargs)


async def test_posts_a_binding_to_the_pods_binding_subresource(client: LocalClient) -> None:
    pod = await create_pod_and_node(client)
    recorder = RecordingClient(client)
    handle = Handle(client=recorder)  # type: ignore[arg-type]
    assert await default_binder.new({}, handle).bind(CycleState(), pod, "foohost") is None
    ((plural, body, kwargs),) = recorder.calls
    assert plural == "pods"
    assert kwargs == {"namespace": "ns", "subresource": "binding", "name": "foo"}
    assert body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "foo", "namespace": "ns", "uid": pod.uid},
        "target": {"kind": "Node", "name": "foohost"},
    }
