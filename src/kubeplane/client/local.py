"""The in-process transport: the Client protocol over an API server registry in the same event loop.

Every call goes through the API server's request table (:mod:`kubeplane.apiserver.dispatch`), the one the
HTTP app dispatches to, so each verb and subresource behaves as over HTTP (validation, defaulting, admission,
watch cache, the 404s and 405s of what a call addresses) without sockets or JSON. What is this transport's own:
arguments the HTTP transport would turn into a URL are taken the same way (a cluster-scoped resource ignores
``namespace``; ``name`` of a create names a subresource's object only); objects returned are private copies
(unless the server built them for this call alone); objects in watch events are shared read-only with the
cache (as informers share them with handlers); watches end and send idle bookmarks on the injected clock.
Errors are the server's Status objects raised as :mod:`kubeplane.client.errors`. This is the only client module
allowed to import the API server (DESIGN.md layering).
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import orjson

from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import name_of
from kubeplane.apiserver import conversion
from kubeplane.apiserver.auth import attributes_of
from kubeplane.apiserver.auth.context import acting_as
from kubeplane.apiserver.deletion import DeleteOptions
from kubeplane.apiserver.dispatch import Call, resolve
from kubeplane.apiserver.errors import APIError
from kubeplane.apiserver.listing import ListOptions, WatchOptions, bookmark_event
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.apiserver.watchcache import CacheWatcher, Decoded, tight
from kubeplane.store.memory import MemoryStore

from .clock import Clock
from .errors import ClientError, error_for
from .interface import Obj, PatchType
from .resolve import resolve_resource

BOOKMARK_INTERVAL = 5.0  # as the HTTP server's idle bookmark cadence


def _copy(obj: Obj) -> Obj:
    result: Obj = orjson.loads(orjson.dumps(obj))
    return result


class LocalWatch:
    """A watch over a registry's watch cache. Ends after ``timeout_seconds`` (if given) or :meth:`close`."""

    def __init__(
        self,
        registry: Registry,
        resource: ResourceInfo,
        watcher: CacheWatcher,
        timeout: float | None,
        *,
        bookmark_interval: float | None = BOOKMARK_INTERVAL,
        clock: Clock | None = None,
    ) -> None:
        self._registry = registry
        self._resource = resource
        self._watcher = watcher
        self._clock = clock
        self._deadline = None if timeout is None else self._time() + timeout
        self._bookmark_interval = bookmark_interval
        self._pending: list[Obj] = []
        self._as_stored = not conversion.presents(resource)
        self._api_version, self._kind = resource.api_version, resource.kind

    def _typed(self, obj: Obj) -> Obj:
        """``obj`` as the registry presents it (``Registry._with_type``), the common case (stored as served, with
        its apiVersion and kind) answered without asking the resource's conversion rules for every event."""
        if self._as_stored and obj.get("apiVersion") == self._api_version and obj.get("kind") == self._kind:
            return obj
        return self._registry._with_type(self._resource, obj)

    def _time(self) -> float:
        return self._clock.monotonic() if self._clock is not None else asyncio.get_running_loop().time()

    def __aiter__(self) -> AsyncIterator[Obj]:
        return self

    async def __anext__(self) -> Obj:
        watcher = self._watcher
        while not self._pending:
            if watcher.pending:
                self._pending = [{"type": e.type, "object": self._typed(e.obj)} for e in watcher.drain()]
                self._pending.reverse()
                break
            if watcher.closed:
                raise StopAsyncIteration
            wait = self._bookmark_interval or 3600.0
            if self._deadline is not None:
                remaining = self._deadline - self._time()
                if remaining <= 0:
                    await self.close()
                    raise StopAsyncIteration
                wait = min(wait, remaining)
            await watcher.wait(wait, sleep=None if self._clock is None else self._clock.sleep)
            if not watcher.pending and not watcher.closed and self._bookmark_interval is not None:
                # idle: a bookmark, as the HTTP server sends, after syncing so it never passes a queued event
                revision = self._registry.cache(self._resource).bookmark_revision(watcher)
                if revision is not None:
                    return bookmark_event(self._resource, revision)
        return self._pending.pop()

    def take_ready(self) -> list[Obj]:
        """Every event ready now, in order, without waiting: what the next ``__anext__`` calls would return
        before one of them waits (none of them suspends while events are ready), taken in one call so that a
        consumer applies a delivered batch in one step."""
        ready = self._pending[::-1]
        self._pending = []
        watcher = self._watcher
        if watcher.pending:
            ready.extend({"type": e.type, "object": self._typed(e.obj)} for e in watcher.drain())
        return ready

    async def close(self) -> None:
        self._registry.cache(self._resource).remove_watcher(self._watcher)


class LocalClient:
    """The Client protocol on a :class:`Registry`. :meth:`in_memory` builds a registry on a memory store."""

    def __init__(
        self,
        registry: Registry,
        *,
        user: UserInfo | None = None,
        owns_registry: bool = False,
        clock: Clock | None = None,
    ) -> None:
        """``user``: who the calls are (a component's identity): each call and watch is authorized by
        ``registry.authorizer`` with the attributes the same request over HTTP would have, and runs as that user
        (admission and escalation checks read it); None: the server's own trusted caller, nothing authorized.
        ``clock``: the clock of watch timeouts and idle bookmarks (default: the event loop's real time); a
        simulation passes its virtual clock so that no watch depends on real time."""
        self.registry = registry
        self.user = user
        self._owns = owns_registry
        self._clock = clock

    def as_user(self, user: UserInfo | None) -> LocalClient:
        """A client on the same registry calling as ``user`` (it does not own the registry: closing it leaves
        the registry running)."""
        return LocalClient(self.registry, user=user, clock=self._clock)

    def _authorize(self, call: Call) -> None:
        """``WithAuthorization`` for this transport: the call's attributes as :mod:`..apiserver.auth.attributes_of`
        makes them for HTTP (403 as the client's error)."""
        user = self.user
        if user is None:
            return
        options = call.watch_options if call.verb == "watch" else call.list_options
        resource = call.resource
        attrs = attributes_of.resource_attributes(
            user,
            verb=call.verb,
            group=resource.group,
            version=resource.version,
            resource=resource.plural,
            namespace=call.namespace,
            name=call.name,
            subresource=call.subresource,
            field_selector=options.field_selector if options is not None else "",
            label_selector=options.label_selector if options is not None else "",
        )
        try:
            attributes_of.authorize(self.registry.authorizer, attrs)
        except APIError as exc:
            raise error_for(exc.status) from None

    @classmethod
    async def in_memory(cls, *, clock: Clock | None = None, **registry_args: Any) -> LocalClient:
        registry = Registry(store=MemoryStore(), **registry_args)
        await registry.start()
        return cls(registry, owns_registry=True, clock=clock)

    def resource(self, name: str) -> ResourceInfo:
        return resolve_resource(self.registry.table, name)

    async def _dispatch(self, call: Call) -> Any:
        """The body of the call's route, authorized and run as the client's user; the server's errors as the
        client's."""
        self._authorize(call)
        call.user = self.user
        try:
            with acting_as(self.user):
                return await resolve(call).handler(self.registry, call)
        except APIError as exc:
            raise error_for(exc.status) from None

    async def _object(self, call: Call) -> Obj:
        """:meth:`_dispatch` for an object the caller keeps: a copy unless the route built it for this call."""
        self._authorize(call)
        call.user = self.user
        try:
            route = resolve(call)
            with acting_as(self.user):
                result: Obj = await route.handler(self.registry, call)
        except APIError as exc:
            raise error_for(exc.status) from None
        return result if route.fresh else _copy(result)

    async def get(
        self, resource: ResourceInfo, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> Obj:
        return await self._object(
            Call("get", resource, _scoped(resource, namespace), name=name, subresource=subresource or "")
        )

    async def list(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
    ) -> Obj:
        options = ListOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
        )
        return await self._object(Call("list", resource, _scoped(resource, namespace), list_options=options))

    async def watch(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str = "",
    ) -> LocalWatch:
        options = WatchOptions(
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events,
            resource_version_match=resource_version_match,
        )
        watcher: CacheWatcher = await self._dispatch(
            Call("watch", resource, _scoped(resource, namespace), watch_options=options)
        )
        return LocalWatch(
            self.registry,
            resource,
            watcher,
            float(timeout_seconds) if timeout_seconds else None,
            bookmark_interval=BOOKMARK_INTERVAL if allow_bookmarks else None,
            clock=self._clock,
        )

    async def create(
        self,
        resource: ResourceInfo,
        obj: Obj,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        name: str | None = None,
    ) -> Obj:
        if subresource in ("binding", "eviction") and (namespace is None or name is None):
            raise ClientError(f"{subresource} needs a namespace and the pod's name")
        call = Call(
            "create",
            resource,
            _scoped(resource, namespace),
            name=(name or "") if subresource else "",
            subresource=subresource or "",
            body=_copy(obj),
        )
        return await self._object(call)

    async def update(
        self, resource: ResourceInfo, obj: Obj, *, namespace: str | None = None, subresource: str | None = None
    ) -> Obj:
        body = _copy(obj)
        name = str(name_of(body))
        call = Call(
            "update", resource, _scoped(resource, namespace), name=name, subresource=subresource or "", body=body
        )
        return await self._object(call)

    async def patch(
        self,
        resource: ResourceInfo,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Obj:
        call = Call(
            "patch",
            resource,
            _scoped(resource, namespace),
            name=name,
            subresource=subresource or "",
            body=orjson.loads(orjson.dumps(patch)),  # the caller keeps its patch
            patch_type=str(patch_type),
        )
        return await self._object(call)

    async def put_prepared(self, resource: ResourceInfo, obj: Obj, *, namespace: str | None = None) -> Obj | None:
        """Compare-and-put ``obj`` exactly as given (its ``resourceVersion`` the expected mod revision); the stored
        object with its new ``resourceVersion``, or None when the stored one is another revision or gone.

        For trusted in-process writers only (``user`` None, so nothing is authorized or admitted anyway) that
        built ``obj`` as the full update would store it: no defaulting, validation, admission or managed-fields
        bookkeeping runs (e.g. :mod:`kubeplane.kubelet.lease_writer`). Watchers see an ordinary MODIFIED
        event. ``obj`` is not kept: the caller may keep and reuse it."""
        stored = await self.put_prepared_many(resource, [obj], namespace=namespace)
        return stored[0] if stored else None

    async def put_prepared_many(
        self,
        resource: ResourceInfo,
        objs: Sequence[Obj],
        *,
        namespace: str | None = None,
        keys: Sequence[str] | None = None,
        bodies: Sequence[bytes | None] | None = None,
    ) -> builtins.list[Obj]:
        """:meth:`put_prepared` of each of ``objs`` in order as one store batch (``Store.update_many``: each at
        its own revision, watchers reached once); the stored objects of the leading ones written, stopping
        before the first whose stored revision is another or that is gone. ``keys``: the objects' storage keys
        (``resource.key`` of their names), when the caller keeps them; ``bodies``: their encodings without
        ``resourceVersion`` (None for one to encode here), when the caller has them."""
        if self.user is not None or conversion.converts(resource):
            raise ClientError("put_prepared is for the trusted in-process caller on resources stored as served")
        scoped = _scoped(resource, namespace)
        updates: builtins.list[tuple[str, bytes, int | None]] = []
        for k, obj in enumerate(objs):
            meta = obj["metadata"]
            key = resource.key(str(meta["name"]), scoped) if keys is None else keys[k]
            body = None if bodies is None else bodies[k]
            if body is None:
                bare = dict(meta)
                del bare["resourceVersion"]
                body = tight(orjson.dumps({**obj, "metadata": bare}))  # orjson's buffer is oversized: keep a fit copy
            updates.append((key, body, int(meta["resourceVersion"])))
        kvs = await self.registry.store.update_many(updates)
        cache = self.registry.cache(resource) if kvs else None
        out: builtins.list[Obj] = []
        for obj, (key, _, _), kv in zip(objs, updates, kvs, strict=False):
            meta = obj["metadata"]
            stored = Decoded(obj, metadata={**meta, "resourceVersion": str(kv.mod_revision)})
            if cache is not None and next(reversed(meta)) == "resourceVersion":
                cache.expect(key, kv.mod_revision, stored)  # as decoding puts it (last): the cache need not decode
            out.append(stored)
        return out

    async def put_built_many(
        self,
        resource: ResourceInfo,
        updates: Sequence[tuple[str, bytes, int]],
        build: Callable[[int, str], Obj],
    ) -> builtins.list[Obj]:
        """:meth:`put_prepared_many` for a writer that has each object's storage key, stored bytes (without
        ``resourceVersion``) and expected mod revision, ``updates``, before it has the object: ``build(k,
        resource_version)`` then makes the ``k``-th stored object once, with its new ``resourceVersion`` (last in
        its metadata, as decoding puts it), instead of the object and a copy with the new revision. Same store
        batch, same watch events, same stopping before the first refused; the objects are shared read-only (the
        watch cache hands the same ones to watchers). The fleet's Lease renewals written ahead
        (:func:`kubeplane.kubelet.lease_writer.renew_built`)."""
        if self.user is not None or conversion.converts(resource):
            raise ClientError("put_built_many is for the trusted in-process caller on resources stored as served")
        kvs = await self.registry.store.update_many(updates)
        cache = self.registry.cache(resource) if kvs else None
        out: builtins.list[Obj] = []
        for k, kv in enumerate(kvs):
            stored = Decoded(build(k, str(kv.mod_revision)))
            if cache is not None:
                cache.expect(kv.key, kv.mod_revision, stored)
            out.append(stored)
        return out

    async def delete(
        self,
        resource: ResourceInfo,
        name: str,
        *,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> Obj:
        preconditions = preconditions or {}
        options = DeleteOptions(
            grace_period_seconds,
            propagation_policy,
            preconditions.get("uid"),
            preconditions.get("resourceVersion"),
        )
        return await self._object(
            Call("delete", resource, _scoped(resource, namespace), name=name, delete_options=options)
        )

    async def close(self) -> None:
        if self._owns:
            self._owns = False
            await self.registry.stop()
            await self.registry.store.close()


def _scoped(resource: ResourceInfo, namespace: str | None) -> str | None:
    """The namespace a call addresses: none for a cluster-scoped resource, as the HTTP transport's URLs."""
    return namespace if resource.namespaced else None
