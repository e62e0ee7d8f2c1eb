"""What the simulated drivers publish: CSIDriver objects, each node's CSINode, the drivers' declared
StorageClasses, and CSIStorageCapacity objects that follow the free capacity.

* CSIDriver: created, or updated when its spec differs (a driver's deployment applies it).
* CSINode: one per node, created by the node plugin's registration (kubelet ``nodeinfomanager``
  ``CreateCSINode``/``installDriverToCSINode``: owner reference to the Node, ``spec.drivers`` entries); an existing
  one (a restart) keeps other drivers' entries and gets this fleet's entries replaced. When a node-topology driver
  runs and an existing Node lacks its topology label, the label is patched on (``updateTopologyLabels``).
* CSIStorageCapacity: external-provisioner's capacity controller (``pkg/capacity/capacity.go``): one work item per
  (driver, storage class of that driver, segment) of a capacity-tracked driver; ``sync`` creates the object
  (generateName ``csisc-`` in ``kube-system``), patches capacity/maximumVolumeSize when the free capacity changed,
  and deletes objects whose class or segment is gone and duplicates (two objects for one item).

Invariants: after :meth:`CapacityPublisher.sync` of an item, exactly one object in the informer-visible world
(or just written) carries its current free capacity; nothing is written when nothing changed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kubeplane.api.views import labels_of, meta_of, name_of
from kubeplane.client.errors import AlreadyExistsError, NotFoundError
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import Client, Obj

from .capacity import Pools
from .config import DEFAULT_DRIVER_NAME, NODE_TOPOLOGY_KEY, CSIDriverSpec
from .objects import (
    CAPACITY_NAMESPACE,
    DRIVER_NAME_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    capacity_object,
    csidriver_object,
    csinode_driver,
    quantity_text,
    standard_storage_class,
)

__all__ = [
    "CapacityItem",
    "CapacityPublisher",
    "ensure_standard_storage_class",
    "publish_csidriver",
    "publish_storage_classes",
    "register_csinode",
]

log = logging.getLogger(__name__)

CapacityItem = tuple[str, str, str]
"""(driver name, storage class name, segment value): one CSIStorageCapacity object."""


async def publish_csidriver(client: Client, driver: CSIDriverSpec, *, storage_capacity: bool) -> None:
    resource = client.resource("csidrivers")
    want = csidriver_object(driver, storage_capacity=storage_capacity)
    try:
        await client.create(resource, want)
    except AlreadyExistsError:
        current = await client.get(resource, driver.name)
        spec = dict(current.get("spec") or {})
        if any(spec.get(k) != v for k, v in want["spec"].items()):  # the API server defaults the other fields
            await client.update(resource, {**current, "spec": {**spec, **want["spec"]}})


async def publish_storage_classes(client: Client, drivers: Iterable[CSIDriverSpec]) -> None:
    """Create each driver's declared StorageClasses that do not exist (an existing one is left as it is)."""
    resource = client.resource("storageclasses")
    for driver in drivers:
        for cls in driver.storage_classes:
            with contextlib.suppress(AlreadyExistsError):
                await client.create(resource, dict(cls))


async def register_csinode(
    client: Client, node: str, node_uid: str, drivers: Iterable[CSIDriverSpec], node_labels: Mapping[str, str] | None
) -> None:
    """The node plugins' registration on ``node``: its CSINode (and the node-topology label if missing)."""
    drivers = list(drivers)
    entries = [csinode_driver(d, node) for d in drivers]
    ours = {e["name"] for e in entries}
    resource = client.resource("csinodes")
    body: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": node},
        "spec": {"drivers": entries},
    }
    if node_uid:
        body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid}]
    try:
        await client.create(resource, body)
    except AlreadyExistsError:
        current = await client.get(resource, node)
        others = [e for e in (current.get("spec") or {}).get("drivers") or [] if e.get("name") not in ours]
        drivers_now = [*others, *entries]
        if (current.get("spec") or {}).get("drivers") != drivers_now:
            await client.update(resource, {**current, "spec": {**(current.get("spec") or {}), "drivers": drivers_now}})
    node_topology = any(d.topology == "node" for d in drivers)
    if node_labels is not None and node_topology and node_labels.get(NODE_TOPOLOGY_KEY) != node:
        with contextlib.suppress(NotFoundError):
            patch = {"metadata": {"labels": {NODE_TOPOLOGY_KEY: node}}}
            await client.patch(client.resource("nodes"), node, patch)


def _item_of(obj: Obj, drivers: Mapping[str, CSIDriverSpec]) -> CapacityItem | None:
    labels = labels_of(obj)
    driver = drivers.get(labels.get(DRIVER_NAME_LABEL, ""))
    if driver is None or labels.get(MANAGED_BY_LABEL) != MANAGED_BY:
        return None
    match = (obj.get("nodeTopology") or {}).get("matchLabels") or {}
    return (driver.name, str(obj.get("storageClassName") or ""), str(match.get(driver.topology_key, "")))


class CapacityPublisher:
    """The capacity controller of every capacity-tracked driver of the fleet (module docstring)."""

    def __init__(
        self,
        client: Client,
        pools: Mapping[str, Pools],
        informer: SharedInformer,
        classes: Callable[[], list[Obj]],
    ) -> None:
        self.client = client
        self.pools = pools
        self.informer = informer
        self._classes = classes
        self._resource = client.resource("csistoragecapacities")
        self._written: dict[CapacityItem, Obj] = {}  # what this publisher wrote last, by item

    def items_for(self, driver: str, segments: Iterable[str] | None = None) -> list[CapacityItem]:
        """The work items of ``driver`` (all its segments, or ``segments``), for every class of the driver."""
        pools = self.pools.get(driver)
        if pools is None or not pools.tracked:
            return []
        names = sorted(name_of(c) for c in self._classes() if c.get("provisioner") == driver)
        values = sorted(pools.segments) if segments is None else list(segments)
        return [(driver, cls, seg) for cls in names for seg in values]

    def all_items(self) -> list[CapacityItem]:
        """Every wanted item plus every item an existing object stands for (so obsolete ones are deleted)."""
        wanted = [item for driver in self.pools for item in self.items_for(driver)]
        existing = [i for obj in self.informer.indexer.list() if (i := self.item_of(obj)) is not None]
        return list(dict.fromkeys([*wanted, *existing]))

    def item_of(self, obj: Obj) -> CapacityItem | None:
        """The item an object stands for, if it is one of this fleet's segments (another fleet's objects carry
        the same labels: they are its business, as external-provisioner's per-node managed-by in distributed
        mode keeps them apart)."""
        item = _item_of(obj, self._drivers())
        if item is None or item[2] not in self.pools[item[0]].segments:
            return None
        return item

    def _drivers(self) -> dict[str, CSIDriverSpec]:
        return {name: pools.driver for name, pools in self.pools.items()}

    def _wanted(self, item: CapacityItem) -> int | None:
        """The free bytes the item's object must show; None: the item must have no object."""
        driver, cls, seg = item
        pools = self.pools.get(driver)
        if pools is None or not pools.tracked:
            return None
        if not any(name_of(c) == cls and c.get("provisioner") == driver for c in self._classes()):
            return None
        return pools.segments[seg].free or 0

    def _objects(self, item: CapacityItem) -> list[Obj]:
        drivers = self._drivers()
        found = [obj for obj in self.informer.indexer.list() if _item_of(obj, drivers) == item]
        written = self._written.get(item)
        if written is not None:  # we are its only writer: our last write is newer than a lagging informer
            found = [o for o in found if name_of(o) != name_of(written)] + [written]
        return sorted(found, key=lambda o: str(meta_of(o).get("creationTimestamp") or "") + name_of(o))

    async def sync(self, item: CapacityItem) -> None:
        pools = self.pools.get(item[0])
        if pools is None or item[2] not in pools.segments:
            return  # not a segment of this fleet
        free = self._wanted(item)
        objects = self._objects(item)
        keep = objects[:1] if free is not None else []
        for obj in objects[len(keep) :]:  # obsolete or duplicate
            if self._written.get(item) is obj:
                del self._written[item]
            with contextlib.suppress(NotFoundError):
                await self.client.delete(self._resource, name_of(obj), namespace=CAPACITY_NAMESPACE)
        if free is None:
            self._written.pop(item, None)
            return
        text = quantity_text(free)
        if keep:
            current = keep[0]
            if current.get("capacity") == text and current.get("maximumVolumeSize") == text:
                return
            try:
                patched = await self.client.patch(
                    self._resource,
                    name_of(current),
                    {"capacity": text, "maximumVolumeSize": text},
                    namespace=CAPACITY_NAMESPACE,
                )
                self._written[item] = patched
                return
            except NotFoundError:
                self._written.pop(item, None)
        driver = self.pools[item[0]].driver
        created = await self.client.create(
            self._resource, capacity_object(driver, item[1], item[2], free), namespace=CAPACITY_NAMESPACE
        )
        self._written[item] = created


def capacity_summary(objects: Iterable[Obj]) -> dict[str, Any]:
    """storage class -> segment -> capacity text (tests, reports)."""
    out: dict[str, Any] = {}
    for obj in objects:
        match = (obj.get("nodeTopology") or {}).get("matchLabels") or {}
        seg = next(iter(match.values()), "")
        out.setdefault(str(obj.get("storageClassName")), {})[seg] = obj.get("capacity")
    return out


async def ensure_standard_storage_class(client: Client) -> bool:
    """``kubeplane up``'s default StorageClass ``standard`` (as kind and minikube ship one), unless a class of
    that name exists; True when it was created."""
    try:
        await client.create(client.resource("storageclasses"), standard_storage_class(DEFAULT_DRIVER_NAME))
    except AlreadyExistsError:
        return False
    return True
