"""The scheduling cycle alone for scheduler_perf's affinity workloads (issue 29): the default profile's PreFilter,
Filter, PreScore, Score and selectHost on N nodes (upstream's node-default: 4 CPU / 32Gi / 110 pods), each pod
assumed in the scheduler cache before the next one, as the scheduler does; no API server, no binding, no events.

Workloads, after bench/scheduler_perf.py's (the same pod templates and namespaces): ``node-affinity``
(SchedulingNodeAffinity: nodes in zone1, pods with required node affinity zone In [zone1, zone2]),
``pod-affinity``, ``pod-anti-affinity``, ``preferred-pod-affinity``, ``preferred-pod-anti-affinity`` (init pods in
sched-0, measured ones in sched-1, of the same template), ``mixed`` (MixedSchedulingBasePod: nodes in zone1;
``--init`` pods of each of pod-default and the four pod (anti-)affinity templates in sched-0, then pod-default in
namespace-7). The init pods are scheduled by the same cycle (not measured), then frozen out of the collector's
sight (``gc.freeze``: one collection of their state would dominate the figure). CPU time of the process
(``time.process_time``) per measured cycle, with and without the snapshot update that precedes each cycle; a
``hosts_digest`` line (equal digests before and after a change: the same decisions).

Run: ``PYTHONPATH=src .venv/bin/python bench/affinity_cycle_bench.py [--workload mixed] [--nodes 5000]
[--init 2000] [--pods 3000] [--quick]``.
"""

from __future__ import annotations

import argparse
from typing import Any

from cycle_loop import print_figures, run_cycles
from kubeplane.scheduler.framework.types import PodInfo

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def _term(color: str, key: str) -> dict[str, Any]:
    return {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": key,
        "namespaces": ["sched-1", "sched-0"],
    }


def _pod_affinity(kind: str, color: str, key: str, *, preferred: bool) -> dict[str, Any]:
    if preferred:
        terms = {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"podAffinityTerm": _term(color, key), "weight": 1}]
        }
    else:
        terms = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(color, key)]}
    return {kind: terms}


_NODE_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]
        }
    }
}
TEMPLATES: dict[str, tuple[str | None, dict[str, Any] | None]] = {
    "pod-default": (None, None),
    "node-affinity": (None, _NODE_AFFINITY),
    "pod-affinity": ("blue", _pod_affinity("podAffinity", "blue", ZONE, preferred=False)),
    "pod-anti-affinity": ("green", _pod_affinity("podAntiAffinity", "green", HOSTNAME, preferred=False)),
    "preferred-pod-affinity": ("red", _pod_affinity("podAffinity", "red", HOSTNAME, preferred=True)),
    "preferred-pod-anti-affinity": ("yellow", _pod_affinity("podAntiAffinity", "yellow", HOSTNAME, preferred=True)),
}
_AFFINITY = ("pod-affinity", "pod-anti-affinity", "preferred-pod-affinity", "preferred-pod-anti-affinity")
WORKLOADS: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, str], bool]] = {
    # name: ((template, namespace) of each init group, (template, namespace) measured, nodes in zone1)
    "node-affinity": ((("node-affinity", "namespace-1"),), ("node-affinity", "namespace-2"), True),
    **{t: (((t, "sched-0"),), (t, "sched-1"), t == "pod-affinity") for t in _AFFINITY},
    "mixed": (tuple((t, "sched-0") for t in ("pod-default", *_AFFINITY)), ("pod-default", "namespace-7"), True),
}


def _node(i: int, *, zone: bool) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    name = f"node-{i}"
    labels = {HOSTNAME: name}
    if zone:
        labels[ZONE] = "zone1"
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": alloc, "allocatable": alloc}}


def _pod(i: int, template: str, namespace: str) -> PodInfo:
    color, affinity = TEMPLATES[template]
    resources = {"requests": {"cpu": "100m", "memory": "500Mi"}, "limits": {"cpu": "100m", "memory": "500Mi"}}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}]
    }
    if affinity is not None:
        spec["affinity"] = affinity
    meta: dict[str, Any] = {"name": f"{template}-{i}", "namespace": namespace, "uid": f"{namespace}-{template}-{i}"}
    if color is not None:
        meta["labels"] = {"color": color}
    return PodInfo({"metadata": meta, "spec": spec})


def run(workload: str, nodes: int, init: int, pods: int) -> dict[str, Any]:
    groups, measured, zoned = WORKLOADS[workload]
    stream = [_pod(i, t, ns) for t, ns in groups for i in range(init)]
    stream += [_pod(i, *measured) for i in range(pods)]
    first_measured = len(stream) - pods
    fleet = (_node(i, zone=zoned) for i in range(nodes))
    return run_cycles(fleet, stream, measure_from=first_measured, freeze_at=first_measured)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--init", type=int, default=1000, help="pods per init group")
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    nodes, init, pods = (200, 40, 100) if args.quick else (args.nodes, args.init, args.pods)
    for workload in args.workload or sorted(WORKLOADS):
        figures = run(workload, nodes, init, pods)
        common = {"bench": "affinity_cycle", "workload": workload, "nodes": nodes, "init": init, "pods": pods}
        common["quick"] = args.quick
        print_figures(figures, common)


if __name__ == "__main__":
    main()
