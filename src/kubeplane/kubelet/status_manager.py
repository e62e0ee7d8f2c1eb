"""The pod status writer: upstream's status manager (``pkg/kubelet/status/status_manager.go``).

The pod workers change a pod's :class:`~kubeplane.kubelet.runtime.PodRuntime` and call :meth:`mark_dirty`; a few
workers take pod UIDs from one work queue and write each pod's status as a strategic merge patch of the
``status`` subresource (only what the kubelet owns). Upstream's ``syncPod`` then deletes a pod whose termination
finished (``canBeDeleted``): here, a runtime with ``delete_requested`` is deleted for good once its terminal status
is written (grace 0, UID precondition).

Invariants:

* **Coalescing.** The queue is keyed by pod UID: a pod whose state changed several times before its turn is
  written once, with its latest state; ``_dirty`` says a write is still owed (a UID taken from the queue with
  nothing owed writes nothing).
* **Retries.** A failed write is retried with the queue's per-item back-off; a pod gone from the API (404) is not.
* **A stopped node writes nothing.** A write owed by a pod of a stopped kubelet is held on the node
  (``SimNode.held``) and re-queued by :meth:`resume` when the kubelet comes back.
* The runtimes and nodes are the fleet's (shared, never copied): a runtime removed from ``runtimes`` is never
  written again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from kubeplane.client.clock import Clock
from kubeplane.client.errors import NotFoundError
from kubeplane.client.interface import Client, PatchType
from kubeplane.client.workqueue import QueueShutDown, RateLimitingQueue

from .runtime import PodRuntime
from .state import NodeClients, SimNode, delete_pod, shared_client

log = logging.getLogger("kubeplane.kubelet.fleet")


class StatusManager:
    """Batched pod-status writes for the whole fleet (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock,
        runtimes: Mapping[str, PodRuntime],
        nodes: Mapping[str, SimNode],
        node_client: NodeClients | None = None,
    ) -> None:
        """Each pod's status is written with ``node_client(pod's node)`` (the node's own identity)."""
        self._clock = clock
        self._node_client = node_client or shared_client(client)
        self._pods_res = client.resource("pods")
        self._runtimes, self._nodes = runtimes, nodes
        self._writes: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
        self._dirty: set[str] = set()

    def start(self, workers: int) -> list[asyncio.Task[None]]:
        """Start ``workers`` writers; the caller owns (and cancels) the tasks."""
        loop = asyncio.get_running_loop()
        return [loop.create_task(self._worker(), name="kubelet status") for _ in range(workers)]

    def shut_down(self) -> None:
        self._writes.shut_down()

    def mark_dirty(self, rt: PodRuntime) -> None:
        """The pod's state changed: write its status (once, however often this is called before its turn)."""
        self._mark_dirty_uid(rt.uid)

    def resume(self, sim: SimNode) -> None:
        """The kubelet of ``sim`` runs again: queue the writes it held."""
        for uid in sim.held:
            self._mark_dirty_uid(uid)
        sim.held.clear()

    def _mark_dirty_uid(self, uid: str) -> None:
        self._dirty.add(uid)
        self._writes.add(uid)

    async def _worker(self) -> None:
        while True:
            try:
                uid = await self._writes.get()
            except QueueShutDown:
                return
            try:
                await self._write(uid)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("kubelet: writing status of pod %s failed (retrying): %s", uid, exc)
                self._dirty.add(uid)
                self._writes.add_rate_limited(uid)
            else:
                self._writes.forget(uid)
            finally:
                self._writes.done(uid)

    async def _write(self, uid: str) -> None:
        rt = self._runtimes.get(uid)
        if rt is None or uid not in self._dirty:
            return
        sim = self._nodes.get(rt.node)
        if sim is not None and not sim.running:
            sim.held.add(uid)
            return
        self._dirty.discard(uid)
        patch = rt.rejected_patch() if rt.rejected else rt.status_patch(self._clock.now())
        client = self._node_client(rt.node)
        try:
            await client.patch(
                self._pods_res,
                rt.name,
                patch,
                patch_type=PatchType.STRATEGIC,
                namespace=rt.namespace,
                subresource="status",
            )
        except NotFoundError:
            return
        if rt.delete_requested and self._runtimes.get(uid) is rt:
            await delete_pod(client, self._pods_res, namespace=rt.namespace, name=rt.name, uid=rt.uid)
