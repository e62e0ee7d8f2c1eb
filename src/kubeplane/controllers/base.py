"""What every controller shares: informers feed keys into a rate-limited work queue; workers reconcile keys.

Upstream's controller pattern (``pkg/controller/...``): event handlers only compute keys (``namespace/name``, or
``name`` for cluster-scoped objects) and add them to a :class:`~kubeplane.client.workqueue.RateLimitingQueue`;
``workers`` coroutines ``get`` a key and call :meth:`Controller.sync`, which reads the *current* state from the
informers' listers and makes the API agree with it. Hence the properties every controller must keep:

* **Level-triggered and idempotent.** ``sync`` looks only at the current state, never at the event that queued the
  key; running it twice in a row changes nothing the second time.
* **Safe to restart at any moment.** Nothing is kept in memory that the API does not also say (expectations only
  *delay* work while the informer lags; they never decide it).
* **Retries.** ``sync`` raising requeues the key with the queue's rate limiter (per-item exponential backoff, 5 ms
  doubling to 1000 s, and an overall 10 qps / burst 100 bucket); success ``forget``s it. A key can also ask to be
  looked at again later with :meth:`Controller.enqueue_after` (e.g. minReadySeconds, tolerationSeconds).
* **One worker per key.** The work queue never hands the same key to two workers at once.

All time goes through ``ctx.clock`` (tests and simulations use a fake clock). Everything runs on one event loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kubeplane.api.views import meta_of
from kubeplane.client.clock import Clock, SystemClock
from kubeplane.client.events import EventRecorder
from kubeplane.client.informer import SharedInformerFactory
from kubeplane.client.interface import Client
from kubeplane.client.workqueue import QueueShutDown, RateLimitingQueue

__all__ = ["Controller", "ControllerContext", "key_of", "split_key"]

log = logging.getLogger("kubeplane.controllers")


def key_of(obj: Mapping[str, Any]) -> str:
    """``namespace/name``, or ``name`` for a cluster-scoped object (upstream ``MetaNamespaceKeyFunc``)."""
    meta = meta_of(obj)
    namespace = meta.get("namespace") or ""
    name = meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def split_key(key: str) -> tuple[str, str]:
    """``(namespace, name)``; namespace ``""`` for cluster-scoped keys."""
    namespace, sep, name = key.partition("/")
    return (namespace, name) if sep else ("", namespace)


@dataclass
class ControllerContext:
    """What the manager hands every controller (upstream ``ControllerContext``).

    ``informers`` is shared by all controllers (one watch per resource for the whole manager); a controller asks
    it for the informers it needs in ``__init__`` and the manager starts them all afterwards. ``recorder(name)``
    gives an EventRecorder reporting as that component (upstream: one per controller, e.g. ``replicaset-controller``).
    ``options`` carries per-controller settings (grace periods, thresholds) by controller name.
    """

    client: Client
    informers: SharedInformerFactory
    clock: Clock = field(default_factory=SystemClock)
    rng: random.Random = field(default_factory=random.Random)
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    _recorders: dict[str, EventRecorder] = field(default_factory=dict)

    def recorder(self, component: str) -> EventRecorder:
        found = self._recorders.get(component)
        if found is None:
            found = self._recorders[component] = EventRecorder(self.client, component=component, clock=self.clock)
        return found

    async def close(self) -> None:
        for recorder in self._recorders.values():
            await recorder.close()


class Controller(ABC):
    """Base of every controller; subclasses set ``name`` and ``workers``, register handlers in ``__init__`` and
    implement :meth:`sync`. See the module docstring for the contract."""

    name: ClassVar[str] = ""
    """Upstream's controller name, e.g. ``replicaset`` (what ``--controllers`` selects)."""
    workers: ClassVar[int] = 5
    """Concurrent syncs (upstream's ``--concurrent-*-syncs`` defaults)."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.clock = ctx.clock
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(clock=ctx.clock)
        self.options: dict[str, Any] = dict(ctx.options.get(self.name, {}))

    # --- queueing ------------------------------------------------------------------------------------------

    def enqueue(self, obj: Mapping[str, Any]) -> None:
        self.queue.add(key_of(obj))

    def enqueue_key(self, key: str) -> None:
        self.queue.add(key)

    def enqueue_after(self, obj_or_key: Mapping[str, Any] | str, delay: float) -> None:
        key = obj_or_key if isinstance(obj_or_key, str) else key_of(obj_or_key)
        self.queue.add_after(key, max(delay, 0.0))

    # --- running -------------------------------------------------------------------------------------------

    @abstractmethod
    async def sync(self, key: str) -> None:
        """Make the world agree with the current state of ``key``; raise to retry with backoff."""

    async def run(self, workers: int | None = None) -> None:
        """Run ``workers`` workers until cancelled (the manager starts and syncs the informers first)."""
        tasks = [asyncio.ensure_future(self._worker()) for _ in range(workers or self.workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            self.queue.shut_down()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self.sync(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.info("%s: syncing %r failed (retrying): %s", self.name, key, exc)
                log.debug("%s: sync error", self.name, exc_info=True)
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)


ControllerFactory = Callable[[ControllerContext], Controller]
