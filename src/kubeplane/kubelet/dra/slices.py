"""The simulated DRA drivers' ResourceSlices: one per (node, driver), as a kubelet plugin publishes them through
``k8s.io/dynamic-resource-allocation/resourceslice``'s controller (v1.37).

A slice is ``generateName: <node>-<driver>-``, ``spec.driver``, ``spec.nodeName``, ``spec.pool`` = ``{name: <node>,
generation, resourceSliceCount}`` and the node's devices of that driver, owned by the Node (``controller:
true``), so the garbage collector removes it with the node. A driver with counter sets on the node (partitionable
devices, ``sharedCounters`` in the node config) publishes them in a second slice of the same pool
(``resourceSliceCount: 2``): v1.37's validation allows only one of ``sharedCounters`` and ``devices`` per slice,
and the allocator reads a pool's counter sets from all its slices.

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

from .config import counters_to_api

__all__ = ["SlicePublisher", "slice_name_prefix", "wanted_slices"]

log = logging.getLogger("kubeplane.kubelet.dra")


def slice_name_prefix(node: str, driver: str) -> str:
    """The controller's ``generateName``: ``<node>-<driver>-`` (the API server appends 5 random characters)."""
    return f"{node}-{driver}-"


Content = dict[str, list[dict[str, Any]]]
"""What one slice carries: ``{"devices": [...]}`` or ``{"sharedCounters": [...]}``."""


def wanted_slices(spec: NodeSpec) -> dict[str, list[Content]]:
    """Driver -> the contents of its pool's slices on the node (API form, config order): the devices' slice, then
    the counter sets' slice when the driver has counter sets there."""
    devices: dict[str, list[dict[str, Any]]] = {}
    counters: dict[str, list[dict[str, Any]]] = {}
    for group in spec.devices:
        devices.setdefault(group.driver, []).extend(d.to_api() for d in group.devices_for(spec.name))
        counters.setdefault(group.driver, []).extend(counters_to_api(group.shared_counters, "name"))
    out: dict[str, list[Content]] = {}
    for driver, listed in devices.items():
        out[driver] = [{"devices": listed}]
        if counters[driver]:
            out[driver].append({"sharedCounters": counters[driver]})
    return out


def _content(item: Obj) -> Content:
    spec = spec_of(item)
    key = "sharedCounters" if spec.get("sharedCounters") is not None else "devices"
    return {key: list(spec.get(key) or ())}


def _slice_body(node: str, node_uid: str, driver: str, content: Content, generation: int, count: int) -> Obj:
    owner = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid, "controller": True}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"generateName": slice_name_prefix(node, driver), "ownerReferences": [owner]},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
            **content,
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
            for driver, contents in wanted.items():
                await self._sync_one(node.name, driver, contents, existing.pop(driver, []))
            for stale in existing.values():  # drivers this node no longer has
                for item in stale:
                    await self._delete(item)

    async def _sync_one(self, node: str, driver: str, wanted: list[Content], current: list[Obj]) -> None:
        """One pool: every slice of it at one generation, bumped when any of its slices has to change (the
        allocator ignores a pool whose slices disagree on the generation, so they are written together)."""
        kinds = {next(iter(c)): c for c in wanted}
        keep: dict[str, Obj] = {}
        for item in current:
            kind = next(iter(_content(item)))
            if kind in kinds and kind not in keep:
                keep[kind] = item
            else:
                await self._delete(item)
        pools: list[Mapping[str, Any]] = []
        for item in keep.values():
            pool = spec_of(item).get("pool")
            pools.append(pool if isinstance(pool, Mapping) else {})
        generations = {int(p.get("generation") or 0) for p in pools}
        if (
            len(keep) == len(wanted)
            and all(_content(item) == kinds[kind] for kind, item in keep.items())
            and all(p.get("name") == node and p.get("resourceSliceCount") == len(wanted) for p in pools)
            and len(generations) == 1
        ):
            return
        generation = max(generations, default=0) + 1 if keep else 1
        client = self.node_client(node)
        for kind, content in kinds.items():
            body = _slice_body(node, self.node_uid(node), driver, content, generation, len(wanted))
            if kind in keep:
                body["metadata"] = {**meta_of(keep[kind])}
                await client.update(self.slices, body)
            else:
                await client.create(self.slices, body)

    async def _delete(self, item: Obj) -> None:
        client = self.node_client(str(spec_of(item).get("nodeName") or ""))
        with contextlib.suppress(NotFoundError):
            await client.delete(self.slices, str(meta_of(item).get("name")))
