"""The Client protocol: the Kubernetes API over plain dicts, the same for every transport.

Resources are named by :class:`~kubeplane.api.resources.ResourceInfo` (``client.resource("pods")`` resolves a
plural, short name or kind). Objects are wire-format dicts. Failures raise :mod:`kubeplane.client.errors`.

Objects a client returns belong to the caller (the in-process transport copies them), except the objects in
watch events, which informers share read-only with every handler: copy before changing one.

Watch events are ``{"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK", "object": {...}}``; an ``ERROR`` event from
the server is raised as an :class:`~kubeplane.client.errors.APIStatusError` (a 410 as ``GoneError``), and the
iteration ends when the server ends the watch (timeout) or :meth:`Watch.close` is called.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from kubeplane.api.resources import ResourceInfo

Obj = dict[str, Any]


class PatchType(enum.StrEnum):
    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"


@runtime_checkable
class WatchStream(Protocol):
    def __aiter__(self) -> AsyncIterator[Obj]: ...

    async def __anext__(self) -> Obj: ...

    async def close(self) -> None: ...


@runtime_checkable
class Client(Protocol):
    def resource(self, name: str) -> ResourceInfo:
        """A resource by plural, singular, short name or kind (``"pods"``, ``"po"``, ``"Deployment"``,
        ``"leases.coordination.k8s.io"``); KeyError if unknown."""
        ...

    async def get(
        self, resource: ResourceInfo, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> Obj: ...

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
        """The List object (``items``, ``metadata.resourceVersion``, ``metadata.continue``)."""
        ...

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
    ) -> WatchStream:
        """Start a watch; the first events are available as soon as this returns. ``send_initial_events=True``
        with ``resource_version_match="NotOlderThan"`` is a WatchList: the current objects as ADDED, then a
        BOOKMARK annotated ``k8s.io/initial-events-end``, then changes."""
        ...

    async def create(
        self,
        resource: ResourceInfo,
        obj: Obj,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        name: str | None = None,
    ) -> Obj:
        """Create ``obj``; with ``subresource`` (binding, eviction) POST it to ``name``'s subresource."""
        ...

    async def update(
        self, resource: ResourceInfo, obj: Obj, *, namespace: str | None = None, subresource: str | None = None
    ) -> Obj: ...

    async def patch(
        self,
        resource: ResourceInfo,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Obj: ...

    async def delete(
        self,
        resource: ResourceInfo,
        name: str,
        *,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> Obj: ...

    async def close(self) -> None: ...
