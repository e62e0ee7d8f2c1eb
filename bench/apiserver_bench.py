"""API server throughput over HTTP: GETs, creates, lists of 1,000 pods, and watch fan-out.

Starts ``kubeplane apiserver`` as its own process on 127.0.0.1 and drives it from this process with 32
keep-alive HTTP/1.1 connections (a minimal asyncio client, so the load generator costs little).

``--store sqlite`` (default), ``memory`` or ``etcd``: with etcd the bench first starts a 3-member etcd cluster on
loopback (fsync on, as deployed; see ``apiserver_process.running_etcd``) and points the API server at it with
``--store etcd --etcd-servers``; ``--etcd-servers URL[,URL...]`` uses an existing cluster instead, under a fresh
``--etcd-prefix`` (``/kubeplane-bench-<run>``) so earlier runs' objects never collide with this one's.
Prints one JSON object per line: {"bench": "apiserver", "metric", "value", "unit", ...parameters}.
``--quick`` finishes in well under a minute. Run: ``.venv/bin/python bench/apiserver_bench.py [--quick]``.

Metrics:
* ``creates_per_s``: POST of small pods, 32 connections.
* ``gets_per_s``: GET of one pod by name, 32 connections.
* ``list_1000_per_s``: GET of a namespace holding 1,000 pods (the whole list, no limit).
* ``watch_events_per_s``: events received per second summed over 100 HTTP watchers while 32 connections
  create pods; also ``watch_writes_per_s``, the write rate during that phase.
* ``authorized_gets_per_s``: GETs as users of the server's token file (the same authentication cost), ``of=pods``
  (the pods of ``gets_per_s``) as ``as=masters`` (system:masters: the privileged-groups authorizer allows first)
  and ``as=rolebinding`` (a user whose only grant is a RoleBinding to ``system:aggregate-to-view``, the rules of
  ``view``, which only the controller manager's aggregation fills: Node, then RBAC decide), and
  ``of=node`` (one Node) as ``masters`` and as ``node`` (``system:node:bench-node``: the Node authorizer
  decides); ``authorization_overhead_pct`` is the deciding user's rate loss against system:masters' for the
  same GETs. A user the server refuses (no RBAC authorizer in the build) is skipped with a note on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from apiserver_process import running_apiserver, running_etcd
from kubeplane.client.kubeconfig import load_kubeconfig

CONNECTIONS = 32
STORES = ("sqlite", "memory", "etcd")
ETCD_MEMBERS = 3


def emit(metric: str, value: float, unit: str, **params: object) -> None:
    print(json.dumps({"bench": "apiserver", "metric": metric, "value": round(value, 1), "unit": unit, **params}))
    sys.stdout.flush()


class Conn:
    """One keep-alive HTTP/1.1 connection: request, then read a Content-Length response."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, token: str) -> None:
        self.reader, self.writer, self.host, self.token = reader, writer, host, token

    @classmethod
    async def open(cls, host: str, port: int, token: str) -> Conn:
        reader, writer = await asyncio.open_connection(host, port, limit=1 << 24)
        return cls(reader, writer, f"{host}:{port}", token)

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {self.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


def pod(name: str) -> bytes:
    return json.dumps(
        {
            "metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "resources": {"requests": {"cpu": "100m"}}}]},
        }
    ).encode()


async def run_phase(conns: list[Conn], total: int, make: Any) -> float:
    """Issue ``total`` requests spread over the connections; requests/second."""
    counter = iter(range(total))

    async def worker(conn: Conn) -> None:
        for i in counter:
            method, path, body = make(i)
            status, payload = await conn.request(method, path, body)
            if status >= 300:
                raise RuntimeError(f"{method} {path}: {status} {payload[:200]!r}")

    start = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    return total / (time.perf_counter() - start)


async def watch_stream(host: str, port: int, token: str, path: str, counts: list[int], index: int) -> None:
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 24)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    try:
        while True:  # chunked transfer encoding: size line, data, CRLF
            size = int((await reader.readline()).strip(), 16)
            if size == 0:
                return
            data = await reader.readexactly(size + 2)
            counts[index] += data.count(b"\n") - 1
    finally:
        writer.close()


async def bench(host: str, port: int, token: str, quick: bool, store: str) -> None:
    scale = 0.2 if quick else 1.0
    conns = [await Conn.open(host, port, token) for _ in range(CONNECTIONS)]
    base = "/api/v1/namespaces/default/pods"
    params = {"connections": CONNECTIONS, "store": store, "quick": quick}

    n = int(10_000 * scale)
    rate = await run_phase(conns, n, lambda i: ("POST", base, pod(f"pod-{i:06d}")))
    emit("creates_per_s", rate, "creates/s", n=n, **params)

    n = int(40_000 * scale)
    rate = await run_phase(conns, n, lambda i: ("GET", f"{base}/pod-{i % 1000:06d}", b""))
    emit("gets_per_s", rate, "gets/s", n=n, **params)

    status, _ = await conns[0].request("POST", "/api/v1/namespaces", b'{"metadata":{"name":"list"}}')
    assert status == 201
    await run_phase(conns, 1000, lambda i: ("POST", "/api/v1/namespaces/list/pods", pod(f"l-{i:04d}")))
    n = int(400 * scale)
    rate = await run_phase(conns, n, lambda i: ("GET", "/api/v1/namespaces/list/pods", b""))
    emit("list_1000_per_s", rate, "lists/s", n=n, pods_per_list=1000, **params)

    watchers = 100
    counts = [0] * watchers
    await conns[0].request("POST", "/api/v1/namespaces", b'{"metadata":{"name":"watched"}}')
    _, body = await conns[0].request("GET", "/api/v1/namespaces/watched/pods")
    rv = json.loads(body)["metadata"]["resourceVersion"]
    path = f"/api/v1/namespaces/watched/pods?watch=1&resourceVersion={rv}&timeoutSeconds=600"
    tasks = [asyncio.create_task(watch_stream(host, port, token, path, counts, i)) for i in range(watchers)]
    await asyncio.sleep(0.5)
    n = int(5_000 * scale)
    start = time.perf_counter()
    write_rate = await run_phase(conns, n, lambda i: ("POST", "/api/v1/namespaces/watched/pods", pod(f"w-{i:06d}")))
    while sum(counts) < n * watchers and time.perf_counter() - start < 120:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - start
    for task in tasks:
        task.cancel()
    delivered = sum(counts)
    emit("watch_events_per_s", delivered / elapsed, "events/s", watchers=watchers, n=n, delivered=delivered, **params)
    emit("watch_writes_per_s", write_rate, "creates/s", watchers=watchers, n=n, **params)
    for conn in conns:
        conn.close()
    await authorization_phase(host, port, token, scale, params)


MASTERS_TOKEN = "bench-masters-token"
VIEWER_TOKEN = "bench-viewer-token"
NODE_TOKEN = "bench-node-token"
TOKEN_FILE = (
    f'{MASTERS_TOKEN},bench-masters,1,"system:masters"\n{VIEWER_TOKEN},bench-viewer,2\n'
    f'{NODE_TOKEN},system:node:bench-node,3,"system:nodes"\n'
)


async def authorization_phase(host: str, port: int, token: str, scale: float, params: dict[str, Any]) -> None:
    """``authorized_gets_per_s`` for each user, and the overhead of the deciding authorizer (module docstring)."""
    admin = await Conn.open(host, port, token)
    binding = {
        "metadata": {"name": "bench-viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:aggregate-to-view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bench-viewer"}],
    }
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    status, _ = await admin.request("POST", path, json.dumps(binding).encode())
    assert status == 201, status
    status, _ = await admin.request("POST", "/api/v1/nodes", b'{"metadata":{"name":"bench-node"}}')
    assert status == 201, status
    admin.close()
    pods, node = "/api/v1/namespaces/default/pods", "/api/v1/nodes/bench-node"
    n = int(40_000 * scale)
    cases = (
        ("masters", MASTERS_TOKEN, "pods"),
        ("rolebinding", VIEWER_TOKEN, "pods"),
        ("masters", MASTERS_TOKEN, "node"),
        ("node", NODE_TOKEN, "node"),
    )
    rates: dict[tuple[str, str], float] = {}
    for who, user_token, target in cases:
        conns = [await Conn.open(host, port, user_token) for _ in range(CONNECTIONS)]

        def make(i: int, target: str = target) -> tuple[str, str, bytes]:
            return "GET", node if target == "node" else f"{pods}/pod-{i % 1000:06d}", b""

        status, body = await conns[0].request(*make(0))
        if status == 403:
            print(f"authorized_gets_per_s as={who} skipped: {body[:200]!r}", file=sys.stderr)
        else:
            rates[(who, target)] = rate = await run_phase(conns, n, make)
            emit("authorized_gets_per_s", rate, "gets/s", n=n, **{"as": who, "of": target}, **params)
        for conn in conns:
            conn.close()
    for deciding, target in (("rolebinding", "pods"), ("node", "node")):
        if (deciding, target) in rates:
            base = rates[("masters", target)]
            overhead = 100.0 * (base - rates[(deciding, target)]) / base
            emit("authorization_overhead_pct", overhead, "%", n=n, **{"as": deciding, "of": target}, **params)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a run of well under a minute")
    parser.add_argument("--store", choices=STORES, default="sqlite", help="the API server's store (default sqlite)")
    parser.add_argument(
        "--etcd-servers",
        metavar="URL[,URL...]",
        help=f"with --store etcd: use this etcd cluster instead of starting a {ETCD_MEMBERS}-member one",
    )
    args = parser.parse_args()
    if args.etcd_servers and args.store != "etcd":
        parser.error("--etcd-servers needs --store etcd")
    with ExitStack() as stack:
        store_args = ["--store", args.store]
        if args.store == "etcd":
            if args.etcd_servers:
                store_args += [
                    "--etcd-servers",
                    args.etcd_servers,
                    "--etcd-prefix",
                    f"/kubeplane-bench-{uuid.uuid4().hex[:8]}",
                ]
            else:
                store_args += ["--etcd-servers", ",".join(stack.enter_context(running_etcd(ETCD_MEMBERS)))]
        run(store_args, args.quick, args.store)


def run(store_args: list[str], quick: bool, store: str) -> None:
    # --no-tls: the bench's minimal client speaks plain HTTP
    with tempfile.TemporaryDirectory(prefix="kubeplane-bench-tokens-") as tmp:
        tokens = Path(tmp) / "tokens.csv"
        tokens.write_text(TOKEN_FILE)
        tokens.chmod(0o600)
        serve(["--no-tls", "--token-auth-file", str(tokens), *store_args], quick, store)


def serve(args: list[str], quick: bool, store: str) -> None:
    with running_apiserver(*args) as kubeconfig:
        config = load_kubeconfig(kubeconfig)
        server = urlsplit(config.server)
        if not (server.hostname and server.port and config.token):
            raise SystemExit(f"unusable kubeconfig {kubeconfig}: no host, port or token")
        import uvloop

        uvloop.run(bench(server.hostname, server.port, config.token, quick, store))


if __name__ == "__main__":
    main()
