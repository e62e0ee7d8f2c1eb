"""The in-process transport: the Client protocol over an API server registry in the same event loop.

Every call goes through the same registry functions the HTTP layer uses (validation, defaulting, admission,
watch cache), so behaviour is identical to HTTP without sockets or JSON. Differences that cannot be seen from
outside: objects returned by get/list/create/update/patch/delete are private copies; objects in watch events are
shared read-only with the cache (as informers share them with handlers). Errors are the server's Status
objects raised as :mod:`kubeplane.client.errors`. This is the only client module allowed to import the API
server (DESIGN.md layering).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import orjson

from kubeplane.api.patch import json_merge_patch
from kubeplane.api.resources import ResourceInfo
from kubeplane.apiserver import subresources
from kubeplane.apiserver.deletion import DeleteOptions, delete_object
from kubeplane.apiserver.errors import APIError
from kubeplane.apiserver.listing import ListOptions, WatchOptions, list_objects, open_watch, validate_list_options
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.watchcache import CacheWatcher
from kubeplane.store.memory import MemoryStore

from .clock import Clock
from .errors import ClientError, error_for
from .interface import Obj, PatchType
from .resolve import resolve_resource

T = TypeVar("T")
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

    def _time(self) -> float:
        return self._clock.monotonic() if self._clock is not None else asyncio.get_running_loop().time()

    def __aiter__(self) -> AsyncIterator[Obj]:
        return self

    async def __anext__(self) -> Obj:
        watcher = self._watcher
        while not self._pending:
            if watcher.queue:
                self._pending = [
                    {"type": e.type, "object": self._registry._with_type(self._resource, e.obj)} for e in watcher.queue
                ]
                watcher.queue.clear()
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
            if not watcher.queue and not watcher.closed and self._bookmark_interval is not None:
                # idle: a bookmark, as the HTTP server sends, after syncing so it never passes a queued event
                cache = self._registry.cache(self._resource)
                cache.sync()
                if not watcher.queue:
                    return {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": self._resource.kind,
                            "apiVersion": self._resource.api_version,
                            "metadata": {"resourceVersion": str(cache.revision)},
                        },
                    }
        return self._pending.pop()

    async def close(self) -> None:
        self._registry.cache(self._resource).remove_watcher(self._watcher)


class LocalClient:
    """The Client protocol on a :class:`Registry`. :meth:`in_memory` builds a registry on a memory store."""

    def __init__(self, registry: Registry, *, owns_registry: bool = False, clock: Clock | None = None) -> None:
        """``clock``: the clock of watch timeouts and idle bookmarks (default: the event loop's real time); a
        simulation passes its virtual clock so that no watch depends on real time."""
        self.registry = registry
        self._owns = owns_registry
        self._clock = clock

    @classmethod
    async def in_memory(cls, *, clock: Clock | None = None, **registry_args: Any) -> LocalClient:
        registry = Registry(store=MemoryStore(), **registry_args)
        await registry.start()
        return cls(registry, owns_registry=True, clock=clock)

    def resource(self, name: str) -> ResourceInfo:
        return resolve_resource(self.registry.table, name)

    async def _call(self, coro: Awaitable[T]) -> T:
        try:
            return await coro
        except APIError as exc:
            raise error_for(exc.status) from None

    async def get(
        self, resource: ResourceInfo, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> Obj:
        if subresource == "scale":
            assert namespace is not None
            return _copy(await self._call(subresources.get_scale(self.registry, resource, namespace, name)))
        return _copy(await self._call(self.registry.get(resource, namespace, name)))

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
        return _copy(await self._call(list_objects(self.registry, resource, namespace, options)))

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
        )
        try:
            validate_list_options(
                resource_version=resource_version,
                resource_version_match=resource_version_match,
                continue_token="",
                send_initial_events=None if send_initial_events is None else str(send_initial_events).lower(),
                watch=True,
            )
            watcher = open_watch(self.registry, resource, namespace, options)
        except APIError as exc:
            raise error_for(exc.status) from None
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
        body = _copy(obj)
        if subresource == "binding":
            if namespace is None or name is None:
                raise ClientError("binding needs a namespace and the pod's name")
            return await self._call(subresources.bind(self.registry, namespace, name, body))
        if subresource == "eviction":
            if namespace is None or name is None:
                raise ClientError("eviction needs a namespace and the pod's name")
            return await self._call(subresources.evict(self.registry, namespace, name, body))
        if subresource:
            raise ClientError(f"create does not support subresource {subresource!r}")
        return _copy(await self._call(self.registry.create(resource, namespace, body)))

    async def update(
        self, resource: ResourceInfo, obj: Obj, *, namespace: str | None = None, subresource: str | None = None
    ) -> Obj:
        body = _copy(obj)
        name = str((body.get("metadata") or {}).get("name") or "")
        if subresource == "scale":
            assert namespace is not None
            return _copy(await self._call(subresources.update_scale(self.registry, resource, namespace, name, body)))
        result = self.registry.update(resource, namespace, name, body, subresource=subresource)
        return _copy(await self._call(result))

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
        if subresource == "scale":
            assert namespace is not None
            current = await self._call(subresources.get_scale(self.registry, resource, namespace, name))
            scale = json_merge_patch(current, patch)
            return _copy(await self._call(subresources.update_scale(self.registry, resource, namespace, name, scale)))
        result = subresources.patch_object(
            self.registry,
            resource,
            namespace,
            name,
            content_type=str(patch_type),
            patch=orjson.loads(orjson.dumps(patch)),  # the caller keeps its patch
            subresource=subresource,
        )
        return _copy(await self._call(result))

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
        _, body = await self._call(delete_object(self.registry, resource, namespace, name, options))
        return _copy(body)

    async def close(self) -> None:
        if self._owns:
            self._owns = False
            await self.registry.stop()
            await self.registry.store.close()
