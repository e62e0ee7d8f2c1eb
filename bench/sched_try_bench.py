"""The scheduler view's Try (``kubeplane.ui.trying``): how long one Try takes for its Pending pods, each evaluated
twice (today's configuration, LeastAllocated; the edited one, MostAllocated) by the scheduler's own cycle, on a
cluster of N nodes with P pods bound; the lists come from a stub API in the same process (no HTTP, no store), so
the figure is the cycles' cost plus the listing's decoding.

Prints JSON lines {"bench": "sched_try", "metric": "try_seconds" | "cycles_per_s", ...}; ``--quick`` runs a small
cluster. Full run: ``PYTHONPATH=src .venv/bin/python bench/sched_try_bench.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import orjson

from kubeplane.scheduler.config import default_config
from kubeplane.ui import trying

MOST = (Path(__file__).resolve().parents[1] / "examples" / "sim" / "most-allocated.yaml").read_text(encoding="utf-8")
"""The bin-packing example's configuration (NodeResourcesFit MostAllocated)."""


def _node(i: int) -> dict[str, Any]:
    alloc = {"cpu": "32", "memory": "128Gi", "pods": "110"}
    name = f"node-{i:05d}"
    return {
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"z{i % 3}"},
        },
        "status": {"capacity": alloc, "allocatable": alloc, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _pod(i: int, node: str) -> dict[str, Any]:
    requests = {"cpu": f"{100 + (i % 7) * 100}m", "memory": f"{256 + (i % 5) * 256}Mi"}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": requests}}]}
    if node:
        spec["nodeName"] = node
    meta = {"name": f"p{i:06d}", "namespace": "default", "uid": f"u{i}"}
    return {"metadata": meta, "spec": spec, "status": {"phase": "Running" if node else "Pending"}}


class StubAPI:
    def __init__(self, lists: dict[str, bytes]) -> None:
        self.lists = lists

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = self.lists.get(scope["path"], b'{"kind":"List","metadata":{},"items":[]}')
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


def run(nodes: int, pods: int, pending: int) -> dict[str, float]:
    node_objs = [_node(i) for i in range(nodes)]
    placed = [_pod(i, node_objs[i % nodes]["metadata"]["name"]) for i in range(pods)]
    waiting = [_pod(pods + i, "") for i in range(pending)]
    api = StubAPI({
        "/api/v1/nodes": orjson.dumps({"kind": "List", "metadata": {}, "items": node_objs}),
        "/api/v1/pods": orjson.dumps({"kind": "List", "metadata": {}, "items": placed + waiting}),
    })  # fmt: skip
    start = time.perf_counter()
    result = asyncio.run(trying.try_config(api, "t", MOST, current=default_config()))
    elapsed = time.perf_counter() - start
    assert len(result["evaluated"]) == min(pending, trying.MAX_PODS)
    return {"elapsed": elapsed, "cycles": 2.0 * len(result["evaluated"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    nodes, pods, pending = (100, 1000, 10) if args.quick else (1000, 10000, trying.MAX_PODS)
    figures = run(nodes, pods, pending)
    common = {"bench": "sched_try", "quick": args.quick, "nodes": nodes, "pods": pods, "pending": pending}
    print(json.dumps({**common, "metric": "try_seconds", "value": round(figures["elapsed"], 3), "unit": "s"}))
    rate = figures["cycles"] / figures["elapsed"]
    print(json.dumps({**common, "metric": "cycles_per_s", "value": round(rate, 2), "unit": "cycles/s"}))


if __name__ == "__main__":
    main()
