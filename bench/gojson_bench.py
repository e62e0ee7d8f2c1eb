"""What Go-compatible response bytes cost: ``http/gojson.encode`` (orjson, then Go's HTML escaping and the trailing
newline) against plain ``orjson.dumps``, on a list of pods like the API server's list responses.

Prints one JSON object per line: {"bench": "gojson", "metric", "value", "unit", "items", "escaped"}. ``escaped``
says whether the pods carry a character Go escapes (``&`` in an annotation), which makes the replacement run.
``--quick`` uses 1,000 pods and fewer rounds. Run: ``PYTHONPATH=src .venv/bin/python bench/gojson_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import orjson

from kubeplane.apiserver.http import gojson


def pods(count: int, *, escaped: bool) -> dict[str, Any]:
    note = "a&b <c>" if escaped else "plain"
    items = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "namespace": "default", "annotations": {"note": note}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "resources": {"requests": {"cpu": "100m"}}}]},
            "status": {"phase": "Running", "podIP": f"10.0.{i // 250}.{i % 250}"},
        }
        for i in range(count)
    ]
    return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items}


def per_second(encode: Any, doc: dict[str, Any], rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        encode(doc)
    return rounds / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    count, rounds = (1000, 50) if args.quick else (5000, 200)
    for escaped in (False, True):
        doc = pods(count, escaped=escaped)
        for metric, encode in (("orjson_lists_per_s", orjson.dumps), ("gojson_lists_per_s", gojson.encode)):
            value = per_second(encode, doc, rounds)
            line = {"bench": "gojson", "metric": metric, "value": round(value, 1), "unit": "1/s"}
            print(json.dumps({**line, "items": count, "escaped": escaped, "quick": args.quick}))


if __name__ == "__main__":
    main()
