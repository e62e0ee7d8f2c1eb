"""VolumeBinding's cost in the scheduling cycle: pods with a WaitForFirstConsumer claim of a CSI class with storage
capacity tracking, on N nodes each with its own CSIStorageCapacity (node-local topology), scheduled offline through
the scheduler's own SchedulingCycle (as ``kubeplane explain`` runs it: PreFilter, Filter and Score on every node,
no API server). The same pods without volumes give the baseline.

Prints JSON lines: {"bench": "volume_binding", "metric": "pods_per_s" | "pods_per_s_no_volumes", ...}.
``--quick`` runs a small cluster.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from kubeplane.scheduler.explain import prepare
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.schedule_one import SchedulingCycle

DRIVER = "csi.kubeplane.io"
TOPOLOGY_KEY = "topology.csi.kubeplane.io/node"


def cluster(nodes: int, claims: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    cap = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    node_objs = [
        {
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}", TOPOLOGY_KEY: f"n{i}"}},
            "status": {"capacity": cap, "allocatable": cap},
        }
        for i in range(nodes)
    ]
    objects: list[dict[str, Any]] = [
        {"kind": "StorageClass", "metadata": {"name": "standard"}, "provisioner": DRIVER,
         "volumeBindingMode": "WaitForFirstConsumer"},
        {"kind": "CSIDriver", "metadata": {"name": DRIVER}, "spec": {"storageCapacity": True}},
    ]  # fmt: skip
    for i in range(nodes):
        objects.append(
            {
                "kind": "CSIStorageCapacity",
                "metadata": {"name": f"cap-n{i}", "namespace": "kube-system"},
                "storageClassName": "standard",
                "nodeTopology": {"matchLabels": {TOPOLOGY_KEY: f"n{i}"}},
                "capacity": f"{10 + i % 90}Gi",
            }
        )
    for c in range(claims):
        objects.append(
            {
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"data-{c}", "namespace": "default", "resourceVersion": "1"},
                "spec": {"storageClassName": "standard", "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "5Gi"}}},
            }
        )  # fmt: skip
    return node_objs, objects


def pod(i: int, with_volume: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}]}
    if with_volume:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{i}"}}]
    return {"kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default", "uid": f"p{i}"}, "spec": spec}


def run(nodes: int, pods: int, with_volume: bool) -> float:
    """Pods per second through one SchedulingCycle each (the framework and its caches built once)."""
    node_objs, objects = cluster(nodes, pods)
    setup = prepare(pod(0, with_volume), nodes=node_objs, objects=objects)
    cycle = SchedulingCycle(rng=setup.rng, percentage_of_nodes_to_score=100)
    node_infos = list(setup.snapshot.list())
    infos = [type(setup.pod_info)(pod(i, with_volume)) for i in range(pods)]
    start = time.perf_counter()
    for info in infos:
        result = cycle.schedule(setup.fwk, CycleState(), info, node_infos, setup.snapshot.node_table)
        assert result.suggested_host
    elapsed = time.perf_counter() - start
    return pods / elapsed if elapsed else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    nodes, pods = (50, 40) if args.quick else (500, 300)
    for metric, with_volume in (("pods_per_s", True), ("pods_per_s_no_volumes", False)):
        value = run(nodes, pods, with_volume)
        line = {
            "bench": "volume_binding",
            "metric": metric,
            "value": round(value, 2),
            "unit": "pods/s",
            "quick": args.quick,
            "nodes": nodes,
            "pods": pods,
            "csi_storage_capacities": nodes,
        }
        print(json.dumps(line))


if __name__ == "__main__":
    main()
