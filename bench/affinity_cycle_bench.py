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
import gc
import hashlib
import json
import random
import time
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
    cache = Cache(FakeClock())
    for i in range(nodes):
        cache.add_node(_node(i, zone=zoned))
    snapshot = Snapshot()
    cache.update_snapshot(snapshot)
    fwk = build_profiles(default_config(), Handle(snapshot_lister=snapshot), new_in_tree_registry())[
        "default-scheduler"
    ]
    cycle = SchedulingCycle(rng=random.Random(1))
    stream = [_pod(i, t, ns) for t, ns in groups for i in range(init)]
    stream += [_pod(i, *measured) for i in range(pods)]
    gc.collect()
    gc.freeze()  # the cluster built above is not garbage: keep full collections off it, as the CLI does
    hosts: list[str] = []
    cycle_cpu = total_cpu = 0.0
    first_measured = len(stream) - pods
    for i, pod in enumerate(stream):
        if i == first_measured:
            gc.collect()
            gc.freeze()  # the init pods' state too: what is measured is the cycles, not one collection of it
        t0 = time.process_time()
        cache.update_snapshot(snapshot)
        t1 = time.process_time()
        result = cycle.schedule(fwk, CycleState(), pod, snapshot.list(), snapshot.node_table)
        t2 = time.process_time()
        cache.assume_pod(pod, result.suggested_host)
        hosts.append(result.suggested_host)
        if i >= first_measured:
            cycle_cpu += t2 - t1
            total_cpu += t2 - t0
    gc.unfreeze()
    measured_count = max(pods, 1)
    return {
        "cycle_cpu": cycle_cpu / measured_count * 1e6,
        "cycle_with_snapshot_cpu": total_cpu / measured_count * 1e6,
        "hosts_digest": hashlib.sha256(" ".join(hosts).encode()).hexdigest()[:12],
    }


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
        for metric in ("cycle_cpu", "cycle_with_snapshot_cpu"):
            print(json.dumps({**common, "metric": metric, "value": round(figures[metric], 1), "unit": "us"}))
        digest = int(figures["hosts_digest"], 16)
        print(json.dumps({**common, "metric": "hosts_digest", "value": digest, "unit": "digest"}))


if __name__ == "__main__":
    main()
