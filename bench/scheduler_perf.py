"""scheduler_perf, as upstream's (test/integration/scheduler_perf): scheduling throughput on a large cluster.

Workloads, with the params of upstream's largest ``performance`` case of each (config files ``misc/``,
``affinity/``, ``topology_spreading/``, ``default_preemption/`` ``performance-config.yaml``); "init" is every
init createPods op (each creates ``--init-pods`` pods and waits for them), "measured" the collectMetrics op:

* SchedulingBasic: 5000 nodes; init 1000 pod-default; measured 10000 pod-default.
* SchedulingNodeAffinity: 5000 nodes in zone1; init 5000 and measured 10000 pod-with-node-affinity.
* SchedulingPodAntiAffinity: 5000 nodes; init 1000 (sched-0) and measured 2000 (sched-1)
  pod-with-pod-anti-affinity.
* SchedulingPodAffinity: 5000 nodes in zone1; init 5000 (sched-0) and measured 5000 (sched-1)
  pod-with-pod-affinity.
* SchedulingPreferredPodAffinity, SchedulingPreferredPodAntiAffinity: 5000 nodes; init 5000 (sched-0) and
  measured 5000 (sched-1) pod-with-preferred-pod-(anti-)affinity.
* TopologySpreading, PreferredTopologySpreading: 5000 nodes in zones moon-1/2/3; init 5000 pod-default;
  measured 5000 pod-with-(preferred-)topology-spreading (maxSkew 5 on the zone).
* MixedSchedulingBasePod: 5000 nodes in zone1; init 2000 of each of pod-default, pod-with-pod-affinity,
  pod-with-pod-anti-affinity, pod-with-preferred-pod-affinity, pod-with-preferred-pod-anti-affinity (sched-0);
  measured 5000 pod-default.
* PreemptionBasic: 1000 nodes; init 4000 pod-low-priority (900m, priority 0: four fill a node); measured 1000
  pod-high-priority (3000m, priority 10: each preempts three). Needs the DefaultPreemption plugin.

Nodes are upstream's node-default (4 CPU / 32Gi / 110 pods) with the ``kubernetes.io/hostname`` label and,
where the workload has a labelNodePrepareStrategy, ``topology.kubernetes.io/zone`` given round robin. Pods
request (and limit) 100m / 500Mi unless the template says otherwise. Pods go to the namespaces upstream's ops
name: ``sched-0``/``sched-1`` (createNamespaces) or ``namespace-<op index>`` (a createPods op without one).
Upstream's templates set ``spec.priority`` with the Priority admission plugin disabled; kubeplane's API server
always runs it, so a PriorityClass ``priority-<value>`` is created and the pods name it (same resulting
``spec.priority``).

Pods are created through the API while the scheduler runs, as upstream's harness does. Throughput is measured
as upstream's throughputCollector: a pod counts when spec.nodeName is set (seen through a watch); samples are
taken every second from the first scheduled measured pod; the first sample is skipped; an interval in which
nothing was scheduled is merged into the next; a run shorter than three samples reports one rate, from the first
to the last scheduled pod. Printed as JSON lines: ``"metric": "SchedulingThroughput"`` with
``"stat"`` Average (mean of the per-interval rates), Perc50, Perc90, Perc95, Perc99; ``"metric":
"EndToEndThroughput"`` (not upstream's: measured pods over the time from the first creation to the last binding,
which counts what happens before the first binding, e.g. preemption); ``"metric": "CPUPerPod"`` (not upstream's:
CPU microseconds per measured pod of the process that schedules, ``component`` as for PeakRSS, from the first
creation to the end: steadier than throughput on a machine other work shares); and ``"metric": "PeakRSS"``
in MB: ``component`` ``bench`` is this process (with ``--transport local`` the whole control plane), ``scheduler``
the scheduler process of ``--transport http``. ``--quick`` uses upstream's 500Nodes params of the workload
(SchedulingBasic and SchedulingNodeAffinity: 500 nodes, 500 init, 2000 measured pods; PreemptionBasic, which
has none upstream: 500 nodes, 2000 init, 500 measured); ``--nodes``, ``--init-pods`` (per init op) and
``--pods`` override either.

``--transport local``: API server registry (memory store), scheduler and pod creator in this process over the
local transport. ``--transport http``: ``kubeplane apiserver`` and ``kubeplane scheduler`` each in their own
process; this process creates the objects and watches pods over HTTP.

Run: ``.venv/bin/python bench/scheduler_perf.py --workload SchedulingBasic [--transport local|http] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import dataclasses
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubeplane.client.interface import Client, Obj

CREATORS = 32
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


@dataclasses.dataclass(frozen=True)
class PodTemplate:
    """One of upstream's ``templates/pod-*.yaml``: a pause container with these requests and extras."""

    generate_name: str
    labels: dict[str, str] | None = None
    cpu: str = "100m"
    priority: int | None = None  # spec.priority upstream; here through PriorityClass ``priority-<value>``
    termination_grace_period: int | None = None
    affinity: Obj | None = None
    spread: list[Obj] | None = None  # topologySpreadConstraints


def _affinity_term(color: str, topology_key: str) -> Obj:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": topology_key,
        "namespaces": ["sched-1", "sched-0"],
    }


def _pod_affinity(kind: str, color: str, topology_key: str, *, preferred: bool) -> Obj:
    """``{kind: {required|preferred...: [term]}}`` for kind podAffinity or podAntiAffinity (weight 1 if preferred)."""
    term = _affinity_term(color, topology_key)
    if preferred:
        return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [{"podAffinityTerm": term, "weight": 1}]}}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _zone_spread(when_unsatisfiable: str) -> list[Obj]:
    return [
        {
            "maxSkew": 5,
            "topologyKey": ZONE,
            "whenUnsatisfiable": when_unsatisfiable,
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]


TEMPLATES: dict[str, PodTemplate] = {
    "pod-default": PodTemplate("pod-"),
    "pod-with-node-affinity": PodTemplate(
        "node-affinity-",
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}
                    ]
                }
            }
        },
    ),
    "pod-with-pod-affinity": PodTemplate(
        "affinity-pod-", {"color": "blue"}, affinity=_pod_affinity("podAffinity", "blue", ZONE, preferred=False)
    ),
    "pod-with-pod-anti-affinity": PodTemplate(
        "anti-affinity-pod-",
        {"color": "green"},
        affinity=_pod_affinity("podAntiAffinity", "green", HOSTNAME, preferred=False),
    ),
    "pod-with-preferred-pod-affinity": PodTemplate(
        "preferred-affinity-pod-",
        {"color": "red"},
        affinity=_pod_affinity("podAffinity", "red", HOSTNAME, preferred=True),
    ),
    "pod-with-preferred-pod-anti-affinity": PodTemplate(
        "preferred-anti-affinity-pod-",
        {"color": "yellow"},
        affinity=_pod_affinity("podAntiAffinity", "yellow", HOSTNAME, preferred=True),
    ),
    "pod-with-topology-spreading": PodTemplate(
        "spreading-pod-", {"color": "blue"}, spread=_zone_spread("DoNotSchedule")
    ),
    "pod-with-preferred-topology-spreading": PodTemplate(
        "spreading-pod-", {"color": "blue"}, spread=_zone_spread("ScheduleAnyway")
    ),
    "pod-low-priority": PodTemplate("pod-", cpu="900m", termination_grace_period=0),
    "pod-high-priority": PodTemplate("pod-", cpu="3000m", priority=10),
}


@dataclasses.dataclass(frozen=True)
class PodGroup:
    """One createPods op: pods of a template in a namespace (how many is the workload's)."""

    template: str
    namespace: str


@dataclasses.dataclass(frozen=True)
class Workload:
    nodes: int
    init_pods: int  # per init group: upstream's $initPods, used by every init createPods op
    pods: int
    init: tuple[PodGroup, ...]
    measured: PodGroup
    zones: tuple[str, ...] = ()  # labelNodePrepareStrategy values of topology.kubernetes.io/zone
    quick: tuple[int, int, int] = (500, 500, 2000)  # nodes, init pods, measured pods of --quick
    plugin: str | None = None  # an in-tree scheduler plugin the workload cannot run without

    def __post_init__(self) -> None:
        names = [(g.namespace, TEMPLATES[g.template].generate_name) for g in (*self.init, self.measured)]
        assert len(set(names)) == len(names), "two groups would create pods of the same names"
        assert all(g.namespace != self.measured.namespace for g in self.init), "the measured namespace is its own"

    @property
    def namespaces(self) -> list[str]:
        """Upstream's createNamespaces plus the namespace each createPods op creates, in order."""
        return list(dict.fromkeys(g.namespace for g in (*self.init, self.measured)))

    @property
    def priorities(self) -> list[int]:
        values = (TEMPLATES[g.template].priority for g in (*self.init, self.measured))
        return sorted({v for v in values if v is not None})


def _same(template: str, init_namespace: str, measured_namespace: str) -> tuple[tuple[PodGroup, ...], PodGroup]:
    """``init, measured`` of the common shape: one init op and the measured op, of the same template."""
    return (PodGroup(template, init_namespace),), PodGroup(template, measured_namespace)


AFFINITY_TEMPLATES = (
    "pod-with-pod-affinity",
    "pod-with-pod-anti-affinity",
    "pod-with-preferred-pod-affinity",
    "pod-with-preferred-pod-anti-affinity",
)


def _spreading(measured: str) -> Workload:
    """TopologySpreading and PreferredTopologySpreading: nodes in three zones, plain init pods, spread pods."""
    return Workload(
        5000,
        5000,
        5000,
        zones=("moon-1", "moon-2", "moon-3"),
        quick=(500, 1000, 1000),
        init=(PodGroup("pod-default", "namespace-1"),),
        measured=PodGroup(measured, "namespace-2"),
    )


WORKLOADS: dict[str, Workload] = {
    "SchedulingBasic": Workload(5000, 1000, 10000, *_same("pod-default", "namespace-1", "namespace-2")),
    "SchedulingNodeAffinity": Workload(
        5000,
        5000,
        10000,
        *_same("pod-with-node-affinity", "namespace-1", "namespace-2"),
        zones=("zone1",),
    ),
    "SchedulingPodAntiAffinity": Workload(
        5000,
        1000,
        2000,
        *_same("pod-with-pod-anti-affinity", "sched-0", "sched-1"),
        quick=(500, 100, 400),
    ),
    "SchedulingPodAffinity": Workload(
        5000,
        5000,
        5000,
        *_same("pod-with-pod-affinity", "sched-0", "sched-1"),
        zones=("zone1",),
        quick=(500, 500, 1000),
    ),
    "SchedulingPreferredPodAffinity": Workload(
        5000,
        5000,
        5000,
        *_same("pod-with-preferred-pod-affinity", "sched-0", "sched-1"),
        quick=(500, 500, 1000),
    ),
    "SchedulingPreferredPodAntiAffinity": Workload(
        5000,
        5000,
        5000,
        *_same("pod-with-preferred-pod-anti-affinity", "sched-0", "sched-1"),
        quick=(500, 500, 1000),
    ),
    "TopologySpreading": _spreading("pod-with-topology-spreading"),
    "PreferredTopologySpreading": _spreading("pod-with-preferred-topology-spreading"),
    # ops: createNodes, createNamespaces (sched-0), five createPods in sched-0, then the measured op 7.
    "MixedSchedulingBasePod": Workload(
        5000,
        2000,
        5000,
        zones=("zone1",),
        quick=(500, 200, 1000),
        init=tuple(PodGroup(t, "sched-0") for t in ("pod-default", *AFFINITY_TEMPLATES)),
        measured=PodGroup("pod-default", "namespace-7"),
    ),
    "PreemptionBasic": Workload(
        1000,
        4000,
        1000,
        quick=(500, 2000, 500),
        plugin="DefaultPreemption",
        init=(PodGroup("pod-low-priority", "namespace-1"),),
        measured=PodGroup("pod-high-priority", "namespace-2"),
    ),
}


def node(i: int, *, zone: str | None) -> Obj:
    name = f"scheduler-perf-node-{i}"
    labels = {HOSTNAME: name}
    if zone:
        labels[ZONE] = zone
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
            "phase": "Running",
        },
    }


def priority_class_name(value: int) -> str:
    return f"priority-{value}"


def pod(name: str, template: PodTemplate) -> Obj:
    requests = {"cpu": template.cpu, "memory": "500Mi"}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": requests, "limits": dict(requests)},
            }
        ]
    }
    if template.termination_grace_period is not None:
        spec["terminationGracePeriodSeconds"] = template.termination_grace_period
    if template.priority is not None:
        spec["priorityClassName"] = priority_class_name(template.priority)
    if template.affinity is not None:
        spec["affinity"] = copy.deepcopy(template.affinity)
    if template.spread is not None:
        spec["topologySpreadConstraints"] = copy.deepcopy(template.spread)
    metadata: dict[str, Any] = {"name": name}
    if template.labels:
        metadata["labels"] = dict(template.labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def emit(metric: str, value: float, unit: str, **params: Any) -> None:
    print(json.dumps({"bench": "scheduler_perf", "metric": metric, "value": round(value, 1), "unit": unit, **params}))
    sys.stdout.flush()


async def create_all(client: Client, plural: str, objs: list[Obj], *, namespace: str | None) -> None:
    res = client.resource(plural)
    it = iter(objs)

    async def worker() -> None:
        for obj in it:
            await client.create(res, obj, namespace=namespace)

    await asyncio.gather(*(worker() for _ in range(CREATORS)))


class Counter:
    """Counts pods of one namespace that have spec.nodeName, from a watch."""

    def __init__(self) -> None:
        self.scheduled: set[str] = set()
        self.first: float | None = None
        self.last = 0.0
        self.changed = asyncio.Event()

    def observe(self, obj: Obj) -> None:
        if (obj.get("spec") or {}).get("nodeName"):
            name = obj["metadata"]["name"]
            if name not in self.scheduled:
                self.scheduled.add(name)
                self.last = time.monotonic()
                if self.first is None:
                    self.first = self.last
                self.changed.set()


async def watch_into(client: Client, namespace: str, counter: Counter) -> None:
    res = client.resource("pods")
    listed = await client.list(res, namespace=namespace)
    for item in listed["items"]:
        counter.observe(item)
    stream = await client.watch(res, namespace=namespace, resource_version=listed["metadata"]["resourceVersion"])
    try:
        async for event in stream:
            if event.get("type") in ("ADDED", "MODIFIED"):
                counter.observe(event["object"])
    finally:
        await stream.close()


async def measure(counter: Counter, total: int, timeout: float, check: Callable[[], None]) -> list[float]:
    """Upstream throughputCollector: 1 s samples from the first scheduled pod; empty intervals merged.
    ``check`` raises when the run cannot finish (scheduler or pod creator failed)."""
    deadline = time.monotonic() + timeout
    while counter.first is None:
        check()
        if time.monotonic() > deadline:
            raise SystemExit("no measured pod was scheduled")
        await asyncio.sleep(0.01)
    samples: list[float] = []
    last_count = 0
    last_time = counter.first
    next_tick = counter.first + 1.0
    while len(counter.scheduled) < total:
        check()
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out: {len(counter.scheduled)}/{total} scheduled")
        await asyncio.sleep(max(0.0, next_tick - time.monotonic()))
        next_tick += 1.0
        now = time.monotonic()
        count = len(counter.scheduled)
        if count == last_count:
            continue  # merged into the next interval
        samples.append((count - last_count) / (now - last_time))
        last_count, last_time = count, now
    now = time.monotonic()
    if len(counter.scheduled) > last_count:
        samples.append((len(counter.scheduled) - last_count) / max(now - last_time, 1e-6))
    if len(samples) < 3:
        # Too short a run for 1 s samples (--quick, small --pods): one sample, first to last scheduled pod.
        return [total / max(counter.last - counter.first, 1e-6)]
    return samples[1:]


def peak_rss_of(pid: int) -> float | None:
    """VmHWM of another process in MB (Linux), None where /proc is not available."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_seconds_of(pid: int) -> float:
    """User plus system CPU seconds of another process (Linux ``/proc/PID/stat``), 0 where unavailable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(samples: list[float], params: dict[str, Any]) -> None:
    ordered = sorted(samples)

    def perc(p: float) -> float:
        if not ordered:
            return 0.0
        idx = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
        return ordered[idx]

    emit("SchedulingThroughput", sum(samples) / len(samples) if samples else 0.0, "pods/s", stat="Average", **params)
    for p in (50, 90, 95, 99):
        emit("SchedulingThroughput", perc(p), "pods/s", stat=f"Perc{p}", **params)
    emit("PeakRSS", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "MB", component="bench", **params)


async def create_cluster(client: Client, spec: Workload) -> None:
    zones = spec.zones
    nodes = [node(i, zone=zones[i % len(zones)] if zones else None) for i in range(spec.nodes)]
    await create_all(client, "nodes", nodes, namespace=None)
    for ns in spec.namespaces:
        await client.create(client.resource("namespaces"), {"metadata": {"name": ns}})
    for value in spec.priorities:
        pc = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": priority_class_name(value)},
            "value": value,
        }
        await client.create(client.resource("priorityclasses"), pc)


async def create_group(client: Client, group: PodGroup, count: int) -> None:
    template = TEMPLATES[group.template]
    pods = [pod(f"{template.generate_name}{i}", template) for i in range(count)]
    await create_all(client, "pods", pods, namespace=group.namespace)


async def run_workload(
    client: Client,
    spec: Workload,
    params: dict[str, Any],
    check_alive: Callable[[], None],
    cpu: tuple[str, Callable[[], float]] | None = None,
) -> None:
    """Each init group in turn, waited for; then the measured pods, created while the scheduler runs; prints the
    figures. ``check_alive`` raises when the scheduler under test has died; ``cpu`` is ``(component, seconds)``,
    the CPU time so far of the process that schedules (for CPUPerPod)."""
    counters = {ns: Counter() for ns in spec.namespaces}
    watchers = [asyncio.ensure_future(watch_into(client, ns, c)) for ns, c in counters.items()]
    creator: asyncio.Future[None] | None = None
    try:
        expected = dict.fromkeys(spec.namespaces, 0)
        for group in spec.init:
            await create_group(client, group, spec.init_pods)
            expected[group.namespace] += spec.init_pods
            scheduled = counters[group.namespace].scheduled
            deadline = time.monotonic() + 600
            while len(scheduled) < expected[group.namespace]:
                check_alive()
                if time.monotonic() > deadline:
                    raise SystemExit(
                        f"init pods ({group.template}) not scheduled: {len(scheduled)}/{expected[group.namespace]}"
                    )
                await asyncio.sleep(0.05)
        started = time.monotonic()
        cpu_started = cpu[1]() if cpu is not None else 0.0
        creator = asyncio.ensure_future(create_group(client, spec.measured, spec.pods))

        def check() -> None:
            check_alive()
            if creator.done() and creator.exception() is not None:
                raise SystemExit(f"creating the measured pods failed: {creator.exception()!r}")

        samples = await measure(counters[spec.measured.namespace], spec.pods, timeout=900, check=check)
        await creator
        report(samples, params)
        # Not an upstream metric: all measured pods over the time from their first creation to the last binding.
        # The collector above starts at the first binding, which hides work done before it (preemption).
        last = counters[spec.measured.namespace].last
        emit("EndToEndThroughput", spec.pods / max(last - started, 1e-6), "pods/s", **params)
        if cpu is not None:
            # Not upstream's either: CPU time per measured pod of the scheduling process (local: the whole control
            # plane and this pod creator), from the first creation to the end. Steadier than throughput on a busy
            # machine, where other processes take the wall clock.
            used = (cpu[1]() - cpu_started) / spec.pods * 1e6
            emit("CPUPerPod", used, "us", component=cpu[0], **params)
    finally:
        pending = [*watchers, *([creator] if creator is not None else [])]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


async def run_local(spec: Workload, params: dict[str, Any]) -> None:
    from kubeplane.client.local import LocalClient
    from kubeplane.scheduler.scheduler import Scheduler

    client = await LocalClient.in_memory()
    await create_cluster(client, spec)
    scheduler = Scheduler(client, rng=random.Random(0))
    sched_task = asyncio.ensure_future(scheduler.run())

    def check_alive() -> None:
        if sched_task.done():
            raise SystemExit(f"scheduler stopped: {sched_task.exception()!r}")

    try:
        await run_workload(client, spec, params, check_alive, ("bench", time.process_time))
    finally:
        await scheduler.stop()
        sched_task.cancel()
        await asyncio.gather(sched_task, return_exceptions=True)


async def run_http(spec: Workload, params: dict[str, Any], kubeconfig: Path, tmp: Path) -> None:
    from kubeplane.client.http import HTTPClient
    from kubeplane.client.kubeconfig import load_kubeconfig

    client = HTTPClient(dataclasses.replace(load_kubeconfig(kubeconfig), qps=0, burst=1), connections=CREATORS)
    await create_cluster(client, spec)
    sched_config = tmp / "scheduler.yaml"
    sched_config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "leaderElection:\n  leaderElect: false\n"
        "clientConnection:\n  qps: 5000\n  burst: 5000\n"
    )
    log = (tmp / "scheduler.log").open("wb")
    command = [sys.executable, "-m", "kubeplane.cli.main", "scheduler", "--metrics-port=0"]
    proc = subprocess.Popen(
        [*command, "--kubeconfig", str(kubeconfig), "--config", str(sched_config)], stdout=log, stderr=log
    )

    def check_alive() -> None:
        if proc.poll() is not None:
            raise SystemExit(f"scheduler failed: {(tmp / 'scheduler.log').read_text()[-2000:]}")

    try:
        await run_workload(client, spec, params, check_alive, ("scheduler", lambda: cpu_seconds_of(proc.pid)))
        scheduler_rss = peak_rss_of(proc.pid)
        if scheduler_rss is not None:
            emit("PeakRSS", scheduler_rss, "MB", component="scheduler", **params)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="SchedulingBasic", choices=sorted(WORKLOADS))
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--init-pods", type=int)
    parser.add_argument("--pods", type=int)
    parser.add_argument("--transport", default="local", choices=("local", "http"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    spec = WORKLOADS[args.workload]
    if args.quick:
        nodes, init_pods, pods = spec.quick
        spec = dataclasses.replace(spec, nodes=nodes, init_pods=init_pods, pods=pods)
    sizes = {key: getattr(args, key) for key in ("nodes", "init_pods", "pods") if getattr(args, key) is not None}
    spec = dataclasses.replace(spec, **sizes)
    if spec.plugin is not None:
        from kubeplane.scheduler.plugins.registry import new_in_tree_registry

        if spec.plugin not in new_in_tree_registry():
            raise SystemExit(f"{args.workload} needs the {spec.plugin} scheduler plugin, which kubeplane lacks")
    params = {
        "workload": args.workload,
        "transport": args.transport,
        "nodes": spec.nodes,
        "init_pods": spec.init_pods,
        "pods": spec.pods,
        "quick": args.quick,
    }
    from kubeplane.cli.gcpolicy import tune_for_control_plane

    tune_for_control_plane()  # as every kubeplane component's process does (kubeplane up for --transport local)
    if args.transport == "local":
        asyncio.run(run_local(spec, params))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from apiserver_process import running_apiserver

    with running_apiserver("--no-tls", "--store", "memory") as kubeconfig, tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run_http(spec, params, kubeconfig, Path(tmp)))


if __name__ == "__main__":
    main()
