"""A fleet of simulated kubelets in one process: what the API sees is kubelet's behaviour; containers are simulated.

:class:`Fleet` is the public entry point (upstream's ``Kubelet`` in ``pkg/kubelet/kubelet.go``, times the number of
nodes): it owns the informers, routes each informer event to the node it concerns and composes the managers, each
one job of upstream's kubelet, each given what it needs explicitly:

=============================================  =================================================================
module                                         upstream (``pkg/kubelet``) and job
=============================================  =================================================================
:mod:`~kubeplane.kubelet.node_status`          ``kubelet_node_status.go``, ``nodestatus``, ``nodelease``:
                                               registration, node status reports, the node Lease
:mod:`~kubeplane.kubelet.heartbeat`            ``nodelease`` and ``syncNodeStatus``'s loops: every node's
                                               tick (Lease, eviction pass, status) as columns
:mod:`~kubeplane.kubelet.pod_workers`          ``pod_workers.go`` with ``kuberuntime``: admit, start, run to
                                               completion, restart with back-off, terminate
:mod:`~kubeplane.kubelet.status_manager`       ``status/status_manager.go``: the batched pod-status patch writer
                                               and the final delete
:mod:`~kubeplane.kubelet.eviction_manager`     ``eviction/eviction_manager.go``: the eviction pass (the pure part
                                               is :mod:`~kubeplane.kubelet.eviction`)
:mod:`~kubeplane.kubelet.device_manager`       ``cm/devicemanager``: GPU accounting per device
:mod:`~kubeplane.kubelet.mirror_pods`          ``config/file.go`` and ``pod/mirror_client.go``: static pods and
                                               their mirror pods
:mod:`~kubeplane.kubelet.state`                what they share: options, ``SimNode``, pod tasks, events
:mod:`~kubeplane.kubelet.csi`                  kubernetes-csi's external-provisioner and node plugins: the
                                               node config's simulated CSI drivers (``Fleet.csi``)
:mod:`~kubeplane.kubelet.dra`                  ``cm/dra`` and the DRA kubelet plugins: the node config's
                                               ``devices`` as ResourceSlices, claims prepared (``Fleet.dra``)
=============================================  =================================================================

Shape (one event loop, everything on the injected clock):

* **One pod informer for the whole fleet** (field selector ``spec.nodeName!=``, indexed by node name) and one
  node informer; a pod event is routed to its node's kubelet by ``spec.nodeName``. Never one watch per node.
* **Per node** a tick every 10 s (:mod:`~kubeplane.kubelet.heartbeat`): renew the Lease in ``kube-node-lease``,
  run the eviction manager (every ``eviction_monitoring_period``), compute node status and patch it when it
  changed or 5 minutes after the last report (upstream's cadence). Ticks start at a random offset so a thousand
  nodes spread their writes. The ticks are columns run by one task for all nodes on a simulation's virtual clock
  (renewals that only renew written ahead, up to the clock's horizon), by one task per node otherwise. A node
  with ``staticPodPath`` has a second task reading its manifests.
* **Per pod** one task (the pod workers) walks the lifecycle; status writes go through the status manager.
* **Events** are written by one recorder per node (source ``kubelet``/node name, as each real kubelet has its
  own), with ``involvedObject.fieldPath`` naming the container.
* **A stopped node** (:meth:`Fleet.stop_node`, the node annotation ``sim.kubeplane.io/heartbeat: "false"``, or
  ``heartbeat: false`` in the node config) behaves as a dead kubelet: no Lease, no status, no pod progress;
  :meth:`Fleet.resume_node` brings it back and it catches up from the informer's cache (pods gone meanwhile are
  forgotten, the others routed again, held status writes re-queued, the full status reported).
* **A booting node** (:meth:`Fleet.add_nodes` with ``booting=True``, what a cloud provider's new VM looks like)
  registers Ready False with the ``node.kubernetes.io/not-ready:NoSchedule`` taint and keeps reporting NotReady
  until :meth:`Fleet.mark_ready`; the node lifecycle controller removes the taint when it sees Ready.
* **Restart safety**: a pod already Running on one of the fleet's nodes when the fleet starts (a restarted
  ``kubeplane up``) is adopted as running (its IP reserved, its GPU devices kept), without events or admission.

Identities (as in a real cluster, where every kubelet has its own credentials):

* **Each node's writes** go through ``node_client(name)``: node registration and status, its Lease in
  ``kube-node-lease``, pod status and the final pod delete, mirror pods, the GPU annotation, its Events, its CSINode
  and topology label, its DRA ResourceSlices, and the gets of its pods' ResourceClaims. In a cluster with
  authorization that client is ``system:node:<name>`` in ``system:nodes`` (the Node authorizer and NodeRestriction
  judge it as a kubelet): an in-process ``LocalClient`` with that user, or over HTTP the fleet's own client
  impersonating it (:func:`node_identity`, :meth:`HTTPClient.impersonating`).
* **The shared informers** (pods with ``spec.nodeName!=``, nodes; the storage informers: PVCs, PVs, StorageClasses,
  CSIDrivers, CSINodes, VolumeAttachments; the CSI drivers' informers; the ResourceSlice list at start) read with
  the fleet's own ``client`` (``system:kubeplane:kubelet-fleet``): one watch per resource for the whole fleet is the
  point of the fleet, and no single node may read every node's pods.
* **The simulated drivers' controller side** (the CSI external-provisioner and its capacity publisher, the
  external-attacher, the CSIDriver and StorageClass objects a driver's install creates) also uses the fleet's
  ``client``: in a real cluster each runs with its own ServiceAccount (external-provisioner's ``csi-provisioner``,
  external-attacher's ``csi-attacher``) whose roles the driver's install grants; kubeplane has no such install, so
  the fleet identity's ClusterRole carries those verbs.

Invariants: ``Fleet.runtimes`` (uid -> runtime) holds every pod the fleet knows until the API no longer shows it;
it is the one map every manager shares. A node's informer events reach nothing while the node is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
from collections.abc import Callable, Iterable, Sequence

from kubeplane.api.pods import observed_generation
from kubeplane.api.views import TERMINAL_PHASES, PodView, name_of, uid_of
from kubeplane.client.clock import Clock, HorizonClock, SystemClock
from kubeplane.client.informer import SharedInformer, SharedInformerFactory
from kubeplane.client.interface import Client

from .config import NodeSpec
from .csi.config import CSIDriverSpec
from .csi.driver import CSIPlugins
from .csi_attacher import SimAttacher
from .device_manager import DeviceManager
from .dra.manager import DRAManager
from .dra.slices import SlicePublisher
from .eviction_manager import EvictionManager
from .heartbeat import Heartbeat
from .kubelet_server import KubeletServer
from .mirror_pods import MirrorPods
from .node_status import NodeStatus
from .pod_workers import PodWorkers
from .process_runtime import ProcessRuntime
from .runtime import PodRuntime
from .state import (
    DURATION_ANNOTATION,
    HEARTBEAT_ANNOTATION,
    FleetOptions,
    NodeClients,
    NodeEvents,
    Obj,
    PodTasks,
    SimNode,
    annotation,
)
from .static_pods import is_mirror_pod
from .status_manager import StatusManager
from .volume_manager import VolumeManager

__all__ = [
    "DURATION_ANNOTATION",
    "FLEET_USER",
    "NODES_GROUP",
    "Fleet",
    "FleetOptions",
    "SimNode",
    "node_groups",
    "node_user_name",
]

FLEET_USER = "system:kubeplane:kubelet-fleet"
"""The fleet's own identity: its shared informers' reads, and impersonating each node over HTTP."""
NODES_GROUP = "system:nodes"


def node_user_name(node: str) -> str:
    """A kubelet's user name (upstream's ``system:node:<nodeName>``, what the Node authorizer recognises)."""
    return f"system:node:{node}"


def node_groups() -> tuple[str, ...]:
    """A kubelet's groups: ``system:nodes`` (the Node authorizer's group) and ``system:authenticated``."""
    return (NODES_GROUP, "system:authenticated")


log = logging.getLogger(__name__)


class Fleet:
    """Simulated kubelets for ``nodes`` (see the module docstring). ``await start()`` registers the nodes and
    returns once they are registered and the informers synced; ``await stop()`` ends every task."""

    def __init__(
        self,
        client: Client,
        nodes: Sequence[NodeSpec],
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        options: FleetOptions | None = None,
        csi_drivers: Sequence[CSIDriverSpec] | None = None,
        node_client: NodeClients | None = None,
    ) -> None:
        """``client`` is the fleet's own (its informers' reads, the drivers' controller side); ``node_client(name)``
        is the client node ``name``'s kubelet writes with (default: ``client`` for every node). It is called
        once per node and its answer kept."""
        self.client = client
        self._node_client_of = node_client
        self._node_clients: dict[str, Client] = {}
        self.clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.options = options or FleetOptions()
        self.nodes: dict[str, SimNode] = {}
        for spec in nodes:
            self.nodes[spec.name] = SimNode(spec)
        self.pod_informer = SharedInformer(
            client, client.resource("pods"), clock=self.clock, rng=self.rng, field_selector="spec.nodeName!="
        )
        self.node_informer = SharedInformer(client, client.resource("nodes"), clock=self.clock, rng=self.rng)
        self.runtimes: dict[str, PodRuntime] = {}  # uid -> runtime, until the pod is gone from the API
        self.pod_tasks = PodTasks()
        nc = self.node_client
        self.events = NodeEvents(client, clock=self.clock, rng=self.rng, node_client=nc)
        self.devices = DeviceManager(client, tasks=self.pod_tasks, node_client=nc)
        self.node_status = NodeStatus(
            client, clock=self.clock, options=self.options, events=self.events, node_client=nc
        )
        self._tasks: list[asyncio.Task[None]] = []
        self.status = StatusManager(client, clock=self.clock, runtimes=self.runtimes, nodes=self.nodes, node_client=nc)
        # storage: claims, PVs, attachments (started lazily by the volume manager, and by the attacher's run)
        self.storage_informers = SharedInformerFactory(client, clock=self.clock, rng=self.rng)
        self.volumes = VolumeManager(self.storage_informers, clock=self.clock, events=self.events)
        self.attacher = SimAttacher(client, self.storage_informers, self.clock)
        self.dra = DRAManager(
            client, clock=self.clock, node_of=self._dra_node, node_client=nc, state_dir=self.options.state_dir
        )
        """The kubelets' DRA manager and simulated DRA drivers (the node config's ``devices``)."""
        self.dra_slices = SlicePublisher(client, node_uid=lambda name: self.nodes[name].uid, node_client=nc)
        self.processes = (
            ProcessRuntime(client, self.clock, self.options.run_dir, node_client=nc)
            if self.options.real_processes
            else None
        )
        """Containers of kubeplane's own image as real processes (``FleetOptions.real_processes``)."""
        self.workers = PodWorkers(
            clock=self.clock,
            options=self.options,
            runtimes=self.runtimes,
            tasks=self.pod_tasks,
            status=self.status,
            devices=self.devices,
            events=self.events,
            volumes=self.volumes,
            dra=self.dra,
            processes=self.processes,
        )
        self.eviction = EvictionManager(
            clock=self.clock,
            options=self.options,
            runtimes=self.runtimes,
            tasks=self.pod_tasks,
            status=self.status,
            events=self.events,
            report=functools.partial(self.node_status.maybe_report, force=True),
        )
        self.mirror_pods = MirrorPods(
            client,
            clock=self.clock,
            options=self.options,
            runtimes=self.runtimes,
            tasks=self.pod_tasks,
            workers=self.workers,
            status=self.status,
            pods_on_node=functools.partial(self.pod_informer.indexer.by_index, "spec.nodeName"),
            node_client=nc,
        )
        self.kubelet_server = KubeletServer(
            clock=self.clock, nodes=lambda: self.nodes, find_pod=self.find_pod, node_pods=self._running_on
        )
        drivers = csi_drivers if csi_drivers is not None else (nodes[0].csi_drivers if nodes else ())
        self.csi = CSIPlugins(
            client,
            nodes,
            drivers,
            clock=self.clock,
            rng=random.Random(",".join(sorted(self.nodes))),  # its own stream: the fleet's rng draws as before
            node_uid=lambda name: self.nodes[name].uid,
            node_labels=lambda name: ((self.nodes[name].node or {}).get("metadata") or {}).get("labels") or {},
            node_client=nc,
        )
        """The simulated CSI drivers (``csiDrivers`` of the node config; none when it is ``[]``)."""
        self.attacher.times = {d.name: (d.attach_time, d.detach_time) for d in drivers}
        self._started = self._stopped = False
        self.heartbeats: list[Heartbeat] = []
        """The nodes' heartbeat groups (:mod:`.heartbeat`), as started."""
        self.on_registered: Callable[[int, int], None] | None = None
        """Called with (registered, total) as nodes register during :meth:`start` (progress displays)."""

    def node_client(self, name: str) -> Client:
        """The client node ``name``'s kubelet writes with (``node_client(name)`` of the constructor, kept)."""
        found = self._node_clients.get(name)
        if found is None:
            found = self.client if self._node_client_of is None else self._node_client_of(name)
            self._node_clients[name] = found
        return found

    # --- running --------------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self.node_informer.add_event_handler(on_add=self._on_node, on_update=self._on_node_update)
        self.pod_informer.add_event_handler(
            on_add=self._on_pod, on_update=self._on_pod_update, on_delete=self._on_pod_deleted
        )
        if self.options.kubelet_api:  # before registering: the nodes advertise its port
            self.node_status.kubelet_port = await self.kubelet_server.start(port=self.options.kubelet_api_port)
        await self.node_status.register_all(self.nodes.values(), on_registered=self.on_registered)
        self.node_informer.start()
        await self.node_informer.wait_for_sync()
        self.pod_informer.start()
        await self.pod_informer.wait_for_sync()
        if self.options.state_dir is not None:
            self._reconcile_dra()
        await self.csi.start()
        await self.dra_slices.sync([sim.spec for sim in self.nodes.values()], self._dra_drivers())
        self._tasks.extend(self.status.start(self.options.status_workers))
        self._tasks.append(asyncio.get_running_loop().create_task(self.attacher.run(), name="external-attacher"))
        self._start_nodes(list(self.nodes.values()))

    def _start_nodes(self, sims: Sequence[SimNode]) -> None:
        """The nodes' heartbeat (:mod:`.heartbeat`: one group for all of them on a clock with a horizon, else one
        per node), and the static pod loop of each node with a manifest directory (tasks made in node order)."""
        if isinstance(self.clock, HorizonClock):
            if sims:
                self._start_heartbeat(sims, name=f"kubelets {sims[0].name}..")
            self._start_static_pods(sims)
            return
        for sim in sims:
            self._start_heartbeat([sim], name=f"kubelet {sim.name}")
            self._start_static_pods([sim])

    def _start_heartbeat(self, sims: Sequence[SimNode], *, name: str) -> None:
        heartbeat = Heartbeat(
            sims,
            clock=self.clock,
            rng=self.rng,
            options=self.options,
            node_status=self.node_status,
            eviction=self.eviction,
        )
        self.heartbeats.append(heartbeat)
        self._tasks.append(asyncio.get_running_loop().create_task(heartbeat.run(), name=name))

    def _start_static_pods(self, sims: Sequence[SimNode]) -> None:
        loop = asyncio.get_running_loop()
        for sim in sims:
            if sim.spec.static_pod_path:
                self._tasks.append(loop.create_task(self.mirror_pods.run(sim), name=f"static pods {sim.name}"))

    async def add_nodes(self, specs: Sequence[NodeSpec], *, booting: bool = False) -> None:
        """Register more nodes into a running fleet (a scale-out); names must be new. ``booting``: they register
        NotReady (tainted ``node.kubernetes.io/not-ready``) and report Ready only after :meth:`mark_ready` (a
        cloud provider's nodes while they are provisioned)."""
        added = []
        for spec in specs:
            if spec.name in self.nodes:
                raise ValueError(f"node {spec.name} is already in the fleet")
            sim = self.nodes[spec.name] = SimNode(spec, booting=booting)
            added.append(sim)
        await asyncio.gather(*(self.node_status.register(sim) for sim in added))
        await self.csi.add_nodes(specs)
        await self.dra_slices.sync(specs, self._dra_drivers())
        self._start_nodes(added)

    def _reconcile_dra(self) -> None:
        """The DRA manager's checkpointed claims against the pods the API shows on each node at start: references
        of pods deleted or finished while the fleet was down are dropped (upstream's reconcile loop)."""
        for name in self.nodes:
            pods = self.pod_informer.indexer.by_index("spec.nodeName", name)
            active = {uid_of(p) for p in pods if PodView(p).phase not in TERMINAL_PHASES}
            self.dra.reconcile(name, active)

    def _dra_drivers(self) -> set[str]:
        return {group.driver for sim in self.nodes.values() for group in sim.spec.devices}

    def _dra_node(self, name: str) -> tuple[NodeSpec, Obj]:
        sim = self.nodes[name]
        return sim.spec, sim.node or {"metadata": {"name": name, "labels": dict(sim.spec.labels)}}

    async def run(self) -> None:
        """Start, then run until cancelled (stopping cleanly)."""
        await self.start()
        try:
            await asyncio.Event().wait()
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Stop every task and informer and write the queued events; a second call does nothing."""
        if self._stopped:
            return
        self._stopped = True
        await self.csi.stop()
        for task in [*self._tasks, *self.pod_tasks.all()]:
            task.cancel()
        for task in [*self._tasks, *self.pod_tasks.all()]:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self.pod_tasks.clear()
        if self.processes is not None:  # SIGTERM, then SIGKILL, to every process the fleet started
            await self.processes.stop_all()
        self.status.shut_down()
        for rt in self.runtimes.values():
            for c in rt.all_containers():
                c.log.close()  # log followers end, so the kubelet API stops at once
        await self.kubelet_server.stop()
        await self.pod_informer.stop()
        await self.node_informer.stop()
        await self.storage_informers.stop()
        for sim in self.nodes.values():
            if sim.recorder is not None:
                await sim.recorder.close()

    async def flush_events(self) -> None:
        """Wait until every recorder wrote what it queued (tests)."""
        for sim in self.nodes.values():
            if sim.recorder is not None:
                await sim.recorder.flush()

    # --- failing and recovering nodes ---------------------------------------------------------------------------

    async def mark_ready(self, name: str) -> None:
        """A booting node (:meth:`add_nodes` with ``booting``) finished provisioning: it reports Ready at once."""
        sim = self.nodes[name]
        if not sim.booting:
            return
        sim.booting = False
        if sim.running:
            await self.node_status.maybe_report(sim, force=True)

    def stop_node(self, name: str) -> None:
        """Simulate a dead kubelet on ``name``: no heartbeats, no status, no pod progress."""
        self.nodes[name].stopped_by.add("api")

    def resume_node(self, name: str) -> None:
        sim = self.nodes[name]
        sim.stopped_by.discard("api")
        sim.stopped_by.discard("config")
        self._catch_up(sim)

    def _catch_up(self, sim: SimNode) -> None:
        if not sim.running:
            return
        sim.full_report_due = True
        sim.last_report = float("-inf")
        self.status.resume(sim)
        current = {uid_of(p): p for p in self.pod_informer.indexer.by_index("spec.nodeName", sim.name)}
        for uid, rt in list(self.runtimes.items()):
            if rt.node == sim.name and uid not in current:
                self._forget(uid)
        for pod in current.values():
            self._on_pod(pod)

    # --- the node informer ------------------------------------------------------------------------------------

    def _on_node_update(self, _old: Obj, node: Obj) -> None:
        self._on_node(node)

    def _on_node(self, node: Obj) -> None:
        sim = self.nodes.get(name_of(node))
        if sim is None:
            return
        sim.node = node
        sim.uid = uid_of(node) or sim.uid
        value = annotation(node, HEARTBEAT_ANNOTATION)
        stop = value == "false"
        if value == "true" and sim.stopped_by - {"annotation"}:  # "true" also revives a node stopped otherwise
            sim.stopped_by.clear()
            self._catch_up(sim)
            return
        if stop and "annotation" not in sim.stopped_by:
            log.info("kubelet %s: stopped by annotation %s", sim.name, HEARTBEAT_ANNOTATION)
            sim.stopped_by.add("annotation")
        elif not stop and "annotation" in sim.stopped_by:
            sim.stopped_by.discard("annotation")
            self._catch_up(sim)

    # --- pods: routing ----------------------------------------------------------------------------------------

    def _on_pod_update(self, _old: Obj, pod: Obj) -> None:
        self._on_pod(pod)

    def _on_pod(self, pod: Obj) -> None:
        view = PodView(pod)
        sim = self.nodes.get(view.node_name)
        if sim is None or not sim.running:
            return  # another fleet's node, or a dead kubelet (caught up on resume)
        meta = view.meta
        rt = self.runtimes.get(meta.uid)
        deleting = meta.is_being_deleted
        if rt is None and is_mirror_pod(pod):
            rt = self.mirror_pods.adopt_mirror(sim, pod)
            if rt is None:
                return
        if rt is not None:
            if rt.static_hash and deleting:
                # deleting a mirror pod does not stop its static pod: it is deleted for good and created again
                self.mirror_pods.replace_mirror(sim, pod, rt.static_hash)
                return
            rt.pod = pod
            if deleting and not rt.terminating:
                self.workers.begin_termination(sim, rt)
            reported = view.status.get("observedGeneration")
            if reported and reported != observed_generation(pod):
                # upstream's kubelet syncs every pod update and SetPodStatus stamps the new generation, so a spec
                # change or a deletion mark (both bump it) is followed by a status write even when nothing else
                # changed (a pod in its grace period)
                self.status.mark_dirty(rt)
            return
        phase = view.phase
        if phase in TERMINAL_PHASES:
            if deleting:  # nothing runs: finish the deletion
                rt = self.workers.new_runtime(sim, pod)
                rt.phase, rt.holding, rt.terminating, rt.delete_requested = phase, False, True, True
                rt.rejected = True
                self.status.mark_dirty(rt)
            return
        if phase == "Running" or view.container_statuses:
            rt = self.workers.adopt_running(sim, pod)
            if deleting:
                self.workers.begin_termination(sim, rt)
            return
        if deleting:
            rt = self.workers.new_runtime(sim, pod)
            rt.holding = False
            self.workers.begin_termination(sim, rt)
            return
        self.workers.admit(sim, pod)

    def _on_pod_deleted(self, pod: Obj) -> None:
        uid = uid_of(pod)
        rt = self.runtimes.get(uid)
        if rt is not None and rt.static_hash:
            sim = self.nodes.get(rt.node)
            if sim is not None and rt.static_hash in sim.static:
                self.runtimes.pop(uid, None)
                self.mirror_pods.recreate_mirror(sim, uid, rt.static_hash)
                return
        self._forget(uid)

    def _forget(self, uid: str) -> None:
        rt = self.runtimes.pop(uid, None)
        self.pod_tasks.cancel(uid)
        if self.processes is not None:
            self.processes.forget(uid)
        if rt is not None:
            for c in rt.all_containers():
                c.log.close()  # followers of its logs stop
            sim = self.nodes.get(rt.node)
            if sim is not None:
                sim.release(rt)
                self.dra.unprepare(sim.name, rt.pod)
                if rt.static_hash and sim.static_runtimes.get(rt.static_hash) is rt:
                    del sim.static_runtimes[rt.static_hash]

    # --- introspection (tests, benchmarks) ---------------------------------------------------------------------

    def find_pod(self, node: str, namespace: str, name: str) -> PodRuntime | None:
        """The pod ``namespace/name`` as ``node``'s kubelet knows it (upstream ``GetPodByName``): a running one
        before a finished one of the same name."""
        found = None
        for rt in self.runtimes.values():
            if rt.node == node and rt.name == name and rt.namespace == namespace:
                if not rt.terminal:
                    return rt
                found = rt
        return found

    def _running_on(self, node: str) -> list[PodRuntime]:
        sim = self.nodes.get(node)
        return [] if sim is None else list(sim.pods.values())

    def pods_on(self, node: str) -> Iterable[PodRuntime]:
        return list(self.nodes[node].pods.values())
