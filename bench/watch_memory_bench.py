"""API server memory with watchers that lag: peak RSS and watchers closed for not keeping up (issue 22).

Starts ``kubeplane apiserver`` (plain HTTP, 127.0.0.1, a free port) as its own process, opens ``--watchers`` (200)
watches on one namespace's configmaps over raw sockets with a 4 KiB receive buffer, then writes ``--objects``
configmaps of ``--size`` bytes from 4 keep-alive connections. The watchers either never read (``--readers
never``, the default) or read ``--read-bytes`` (64 KiB) each every 100 ms (``--readers slow``: clients that lag,
the case where a whole backlog used to be written at once). The server's peak RSS is read from
``/proc/PID/status`` (VmHWM) once the writes are done and the server has settled, before anything more is read
by the never-readers; then every watch stream is read
until it ends or stays idle (a client catching up), and a watcher counts as closed when its chunked stream
ended; the peak RSS is read again after that (``peak_rss_after_reading_mb``).

Bounded in time and memory: writes stop at a deadline, and writes and reads stop as soon as the server's RSS
passes ``--max-rss-mb`` (reported as ``rss_limit_hit``); the server is stopped by the PID this script started.

Prints JSON lines {"bench": "apiserver_watch_memory", "metric", "value", "unit", ...parameters}:
``rss_before_watchers_mb``, ``peak_rss_mb``, ``peak_rss_per_watcher_kb`` (above the server's RSS before the
watchers opened), ``watchers_closed`` (streams that ended), ``terminated_watchers_metric`` (the server's
``apiserver_terminated_watchers_total``; no line from a server without it), ``objects_written``, ``write_s``.
Run: ``PYTHONPATH=src .venv/bin/python bench/watch_memory_bench.py [--quick] [--readers slow]``; to measure
another tree's server, put its ``src`` first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from kubeplane.client.kubeconfig import load_kubeconfig

NS = "bench"
WRITERS = 4
RCVBUF = 4096
SLOW_PERIOD = 0.1
END = b"\r\n0\r\n\r\n"  # the last chunk of a chunked body (JSON lines never hold a raw CRLF)


def emit(metric: str, value: float, unit: str, **params: object) -> None:
    line = {"bench": "apiserver_watch_memory", "metric": metric, "value": round(value, 1), "unit": unit, **params}
    print(json.dumps(line))
    sys.stdout.flush()


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class Api:
    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token

    def call(self, method: str, path: str, body: Any = None, conn: http.client.HTTPConnection | None = None) -> Any:
        own = conn is None
        conn = conn or http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        conn.request(method, path, body=None if body is None else json.dumps(body), headers=headers)
        response = conn.getresponse()
        data = response.read()
        if own:
            conn.close()
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {data[:200]!r}")
        return json.loads(data) if data[:1] == b"{" else data.decode()

    def metric(self, name: str, **labels: str) -> float | None:
        text = self.call("GET", "/metrics")
        for line in text.splitlines():
            if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
        return None


def start_server(tmp: Path, store: str) -> tuple[subprocess.Popen[bytes], Api]:
    data = tmp / "data"
    log = (tmp / "apiserver.log").open("wb")
    args = [sys.executable, "-m", "kubeplane.cli.main", "apiserver", "--data-dir", str(data), "--port", "0"]
    server = subprocess.Popen([*args, "--no-tls", "--store", store], stdout=log, stderr=log)
    kubeconfig = data / "kubeconfig"
    deadline = time.monotonic() + 30
    while not kubeconfig.exists():
        if server.poll() is not None or time.monotonic() > deadline:
            stop_server(server)
            raise SystemExit(f"apiserver did not start: {(tmp / 'apiserver.log').read_text()}")
        time.sleep(0.05)
    config = load_kubeconfig(kubeconfig)
    host, port = config.server.removeprefix("http://").rsplit(":", 1)
    assert config.token is not None
    return server, Api(host, int(port), config.token)


def stop_server(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        os.kill(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()


def open_watchers(api: Api, count: int, revision: str) -> list[socket.socket]:
    path = f"/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={revision}&timeoutSeconds=1800"
    request = f"GET {path} HTTP/1.1\r\nHost: {api.host}\r\nAuthorization: Bearer {api.token}\r\n\r\n".encode()
    socks = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        sock.connect((api.host, api.port))
        sock.sendall(request)
        socks.append(sock)
    return socks


class SlowReaders(threading.Thread):
    """Reads ``size`` bytes from every watch each SLOW_PERIOD, keeping the last bytes of each to see its end."""

    def __init__(self, socks: list[socket.socket], tails: dict[int, bytes], stop: threading.Event, size: int) -> None:
        super().__init__(daemon=True)
        self.socks, self.tails, self.stop, self.size = socks, tails, stop, size

    def run(self) -> None:
        for sock in self.socks:
            sock.setblocking(False)
        while not self.stop.wait(SLOW_PERIOD):
            for i, sock in enumerate(self.socks):
                try:
                    data = sock.recv(self.size)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                self.tails[i] = (self.tails.get(i, b"") + data)[-len(END) :] if data else self.tails.get(i, b"") + END


class RssWatch(threading.Thread):
    """Samples the server's RSS; sets ``over`` once it passes the limit (the writers then stop)."""

    def __init__(self, pid: int, limit_kb: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.pid, self.limit_kb, self.stop = pid, limit_kb, stop
        self.over = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            try:
                if status_kb(self.pid, "VmRSS") > self.limit_kb:
                    self.over.set()
            except OSError:
                return


def write_objects(api: Api, count: int, size: int, deadline: float, over: threading.Event) -> int:
    written = [0] * WRITERS
    payload = "x" * size

    def writer(n: int) -> None:
        conn = http.client.HTTPConnection(api.host, api.port, timeout=60)
        try:
            for i in range(n, count, WRITERS):
                if time.monotonic() > deadline or over.is_set():
                    return
                body = {"metadata": {"name": f"cm-{i}"}, "data": {"v": payload}}
                api.call("POST", f"/api/v1/namespaces/{NS}/configmaps", body, conn)
                written[n] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(written)


def read_to_end(
    socks: list[socket.socket], tails: dict[int, bytes], idle: float, limit: float, over: threading.Event
) -> int:
    """Read every stream until it ends (closed) or none sends anything for ``idle`` s; the count that ended."""
    selector = selectors.DefaultSelector()
    ended = {i for i, tail in tails.items() if tail.endswith(END)}
    for i, sock in enumerate(socks):
        if i not in ended:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, i)
    deadline = time.monotonic() + limit
    while selector.get_map() and time.monotonic() < deadline and not over.is_set():
        ready = selector.select(timeout=idle)
        if not ready:
            break
        for key, _ in ready:
            i = key.data
            try:
                data = key.fileobj.recv(1 << 20)  # type: ignore[union-attr]
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            tail = (tails.get(i, b"") + data)[-len(END) :]
            tails[i] = tail
            if not data or tail.endswith(END):
                ended.add(i)
                selector.unregister(key.fileobj)
    selector.close()
    return len(ended)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer objects: about a minute")
    parser.add_argument("--watchers", type=int, default=200)
    parser.add_argument("--objects", type=int, default=None, help="default 2000 (1000 with --quick)")
    parser.add_argument("--size", type=int, default=16 * 1024, help="bytes of each configmap's data")
    parser.add_argument("--readers", choices=("never", "slow"), default="never")
    parser.add_argument("--read-bytes", type=int, default=64 * 1024, help="--readers slow: bytes read every 100 ms")
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--max-rss-mb", type=int, default=4096, help="stop writing once the server's RSS passes it")
    args = parser.parse_args()
    objects = args.objects or (1000 if args.quick else 2000)
    params = {"watchers": args.watchers, "objects": objects, "size": args.size, "readers": args.readers}
    params |= {"store": args.store, "quick": args.quick}
    with tempfile.TemporaryDirectory(prefix="kubeplane-bench-") as tmp:
        server, api = start_server(Path(tmp), args.store)
        stop, watching = threading.Event(), threading.Event()
        socks: list[socket.socket] = []
        try:
            api.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
            revision = api.call("GET", f"/api/v1/namespaces/{NS}/configmaps")["metadata"]["resourceVersion"]
            rss_before = status_kb(server.pid, "VmRSS")
            socks = open_watchers(api, args.watchers, revision)
            deadline = time.monotonic() + 30
            labels = {"group": "", "version": "v1", "kind": "ConfigMap"}
            while (api.metric("apiserver_registered_watchers", **labels) or 0) < args.watchers:
                if time.monotonic() > deadline:
                    raise SystemExit("the watchers did not all register")
                time.sleep(0.1)
            tails: dict[int, bytes] = {}
            if args.readers == "slow":
                SlowReaders(socks, tails, stop, args.read_bytes).start()
            rss = RssWatch(server.pid, args.max_rss_mb * 1024, watching)
            rss.start()
            started = time.monotonic()
            written = write_objects(api, objects, args.size, started + (60 if args.quick else 180), rss.over)
            write_s = time.monotonic() - started
            settle = time.monotonic() + 15
            while time.monotonic() < settle and not rss.over.is_set():  # the server finishes its fan-out
                time.sleep(0.5)
            peak = status_kb(server.pid, "VmHWM")
            stop.set()  # the slow readers
            terminated = api.metric("apiserver_terminated_watchers_total", resource="configmaps")
            closed = read_to_end(socks, tails, idle=3.0, limit=120.0, over=rss.over)
            peak_end = status_kb(server.pid, "VmHWM")
            watching.set()
            emit("rss_before_watchers_mb", rss_before / 1024, "MB", **params)
            emit("peak_rss_mb", peak / 1024, "MB", **params)
            if args.watchers:
                emit("peak_rss_per_watcher_kb", (peak - rss_before) / args.watchers, "KB", **params)
            emit("peak_rss_after_reading_mb", peak_end / 1024, "MB", rss_limit_hit=rss.over.is_set(), **params)
            emit("watchers_closed", closed, "watchers", **params)
            if terminated is not None:  # a server without the metric (before issue 22) omits the line
                emit("terminated_watchers_metric", terminated, "watchers", **params)
            emit("objects_written", written, "objects", rss_limit_hit=rss.over.is_set(), **params)
            emit("write_s", write_s, "s", **params)
        finally:
            stop.set()
            watching.set()
            for sock in socks:
                sock.close()
            stop_server(server)


if __name__ == "__main__":
    main()
