"""The simulated cloud: a :class:`~.provider.CloudProvider` whose nodes are kubelets of a
:class:`~kubeplane.kubelet.fleet.Fleet`, on the injected clock.

What a cloud's node group does, reduced to what a scheduler experiment needs (upstream's providers, e.g. the GCE MIG
or AWS ASG ``NodeGroup``, ask the cloud for VMs that boot, join the cluster and later go away):

* :meth:`FleetProvider.start` creates each group's ``initial_size`` nodes, Ready at once (the cluster as it was
  when the autoscaler started).
* :meth:`FleetProvider.increase_size` registers the new nodes **at once, NotReady** (Ready False, tainted
  ``node.kubernetes.io/not-ready:NoSchedule``: :meth:`Fleet.add_nodes` with ``booting``); ``provisioning_delay``
  seconds later each reports Ready (:meth:`Fleet.mark_ready`) and the node lifecycle controller lifts the taint.
  Refused beyond ``max_size``: "size increase too large - desired:N max:M" (upstream's MIG/ASG message), and
  "size increase must be positive" for ``delta <= 0``.
* :meth:`FleetProvider.delete_nodes` stops each node's kubelet at once (the VM shuts down) and deletes the Node
  object ``deletion_delay`` seconds later (the cloud node lifecycle controller's part). Refused when the group
  would go below ``min_size`` ("min size reached, nodes will not be deleted") or for a node of another group
  ("<node> belongs to a different node group than <group>").

Invariants: nodes are named ``<group>-<n>``, ``n`` counting from 0 per group and never reused; a node counts from
registration to the deletion of its Node object (:meth:`node_seconds`, the cost base); :attr:`history` holds one
:class:`SizeChange` per node event in time order, ``size`` being the group's registered, not yet deleted nodes
after it. A node being deleted is no longer in :meth:`nodes` or :meth:`target_size`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.views import name_of
from kubeplane.client.clock import Clock, SystemClock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Client
from kubeplane.kubelet.config import NodeSpec
from kubeplane.kubelet.csi.config import DEFAULT_DRIVER
from kubeplane.kubelet.fleet import Fleet, FleetOptions
from kubeplane.kubelet.node import registration_node, sorted_images
from kubeplane.kubelet.state import NodeClients

from .nodegroups import group_node_spec, node_name, template_node_name
from .provider import NODE_GROUP_LABEL, NodeGroupError, NodeGroupSpec

__all__ = ["DELETED", "DELETING", "READY", "REGISTERED", "FleetProvider", "SizeChange", "fleet_provider"]

log = logging.getLogger(__name__)

REGISTERED, READY, DELETING, DELETED = "registered", "ready", "deleting", "deleted"
"""The events of :attr:`FleetProvider.history`."""


@dataclass(frozen=True, slots=True)
class SizeChange:
    """One node event: at ``t`` (monotonic seconds of the provider's clock) ``node`` of ``group`` was registered,
    became Ready, began deletion or was deleted; ``size`` is then the group's registered, undeleted nodes."""

    t: float
    group: str
    size: int
    event: str
    node: str


@dataclass(slots=True)
class _Member:
    """One node a group created."""

    name: str
    group: str
    registered: float
    ready: float | None = None
    deleting: float | None = None
    deleted: float | None = None
    timer: asyncio.Task[None] | None = field(default=None, repr=False)


class FleetProvider:
    """Node groups whose nodes are ``fleet``'s kubelets (see the module docstring). ``client`` deletes the Node
    objects (default: the fleet's own client)."""

    def __init__(
        self,
        fleet: Fleet,
        groups: Sequence[NodeGroupSpec],
        *,
        clock: Clock,
        client: Client | None = None,
    ) -> None:
        self.fleet = fleet
        self.clock = clock
        self._client = client or fleet.client
        self._groups = {g.name: g for g in groups}
        if len(self._groups) != len(groups):
            raise NodeGroupError("node groups: names must be unique")
        self._members: dict[str, _Member] = {}
        self._by_group: dict[str, list[_Member]] = {g.name: [] for g in groups}
        self._next: dict[str, int] = dict.fromkeys(self._groups, 0)
        self._added: dict[str, int] = dict.fromkeys(self._groups, 0)
        self.history: list[SizeChange] = []
        """Every node event in time order (:class:`SizeChange`)."""
        self._started = False

    # --- lifecycle ----------------------------------------------------------------------------------------------

    async def start(self, *, existing: Iterable[str] = ()) -> None:
        """Create every group's initial nodes, Ready at once. The fleet must be started.

        ``existing``: names of Nodes the API already has (a restarted ``kubeplane up`` on the same data dir): those
        named ``<group>-<n>`` of a declared group are taken back as the group's nodes (their kubelets start again,
        within ``max_size``) and new names continue after the highest ``n``; the group is then filled up to its
        initial size."""
        if self._started:
            return
        self._started = True
        found: dict[str, list[int]] = {name: [] for name in self._groups}
        for name in existing:
            prefix, _, index = name.rpartition("-")
            if prefix in found and index.isdigit() and node_name(prefix, int(index)) == name:
                found[prefix].append(int(index))
        for group in self._groups.values():
            indices = sorted(found[group.name])[: group.max_size]
            if indices:
                self._next[group.name] = indices[-1] + 1
                await self._create(group, len(indices), booting=False, indices=indices)
            count = group.min_size if group.initial_size is None else group.initial_size
            if count > len(indices):
                await self._create(group, count - len(indices), booting=False)

    async def stop(self) -> None:
        """Cancel the pending Ready and deletion timers (the fleet is stopped by its owner)."""
        timers = [m.timer for m in self._members.values() if m.timer is not None and not m.timer.done()]
        for timer in timers:
            timer.cancel()
        for timer in timers:
            with contextlib.suppress(asyncio.CancelledError):
                await timer

    # --- CloudProvider ------------------------------------------------------------------------------------------

    def node_groups(self) -> Sequence[NodeGroupSpec]:
        return list(self._groups.values())

    def node_group_for(self, node_name: str) -> str | None:
        member = self._members.get(node_name)
        return None if member is None else member.group

    def target_size(self, group: str) -> int:
        return len(self.nodes(group))

    def nodes(self, group: str) -> list[str]:
        return [m.name for m in self._group_members(group) if m.deleting is None]

    def upcoming(self, group: str) -> int:
        return sum(1 for m in self._group_members(group) if m.deleting is None and m.ready is None)

    def template_node(self, group: str) -> dict[str, Any]:
        spec = self._group(group)
        node_spec = group_node_spec(
            spec, 0, position=0, csi_drivers=self._csi_drivers(), name=template_node_name(spec.name)
        )
        return registration_node(node_spec, self.clock.now(), sorted_images([dict(i) for i in node_spec.images]))

    async def increase_size(self, group: str, delta: int) -> None:
        spec = self._group(group)
        if delta <= 0:
            raise NodeGroupError("size increase must be positive")
        desired = self.target_size(group) + delta
        if desired > spec.max_size:
            raise NodeGroupError(f"size increase too large - desired:{desired} max:{spec.max_size}")
        self._added[group] += delta
        await self._create(spec, delta, booting=True)

    async def delete_nodes(self, group: str, names: Sequence[str]) -> None:
        spec = self._group(group)
        unique = list(dict.fromkeys(names))
        for name in unique:
            member = self._members.get(name)
            if member is None or member.group != group:
                raise NodeGroupError(f"{name} belongs to a different node group than {group}")
            if member.deleting is not None:
                raise NodeGroupError(f"{name} is already being deleted")
        if self.target_size(group) - len(unique) < spec.min_size:
            raise NodeGroupError("min size reached, nodes will not be deleted")
        now = self.clock.monotonic()
        for name in unique:
            member = self._members[name]
            member.deleting = now
            if member.timer is not None:  # still booting: it never becomes Ready
                member.timer.cancel()
            self.fleet.stop_node(name)
            self._record(member, DELETING)
            member.timer = asyncio.get_running_loop().create_task(
                self._delete_later(member, now + spec.deletion_delay), name=f"delete {name}"
            )

    # --- accounting ---------------------------------------------------------------------------------------------

    def registered(self, group: str) -> int:
        """The group's nodes whose Node object exists (registered, not yet deleted): what it is billed for now."""
        return sum(1 for m in self._group_members(group) if m.deleted is None)

    def node_seconds(self, group: str, *, until: float | None = None) -> float:
        """Seconds of node time the group used up to ``until`` (default now): each node from registration to the
        deletion of its Node object."""
        end = self.clock.monotonic() if until is None else until
        return sum(
            max(0.0, min(end, m.deleted if m.deleted is not None else end) - m.registered)
            for m in self._group_members(group)
        )

    def added(self, group: str) -> int:
        """Nodes the group created after :meth:`start` (scale-ups)."""
        self._group(group)
        return self._added[group]

    def removed(self, group: str) -> int:
        """Nodes of the group whose deletion began."""
        return sum(1 for c in self.history if c.group == group and c.event == DELETING)

    # --- internals ----------------------------------------------------------------------------------------------

    def _group(self, group: str) -> NodeGroupSpec:
        spec = self._groups.get(group)
        if spec is None:
            raise NodeGroupError(f"node group {group} not found")
        return spec

    def _group_members(self, group: str) -> list[_Member]:
        self._group(group)
        return self._by_group[group]

    def _csi_drivers(self) -> tuple[Any, ...]:
        return tuple(self.fleet.csi.drivers.values())

    async def _create(
        self, spec: NodeGroupSpec, count: int, *, booting: bool, indices: Sequence[int] | None = None
    ) -> None:
        """Register ``count`` new nodes of ``spec`` (booting: NotReady until the provisioning delay passed);
        ``indices``: the node numbers to use (nodes taken back), else the group's next ones."""
        now = self.clock.monotonic()
        drivers = self._csi_drivers()
        specs: list[NodeSpec] = []
        members: list[_Member] = []
        for i in range(count):
            if indices is not None:
                index = indices[i]
            else:
                index = self._next[spec.name]
                self._next[spec.name] = index + 1
            name = node_name(spec.name, index)
            specs.append(group_node_spec(spec, index, position=len(self.fleet.nodes) + len(specs), csi_drivers=drivers))
            member = _Member(name, spec.name, registered=now)
            self._members[name] = member
            self._by_group[spec.name].append(member)
            members.append(member)
        for member in members:
            self._record(member, REGISTERED)
        booting = booting and spec.provisioning_delay > 0
        await self.fleet.add_nodes(specs, booting=booting)
        loop = asyncio.get_running_loop()
        for member in members:
            if booting:
                member.timer = loop.create_task(
                    self._ready_later(member, now + spec.provisioning_delay), name=f"provision {member.name}"
                )
            else:
                member.ready = now
                self._record(member, READY)

    async def _ready_later(self, member: _Member, at: float) -> None:
        await self.clock.sleep(at - self.clock.monotonic())  # a deadline: exact whenever the task first runs
        if member.deleting is not None:
            return
        member.ready = self.clock.monotonic()
        member.timer = None
        self._record(member, READY)
        try:
            await self.fleet.mark_ready(member.name)
        except Exception as exc:  # the kubelet retries its report on its next heartbeat
            log.warning("node group %s: reporting %s Ready failed: %s", member.group, member.name, exc)

    async def _delete_later(self, member: _Member, at: float) -> None:
        await self.clock.sleep(at - self.clock.monotonic())
        with contextlib.suppress(NotFoundError):
            await self._client.delete(self._client.resource("nodes"), member.name)
        member.deleted = self.clock.monotonic()
        member.timer = None
        self._record(member, DELETED)

    def _record(self, member: _Member, event: str) -> None:
        t = round(self.clock.monotonic(), 6)
        self.history.append(SizeChange(t, member.group, self.registered(member.group), event, member.name))


@contextlib.asynccontextmanager
async def fleet_provider(
    client: Client,
    groups: Sequence[NodeGroupSpec],
    *,
    clock: Clock | None = None,
    rng: random.Random | None = None,
    options: FleetOptions | None = None,
    node_client: NodeClients | None = None,
    admin_client: Client | None = None,
) -> AsyncIterator[FleetProvider]:
    """A started :class:`FleetProvider` on a fleet of its own (``kubeplane autoscaler --node-groups``: the cloud
    beside a cluster it reaches through ``client``), stopped on exit. The fleet runs the default simulated CSI
    driver; nodes of the groups the API already has are taken back (:meth:`FleetProvider.start`).
    ``node_client``: each node's own client (default ``client``); ``admin_client`` deletes Node objects (default
    ``client``)."""
    clock = clock or SystemClock()
    fleet = Fleet(
        client, [], clock=clock, rng=rng, options=options, csi_drivers=(DEFAULT_DRIVER,), node_client=node_client
    )
    provider = FleetProvider(fleet, groups, clock=clock, client=admin_client)
    await fleet.start()
    try:
        listed = await client.list(client.resource("nodes"), label_selector=NODE_GROUP_LABEL)
        await provider.start(existing=[name_of(n) for n in listed["items"]])
        yield provider
    finally:
        await provider.stop()
        await fleet.stop()
