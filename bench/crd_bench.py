"""Custom resources: creates per second through the registry, and the cost of the schema work per object.

In process (no HTTP: the bench measures kubeplane's code, not the transport), over a memory store:

* ``cr_creates_per_s``: ``Registry.create`` of CronTab custom resources (prune, default, validate against a
  structural schema with a pattern, bounds and a nested list, then store), and ``configmap_creates_per_s``, the
  same loop for ConfigMaps as the baseline of a built-in kind without that work.
* ``cr_list_items_per_s``: custom resources listed per second through ``list_objects`` (each item read as
  upstream's CRD storage codec reads it: pruned and defaulted with its stored version's schema).
* ``validate_us``, ``prune_us``, ``default_us``: microseconds per object of :func:`kubeplane.api.crd.values.
  validate_value`, :func:`kubeplane.api.crd.prune.prune` and ``apply_defaults`` (with a deep copy of the
  object, which dominates) on the same object.

Prints one JSON object per line: ``{"bench": "crd", "metric", "value", "unit", "quick"}``. Run:
``.venv/bin/python bench/crd_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import sys
import time
import timeit
from typing import Any

from kubeplane.api.crd.prune import apply_defaults, prune
from kubeplane.api.crd.values import validate_value
from kubeplane.apiserver import crds
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["cronSpec"],
            "properties": {
                "cronSpec": {"type": "string", "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$"},
                "image": {"type": "string", "maxLength": 253},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
                "mode": {"type": "string", "enum": ["Allow", "Forbid", "Replace"], "default": "Allow"},
                "env": {
                    "type": "array",
                    "maxItems": 64,
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    },
}
CRD: dict[str, Any] = {
    "metadata": {"name": "crontabs.stable.example.com"},
    "spec": {
        "group": "stable.example.com",
        "scope": "Namespaced",
        "names": {"plural": "crontabs", "kind": "CronTab"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": SCHEMA},
                "subresources": {"status": {}},
            }
        ],
    },
}
OBJECT: dict[str, Any] = {
    "apiVersion": "stable.example.com/v1",
    "kind": "CronTab",
    "metadata": {"name": "c", "labels": {"app": "bench"}},
    "spec": {
        "cronSpec": "*/5 * * * *",
        "image": "registry.example.com/cron:1.2.3",
        "env": [{"name": f"E{i}", "value": str(i)} for i in range(8)],
        "labels": {"team": "a", "tier": "b"},
        "unknown": "pruned",
    },
}


def emit(metric: str, value: float, unit: str, quick: bool) -> None:
    line = {"bench": "crd", "metric": metric, "value": round(value, 2), "unit": unit, "quick": quick}
    print(json.dumps(line))
    sys.stdout.flush()


async def creates(count: int) -> tuple[float, float, float]:
    registry = Registry(store=MemoryStore())
    await registry.start()
    try:
        crd_info = registry.resource("apiextensions.k8s.io", "customresourcedefinitions")
        await registry.create(crd_info, None, copy.deepcopy(CRD))
        await crds.controller_of(registry).sync("crontabs.stable.example.com")
        cr = registry.resource("stable.example.com", "crontabs")
        cm = registry.resource("", "configmaps")
        start = time.perf_counter()
        for i in range(count):
            body = copy.deepcopy(OBJECT)
            body["metadata"]["name"] = f"c{i}"
            await registry.create(cr, "default", body)
        cr_rate = count / (time.perf_counter() - start)
        start = time.perf_counter()
        for i in range(count):
            await registry.create(cm, "default", {"metadata": {"name": f"m{i}"}, "data": {"a": "b"}})
        cm_rate = count / (time.perf_counter() - start)
        from kubeplane.apiserver.listing import ListOptions, list_objects

        start = time.perf_counter()
        listed = len((await list_objects(registry, cr, "default", ListOptions()))["items"])
        list_rate = listed / (time.perf_counter() - start)
        return cr_rate, cm_rate, list_rate
    finally:
        await registry.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    count = 500 if args.quick else 5000
    cr_rate, cm_rate, list_rate = asyncio.run(creates(count))
    emit("cr_creates_per_s", cr_rate, "ops/s", args.quick)
    emit("configmap_creates_per_s", cm_rate, "ops/s", args.quick)
    emit("cr_list_items_per_s", list_rate, "items/s", args.quick)
    pruned, _ = prune(OBJECT, SCHEMA)
    apply_defaults(pruned, SCHEMA)
    number = 500 if args.quick else 5000
    for metric, fn in (
        ("validate_us", lambda: validate_value(pruned, SCHEMA)),
        ("prune_us", lambda: prune(OBJECT, SCHEMA)),
        ("default_us", lambda: apply_defaults(copy.deepcopy(pruned), SCHEMA)),
    ):
        seconds = min(timeit.repeat(fn, number=number, repeat=3)) / number
        emit(metric, seconds * 1e6, "us/op", args.quick)


if __name__ == "__main__":
    main()
