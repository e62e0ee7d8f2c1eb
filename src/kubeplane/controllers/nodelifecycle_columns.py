"""The node health pass over columns: which nodes a ``monitorNodeHealth`` pass must look at.

Upstream's pass (``pkg/controller/nodelifecycle``, ``monitorNodeHealth``) visits every node every
``nodeMonitorPeriod`` (5 s). For a Ready node whose Node object did not change since it was last evaluated, the
visit's only effects are: a newer Lease ``renewTime`` moves the node's probe to now, a probe older than the grace
period sends the node to the full evaluation (which writes ``Unknown``), and its Ready condition is counted in its
zone. :class:`HealthColumns` keeps those nodes ("clean") as numpy columns, so a pass over a thousand idle nodes
costs the Leases renewed since the last pass plus a vector compare:

* **Change tracking.** The node and Lease informers' indexers call :meth:`HealthColumns.node_changed` and
  :meth:`HealthColumns.lease_changed` synchronously on every put and delete
  (:meth:`~kubeplane.client.cache.Indexer.add_listener`), so at the start of a pass the columns know every node
  and Lease the cache changed since the previous pass. A changed node is no longer clean.
* **Clean** means: the controller's last visit of this very node revision took the fast path (Ready True,
  nothing changed, probe within grace) and the node was neither tainted nor queued for NoExecute tainting.
  The column ``probe`` mirrors ``_NodeHealth.probe`` of clean nodes (set when the node is marked clean and when a
  Lease moves it); ``zone`` and ``counted`` are those of its record.
* **The pass** (:meth:`HealthColumns.plan`): Leases changed since the last pass are read for clean nodes
  (:func:`observe_lease`, exactly the fast path's read), clean nodes past ``probe + grace`` stop being clean,
  and every node that is not clean is visited, in the node cache's order (the order of upstream's list and of
  the controller's writes and events). Clean nodes contribute a Ready True to their zone's count.
* **Falling back.** Anything the columns do not model makes :meth:`plan` answer None and the controller runs the
  full pass over every node, which rebuilds the columns: the first pass, a re-listed cache, a node added or
  removed, a zone the controller does not know (a new zone, or one :meth:`handle_disruption` forgot).

Invariant (pinned by tests/controllers/test_nodelifecycle_columns.py): a pass over the columns writes, records
and decides exactly what the full pass over every node would.
"""

from __future__ import annotations

import calendar
import functools
import time
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from kubeplane.api.views import meta_of, spec_of, zone_key
from kubeplane.client.cache import Indexer
from kubeplane.client.interface import Obj
from kubeplane.controllers.podutil import parse_timestamp

NODE_LEASE_PREFIX = "kube-node-lease/"
READY_TRUE: Mapping[str, Any] = MappingProxyType({"type": "Ready", "status": "True"})
"""What a clean node counts in its zone: zone states read a condition's ``status`` only."""


@functools.lru_cache(maxsize=4096)
def _whole_second(prefix: str) -> int | None:
    """Epoch seconds of ``YYYY-MM-DDTHH:MM:SS`` in UTC; None when it is not one (a hundred renewals share each)."""
    try:
        return calendar.timegm(time.strptime(prefix, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def renew_time(value: Any) -> float | None:
    """``parse_timestamp(value)`` for a Lease ``renewTime``: the canonical ``MicroTime`` (what every client writes,
    ``YYYY-MM-DDTHH:MM:SS.ffffffZ``) split into its whole second (cached) and microseconds, giving the very float
    ``datetime.timestamp()`` does (whole microseconds over 10**6, one correctly rounded division); anything
    else goes the general way."""
    if isinstance(value, str) and len(value) == 27 and value[19] == "." and value[26] == "Z":
        fraction = value[20:26]
        second = _whole_second(value[:19])
        if second is not None and fraction.isdigit() and fraction.isascii():
            return (second * 1_000_000 + int(fraction)) / 1_000_000
    return parse_timestamp(value)


class LeaseProbe(Protocol):
    """What :func:`observe_lease` reads and moves of a node's health record."""

    probe: float
    lease_renew: float | None
    lease_rv: str
    lease_seen: Obj | None


def observe_lease(health: LeaseProbe, lease: Obj | None, now: float) -> None:
    """Upstream's Lease read in ``tryUpdateNodeHealth``: a ``renewTime`` newer than the last one seen moves the
    probe to ``now``. The same Lease object (the same revision) is not read twice."""
    if lease is None or lease is health.lease_seen:
        return
    health.lease_seen = lease
    rv = meta_of(lease).get("resourceVersion")
    if rv != health.lease_rv:
        health.lease_rv = str(rv or "")
        renew = renew_time(spec_of(lease).get("renewTime"))
        if renew is not None and (health.lease_renew is None or health.lease_renew < renew):
            health.lease_renew = renew
            health.probe = now


class Plan:
    """One pass's work: the nodes to visit (cache order) and the clean nodes' Ready conditions per zone."""

    __slots__ = ("visit", "zone_conditions")

    def __init__(self, visit: list[Obj], zone_conditions: dict[str, list[Mapping[str, Any] | None]]) -> None:
        self.visit, self.zone_conditions = visit, zone_conditions


class HealthColumns:
    """Per-node columns of the health pass (see the module docstring)."""

    def __init__(self, nodes: Indexer, leases: Indexer) -> None:
        self._nodes, self._leases = nodes, leases
        self.reset = True
        """The next pass must be a full one (nothing known yet, or the cache was replaced)."""
        self._node_dirty: set[str] = set()
        self._lease_dirty: set[str] = set()
        self._order: dict[str, int] = {}  # node name -> its place in the cache's order (insertion, as dicts)
        self._next_order = 0
        self._slot: dict[str, int] = {}  # node name -> its row in the columns (never reused)
        self._names: list[str] = []
        size = 64
        self.probe: npt.NDArray[np.float64] = np.zeros(size)
        self.clean: npt.NDArray[np.bool_] = np.zeros(size, dtype=bool)
        self._counted: npt.NDArray[np.bool_] = np.zeros(size, dtype=bool)
        self._zone: npt.NDArray[np.int64] = np.zeros(size, dtype=np.int64)
        self._zones: list[str] = []
        self._zone_ids: dict[str, int] = {}
        self._node_zone: dict[str, str] = {}  # every cached node's zone (``zone_key`` of its current object)
        for key in nodes.list_keys():
            self.node_changed(key)
        nodes.add_listener(self.node_changed)
        leases.add_listener(self.lease_changed)

    # -- change tracking (indexer listeners) -------------------------------------------------------------------

    def node_changed(self, key: str | None) -> None:
        if key is None:
            self.reset = True
            self._order = {}
            self._next_order = 0
            for name in self._nodes.list_keys():
                self._place(name)
            return
        if key in self._nodes:
            if key not in self._order:
                self._place(key)
        else:
            self._order.pop(key, None)
        self._node_dirty.add(key)

    def _place(self, name: str) -> None:
        self._order[name] = self._next_order
        self._next_order += 1

    def lease_changed(self, key: str | None) -> None:
        if key is None:
            self.reset = True
        elif key.startswith(NODE_LEASE_PREFIX):
            self._lease_dirty.add(key[len(NODE_LEASE_PREFIX) :])

    # -- records ---------------------------------------------------------------------------------------------

    def _row(self, name: str) -> int:
        row = self._slot.get(name)
        if row is None:
            row = self._slot[name] = len(self._names)
            self._names.append(name)
            if row >= len(self.probe):
                grow = len(self.probe)
                self.probe = np.concatenate([self.probe, np.zeros(grow)])
                self.clean = np.concatenate([self.clean, np.zeros(grow, dtype=bool)])
                self._counted = np.concatenate([self._counted, np.zeros(grow, dtype=bool)])
                self._zone = np.concatenate([self._zone, np.zeros(grow, dtype=np.int64)])
        return row

    def _zone_id(self, zone: str) -> int:
        zid = self._zone_ids.get(zone)
        if zid is None:
            zid = self._zone_ids[zone] = len(self._zones)
            self._zones.append(zone)
        return zid

    def mark(self, name: str, *, clean: bool, probe: float = 0.0, zone: str = "", counted: bool = True) -> None:
        """Record the visit of ``name``: clean (with its record's probe, zone and counting) or not."""
        row = self._row(name)
        self.clean[row] = clean
        if clean:
            self.probe[row] = probe
            self._zone[row] = self._zone_id(zone)
            self._counted[row] = counted

    def begin_full(self, nodes: list[Obj]) -> None:
        """A full pass over ``nodes`` starts: every change so far is part of it; it marks each node anew."""
        self.reset = False
        self._node_dirty.clear()
        self._lease_dirty.clear()
        self.clean[:] = False
        self._node_zone = {}
        for node in nodes:
            name = str(node["metadata"]["name"])
            self._row(name)  # a row for every node: a visit that ends early leaves it not clean, visited again
            self._node_zone[name] = zone_key(node)

    def invalidate(self) -> None:
        """No node is clean (records changed outside the visits: the next pass visits every node)."""
        self.clean[:] = False

    # -- the pass --------------------------------------------------------------------------------------------

    def plan(
        self,
        *,
        known: Mapping[str, Any],
        zones: Mapping[str, Any],
        health: Mapping[str, LeaseProbe],
        now: float,
        grace: float,
    ) -> Plan | None:
        """This pass's :class:`Plan`, or None when it must be a full pass (see the module docstring). Moves the
        probes of clean nodes whose Lease was renewed and drops clean nodes past their grace period."""
        if self.reset:
            return None
        nodes = self._nodes
        dirty, self._node_dirty = self._node_dirty, set()
        for name in dirty:
            node = nodes.get(name)
            if node is None or name not in known:
                self._node_dirty |= dirty
                return None
            row = self._slot.get(name)
            if row is not None:
                self.clean[row] = False
            self._node_zone[name] = zone_key(node)
        if len(known) != len(self._node_zone):
            self._node_dirty |= dirty
            return None
        for zone in set(self._node_zone.values()):
            if zone not in zones:
                self._node_dirty |= dirty
                return None
        leases, self._lease_dirty = self._lease_dirty, set()
        slots, clean, probe = self._slot, self.clean, self.probe
        for name in leases:
            row = slots.get(name)
            if row is None or not clean[row]:
                continue  # a visited node reads its Lease itself
            record = health[name]
            before = record.probe
            observe_lease(record, self._leases.get(NODE_LEASE_PREFIX + name), now)
            if record.probe != before:
                probe[row] = record.probe
        n = len(self._names)
        live = clean[:n]
        live &= ~(now > probe[:n] + grace)  # past the grace period: the full evaluation decides
        counts = np.bincount(self._zone[:n][live & self._counted[:n]], minlength=len(self._zones))
        zone_conditions: dict[str, list[Mapping[str, Any] | None]] = {
            self._zones[z]: [READY_TRUE] * int(c) for z in np.flatnonzero(counts) for c in (counts[z],)
        }
        names, order = self._names, self._order
        visit_names = [name for name in (names[i] for i in np.flatnonzero(~live)) if name in known and name in order]
        visit_names.sort(key=order.__getitem__)
        visit = [node for node in map(nodes.get, visit_names) if node is not None]
        return Plan(visit, zone_conditions)
