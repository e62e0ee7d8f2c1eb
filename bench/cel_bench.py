"""CRD ``x-kubernetes-validations``: what a CEL rule costs with cel-python, compiled and evaluated.

* ``compile_ms``: parsing and building one rule's program (:func:`kubeplane.api.crd.cel.compile_expression`
  with its cache cleared), the work the cache saves on every request after the first.
* ``validate_us``: microseconds to evaluate a custom resource's three rules (two on ``spec``, one transition
  rule on ``spec.replicas`` with an old object), :func:`kubeplane.api.crd.cel.validate`, programs cached.

Prints one JSON object per line: ``{"bench": "cel", "metric", "value", "unit", "quick"}``. Run:
``.venv/bin/python bench/cel_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from kubeplane.api.crd import cel

RULES = [
    "self.replicas <= self.maxReplicas",
    "self.ports.all(p, p > 0 && p < 65536) && size(self.ports) <= 16",
    "!has(self.mode) || self.mode in ['Fast', 'Slow']",
]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [{"rule": r} for r in RULES[:2]],
            "properties": {
                "replicas": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]},
                "maxReplicas": {"type": "integer"},
                "ports": {"type": "array", "items": {"type": "integer"}},
                "mode": {"type": "string"},
            },
        }
    },
}
OBJ: dict[str, Any] = {
    "apiVersion": "x.example.com/v1",
    "kind": "Widget",
    "metadata": {"name": "w"},
    "spec": {"replicas": 2, "maxReplicas": 5, "ports": [80, 443, 8080], "mode": "Fast"},
}


def emit(metric: str, value: float, unit: str, quick: bool) -> None:
    print(json.dumps({"bench": "cel", "metric": metric, "value": round(value, 3), "unit": unit, "quick": quick}))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 30
    t0 = time.perf_counter()
    for _ in range(rounds):
        for rule in RULES:
            cel.compile_expression.cache_clear()
            cel.compile_expression(rule)
    emit("compile_ms", (time.perf_counter() - t0) * 1000 / (rounds * len(RULES)), "ms", args.quick)
    n = 50 if args.quick else 2000
    assert cel.validate(OBJ, SCHEMA, OBJ) == []
    t0 = time.perf_counter()
    for _ in range(n):
        cel.validate(OBJ, SCHEMA, OBJ)
    emit("validate_us", (time.perf_counter() - t0) * 1e6 / n, "us", args.quick)


if __name__ == "__main__":
    main(sys.argv[1:])
