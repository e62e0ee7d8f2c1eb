"""The informer's machinery below the handlers (client-go ``tools/cache``): the store with its indices, the
listers over it, and the reflector that keeps it in step with the server.

Indexer (upstream ``thread_safe_store.go``, ``index.go``, ``store.go``; ``listers.go`` for :class:`Lister`)
    No locks: every component runs on one asyncio loop and no Indexer method awaits, so each call is atomic
    with respect to the others. Keys are upstream's ``MetaNamespaceKeyFunc`` (``"<namespace>/<name>"``, or
    ``"<name>"`` for cluster-scoped objects). After every call ``by_index(name, value)`` is exactly the set of
    stored objects whose index function yields ``value`` (an update removes the old object's values before
    adding the new one's). Buckets keep insertion order (dicts, not sets), so results are deterministic.
    Stored objects are shared read-only with every handler and lister caller, as upstream: copy before
    changing one.

Reflector (upstream ``reflector.go`` and ``pager.go``)
    List in pages of 500 (``limit``/``continue``; an expired continue token falls back to one unpaged list, as
    upstream's pager), hand the whole list to the store, then watch from the list's resourceVersion with
    bookmarks. Every event and bookmark advances ``last_sync_resource_version``. A watch the server ends
    (timeout) is re-opened at once from there; a broken stream, a failed request or a "very short watch"
    (closed within a second without events) is re-opened from there after a backoff; a 410 Gone (too old
    resourceVersion, at watch start or in the stream) means events were lost, so after a backoff the reflector
    re-lists and the store reconciles itself with the list. Backoff is upstream's
    ``NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)``: 0.8 s doubling to a 30 s cap, each delay plus
    up to 100% random jitter, back to 0.8 s once two minutes passed since the previous backoff. Time and
    randomness come from the injected Clock and ``random.Random``.
"""

from __future__ import annotations

import builtins
import logging
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from kubeplane.api import labels as apilabels
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import annotations_of, labels_of, meta_of, namespace_of, spec_of

from .clock import Clock
from .errors import APIStatusError, ClientError, GoneError
from .interface import Client, WatchStream

Obj = dict[str, Any]
IndexFunc = Callable[[Obj], Iterable[str]]
KeyFunc = Callable[[Obj], str]
log = logging.getLogger(__name__)

INITIAL_EVENTS_END = "k8s.io/initial-events-end"
PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300.0  # upstream minWatchTimeout; each watch asks for a random 1-2x of it
NAMESPACE_INDEX = "namespace"  # upstream cache.NamespaceIndex
NODE_NAME_INDEX = "spec.nodeName"  # upstream daemonset/kubelet NodeNameKeyIndex
OWNER_UID_INDEX = "ownerReferences.uid"


def meta_namespace_key(obj: Obj) -> str:
    """Upstream ``MetaNamespaceKeyFunc``: ``namespace/name``, or ``name`` for cluster-scoped objects."""
    meta = meta_of(obj)
    namespace, name = meta.get("namespace") or "", meta.get("name") or ""
    return f"{namespace}/{name}" if namespace else str(name)


def object_key(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def namespace_index(obj: Obj) -> list[str]:
    """Upstream ``MetaNamespaceIndexFunc``: the object's namespace (``""`` for cluster-scoped objects)."""
    return [namespace_of(obj)]


def node_name_index(obj: Obj) -> list[str]:
    """A pod's ``spec.nodeName``; unbound pods are in no bucket (as the DaemonSet controller's index)."""
    node = spec_of(obj).get("nodeName")
    return [str(node)] if node else []


def owner_uid_index(obj: Obj) -> list[str]:
    """The UID of every ``metadata.ownerReferences`` entry (controllers find their dependents by it)."""
    refs = meta_of(obj).get("ownerReferences") or []
    return [str(ref["uid"]) for ref in refs if isinstance(ref, dict) and ref.get("uid")]


class IndexConflictError(ValueError):
    """An index name registered twice with different functions (upstream's "indexer conflict")."""


class Indexer:
    """Objects by key plus named indices (upstream ``cache.Indexer`` over a ``threadSafeMap``)."""

    def __init__(self, *, indexers: Mapping[str, IndexFunc] | None = None, key_func: KeyFunc = meta_namespace_key):
        self.key_func = key_func
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, dict[str, None]]] = {}
        # key -> the values each index function gave the stored object (in ``_indexers`` order), so a put
        # computes the new object's values only (an informer's update: one call per index, not two)
        self._values: dict[str, tuple[builtins.list[str], ...]] = {}
        self._listeners: builtins.list[Callable[[str | None], None]] = []
        if indexers:
            self.add_indexers(indexers)

    def add_listener(self, listener: Callable[[str | None], None]) -> None:
        """Call ``listener(key)`` synchronously after every put or delete of ``key``, and ``listener(None)`` after
        :meth:`replace` (anything may have changed). For an in-process reader that keeps columns derived from
        the cache (the node lifecycle controller's health pass) and must know which keys to re-read before it
        next reads: event handlers run later, from their own queues, so they cannot tell it. A listener must not
        change the indexer; it sees the new state (``get(key)`` is the new object, None after a delete)."""
        self._listeners.append(listener)

    @property
    def indexers(self) -> Mapping[str, IndexFunc]:
        return dict(self._indexers)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Register index functions and index the objects already stored. A name already registered with the
        same function is accepted; with another function it raises :class:`IndexConflictError`."""
        for name, func in indexers.items():
            if name in self._indexers and self._indexers[name] is not func:
                raise IndexConflictError(f"indexer conflict: {name!r} is already registered")
        for name, func in indexers.items():
            if name in self._indexers:
                continue
            self._indexers[name] = func
            buckets: dict[str, dict[str, None]] = {}
            self._indices[name] = buckets
            for key, obj in self._items.items():
                values = list(func(obj))
                self._values[key] = (*self._values[key], values)
                for value in values:
                    buckets.setdefault(value, {})[key] = None

    # -- writes ------------------------------------------------------------------------------------------

    def put(self, key: str, obj: Obj) -> Obj | None:
        """Store ``obj`` under ``key``; the previous object, if any."""
        old = self._items.get(key)
        self._items[key] = obj
        self._reindex(key, obj)
        for listener in self._listeners:
            listener(key)
        return old

    def add(self, obj: Obj) -> Obj | None:
        return self.put(self.key_func(obj), obj)

    update = add

    def delete(self, key: str) -> Obj | None:
        """Remove ``key``; the removed object, or None if it was not stored."""
        old = self._items.pop(key, None)
        if old is not None:
            self._reindex(key, None)
            for listener in self._listeners:
                listener(key)
        return old

    def replace(self, objs: Iterable[Obj]) -> None:
        """Make the store hold exactly ``objs`` (upstream ``Replace``), rebuilding every index."""
        self._items = {self.key_func(obj): obj for obj in objs}
        self._indices = {name: {} for name in self._indexers}
        self._values = {}
        for key, obj in self._items.items():
            self._reindex(key, obj)
        for listener in self._listeners:
            listener(None)

    def _reindex(self, key: str, new: Obj | None) -> None:
        """Move ``key`` from the index values of the object stored before to those of ``new`` (None: removed)."""
        values = self._values
        before = values.get(key)
        if new is None:
            after = None
            values.pop(key, None)
        else:
            after = tuple([list(func(new)) for func in self._indexers.values()])
            values[key] = after
        if before == after:
            return  # the common case (a pod keeps its namespace and node): nothing to move
        for i, name in enumerate(self._indexers):
            old_values = before[i] if before is not None else []
            new_values = after[i] if after is not None else []
            if old_values == new_values:
                continue
            buckets = self._indices[name]
            for value in old_values:
                bucket = buckets.get(value)
                if bucket is not None:
                    bucket.pop(key, None)
                    if not bucket:
                        del buckets[value]
            for value in new_values:
                buckets.setdefault(value, {})[key] = None

    # -- reads -------------------------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def list(self) -> builtins.list[Obj]:
        return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        return list(self._items)

    def items(self) -> builtins.list[tuple[str, Obj]]:
        return list(self._items.items())

    def has_index(self, index_name: str) -> bool:
        return index_name in self._indexers

    def _bucket(self, index_name: str, value: str) -> dict[str, None]:
        try:
            buckets = self._indices[index_name]
        except KeyError:
            raise KeyError(f"index with name {index_name!r} does not exist") from None
        return buckets.get(value) or {}

    def by_index(self, index_name: str, value: str) -> builtins.list[Obj]:
        """Objects whose ``index_name`` function yields ``value``; KeyError for an unknown index."""
        items = self._items
        return [items[key] for key in self._bucket(index_name, value)]

    def index_keys(self, index_name: str, value: str) -> builtins.list[str]:
        return list(self._bucket(index_name, value))

    def list_index_func_values(self, index_name: str) -> builtins.list[str]:
        """Every value the index currently holds objects under."""
        return list(self._indices.get(index_name, {}))


class Lister:
    """Read-only queries over an informer's indexer (upstream's generated listers, for every resource).

    ``namespace`` None or ``""`` means all namespaces (upstream ``metav1.NamespaceAll``). Results are the
    cached objects themselves: never change them.
    """

    def __init__(self, indexer: Indexer) -> None:
        self.indexer = indexer

    def list(
        self, namespace: str | None = None, label_selector: str | apilabels.Selector | None = None
    ) -> builtins.list[Obj]:
        """Objects in ``namespace`` (all if None) whose labels match ``label_selector`` (a string is parsed;
        a malformed one raises :class:`kubeplane.api.labels.SelectorError`)."""
        if namespace:
            if self.indexer.has_index(NAMESPACE_INDEX):
                objs = self.indexer.by_index(NAMESPACE_INDEX, namespace)
            else:
                objs = [o for o in self.indexer.list() if meta_of(o).get("namespace") == namespace]
        else:
            objs = self.indexer.list()
        selector = apilabels.parse(label_selector) if isinstance(label_selector, str) else label_selector
        if selector is None or selector.empty():
            return objs
        return [o for o in objs if selector.matches(labels_of(o))]

    def get(self, namespace: str | None, name: str) -> Obj | None:
        """The cached object, or None (upstream returns a NotFound error; a None is the Python spelling)."""
        return self.indexer.get(object_key(namespace, name))


def _take_ready(stream: WatchStream) -> Callable[[], builtins.list[Obj]] | None:
    """The stream's ``take_ready()`` (every event ready now, without waiting: the in-process watch has it), else
    None: the reflector then takes one event per ``__anext__``."""
    take: Callable[[], builtins.list[Obj]] | None = getattr(stream, "take_ready", None)
    return take


class Backoff:
    """Upstream ``wait.NewExponentialBackoffManager``: ``initial * factor**n`` capped at ``cap``, plus
    ``rng.random() * jitter`` of itself, reset to ``initial`` when ``reset_after`` seconds passed since the
    previous backoff."""

    def __init__(
        self,
        *,
        clock: Clock,
        rng: random.Random,
        initial: float = 0.8,
        cap: float = 30.0,
        reset_after: float = 120.0,
        factor: float = 2.0,
        jitter: float = 1.0,
    ) -> None:
        self._clock, self._rng = clock, rng
        self.initial, self.cap, self.reset_after, self.factor, self.jitter = initial, cap, reset_after, factor, jitter
        self._duration = initial
        self._last = clock.monotonic()

    def next_delay(self) -> float:
        now = self._clock.monotonic()
        if now - self._last > self.reset_after:
            self._duration = self.initial
        self._last = now
        delay = self._duration
        self._duration = min(self._duration * self.factor, self.cap)
        return delay + self._rng.random() * self.jitter * delay if self.jitter > 0 else delay


class ReflectorStore(Protocol):
    """What a reflector feeds: a full list, then watch events (both without awaiting)."""

    def replace(self, items: list[Obj], resource_version: str) -> None: ...

    def apply(self, event_type: str, obj: Obj) -> None: ...


class Reflector:
    """Keeps a :class:`ReflectorStore` in step with the server (see the module docstring)."""

    def __init__(
        self,
        *,
        client: Client,
        resource: ResourceInfo,
        store: ReflectorStore,
        clock: Clock,
        rng: random.Random,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        page_size: int = PAGE_SIZE,
        watch_list: bool = True,
    ) -> None:
        self._client, self._resource, self._store = client, resource, store
        # WatchList (sendInitialEvents) replaces list+watch while the server takes it; one rejection turns it off
        self.watch_list = watch_list
        self._synced_by_stream = False
        self._clock, self._rng = clock, rng
        self._namespace, self._label_selector, self._field_selector = namespace, label_selector, field_selector
        self._page_size = page_size
        self.backoff = Backoff(clock=clock, rng=rng)
        self.last_sync_resource_version = ""
        self.lists = 0  # completed lists (the first one included)
        self.watches = 0  # watches opened

    async def run(self) -> None:
        """List, then watch, forever (until cancelled)."""
        need_list = True
        while True:
            try:
                if need_list and self.watch_list:
                    self._synced_by_stream = False
                    try:
                        started = await self._watch_list()
                    finally:
                        # once the initial events are in, a broken stream resumes by watch, not by a new sync
                        need_list = not self._synced_by_stream
                    if started:
                        continue
                if need_list:
                    await self._list()
                    need_list = False
                if await self._watch():
                    continue
                log.info("%s: watch closed after less than a second without events", self._resource.plural)
            except GoneError as exc:
                log.info("%s: %s; re-listing", self._resource.plural, exc)
                need_list = True
            except Exception as exc:
                log.warning("%s: %s failed: %r", self._resource.plural, "list" if need_list else "watch", exc)
            await self._clock.sleep(self.backoff.next_delay())

    async def _list(self) -> None:
        """A consistent paged list (upstream's pager), handed to the store in one :meth:`replace`."""
        items: list[Obj] = []
        token = ""
        while True:
            try:
                page = await self._client.list(
                    self._resource,
                    namespace=self._namespace,
                    label_selector=self._label_selector,
                    field_selector=self._field_selector,
                    limit=self._page_size,
                    continue_token=token,
                )
            except GoneError:
                if not token:
                    raise
                items, token = [], ""  # the continue token expired mid-list: one unpaged list instead
                page = await self._client.list(
                    self._resource,
                    namespace=self._namespace,
                    label_selector=self._label_selector,
                    field_selector=self._field_selector,
                )
            items.extend(page.get("items") or [])
            meta = meta_of(page)
            token = str(meta.get("continue") or "")
            if not token:
                break
        resource_version = str(meta.get("resourceVersion") or "")
        self._store.replace(items, resource_version)
        self.last_sync_resource_version = resource_version
        self.lists += 1

    async def _watch_list(self) -> bool:
        """Sync by WatchList: the stream's initial ADDED events up to the ``k8s.io/initial-events-end`` bookmark
        replace the store in one step (as a list would), and the same stream then carries the changes.

        Returns True if the stream ran (the caller re-watches from the last resourceVersion); False if the
        server does not support WatchList (it rejected the options, or ended the stream before the end
        bookmark), in which case :attr:`watch_list` is turned off and the caller lists instead.
        """
        try:
            stream: WatchStream = await self._client.watch(
                self._resource,
                namespace=self._namespace,
                label_selector=self._label_selector,
                field_selector=self._field_selector,
                allow_bookmarks=True,
                send_initial_events=True,
                resource_version_match="NotOlderThan",
                timeout_seconds=int(MIN_WATCH_TIMEOUT * (1.0 + self._rng.random())),
            )
        except APIStatusError as exc:
            if exc.code in (400, 403, 404, 405, 422):
                log.info("%s: the server refused WatchList (%s); listing instead", self._resource.plural, exc)
                self.watch_list = False
                return False
            raise
        self.watches += 1
        take = _take_ready(stream)
        initial: list[Obj] | None = []
        try:
            async for event in stream:
                event_type, obj = event.get("type"), event.get("object") or {}
                meta = meta_of(obj)
                if initial is not None:
                    if event_type == "ADDED":
                        initial.append(obj)
                        continue
                    if event_type == "BOOKMARK" and annotations_of(obj).get(INITIAL_EVENTS_END) == "true":
                        resource_version = str(meta.get("resourceVersion") or "")
                        self._store.replace(initial, resource_version)
                        self.last_sync_resource_version = resource_version
                        self.lists += 1
                        self._synced_by_stream = True
                        initial = None
                        continue
                    if event_type == "BOOKMARK":
                        continue
                    raise ClientError(f"unexpected {event_type} event before the end of WatchList's initial events")
                self._handle(event_type, obj)
                if take is not None:
                    for more in take():  # the rest of a delivered batch, in one step
                        self._handle(more.get("type"), more.get("object") or {})
        finally:
            await stream.close()
        if initial is not None:
            log.info("%s: WatchList ended before its initial events did; listing instead", self._resource.plural)
            self.watch_list = False
            return False
        return True

    def _handle(self, event_type: object, obj: Obj) -> None:
        if event_type in ("ADDED", "MODIFIED", "DELETED"):
            self._store.apply(str(event_type), obj)
        elif event_type != "BOOKMARK":
            raise ClientError(f"unexpected watch event type {event_type!r}")
        rv = meta_of(obj).get("resourceVersion")
        if rv:
            self.last_sync_resource_version = str(rv)

    async def _watch(self) -> bool:
        """One watch from the last resourceVersion until the stream ends; False for a "very short watch"
        (under a second without events: upstream backs off before the next one)."""
        stream: WatchStream = await self._client.watch(
            self._resource,
            namespace=self._namespace,
            resource_version=self.last_sync_resource_version,
            label_selector=self._label_selector,
            field_selector=self._field_selector,
            allow_bookmarks=True,
            timeout_seconds=int(MIN_WATCH_TIMEOUT * (1.0 + self._rng.random())),
        )
        self.watches += 1
        start, count = self._clock.monotonic(), 0
        take = _take_ready(stream)
        try:
            async for event in stream:
                self._handle(event.get("type"), event.get("object") or {})
                count += 1
                if take is not None:
                    for more in take():  # the rest of a delivered batch, in one step
                        self._handle(more.get("type"), more.get("object") or {})
                        count += 1
        finally:
            await stream.close()
        return count > 0 or self._clock.monotonic() - start >= 1.0
