"""Benchmark: the cluster-autoscaler's planning on the scheduler's filters (kubeplane.autoscaler).

Two cases on clusters of N nodes of one group (4 cpu, 16 GiB; three 500m pods per node, so every node is below the
utilisation threshold and a candidate):

* ``scale_down_plan``: one loop's scale-down planning (:func:`kubeplane.autoscaler.scaledown.plan_scale_down`):
  eligibility, then the removal simulation of every candidate (each of its pods placed elsewhere by the filters);
* ``scale_up_plan``: the scale-up plan for N/2 pending 1-cpu pods over three groups (FilterOutSchedulable on the
  full cluster, the template checks, the binpacking estimate, the least-waste expander).

Prints one JSON object per line: ``{"bench": "autoscaler", "metric": "<case>.n<N>", "value": <seconds>,
"unit": "s", "nodes", "quick"}``. Run: ``.venv/bin/python bench/autoscaler_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from typing import Any

from kubeplane.autoscaler.options import AutoscalerOptions
from kubeplane.autoscaler.provider import NODE_GROUP_LABEL, NodeGroupSpec
from kubeplane.autoscaler.scaledown import plan_scale_down
from kubeplane.autoscaler.scaleup import filter_out_schedulable, plan_scale_up
from kubeplane.autoscaler.simulator import ClusterSimulator


def _node(name: str, group: str, cpu: str) -> dict[str, Any]:
    resources = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, NODE_GROUP_LABEL: group}},
        "spec": {},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, cpu: str, node: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}
    if node:
        spec["nodeName"] = node
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs", "controller": True}
    meta = {"name": name, "namespace": "default", "uid": name, "ownerReferences": [owner]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {}}


class _Provider:
    """A CloudProvider over fixed groups (no API: the bench plans only)."""

    def __init__(self, sizes: dict[str, tuple[int, str]]) -> None:
        self.sizes = sizes
        self.specs = [NodeGroupSpec(g, 0, 10_000, {}) for g in sizes]

    def node_groups(self) -> Sequence[NodeGroupSpec]:
        return self.specs

    def node_group_for(self, node_name: str) -> str | None:
        return node_name.rsplit("-", 1)[0]

    def target_size(self, group: str) -> int:
        return self.sizes[group][0]

    def nodes(self, group: str) -> list[str]:
        return [f"{group}-{i}" for i in range(self.sizes[group][0])]

    def upcoming(self, group: str) -> int:
        return 0

    def template_node(self, group: str) -> dict[str, Any]:
        return _node(f"template-node-for-{group}", group, self.sizes[group][1])

    async def increase_size(self, group: str, delta: int) -> None:
        raise NotImplementedError

    async def delete_nodes(self, group: str, names: Sequence[str]) -> None:
        raise NotImplementedError


def _cluster(n: int) -> tuple[_Provider, list[dict[str, Any]], list[dict[str, Any]]]:
    provider = _Provider({"g": (n, "4"), "small": (0, "2"), "large": (0, "16")})
    nodes = [_node(f"g-{i}", "g", "4") for i in range(n)]
    pods = [_pod(f"p{i}", "500m", f"g-{i % n}") for i in range(3 * n)]
    return provider, nodes, pods


def _scale_down(n: int, options: AutoscalerOptions) -> float:
    provider, nodes, pods = _cluster(n)
    start = time.perf_counter()
    plan_scale_down(ClusterSimulator(nodes, pods), nodes, provider=provider, options=options, pdbs=[], now=1.8e9)
    return time.perf_counter() - start


def _scale_up(n: int, options: AutoscalerOptions) -> float:
    provider, nodes, pods = _cluster(n)
    pending = [_pod(f"x{i}", "3") for i in range(n // 2)]
    start = time.perf_counter()
    sim = ClusterSimulator(nodes, pods)
    remaining = filter_out_schedulable(sim, pending)
    plan_scale_up(sim, remaining, provider=provider, options=options, rng=random.Random(0), total_nodes=n)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small clusters only")
    args = parser.parse_args()
    sizes = [20, 60] if args.quick else [100, 300, 1000]
    options = AutoscalerOptions()
    for n in sizes:
        for case, measure in (("scale_down_plan", _scale_down), ("scale_up_plan", _scale_up)):
            seconds = measure(n, options)
            line = {"bench": "autoscaler", "metric": f"{case}.n{n}", "value": round(seconds, 4), "unit": "s"}
            print(json.dumps({**line, "nodes": n, "quick": args.quick}), flush=True)


if __name__ == "__main__":
    main()
