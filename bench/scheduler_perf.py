"""scheduler_perf, as upstream's (test/integration/scheduler_perf): scheduling throughput on a large cluster.

Workloads (upstream's config/performance-config.yaml):
* SchedulingBasic: 5000 nodes, 1000 init pods, 10000 measured pods.
* SchedulingNodeAffinity: 5000 nodes all labelled zone1, 5000 init pods and 10000 measured pods that require
  ``topology.kubernetes.io/zone In [zone1]`` through node affinity.
Nodes have 4 CPU / 32Gi / 110 pods and the hostname label; pods request 100m / 500Mi (upstream's templates).

Pods are created through the API while the scheduler runs, as upstream's harness does. Throughput is measured
as upstream's throughputCollector: a pod counts when spec.nodeName is set (seen through a watch); samples are
taken every second from the first scheduled measured pod; the first sample is skipped; an interval in which
nothing was scheduled is merged into the next; a run shorter than three samples reports one rate, from the first
to the last scheduled pod. Printed as JSON lines: ``"metric": "SchedulingThroughput"`` with
``"stat"`` Average (mean of the per-interval rates), Perc50, Perc90, Perc95, Perc99, and ``"metric": "PeakRSS"``
in MB: ``component`` ``bench`` is this process (with ``--transport local`` the whole control plane), ``scheduler``
the scheduler process of ``--transport http``. ``--quick`` uses 500 nodes (and fewer pods).

``--transport local``: API server registry (memory store), scheduler and pod creator in this process over the
local transport. ``--transport http``: ``kubeplane apiserver`` and ``kubeplane scheduler`` each in their own
process; this process creates the objects and watches pods over HTTP.

Run: ``.venv/bin/python bench/scheduler_perf.py --workload SchedulingBasic [--transport local|http] [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
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

WORKLOADS: dict[str, dict[str, Any]] = {
    "SchedulingBasic": {"nodes": 5000, "init_pods": 1000, "pods": 10000, "affinity": False},
    "SchedulingNodeAffinity": {"nodes": 5000, "init_pods": 5000, "pods": 10000, "affinity": True},
}
CREATORS = 32


def node(i: int, *, zone: str | None) -> Obj:
    name = f"scheduler-perf-node-{i}"
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
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


def pod(name: str, *, affinity: bool) -> Obj:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {
                    "requests": {"cpu": "100m", "memory": "500Mi"},
                    "limits": {"cpu": "100m", "memory": "500Mi"},
                },
            }
        ]
    }
    if affinity:
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone1"]}
                            ]
                        }
                    ]
                }
            }
        }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def emit(metric: str, value: float, unit: str, **params: Any) -> None:
    print(json.dumps({"bench": "scheduler_perf", "metric": metric, "value": round(value, 1), "unit": unit, **params}))
    sys.stdout.flush()


async def create_all(client: Client, objs: list[Obj], *, namespace: str | None) -> None:
    res = client.resource("pods" if objs and objs[0]["kind"] == "Pod" else "nodes")
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
        self.changed = asyncio.Event()

    def observe(self, obj: Obj) -> None:
        if (obj.get("spec") or {}).get("nodeName"):
            name = obj["metadata"]["name"]
            if name not in self.scheduled:
                self.scheduled.add(name)
                if self.first is None:
                    self.first = time.monotonic()
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


async def measure(counter: Counter, total: int, timeout: float) -> list[float]:
    """Upstream throughputCollector: 1 s samples from the first scheduled pod; empty intervals merged."""
    deadline = time.monotonic() + timeout
    while counter.first is None:
        if time.monotonic() > deadline:
            raise SystemExit("no measured pod was scheduled")
        await asyncio.sleep(0.01)
    samples: list[float] = []
    last_count = 0
    last_time = counter.first
    next_tick = counter.first + 1.0
    while len(counter.scheduled) < total:
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
        return [total / max(now - counter.first, 1e-6)]
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


async def create_cluster(client: Client, spec: dict[str, Any]) -> None:
    zone = "zone1" if spec["affinity"] else None
    await create_all(client, [node(i, zone=zone) for i in range(spec["nodes"])], namespace=None)
    for ns in ("init", "measured"):
        await client.create(client.resource("namespaces"), {"metadata": {"name": ns}})


async def run_workload(
    client: Client, spec: dict[str, Any], params: dict[str, Any], check_alive: Callable[[], None]
) -> None:
    """Init pods (waited for), then the measured pods created while the scheduler runs; prints the figures.
    ``check_alive`` raises when the scheduler under test has died."""
    init_counter, counter = Counter(), Counter()
    watchers = [
        asyncio.ensure_future(watch_into(client, "init", init_counter)),
        asyncio.ensure_future(watch_into(client, "measured", counter)),
    ]
    try:
        init = [pod(f"init-{i}", affinity=spec["affinity"]) for i in range(spec["init_pods"])]
        await create_all(client, init, namespace="init")
        deadline = time.monotonic() + 600
        while len(init_counter.scheduled) < spec["init_pods"]:
            check_alive()
            if time.monotonic() > deadline:
                raise SystemExit(f"init pods not scheduled: {len(init_counter.scheduled)}/{spec['init_pods']}")
            await asyncio.sleep(0.05)
        measured = [pod(f"pod-{i}", affinity=spec["affinity"]) for i in range(spec["pods"])]
        creator = asyncio.ensure_future(create_all(client, measured, namespace="measured"))
        samples = await measure(counter, spec["pods"], timeout=900)
        await creator
        report(samples, params)
    finally:
        for w in watchers:
            w.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)


async def run_local(spec: dict[str, Any], params: dict[str, Any]) -> None:
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
        await run_workload(client, spec, params, check_alive)
    finally:
        await scheduler.stop()
        sched_task.cancel()
        await asyncio.gather(sched_task, return_exceptions=True)


async def run_http(spec: dict[str, Any], params: dict[str, Any], kubeconfig: Path, tmp: Path) -> None:
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
    command = [sys.executable, "-m", "kubeplane.cli.main", "scheduler"]
    proc = subprocess.Popen(
        [*command, "--kubeconfig", str(kubeconfig), "--config", str(sched_config)], stdout=log, stderr=log
    )

    def check_alive() -> None:
        if proc.poll() is not None:
            raise SystemExit(f"scheduler failed: {(tmp / 'scheduler.log').read_text()[-2000:]}")

    try:
        await run_workload(client, spec, params, check_alive)
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
    spec = dict(WORKLOADS[args.workload])
    if args.quick:
        spec.update(nodes=500, init_pods=min(spec["init_pods"], 500), pods=2000)
    for key in ("nodes", "init_pods", "pods"):
        if getattr(args, key) is not None:
            spec[key] = getattr(args, key)
    params = {
        "workload": args.workload,
        "transport": args.transport,
        "nodes": spec["nodes"],
        "init_pods": spec["init_pods"],
        "pods": spec["pods"],
        "quick": args.quick,
    }
    if args.transport == "local":
        asyncio.run(run_local(spec, params))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from apiserver_process import running_apiserver

    with running_apiserver("--no-tls", "--store", "memory") as kubeconfig, tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run_http(spec, params, kubeconfig, Path(tmp)))


if __name__ == "__main__":
    main()
