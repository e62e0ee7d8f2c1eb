"""Informers: list-watch one resource into a local cache and tell handlers what changed (client-go tools/cache).

Upstream's pipeline is Reflector -> DeltaFIFO -> sharedIndexInformer.HandleDeltas -> indexer + processor
listeners. On one asyncio loop the FIFO has no job (nothing runs concurrently with applying an event), so the
:class:`Reflector` hands each list and watch event straight to the :class:`SharedInformer`, which updates the
:class:`~kubeplane.client.cache.Indexer` and appends a notification to every handler's own unbounded queue;
one task per handler drains its queue. A slow handler therefore delays only itself, never the cache.

The reflector (list in pages, watch with bookmarks, re-watch from the last resourceVersion, re-list after a
410, jittered exponential backoff) and the indexer live in :mod:`kubeplane.client.cache`, as upstream's live in
package ``tools/cache``; its module docstring gives the list/watch/backoff rules.

Delivery guarantees (per handler)
    * Notifications arrive in the order the cache applied them, one at a time (an async handler is awaited
      before the next notification).
    * Never an older version after a newer one for the same object: a watch event whose resourceVersion is
      not newer than the cached object's is dropped (resourceVersions are compared as integers, which they
      are for kube-apiserver on etcd and for kubeplane; opaque ones are trusted to be in order).
    * A re-list delivers ``on_add`` for new objects, ``on_update(old, new)`` for changed ones and
      ``on_delete(last_known)`` for objects gone since (upstream wraps that last state in
      DeletedFinalStateUnknown; here handlers get the object itself). Unchanged objects produce nothing.
    * A resync re-delivers every cached object as ``on_update(obj, obj)`` (the same object, as upstream) to the
      handlers whose resync period has elapsed.
    * A handler added after start first receives ``on_add`` for the current contents, then live changes.
    * A handler that raises is logged and keeps receiving notifications.

``has_synced()`` is true once the first list is in the cache *and* every handler registered before it has
returned from its notifications for that list (upstream's informer HasSynced plus its per-registration
HasSynced). It never goes back to false. Objects handed to handlers are shared read-only with the cache.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import random
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from kubeplane.api.resources import ResourceInfo

from .cache import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    OWNER_UID_INDEX,
    Indexer,
    IndexFunc,
    Lister,
    Reflector,
    namespace_index,
    node_name_index,
    owner_uid_index,
)
from .clock import Clock
from .interface import Client, Obj

log = logging.getLogger(__name__)

MIN_RESYNC_PERIOD = 1.0  # upstream minimumResyncPeriod
Handler = Callable[..., Any]  # sync or async


def _newer(new: Obj, old: Obj) -> bool:
    """Whether ``new`` is a later version than ``old`` (integer resourceVersions; opaque ones count as newer)."""
    try:
        return int(new["metadata"]["resourceVersion"]) > int(old["metadata"]["resourceVersion"])
    except (KeyError, TypeError, ValueError):
        return True


_ADD, _UPDATE, _DELETE = 0, 1, 2


class HandlerRegistration:
    """One handler's queue and delivery task (upstream ``processorListener`` + ``ResourceEventHandlerRegistration``).

    ``has_synced()`` is true once the handler has returned from every notification of the informer's first
    list (or, for a handler added later, of the synthetic adds it got on registration).
    """

    def __init__(
        self,
        *,
        on_add: Handler | None,
        on_update: Handler | None,
        on_delete: Handler | None,
        resync_period: float,
        now: float,
        on_synced: Callable[[], None],
    ) -> None:
        self._handlers = (on_add, on_update, on_delete)
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        self._queue: deque[tuple[int, Obj | None, Obj]] = deque()
        self._wake = asyncio.Event()
        self._enqueued = 0
        self._processed = 0
        self._sync_mark: int | None = None
        self._on_synced = on_synced
        self._task: asyncio.Task[None] | None = None

    def has_synced(self) -> bool:
        return self._sync_mark is not None and self._processed >= self._sync_mark

    def _mark_synced_here(self) -> None:
        """Everything queued so far belongs to the initial contents."""
        self._sync_mark = self._enqueued
        if self.has_synced():
            self._on_synced()

    def should_resync(self, now: float) -> bool:
        return self.resync_period > 0 and now >= self.next_resync

    def enqueue(self, kind: int, old: Obj | None, new: Obj) -> None:
        self._queue.append((kind, old, new))
        self._enqueued += 1
        self._wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="informer handler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        queue = self._queue
        on_add, on_update, on_delete = self._handlers
        while True:
            if not queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            kind, old, new = queue.popleft()
            try:
                if kind == _ADD:
                    result = on_add(new) if on_add is not None else None
                elif kind == _UPDATE:
                    result = on_update(old, new) if on_update is not None else None
                else:
                    result = on_delete(new) if on_delete is not None else None
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("informer event handler failed")
            self._processed += 1
            if self._processed == self._sync_mark:
                self._on_synced()


def default_indexers(resource: ResourceInfo) -> dict[str, IndexFunc]:
    """namespace (namespaced resources), spec.nodeName (pods) and owner UID (all)."""
    indexers: dict[str, IndexFunc] = {OWNER_UID_INDEX: owner_uid_index}
    if resource.namespaced:
        indexers[NAMESPACE_INDEX] = namespace_index
    if resource.group == "" and resource.plural == "pods":
        indexers[NODE_NAME_INDEX] = node_name_index
    return indexers


class SharedInformer:
    """One list-watch of a resource (optionally a namespace and label/field selectors) shared by any number
    of handlers and listers. See the module docstring for the guarantees."""

    def __init__(
        self,
        client: Client,
        resource: ResourceInfo | str,
        *,
        clock: Clock,
        rng: random.Random,
        resync_period: float = 0.0,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        indexers: Mapping[str, IndexFunc] | None = None,
        watch_list: bool = True,
        transform: Callable[[Obj], Obj] | None = None,
    ) -> None:
        """``transform`` (client-go's ``SetTransform``): applied to every object the informer receives before
        it is cached or handed to a handler, so the cache keeps only what the caller needs; it must keep
        ``metadata``'s name, namespace and resourceVersion and return a new object (the received one is shared)."""
        self.resource = client.resource(resource) if isinstance(resource, str) else resource
        self._transform = transform
        self.namespace, self.label_selector, self.field_selector = namespace, label_selector, field_selector
        self._clock = clock
        self.indexer = Indexer(indexers={**default_indexers(self.resource), **(indexers or {})})
        self.reflector = Reflector(
            client=client,
            resource=self.resource,
            store=self,
            clock=clock,
            rng=rng,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            watch_list=watch_list,
        )
        self.resync_period = self._resync_check_period = max(resync_period, 0.0)
        self._registrations: list[HandlerRegistration] = []
        self._initial: set[HandlerRegistration] = set()  # registered before the first list: has_synced waits
        self._listed = False
        self._started = self._stopped = False
        self._done = asyncio.Event()  # set when synced or stopped
        self._tasks: list[asyncio.Task[None]] = []
        self.stale_events_dropped = 0

    @property
    def name(self) -> str:
        res = self.resource.plural + (f".{self.resource.group}" if self.resource.group else "")
        parts = [res] + [p for p in (self.namespace, self.label_selector, self.field_selector) if p]
        return " ".join(parts)

    def lister(self) -> Lister:
        return Lister(self.indexer)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register custom index functions; only before :meth:`start` (upstream refuses afterwards too)."""
        if self._started and any(name not in self.indexer.indexers for name in indexers):
            raise RuntimeError(f"informer {self.name} has already started: add indexers before start()")
        self.indexer.add_indexers(indexers)

    def add_event_handler(
        self,
        *,
        on_add: Handler | None = None,
        on_update: Handler | None = None,
        on_delete: Handler | None = None,
        resync_period: float | None = None,
    ) -> HandlerRegistration:
        """Register callbacks (sync functions or coroutines functions). ``resync_period`` defaults to the
        informer's; 0 disables resync for this handler. As upstream, a period under the informer's check
        period lowers that period before start and is raised to it after start."""
        if self._stopped:
            raise RuntimeError(f"informer {self.name} has stopped: handlers can no longer be added")
        period = self.resync_period if resync_period is None else max(resync_period, 0.0)
        if period > 0:
            period = max(period, MIN_RESYNC_PERIOD)
            if period < self._resync_check_period or self._resync_check_period == 0:
                if self._started:
                    period = max(period, self._resync_check_period)
                else:
                    self._resync_check_period = period
        registration = HandlerRegistration(
            on_add=on_add,
            on_update=on_update,
            on_delete=on_delete,
            resync_period=period,
            now=self._clock.monotonic(),
            on_synced=self._check_synced,
        )
        self._registrations.append(registration)
        if self._listed:
            for obj in self.indexer.list():  # no await between the snapshot and registration: nothing missed
                registration.enqueue(_ADD, None, obj)
            registration._mark_synced_here()
        if self._started:
            registration.start()
        return registration

    async def remove_event_handler(self, registration: HandlerRegistration) -> None:
        if registration in self._registrations:
            self._registrations.remove(registration)
            self._initial.discard(registration)
            await registration.stop()
            self._check_synced()

    def has_synced(self) -> bool:
        return self._listed and all(r.has_synced() for r in self._initial)

    async def wait_for_sync(self) -> bool:
        """Wait until :meth:`has_synced` (True) or the informer stops first (False); as upstream's
        WaitForCacheSync, this waits forever on an informer nobody starts."""
        await self._done.wait()
        return self.has_synced()

    def _check_synced(self) -> None:
        if self.has_synced():
            self._done.set()

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    def start(self) -> None:
        """Start listing and watching (needs a running loop); a second call does nothing."""
        if self._started or self._stopped:
            return
        self._started = True
        for registration in self._registrations:
            registration.start()
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self.reflector.run(), name=f"reflector {self.name}"))
        if self._resync_check_period > 0:
            self._tasks.append(loop.create_task(self._resync_loop(), name=f"resync {self.name}"))

    async def stop(self) -> None:
        """Stop the watch, the resync timer and every handler task; pending notifications are dropped."""
        self._stopped = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        for registration in self._registrations:
            await registration.stop()
        self._done.set()

    async def _resync_loop(self) -> None:
        """Upstream's resync timer + ``sharedProcessor.shouldResync``: every check period, the handlers whose
        period elapsed get ``on_update(obj, obj)`` for every cached object (only after the first list)."""
        while True:
            await self._clock.sleep(self._resync_check_period)
            now = self._clock.monotonic()
            due = [r for r in self._registrations if r.should_resync(now)]
            for registration in due:
                registration.next_resync = now + registration.resync_period
            if due and self._listed:
                for obj in self.indexer.list():
                    for registration in due:
                        registration.enqueue(_UPDATE, obj, obj)

    def _distribute(self, kind: int, old: Obj | None, new: Obj) -> None:
        for registration in self._registrations:
            registration.enqueue(kind, old, new)

    # -- ReflectorStore ----------------------------------------------------------------------------------

    def replace(self, items: list[Obj], resource_version: str) -> None:
        """Reconcile the cache with a full list: adds, updates (only for newer versions), then deletes of
        keys the list lacks, with their last cached state (upstream DeltaFIFO.Replace + HandleDeltas)."""
        indexer = self.indexer
        listed: set[str] = set()
        if self._transform is not None:
            items = [self._transform(obj) for obj in items]
        for obj in items:
            key = indexer.key_func(obj)
            listed.add(key)
            old = indexer.get(key)
            if old is None:
                indexer.put(key, obj)
                self._distribute(_ADD, None, obj)
            elif _newer(obj, old):
                indexer.put(key, obj)
                self._distribute(_UPDATE, old, obj)
        for key in indexer.list_keys():
            if key not in listed:
                gone = indexer.delete(key)
                assert gone is not None
                self._distribute(_DELETE, None, gone)
        if not self._listed:
            self._listed = True
            self._initial = set(self._registrations)
            for registration in self._registrations:
                registration._mark_synced_here()
            self._check_synced()

    def apply(self, event_type: str, obj: Obj) -> None:
        if self._transform is not None:
            obj = self._transform(obj)
        indexer = self.indexer
        key = indexer.key_func(obj)
        old = indexer.get(key)
        if event_type == "DELETED":
            if old is None:
                return  # already gone from the cache (nothing to tell handlers about)
            if not _newer(obj, old):
                self.stale_events_dropped += 1
                return
            indexer.delete(key)
            self._distribute(_DELETE, None, obj)
            return
        if old is not None and not _newer(obj, old):
            self.stale_events_dropped += 1
            return
        indexer.put(key, obj)
        self._distribute(_ADD if old is None else _UPDATE, old, obj)


class SharedInformerFactory:
    """One :class:`SharedInformer` per (resource, namespace, selectors), so every controller in a process
    shares one watch and one cache per resource (upstream ``SharedInformerFactory``)."""

    def __init__(
        self,
        client: Client,
        *,
        clock: Clock,
        rng: random.Random,
        resync_period: float = 0.0,
        namespace: str | None = None,
    ) -> None:
        self._client, self._clock, self._rng = client, clock, rng
        self.resync_period, self.namespace = resync_period, namespace
        self._informers: dict[tuple[str, str, str | None, str, str], SharedInformer] = {}

    def informer_for(
        self,
        resource: ResourceInfo | str,
        *,
        label_selector: str = "",
        field_selector: str = "",
        indexers: Mapping[str, IndexFunc] | None = None,
    ) -> SharedInformer:
        """The shared informer for ``resource`` with these selectors, created on first use. ``indexers`` are
        added to it (before the factory starts it; see :meth:`SharedInformer.add_indexers`)."""
        info = self._client.resource(resource) if isinstance(resource, str) else resource
        key = (info.group, info.plural, self.namespace if info.namespaced else None, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedInformer(
                self._client,
                info,
                clock=self._clock,
                rng=self._rng,
                resync_period=self.resync_period,
                namespace=key[2],
                label_selector=label_selector,
                field_selector=field_selector,
            )
            self._informers[key] = informer
        if indexers:
            informer.add_indexers(indexers)
        return informer

    def lister_for(self, resource: ResourceInfo | str, *, label_selector: str = "", field_selector: str = "") -> Lister:
        return self.informer_for(resource, label_selector=label_selector, field_selector=field_selector).lister()

    def start(self) -> None:
        """Start every informer requested so far (call again after requesting more)."""
        for informer in self._informers.values():
            informer.start()

    async def wait_for_cache_sync(self) -> dict[str, bool]:
        """Wait for every started informer; informer name -> synced (False if it stopped first)."""
        started = [i for i in self._informers.values() if i._started]
        results = await asyncio.gather(*(i.wait_for_sync() for i in started))
        return {i.name: ok for i, ok in zip(started, results, strict=True)}

    async def stop(self) -> None:
        for informer in self._informers.values():
            await informer.stop()
