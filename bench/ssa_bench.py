"""Server-side apply and managedFields cost, in process (a Registry over the memory store, no HTTP).

Metrics (one JSON line each: {"bench": "ssa", "metric", "value", "unit", "quick"}):
* ``apply_per_s``: PATCH application/apply-patch+yaml of a Deployment with 4 containers (env, ports, volume
  mounts, resources: about 6 KB of JSON) through the dispatcher, alternating two replica counts so every apply
  changes the object (merge, field sets, conflict check, prune, managedFields encode, validation, store).
* ``update_us``, ``update_tracked_us``: one PUT of that Deployment changing ``spec.replicas``, without and with
  managedFields tracking (``Call.manager`` None vs a manager); their difference is within the noise of a shared
  machine, so the added cost is measured alone:
* ``track_update_us``: :func:`kubeplane.apiserver.fieldmanager.track_update` alone for that change (what
  managedFields add to each update of a Deployment owned by an applier and an updater);
  ``track_create_us``: the same for the create of that Deployment (its whole field set).

``--quick`` runs a few hundred writes. Run: ``.venv/bin/python bench/ssa_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import time
from typing import Any

from kubeplane.apiserver import fieldmanager
from kubeplane.apiserver.dispatch import Call, dispatch
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore


def emit(metric: str, value: float, unit: str, quick: bool) -> None:
    print(json.dumps({"bench": "ssa", "metric": metric, "value": round(value, 2), "unit": unit, "quick": quick}))


def deployment(replicas: int) -> dict[str, Any]:
    containers = [
        {
            "name": f"c{i}",
            "image": f"registry.example/app{i}:1.{i}",
            "ports": [{"containerPort": 8000 + i, "name": f"http{i}"}, {"containerPort": 9000 + i, "name": f"m{i}"}],
            "env": [{"name": f"VAR_{j}", "value": f"value-{j}"} for j in range(10)],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
            "volumeMounts": [{"name": f"v{i}", "mountPath": f"/data/{i}"}],
        }
        for i in range(4)
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "bench", "labels": {"app": "bench", "tier": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {"containers": containers, "volumes": [{"name": f"v{i}", "emptyDir": {}} for i in range(4)]},
            },
        },
    }


async def bench(quick: bool) -> None:
    n = 200 if quick else 2000
    registry = Registry(store=MemoryStore())
    await registry.start()
    deployments = registry.resource("apps", "deployments")
    bodies = [json.dumps(deployment(r)).encode() for r in (2, 3)]
    from kubeplane.apiserver.apply import decode_yaml

    start = time.perf_counter()
    for i in range(n):
        call = Call(
            "patch",
            deployments,
            "default",
            name="bench",
            body=decode_yaml(bodies[i % 2]),
            patch_type="application/apply-patch+yaml",
            manager="bench",
            field_manager_given=True,
        )
        await dispatch(registry, call)
    emit("apply_per_s", n / (time.perf_counter() - start), "applies/s", quick)

    results: dict[str, float] = {}
    for label, manager in (("update_us", None), ("update_tracked_us", "bench")):
        current = await registry.get(deployments, "default", "bench")
        start = time.perf_counter()
        for i in range(n):
            body = copy.deepcopy(current)
            body["spec"]["replicas"] = 2 + i % 2
            body["metadata"].pop("resourceVersion", None)
            current = (
                await dispatch(
                    registry, Call("update", deployments, "default", name="bench", body=body, manager=manager)
                )
            )[1]
        results[label] = (time.perf_counter() - start) / n * 1e6
        emit(label, results[label], "us/write", quick)

    live = await registry.get(deployments, "default", "bench")
    news = []
    for i in range(n):
        new = copy.deepcopy(live)
        new["spec"]["replicas"] = 10 + i
        news.append(new)
    start = time.perf_counter()
    for new in news:
        fieldmanager.track_update(deployments, live, new, "bench", now=0)
    emit("track_update_us", (time.perf_counter() - start) / n * 1e6, "us/write", quick)
    creates = [copy.deepcopy(deployment(1)) for _ in range(n)]
    start = time.perf_counter()
    for obj in creates:
        fieldmanager.track_update(deployments, None, obj, "bench", now=0)
    emit("track_create_us", (time.perf_counter() - start) / n * 1e6, "us/write", quick)
    await registry.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred writes")
    args = parser.parse_args()
    asyncio.run(bench(args.quick))


if __name__ == "__main__":
    main()
