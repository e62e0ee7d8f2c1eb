"""Microbenchmark: reading pod and node fields through ``kubeplane.api.views`` against the inline ``.get`` chains.

Each case reads the same fields of the same dict three ways: the inline chain the components used to write
(``(pod.get("spec") or {}).get("nodeName")``), the plain accessor functions (``name_of(pod)``) and the views
(``PodView(pod).node_name``, one wrap per object, then several properties). Prints one JSON object per line:
``{"bench": "views", "metric": "<case>.<style>", "value": <ns per op>, "unit": "ns/op", "case", "style", "quick"}``.
Run: ``.venv/bin/python bench/views_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import timeit
from collections.abc import Callable
from typing import Any

from kubeplane.api.views import NodeView, PodView, name_of, namespace_of, spec_of, status_of

POD: dict[str, Any] = {
    "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "a"}},
    "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
    "status": {"phase": "Running", "conditions": [{"type": "PodScheduled"}, {"type": "Ready", "status": "True"}]},
}
NODE: dict[str, Any] = {
    "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z"}},
    "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
    "status": {"conditions": [{"type": "MemoryPressure"}, {"type": "Ready", "status": "True"}]},
}


def _inline_one(pod: dict[str, Any]) -> object:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _accessor_one(pod: dict[str, Any]) -> object:
    return spec_of(pod).get("nodeName") or ""


def _view_one(pod: dict[str, Any]) -> object:
    return PodView(pod).node_name


def _inline_pod(pod: dict[str, Any]) -> object:
    meta = pod.get("metadata") or {}
    ready = False
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            ready = c.get("status") == "True"
            break
    return (
        meta.get("name") or "",
        meta.get("namespace") or "",
        (pod.get("spec") or {}).get("nodeName") or "",
        (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"),
        ready,
    )


def _accessor_pod(pod: dict[str, Any]) -> object:
    ready = False
    for c in status_of(pod).get("conditions") or ():
        if c.get("type") == "Ready":
            ready = c.get("status") == "True"
            break
    return (
        name_of(pod),
        namespace_of(pod),
        spec_of(pod).get("nodeName") or "",
        status_of(pod).get("phase") in ("Succeeded", "Failed"),
        ready,
    )


def _view_pod(pod: dict[str, Any]) -> object:
    view = PodView(pod)
    meta = view.meta
    return meta.name, meta.namespace, view.node_name, view.is_terminal, view.is_ready


def _inline_node(node: dict[str, Any]) -> object:
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or ()
    )
    return (
        (node.get("metadata") or {}).get("name") or "",
        bool((node.get("spec") or {}).get("unschedulable")),
        (node.get("spec") or {}).get("taints") or (),
        ready,
    )


def _view_node(node: dict[str, Any]) -> object:
    view = NodeView(node)
    return view.name, view.unschedulable, view.taints, view.is_ready


CASES: dict[str, tuple[dict[str, Any], dict[str, Callable[[dict[str, Any]], object]]]] = {
    "pod.node_name": (POD, {"inline": _inline_one, "accessor": _accessor_one, "view": _view_one}),
    "pod.five_fields": (POD, {"inline": _inline_pod, "accessor": _accessor_pod, "view": _view_pod}),
    "node.four_fields": (NODE, {"inline": _inline_node, "view": _view_node}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    number = 50_000 if args.quick else 500_000
    for case, (obj, styles) in CASES.items():
        for style, fn in styles.items():
            best = min(timeit.repeat(functools.partial(fn, obj), number=number, repeat=5))
            row = {
                "bench": "views",
                "metric": f"{case}.{style}",
                "value": round(best / number * 1e9, 1),
                "unit": "ns/op",
                "case": case,
                "style": style,
                "quick": args.quick,
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
