"""``pods/log`` and ``metrics.k8s.io`` throughput against ``kubeplane up`` (one process: API server and the kubelet
fleet serving its kubelet API on loopback), driven over HTTPS from this process.

What it measures (issue 23):

* ``log_requests_per_s``: ``GET pods/NAME/log?tailLines=10`` of a running pod, ``--concurrency`` in flight (16)
  on keep-alive connections; each request is the API server reading the pod and its node, then a proxied
  request to the fleet's ``/containerLogs``. ``log_request_p50_ms``/``p99`` their latency.
* ``read_lines_per_s``: whole-log reads of a pod that printed ``--lines`` lines (5,000; 1,000 with ``--quick``),
  lines received per second.
* ``follow_lines_per_s``: one ``follow=true`` stream of a pod printing 100 lines every 10 ms (an offered 10,000
  lines/s), lines received per second over ``--follow-seconds`` (10; 3 with ``--quick``).
* ``top_pods_requests_per_s``: ``GET /apis/metrics.k8s.io/v1beta1/namespaces/default/pods`` (what ``kubectl top
  pods`` asks), sequential.

Output: JSON lines ``{"bench", "metric", "value", "unit", "quick", ...}``. The machine may be shared: the load
average is printed with the figures.
Run: ``.venv/bin/python bench/pod_logs_bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from kubeplane.client.kubeconfig import load_kubeconfig


def emit(metric: str, value: float, unit: str, quick: bool, **extra: Any) -> None:
    line = {"bench": "pod_logs", "metric": metric, "value": round(value, 3), "unit": unit, "quick": quick, **extra}
    print(json.dumps(line), flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def pod(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "busybox:1.36"}]},
    }


async def run(kubeconfig: Path, args: argparse.Namespace) -> None:
    config = load_kubeconfig(kubeconfig)
    ctx = ssl.create_default_context(cadata=config.ca_data.decode() if config.ca_data else None)
    headers = {"Authorization": f"Bearer {config.token}"}
    base = config.server
    pods = f"{base}/api/v1/namespaces/default/pods"
    connector = aiohttp.TCPConnector(ssl=ctx, limit=args.concurrency + 4)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:
        lines = "\n".join(f"line {i:06d} of the simulated container's output" for i in range(args.lines))
        chatty = "\n".join(f"tick line {i:03d}" for i in range(100))
        for body in (
            pod("reader", {"sim.kubeplane.io/log": lines}),
            pod("chatty", {"sim.kubeplane.io/log": chatty, "sim.kubeplane.io/log-every": "10ms"}),
        ):
            async with session.post(pods, json=body) as response:
                assert response.status == 201, await response.text()
        for name in ("reader", "chatty"):
            for _ in range(600):
                async with session.get(f"{pods}/{name}") as response:
                    if (await response.json()).get("status", {}).get("phase") == "Running":
                        break
                await asyncio.sleep(0.1)
            else:
                raise SystemExit(f"pod {name} not Running")

        # requests/s of small reads
        latencies: list[float] = []
        todo = list(range(args.requests))

        async def worker() -> None:
            while todo:
                todo.pop()
                started = time.perf_counter()
                async with session.get(f"{pods}/reader/log", params={"tailLines": "10"}) as response:
                    body = await response.read()
                    if response.status != 200 or body.count(b"\n") != 10:
                        raise SystemExit(f"unexpected log answer {response.status}: {body[:200]!r}")
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        elapsed = time.perf_counter() - started
        emit("log_requests_per_s", args.requests / elapsed, "requests/s", args.quick,
             requests=args.requests, concurrency=args.concurrency)  # fmt: skip
        emit("log_request_p50_ms", percentile(latencies, 0.5) * 1000, "ms", args.quick)
        emit("log_request_p99_ms", percentile(latencies, 0.99) * 1000, "ms", args.quick)

        # whole-log reads
        received = 0
        started = time.perf_counter()
        for _ in range(args.reads):
            async with session.get(f"{pods}/reader/log") as response:
                received += (await response.read()).count(b"\n")
        emit("read_lines_per_s", received / (time.perf_counter() - started), "lines/s", args.quick,
             lines=args.lines, reads=args.reads)  # fmt: skip

        # one follow stream
        received = 0
        async with session.get(f"{pods}/chatty/log", params={"follow": "true", "tailLines": "0"}) as response:
            assert response.status == 200
            started = time.perf_counter()
            deadline = started + args.follow_seconds
            while (now := time.perf_counter()) < deadline:
                try:
                    chunk = await asyncio.wait_for(response.content.readany(), deadline - now)
                except TimeoutError:
                    break
                if not chunk:
                    break
                received += chunk.count(b"\n")
            elapsed = time.perf_counter() - started
        emit("follow_lines_per_s", received / elapsed, "lines/s", args.quick, offered_lines_per_s=10000,
             seconds=args.follow_seconds)  # fmt: skip

        # kubectl top pods
        started = time.perf_counter()
        for _ in range(args.top_requests):
            async with session.get(f"{base}/apis/metrics.k8s.io/v1beta1/namespaces/default/pods") as response:
                doc = await response.json()
                if response.status != 200 or len(doc["items"]) != 2:
                    raise SystemExit(f"unexpected metrics answer {response.status}: {doc}")
        emit("top_pods_requests_per_s", args.top_requests / (time.perf_counter() - started), "requests/s",
             args.quick, load_average=os.getloadavg()[0])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    args.requests = 300 if args.quick else 3000
    args.lines = 1000 if args.quick else 5000
    args.reads = 20 if args.quick else 100
    args.follow_seconds = 3.0 if args.quick else 10.0
    args.top_requests = 20 if args.quick else 200
    with tempfile.TemporaryDirectory(prefix="kubeplane-logs-bench-") as tmp:
        data = Path(tmp) / "data"
        log_path = Path(tmp) / "up.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "kubeplane.cli.main", "up", "--data-dir", str(data), "--port", "0",
                 "--store", "memory", "--pull-delay", "0"],
                stdout=log, stderr=log,
            )  # fmt: skip
            try:
                deadline = time.monotonic() + 90
                while not (data / "kubeconfig").exists():
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"kubeplane up did not start: {log_path.read_text()[-2000:]}")
                    time.sleep(0.1)
                asyncio.run(run(data / "kubeconfig", args))
            finally:
                if process.poll() is None:
                    os.kill(process.pid, signal.SIGTERM)
                    try:
                        process.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        os.kill(process.pid, signal.SIGKILL)
                        process.wait()


if __name__ == "__main__":
    main()
