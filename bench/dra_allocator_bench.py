"""DynamicResources through its scheduling-cycle points: pods with one DRA claim each, on N nodes with M devices.

Each pod's claim selects ``device.attributes["gpu.example.com"].model == "A100"`` (one device, ExactCount). Per pod:
PreFilter (allocator set up over every slice, class and allocated claim), Filter on every node, Reserve on the
first fitting node, then the allocation is written into the claim (what PreBind does through the API) so the next
pod sees the device in use. Pods are placed until the devices run out.

* ``pods_per_s``: pods through PreFilter + Filter(all nodes) + Reserve + write-back per second.
* ``filter_us``: mean microseconds of one Filter (one node's allocation attempt).

Prints one JSON object per line: ``{"bench": "dra_allocator", "metric", "value", "unit", "quick", "nodes",
"devices_per_node"}``. Run: ``PYTHONPATH=src .venv/bin/python bench/dra_allocator_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import dynamic_resources

DRIVER = "gpu.example.com"
SELECTOR = f'device.attributes["{DRIVER}"].model == "A100"'


def cluster(nodes: int, devices: int) -> tuple[list[NodeInfo], list[dict[str, Any]]]:
    infos = [NodeInfo({"metadata": {"name": f"node-{i}", "labels": {}}}) for i in range(nodes)]
    objects: list[dict[str, Any]] = [
        {"kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
    ]  # fmt: skip
    for i in range(nodes):
        objects.append(
            {
                "kind": "ResourceSlice",
                "metadata": {"name": f"node-{i}-{DRIVER}"},
                "spec": {
                    "driver": DRIVER,
                    "nodeName": f"node-{i}",
                    "pool": {"name": f"node-{i}", "generation": 1, "resourceSliceCount": 1},
                    "devices": [
                        {"name": f"gpu-{d}", "attributes": {"model": {"string": "A100"}, "index": {"int": d}}}
                        for d in range(devices)
                    ],
                },
            }
        )
    return infos, objects


def claim(i: int) -> dict[str, Any]:
    request = {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1,
               "selectors": [{"cel": {"expression": SELECTOR}}]}  # fmt: skip
    return {
        "kind": "ResourceClaim",
        "metadata": {"name": f"claim-{i}", "namespace": "default", "uid": f"claim-{i}"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": request}]}},
    }


def run(nodes: int, devices: int, pods: int) -> tuple[float, float]:
    infos, objects = cluster(nodes, devices)
    by_kind: dict[str, list[dict[str, Any]]] = {}

    def list_objects(plural: str, namespace: str) -> list[dict[str, Any]]:
        return by_kind.get(plural, [])

    for o in objects:
        by_kind.setdefault(o["kind"].lower() + ("es" if o["kind"] == "DeviceClass" else "s"), []).append(o)
    plugin = dynamic_resources.new({}, Handle(list_objects=list_objects))
    filters = 0
    filter_time = 0.0
    t0 = time.perf_counter()
    for i in range(pods):
        c = claim(i)
        by_kind.setdefault("resourceclaims", []).append(c)
        pod = PodInfo({"metadata": {"name": f"p-{i}", "namespace": "default", "uid": f"p-{i}"},
                       "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": f"claim-{i}"}]}})  # fmt: skip
        state = CycleState()
        plugin.pre_filter(state, pod, infos)
        chosen = None
        for info in infos:
            f0 = time.perf_counter()
            status = plugin.filter(state, pod, info)
            filter_time += time.perf_counter() - f0
            filters += 1
            if status is None and chosen is None:
                chosen = info.name
        if chosen is None:
            raise SystemExit(f"pod {i} did not fit: the bench sizes pods to the devices")
        plugin.reserve(state, pod, chosen)
        data = state.get(dynamic_resources.STATE_KEY)
        assert isinstance(data, dynamic_resources.StateData)
        c["status"] = {"allocation": data.allocations[0]}
        plugin.unreserve(state, pod, chosen)  # the write-back replaces the in-flight entry
    elapsed = time.perf_counter() - t0
    return pods / elapsed, filter_time / filters * 1e6


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    shapes = [(10, 8, 40)] if args.quick else [(10, 8, 80), (100, 8, 400)]
    for nodes, devices, pods in shapes:
        rate, filter_us = run(nodes, devices, pods)
        extra = {"quick": args.quick, "nodes": nodes, "devices_per_node": devices}
        print(json.dumps({"bench": "dra_allocator", "metric": "pods_per_s", "value": round(rate, 2), "unit": "1/s",
                          **extra}))  # fmt: skip
        print(json.dumps({"bench": "dra_allocator", "metric": "filter_us", "value": round(filter_us, 1), "unit": "us",
                          **extra}))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
