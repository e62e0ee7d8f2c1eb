"""StatefulSet controller: pods per second created for N StatefulSets.

In-process (the API server behind ``LocalClient.in_memory``), the ``statefulset`` controller of
``kubeplane.controllers`` on the system clock. N sets of R replicas are created at once; the bench measures:

* ``parallel_pods_per_s``: with ``podManagementPolicy: Parallel``, N*R pods created (all at once per set, in
  slow-start batches) divided by the wall time until every pod exists.
* ``ordered_pods_per_s``: with OrderedReady, a stand-in kubelet marks each new pod Running and Ready as soon as
  it appears, so each set grows one pod per round trip (create, observe, ready, observe); N*R divided by the wall
  time until every pod is Ready.
* ``revisions``: ControllerRevisions at the end (one per set).

Prints one JSON object per line: {"bench": "statefulset", "metric", "value", "unit", "sets", "replicas",
"quick"}. ``--quick`` uses 4 sets of 5 replicas (default 20 of 20). Run:
``PYTHONPATH=src .venv/bin/python bench/statefulset_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from typing import Any

from kubeplane.api.meta import format_time
from kubeplane.client.clock import SystemClock
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.local import LocalClient
from kubeplane.controllers.base import ControllerContext
from kubeplane.controllers.statefulset import StatefulSetController

NS = "default"
LIMIT_S = 300.0


def emit(metric: str, value: float, unit: str, sets: int, replicas: int, quick: bool) -> None:
    line = {"bench": "statefulset", "metric": metric, "value": round(value, 3), "unit": unit}
    print(json.dumps({**line, "sets": sets, "replicas": replicas, "quick": quick}))
    sys.stdout.flush()


def statefulset(name: str, replicas: int, policy: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


async def run(policy: str, sets: int, replicas: int) -> tuple[float, int]:
    client = await LocalClient.in_memory()
    clock = SystemClock()
    ctx = ControllerContext(
        client=client, informers=SharedInformerFactory(client, clock=clock, rng=random.Random(0)), clock=clock
    )
    controller = StatefulSetController(ctx)
    ctx.informers.start()
    await ctx.informers.wait_for_cache_sync()
    task = asyncio.create_task(controller.run())
    pods = client.resource("pods")
    total = sets * replicas
    try:
        start = time.monotonic()
        for i in range(sets):
            await client.create(client.resource("statefulsets"), statefulset(f"s{i}", replicas, policy), namespace=NS)
        while True:
            items = (await client.list(pods, namespace=NS))["items"]
            ready = 0
            for pod in items:
                conditions = (pod.get("status") or {}).get("conditions") or []
                if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                    ready += 1
                elif policy == "OrderedReady":
                    now = format_time(time.time())
                    cond = {"type": "Ready", "status": "True", "lastTransitionTime": now}
                    pod["status"] = {**pod.get("status", {}), "phase": "Running", "conditions": [cond]}
                    await client.update(pods, pod, namespace=NS, subresource="status")
            done = ready if policy == "OrderedReady" else len(items)
            if done >= total:
                break
            if time.monotonic() - start > LIMIT_S:
                raise SystemExit(f"timed out: {done}/{total}")
            await asyncio.sleep(0.005)
        elapsed = time.monotonic() - start
        revisions = len((await client.list(client.resource("controllerrevisions"), namespace=NS))["items"])
        return elapsed, revisions
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.sleep(0)
        await ctx.informers.stop()
        await ctx.close()
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 sets of 5 replicas")
    parser.add_argument("--sets", type=int, default=20)
    parser.add_argument("--replicas", type=int, default=20)
    args = parser.parse_args()
    sets, replicas = (4, 5) if args.quick else (args.sets, args.replicas)
    total = sets * replicas
    elapsed, _ = asyncio.run(run("Parallel", sets, replicas))
    emit("parallel_pods_per_s", total / elapsed, "pods/s", sets, replicas, args.quick)
    elapsed, revisions = asyncio.run(run("OrderedReady", sets, replicas))
    emit("ordered_pods_per_s", total / elapsed, "pods/s", sets, replicas, args.quick)
    emit("revisions", revisions, "count", sets, replicas, args.quick)


if __name__ == "__main__":
    main()
