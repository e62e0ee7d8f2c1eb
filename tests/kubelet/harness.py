"""A kubelet fleet over the in-process API server on a fake clock, for the fleet's tests."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from kubeplane.client.clock import FakeClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet, FleetOptions

Obj = dict[str, Any]


class Env:
    def __init__(self, client: LocalClient, clock: FakeClock, fleet: Fleet) -> None:
        self.client, self.clock, self.fleet = client, clock, fleet
        self.pods = client.resource("pods")
        self.nodes = client.resource("nodes")

    async def until(
        self, check: Callable[[], Awaitable[bool]], what: str, *, step: float = 0.0, tries: int = 400
    ) -> None:
        """Poll ``check``, advancing the fake clock by ``step`` between tries."""
        for _ in range(tries):
            if await check():
                return
            await asyncio.sleep(0.002)
            if step:
                await self.clock.advance(step)
        raise AssertionError(f"timed out waiting for {what}")

    async def pod(self, name: str) -> Obj:
        return await self.client.get(self.pods, name, namespace="default")

    async def phase(self, name: str) -> str:
        try:
            return str((await self.pod(name)).get("status", {}).get("phase", ""))
        except NotFoundError:
            return "<gone>"

    async def is_phase(self, name: str, phase: str) -> bool:
        return await self.phase(name) == phase

    async def create_pod(self, name: str, *, node: str = "n1", **spec: Any) -> Obj:
        annotations = spec.pop("annotations", {})
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {
                "nodeName": node,
                "containers": spec.pop("containers", [{"name": "app", "image": "nginx:1.27"}]),
                **spec,
            },
        }
        return await self.client.create(self.pods, body, namespace="default")

    async def create(self, body: Obj) -> Obj:
        """Create a whole Pod object (its uid, if any, dropped)."""
        body = {**body, "apiVersion": "v1", "kind": "Pod"}
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "uid"}
        return await self.client.create(self.pods, body, namespace="default")

    async def events(self, name: str) -> list[Obj]:
        await self.fleet.flush_events()
        items = (await self.client.list(self.client.resource("events"), namespace="default"))["items"]
        return [e for e in items if e["involvedObject"].get("name") == name]


@contextlib.asynccontextmanager
async def running_fleet(nodes: Sequence[Any] | Mapping[str, Any], options: FleetOptions) -> AsyncIterator[Env]:
    """A started fleet of ``nodes`` (node-config groups, or a whole node config with ``nodes:``) on a fresh
    in-memory API server; stopped on exit."""
    clock = FakeClock()
    client = await LocalClient.in_memory(now=clock.now)
    config = nodes if isinstance(nodes, Mapping) else list(nodes)
    fleet = Fleet(client, parse_node_config(config), clock=clock, rng=random.Random(1), options=options)
    await fleet.start()
    try:
        yield Env(client, clock, fleet)
    finally:
        await fleet.stop()
        await client.close()
