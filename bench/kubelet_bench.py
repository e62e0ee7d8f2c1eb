"""Simulated-kubelet fleet at scale: N nodes in this process, over HTTP to an API server in its own process.

What it measures (issue 10), in order, on one fleet (:class:`kubeplane.kubelet.fleet.Fleet`):

* ``registration_s``: wall time of ``await fleet.start()`` for N nodes (every Node created, then the node and
  pod informers synced); ``nodes_registered_per_s`` is N over it.
* Steady state, after a warm-up (``--warmup``, default one heartbeat period: each node's first tick creates its
  Lease, later ticks only renew it, so the warm-up keeps the one-off creates out of the window): over
  ``--window`` seconds (default 60, i.e. six 10 s heartbeat periods of every node) ``steady_cpu_share`` is this
  process's CPU time (user + system, all threads) over wall time, in % of one core; ``apiserver_cpu_share``
  the same for the API server process (its children included), read from ``/proc`` (Linux only, else
  omitted). ``steady_rss_mb`` is VmRSS at the end of the window, ``peak_rss_mb`` the process's high-water mark
  (VmHWM, or ``ru_maxrss``) at that point, so registration is included.
* Pods: ``--pods`` pods created already bound (``spec.nodeName`` round robin over the nodes, 10m CPU / 16Mi,
  an image with a tag, so each node pulls it once and later pods find it present), ``--concurrency`` creates in
  flight (default 64), by a client of their own; a watch on another client sees them reach phase Running.
  ``pods_running_after_creation_s`` is from the last create's reply to the last pod seen Running,
  ``pods_running_after_first_create_s`` from the first create's start; ``pods_running_per_s`` is the pod count
  over the latter. ``pod_bind_to_running_s`` (p50/p99/max) is, per pod, from its create's reply (the pod is
  bound from then) to the watch event showing it Running. ``pod_phase_cpu_share`` is this process's CPU share
  during the pod phase (the creator and the watcher run here too).

Targets (printed next to the figures; a benchmark reports, it does not fail on a miss): steady state below 25 %
of one core and below 500 MB RSS for 1,000 nodes; 10,000 pods Running within 60 s of binding (the per-pod max).

The fleet's client has no client-side rate limit: every real kubelet has its own client with its own budget
(upstream ``kubeAPIQPS`` 50), so one shared 50 qps bucket would measure the limiter (1,000 leases renewed every
10 s alone are 100 writes/s), not the fleet. The machine may be shared: load averages and the CPU count are
printed with the figures, and the API server shares the cores with this process.

Output: JSON lines on stdout as the other benches print them (``bench``, ``metric``, ``value``, ``unit``, the
parameters, and ``target``/``target_met`` where there is a target), then one last JSON line, ``"metric":
"summary"`` (value: the run's wall seconds) with every figure under ``figures``. Human-readable lines go to
stderr as the run goes. ``--profile`` runs the pod phase under cProfile and prints its top 25 cumulative
entries to stderr.
Run: ``.venv/bin/python bench/kubelet_bench.py [--quick] [--nodes N] [--pods M] [--window S] [--profile]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import io
import json
import logging
import os
import pstats
import random
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from apiserver_process import running_apiserver
from kubeplane.client.http import HTTPClient
from kubeplane.client.kubeconfig import load_kubeconfig
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import Fleet, FleetOptions

Obj = dict[str, Any]

NAMESPACE = "kubelet-bench"
IMAGE = "registry.k8s.io/pause:3.10"
TARGET_STEADY_CPU_PERCENT = 25.0
TARGET_STEADY_RSS_MB = 500.0
TARGET_BIND_TO_RUNNING_S = 60.0
QUICK = {"nodes": 100, "pods": 1000, "window": 15.0}
FULL = {"nodes": 1000, "pods": 10_000, "window": 60.0}


# --- output --------------------------------------------------------------------------------------------------


class Report:
    """Collects figures; every one is printed at once as a JSON line (stdout) and a readable line (stderr)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.figures: dict[str, Any] = {}

    def metric(
        self, name: str, value: float, unit: str, *, target: str = "", met: bool | None = None, **extra: Any
    ) -> None:
        line: Obj = {"bench": "kubelet", "metric": name, "value": round(value, 3), "unit": unit, **extra}
        self.figures[":".join([name, *map(str, extra.values())])] = line["value"]
        text = f"{name}{''.join(f' [{v}]' for v in extra.values())}: {line['value']} {unit}"
        if target:
            line["target"], line["target_met"] = target, met
            text += f"   (target {target}: {'met' if met else 'MISSED'})"
        print(json.dumps({**line, **self.params}), flush=True)
        say(text)

    def summary(self, wall: float, notes: dict[str, Any]) -> None:
        print(
            json.dumps(
                {
                    "bench": "kubelet",
                    "metric": "summary",
                    "value": round(wall, 1),
                    "unit": "s",
                    "figures": self.figures,
                    **notes,
                    **self.params,
                }
            ),
            flush=True,
        )


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class WarningCounter(logging.Handler):
    """Counts warnings the fleet logs (failed heartbeats, failed registrations): a healthy run has none."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.first: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.first) < 5:
            self.first.append(record.getMessage()[:300])


# --- process figures -----------------------------------------------------------------------------------------


def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def status_mb(field: str) -> float | None:
    """A ``/proc/self/status`` size field (VmRSS, VmHWM) in MB, None where there is no /proc."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def rss_mb() -> float:
    current = status_mb("VmRSS")
    return current if current is not None else peak_rss_mb()


def peak_rss_mb() -> float:
    peak = status_mb("VmHWM")
    if peak is not None:
        return peak
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux, bytes on macOS
    return kb / 1024 / (1024 if sys.platform == "darwin" else 1)


def _proc_stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()  # fields from 3 (state) on; the command may hold spaces


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the API server and anything it started), by parent pid from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if entry.name.isdigit() and (fields := _proc_stat(int(entry.name))) is not None:
            parents[int(entry.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, ppid in parents.items() if ppid == parent]
        found.extend(children)
        frontier.extend(children)
    return found


def children_cpu_seconds(pids: list[int]) -> float | None:
    """User + system CPU seconds of ``pids`` (stat fields 14 and 15, in clock ticks); None without /proc."""
    if not pids:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        fields = _proc_stat(pid)
        if fields is not None:
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


@contextmanager
def profiled(enabled: bool) -> Iterator[None]:
    """cProfile around the block (this thread: the event loop) when enabled; top 25 cumulative to stderr."""
    if not enabled:
        yield
        return
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(25)
        say(out.getvalue())


# --- the run -------------------------------------------------------------------------------------------------


def http_client(kubeconfig: Path) -> HTTPClient:
    """A client without the client-side rate limit (see the module docstring)."""
    return HTTPClient(dataclasses.replace(load_kubeconfig(kubeconfig), qps=1e9, burst=1_000_000))


def pod_manifest(index: int, node: str) -> Obj:
    return {
        "metadata": {"name": f"pod-{index:06d}", "labels": {"app": "kubelet-bench"}},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": IMAGE, "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
        },
    }


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    rank = max(1, -(-len(sorted_values) * q // 100))
    return sorted_values[int(rank) - 1]


class PodWatcher:
    """Watches the bench namespace and notes when each pod is first seen Running (or terminal)."""

    def __init__(self, client: HTTPClient, expected: int) -> None:
        self.client, self.expected = client, expected
        self.running: dict[str, float] = {}
        self.terminal: dict[str, str] = {}
        self.done = asyncio.Event()
        self.rewatches = 0

    def _observe(self, pod: Obj, now: float) -> None:
        name = str(pod["metadata"]["name"])
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running":
            self.running.setdefault(name, now)
        elif phase in ("Succeeded", "Failed"):
            self.terminal.setdefault(name, str(phase))
        if len(self.running) + len(self.terminal) >= self.expected:
            self.done.set()

    async def run(self, resource_version: str) -> None:
        pods = self.client.resource("pods")
        rv = resource_version
        while not self.done.is_set():
            try:
                stream = await self.client.watch(pods, namespace=NAMESPACE, resource_version=rv)
                try:
                    async for event in stream:
                        obj = event.get("object") or {}
                        rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                        if event.get("type") in ("ADDED", "MODIFIED"):
                            self._observe(obj, time.perf_counter())
                            if self.done.is_set():
                                return
                finally:
                    await stream.close()
            except Exception as exc:  # a broken or expired watch: catch up by a list, then watch on
                say(f"pod watch ended ({exc!r}); listing and watching again")
                await asyncio.sleep(0.5)
                listed = await self.client.list(pods, namespace=NAMESPACE)
                now = time.perf_counter()
                for pod in listed["items"]:
                    self._observe(pod, now)
                rv = str(listed["metadata"]["resourceVersion"])
            self.rewatches += 1


async def steady_state(report: Report, fleet: Fleet, warmup: float, window: float, server_pids: list[int]) -> None:
    if warmup > 0:
        say(f"warm-up {warmup:g} s (first heartbeats create the Leases)")
        await asyncio.sleep(warmup)
    say(f"steady-state window {window:g} s")
    server_before = children_cpu_seconds(server_pids)
    wall0, cpu0 = time.perf_counter(), cpu_seconds()
    rss_samples: list[float] = []
    deadline = wall0 + window
    while (left := deadline - time.perf_counter()) > 0:
        await asyncio.sleep(min(1.0, left))
        rss_samples.append(rss_mb())
    wall, cpu = time.perf_counter() - wall0, cpu_seconds() - cpu0
    server_after = children_cpu_seconds(server_pids)
    share = 100 * cpu / wall
    per_node = f"< {TARGET_STEADY_CPU_PERCENT:g} % of one core at 1,000 nodes"
    report.metric("steady_cpu_share", share, "% of one core", target=per_node, met=share < TARGET_STEADY_CPU_PERCENT)
    if server_before is not None and server_after is not None:
        report.metric("apiserver_cpu_share", 100 * (server_after - server_before) / wall, "% of one core")
    steady = rss_samples[-1] if rss_samples else rss_mb()
    report.metric(
        "steady_rss_mb", steady, "MB", target=f"< {TARGET_STEADY_RSS_MB:g} MB", met=steady < TARGET_STEADY_RSS_MB
    )
    report.metric("peak_rss_mb", peak_rss_mb(), "MB")


async def pod_phase(
    report: Report, kubeconfig: Path, nodes: list[str], count: int, concurrency: int, timeout: float, profile: bool
) -> None:
    creator, watch_client = http_client(kubeconfig), http_client(kubeconfig)
    try:
        pods = creator.resource("pods")
        await creator.create(creator.resource("namespaces"), {"metadata": {"name": NAMESPACE}})
        start_rv = str((await watch_client.list(pods, namespace=NAMESPACE))["metadata"]["resourceVersion"])
        watcher = PodWatcher(watch_client, count)
        watch_task = asyncio.create_task(watcher.run(start_rv))
        created_at: dict[str, float] = {}
        work = iter(range(count))

        async def create_worker() -> None:
            for i in work:
                manifest = pod_manifest(i, nodes[i % len(nodes)])
                await creator.create(pods, manifest, namespace=NAMESPACE)
                created_at[manifest["metadata"]["name"]] = time.perf_counter()

        say(f"creating {count} bound pods over {len(nodes)} nodes, {concurrency} in flight")
        with profiled(profile):
            cpu0 = cpu_seconds()
            first = time.perf_counter()
            await asyncio.gather(*(create_worker() for _ in range(min(concurrency, count))))
            created = time.perf_counter()
            say(f"created in {created - first:.1f} s; waiting for Running")
            waiter = asyncio.ensure_future(watcher.done.wait())
            await asyncio.wait([waiter, watch_task], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            end = time.perf_counter()
            cpu = cpu_seconds() - cpu0
        for task in (waiter, watch_task):
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task  # a watcher that failed raises here
    finally:
        await creator.close()
        await watch_client.close()
    running = len(watcher.running)
    report.metric("pods_created_per_s", count / (created - first), "pods/s")
    if running < count:
        missing = count - running - len(watcher.terminal)
        say(
            f"only {running} of {count} pods Running ({len(watcher.terminal)} terminal, {missing} not seen "
            f"Running within {timeout:g} s)"
        )
        raise SystemExit(1)
    last = max(watcher.running.values())
    report.metric("pods_running_after_creation_s", max(0.0, last - created), "s")
    report.metric("pods_running_after_first_create_s", last - first, "s")
    report.metric("pods_running_per_s", count / (last - first), "pods/s")
    latencies = sorted(max(0.0, watcher.running[name] - at) for name, at in created_at.items())
    for stat, q in (("Perc50", 50.0), ("Perc99", 99.0)):
        report.metric("pod_bind_to_running_s", max(percentile(latencies, q), 1e-3), "s", stat=stat)
    worst = latencies[-1]
    report.metric(
        "pod_bind_to_running_s",
        max(worst, 1e-3),
        "s",
        stat="Max",
        target=f"< {TARGET_BIND_TO_RUNNING_S:g} s for 10,000 pods",
        met=worst < TARGET_BIND_TO_RUNNING_S,
    )
    report.metric("pod_phase_cpu_share", 100 * cpu / (end - first), "% of one core")
    report.metric("peak_rss_mb", peak_rss_mb(), "MB", after="pods")
    if watcher.rewatches:
        say(f"the pod watch was re-established {watcher.rewatches} time(s)")


async def run(kubeconfig: Path, args: argparse.Namespace, report: Report, warnings: WarningCounter) -> None:
    specs = parse_node_config([{"count": args.nodes, "namePattern": "node-{index:05d}"}])
    options = FleetOptions() if args.pull_delay is None else FleetOptions(pull_delay=args.pull_delay)
    client = http_client(kubeconfig)
    fleet = Fleet(client, specs, rng=random.Random(1), options=options)
    server_pids = descendants(os.getpid())
    try:
        say(f"registering {args.nodes} nodes")
        start = time.perf_counter()
        await fleet.start()
        took = time.perf_counter() - start
        report.metric("registration_s", took, "s")
        report.metric("nodes_registered_per_s", args.nodes / took, "nodes/s")
        await steady_state(report, fleet, args.warmup, args.window, server_pids)
        await pod_phase(
            report, kubeconfig, [s.name for s in specs], args.pods, args.concurrency, args.timeout, args.profile
        )
    finally:
        await fleet.stop()
        await client.close()
    if warnings.count:
        say(f"the fleet logged {warnings.count} warning(s); first: {warnings.first}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="100 nodes, 1000 pods, 15 s window")
    parser.add_argument("--nodes", type=int, help="simulated nodes (default 1000; --quick 100)")
    parser.add_argument("--pods", type=int, help="bound pods to run (default 10000; --quick 1000)")
    parser.add_argument("--window", type=float, help="steady-state window in seconds (default 60; --quick 15)")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds after registration before the window")
    parser.add_argument("--pull-delay", type=float, help="FleetOptions.pull_delay (default: FleetOptions')")
    parser.add_argument("--concurrency", type=int, default=64, help="pod creates in flight")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for every pod to run")
    parser.add_argument("--profile", action="store_true", help="cProfile the pod phase (top 25 to stderr)")
    args = parser.parse_args()
    defaults = QUICK if args.quick else FULL
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.nodes < 1 or args.pods < 1 or args.window <= 0 or args.concurrency < 1:
        parser.error("--nodes, --pods, --concurrency must be positive and --window above 0")
    pull_delay = FleetOptions().pull_delay if args.pull_delay is None else args.pull_delay
    report = Report(
        {
            "nodes": args.nodes,
            "pods": args.pods,
            "window_s": args.window,
            "pull_delay_s": pull_delay,
            "concurrency": args.concurrency,
            "quick": args.quick,
        }
    )
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    say(
        f"kubelet bench: {args.nodes} nodes, {args.pods} pods, window {args.window:g} s, pull delay "
        f"{pull_delay:g} s; {os.cpu_count()} CPUs, load average {load[0]:.2f} (shared with the API server)"
    )
    warnings = WarningCounter()
    logging.getLogger("kubeplane").addHandler(warnings)
    began = time.perf_counter()
    with running_apiserver() as kubeconfig:
        time.sleep(0.2)  # the kubeconfig is written as the server starts listening
        import uvloop

        uvloop.run(run(kubeconfig, args, report, warnings))
    end_load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    report.summary(
        time.perf_counter() - began,
        {
            "cpus": os.cpu_count(),
            "loadavg_start": round(load[0], 2),
            "loadavg_end": round(end_load[0], 2),
            "fleet_warnings": warnings.count,
        },
    )


if __name__ == "__main__":
    main()
