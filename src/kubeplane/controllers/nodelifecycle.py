"""The node lifecycle controller: node health from heartbeats, condition taints, and NoExecute tainting of
unhealthy nodes (upstream ``pkg/controller/nodelifecycle``, v1.37, controller name ``node-lifecycle``).

Three loops, as upstream's ``Run``:

**Node health** (``monitorNodeHealth``, every ``nodeMonitorPeriod``, 5 s). Per node the controller remembers
when it last saw a heartbeat (``probe``): a new Ready ``lastHeartbeatTime`` or a newer Lease ``renewTime`` in
``kube-node-lease`` moves it to now. A node whose probe is older than its grace period
(``nodeMonitorGracePeriod``, 50 s since v1.32; ``nodeStartupGracePeriod``, 60 s, while it never posted Ready)
gets Ready, MemoryPressure, DiskPressure and PIDPressure set to ``Unknown`` (reason ``NodeStatusUnknown``,
"Kubelet stopped posting node status."; ``NodeStatusNeverUpdated`` / "Kubelet never posted node status." for a
condition it never had) through the status subresource. On the pass that sees Ready leave True it records
``NodeNotReady`` on the node and marks the node's pods not ready (``MarkPodsNotReady``: Ready condition False,
event ``NodeNotReady`` "Node is not ready" on each pod). Pods bound later to a not-ready node are marked too.

**NoExecute taints** (``doNoExecuteTaintingPass``, every 100 ms). A node observed Ready False or Unknown is put
in its zone's rate-limited queue; the pass taints it ``node.kubernetes.io/not-ready:NoExecute`` or
``node.kubernetes.io/unreachable:NoExecute`` (the two are kept mutually exclusive and swapped at once when the
Ready status flips between False and Unknown). Each zone (``region:\\x00:zone`` from the topology labels) has
upstream's token bucket: ``nodeEvictionRate`` 0.1 qps, burst 1, so at most one node per zone is tainted every
10 s; a zone with >= ``unhealthyZoneThreshold`` (55 %) and more than 2 nodes not ready drops to
``secondaryNodeEvictionRate`` 0.01 (0 for zones of <= ``largeClusterSizeThreshold`` 50 nodes), and when every
zone is fully disrupted (no Ready node anywhere) tainting stops and the controller's NoExecute taints are
removed ("master disruption mode"): the control plane, not all nodes, is then the likely culprit. A node seen
Ready again loses both taints and leaves the queue.

**NoSchedule taints** (``doNoScheduleTaintingPass``, on node events, "TaintNodesByCondition"): the node's
``node.kubernetes.io/{not-ready,unreachable,memory-pressure,disk-pressure,pid-pressure,network-unavailable}``
NoSchedule taints mirror its conditions and ``node.kubernetes.io/unschedulable:NoSchedule`` mirrors
``spec.unschedulable``; the beta os/arch labels follow the stable ones (``reconcileNodeLabels``).

Work-queue keys: node names (NoSchedule pass) and pod keys ``namespace/name`` (``processPod``). Taint writes read
the node from the API and merge-patch ``spec.taints`` with its ``resourceVersion`` (a conflict retries), as
upstream's ``AddOrUpdateTaintOnNode``/``RemoveTaintOffNode``. All time is ``ctx.clock``.

In memory, as upstream, and rebuilt from the API after a restart: the per-node probe data (a restart only
grants every node a fresh grace period), the known-node set, zone states and queues.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.meta import format_time
from kubeplane.api.views import (
    NodeView,
    PodView,
    find_condition,
    labels_of,
    meta_of,
    spec_of,
    status_of,
    uid_of,
    zone_key,
)
from kubeplane.client.cache import NODE_NAME_INDEX
from kubeplane.client.clock import sleep_until
from kubeplane.client.errors import ConflictError, NotFoundError
from kubeplane.client.interface import Obj, PatchType
from kubeplane.controllers.base import Controller, ControllerContext, split_key
from kubeplane.controllers.nodelifecycle_columns import HealthColumns, observe_lease
from kubeplane.controllers.nodelifecycle_queue import RateLimitedTimedQueue, TimedValue
from kubeplane.controllers.nodelifecycle_taints import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    NodeTaintWriter,
    has_taint,
    no_schedule_taint_diff,
)
from kubeplane.controllers.podutil import parse_timestamp, pod_condition_patch

__all__ = ["NodeLifecycleController", "RateLimitedTimedQueue", "TimedValue", "compute_zone_state"]

log = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE = "kube-node-lease"
NODE_EVICTION_PERIOD = 0.1  # upstream scheduler.NodeEvictionPeriod
NODE_HEALTH_UPDATE_RETRY = 5  # upstream NodeHealthUpdateRetry
UNKNOWN_CONDITION_TYPES = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
"""Set to Unknown when the kubelet goes silent; NetworkUnavailable belongs to the network plugin."""
LABEL_DISRUPTION_EXCLUSION = "node.kubernetes.io/exclude-disruption"
LABEL_RECONCILE = (("kubernetes.io/os", "beta.kubernetes.io/os"), ("kubernetes.io/arch", "beta.kubernetes.io/arch"))

STATE_INITIAL, STATE_NORMAL = "Initial", "Normal"
STATE_FULL_DISRUPTION, STATE_PARTIAL_DISRUPTION = "FullDisruption", "PartialDisruption"

DEFAULTS: Mapping[str, float] = {
    "nodeMonitorPeriod": 5.0,
    "nodeMonitorGracePeriod": 50.0,
    "nodeStartupGracePeriod": 60.0,
    "nodeEvictionRate": 0.1,
    "secondaryNodeEvictionRate": 0.01,
    "largeClusterSizeThreshold": 50,
    "unhealthyZoneThreshold": 0.55,
}


# --- pure helpers ----------------------------------------------------------------------------------------


def compute_zone_state(
    ready_conditions: Sequence[Mapping[str, Any] | None], unhealthy_threshold: float
) -> tuple[int, str]:
    """``(not ready nodes, state)`` of a zone (upstream ``ComputeZoneState``)."""
    ready = sum(1 for c in ready_conditions if c is not None and c.get("status") == "True")
    not_ready = len(ready_conditions) - ready
    if ready == 0 and not_ready > 0:
        return not_ready, STATE_FULL_DISRUPTION
    if not_ready > 2 and not_ready / (not_ready + ready) >= unhealthy_threshold:
        return not_ready, STATE_PARTIAL_DISRUPTION
    return not_ready, STATE_NORMAL


def _working_condition(node: Obj, condition_type: str) -> Obj | None:
    """The condition of ``condition_type`` in a working copy (:func:`_working_copy`), to change in place; reads
    of shared nodes go through :class:`~kubeplane.api.views.NodeView`, which never hands out a writable one."""
    status: Obj = node.get("status") or {}
    conditions: list[Obj] = status.get("conditions") or []
    return next((c for c in conditions if c.get("type") == condition_type), None)


# --- working copies -------------------------------------------------------------------------------------


def _working_copy(node: Mapping[str, Any]) -> Obj:
    """A copy of a cached Node that :meth:`NodeLifecycleController.try_update_node_health` may change: its
    metadata and its conditions are copied (what it writes), the rest (images, capacity...) is shared read-only.
    A full deep copy of every node every monitor period is what upstream does; in Python it dominated a
    5,000-node simulation."""
    status = status_of(node)
    return {
        **node,
        "metadata": dict(node.get("metadata") or {}),
        "status": {**status, "conditions": [dict(c) for c in status.get("conditions") or []]},
    }


def _conditions_copy(status: Mapping[str, Any]) -> Obj:
    """What the health record keeps of a status: its conditions (the only part compared later)."""
    return {"conditions": [dict(c) for c in status.get("conditions") or []]}


# --- the controller -------------------------------------------------------------------------------------


@dataclass
class _NodeHealth:
    probe: float
    ready_transition: float
    status: Obj
    lease_renew: float | None = None
    node_rv: str = ""
    """The node revision this record was last evaluated on without a write ("": re-evaluate in full)."""
    lease_rv: str = ""
    """The Lease revision whose ``renewTime`` was last read ("": none read yet)."""
    view_rv: str = ""
    """The node revision the fields below were read from (once per revision, by the pass's fast path)."""
    ready: Mapping[str, Any] | None = None
    lease_seen: Obj | None = None
    """The cached Lease object the fast path last looked at (the same object is the same revision: not read)."""
    zone: str = ""
    counted: bool = True
    tainted: bool = False


class NodeLifecycleController(Controller):
    """See the module docstring."""

    name = "node-lifecycle"
    workers = 8  # upstream nodeUpdateWorkerSize

    def __init__(self, ctx: ControllerContext) -> None:
        super().__init__(ctx)
        opts = {**DEFAULTS, **self.options}
        self.monitor_period = float(opts["nodeMonitorPeriod"])
        self.grace_period = float(opts["nodeMonitorGracePeriod"])
        self.startup_grace_period = float(opts["nodeStartupGracePeriod"])
        self.eviction_qps = float(opts["nodeEvictionRate"])
        self.secondary_eviction_qps = float(opts["secondaryNodeEvictionRate"])
        self.large_cluster_threshold = int(opts["largeClusterSizeThreshold"])
        self.unhealthy_zone_threshold = float(opts["unhealthyZoneThreshold"])
        self.recorder = ctx.recorder("node-controller")
        pods = ctx.informers.informer_for("pods")
        nodes = ctx.informers.informer_for("nodes")
        leases = ctx.informers.informer_for("leases")
        self.pod_indexer = pods.indexer
        self.pod_lister = pods.lister()
        self.node_lister = nodes.lister()
        self.lease_lister = leases.lister()
        self._columns = HealthColumns(nodes.indexer, leases.indexer)
        self.nodes_res = self.client.resource("nodes")
        self.pods_res = self.client.resource("pods")
        self.taints = NodeTaintWriter(self.client, self.nodes_res, self.clock)
        self.health: dict[str, _NodeHealth] = {}
        self.known_nodes: dict[str, Obj] = {}
        self.zone_states: dict[str, str] = {}
        self.zone_tainters: dict[str, RateLimitedTimedQueue] = {}
        self.nodes_to_retry: set[str] = set()
        self._events: set[asyncio.Task[None]] = set()
        self._queued = asyncio.Event()  # a node was queued for NoExecute tainting (wakes an idle tainting loop)
        pods.add_event_handler(on_add=lambda p: self._pod_updated(None, p), on_update=self._pod_updated)
        nodes.add_event_handler(
            on_add=self.enqueue,
            on_update=lambda _old, new: self.enqueue(new),
            on_delete=lambda n: self.nodes_to_retry.discard(str(n["metadata"]["name"])),
        )

    def _pod_updated(self, old: Obj | None, new: Obj) -> None:
        node_name = spec_of(new).get("nodeName")
        if node_name and (old is None or spec_of(old).get("nodeName") != node_name):
            self.enqueue(new)

    # --- running -------------------------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        loops = [
            asyncio.ensure_future(self._every(self.monitor_period, self.monitor_node_health)),
            asyncio.ensure_future(self._no_execute_tainting()),
        ]
        try:
            await super().run(workers)
        finally:
            for task in [*loops, *self._events]:
                task.cancel()
            await asyncio.gather(*loops, *self._events, return_exceptions=True)

    async def _every(self, period: float, fn: Callable[[], Awaitable[None]]) -> None:
        """Upstream ``wait.UntilWithContext``: run, then sleep ``period`` on the clock; errors are logged."""
        while True:
            try:
                await fn()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: periodic pass failed", self.name)
            await self.clock.sleep(period)

    async def _no_execute_tainting(self) -> None:
        """:meth:`do_no_execute_tainting_pass` every ``NodeEvictionPeriod`` (100 ms), as ``_every`` runs it. A pass
        over empty zone queues does nothing (no limiter token taken, nothing read), so while every queue is empty
        the loop waits for a node to be queued instead of waking ten times a second, then sleeps to the very
        moment the 100 ms sleeps would have reached (the same float sums from the last pass's): a queued node is
        tainted when it would have been, and a simulation's idle cluster is not woken for nothing."""
        while True:
            try:
                await self.do_no_execute_tainting_pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: periodic pass failed", self.name)
            due = self.clock.monotonic() + NODE_EVICTION_PERIOD
            if not any(self.zone_tainters.values()):  # every queue empty (len 0)
                self._queued.clear()
                await self._queued.wait()
                now = self.clock.monotonic()
                while due < now:
                    due += NODE_EVICTION_PERIOD
            await sleep_until(self.clock, due)

    def _event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        task = asyncio.ensure_future(self.recorder.event(obj, event_type, reason, message))
        self._events.add(task)
        task.add_done_callback(self._events.discard)

    def _node_event(self, node: Mapping[str, Any], reason: str, message: str) -> None:
        meta = meta_of(node)
        ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": meta.get("name"), "uid": meta.get("uid")}}
        self._event(ref, "Normal", reason, message)

    # --- work-queue keys: NoSchedule taints and labels, pods on unhealthy nodes ------------------------------

    async def sync(self, key: str) -> None:
        if "/" in key:
            await self._process_pod(key)
            return
        node = self.node_lister.get(None, key)
        if node is None:
            return
        add, remove = no_schedule_taint_diff(node)
        if (add or remove) and not await self.taints.swap(key, add, remove, node):
            raise RuntimeError(f"failed to swap taints of node {key}")
        await self._reconcile_labels(node)

    async def _reconcile_labels(self, node: Obj) -> None:
        labels = meta_of(node).get("labels")
        if not labels:
            return
        update = {beta: labels[ga] for ga, beta in LABEL_RECONCILE if ga in labels and labels.get(beta) != labels[ga]}
        if update:
            name = node["metadata"]["name"]
            await self.client.patch(self.nodes_res, name, {"metadata": {"labels": update}})

    async def _process_pod(self, key: str) -> None:
        namespace, name = split_key(key)
        pod = self.pod_lister.get(namespace, name)
        if pod is None:
            return
        node_name = str(spec_of(pod).get("nodeName") or "")
        health = self.health.get(node_name)
        if health is None:
            return
        if self.node_lister.get(None, node_name) is None:
            raise RuntimeError(f"node {node_name} of pod {key} is not in the cache yet")
        ready = find_condition(health.status.get("conditions"), "Ready")
        if ready is not None and ready.get("status") != "True":
            await self.mark_pods_not_ready([pod], node_name)

    # --- node health ---------------------------------------------------------------------------------------

    async def monitor_node_health(self) -> None:
        """Upstream ``monitorNodeHealth``: over the nodes that can change (:mod:`.nodelifecycle_columns`), or over
        every node when the columns cannot tell."""
        plan = self._columns.plan(
            known=self.known_nodes,
            zones=self.zone_states,
            health=self.health,
            now=self.clock.now(),
            grace=self.grace_period,
        )
        if plan is None:
            await self._monitor_all()
            return
        nodes = self.node_lister.list()  # the pass's snapshot, as the full pass's (zone transitions read it)
        zone_conditions = plan.zone_conditions
        for cached in plan.visit:
            await self._visit(cached, zone_conditions)
        await self.handle_disruption(zone_conditions, nodes)

    async def _monitor_all(self) -> None:
        nodes = self.node_lister.list()
        self._columns.begin_full(nodes)
        added = False
        for seen in nodes:
            meta = seen["metadata"]
            name = meta["name"]
            if name not in self.known_nodes:
                added = True
                self._node_event(seen, "RegisteredNode", f"Node {name} event: Registered Node {name} in Controller")
                self.known_nodes[name] = seen
                self._add_zone(seen)
                await self.mark_node_as_reachable(seen)
                continue
            health = self.health.get(name)
            if health is not None and health.view_rv and health.view_rv == meta.get("resourceVersion"):
                zone = health.zone  # read from this very revision by the fast path
            else:
                zone = zone_key(seen)
            if zone not in self.zone_states:
                self._add_zone(seen)
        if added or len(self.known_nodes) != len(nodes):  # else every listed name is known and no other is
            names = {n["metadata"]["name"] for n in nodes}
            for name in [n for n in self.known_nodes if n not in names]:
                gone = self.known_nodes.pop(name)
                self._node_event(gone, "RemovingNode", f"Node {name} event: Removing Node {name} from Controller")

        zone_conditions: dict[str, list[Mapping[str, Any] | None]] = {}
        for cached in nodes:
            await self._visit(cached, zone_conditions)
        await self.handle_disruption(zone_conditions, nodes)

    async def _visit(self, cached: Obj, zone_conditions: dict[str, list[Mapping[str, Any] | None]]) -> None:
        """One node of the pass: the fast path for an unchanged Ready node, else ``tryUpdateNodeHealth`` and what
        follows from it; records in the columns whether the node is clean."""
        ready = self._unchanged_health(cached)
        name = cached["metadata"]["name"]
        if ready is not None:  # a Ready node nothing changed on: what the full branch below does for it
            record = self.health[name]
            if record.counted:
                zone_conditions.setdefault(record.zone, []).append(ready)
            queue = self.zone_tainters.get(record.zone)
            busy = record.tainted or (queue is not None and queue.knows(name))
            if busy:
                await self.process_taint_based_eviction(cached, ready)  # Ready: mark_node_as_reachable only
            self.nodes_to_retry.discard(name)
            self._columns.mark(name, clean=not busy, probe=record.probe, zone=record.zone, counted=record.counted)
            return
        self._columns.mark(name, clean=False)
        result: tuple[Obj, Obj | None] | None = None
        node: Obj | None = _working_copy(cached)
        for _ in range(NODE_HEALTH_UPDATE_RETRY):
            assert node is not None
            try:
                result = await self.try_update_node_health(node)
                break
            except (ConflictError, NotFoundError) as exc:
                log.info("updating health of node %s failed, retrying: %s", node["metadata"]["name"], exc)
                try:
                    node = await self.client.get(self.nodes_res, node["metadata"]["name"])
                except NotFoundError:
                    node = None
                    break
        if node is None or result is None:
            return
        observed, current = result
        name = node["metadata"]["name"]
        labels = labels_of(node)
        if LABEL_DISRUPTION_EXCLUSION not in labels:
            zone_conditions.setdefault(zone_key(node), []).append(current)
        if current is not None:
            pods = self.pod_indexer.by_index(NODE_NAME_INDEX, name)
            await self.process_taint_based_eviction(node, observed)
            went_not_ready = current.get("status") != "True" and observed.get("status") == "True"
            if went_not_ready:
                self._node_event(node, "NodeNotReady", f"Node {name} status is now: NodeNotReady")
            if went_not_ready or (name in self.nodes_to_retry and observed.get("status") != "True"):
                try:
                    await self.mark_pods_not_ready(pods, name)
                except Exception as exc:
                    log.info("marking pods of node %s not ready failed; retrying next pass: %s", name, exc)
                    self.nodes_to_retry.add(name)
                    return
        self.nodes_to_retry.discard(name)

    def _unchanged_health(self, node: Obj) -> Mapping[str, Any] | None:
        """The Ready condition (observed and current alike) of a node whose health pass would change nothing,
        read without copying the node; None when the full :meth:`try_update_node_health` must run.

        The pass over a thousand idle nodes every 5 s is the controller's cost in a simulated fleet: a node
        whose object is the revision the last full evaluation saw (so its conditions and heartbeat are the
        same), Ready True, and whose probe (moved by a newer Lease ``renewTime``, read only when the Lease's
        revision changed) is within the grace period gets exactly the result the full evaluation would give:
        no write, the same record, observed == current."""
        meta = node["metadata"]
        name, rv = meta["name"], meta.get("resourceVersion")
        health = self.health.get(name)
        if health is None or not health.node_rv or health.node_rv != rv:
            return None
        if health.view_rv != rv:  # what the pass reads of this node revision, read once
            health.view_rv = str(rv)
            health.ready = find_condition(status_of(node).get("conditions"), "Ready")
            health.zone = zone_key(node)
            health.counted = LABEL_DISRUPTION_EXCLUSION not in labels_of(node)
            health.tainted = bool(spec_of(node).get("taints"))
        current = health.ready
        if current is None or current.get("status") != "True":
            return None
        now = self.clock.now()
        observe_lease(health, self.lease_lister.get(NODE_LEASE_NAMESPACE, name), now)
        if now > health.probe + self.grace_period:
            health.node_rv = ""  # the full evaluation decides (and writes Unknown)
            return None
        return current

    async def try_update_node_health(self, node: Obj) -> tuple[Obj, Obj | None]:
        """``(observed Ready condition, current Ready condition)`` after marking a silent node Unknown
        (upstream ``tryUpdateNodeHealth``). Raises ConflictError when the status write lost a race."""
        name = node["metadata"]["name"]
        now = self.clock.now()
        health = self.health.get(name)
        current = _working_condition(node, "Ready")
        status = node.setdefault("status", {})
        created = parse_timestamp(meta_of(node).get("creationTimestamp")) or now
        if current is None:
            observed: Obj = {
                "type": "Ready",
                "status": "Unknown",
                "lastHeartbeatTime": meta_of(node).get("creationTimestamp"),
                "lastTransitionTime": meta_of(node).get("creationTimestamp"),
            }
            grace = self.startup_grace_period
            if health is not None:
                health.status = _conditions_copy(status)
            else:
                health = _NodeHealth(created, created, _conditions_copy(status))
        else:
            observed = dict(current)  # a condition is flat (strings): a shallow copy is a deep one
            grace = self.grace_period
        saved = find_condition(health.status.get("conditions"), "Ready") if health is not None else None
        saved_lease = health.lease_renew if health is not None else None
        if health is None or (saved is None and current is not None) or (saved is not None and current is None):
            health = _NodeHealth(now, now, _conditions_copy(status))
        elif (
            saved is not None
            and current is not None
            and saved.get("lastHeartbeatTime") != current.get("lastHeartbeatTime")
        ):
            moved = saved.get("lastTransitionTime") != current.get("lastTransitionTime")
            health = _NodeHealth(now, now if moved else health.ready_transition, _conditions_copy(status))
        health.lease_renew = saved_lease
        lease = self.lease_lister.get(NODE_LEASE_NAMESPACE, name)
        renew = parse_timestamp(spec_of(lease).get("renewTime")) if lease is not None else None
        if renew is not None and (saved_lease is None or saved_lease < renew):
            health.lease_renew = renew
            health.probe = now
        health.lease_rv = str(meta_of(lease).get("resourceVersion") or "") if lease is not None else ""
        health.node_rv = str(meta_of(node).get("resourceVersion") or "")
        self.health[name] = health

        if now > health.probe + grace:
            stamp = format_time(now)
            conditions = status.setdefault("conditions", [])
            for condition_type in UNKNOWN_CONDITION_TYPES:
                condition = _working_condition(node, condition_type)
                if condition is None:
                    conditions.append(
                        {
                            "type": condition_type,
                            "status": "Unknown",
                            "lastHeartbeatTime": meta_of(node).get("creationTimestamp"),
                            "lastTransitionTime": stamp,
                            "reason": "NodeStatusNeverUpdated",
                            "message": "Kubelet never posted node status.",
                        }
                    )
                elif condition.get("status") != "Unknown":
                    condition["status"] = "Unknown"
                    condition["reason"] = "NodeStatusUnknown"
                    condition["message"] = "Kubelet stopped posting node status."
                    condition["lastTransitionTime"] = stamp
            current = _working_condition(node, "Ready")
            if current != observed:
                updated = await self.client.update(self.nodes_res, node, subresource="status")
                node["metadata"]["resourceVersion"] = meta_of(updated).get("resourceVersion")
                self.health[name] = _NodeHealth(health.probe, now, _conditions_copy(status), health.lease_renew)
            else:
                health.node_rv = ""  # Unknown already: later passes evaluate in full
        return observed, current

    async def process_taint_based_eviction(self, node: Obj, observed: Mapping[str, Any]) -> None:
        status = observed.get("status")
        if status == "False":
            if has_taint(node, UNREACHABLE_TAINT):
                if not await self.taints.swap(node["metadata"]["name"], [NOT_READY_TAINT], [UNREACHABLE_TAINT], node):
                    log.error("failed to swap the unreachable taint for not-ready; will retry next pass")
            else:
                self._mark_node_for_tainting(node, "False")
        elif status == "Unknown":
            if has_taint(node, NOT_READY_TAINT):
                if not await self.taints.swap(node["metadata"]["name"], [UNREACHABLE_TAINT], [NOT_READY_TAINT], node):
                    log.error("failed to swap the not-ready taint for unreachable; will retry next pass")
            else:
                self._mark_node_for_tainting(node, "Unknown")
        elif status == "True":
            await self.mark_node_as_reachable(node)

    async def mark_pods_not_ready(self, pods: Sequence[Obj], node_name: str) -> None:
        """Upstream ``MarkPodsNotReady``: each pod's Ready condition to False (and event ``NodeNotReady``);
        raises after trying them all if any write failed."""
        errors: list[Exception] = []
        for pod in pods:
            if spec_of(pod).get("nodeName") != node_name:
                continue
            ready = PodView(pod).ready_condition
            if ready is None:
                continue
            patch = pod_condition_patch(pod, {**ready, "status": "False"}, self.clock.now())
            if patch is None:
                continue
            meta = pod["metadata"]
            try:
                await self.client.patch(
                    self.pods_res,
                    meta["name"],
                    {"status": {"conditions": [patch]}},
                    patch_type=PatchType.STRATEGIC,
                    namespace=meta.get("namespace"),
                    subresource="status",
                )
            except NotFoundError:
                continue
            except Exception as exc:
                errors.append(exc)
                continue
            self._event(pod, "Warning", "NodeNotReady", "Node is not ready")
        if errors:
            raise errors[0]

    # --- zones and NoExecute tainting ------------------------------------------------------------------------

    def _add_zone(self, node: Mapping[str, Any]) -> None:
        zone = zone_key(node)
        if zone not in self.zone_states:
            self.zone_states[zone] = STATE_INITIAL
            self.zone_tainters[zone] = RateLimitedTimedQueue(self.eviction_qps, self.clock)

    def _mark_node_for_tainting(self, node: Obj, status: str) -> bool:
        queue = self.zone_tainters[zone_key(node)]
        name = node["metadata"]["name"]
        taint = NOT_READY_TAINT if status == "False" else UNREACHABLE_TAINT
        if not has_taint(node, taint):
            queue.remove(name)
        if not queue.add(name, uid_of(node)):
            return False
        self._queued.set()
        return True

    async def mark_node_as_reachable(self, node: Obj) -> bool:
        name = node["metadata"]["name"]
        await self.taints.remove(name, [UNREACHABLE_TAINT], node)
        await self.taints.remove(name, [NOT_READY_TAINT], node)
        queue = self.zone_tainters.get(zone_key(node))
        return queue.remove(name) if queue is not None else False

    async def do_no_execute_tainting_pass(self) -> None:
        for zone in list(self.zone_tainters):
            await self.zone_tainters[zone].try_process(self._taint_no_execute)

    async def _taint_no_execute(self, value: TimedValue) -> tuple[bool, float]:
        node = self.node_lister.get(None, value.value)
        if node is None:
            return True, 0.0
        ready = NodeView(node).condition("Ready")
        if ready is None:
            return False, 0.05
        if ready.get("status") == "False":
            add, opposite = NOT_READY_TAINT, UNREACHABLE_TAINT
        elif ready.get("status") == "Unknown":
            add, opposite = UNREACHABLE_TAINT, NOT_READY_TAINT
        else:
            return True, 0.0  # ready again: nothing to taint
        return await self.taints.swap(value.value, [add], [opposite], node), 0.0

    async def handle_disruption(
        self, zone_conditions: Mapping[str, list[Mapping[str, Any] | None]], nodes: Sequence[Obj]
    ) -> None:
        """Upstream ``handleDisruption``: per-zone states decide each zone queue's rate; when every zone is
        fully disrupted, NoExecute tainting stops and the controller's NoExecute taints come off."""
        new_states: dict[str, str] = {}
        all_are_full = True
        for zone, conditions in zone_conditions.items():
            _, state = compute_zone_state(conditions, self.unhealthy_zone_threshold)
            if state != STATE_FULL_DISRUPTION:
                all_are_full = False
            new_states[zone] = state
            self.zone_states.setdefault(zone, STATE_INITIAL)
        all_were_full = True
        for zone in list(self.zone_states):
            if zone not in zone_conditions:
                del self.zone_states[zone]
                continue
            if self.zone_states[zone] != STATE_FULL_DISRUPTION:
                all_were_full = False
                break
        if all_are_full and all_were_full:
            return
        if all_are_full or all_were_full:
            self._columns.invalidate()  # probes and taints change outside the visits
        if all_are_full:
            log.info("all nodes are not ready: entering master disruption mode")
            await self._mark_all_reachable(nodes)
            for zone in self.zone_states:
                self.zone_tainters[zone].swap_limiter(0)
                self.zone_states[zone] = STATE_FULL_DISRUPTION
            return
        if all_were_full:
            log.info("some nodes are ready: exiting master disruption mode")
            now = self.clock.now()
            for node in nodes:
                health = self.health.get(node["metadata"]["name"])
                if health is not None:
                    health.probe = health.ready_transition = now
            for zone in self.zone_states:
                self._set_limiter(zone, len(zone_conditions.get(zone, ())), new_states.get(zone, STATE_NORMAL))
                self.zone_states[zone] = new_states.get(zone, STATE_NORMAL)
            return
        for zone, state in list(self.zone_states.items()):
            new = new_states.get(zone, state)
            if new != state:
                log.info("zone %r is now in state %s", zone, new)
                self._set_limiter(zone, len(zone_conditions.get(zone, ())), new)
                self.zone_states[zone] = new

    async def _mark_all_reachable(self, nodes: Sequence[Obj]) -> None:
        for node in nodes:
            try:
                await self.mark_node_as_reachable(node)
            except Exception as exc:
                log.error("failed to remove taints from node %s: %s", node["metadata"]["name"], exc)

    def _set_limiter(self, zone: str, size: int, state: str) -> None:
        queue = self.zone_tainters.get(zone)
        if queue is None:
            return
        if state == STATE_NORMAL:
            queue.swap_limiter(self.eviction_qps)
        elif state == STATE_PARTIAL_DISRUPTION:
            reduced = self.secondary_eviction_qps if size > self.large_cluster_threshold else 0.0
            queue.swap_limiter(reduced)
        elif state == STATE_FULL_DISRUPTION:
            queue.swap_limiter(self.eviction_qps)
