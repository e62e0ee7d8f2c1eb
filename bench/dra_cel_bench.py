"""DRA CEL device selectors on cel-python: what compiling and matching a selector costs.

* ``compile_ms``: :func:`kubeplane.api.dra.cel.compile_selector` of the issue's selector with the cache cleared
  (parse, declaration checks, cost estimate, program), the work the cache saves afterwards.
* ``model_evals_per_s``: interpreted evaluations per second of
  ``device.attributes["gpu.example.com"].model == "A100"`` on one device whose CEL value
  is already built (the allocator's inner loop: one device, many selectors).
* ``quantity_evals_per_s``: the same for ``device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi"))
  >= 0`` (a library call and a quantity parse per evaluation).
* ``device_evals_per_s``: the model selector on fresh devices (the device's CEL value built each time).
* ``memo_evals_per_s``: the model selector again on one device, its verdict memoised on the device (what the
  allocator pays from the second pod on).

Prints one JSON object per line: ``{"bench": "dra_cel", "metric", "value", "unit", "quick"}``. Run:
``PYTHONPATH=src .venv/bin/python bench/dra_cel_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from kubeplane.api.dra import cel

MODEL = 'device.attributes["gpu.example.com"].model == "A100"'
QUANTITY = 'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'


def emit(metric: str, value: float, unit: str, quick: bool) -> None:
    print(json.dumps({"bench": "dra_cel", "metric": metric, "value": round(value, 3), "unit": unit, "quick": quick}))


def device(i: int) -> cel.DeviceView:
    return cel.DeviceView.from_api(
        "gpu.example.com",
        {
            "name": f"gpu-{i}",
            "attributes": {"model": {"string": "A100"}, "index": {"int": i}, "driverVersion": {"version": "1.2.0"}},
            "capacity": {"memory": {"value": "80Gi"}},
        },
    )


def rate(selector: cel.CompiledSelector, devices: list[cel.DeviceView], *, memo: bool = False) -> float:
    """Evaluations per second; without ``memo`` each one interprets the selector (the verdict cache bypassed)."""
    limit = cel.CEL_SELECTOR_EXPRESSION_MAX_COST
    t0 = time.perf_counter()
    for d in devices:
        if memo:
            selector.evaluate(d)
        else:
            selector._evaluate(d, limit)
    return len(devices) / (time.perf_counter() - t0)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    n = 300 if args.quick else 5000
    rounds = 3 if args.quick else 20
    t0 = time.perf_counter()
    for _ in range(rounds):
        cel._compile.cache_clear()
        cel.compile_selector(MODEL)
    emit("compile_ms", (time.perf_counter() - t0) * 1000 / rounds, "ms", args.quick)
    one = device(0)
    one.cel_value()
    emit("model_evals_per_s", rate(cel.compile_selector(MODEL), [one] * n), "1/s", args.quick)
    emit("quantity_evals_per_s", rate(cel.compile_selector(QUANTITY), [one] * n), "1/s", args.quick)
    emit("device_evals_per_s", rate(cel.compile_selector(MODEL), [device(i) for i in range(n)]), "1/s", args.quick)
    emit("memo_evals_per_s", rate(cel.compile_selector(MODEL), [one] * n * 10, memo=True), "1/s", args.quick)


if __name__ == "__main__":
    main(sys.argv[1:])
