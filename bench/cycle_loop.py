"""The measuring loop of the cycle benches (bench/sched_cycle_bench.py, bench/affinity_cycle_bench.py): the
default profile's scheduling cycle for a stream of pods on a fleet of nodes, each pod assumed in the scheduler
cache before the next one as the scheduler does; no API server, no binding, no events.

What it measures: CPU time of the process (``time.process_time``) per cycle of the pods from ``measure_from`` on,
with and without the snapshot update that precedes each cycle, and a digest of every chosen host (equal digests
before and after a change: the same decisions). The fleet, and the stream up to ``freeze_at``, are kept out of the
collector's sight (``gc.freeze``): they are not garbage, and one full collection of them would dominate the
figure (the CLI freezes its start-up state the same way).
"""

from __future__ import annotations

import gc
import hashlib
import json
import random
import time
from collections.abc import Iterable, Sequence
from typing import Any

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.cache import Cache
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.config import default_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.registry import new_in_tree_registry
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import SchedulingCycle

METRICS = ("cycle_cpu", "cycle_with_snapshot_cpu")


def run_cycles(
    nodes: Iterable[dict[str, Any]], stream: Sequence[PodInfo], *, measure_from: int, freeze_at: int | None = None
) -> dict[str, Any]:
    """Schedule ``stream`` on ``nodes``; CPU µs per measured cycle (``METRICS``) and ``hosts_digest``.
    ``freeze_at``: the index before whose cycle the pods scheduled so far are frozen out of the collector's sight
    too (the init pods of a workload; None: only the fleet)."""
    cache = Cache(FakeClock())
    for node in nodes:
        cache.add_node(node)
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    fwk = build_profiles(default_config(), Handle(snapshot_lister=snapshot), new_in_tree_registry())[
        "default-scheduler"
    ]
    cycle = SchedulingCycle(rng=random.Random(1))
    gc.collect()
    gc.freeze()
    hosts: list[str] = []
    cycle_cpu = total_cpu = 0.0
    for i, pod in enumerate(stream):
        if i == freeze_at:
            gc.collect()
            gc.freeze()
        t0 = time.process_time()
        cache.update_snapshot(snapshot)
        t1 = time.process_time()
        result = cycle.schedule(fwk, CycleState(), pod, snapshot.list(), snapshot.node_table)
        t2 = time.process_time()
        cache.assume_pod(pod, result.suggested_host)
        hosts.append(result.suggested_host)
        if i >= measure_from:
            cycle_cpu += t2 - t1
            total_cpu += t2 - t0
    gc.unfreeze()
    measured = max(len(stream) - measure_from, 1)
    return {
        "cycle_cpu": cycle_cpu / measured * 1e6,
        "cycle_with_snapshot_cpu": total_cpu / measured * 1e6,
        "hosts_digest": hashlib.sha256(" ".join(hosts).encode()).hexdigest()[:12],
    }


def print_figures(figures: dict[str, Any], common: dict[str, Any]) -> None:
    """The bench convention's JSON lines: one per metric (µs) and the hosts digest (as an integer)."""
    for metric in METRICS:
        print(json.dumps({**common, "metric": metric, "value": round(figures[metric], 1), "unit": "us"}))
    digest = int(figures["hosts_digest"], 16)
    print(json.dumps({**common, "metric": "hosts_digest", "value": digest, "unit": "digest"}))
