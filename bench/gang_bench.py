"""Gangs scheduled per second: PodGroups of minCount N, each with N pods, through the real Scheduler with the
GangScheduling plugin over an in-memory API server (PreEnqueue, Permit waits, the quorum's allow, binding).

Prints one JSON line: {"bench": "gang", "metric": "gangs_per_s", ...}. ``--quick`` runs a small count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time

from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import parse_config
from kubeplane.scheduler.scheduler import Scheduler

CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}}],
}


async def run(gangs: int, size: int, nodes: int) -> dict[str, object]:
    client = await LocalClient.in_memory()
    cap = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    for i in range(nodes):
        node = {"metadata": {"name": f"n{i}"}, "status": {"capacity": cap, "allocatable": cap}}
        await client.create(client.resource("nodes"), node)
    scheduler = Scheduler(client, config=parse_config(CONFIG), rng=random.Random(1))
    task = asyncio.ensure_future(scheduler.run())
    start = time.perf_counter()
    for g in range(gangs):
        pg = {"metadata": {"name": f"g{g}"}, "spec": {"schedulingPolicy": {"gang": {"minCount": size}}}}
        await client.create(client.resource("podgroups"), pg, namespace="default")
        for i in range(size):
            pod = {
                "metadata": {"name": f"g{g}-{i}"},
                "spec": {
                    "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}}}],
                    "schedulingGroup": {"podGroupName": f"g{g}"},
                },
            }
            await client.create(client.resource("pods"), pod, namespace="default")
    total = gangs * size
    deadline = time.perf_counter() + 120
    while scheduler.scheduled < total and time.perf_counter() < deadline:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - start
    await scheduler.stop()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return {"scheduled_pods": scheduler.scheduled, "elapsed": elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    gangs, size, nodes = (10, 4, 5) if args.quick else (100, 8, 50)
    result = asyncio.run(run(gangs, size, nodes))
    elapsed = float(str(result["elapsed"]))
    line = {
        "bench": "gang",
        "metric": "gangs_per_s",
        "value": round(gangs / elapsed, 2) if elapsed else 0.0,
        "unit": "gangs/s",
        "quick": args.quick,
        "gangs": gangs,
        "gang_size": size,
        "nodes": nodes,
        "scheduled_pods": result["scheduled_pods"],
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
