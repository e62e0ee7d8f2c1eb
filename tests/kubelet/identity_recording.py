"""Who each write arrives as: a Client wrapper labelling every call, and a registry hook reading the requester.

``RecordingClient`` logs ``(label, verb, resource, subresource)`` for every call it forwards (the routing);
``record_requesters`` wraps a registry's ``create`` and ``guaranteed_update`` (every create, update, patch and status
write goes through them) to log ``(resource, subresource, user name)`` of the requester the transport set, which
is what admission and the authorizers judge (the identity actually sent). Used by the fleet's and the controller
manager's identity tests.
"""

from __future__ import annotations

from typing import Any

from kubeplane.api.resources import ResourceInfo
from kubeplane.apiserver.auth.context import requester
from kubeplane.apiserver.registry import Registry
from kubeplane.client.interface import Client, Obj, PatchType

Call = tuple[str, str, str, str]


class RecordingClient:
    """The Client protocol over ``inner``, appending ``(label, verb, plural, subresource)`` to ``log``."""

    def __init__(self, inner: Client, label: str, log: list[Call]) -> None:
        self.inner, self.label, self.log = inner, label, log

    def _note(self, verb: str, resource: ResourceInfo, subresource: str | None) -> None:
        self.log.append((self.label, verb, resource.plural, subresource or ""))

    def resource(self, name: str) -> ResourceInfo:
        return self.inner.resource(name)

    async def get(self, resource: ResourceInfo, name: str, **kw: Any) -> Obj:
        self._note("get", resource, kw.get("subresource"))
        return await self.inner.get(resource, name, **kw)

    async def list(self, resource: ResourceInfo, **kw: Any) -> Obj:
        self._note("list", resource, None)
        return await self.inner.list(resource, **kw)

    async def watch(self, resource: ResourceInfo, **kw: Any) -> Any:
        self._note("watch", resource, None)
        return await self.inner.watch(resource, **kw)

    async def create(self, resource: ResourceInfo, obj: Obj, **kw: Any) -> Obj:
        self._note("create", resource, kw.get("subresource"))
        return await self.inner.create(resource, obj, **kw)

    async def update(self, resource: ResourceInfo, obj: Obj, **kw: Any) -> Obj:
        self._note("update", resource, kw.get("subresource"))
        return await self.inner.update(resource, obj, **kw)

    async def patch(
        self, resource: ResourceInfo, name: str, patch: Any, *, patch_type: PatchType = PatchType.MERGE, **kw: Any
    ) -> Obj:
        self._note("patch", resource, kw.get("subresource"))
        return await self.inner.patch(resource, name, patch, patch_type=patch_type, **kw)

    async def delete(self, resource: ResourceInfo, name: str, **kw: Any) -> Obj:
        self._note("delete", resource, None)
        return await self.inner.delete(resource, name, **kw)

    async def close(self) -> None:
        return None


WRITES = ("create", "update", "patch", "delete")


def record_requesters(registry: Registry) -> list[tuple[str, str, str | None]]:
    """Log ``(plural, subresource, requester's name or None)`` of every create and update the registry serves."""
    seen: list[tuple[str, str, str | None]] = []
    create, update = registry.create, registry.guaranteed_update

    def who() -> str | None:
        user = requester()
        return None if user is None else user.name

    async def recording_create(info: ResourceInfo, *args: Any, **kw: Any) -> Obj:
        seen.append((info.plural, "", who()))
        return await create(info, *args, **kw)

    async def recording_update(info: ResourceInfo, *args: Any, **kw: Any) -> Any:
        seen.append((info.plural, str(kw.get("subresource") or ""), who()))
        return await update(info, *args, **kw)

    registry.create = recording_create  # type: ignore[method-assign]
    registry.guaranteed_update = recording_update  # type: ignore[method-assign]
    return seen
