"""``kubeplane explain`` / ``--what-if`` and the web UI's pod view on a big cluster: N nodes (32 CPUs) and P pods
bound round-robin (every 50th Pending with a nodeSelector nothing matches: it fits nowhere, so what-if runs), the
shapes of ``bench/ui_cluster.py``, evaluated from plain objects in this process (no API, no lists).

Figures (JSON lines ``{"bench": "explain", "metric", "value", "unit", "quick", "nodes", "pods"}``), each in
seconds: ``bound_cold`` / ``bound_warm`` (a Running pod's cycle, first with an empty PodInfoMemo, then with the
memo the previous request left, as the UI's second pod view finds it), ``pending_cold`` / ``pending_warm`` (a
Pending pod's cycle and preemption dry run), ``what_if_warm`` (its verified suggestions), and ``what_if_no_memo``
(what-if as ``kubeplane explain --what-if`` runs it: its own memo, derived snapshots).

Run: ``PYTHONPATH=src .venv/bin/python bench/explain_bench.py [--quick]`` (--quick: 500 nodes / 5,000 pods).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from kubeplane.scheduler.backend.podinfo_memo import PodInfoMemo
from kubeplane.scheduler.explain import explain
from kubeplane.scheduler.whatif import what_if
from ui_cluster import node_body, pod_body


def cluster(nodes: int, pods: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    node_objs = [node_body(i) for i in range(nodes)]
    pod_objs = []
    for i in range(pods):
        body, phase = pod_body(i, nodes)
        body["metadata"].update(uid=f"uid-{i}", resourceVersion=str(100 + i))
        body["spec"]["priority"] = 0
        body["status"] = {"phase": phase or "Pending"}
        pod_objs.append(body)
    return node_objs, pod_objs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, p = (500, 5000) if args.quick else (5000, 50000)
    nodes, pods = cluster(n, p)
    pending, bound = pods[0], pods[1]
    others = [x for x in pods if x is not bound]
    placed = pods[1:]
    memo = PodInfoMemo()
    figures: dict[str, float] = {}

    def timed(name: str, call: Any) -> None:
        start = time.perf_counter()
        call()
        figures[name] = time.perf_counter() - start

    for phase in ("cold", "warm"):
        memo.rotate()
        timed(f"bound_{phase}", lambda: explain(bound, nodes=nodes, pods=others, memo=memo))
        memo.rotate()
        timed(f"pending_{phase}", lambda: explain(pending, nodes=nodes, pods=placed, memo=memo))
        if phase == "warm":
            timed("what_if_warm", lambda: what_if(pending, nodes=nodes, pods=placed, memo=memo))
    timed("what_if_no_memo", lambda: what_if(pending, nodes=nodes, pods=placed))
    for name, value in figures.items():
        line = {"bench": "explain", "metric": name, "value": round(value, 3), "unit": "s", "quick": args.quick}
        print(json.dumps({**line, "nodes": n, "pods": p}))


if __name__ == "__main__":
    main()
