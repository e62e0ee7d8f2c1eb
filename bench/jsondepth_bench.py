"""Microbenchmark: what the nesting-depth check (``kubeplane.api.jsondepth.too_deep``) adds to decoding a body.

Every JSON and protobuf body the API server decodes is checked once; this measures the check (``too_deep``:
orjson's encoder as the fast path) and the level walk it falls back to (``walk``) against the ``orjson.loads``
it follows, on a typical pod (the create path), on bodies near the 3 MiB limit (a pod with 100,000
args, a ConfigMap with 100,000 keys, a 250-deep fieldsV1) and on the slow path of a body orjson refuses as too
deep (``raw_too_deep``). Prints one JSON object per line:
``{"bench": "jsondepth", "metric": "<case>.<step>", "value": <us per op>, "unit": "us/op", "case", "bytes",
"quick"}``. Run: ``.venv/bin/python bench/jsondepth_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import timeit
from collections.abc import Callable
from typing import Any

import orjson

from kubeplane.api.jsondepth import MAX_DEPTH, ORJSON_MAX_DEPTH, raw_too_deep, too_deep


def _pod(**extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web", "tier": "front"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "nginx:1.27",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    "env": [{"name": "MODE", "value": "prod"}],
                }
            ],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                }
            },
        },
        **extra,
    }


def _nest(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"f:a": value}
    return value


def cases() -> dict[str, bytes]:
    many_args = _pod()
    many_args["spec"]["containers"][0]["args"] = ["a"] * 100_000
    deep = _pod()
    deep["metadata"]["managedFields"] = [{"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": _nest(MAX_DEPTH - 4)}]
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    configmap["data"] = {f"k{i}": "v" for i in range(100_000)}
    return {
        "typical-pod": orjson.dumps(_pod()),
        "pod-100000-args": orjson.dumps(many_args),
        "configmap-100000-keys": orjson.dumps(configmap),
        "pod-250-deep": orjson.dumps(deep),
    }


def _per_op(run: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(run, number=number, repeat=3)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    for case, raw in cases().items():
        number = 20 if len(raw) > 100_000 else 20_000
        number = max(1, number // 10) if args.quick else number
        value = orjson.loads(raw)
        steps = {
            "orjson.loads": lambda: orjson.loads(raw),  # noqa: B023
            "too_deep": lambda: too_deep(value),  # noqa: B023
            "walk": lambda: too_deep(value, ORJSON_MAX_DEPTH + 1),  # noqa: B023 - past orjson: the level walk alone
        }
        for step, run in steps.items():
            print(json.dumps({"bench": "jsondepth", "metric": f"{case}.{step}", "value": round(_per_op(run, number), 2),
                              "unit": "us/op", "case": case, "bytes": len(raw), "quick": args.quick}))  # fmt: skip
    refused = b'{"apiVersion":"v1","kind":"Pod","x":' + b"[" * 1100 + b"]" * 1100 + b"}"
    number = 20 if args.quick else 200
    print(json.dumps({"bench": "jsondepth", "metric": "orjson-refused-1100-deep.raw_too_deep",
                      "value": round(_per_op(lambda: raw_too_deep(refused), number), 2), "unit": "us/op",
                      "case": "orjson-refused-1100-deep", "bytes": len(refused), "quick": args.quick}))  # fmt: skip


if __name__ == "__main__":
    main()
