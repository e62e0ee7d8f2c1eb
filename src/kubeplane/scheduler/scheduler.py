"""The running scheduler: informers feed the cache and the queue; one loop pops and schedules pods.

Mirrors ``pkg/scheduler/scheduler.go``, ``eventhandlers.go`` and the cycle part of ``schedule_one.go``.
Concurrency model (DESIGN decision 8): everything runs on one asyncio loop. The scheduling cycle of a pod is
synchronous CPU work between two awaits, so it sees one consistent snapshot; the binding cycle (permit wait,
PreBind, Bind, PostBind, Events) runs as its own task so the next pod's scheduling cycle overlaps the API
round trips of the previous one, as upstream's binding goroutine.

Pods handled: unassigned pods whose ``spec.schedulerName`` names one of our profiles (other schedulers' pods
and pods with ``spec.nodeName`` are left alone; terminal pods are ignored). Assigned pods go to the cache.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kubeplane.api.meta import format_time
from kubeplane.api.pods import with_observed_generation
from kubeplane.api.views import PodView, is_pod_terminal, meta_of, spec_of, status_of
from kubeplane.client.clock import Clock, SystemClock
from kubeplane.client.errors import ClientError
from kubeplane.client.event_series import SeriesEventRecorder
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.interface import Client, PatchType
from kubeplane.metrics import SchedulerMetrics
from kubeplane.scheduler.backend.cache import Cache, CacheError
from kubeplane.scheduler.backend.queue import SchedulingQueue
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.batch import OpportunisticBatch
from kubeplane.scheduler.config import KubeSchedulerConfiguration, default_config
from kubeplane.scheduler.config.features import (
    NOMINATED_NODE_NAME_FOR_EXPECTATION,
    OPPORTUNISTIC_BATCHING,
    SCHEDULER_POP_FROM_BACKOFF_Q,
)
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    PostFilterResult,
    Status,
)
from kubeplane.scheduler.framework.pod_groups import PodGroupManager
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import PodInfo, QueuedPodInfo
from kubeplane.scheduler.plugins.default_preemption import DefaultPreemption
from kubeplane.scheduler.plugins.gang_scheduling import NAME as GANG_SCHEDULING
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import (
    FitError,
    NoNodesAvailableError,
    ScheduleResult,
    SchedulingCycle,
    SchedulingError,
)
from kubeplane.scheduler.signature import PodSigner

__all__ = ["Scheduler"]

log = logging.getLogger("kubeplane.scheduler")

NOTE_LENGTH_LIMIT = 1024
STORAGE_EVENT_RESOURCES = {
    "persistentvolumes": "PersistentVolume",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "storageclasses": "StorageClass",
    "csinodes": "CSINode",
    "csidrivers": "CSIDriver",
    "csistoragecapacities": "CSIStorageCapacity",
    "volumeattachments": "VolumeAttachment",
    "resourceclaims": "ResourceClaim",
    "resourceslices": "ResourceSlice",
    "deviceclasses": "DeviceClass",
}
"""The storage and DRA (resource.k8s.io) objects' informers and the ClusterEvent resource each one's changes are
(upstream ``framework.PersistentVolume``, ...): every add, update and delete moves the pods a plugin registered for it
(upstream's ``addAllEventHandlers`` with ``buildEvtResHandler``). Updates are the generic ``ActionType.update()``
(upstream ``framework.Update``)."""
OBJECT_RESOURCES = (
    "namespaces",
    "services",
    "replicasets",
    "statefulsets",
    "replicationcontrollers",
    "poddisruptionbudgets",
    *STORAGE_EVENT_RESOURCES,
)
"""Objects plugins may read through ``Handle.list_objects`` (namespaceSelector, default topology spreading,
preemption's PodDisruptionBudgets, the volume plugins' storage objects, DynamicResources' claims, slices and
classes)."""
CLEAR_NOMINATED_NODE = PostFilterResult("")
"""Upstream ``clearNominatedNode`` (ModeOverride to ""): what a failed binding cycle records, in the queue's
nominator and -- when the pod's status names a node -- in the API."""
EVENT_NODE_ADD = ClusterEvent("Node", ActionType.ADD, "NodeAdd")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent("AssignedPod", ActionType.DELETE, "AssignedPodDelete")
EVENT_ASSIGNED_POD_ADD = ClusterEvent("AssignedPod", ActionType.ADD, "AssignedPodAdd")
POD_GROUPS_RESOURCE = "podgroups.v1beta1.scheduling.k8s.io"
"""The PodGroups informer's version: v1.37's kube-scheduler watches scheduling.k8s.io/v1beta1 (the objects are
the same at v1alpha3, stored once)."""
EVENT_POD_GROUP_ADD = ClusterEvent("PodGroup", ActionType.ADD, "PodGroupAdd")
EVENT_POD_GROUP_UPDATE = ClusterEvent("PodGroup", ActionType.update(), "PodGroupUpdate")


def _truncate(message: str) -> str:
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    return message[: NOTE_LENGTH_LIMIT - 4] + " ..."


def _assigned(pod: Mapping[str, Any]) -> bool:
    """Upstream ``assignedPod``: ``spec.nodeName`` is set."""
    return bool(spec_of(pod).get("nodeName"))


def _node_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> ActionType:
    """Which scheduling-relevant properties of a node changed (upstream ``nodeSchedulingPropertiesChange``)."""
    action = ActionType(0)
    o_spec, n_spec = spec_of(old), spec_of(new)
    o_status, n_status = status_of(old), status_of(new)
    o_meta, n_meta = meta_of(old), meta_of(new)
    if bool(o_spec.get("unschedulable")) != bool(n_spec.get("unschedulable")):
        action |= ActionType.UPDATE_NODE_TAINT
    if o_status.get("allocatable") != n_status.get("allocatable"):
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if o_meta.get("labels") != n_meta.get("labels"):
        action |= ActionType.UPDATE_NODE_LABEL
    if o_spec.get("taints") != n_spec.get("taints"):
        action |= ActionType.UPDATE_NODE_TAINT
    if [(c.get("type"), c.get("status")) for c in o_status.get("conditions") or ()] != [
        (c.get("type"), c.get("status")) for c in n_status.get("conditions") or ()
    ]:
        action |= ActionType.UPDATE_NODE_CONDITION
    if o_meta.get("annotations") != n_meta.get("annotations"):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if (o_status.get("declaredFeatures") or []) != (n_status.get("declaredFeatures") or []):
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURES  # NodeDeclaredFeatures: GA, locked on in v1.37
    return action


def _guarded(handler: Callable[..., None]) -> Callable[..., None]:
    """An informer handler that logs a cache inconsistency instead of raising it into the informer: upstream
    logs such errors (``utilruntime.HandleError``) and keeps scheduling."""

    def run(*args: Any) -> None:
        try:
            handler(*args)
        except CacheError as exc:
            log.error("scheduler cache: %s", exc)

    return run


class Scheduler:
    """kube-scheduler over a :class:`Client` (local or HTTP). ``run()`` until cancelled or ``stop()``."""

    def __init__(
        self,
        client: Client,
        *,
        config: KubeSchedulerConfiguration | None = None,
        registry: Registry | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        informer_factory: SharedInformerFactory | None = None,
        event_recorder: SeriesEventRecorder | None = None,
        metrics_registry: CollectorRegistry | None = None,
        hostname: str | None = None,
    ) -> None:
        """``metrics_registry``: where the scheduler's metrics live (default: the process-wide registry);
        ``hostname``: the second half of the Events' ``reportingInstance`` (upstream's ``os.Hostname()``)."""
        self.client = client
        self.config = config if config is not None else default_config()
        self.clock = clock if clock is not None else SystemClock()
        self.rng = rng if rng is not None else random.Random()
        # The informers' watch-timeout jitter draws from a copy of the seed's sequence, so that how often a
        # watch restarts never shifts the draws of scheduling decisions (tie-breaks, preemption's offset):
        # explain with the same seed makes the same first decision.
        informer_rng = random.Random()
        informer_rng.setstate(self.rng.getstate())
        self.informers = informer_factory or SharedInformerFactory(client, clock=self.clock, rng=informer_rng)
        self._own_recorder = event_recorder is None
        self._hostname = socket.gethostname() if hostname is None else hostname
        self.recorder = event_recorder or self._new_recorder("default-scheduler")
        self.cache = Cache(self.clock)
        self.snapshot = Snapshot()
        self.handle = Handle(
            client=client,
            clock=self.clock,
            rng=self.rng,
            informer_factory=self.informers,
            event_recorder=self.recorder,
            parallelism=self.config.parallelism,
            snapshot_lister=self.snapshot,
        )
        self._object_listers = {
            resource: self.informers.informer_for(resource).lister() for resource in OBJECT_RESOURCES
        }
        self.handle.list_objects = self._list_objects
        self.handle.pod_groups = PodGroupManager(
            list_pods=self._list_pods,
            is_assumed=self.cache.is_assumed_pod,
            get_pod_group=self._get_pod_group,
        )
        self._pod_group_lister: Any = None
        self._nominate_for_expectation = self.config.feature_gates.enabled(NOMINATED_NODE_NAME_FOR_EXPECTATION)
        self._binding_nominations: dict[str, str] = {}
        """pod uid -> the node its binding cycle under way wrote to ``status.nominatedNodeName``: a failure clears
        it even before the informer shows the write."""
        self.profiles: dict[str, Framework] = build_profiles(self.config, self.handle, registry)
        first = next(iter(self.profiles.values()))
        events: dict[str, Any] = {}
        for fwk in self.profiles.values():
            events.update(fwk.events_to_register())
        self.queue = SchedulingQueue(
            first.less,
            self.clock,
            pod_initial_backoff=float(self.config.pod_initial_backoff_seconds),
            pod_max_backoff=float(self.config.pod_max_backoff_seconds),
            pre_enqueue=self._pre_enqueue,
            events_for_plugins=events,
            sort_key=first.queue_sort_key,
            pop_from_backoff_q=self.config.feature_gates.enabled(SCHEDULER_POP_FROM_BACKOFF_Q),
        )
        self.metrics = SchedulerMetrics.for_registry(metrics_registry)
        self.metrics.add_pending_pods_source(self.queue.pending_pod_counts)
        self._cycles = 0
        # Each profile reports events as its schedulerName (upstream's per-profile recorder); an injected recorder
        # is shared by all profiles.
        self._recorders: dict[str, SeriesEventRecorder] = {}
        for name, fwk in self.profiles.items():  # upstream SetPodNominator / SetPodActivator
            fwk.handle.nominator = self.queue
            fwk.handle.activate = self.queue.activate
            if self._own_recorder and name != "default-scheduler":
                fwk.handle.event_recorder = self._new_recorder(name)
            self._recorders[name] = fwk.handle.event_recorder or self.recorder
            fwk.metrics = self.metrics
        # The one scheduling cycle (explain and what-if run the same class with a recorder); nominated pods
        # reach it through each profile's handle.nominator, the queue.
        self.cycle = SchedulingCycle(
            rng=self.rng, percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score
        )
        if self.config.feature_gates.enabled(OPPORTUNISTIC_BATCHING):
            self.cycle.enable_batching(
                {
                    name: OpportunisticBatch(fwk, PodSigner(fwk, self.config.feature_gates), self.clock)
                    for name, fwk in self.profiles.items()
                },
                self.queue.scheduling_cycle,
            )
        self.pod_informer = self.informers.informer_for("pods")
        self.node_informer = self.informers.informer_for("nodes")
        self._lister = self.pod_informer.lister()
        self._binding_tasks: set[asyncio.Task[None]] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped = asyncio.Event()
        self._informers_started = False
        self.scheduled = 0
        self._register_handlers()
        if any(GANG_SCHEDULING in fwk.plugins for fwk in self.profiles.values()):
            self._watch_pod_groups()

    def _list_pods(self, namespace: str) -> list[Any]:
        return self._lister.list(namespace)

    def _get_pod_group(self, namespace: str, name: str) -> Any:
        return self._pod_group_lister.get(namespace, name) if self._pod_group_lister is not None else None

    def _watch_pod_groups(self) -> None:
        """The ``podgroups`` informer GangScheduling reads, and its events for the queue (upstream's PodGroup
        event handlers): started only when a profile runs GangScheduling."""
        informer = self.informers.informer_for(POD_GROUPS_RESOURCE)
        self._pod_group_lister = informer.lister()
        informer.add_event_handler(
            on_add=_guarded(lambda pg: self.queue.move_all_to_active_or_backoff_queue(EVENT_POD_GROUP_ADD, None, pg)),
            on_update=_guarded(
                lambda old, new: self.queue.move_all_to_active_or_backoff_queue(EVENT_POD_GROUP_UPDATE, old, new)
            ),
            on_delete=lambda pg: None,
        )

    def _list_objects(self, resource: str, namespace: str) -> list[Any]:
        lister = self._object_listers.get(resource)
        if lister is None:
            raise KeyError(f"the scheduler does not watch {resource}; plugins may list {OBJECT_RESOURCES}")
        return lister.list(namespace or None)

    # --- event handlers (eventhandlers.go) -----------------------------------------------------------

    def _responsible(self, pod: Mapping[str, Any]) -> bool:
        name = PodView(pod).scheduler_name or "default-scheduler"
        return name in self.profiles

    def _pre_enqueue(self, pod: PodInfo) -> Status | None:
        fwk = self.profiles.get(pod.scheduler_name)
        return fwk.run_pre_enqueue_plugins(pod) if fwk is not None else None

    def _register_handlers(self) -> None:
        self.node_informer.add_event_handler(
            on_add=_guarded(self._on_node_add),
            on_update=_guarded(self._on_node_update),
            on_delete=_guarded(self._on_node_delete),
        )
        self.pod_informer.add_event_handler(
            on_add=_guarded(self._on_pod_add),
            on_update=_guarded(self._on_pod_update),
            on_delete=_guarded(self._on_pod_delete),
        )
        for resource, kind in STORAGE_EVENT_RESOURCES.items():
            self._register_object_events(resource, kind)

    def _register_object_events(self, resource: str, kind: str) -> None:
        """Changes of ``resource`` move pods as ClusterEvents of ``kind`` (labels as upstream's: ``PvAdd`` is
        ``PersistentVolumeAdd`` here)."""
        move = self.queue.move_all_to_active_or_backoff_queue
        add = ClusterEvent(kind, ActionType.ADD, f"{kind}Add")
        update = ClusterEvent(kind, ActionType.update(), f"{kind}Update")
        delete = ClusterEvent(kind, ActionType.DELETE, f"{kind}Delete")
        self.informers.informer_for(resource).add_event_handler(
            on_add=_guarded(lambda obj: move(add, None, obj)),
            on_update=_guarded(lambda old, new: move(update, old, new)),
            on_delete=_guarded(lambda obj: move(delete, obj, None)),
        )

    def _on_node_add(self, node: Any) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff_queue(EVENT_NODE_ADD, None, node)

    def _on_node_update(self, old: Any, new: Any) -> None:
        self.cache.update_node(old, new)
        action = _node_change(old, new)
        if action:
            self.queue.move_all_to_active_or_backoff_queue(ClusterEvent("Node", action, "NodeUpdate"), old, new)

    def _on_node_delete(self, node: Any) -> None:
        self.cache.remove_node(node)

    def _on_pod_add(self, pod: Any) -> None:
        if is_pod_terminal(pod):
            return
        if _assigned(pod):
            info = PodInfo(pod)
            self.cache.add_pod(info)
            self.queue.assigned_pod_added(info)
        elif self._responsible(pod):
            self.queue.add(PodInfo(pod))

    def _on_pod_update(self, old: Any, new: Any) -> None:
        terminal = is_pod_terminal(new)
        if _assigned(old):
            if terminal:
                self._delete_assigned(old)
            else:
                old_info, new_info = PodInfo(old), PodInfo(new)
                self.cache.update_pod(old_info, new_info)
                self.queue.assigned_pod_updated(old_info, new_info)
            return
        if _assigned(new):  # bound: leaves the queue, enters the cache (confirming the assumed pod)
            self.queue.delete(PodInfo(old))
            if not terminal:
                info = PodInfo(new)
                self.cache.add_pod(info)
                self.queue.assigned_pod_added(info)
            return
        if not self._responsible(new):
            return
        if terminal:
            self.queue.delete(PodInfo(old))
            return
        new_info = PodInfo(new)
        if not self.cache.is_assumed_pod(new_info):
            self.queue.update(PodInfo(old), new_info)

    def _on_pod_delete(self, pod: Any) -> None:
        if _assigned(pod):
            self._delete_assigned(pod)
        else:
            info = PodInfo(pod)
            self.queue.delete(info)
            for fwk in self.profiles.values():
                waiting = fwk.get_waiting_pod(info.uid)
                if waiting is not None:
                    waiting.reject("", "removed")

    def _delete_assigned(self, pod: Any) -> None:
        info = PodInfo(pod)
        if self.cache.get_pod(info) is None:  # e.g. a pod that was already terminal when first seen
            return
        self.cache.remove_pod(info)
        self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, pod, None)

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start informers and wait until they have synced (the loop starts with :meth:`run`). Idempotent: a
        replica waiting for leadership starts its informers early (upstream warms the cache before leading)."""
        if not self._informers_started:
            self._informers_started = True
            self.informers.start()
        await self.informers.wait_for_cache_sync()

    async def run(self) -> None:
        await self.start()
        queue_task = asyncio.ensure_future(self.queue.run())
        try:
            while not self._stopped.is_set():
                qpi = await self.queue.pop()
                if qpi is None:
                    break
                self.schedule_one(qpi)
                await asyncio.sleep(0)
        finally:
            queue_task.cancel()

    async def stop(self) -> None:
        self._stopped.set()
        self.queue.close()
        for fwk in self.profiles.values():  # upstream cancels the binding cycles' context
            for plugin in fwk.pre_bind_plugins:
                cancel = getattr(plugin, "cancel_waits", None)
                if cancel is not None:
                    cancel()
        await self.wait_for_bindings()
        await self.informers.stop()
        if self._own_recorder:
            for recorder in {id(r): r for r in (self.recorder, *self._recorders.values())}.values():
                await recorder.close()

    async def wait_for_bindings(self) -> None:
        """Wait until no binding cycle, status patch, event or preemption started so far is under way."""
        while True:
            preempting = [p.wait() for p in self._preemption_plugins() if p.busy()]
            if not self._binding_tasks and not preempting:
                return
            await asyncio.gather(*list(self._binding_tasks), *preempting, return_exceptions=True)

    def _preemption_plugins(self) -> list[DefaultPreemption]:
        return [
            p for fwk in self.profiles.values() for p in fwk.post_filter_plugins if isinstance(p, DefaultPreemption)
        ]

    # --- the scheduling cycle --------------------------------------------------------------------------

    def schedule_one(self, qpi: QueuedPodInfo) -> None:
        pod = qpi.pod_info
        fwk = self.profiles.get(pod.scheduler_name)
        if fwk is None:
            self.queue.done(pod.uid)
            return
        if pod.is_terminating:
            self._event(pod, "Warning", "FailedScheduling", "Scheduling", f"skip schedule deleting pod: {pod.key}")
            self.queue.done(pod.uid)
            return
        if self.cache.is_assumed_pod(pod):
            self.queue.done(pod.uid)
            return
        state = CycleState()
        self._cycles += 1
        # upstream pluginMetricsSamplePercent: per-plugin durations in 10% of the cycles (every 10th here)
        state.record_metrics = self._cycles % 10 == 0
        start = time.perf_counter()  # scheduling_attempt_duration_seconds: real time, whatever the clock
        try:
            self.cache.update_snapshot(self.snapshot)
            result = self.cycle.schedule(fwk, state, pod, self.snapshot.list(), self.snapshot.node_table)
        except NoNodesAvailableError as exc:
            self._failure(fwk, qpi, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (str(exc),)), None, start=start)
            return
        except FitError as exc:  # the cycle ran PostFilter (preemption): exc.nominating is its decision
            self._failure(fwk, qpi, Status(Code.UNSCHEDULABLE, (str(exc),)), exc, exc.nominating, start=start)
            return
        except SchedulingError as exc:
            self._failure(fwk, qpi, exc.status, None, start=start)
            return
        except Exception as exc:  # a bug in a plugin must cost one attempt, not the scheduler
            log.exception("scheduling %s failed", pod.key)
            self._failure(fwk, qpi, Status.from_error(exc), None, start=start)
            return
        host = result.suggested_host
        assumed = self._assume(pod, host)
        reserved = fwk.run_reserve_plugins_reserve(state, assumed, host)
        if reserved is not None:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            self._failure(fwk, qpi, reserved, FitError.on_one_node(pod, host, reserved), start=start)
            return
        permit = fwk.run_permit_plugins(state, assumed, host)
        if permit is not None and permit.code != Code.WAIT:
            fwk.run_reserve_plugins_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
            self._failure(fwk, qpi, permit, FitError.on_one_node(pod, host, permit), start=start)
            return
        task = asyncio.ensure_future(self._binding_cycle(fwk, state, qpi, assumed, result, start))
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)

    def _assume(self, pod: PodInfo, host: str) -> PodInfo:
        assumed = pod.with_node_name(host)
        self.cache.assume_pod(assumed)
        self.queue.delete_nominated_pod_if_exists(pod)
        return assumed

    async def _binding_cycle(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: PodInfo,
        result: ScheduleResult,
        start: float,
    ) -> None:
        host = result.suggested_host
        try:
            if self._nominate_for_expectation:
                status = fwk.run_pre_bind_pre_flights(state, assumed, host)
                if status is not None and not status.is_skip():  # an error, or a code it may not return
                    self._binding_failed(fwk, state, qpi, assumed, host, status, None, start=start)
                    return
                if status is None or fwk.will_wait_on_permit(assumed):
                    await self._nominate(assumed, host)
            status = await fwk.wait_on_permit(assumed)
            if status is not None:
                err = FitError.on_one_node(qpi.pod_info, host, status)
                if err is not None:
                    err.diagnosis.unschedulable_plugins = {status.plugin} if status.plugin else set()
                self._binding_failed(fwk, state, qpi, assumed, host, status, err, start=start)
                return
            self.queue.done(assumed.uid)
            status = await fwk.run_pre_bind_plugins(state, assumed, host)
            if status is None:
                status = await fwk.run_bind_plugins(state, assumed, host)
            self.cache.finish_binding(assumed)
            if status is None:
                self._binding_nominations.pop(assumed.uid, None)
            if status is not None:
                self._binding_failed(fwk, state, qpi, assumed, host, status, None, start=start)
                return
            self.scheduled += 1
            self.metrics.attempt("scheduled", fwk.profile_name, time.perf_counter() - start)
            self._event(assumed, "Normal", "Scheduled", "Binding", f"Successfully assigned {assumed.key} to {host}")
            fwk.run_post_bind_plugins(state, assumed, host)
        except Exception as exc:
            log.exception("binding %s failed", assumed.key)
            self._binding_failed(fwk, state, qpi, assumed, host, Status.from_error(exc), None, start=start)

    def _binding_failed(
        self,
        fwk: Framework,
        state: CycleState,
        qpi: QueuedPodInfo,
        assumed: PodInfo,
        host: str,
        status: Status,
        err: FitError | None,
        *,
        start: float | None = None,
    ) -> None:
        fwk.run_reserve_plugins_unreserve(state, assumed, host)
        try:
            self.cache.forget_pod(assumed)
        except CacheError as exc:  # upstream handleBindingCycleError logs it and carries on
            log.error("scheduler cache ForgetPod failed: %s", exc)
        self.queue.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_DELETE, assumed.pod, None)
        self._failure(fwk, qpi, status, err, CLEAR_NOMINATED_NODE, start=start)

    async def _nominate(self, pod: PodInfo, host: str) -> None:
        """NominatedNodeNameForExpectation: tell other components (the cluster autoscaler) where the pod is about
        to be bound, before Permit's wait and PreBind's work (upstream ``updatePod`` with ModeOverride). Nothing
        when the pod's status already names ``host``; a failed patch is only logged -- the binding goes on."""
        if (pod.status.get("nominatedNodeName") or "") == host:
            return
        try:
            await self.client.patch(
                self.client.resource("pods"),
                pod.name,
                {"status": {"nominatedNodeName": host}},
                patch_type=PatchType.STRATEGIC,
                namespace=pod.namespace,
                subresource="status",
            )
            self._binding_nominations[pod.uid] = host
        except ClientError as exc:
            log.error(
                "failed to update the nominated node name of %s to %s in the binding cycle: %s", pod.key, host, exc
            )

    # --- failures (handleSchedulingFailure) ------------------------------------------------------------------

    def _failure(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        status: Status,
        err: FitError | None,
        nominating: PostFilterResult | None = None,
        *,
        start: float | None = None,
    ) -> None:
        """Upstream ``handleSchedulingFailure``: requeue, record the nomination (``nominating`` None leaves it as
        the pod's status says; a result overrides it, ``""`` clears it), event, PodScheduled condition. With the
        attempt's ``start`` (``time.perf_counter()``), counts the attempt as unschedulable or error."""
        pod = qpi.pod_info
        rejected = status.is_rejected()
        if start is not None:
            result = "unschedulable" if rejected else "error"
            self.metrics.attempt(result, fwk.profile_name, time.perf_counter() - start)
        reason = "Unschedulable" if rejected else "SchedulerError"
        message = str(err) if err is not None else status.message()
        if err is not None:
            qpi.unschedulable_plugins = set(err.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(err.diagnosis.pending_plugins)
        else:
            qpi.unschedulable_plugins = set()
            qpi.pending_plugins = set()
        cached = self._lister.get(pod.namespace, pod.name)
        nominated_node = nominating.nominated_node_name if nominating is not None else None
        if cached is not None and not _assigned(cached):
            qpi.pod_info = PodInfo(cached)
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle())
            self.queue.add_nominated_pod(qpi.pod_info, nominated_node)
        else:
            self.queue.done(pod.uid)
        self._event(pod, "Warning", "FailedScheduling", "Scheduling", _truncate(message))
        written = self._binding_nominations.pop(pod.uid, "")
        task = asyncio.ensure_future(self._update_condition(qpi.pod_info, reason, message, nominated_node, written))
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)

    async def _update_condition(
        self, pod: PodInfo, reason: str, message: str, nominated_node: str | None = None, written: str = ""
    ) -> None:
        """Patch the PodScheduled condition and, when it changes, ``status.nominatedNodeName`` (upstream
        ``updatePod``); nothing when neither changes. ``written``: the nomination this scheduler wrote in the
        failed binding cycle, which ``pod`` (the informer's copy) may not show yet."""
        status = pod.status
        current = status.get("nominatedNodeName") or written
        nominate = nominated_node is not None and current != nominated_node
        conditions = status.get("conditions") or []
        for c in conditions:
            same = c.get("status") == "False" and c.get("reason") == reason and c.get("message") == message
            if c.get("type") == "PodScheduled" and same and not nominate:
                return
        condition = with_observed_generation(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": format_time(self.clock.now()),
            },
            pod.pod,
        )
        patch: dict[str, Any] = {"conditions": [condition]}
        if nominate:
            patch["nominatedNodeName"] = nominated_node or None
        try:
            await self.client.patch(
                self.client.resource("pods"),
                pod.name,
                {"status": patch},
                patch_type=PatchType.STRATEGIC,
                namespace=pod.namespace,
                subresource="status",
            )
        except ClientError as exc:
            log.info("updating the PodScheduled condition of %s failed: %s", pod.key, exc)

    def _new_recorder(self, scheduler_name: str) -> SeriesEventRecorder:
        """A profile's recorder: events.k8s.io/v1 Events as upstream's ``EventBroadcasterAdapter`` writes them when
        the server serves that group, reported as the profile's schedulerName from ``<name>-<hostname>``."""
        return SeriesEventRecorder(
            self.client,
            reporting_controller=scheduler_name,
            reporting_instance=f"{scheduler_name}-{self._hostname}",
            clock=self.clock,
        )

    def _event(self, pod: PodInfo, event_type: str, reason: str, action: str, message: str) -> None:
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": pod.pod.get("metadata") or {}}
        recorder = self._recorders.get(pod.scheduler_name, self.recorder)
        task = asyncio.ensure_future(recorder.event(obj, event_type, reason, message, action=action))
        self._binding_tasks.add(task)
        task.add_done_callback(self._binding_tasks.discard)
