"""Run a scenario: the real components (API server registry on a memory store, controller manager, scheduler,
kubelet fleet) over the in-process transport, on one :class:`~kubeplane.sim.clock.VirtualClock`.

What a run records (:class:`SimResult`, plain "pandas-friendly" records):

* ``pods``: one row per pod: when it was created, scheduled (bound), Running, finished (simulated seconds from
  the start), its node, phase, end (:mod:`kubeplane.sim.outcomes`: completed, evicted, preempted, deleted,
  rejected, or running / pending at the end) and reason; scheduling latency = scheduled - created, pending time
  = running - created.
* ``timeseries``: every ``sample_interval`` simulated seconds: pods by phase, Ready nodes, nodes in use (with a
  non-terminal pod bound), CPU/memory requested by non-terminal bound pods against the allocatable of Ready nodes
  (and the same for extended resources), cumulative scheduling attempts (the scheduler's own counter),
  preemptions, and pods ended by how.
* ``actions``: the scenario's actions as run (time, label, whether it worked), for the report's time axes.
* ``summary`` (:mod:`kubeplane.sim.summary`): totals and percentiles, the scenario's headline fields first, and
  ``event_log_hash``: a SHA-256 of the ordered log of every pod and node change the run observed (simulated
  time, type, object, node, phase). The same scenario and seed give the same hash: that is the determinism check.

Determinism comes from the clock (time moves only when everything is idle), from one seeded
``random.Random`` per component derived from the run's seed, and from UIDs drawn from the registry's seeded RNG.
Wall-clock figures (``wall_seconds``) are reported but never part of the hash.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from kubeplane.api.quantity import parse_quantity
from kubeplane.api.views import is_pod_terminal, name_of, namespace_of, spec_of, status_of
from kubeplane.apiserver.housekeeping import housekeeping
from kubeplane.autoscaler.provider import NodeGroupError
from kubeplane.client.errors import AlreadyExistsError, ClientError, NotFoundError
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import PatchType
from kubeplane.client.local import LocalClient
from kubeplane.controllers.manager import ControllerManager
from kubeplane.gpu.frag import PodType
from kubeplane.gpu.repro import pod_type as trace_pod_type
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.csi.config import DEFAULT_DRIVER
from kubeplane.kubelet.dra.slices import wanted_slices
from kubeplane.kubelet.fleet import DURATION_ANNOTATION, Fleet, FleetOptions
from kubeplane.scheduler.config import ConfigError, KubeSchedulerConfiguration, default_config, parse_config
from kubeplane.scheduler.scheduler import Scheduler

from . import outcomes
from .autoscaling import Autoscaling
from .clock import RealTimeClock, VirtualClock
from .descheduling import SimDescheduler
from .gpu import GPU_COLUMNS, DraDeclared, GpuMetrics, declared_pod_types
from .memory import MemoryProbe
from .observer import Observer, event_digest, ready
from .scaling import scaling_rows
from .scenario import Action, Arrival, Deletion, Generator, Scenario, ScenarioError
from .storage import storage_declared, storage_row, storage_summary
from .summary import pod_rows, summarise
from .workloads import JobObserver, gang_rows, workload_summary

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """What a progress display shows, reported at every sample."""

    t: float
    until: float
    pods_created: int
    pods_scheduled: int
    pods_pending: int


@dataclass
class SimResult:
    scenario: str
    label: str
    seed: int
    summary: dict[str, Any]
    timeseries: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    gpu: list[dict[str, Any]] = field(default_factory=list)
    """Per pod arrival, when the scenario declares GPU pods: arrived/used/fragmented/idle milli-GPU (sim.gpu)."""
    actions: list[dict[str, Any]] = field(default_factory=list)
    """The scenario's actions as run: ``t``, ``action`` (the kind), ``label`` (what a plot marks), ``ok``."""
    jobs: list[dict[str, Any]] = field(default_factory=list)
    """One row per Job the run saw (:mod:`kubeplane.sim.workloads`): created, started, completed, deleted."""
    gangs: list[dict[str, Any]] = field(default_factory=list)
    """One row per PodGroup its pods named: pods, first created, last bound, wait time."""
    scaling: list[dict[str, Any]] = field(default_factory=list)
    """The autoscaler's scale-ups, removals and pods it could not help (:mod:`kubeplane.sim.scaling`)."""

    def write(self, out_dir: str | Path) -> dict[str, Path]:
        """summary.json, timeseries.csv, pods.csv and report.html in ``out_dir``."""
        from .report import write_outputs

        return write_outputs(self, Path(out_dir))


def scheduler_configuration(config: Mapping[str, Any] | None) -> KubeSchedulerConfiguration:
    if config is None:
        return default_config()
    try:
        return parse_config(config)
    except ConfigError as exc:
        raise ScenarioError("scheduler configuration: " + "; ".join(exc.errors)) from None


_Reading = tuple[Mapping[str, Any], bool, dict[str, int]]
"""What a sample reads of a Node object: the object, whether it is Ready, its allocatable amounts when Ready."""


def _amount(name: str, value: Any) -> int:
    quantity = parse_quantity(str(value))
    return quantity.milli_value() if name == "cpu" else quantity.value()


class _Run:
    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int,
        until: float,
        label: str,
        scheduler_config: KubeSchedulerConfiguration,
        progress: Callable[[Progress], None] | None,
        realtime: bool = False,
    ) -> None:
        self.scenario, self.seed, self.until, self.label = scenario, seed, until, label
        self.scheduler_config = scheduler_config
        self.progress = progress
        self.clock: VirtualClock | RealTimeClock = RealTimeClock() if realtime else VirtualClock()
        root = random.Random(seed)
        self.rngs = {name: random.Random(root.getrandbits(64)) for name in
                     ("registry", "fleet", "scheduler", "controllers", "informers", "workload")}  # fmt: skip
        self.observer = Observer(self.clock)
        self.job_observer = JobObserver(self.clock)
        self.dra = _dra_declared(scenario)
        self.observer.gpu = GpuMetrics.for_pod_types(_declared_pod_types(scenario, self.dra))
        if self.observer.gpu is not None:
            self.observer.gpu.declared = self.dra
        self.timeseries: list[dict[str, Any]] = []
        self._readings: dict[str, _Reading] = {}  # node -> what the last sample read of it
        self.actions: list[dict[str, Any]] = []
        self.metrics: list[Any] = []  # one CollectorRegistry per scheduler incarnation (counters add up)
        self._scheduler_task: asyncio.Future[None] | None = None
        self.desched: SimDescheduler | None = None
        self._storage = storage_declared(scenario.nodes)  # storage columns and fields (kubeplane.sim.storage)
        self.autoscaling: Autoscaling | None = None
        self.memory = MemoryProbe()  # summary.json's bytes_per_node, bytes_per_pod (kubeplane.sim.memory)

    async def run(self) -> SimResult:
        with _young_gc_only():
            return await self._run()

    async def _run(self) -> SimResult:
        started = time.perf_counter()
        self.memory.begin()
        clock = self.clock
        client = await LocalClient.in_memory(now=clock.now, rng=self.rngs["registry"], clock=clock)
        self.client = client
        fleet = Fleet(
            client,
            self.scenario.nodes,
            clock=clock,
            rng=self.rngs["fleet"],
            options=FleetOptions(pull_delay=self.scenario.pull_delay, shutdown_delay=self.scenario.shutdown_delay),
            csi_drivers=None if self.scenario.nodes else (DEFAULT_DRIVER,),  # a cluster of node groups only
        )
        self.fleet = fleet
        if self.scenario.node_groups:  # kubeplane.sim.autoscaling: only runs with node groups
            self.autoscaling = Autoscaling(
                self.scenario.node_groups, client=client, fleet=fleet, clock=clock, seed=self.seed,
                flags=self.scenario.autoscaler, scheduler_config=self.scheduler_config,
                enabled=self.scenario.autoscaler_enabled,
            )  # fmt: skip
        scheduler = self._new_scheduler(self.scheduler_config)
        self.desched = None if self.scenario.descheduler is None else SimDescheduler(
            self.scenario.descheduler, client, clock=clock, seed=self.seed, evicted=self.observer.api_evicted,
            metrics_registry=CollectorRegistry(),
        )  # fmt: skip
        # Without the ServiceAccount controllers: the simulated registry runs no ServiceAccount admission, so
        # nothing waits for the accounts and CA maps they would create (and the event logs stay as they were).
        manager = ControllerManager(
            client,
            controllers=("*", "-serviceaccount", "-root-ca-cert-publisher"),
            clock=clock,
            rng=self.rngs["controllers"],
        )
        informers = [
            SharedInformer(client, "pods", clock=clock, rng=self.rngs["informers"]),
            SharedInformer(client, "nodes", clock=clock, rng=self.rngs["informers"]),
            SharedInformer(client, "events", clock=clock, rng=self.rngs["informers"], transform=event_digest),
            SharedInformer(client, "jobs", clock=clock, rng=self.rngs["informers"]),
        ]
        obs = self.observer
        informers[0].add_event_handler(on_add=lambda p: obs.pod(None, p), on_update=obs.pod, on_delete=obs.pod_deleted)
        informers[1].add_event_handler(
            on_add=lambda n: obs.node(None, n), on_update=obs.node, on_delete=obs.node_deleted
        )
        informers[2].add_event_handler(on_add=lambda e: obs.event(None, e), on_update=obs.event)
        jobs = self.job_observer
        informers[3].add_event_handler(
            on_add=lambda j: jobs.job(None, j), on_update=jobs.job, on_delete=jobs.job_deleted
        )
        informers += self._dra_informers(client)
        driver = asyncio.ensure_future(clock.run(until=self.until))
        tasks: list[asyncio.Future[Any]] = []
        try:
            for informer in informers:
                informer.start()
            await fleet.start()
            if self.autoscaling is not None:
                await self.autoscaling.start_nodes()
            await manager.start()
            await scheduler.start()
            if self.desched is not None:  # only scenarios with a descheduler (kubeplane.sim.descheduling)
                await self.desched.start()
                tasks.append(asyncio.ensure_future(self.desched.run()))
            tasks += [asyncio.ensure_future(c.run()) for c in (fleet, manager)]
            if self.autoscaling is not None and (autoscaler := await self.autoscaling.start_autoscaler()):
                tasks.append(asyncio.ensure_future(autoscaler.run()))
            self._scheduler_task = asyncio.ensure_future(scheduler.run())
            tasks += [asyncio.ensure_future(self._sampler())]
            tasks += [asyncio.ensure_future(self._arrivals())]
            tasks += [asyncio.ensure_future(self._generator(g, i)) for i, g in enumerate(self.scenario.generators)]
            tasks += [asyncio.ensure_future(self._actions())]
            # kube-apiserver's store compaction and Event expiry on the virtual clock (apiserver.housekeeping)
            tasks += [
                asyncio.ensure_future(housekeeping(client.registry, sleep=clock.sleep, monotonic=clock.monotonic))
            ]
            await driver
            self._sample()  # the state at the end
        finally:
            driver.cancel()
            for task in [*tasks, *([self._scheduler_task] if self._scheduler_task else [])]:
                task.cancel()
            await asyncio.gather(driver, *tasks, return_exceptions=True)
            if self._scheduler_task is not None:
                await asyncio.gather(self._scheduler_task, return_exceptions=True)
            await self.scheduler.stop()
            if self.desched is not None:
                await self.desched.stop()
            if self.autoscaling is not None:
                await self.autoscaling.stop()
            await manager.stop()
            await fleet.stop()
            for informer in informers:
                await informer.stop()
            await client.close()
        return self._result(time.perf_counter() - started)

    def _dra_informers(self, client: LocalClient) -> list[SharedInformer]:
        """Slices, classes and claims for the GPU metrics, only when the scenario declares DRA (other runs start
        exactly the informers they always did: their event logs do not change)."""
        gpu = self.observer.gpu
        if gpu is None or self.dra is None:
            return []
        rng = random.Random(f"dra-{self.seed}")
        out = []
        for resource, on_change, on_delete in (
            ("resourceslices", gpu.resource_slice, gpu.resource_slice_deleted),
            ("deviceclasses", gpu.device_class, lambda _obj: None),
            ("resourceclaims", gpu.resource_claim, gpu.resource_claim_deleted),
        ):
            informer = SharedInformer(client, resource, clock=self.clock, rng=rng)
            informer.add_event_handler(
                on_add=on_change, on_update=lambda _old, new, f=on_change: f(new), on_delete=on_delete
            )
            out.append(informer)
        return out

    def _new_scheduler(self, config: KubeSchedulerConfiguration) -> Scheduler:
        registry = CollectorRegistry()
        self.metrics.append(registry)
        self.scheduler = Scheduler(
            self.client, config=config, clock=self.clock, rng=self.rngs["scheduler"], metrics_registry=registry
        )
        return self.scheduler

    async def _restart_scheduler(self, config: Mapping[str, Any]) -> None:
        """kube-scheduler restarted with another configuration: the old one stops (its queue is lost, as in a
        real restart), the new one lists the cluster and schedules what is pending."""
        if self._scheduler_task is not None:
            self._scheduler_task.cancel()
            await asyncio.gather(self._scheduler_task, return_exceptions=True)
        await self.scheduler.stop()
        scheduler = self._new_scheduler(scheduler_configuration(config))
        await scheduler.start()
        self._scheduler_task = asyncio.ensure_future(scheduler.run())

    # --- workload ------------------------------------------------------------------------------------------

    async def _sleep_until(self, at: float) -> None:
        await self.clock.sleep(at - self.clock.monotonic())

    async def _create(self, obj: Mapping[str, Any]) -> None:
        try:
            info = self.client.resource(_qualified_kind(obj))
        except KeyError:
            log.warning("sim: unknown kind %s; skipped", obj.get("kind"))
            return
        body = dict(obj)
        namespace = None
        if info.namespaced:
            namespace = str(namespace_of(obj) or "default")
            await self._ensure_namespace(namespace)
        try:
            await self.client.create(info, body, namespace=namespace)
        except AlreadyExistsError:
            log.info("sim: %s %s exists already", obj.get("kind"), name_of(obj))
        except ClientError as exc:
            log.warning("sim: creating %s %s failed: %s", obj.get("kind"), name_of(obj), exc)

    async def _ensure_namespace(self, namespace: str) -> None:
        if namespace in ("default", "kube-system", "kube-public", "kube-node-lease"):
            return
        with contextlib.suppress(AlreadyExistsError):
            await self.client.create(
                self.client.resource("namespaces"),
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            )

    async def _arrivals(self) -> None:
        """Arrivals (the scenario's, and its paper-order traces resolved with the run's seed) and deletions in
        time order, one sleep per distinct time; at equal times arrivals go first (a trace pod created and deleted
        in the same second exists for an instant) and each list keeps its order (sorts are stable)."""
        arrivals = [*self.scenario.arrivals]
        for trace in self.scenario.paper_traces:
            arrivals.extend(trace.arrivals(self.seed))
        timeline: list[tuple[float, int, Arrival | Deletion]] = [(a.at, 0, a) for a in arrivals]
        timeline += [(d.at, 1, d) for d in self.scenario.deletions]
        timeline.sort(key=lambda event: (event[0], event[1]))
        for at, _, event in timeline:
            await self._sleep_until(at)
            if isinstance(event, Deletion):
                await self._delete(event)
            else:
                for obj in event.objects:
                    await self._create(obj)

    async def _delete(self, deletion: Deletion) -> None:
        """Delete with grace period 0: a trace's deletion_time is when the pod was gone, so its resources are free
        from that simulated second (with the default 30 s grace the kubelet would hold them for the shutdown). A
        pod already gone (deleted before, or never created) is fine."""
        try:
            info = self.client.resource(deletion.kind)
            await self.client.delete(info, deletion.name, namespace=deletion.namespace, grace_period_seconds=0)
        except (KeyError, NotFoundError):
            return
        except ClientError as exc:
            log.warning("sim: deleting %s %s/%s failed: %s", deletion.kind, deletion.namespace, deletion.name, exc)

    async def _generator(self, gen: Generator, number: int) -> None:
        rng = random.Random(self.rngs["workload"].getrandbits(64) + number)
        await self._sleep_until(gen.start)
        for i in range(gen.count):
            if i:
                await self.clock.sleep(gen.interval if gen.interval is not None else rng.expovariate(gen.rate or 1.0))
            obj = json.loads(json.dumps(gen.template))
            meta = obj.setdefault("metadata", {})
            meta["name"] = f"{gen.name_prefix}{i}" if "name" not in meta else f"{meta['name']}-{i}"
            meta.pop("generateName", None)
            if gen.kind != "Pod":
                _set_duration(_pod_template(obj), gen, rng)
                await self._create(obj)
                continue
            obj.setdefault("apiVersion", "v1")
            obj["kind"] = "Pod"
            if gen.gang is None:
                _set_duration(obj, gen, rng)
                await self._create(obj)
                continue
            size, min_count = gen.gang
            group = str(meta["name"])
            await self._create(_pod_group(group, str(meta.get("namespace") or "default"), min_count))
            for k in range(size):
                pod = json.loads(json.dumps(obj))
                pod["metadata"]["name"] = f"{group}-{k}"
                pod.setdefault("spec", {})["schedulingGroup"] = {"podGroupName": group}
                _set_duration(pod, gen, rng)
                await self._create(pod)

    async def _actions(self) -> None:
        """Run the scenario's actions in time order and record each as run (its time, label and whether it
        worked): the report marks them on its time axes."""
        for action in self.scenario.actions:
            await self._sleep_until(action.at)
            ok = True
            try:
                await self._act(action)
            except (ClientError, KeyError, NodeGroupError) as exc:
                ok = False
                log.warning("sim: action %s at %ss failed: %s", action.kind, action.at, exc)
            t = round(self.clock.monotonic(), 6)
            self.actions.append({"t": t, "action": action.kind, "label": action.label, "ok": ok})

    async def _act(self, action: Action) -> None:
        client, args = self.client, action.args
        nodes = client.resource("nodes")
        if action.kind in ("taint", "untaint"):
            node = await client.get(nodes, str(args["node"]))
            taints = [t for t in spec_of(node).get("taints") or [] if t.get("key") != args.get("key")]
            if action.kind == "taint":
                taint = {"key": str(args["key"]), "effect": str(args.get("effect", "NoSchedule"))}
                if args.get("value"):
                    taint["value"] = str(args["value"])
                if taint["effect"] == "NoExecute":
                    from kubeplane.api.meta import format_time

                    taint["timeAdded"] = format_time(self.clock.now())
                taints.append(taint)
            await client.patch(nodes, str(args["node"]), {"spec": {"taints": taints}})
        elif action.kind in ("label", "unlabel"):  # kubectl label node N key=value / key-: a merge patch
            value = str(args.get("value", "")) if action.kind == "label" else None
            await client.patch(nodes, str(args["node"]), {"metadata": {"labels": {str(args["key"]): value}}})
        elif action.kind == "nodeFailure":
            self.fleet.stop_node(str(args["node"]))
        elif action.kind == "nodeRecovery":
            self.fleet.resume_node(str(args["node"]))
        elif action.kind in ("cordon", "uncordon", "drain"):
            await client.patch(nodes, str(args["node"]), {"spec": {"unschedulable": action.kind != "uncordon"}})
            if action.kind == "drain":
                await self._drain(str(args["node"]))
        elif action.kind == "scale":
            info = client.resource(str(args.get("kind", "Deployment")))
            await client.patch(info, str(args["name"]), {"spec": {"replicas": int(args["replicas"])}},
                               namespace=str(args.get("namespace", "default")))  # fmt: skip
        elif action.kind == "rollout":
            info = client.resource(str(args.get("kind", "Deployment")))
            namespace = str(args.get("namespace", "default"))
            current = await client.get(info, str(args["name"]), namespace=namespace)
            containers = current["spec"]["template"]["spec"]["containers"]
            target = str(args.get("container") or containers[0]["name"])
            patch = {"spec": {"template": {"spec": {"containers": [{"name": target, "image": str(args["image"])}]}}}}
            await client.patch(info, str(args["name"]), patch, patch_type=PatchType.STRATEGIC, namespace=namespace)
        elif action.kind == "addNodes":
            specs = parse_node_config([dict(args)], csi_drivers=tuple(self.fleet.csi.drivers.values()))
            await self.fleet.add_nodes(specs)
        elif action.kind == "scaleNodeGroup" and self.autoscaling is not None:
            await self.autoscaling.scale(args)
        elif action.kind == "schedulerConfig":
            await self._restart_scheduler(args.get("config") or {})
        elif action.kind == "removeNode":
            name = str(args["node"])
            self.fleet.stop_node(name)
            with contextlib.suppress(NotFoundError):
                await client.delete(nodes, name)

    async def _drain(self, node: str) -> None:
        pods = self.client.resource("pods")
        listed = await self.client.list(pods, field_selector=f"spec.nodeName={node}")
        for pod in listed["items"]:
            owners = pod["metadata"].get("ownerReferences") or []
            if any(o.get("kind") == "DaemonSet" for o in owners) or is_pod_terminal(pod):
                continue
            meta = pod["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            self.observer.api_evicted.add(key)  # before the call: the informer may see the deletion first
            eviction = {
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            }
            try:
                await self.client.create(pods, eviction, namespace=pod["metadata"]["namespace"],
                                         subresource="eviction", name=pod["metadata"]["name"])  # fmt: skip
            except ClientError:  # a PDB refusing: kubectl would retry; the scenario goes on
                self.observer.api_evicted.discard(key)

    # --- sampling ------------------------------------------------------------------------------------------

    async def _sampler(self) -> None:
        while True:
            self._sample()
            await self.clock.sleep(self.scenario.sample_interval)

    def _counter(self, name: str) -> float:
        """The sum over labels of one of the scheduler's counters (collecting only that metric family)."""
        total = 0.0
        for registry in self.metrics:
            for metric in registry.restricted_registry([name]).collect():
                for sample in metric.samples:
                    if sample.name == name:
                        total += sample.value
        return total

    def _reading(self, name: str, node: Mapping[str, Any]) -> _Reading:
        """``(node, Ready, its allocatable amounts when Ready)``, read once per Node object (the observer keeps the
        informer's objects, never changed in place: a sample of a thousand idle nodes parses no quantity again)."""
        seen = self._readings.get(name)
        if seen is not None and seen[0] is node:
            return seen
        is_ready = ready(node)
        amounts = (
            {
                resource: _amount(resource, value)
                for resource, value in (status_of(node).get("allocatable") or {}).items()
            }
            if is_ready
            else {}
        )
        return node, is_ready, amounts

    def _sample(self) -> None:
        gc.collect(1)  # the young generations only (see _young_gc_only)
        obs = self.observer
        t = round(self.clock.monotonic(), 6)
        if self.timeseries and self.timeseries[-1]["t"] == t:
            self.timeseries.pop()
        phases = {"Pending": 0, "Running": 0, "Succeeded": 0, "Failed": 0}
        requested: dict[str, int] = {}
        readings = {name: self._reading(name, node) for name, node in obs.nodes.items()}
        self._readings = readings
        ready_nodes = {name for name, reading in readings.items() if reading[1]}
        for record in obs.pods.values():
            if record.phase in phases:
                phases[record.phase] += 1
            if record.node and record.phase not in outcomes.TERMINAL and record.phase != "Deleted":
                for resource, amount in record.requests.items():
                    requested[resource] = requested.get(resource, 0) + amount
        allocatable: dict[str, int] = {}
        for name in ready_nodes:
            for resource, amount in readings[name][2].items():
                allocatable[resource] = allocatable.get(resource, 0) + amount
        row: dict[str, Any] = {
            "t": t,
            "pods_pending": phases["Pending"],
            "pods_running": phases["Running"],
            "pods_succeeded": phases["Succeeded"],
            "pods_failed": phases["Failed"],
            "nodes_ready": len(ready_nodes),
            "nodes_total": len(obs.nodes),
            "nodes_in_use": obs.nodes_in_use,
            "cpu_requested_m": requested.get("cpu", 0),
            "cpu_allocatable_m": allocatable.get("cpu", 0),
            "memory_requested_bytes": requested.get("memory", 0),
            "memory_allocatable_bytes": allocatable.get("memory", 0),
            "cpu_allocation": _ratio(requested.get("cpu", 0), allocatable.get("cpu", 0)),
            "memory_allocation": _ratio(requested.get("memory", 0), allocatable.get("memory", 0)),
            "scheduling_attempts": int(self._counter("scheduler_schedule_attempts_total")),
            "preemptions": int(self._counter("scheduler_preemption_attempts_total")),
            "evictions": obs.ended[outcomes.EVICTED],
            **{f"ended_{end}": obs.ended[end] for end in outcomes.ENDED if end != outcomes.EVICTED},
        }
        for resource, total in sorted(allocatable.items()):
            if "/" in resource and total:  # extended resources, e.g. nvidia.com/gpu
                row[f"{resource}_allocation"] = _ratio(requested.get(resource, 0), total)
        if obs.gpu is not None:
            reading = obs.gpu.reading(t)
            row.update({k: reading[k] for k in GPU_COLUMNS})
        if self._storage:
            row.update(storage_row(self.fleet.csi))
        if self.autoscaling is not None:
            row.update(self.autoscaling.row())
        self.timeseries.append(row)
        self.memory.sampled(len(self.scenario.nodes))
        if self.progress is not None:
            scheduled = sum(1 for r in obs.pods.values() if r.scheduled is not None)
            self.progress(Progress(t, self.until, len(obs.pods), scheduled, phases["Pending"]))

    # --- result --------------------------------------------------------------------------------------------

    def _result(self, wall: float) -> SimResult:
        obs = self.observer
        pods = pod_rows(list(obs.pods.values()))
        if self.desched is not None:
            self.desched.annotate(pods)
        summary = summarise(obs, pods, self.timeseries, sim_seconds=self.clock.monotonic(), wall=wall,
                            headline=self.scenario.headline)  # fmt: skip
        gpu = obs.gpu.arrivals if obs.gpu is not None else []
        jobs = self.job_observer.rows()
        gangs = gang_rows(list(obs.pods.values()))
        summary |= workload_summary(jobs, gangs)
        summary |= storage_summary(self.fleet.csi, self.timeseries, declared=self._storage)
        if self.desched is not None:
            summary |= self.desched.summary()
        if self.autoscaling is not None:
            summary |= self.autoscaling.summary()
        summary |= self.memory.figures(pods=summary["pods_created"])
        scaling = [] if self.autoscaling is None else scaling_rows(obs.scaling, group_of=self.autoscaling.group_of())
        return SimResult(
            self.scenario.name,
            self.label,
            self.seed,
            summary,
            self.timeseries,
            pods,
            gpu,
            self.actions,
            jobs,
            gangs,
            scaling,
        )


def _pod_template(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The pod template of a generated workload (a CronJob's is its Job template's), or None (a PodGroup)."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    if obj.get("kind") == "CronJob":
        job = spec.get("jobTemplate")
        spec = job.get("spec") if isinstance(job, dict) else None
        if not isinstance(spec, dict):
            return None
    template = spec.get("template")
    return template if isinstance(template, dict) else None


def _set_duration(pod: dict[str, Any] | None, gen: Generator, rng: random.Random) -> None:
    """The generator's run time on a pod (or pod template), drawn from its bounds: its containers finish then."""
    if pod is None or gen.duration is None:
        return
    low, high = gen.duration
    pod.setdefault("metadata", {}).setdefault("annotations", {})[DURATION_ANNOTATION] = f"{rng.uniform(low, high):.3f}s"
    if gen.kind == "Pod":
        pod.setdefault("spec", {}).setdefault("restartPolicy", "Never")


def _qualified_kind(obj: Mapping[str, Any]) -> str:
    """``Kind.version.group`` for an object of a named group (so a v1alpha3 PodGroup goes to v1alpha3 when v1beta1
    is preferred), the bare kind otherwise."""
    group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
    return f"{obj.get('kind')}.{version}.{group}" if group else str(obj.get("kind"))


def _pod_group(name: str, namespace: str, min_count: int) -> dict[str, Any]:
    """A scheduling.k8s.io/v1beta1 PodGroup (v1.37's version; the same object as v1alpha3's) with the gang policy
    (``spec.schedulingPolicy.gang``)."""
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


_DRA_KINDS = frozenset({"ResourceClaim", "ResourceClaimTemplate", "DeviceClass"})


def _dra_declared(scenario: Scenario) -> DraDeclared | None:
    """The scenario's DRA objects and its nodes' devices (as the fleet will publish them); None when it has none."""
    objects = [obj for arrival in scenario.arrivals for obj in arrival.objects]
    if not any(spec.devices for spec in scenario.nodes) and not any(o.get("kind") in _DRA_KINDS for o in objects):
        return None
    slices = [  # one per driver and node: its devices (the pool's counter-set slice holds no device)
        {
            "metadata": {"name": f"{spec.name}-{driver}"},
            "spec": {
                "driver": driver,
                "nodeName": spec.name,
                "pool": {"name": spec.name},
                "devices": [d for content in contents for d in content.get("devices") or ()],
            },
        }
        for spec in scenario.nodes
        for driver, contents in wanted_slices(spec).items()
    ]
    return DraDeclared(slices, objects)


def _declared_pod_types(scenario: Scenario, dra: DraDeclared | None = None) -> list[PodType]:
    """The pods the scenario declares (for the GPU target workload): manifests, generators and trace pods (the
    paper-order traces' originals, before inflation, as the paper derives its target workload); pods asking GPUs
    through claims count with their claims' demand."""
    objects = [obj for arrival in scenario.arrivals for obj in arrival.objects]
    types = declared_pod_types(objects, [(g.template, g.pods) for g in scenario.generators if g.pods], dra)
    for trace in scenario.paper_traces:
        types += [trace_pod_type(pod) for pod in trace.pods]
    return types


@contextlib.contextmanager
def _young_gc_only() -> Iterator[None]:
    """Run without CPython's automatic cyclic garbage collector; the sampler collects the young generations.

    A simulation builds a large, long-lived heap (every object of the cluster, several times: store, watch
    cache, informers), and the automatic collector's full passes over it grew to a fifth of a large run's time.
    Reference counting still frees everything acyclic at once; ``gc.collect(1)`` at every sample frees young
    cycles (asyncio futures and exceptions make most of them) scanning only what was allocated since the last
    sample. Objects alive before the run are frozen out of every pass. The collector's state is restored after.
    Collection never changes what a run does, so determinism is unaffected.
    """
    enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def _ratio(used: int, total: int) -> float:
    return round(used / total, 6) if total else 0.0


async def simulate(
    scenario: Scenario,
    *,
    seed: int | None = None,
    until: float | None = None,
    label: str = "run",
    scheduler_config: Mapping[str, Any] | None = None,
    progress: Callable[[Progress], None] | None = None,
    realtime: bool = False,
) -> SimResult:
    """Run ``scenario`` (its seed and duration unless given) and return what it recorded. Must run on the
    default asyncio loop (see :mod:`kubeplane.sim.clock`). ``realtime``: on the real clock instead (the
    scenario then takes its duration in wall time; for checking that simulation changes nothing)."""
    config = scheduler_configuration(scheduler_config if scheduler_config is not None else scenario.scheduler_config)
    run = _Run(
        scenario,
        seed=scenario.seed if seed is None else seed,
        until=scenario.duration if until is None else until,
        label=label,
        scheduler_config=config,
        progress=progress,
        realtime=realtime,
    )
    return await run.run()


def run(scenario: Scenario | str | Path, **kwargs: Any) -> SimResult:
    """:func:`simulate` from synchronous code (scripts, notebooks): ``kubeplane.sim.run("s.yaml", seed=1)``."""
    if not isinstance(scenario, Scenario):
        scenario = Scenario.load(scenario)
    return asyncio.run(simulate(scenario, **kwargs))


__all__ = ["Progress", "SimResult", "run", "simulate"]
