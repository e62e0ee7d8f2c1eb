"""Simulation speed: simulated seconds per wall second and pods scheduled per wall second.

Runs a scenario (default ``examples/sim/scale-out.yaml``: 5,000 nodes and 50,000 pods with churn) on the virtual
clock with every real component (``kubeplane.sim``), and prints one JSON object per line: {"bench": "sim",
"metric", "value", "unit", ...parameters}. ``--quick`` scales the cluster and the workload down (200 nodes, 2,000
pods, 10 simulated minutes) so it finishes in well under a minute. ``--nodes``/``--pods``/``--until`` override.

Memory: ``peak_rss`` is the process's peak resident set (``getrusage``'s ``ru_maxrss``); ``bytes_per_node`` and
``bytes_per_pod`` are the run's summary fields (:mod:`kubeplane.sim.memory`): the resident set the cluster adds
per node by the first sample, and the peak resident set the workload adds after it per pod created.

Run: ``.venv/bin/python bench/sim_bench.py [--quick] [--scenario FILE] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import pstats
import sys
import time
from pathlib import Path
from typing import Any

from kubeplane.kubelet.config import parse_node_config
from kubeplane.sim.memory import peak_rss_bytes
from kubeplane.sim.runner import Progress, run
from kubeplane.sim.scenario import Scenario

DEFAULT_SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "sim" / "scale-out.yaml"


def emit(metric: str, value: float, unit: str, **params: Any) -> None:
    print(json.dumps({"bench": "sim", "metric": metric, "value": round(value, 3), "unit": unit, **params}))
    sys.stdout.flush()


def scaled(scenario: Scenario, nodes: int | None, pods: int | None) -> Scenario:
    """The scenario with ``nodes`` nodes like its first one, and its generators' counts scaled to ``pods``."""
    out = scenario
    if nodes is not None and scenario.nodes:
        first = scenario.nodes[0]
        group = {"count": nodes, "namePattern": "node-{index:05d}", "capacity": dict(first.capacity),
                 "allocatable": dict(first.allocatable)}  # fmt: skip
        out = dataclasses.replace(out, nodes=parse_node_config([group]))
    if pods is not None and scenario.generators:
        total = sum(g.count for g in scenario.generators) or 1
        gens = [
            dataclasses.replace(
                g, count=max(1, g.count * pods // total), rate=None if g.rate is None else g.rate * pods / total
            )
            for g in scenario.generators
        ]
        out = dataclasses.replace(out, generators=gens)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", type=Path, default=DEFAULT_SCENARIO)
    parser.add_argument("--quick", action="store_true", help="200 nodes, 2,000 pods, 10 simulated minutes")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--pods", type=int)
    parser.add_argument("--until", type=float, help="simulated seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="cProfile the run (top 25 to stderr)")
    args = parser.parse_args()
    scenario = Scenario.load(args.scenario)
    nodes, pods, until = args.nodes, args.pods, args.until
    if args.quick:
        # only what is not given: an explicit 0 (``--pods 0``, the idle fleet) stays 0
        nodes = 200 if nodes is None else nodes
        pods = 2000 if pods is None else pods
        until = 600.0 if until is None else until
    scenario = scaled(scenario, nodes, pods)
    until = until or scenario.duration
    params = {"scenario": scenario.name, "nodes": len(scenario.nodes), "quick": args.quick, "sim_seconds": until}
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    first: list[tuple[float, float, float]] = []  # (simulated t, perf_counter, CPU) at the first sample

    def progress(p: Progress) -> None:
        if not first:
            first.append((p.t, time.perf_counter(), time.process_time()))

    result = run(scenario, seed=args.seed, until=until, progress=progress)
    ended, ended_cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    s = result.summary
    wall = s["wall_seconds"]
    emit("sim_seconds_per_wall_second", s["sim_seconds"] / wall, "x", **params)
    emit("pods_scheduled_per_wall_second", s["pods_scheduled"] / wall, "pods/s", **params)
    emit("wall_seconds", wall, "s", pods=s["pods_created"], **params)
    if first and s["sim_seconds"] > first[0][0]:
        # after registration and the informers' sync: what a simulated second of the running cluster costs
        span = s["sim_seconds"] - first[0][0]
        emit("steady_wall_ms_per_sim_second", (ended - first[0][1]) / span * 1000, "ms", **params)
        # CPU time of this process: on a shared, loaded machine a steadier figure than wall time
        emit("steady_cpu_ms_per_sim_second", (ended_cpu - first[0][2]) / span * 1000, "ms", **params)
    emit("peak_rss", peak_rss_bytes() / 2**20, "MB", **params)
    if s.get("bytes_per_node") is not None:
        emit("bytes_per_node", s["bytes_per_node"], "B", **params)
    if s.get("bytes_per_pod") is not None:
        emit("bytes_per_pod", s["bytes_per_pod"], "B", pods=s["pods_created"], **params)
    summary = f"{len(scenario.nodes)} nodes, {s['pods_created']} pods created, {s['pods_scheduled']} scheduled"
    print(f"{scenario.name}: {summary}, {s['sim_seconds']:.0f} simulated s in {wall:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
