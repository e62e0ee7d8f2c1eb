"""The API server's per-pod writes over the local transport: pod create, pods/binding, the Scheduled event,
the kubelet's status writes.

What scheduler_perf pays the API server for each pod, measured alone: creates of upstream's ``pod-default``
(scheduler_perf's template: one pause container, 100m / 500Mi requested and limited) with ``generateName``,
the binding of each, and one ``Scheduled`` Event each through the scheduler's ``EventRecorder`` (correlator
included); then what a kubelet writes for each (``kubelet/status_manager.py``): three strategic merge patches
of ``pods/status`` -- sandbox ready, containers running, all exited 0 (``status_per_s`` is writes per second).
Each phase runs twice in the same process, with the shape memos of :mod:`kubeplane.api.shapes` on
(``memo=on``, the server's path) and off (``memo=off``, every step computed), in alternating rounds so that the
shared machine's load hits both alike. Prints one JSON object per line:
``{"bench": "pod_writes", "metric": "<phase>_per_s", "value", "unit": "ops/s", "memo", "pods", "quick"}`` and
``"metric": "<phase>_speedup"`` (on over off), and ``"metric": "<phase>_cpu_us"``, the process's CPU time per
operation with the memos on (what a write costs whatever else runs on a shared machine). Run:
``.venv/bin/python bench/pod_writes_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from kubeplane.api.shapes import ShapeMemo
from kubeplane.client.clock import SystemClock
from kubeplane.client.events import EventRecorder
from kubeplane.client.interface import PatchType
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.runtime import PodRuntime

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "pod-"},
    "spec": {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "500Mi"},
                    "limits": {"cpu": "100m", "memory": "500Mi"},
                },
            }
        ]
    },
}


def _advance(rt: PodRuntime, step: int, i: int) -> None:
    """The pod's next state as the kubelet's pod workers set it (``kubelet/pod_workers.py``)."""
    if step == 0:
        rt.sandbox_ready = True
        rt.pod_ip = f"10.1.{i // 250}.{i % 250 + 2}"
    elif step == 1:
        for c in rt.containers:
            c.start(rt.uid, 2.0)
        rt.phase = "Running"
    else:
        for c in rt.containers:
            c.terminate(0, 3.0)
        rt.phase = "Succeeded"


async def _round(pods: int, namespace: str, cpu: dict[str, float]) -> dict[str, float]:
    """One round on a fresh registry: seconds per phase (CPU seconds per phase added to ``cpu``)."""
    client = await LocalClient.in_memory()
    try:
        resource = client.resource("pods")
        await client.create(client.resource("namespaces"), {"metadata": {"name": namespace}})
        recorder = EventRecorder(client, component="default-scheduler", clock=SystemClock())
        created: list[dict[str, Any]] = []
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(pods):
            created.append(await client.create(resource, POD, namespace=namespace))
        create = time.perf_counter() - start
        cpu["create"] = cpu.get("create", 0.0) + time.process_time() - cpu_start
        start, cpu_start = time.perf_counter(), time.process_time()
        for pod in created:
            name = pod["metadata"]["name"]
            binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": "node-1"}}
            await client.create(resource, binding, namespace=namespace, subresource="binding", name=name)
        bind = time.perf_counter() - start
        cpu["bind"] = cpu.get("bind", 0.0) + time.process_time() - cpu_start
        start, cpu_start = time.perf_counter(), time.process_time()
        for pod in created:
            recorder.record(pod, "Normal", "Scheduled", f"Successfully assigned {namespace}/x to node-1")
            await recorder.flush()
        event = time.perf_counter() - start
        cpu["event"] = cpu.get("event", 0.0) + time.process_time() - cpu_start
        await recorder.close()
        runtimes = [PodRuntime.for_pod(pod, "10.0.0.1", 0.0) for pod in created]
        start, cpu_start = time.perf_counter(), time.process_time()
        for step in range(3):  # the kubelet's status writes: sandbox up, containers running, all exited 0
            for i, rt in enumerate(runtimes):
                _advance(rt, step, i)
                patch = rt.status_patch(float(step + 1))
                await client.patch(
                    resource, rt.name, patch, patch_type=PatchType.STRATEGIC, namespace=namespace, subresource="status"
                )
        status = (time.perf_counter() - start) / 3
        cpu["status"] = cpu.get("status", 0.0) + (time.process_time() - cpu_start) / 3
        return {"create": create, "bind": bind, "event": event, "status": status}
    finally:
        await client.close()


async def bench(pods: int, rounds: int, quick: bool) -> None:
    totals: dict[tuple[str, bool], float] = {}
    cpu: dict[str, float] = {}
    for i in range(rounds):
        for memo in (True, False) if i % 2 == 0 else (False, True):
            ShapeMemo.enabled = memo
            spent: dict[str, float] = {}
            for phase, seconds in (await _round(pods, f"bench-{i}", spent)).items():
                totals[phase, memo] = totals.get((phase, memo), 0.0) + seconds
            if memo:
                for phase, seconds in spent.items():
                    cpu[phase] = cpu.get(phase, 0.0) + seconds
    ShapeMemo.enabled = True
    for phase in ("create", "bind", "event", "status"):
        rates = {memo: pods * rounds / totals[phase, memo] for memo in (True, False)}
        for memo, rate in rates.items():
            print(
                json.dumps(
                    {
                        "bench": "pod_writes",
                        "metric": f"{phase}_per_s",
                        "value": round(rate, 1),
                        "unit": "ops/s",
                        "memo": "on" if memo else "off",
                        "pods": pods,
                        "quick": quick,
                    }
                )
            )
        cpu_us = cpu[phase] / (pods * rounds) * 1e6
        print(
            json.dumps(
                {
                    "bench": "pod_writes",
                    "metric": f"{phase}_cpu_us",
                    "value": round(cpu_us, 1),
                    "unit": "us",
                    "memo": "on",
                    "pods": pods,
                    "quick": quick,
                }
            )
        )
        print(
            json.dumps(
                {
                    "bench": "pod_writes",
                    "metric": f"{phase}_speedup",
                    "value": round(rates[True] / rates[False], 2),
                    "unit": "x",
                    "pods": pods,
                    "quick": quick,
                }
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="500 pods, 2 rounds")
    parser.add_argument("--pods", type=int, help="pods per round (default 3000; --quick 500)")
    parser.add_argument("--rounds", type=int, help="rounds of each mode (default 4; --quick 2)")
    args = parser.parse_args()
    pods = args.pods or (500 if args.quick else 3000)
    rounds = args.rounds or (2 if args.quick else 4)
    asyncio.run(bench(pods, rounds, args.quick))


if __name__ == "__main__":
    main()
