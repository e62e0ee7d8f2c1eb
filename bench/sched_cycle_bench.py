"""The scheduling cycle alone (issue 29): the default profile's PreFilter, Filter, PreScore, Score and selectHost
for a stream of pods on N nodes (upstream scheduler_perf's node-default: 4 CPU / 32Gi / 110 pods, zones moon-1..3),
each pod assumed in the scheduler cache before the next one, as the scheduler does; no API server, no binding, no
events. CPU time of the process (``time.process_time``) per cycle, after a warm-up, with and without the snapshot
update that precedes each cycle.

Workloads (the pod templates of scheduler_perf): ``basic`` (pod-default: 100m / 500Mi), ``spread``
(pod-with-topology-spreading: maxSkew 5 on the zone, DoNotSchedule), ``preferred-spread`` (the same,
ScheduleAnyway). Prints JSON lines ``{"bench": "sched_cycle", "metric": "cycle_cpu" | "cycle_with_snapshot_cpu",
"value", "unit": "us", "workload", ...}`` and a ``hosts_digest`` line (a digest of the chosen hosts: equal digests
before and after a change mean the same decisions).

Run: ``PYTHONPATH=src .venv/bin/python bench/sched_cycle_bench.py [--nodes 5000] [--pods 3000] [--quick]``.
"""

from __future__ import annotations

import argparse
from typing import Any

from cycle_loop import print_figures, run_cycles
from kubeplane.scheduler.framework.types import PodInfo

WORKLOADS = ("basic", "spread", "preferred-spread")
ZONE = "topology.kubernetes.io/zone"


def _node(i: int) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    name = f"node-{i}"
    labels = {"kubernetes.io/hostname": name, ZONE: f"moon-{i % 3 + 1}"}
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": alloc, "allocatable": alloc}}


def _pod(i: int, workload: str) -> PodInfo:
    resources = {"requests": {"cpu": "100m", "memory": "500Mi"}, "limits": {"cpu": "100m", "memory": "500Mi"}}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}]
    }
    if workload != "basic":
        when = "DoNotSchedule" if workload == "spread" else "ScheduleAnyway"
        selector = {"matchLabels": {"color": "blue"}}
        spec["topologySpreadConstraints"] = [
            {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": when, "labelSelector": selector}
        ]
    meta = {"name": f"pod-{i}", "namespace": "sched-1", "uid": f"uid-{i}", "labels": {"color": "blue"}}
    return PodInfo({"metadata": meta, "spec": spec})


def run(workload: str, nodes: int, pods: int, warmup: int) -> dict[str, Any]:
    stream = [_pod(i, workload) for i in range(pods)]
    return run_cycles((_node(i) for i in range(nodes)), stream, measure_from=warmup)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=WORKLOADS, action="append")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    nodes, pods = (500, 300) if args.quick else (args.nodes, args.pods)
    warmup = min(200, pods // 5)
    for workload in args.workload or WORKLOADS:
        figures = run(workload, nodes, pods, warmup)
        common = {"bench": "sched_cycle", "workload": workload, "nodes": nodes, "pods": pods, "quick": args.quick}
        print_figures(figures, common)


if __name__ == "__main__":
    main()
