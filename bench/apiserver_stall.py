"""/healthz latency while the API server is abused by the stall cases of issue 22's fuzz run.

Starts ``kubeplane apiserver`` (TLS, the default; memory store) as its own process on 127.0.0.1, with the
open-file soft limit of a typical login shell (``--server-nofile``, default 1024: the server may raise it), and
runs each case for ``--seconds`` (40: past the 32 s header and handshake timeouts) while a prober opens a
fresh TLS connection to ``/healthz`` every 50 ms (a probe gives up after 10 s and counts as failed).
Cases, in this order:

* ``slow_headers``: N TLS connections that send part of a request's headers, then nothing;
* ``partial_bodies``: N TLS connections that send headers and half of a declared body;
* ``idle_tls``: N TCP connections to the TLS port: a third send nothing, a third a partial ClientHello, a third
  finish the handshake and send nothing;
* ``big_list``: two clients listing 2,000 ConfigMaps of 1 KiB (300 with ``--quick``; JSON, and as a Table);
* ``smp_20000``: a client sending the strategic merge patch of 20,000 containers, back to back.

N is 1,500 (300 with ``--quick``). Prints one JSON object per line, ``{"bench": "apiserver_stall", "metric",
"value", "unit", "case", ...}``: ``healthz_p50_ms``, ``healthz_p99_ms``, ``healthz_max_ms``, ``healthz_failed``
for each case, ``server_closed`` (of the N slow connections, how many the server had closed by the case's end)
and, for the two request cases, ``requests`` completed. Bounded: every case ends after ``--seconds`` (the server
is then killed by its PID if a request still holds it). ``--quick`` takes about a minute.
Run: ``.venv/bin/python bench/apiserver_stall.py [--quick]``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import resource
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from apiserver_process import running_apiserver
from kubeplane.client.kubeconfig import load_kubeconfig

PROBE_EVERY = 0.05
PROBE_TIMEOUT = 10.0


QUICK = {"quick": False}


def emit(metric: str, value: float, unit: str, **params: object) -> None:
    line = {"bench": "apiserver_stall", "metric": metric, "value": round(value, 1), "unit": unit, **params, **QUICK}
    print(json.dumps(line))
    sys.stdout.flush()


class Target:
    def __init__(self, kubeconfig: Path) -> None:
        config = load_kubeconfig(kubeconfig)
        address = urlsplit(config.server)
        self.host, self.port = address.hostname or "127.0.0.1", address.port or 443
        self.token = config.token or ""
        self.context = ssl.create_default_context(cafile=str(kubeconfig.parent / "ca.crt"))
        self.context.check_hostname = False

    def tcp(self, timeout: float = PROBE_TIMEOUT) -> socket.socket:
        return socket.create_connection((self.host, self.port), timeout=timeout)

    def tls(self, timeout: float = PROBE_TIMEOUT) -> ssl.SSLSocket:
        return self.context.wrap_socket(self.tcp(timeout))

    def request(self, method: str, path: str, body: bytes = b"", content_type: str = "application/json",
                accept: str = "application/json", timeout: float = 120.0) -> tuple[int, bytes]:  # fmt: skip
        """One request on a fresh TLS connection (``Connection: close``): (status, body)."""
        with self.tls(timeout) as sock:
            sock.sendall(
                f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.token}\r\n"
                f"Content-Type: {content_type}\r\nAccept: {accept}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            data = b""
            while chunk := sock.recv(1 << 20):
                data += chunk
        head, _, payload = data.partition(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), payload


def apiserver(nofile: int) -> contextlib.AbstractContextManager[Path]:
    """A fresh ``kubeplane apiserver`` (TLS, memory store) with ``nofile`` as its open-file soft limit."""
    return running_apiserver("--store", "memory", nofile=nofile)


class Prober:
    """Probes /healthz on a fresh TLS connection every PROBE_EVERY seconds, recording latencies."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.latencies: list[float] = []
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            start = time.perf_counter()
            try:
                status, body = self.target.request("GET", "/healthz", timeout=PROBE_TIMEOUT)
                if (status, body) != (200, b"ok"):
                    raise OSError(status)
                self.latencies.append(time.perf_counter() - start)
            except OSError:
                self.failed += 1
            self._stop.wait(PROBE_EVERY)

    def report(self, case: str) -> None:
        ordered = sorted(self.latencies) or [float("nan")]
        for name, value in (
            ("healthz_p50_ms", ordered[len(ordered) // 2]),
            ("healthz_p99_ms", ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]),
            ("healthz_max_ms", ordered[-1]),
        ):
            emit(name, value * 1000, "ms", case=case, probes=len(self.latencies))
        emit("healthz_failed", self.failed, "probes", case=case)


def still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) != b""
    except (BlockingIOError, ssl.SSLWantReadError):
        return True
    except OSError:
        return False


def hold(target: Target, case: str, n: int, seconds: float, open_one: Callable[[int], socket.socket]) -> None:
    """Open up to ``n`` slow connections while probing, hold them for the rest of ``seconds``."""
    held: list[socket.socket] = []
    with Prober(target) as prober:
        deadline = time.monotonic() + seconds
        for i in range(n):
            if time.monotonic() > deadline:
                break
            with contextlib.suppress(OSError):  # refused or reset: the server is out of descriptors, or closed it
                held.append(open_one(i))
        time.sleep(max(0.0, deadline - time.monotonic()))
    prober.report(case)
    emit("server_closed", sum(not still_open(sock) for sock in held), "connections", case=case, opened=len(held))
    for sock in held:
        sock.close()


def slow_headers(target: Target, i: int) -> socket.socket:
    sock = target.tls()
    sock.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAccept: applicat")
    return sock


def partial_body(target: Target, i: int) -> socket.socket:
    sock = target.tls()
    sock.sendall(
        f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {target.token}\r\n"
        "Content-Type: application/json\r\nContent-Length: 200\r\n\r\n".encode()
        + b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow'
    )
    return sock


def idle_tls(target: Target, i: int) -> socket.socket:
    if i % 3 == 0:
        return target.tcp()
    if i % 3 == 1:
        sock = target.tcp()
        sock.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # a ClientHello cut short
        return sock
    return target.tls()


def repeat(target: Target, case: str, seconds: float, clients: int, one: Callable[[int], int]) -> None:
    done = [0]
    stop = time.monotonic() + seconds

    def client(k: int) -> None:
        while time.monotonic() < stop:
            try:
                one(k)
                done[0] += 1
            except OSError:
                return

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    with Prober(target) as prober:
        for thread in threads:
            thread.start()
        time.sleep(seconds)
    prober.report(case)
    emit("requests", done[0], "requests", case=case)


def big_list(target: Target, seconds: float) -> None:
    value = "v" * 1024
    for i in range(300 if QUICK["quick"] else 2000):
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm{i}"}, "data": {"k": value}}
        target.request("POST", "/api/v1/namespaces/default/configmaps", json.dumps(body).encode())
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    repeat(
        target,
        "big_list",
        seconds,
        2,
        lambda k: target.request("GET", "/api/v1/namespaces/default/configmaps", accept=table if k else "")[0],
    )


def smp(target: Target, seconds: float) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"}}
    pod["spec"] = {"containers": [{"name": "c", "image": "x"}]}
    target.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod).encode())
    patch = {"spec": {"containers": [{"name": f"c{i}", "image": "busybox"} for i in range(20000)]}}
    body = json.dumps(patch).encode()
    smp_type = "application/strategic-merge-patch+json"
    repeat(
        target,
        "smp_20000",
        seconds,
        1,
        lambda k: target.request("PATCH", "/api/v1/namespaces/default/pods/big", body, smp_type, timeout=seconds)[0],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="300 slow connections, 8 s a case")
    parser.add_argument("--seconds", type=float, default=None, help="seconds a case (40; 8 quick)")
    parser.add_argument("--server-nofile", type=int, default=1024, help="the server's open-file soft limit")
    args = parser.parse_args()
    QUICK["quick"] = args.quick
    n = 300 if args.quick else 1500
    seconds = args.seconds or (8.0 if args.quick else 40.0)
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this client holds N connections
    for case, opener in (("slow_headers", slow_headers), ("partial_bodies", partial_body), ("idle_tls", idle_tls)):
        with apiserver(args.server_nofile) as kubeconfig:
            target = Target(kubeconfig)
            hold(target, case, n, seconds, functools.partial(opener, target))
    with apiserver(args.server_nofile) as kubeconfig:
        big_list(Target(kubeconfig), seconds)
    with apiserver(args.server_nofile) as kubeconfig:
        smp(Target(kubeconfig), seconds)


if __name__ == "__main__":
    main()
