"""Opportunistic batching's effect on the scheduling cycle alone: a stream of identical pods that fill one node each
(nodes with ``pods: 1``), scheduled one after another as the scheduler does (snapshot update, cycle, assume), with
no API server in the loop.

Three modes, each printing ``cycle_us`` (mean wall time per pod) and ``full_cycles`` (pods that ran Filter and Score
over the search window; the others were bound to their hint):

* ``off``: gate OpportunisticBatching off, today's cycle;
* ``v1_37_defaults``: gate on with v1.37's signers: NodeResourcesFit refuses every pod while DRAExtendedResource is
  on (GA, locked), so no pod is ever hinted: the figure is the cost of signing;
* ``signable``: gate on, the profile's PodTopologySpread defaulting ``List`` and the signer told DRAExtendedResource
  is off, so that every pod after the first full cycle takes its hint (what batching saves where it applies).

Run: ``PYTHONPATH=$PWD/src .venv/bin/python bench/batch_bench.py [--nodes 5000] [--pods 2000] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.cache import Cache
from kubeplane.scheduler.backend.snapshot import Snapshot
from kubeplane.scheduler.batch import OpportunisticBatch
from kubeplane.scheduler.config import default_config, parse_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.schedule_one import SchedulingCycle
from kubeplane.scheduler.signature import PodSigner

LIST_DEFAULTING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}]}],
}


def _node(i: int) -> dict[str, Any]:
    cap = {"cpu": "4", "memory": "32Gi", "pods": "1"}
    return {
        "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
        "status": {"capacity": cap, "allocatable": cap},
    }


def _pod(i: int) -> PodInfo:
    req = {"cpu": "900m", "memory": "3Gi"}
    spec = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": req}}]}
    return PodInfo({"metadata": {"name": f"p{i}", "namespace": "default", "uid": f"u{i}"}, "spec": spec})


def run(mode: str, nodes: int, pods: int) -> dict[str, float]:
    cache = Cache(FakeClock())
    for i in range(nodes):
        cache.add_node(_node(i))
    snapshot = Snapshot()
    config = parse_config(LIST_DEFAULTING) if mode == "signable" else default_config()
    fwk = build_profiles(config, Handle(snapshot_lister=snapshot))["default-scheduler"]
    cycle = SchedulingCycle(rng=random.Random(1))
    count = [0]
    batch = None
    if mode != "off":
        gates = {"DRAExtendedResource": False} if mode == "signable" else None
        batch = OpportunisticBatch(fwk, PodSigner(fwk, gates), FakeClock())
        cycle.enable_batching({"default-scheduler": batch}, lambda: count[0])
    elapsed = 0.0
    for i in range(pods):
        count[0] += 1
        pod = _pod(i)
        start = time.perf_counter()
        cache.update_snapshot(snapshot)
        result = cycle.schedule(fwk, CycleState(), pod, snapshot.list(), snapshot.node_table)
        cache.assume_pod(pod.with_node_name(result.suggested_host))
        elapsed += time.perf_counter() - start
    batched = batch.batched_pods if batch is not None else 0
    return {"cycle_us": elapsed / pods * 1e6, "batched_pct": 100.0 * batched / pods}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    nodes, pods = (300, 100) if args.quick else (args.nodes, args.pods)
    for mode in ("off", "v1_37_defaults", "signable"):
        out = run(mode, nodes, pods)
        common = {"bench": "batch", "mode": mode, "nodes": nodes, "pods": pods, "quick": args.quick}
        print(json.dumps({**common, "metric": "cycle_us", "value": round(out["cycle_us"], 1), "unit": "us"}))
        full = pods - round(out["batched_pct"] * pods / 100)  # at least the first pod runs the full cycle
        print(json.dumps({**common, "metric": "full_cycles", "value": full, "unit": "pods"}))


if __name__ == "__main__":
    main()
