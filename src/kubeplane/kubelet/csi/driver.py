"""The simulated CSI drivers of one kubelet fleet: controller side and node side, started and stopped with it.

:class:`CSIPlugins` is what :class:`kubeplane.kubelet.fleet.Fleet` runs. ``start`` (after the nodes registered):

1. CSIDriver objects (``storageCapacity`` true for a capacity-tracked driver) and the drivers' declared
   StorageClasses (:mod:`.publisher`);
2. each node's CSINode (the node plugins' registration);
3. the informers (PVCs, PVs, StorageClasses, the capacity objects in ``kube-system``), then the usage of every
   existing PV of the drivers is recounted (a restarted fleet), then
4. the provisioner (:mod:`.provisioner`) and the capacity controller (:mod:`.publisher`) run until ``stop``.

:meth:`CSIPlugins.stats` is the small read API for simulations and tests: per driver, volumes provisioned and
deleted by this fleet, failed attempts, and the capacity used / total (``None``: unlimited).

Several fleets on one cluster each provision for their own nodes (external-provisioner's distributed mode): a
claim whose selected node belongs to another fleet is left to it; PV names are per-claim so a race for an
Immediate claim ends with one PV (``AlreadyExists`` is success for the loser, which returns its reservation).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubeplane.api.views import annotations_of, name_of
from kubeplane.client.clock import Clock
from kubeplane.client.events import EventRecorder
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import Client, Obj
from kubeplane.client.workqueue import QueueShutDown, RateLimitingQueue
from kubeplane.kubelet.config import NodeSpec

from .capacity import Pools
from .config import CSIDriverSpec
from .objects import CAPACITY_NAMESPACE, MANAGED_BY, MANAGED_BY_LABEL
from .provisioner import Provisioner
from .publisher import CapacityItem, CapacityPublisher, publish_csidriver, publish_storage_classes, register_csinode

__all__ = ["CSIPlugins", "DriverStats"]

log = logging.getLogger(__name__)
PROVISIONER_HOST = "kubeplane-csi-controller"
"""The host part of the provisioner's event source (upstream: ``<driver>_<hostname>_<uuid>``)."""
REGISTER_CONCURRENCY = 64


@dataclass(frozen=True, slots=True)
class DriverStats:
    name: str
    provisioned: int
    deleted: int
    failed: int
    volumes: int
    used_bytes: int
    total_bytes: int | None
    """None: unlimited (no ``csiCapacity`` configured for the driver)."""


class CSIPlugins:
    """The fleet's simulated CSI drivers (module docstring). Nothing runs when ``drivers`` is empty."""

    def __init__(
        self,
        client: Client,
        nodes: Iterable[NodeSpec],
        drivers: Sequence[CSIDriverSpec],
        *,
        clock: Clock,
        rng: random.Random,
        node_uid: Callable[[str], str],
        node_labels: Callable[[str], Mapping[str, str] | None],
        node_client: Callable[[str], Client] | None = None,
    ) -> None:
        """``client`` is the drivers' controller side (external-provisioner, the capacity publisher, the
        CSIDriver and StorageClass objects of the driver's install); each node's registration (its CSINode and
        topology label) is written with ``node_client(node)``, the node's own identity, as the kubelet does."""
        self.client, self.clock, self.rng = client, clock, rng
        self.node_client = node_client or (lambda _node: client)
        self.drivers = {d.name: d for d in drivers}
        self.nodes: dict[str, NodeSpec] = {spec.name: spec for spec in nodes}
        self.pools = {d.name: Pools(d, self.nodes.values()) for d in drivers}
        self._node_uid, self._node_labels = node_uid, node_labels
        self._tasks: list[asyncio.Future[None]] = []
        self._informers: list[SharedInformer] = []
        self.recorders: dict[str, EventRecorder] = {}
        self.provisioner: Provisioner | None = None
        self.capacity: CapacityPublisher | None = None
        self.capacity_queue: RateLimitingQueue[CapacityItem] = RateLimitingQueue(clock=clock)

    # --- running -------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if not self.drivers:
            return
        for pools in self.pools.values():
            await publish_csidriver(self.client, pools.driver, storage_capacity=pools.tracked)
        await publish_storage_classes(self.client, self.drivers.values())
        await self._register(self.nodes.values())
        claims, volumes, classes = (
            SharedInformer(self.client, r, clock=self.clock, rng=self.rng)
            for r in ("persistentvolumeclaims", "persistentvolumes", "storageclasses")
        )
        capacities = SharedInformer(
            self.client,
            "csistoragecapacities",
            clock=self.clock,
            rng=self.rng,
            namespace=CAPACITY_NAMESPACE,
            label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}",
        )
        self._informers = [claims, volumes, classes, capacities]
        for name in self.drivers:
            source = f"{name}_{PROVISIONER_HOST}_{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"
            self.recorders[name] = EventRecorder(self.client, component=source, clock=self.clock, rng=self.rng)
        self.capacity = CapacityPublisher(self.client, self.pools, capacities, classes.indexer.list)
        self.provisioner = Provisioner(
            self.client,
            self.pools,
            clock=self.clock,
            rng=self.rng,
            claims=claims,
            volumes=volumes,
            classes=classes,
            recorders=self.recorders,
            capacity_changed=self._capacity_changed,
            own_node=self.nodes.__contains__,
        )
        classes.add_event_handler(
            on_add=self._class_event, on_update=lambda _o, c: self._class_event(c), on_delete=self._class_event
        )
        capacities.add_event_handler(on_add=self._capacity_event, on_delete=self._capacity_event)
        for informer in self._informers:
            informer.start()
        for informer in self._informers:
            await informer.wait_for_sync()
        self.provisioner.recover()
        for item in self.capacity.all_items():
            self.capacity_queue.add(item)
        self._tasks.append(asyncio.ensure_future(self.provisioner.run()))
        self._tasks.extend(asyncio.ensure_future(self._capacity_worker()) for _ in range(4))

    async def stop(self) -> None:
        self.capacity_queue.shut_down()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        for informer in self._informers:
            await informer.stop()
        for recorder in self.recorders.values():
            await recorder.close()

    async def flush_events(self) -> None:
        for recorder in self.recorders.values():
            await recorder.flush()

    async def add_nodes(self, specs: Sequence[NodeSpec]) -> None:
        """Nodes joined the fleet: their capacity joins the pools, their plugins register."""
        if not self.drivers:
            return
        for spec in specs:
            self.nodes[spec.name] = spec
        for name, pools in self.pools.items():
            was_tracked = pools.tracked
            changed = pools.add_nodes(specs)
            if pools.tracked != was_tracked:
                await publish_csidriver(self.client, pools.driver, storage_capacity=True)
            if self.capacity is not None:
                for item in self.capacity.items_for(name, changed):
                    self.capacity_queue.add(item)
        await self._register(specs)

    async def _register(self, specs: Iterable[NodeSpec]) -> None:
        semaphore = asyncio.Semaphore(REGISTER_CONCURRENCY)

        async def one(spec: NodeSpec) -> None:
            running = [d for d in self.drivers.values() if self.pools[d.name].segment_of_node(spec.name) is not None]
            async with semaphore:
                await register_csinode(
                    self.node_client(spec.name),
                    spec.name,
                    self._node_uid(spec.name),
                    running,
                    self._node_labels(spec.name),
                )

        await asyncio.gather(*(one(spec) for spec in specs))

    # --- capacity objects ----------------------------------------------------------------------------------

    def _capacity_changed(self, driver: str, segment: str) -> None:
        if self.capacity is not None:
            for item in self.capacity.items_for(driver, [segment]):
                self.capacity_queue.add(item)

    def _class_event(self, cls: Obj) -> None:
        if self.capacity is not None and cls.get("provisioner") in self.drivers:
            for item in self.capacity.all_items():
                if item[1] == name_of(cls):
                    self.capacity_queue.add(item)
            for item in self.capacity.items_for(str(cls.get("provisioner"))):
                self.capacity_queue.add(item)

    def _capacity_event(self, obj: Obj) -> None:
        item = self.capacity.item_of(obj) if self.capacity is not None else None
        if item is not None:
            self.capacity_queue.add(item)

    async def _capacity_worker(self) -> None:
        assert self.capacity is not None
        while True:
            try:
                item = await self.capacity_queue.get()
            except QueueShutDown:
                return
            try:
                await self.capacity.sync(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("csi capacity: %s failed (retrying): %s", item, exc)
                self.capacity_queue.add_rate_limited(item)
            else:
                self.capacity_queue.forget(item)
            finally:
                self.capacity_queue.done(item)

    # --- the read API ---------------------------------------------------------------------------------------

    def stats(self) -> dict[str, DriverStats]:
        """Per driver: provisioned/deleted/failed counts (this fleet's), volumes held, bytes used and total."""
        out = {}
        for name, pools in self.pools.items():
            counters = self.provisioner.counters[name] if self.provisioner is not None else None
            out[name] = DriverStats(
                name=name,
                provisioned=counters.provisioned if counters else 0,
                deleted=counters.deleted if counters else 0,
                failed=counters.failed if counters else 0,
                volumes=pools.volume_count(),
                used_bytes=pools.used,
                total_bytes=pools.total,
            )
        return out

    def provisioned_by(self, pv: Obj) -> str | None:
        """The fleet's driver that provisioned ``pv``, if any."""
        name = annotations_of(pv).get("pv.kubernetes.io/provisioned-by")
        return name if name in self.drivers else None
