"""Registration, node status and the node Lease: upstream's ``kubelet_node_status.go`` with ``nodestatus``
(``pkg/kubelet/nodestatus/setters.go``) and ``nodelease`` (``pkg/kubelet/nodelease``).

* **Registration** (``registerWithAPIServer``): each node creates its Node; an existing Node is kept (its labels,
  taints and spec are the cluster's now) and only its status is refreshed by the first report. While the API
  server does not answer, registration is retried every 7 s. When the node writes as its own identity (a
  ``node_client`` other than the fleet's), the labels NodeRestriction keeps from kubelets
  (:func:`~kubeplane.kubelet.node.kubelet_may_set_label`, e.g. ``node-role.kubernetes.io/control-plane``) are
  left out of the create and patched onto the Node afterwards with the fleet's client, as kubeadm's
  mark-control-plane phase labels a node with admin credentials.
* **Lease** (``nodelease``): :meth:`NodeStatus.renew_lease` renews ``kube-node-lease/<node>``; a conflict or a
  missing Lease drops the cached copy, so the next renewal reads (or creates) it again.
* **Status** (``tryUpdateNodeStatus``): :meth:`NodeStatus.maybe_report` patches the node's status when what it
  reports changed (memory pressure, images), when the node is not Ready in the API, or
  ``status_report_frequency`` after the last report; ``force`` reports at once (a pressure transition).

Invariants: ``SimNode.reported`` is the fingerprint of the last status written, ``SimNode.last_report`` its
monotonic time; ``full_report_due`` (a fresh node or a resumed kubelet) sends capacity, allocatable, nodeInfo,
addresses and images with the next report. A condition's ``lastTransitionTime`` moves only when its status
changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kubeplane.api.meta import format_time
from kubeplane.api.nodedeclaredfeatures import kubelet_declared_features
from kubeplane.api.views import EMPTY, NodeView, uid_of
from kubeplane.client.clock import Clock, HorizonClock
from kubeplane.client.errors import AlreadyExistsError, ConflictError, NotFoundError
from kubeplane.client.interface import Client, PatchType

from .lease_writer import LeaseWriter, Stamps, renew_built, renew_many, trusted_local
from .node import (
    CONDITION_ORDER,
    KUBELET_PORT,
    NODE_LEASE_NAMESPACE,
    condition,
    kubelet_may_set_label,
    node_info,
    node_lease,
    registration_node,
)
from .state import FleetOptions, NodeClients, NodeEvents, Obj, SimNode, shared_client

log = logging.getLogger("kubeplane.kubelet.fleet")

REGISTER_RETRY_PERIOD = 7.0  # upstream: the kubelet's registration back-off caps at 7 s


class NodeStatus:
    """Registers nodes and keeps their Lease and status current (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock,
        options: FleetOptions,
        events: NodeEvents,
        node_client: NodeClients | None = None,
    ) -> None:
        """Every call is made for one node, with ``node_client(node)`` (the node's own identity)."""
        self._clock, self._options, self._events = clock, options, events
        self._client = client
        self._node_client = node_client or shared_client(client)
        self._nodes_res = client.resource("nodes")
        self._leases_res = client.resource("leases")
        self._lease_writers: dict[str, LeaseWriter | None] = {}  # node -> its cheap renewal, when trusted
        self._horizon_clock = clock if isinstance(clock, HorizonClock) else None  # renewals ahead need one
        self._stamps = Stamps()
        self._ready_node: dict[str, Obj] = {}  # node -> the last Node object written for it found Ready
        self.kubelet_port = KUBELET_PORT
        """What every node advertises in ``daemonEndpoints.kubeletEndpoint.Port`` (the fleet's endpoint when it
        serves one)."""

    async def register_all(
        self, sims: Iterable[SimNode], *, on_registered: Callable[[int, int], None] | None = None
    ) -> None:
        """Register ``sims``, at most ``register_concurrency`` at a time, calling ``on_registered(done, total)``
        after each."""
        todo = list(sims)
        semaphore = asyncio.Semaphore(self._options.register_concurrency)
        done = 0

        async def register(sim: SimNode) -> None:
            nonlocal done
            async with semaphore:
                await self.register(sim)
            done += 1
            if on_registered is not None:
                on_registered(done, len(todo))

        await asyncio.gather(*(register(sim) for sim in todo))

    async def register(self, sim: SimNode) -> None:
        """Create the Node (upstream ``registerWithAPIServer``), or take the existing one."""
        while True:
            try:
                body = registration_node(
                    sim.spec,
                    self._clock.now(),
                    sim.image_list(),
                    kubelet_port=self.kubelet_port,
                    ready=not sim.booting,
                )
                admin_labels = self._admin_labels(sim, body)
                created = await self._node_client(sim.name).create(self._nodes_res, body)
                if admin_labels:
                    created = await self._client.patch(
                        self._nodes_res, sim.name, {"metadata": {"labels": admin_labels}}
                    )
                sim.node, sim.uid = created, uid_of(created)
                sim.full_report_due = False
                sim.last_report = self._clock.monotonic()
                sim.reported = self._fingerprint(sim)
                self._started_events(sim)
                return
            except AlreadyExistsError:
                existing = await self._node_client(sim.name).get(self._nodes_res, sim.name)
                sim.node, sim.uid = existing, uid_of(existing)
                self._started_events(sim)
                return
            except Exception as exc:  # API server not ready yet: retry as the kubelet does
                log.warning("kubelet %s: unable to register node: %s", sim.name, exc)
                await self._clock.sleep(REGISTER_RETRY_PERIOD)

    def _admin_labels(self, sim: SimNode, body: Obj) -> dict[str, str]:
        """The labels of ``body`` its node may not set itself, taken out of it (none when the node writes with
        the fleet's own client: nothing to split)."""
        if self._node_client(sim.name) is self._client:
            return {}
        labels = body["metadata"]["labels"]
        admin = {k: v for k, v in labels.items() if not kubelet_may_set_label(k)}
        body["metadata"]["labels"] = {k: v for k, v in labels.items() if k not in admin}
        return admin

    def _started_events(self, sim: SimNode) -> None:
        """What ``kubectl describe node`` shows of a kubelet's start (``kubelet.go`` and ``setters.go``)."""
        self._events.node(sim, "Normal", "Starting", "Starting kubelet.")
        for event in ("NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"):
            self._events.node(sim, "Normal", event, f"Node {sim.name} status is now: {event}")
        self._events.node(sim, "Normal", "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")

    async def renew_lease(self, sim: SimNode) -> None:
        now = self._clock.now()
        if sim.lease is None:
            try:
                sim.lease = await self._node_client(sim.name).get(
                    self._leases_res, sim.name, namespace=NODE_LEASE_NAMESPACE
                )
            except NotFoundError:
                try:
                    sim.lease = await self._node_client(sim.name).create(
                        self._leases_res, node_lease(sim.name, sim.uid, now), namespace=NODE_LEASE_NAMESPACE
                    )
                    return
                except AlreadyExistsError:
                    return  # read it next time
        writer = self._lease_writer(sim.name)
        if writer is not None:
            renewed = await writer.renew(sim.lease, now)
            if renewed is not None:
                sim.lease = renewed
                return
        lease = {**sim.lease, "spec": {**sim.lease.get("spec", {}), **node_lease(sim.name, sim.uid, now)["spec"]}}
        try:
            sim.lease = await self._node_client(sim.name).update(
                self._leases_res, lease, namespace=NODE_LEASE_NAMESPACE
            )
        except (ConflictError, NotFoundError):
            sim.lease = None

    def renews_ahead(self, sim: SimNode) -> bool:
        """Whether :meth:`renew_leases_ahead` can renew ``sim``'s Lease: a kept copy the cheap renewal
        (:mod:`.lease_writer`) reproduces exactly, on a clock that says what ``now`` a later moment has."""
        lease, writer = sim.lease, self._lease_writer(sim.name)
        return lease is not None and self._horizon_clock is not None and writer is not None and writer.can_renew(lease)

    def renews_quietly(self, sim: SimNode, now: float) -> bool:
        """``renews_ahead(sim) and report_quiet(sim, now)`` in one step, read off the node's state (the heartbeat
        asks it for every tick; :meth:`_fingerprint` equality as the reported images' names all present and as
        many, no sorting)."""
        lease = sim.lease
        if lease is None or self._horizon_clock is None:
            return False
        name = sim.spec.name
        writer = self._lease_writers.get(name) if name in self._lease_writers else self._lease_writer(name)
        if writer is None or not writer.can_renew(lease):
            return False
        if now - sim.last_report >= self._options.status_report_frequency:
            return False
        node = sim.node
        if node is None or (self._ready_node.get(name) is not node and not self._ready(sim)):
            return False
        reported = sim.reported
        if not reported or reported[0] != sim.memory_pressure:
            return False
        names, images = reported[1], sim.images
        return len(names) == len(images) and all(image in images for image in names)

    async def renew_leases_ahead(self, ticks: Sequence[tuple[SimNode, float]]) -> int:
        """Renew each ``(sim, at)``'s Lease in order (distinct nodes) as :meth:`renew_lease` would at monotonic
        ``at`` (not yet reached: the caller knows nothing else runs before,
        :class:`~kubeplane.client.clock.HorizonClock`), with that moment's ``renewTime`` and managed-fields time,
        the writes as one store batch (:func:`~kubeplane.kubelet.lease_writer.renew_many`): the store holds the
        same Leases, at the same revisions in the same order, as renewing them one by one. The number of leading
        ticks done; the one after them (if any) wrote nothing, and neither did those after it."""
        clock = self._horizon_clock
        if clock is None:
            return 0
        columns: list[tuple[LeaseWriter, Obj, float]] = []
        writers = self._lease_writers
        for sim, at in ticks:
            name = sim.spec.name
            lease, writer = sim.lease, writers.get(name) if name in writers else self._lease_writer(name)
            if lease is None or writer is None:
                break
            columns.append((writer, lease, clock.now_at(at)))
        else:  # every one renewable: the batch as columns, each Lease built once (nothing written if it declines)
            renewed = await renew_built(columns)
            if renewed is not None:
                for (sim, _), lease in zip(ticks, renewed, strict=False):
                    sim.lease = lease
                return len(renewed)
        prepared: list[tuple[LeaseWriter, Obj]] = []
        places: list[int] = []  # the tick of each prepared write
        done = len(ticks)
        for k, (sim, at) in enumerate(ticks):
            writer, now = self._lease_writer(sim.name), clock.now_at(at)
            new = None if sim.lease is None or writer is None else writer.prepare(sim.lease, now, stamped_at=now)
            if new is None or writer is None:
                done = k
                break
            if new is not sim.lease:
                prepared.append((writer, new))
                places.append(k)
        stored = await renew_many(prepared)
        for k, lease in zip(places, stored, strict=False):
            ticks[k][0].lease = lease
        if len(stored) < len(prepared):
            done = places[len(stored)]
        return done

    def _lease_writer(self, node: str) -> LeaseWriter | None:
        """The cheap renewal (:mod:`.lease_writer`) when ``node`` writes as the trusted in-process caller."""
        try:
            return self._lease_writers[node]
        except KeyError:
            local = trusted_local(self._node_client(node))
            cheap = local is not None and self._options.cheap_leases
            writer = self._lease_writers[node] = LeaseWriter(local, stamps=self._stamps) if cheap and local else None
            return writer

    @staticmethod
    def _fingerprint(sim: SimNode) -> tuple[Any, ...]:
        return (sim.memory_pressure, tuple(sorted(sim.images)))

    def _conditions(self, sim: SimNode) -> list[Obj]:
        stamp = format_time(self._clock.now())
        current = {c.get("type"): c for c in NodeView(sim.node or EMPTY).conditions}
        wanted = {
            "MemoryPressure": sim.memory_pressure,
            "DiskPressure": False,
            "PIDPressure": False,
            "Ready": not sim.booting,
        }
        out = []
        for type_ in CONDITION_ORDER:
            status = "True" if wanted[type_] else "False"
            old = current.get(type_)
            transition = old["lastTransitionTime"] if old and old.get("status") == status else stamp
            out.append(condition(type_, wanted[type_], stamp, transition or stamp))
        return out

    def report_quiet(self, sim: SimNode, now: float) -> bool:
        """Whether :meth:`maybe_report` (not forced) at monotonic ``now`` would write nothing: what it reports
        is unchanged, the node is Ready in the API and the report period has not passed."""
        return (
            now - sim.last_report < self._options.status_report_frequency
            and self._ready(sim)
            and self._fingerprint(sim) == sim.reported
        )

    def _ready(self, sim: SimNode) -> bool:
        """Whether ``sim.node`` is Ready, read once per Node object (objects from the API and the informer are never
        changed in place: a new state is a new object)."""
        node = sim.node
        if node is None:
            return False
        if self._ready_node.get(sim.spec.name) is node:
            return True
        ready = NodeView(node).is_ready
        if ready:
            self._ready_node[sim.spec.name] = node
        return ready

    async def maybe_report(self, sim: SimNode, *, force: bool = False) -> None:
        """Patch node status when it changed or the report period passed (upstream ``tryUpdateNodeStatus``)."""
        now = self._clock.monotonic()
        fingerprint = self._fingerprint(sim)
        if not force and self.report_quiet(sim, now):
            return
        status: Obj = {"conditions": self._conditions(sim)}
        if fingerprint[1] != (sim.reported[1] if sim.reported else None) or sim.full_report_due:
            status["images"] = sim.image_list()
        if sim.full_report_due:
            status.update(
                capacity=dict(sim.spec.capacity),
                allocatable=dict(sim.spec.allocatable),
                nodeInfo=node_info(sim.spec),
                addresses=[
                    {"type": "InternalIP", "address": sim.spec.address},
                    {"type": "Hostname", "address": sim.name},
                ],
                daemonEndpoints={"kubeletEndpoint": {"Port": self.kubelet_port}},
                declaredFeatures=kubelet_declared_features(),
            )
        sim.node = await self._node_client(sim.name).patch(
            self._nodes_res, sim.name, {"status": status}, patch_type=PatchType.STRATEGIC, subresource="status"
        )
        sim.last_report, sim.reported, sim.full_report_due = now, fingerprint, False
