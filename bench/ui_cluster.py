"""A big cluster for the web UI's measurements: an in-process API server (memory store, TLS, the UI mounted, port
0 on 127.0.0.1) loaded with N nodes and M pods written straight through its registry (no HTTP, no kubectl), with no
scheduler or kubelets running, so what the browser measures is the UI, not the cluster moving.

Pods are bound round-robin (``spec.nodeName``) to nodes with 32 CPUs / 128Gi / 110 pods; most are Running, every
50th Pending (unbound, with a nodeSelector no node matches: the cluster view's Pending list), every 97th Succeeded.
Used by ``bench/ui_bench.py`` and by ``tests/ui/test_ui_scale.py`` (which puts ``bench/`` on ``sys.path``, the way
tests reach ``tools/``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.server import ServerConfig, run_apiserver
from kubeplane.client.kubeconfig import load_kubeconfig
from kubeplane.ui import mount

YIELD_EVERY = 500


def node_body(i: int) -> dict[str, Any]:
    name = f"node-{i:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": f"z{i % 4}"}},
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def pod_body(i: int, nodes: int) -> tuple[dict[str, Any], str]:
    """The pod and the phase its status is set to ("" when left as created: Pending)."""
    pending = i % 50 == 0
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "app:v1", "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}}]
    }
    if pending:
        spec["nodeSelector"] = {"zone": "none"}
    else:
        spec["nodeName"] = f"node-{i % nodes:05d}"
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i:06d}", "namespace": f"ns{i % 10}"}}
    body["spec"] = spec
    return body, "" if pending else "Succeeded" if i % 97 == 0 else "Running"


async def populate(registry: Registry, nodes: int, pods: int) -> float:
    """Create the nodes, namespaces and pods; returns the seconds it took.

    It yields to the event loop every YIELD_EVERY writes so the API server's watch cache, which follows the store
    from a task, keeps up as it goes (a burst that never yields would make the cache re-initialise: see
    kubeplane.apiserver.watchcache)."""
    start = time.perf_counter()
    node_info = registry.resource("", "nodes")
    ns_info = registry.resource("", "namespaces")
    pod_info = registry.resource("", "pods")
    for n in range(10):
        await registry.create(ns_info, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns{n}"}})
    for i in range(nodes):
        await registry.create(node_info, None, node_body(i))
        if i % YIELD_EVERY == 0:
            await asyncio.sleep(0)
    for i in range(pods):
        if i % YIELD_EVERY == 0:
            await asyncio.sleep(0)
        body, phase = pod_body(i, nodes)
        created = await registry.create(pod_info, body["metadata"]["namespace"], body)
        if phase:
            created["status"] = {**created.get("status", {}), "phase": phase}
            ns, name = created["metadata"]["namespace"], created["metadata"]["name"]
            await registry.update(pod_info, ns, name, created, subresource="status")
    return time.perf_counter() - start


@contextlib.contextmanager
def big_cluster(data_dir: Path, nodes: int, pods: int) -> Iterator[tuple[str, str, float]]:
    """Serve the loaded cluster in a background thread; yields (address, admin token, seconds to load)."""
    loaded: list[float] = []
    ready = threading.Event()
    failure: list[BaseException] = []
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    async def attach(registry: Registry) -> Callable[[], Awaitable[None]]:
        loaded.append(await populate(registry, nodes, pods))

        async def nothing() -> None:
            return None

        return nothing

    def serve() -> None:
        config = ServerConfig(
            data_dir=data_dir, port=0, store="memory", ui=mount(), service_account_admission=False
        )  # no ServiceAccount controller runs here to make each namespace's "default"
        try:
            loop.run_until_complete(run_apiserver(config, on_ready=lambda *_: ready.set(), stop=stop, attach=attach))
        except BaseException as exc:  # reported to the caller below
            failure.append(exc)
        finally:
            ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    thread = threading.Thread(target=serve, name="ui-big-cluster", daemon=True)
    thread.start()
    ready.wait(timeout=1800)
    if failure or not loaded:
        raise RuntimeError(f"the big cluster did not start: {failure!r}")
    config = load_kubeconfig(data_dir / "kubeconfig")
    assert config.token is not None
    try:
        yield config.server, config.token, loaded[0]
    finally:
        if not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=60)
