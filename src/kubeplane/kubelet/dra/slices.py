"""The simulated DRA drivers' ResourceSlices: one per (node, driver), as a kubelet plugin publishes them through
``k8s.io/dynamic-resource-allocation/resourceslice``'s controller (v1.37).

A slice is ``generateName: <node>-<driver>-``, ``spec.driver``, ``spec.nodeName``, ``spec.pool`` = ``{name: <node>,
generation, resourceSliceCount: 1}`` and the node's devices of that driver, owned by the Node (``controller:
true``), so the garbage collector removes it with the node.

:class:`SlicePublisher.sync` makes the API agree with the wanted slices of some nodes: creates what is missing,
updates a slice whose devices differ (the pool's ``generation`` incremented, as the controller does when a pool
changes), deletes duplicates and the slices of drivers a node no longer has. Only slices of the fleet's own nodes
and drivers are touched: several fleets (and hand-made slices of other drivers) live side by side.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubeplane.api.views import meta_of, spec_of
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Client, Obj
from kubeplane.kubelet.config import NodeSpec

__all__ = ["SlicePublisher", "slice_name_prefix", "wanted_slices"]

log = logging.getLogger("kubeplane.kubelet.dra")


def slice_name_prefix(node: str, driver: str) -> str:
    """The controller's ``generateName``: ``<node>-<driver>-`` (the API server appends 5 random characters)."""
    return f"{node}-{driver}-"


def wanted_slices(spec: NodeSpec) -> dict[str, list[dict[str, Any]]]:
    """Driver -> the node's devices of that driver (API form), in config order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for group in spec.devices:
        out.setdefault(group.driver, []).extend(d.to_api() for d in group.devices_for(spec.name))
    return out


def _slice_body(node: str, node_uid: str, driver: str, devices: list[dict[str, Any]], generation: int) -> Obj:
    owner = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"generateName": slice_name_prefix(node, driver), "ownerReferences": [owner]},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


class SlicePublisher:
    """Publishes the fleet's slices (module docstring). ``drivers`` are every driver any fleet node has."""

    def __init__(
        self, client: Client, *, node_uid: Callable[[str], str], node_client: Callable[[str], Client] | None = None
    ) -> None:
        """``client`` lists the slices (the fleet's read); a node's slices are written with ``node_client(node)``
        (the node's own identity, as the Node authorizer and NodeRestriction admit a node's own slices)."""
        self.client = client
        self.node_client = node_client or (lambda _node: client)
        self.slices = client.resource("resourceslices")
        self.node_uid = node_uid

    async def sync(self, specs: Iterable[NodeSpec], drivers: Iterable[str]) -> None:
        """Make the slices of ``specs``' nodes agree with their ``devices`` (for the drivers in ``drivers``)."""
        specs = list(specs)
        ours = set(drivers) | {g.driver for s in specs for g in s.devices}
        if not ours:
            return
        by_node: dict[str, list[Obj]] = {}
        for item in (await self.client.list(self.slices))["items"]:
            spec = spec_of(item)
            if spec.get("driver") in ours and spec.get("nodeName"):
                by_node.setdefault(str(spec["nodeName"]), []).append(item)
        for node in specs:
            existing: dict[str, list[Obj]] = {}
            for item in by_node.get(node.name, ()):
                existing.setdefault(str(spec_of(item).get("driver")), []).append(item)
            wanted = wanted_slices(node)
            for driver, devices in wanted.items():
                await self._sync_one(node.name, driver, devices, existing.pop(driver, []))
            for stale in existing.values():  # drivers this node no longer has
                for item in stale:
                    await self._delete(item)

    async def _sync_one(self, node: str, driver: str, devices: list[dict[str, Any]], current: list[Obj]) -> None:
        keep, extra = (current[0], current[1:]) if current else (None, [])
        for item in extra:
            await self._delete(item)
        if keep is None:
            await self.node_client(node).create(self.slices, _slice_body(node, self.node_uid(node), driver, devices, 1))
            return
        spec = spec_of(keep)
        pool = spec.get("pool") if isinstance(spec.get("pool"), Mapping) else {}
        assert isinstance(pool, Mapping)
        if spec.get("devices") == devices and pool.get("name") == node and pool.get("resourceSliceCount") == 1:
            return
        generation = int(pool.get("generation") or 0) + 1
        body = _slice_body(node, self.node_uid(node), driver, devices, generation)
        body["metadata"] = {**meta_of(keep)}
        await self.node_client(node).update(self.slices, body)

    async def _delete(self, item: Obj) -> None:
        client = self.node_client(str(spec_of(item).get("nodeName") or ""))
        with contextlib.suppress(NotFoundError):
            await client.delete(self.slices, str(meta_of(item).get("name")))
