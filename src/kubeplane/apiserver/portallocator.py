"""NodePort allocation as kube-apiserver v1.37 does it (``pkg/registry/core/service/portallocator``).

NodePorts still use the bitmap allocator persisted as one RangeAllocation object (``/registry/ranges/
servicenodeports``, upstream ``allocator/storage/storage.go``): every allocation or release reads that object,
applies the change to its bitmap and writes it back with compare-and-swap, so two API servers on one etcd never hand
out the same port and a restart reads the allocations back. Within one process a lock serializes the
read-modify-write so concurrent requests do not spin on conflicts.

Semantics (``allocator.go``, ``operation.go``)
    * The range is ``--service-node-port-range`` (``30000-32767``). Dynamic allocations prefer the upper band
      (``calculateRangeOffset``: ``min(max(16, size/32), 128)`` ports kept for static requests at the bottom).
    * Errors: ``provided port is already allocated``; ``provided port is not in the valid range. The range of
      valid ports is 30000-32767``; ``range is full``.
    * A :class:`NodePortOperation` groups one request's allocations: :meth:`~NodePortOperation.commit` keeps them
      and applies deferred releases, :meth:`~NodePortOperation.finish` without a commit gives them back (upstream
      ``PortAllocationOperation``).
"""

from __future__ import annotations

import asyncio
import base64
import random
from typing import Any

import orjson

from kubeplane.api import meta as apimeta
from kubeplane.store.interface import Conflict, Store

from .bitmap import AllocationBitmap, range_offset
from .ipallocator import ERR_FULL, AllocationError

__all__ = ["ERR_PORT_ALLOCATED", "NodePortAllocator", "NodePortOperation", "parse_port_range"]

ERR_PORT_ALLOCATED = "provided port is already allocated"
_MAX_RETRIES = 16


def parse_port_range(value: str) -> tuple[int, int]:
    """``--service-node-port-range``: ``BASE-MAX`` (inclusive) or a single port (``net.ParsePortRange``)."""
    text = value.strip()
    low, sep, high = text.partition("-")
    try:
        base, last = int(low), int(high) if sep else int(low)
    except ValueError:
        raise ValueError(f"unable to parse port range: {value}") from None
    if not 0 < base <= last <= 65535:
        raise ValueError(f"invalid port range: {value}")
    return base, last


class NodePortAllocator:
    """The node-port range and its RangeAllocation in the store."""

    def __init__(self, store: Store, base: int, last: int, *, rng: random.Random | None = None) -> None:
        self.store = store
        self.base, self.last = base, last
        self.spec = f"{base}-{last}"
        size = last - base + 1
        self.bitmap = AllocationBitmap(
            size, self.spec, offset=range_offset(size, minimum=16, maximum=128, step=32), rng=rng
        )
        self.key = apimeta.object_key("ranges", "servicenodeports", namespace=None)
        self._lock = asyncio.Lock()

    def contains(self, port: int) -> bool:
        return self.base <= port <= self.last

    async def _update(self, change: Any) -> Any:
        """Read the RangeAllocation, apply ``change(bitmap)``, write it back (compare-and-swap, retried)."""
        async with self._lock:
            for _ in range(_MAX_RETRIES):
                kv = await self.store.get(self.key)
                stored: dict[str, Any] = orjson.loads(kv.value) if kv is not None else {}
                data = base64.b64decode(stored.get("data") or "")
                if stored.get("range", self.spec) != self.spec:
                    data = b""  # the range changed: start afresh (upstream's repair controller re-adds the ports)
                self.bitmap.restore(self.spec, data)
                result = change(self.bitmap)
                _, snapshot = self.bitmap.snapshot()
                if kv is not None and snapshot == data:
                    return result
                obj = {
                    "kind": "RangeAllocation",
                    "apiVersion": "v1",
                    "metadata": {"creationTimestamp": None},
                    "range": self.spec,
                    "data": base64.b64encode(snapshot).decode(),
                }
                try:
                    if kv is None:
                        await self.store.create(self.key, orjson.dumps(obj))
                    else:
                        await self.store.update(self.key, orjson.dumps(obj), expected_mod_revision=kv.mod_revision)
                except Conflict:
                    continue
                return result
        raise AllocationError("the RangeAllocation kept changing; try again")

    async def allocate(self, port: int) -> None:
        if not self.contains(port):
            raise AllocationError(f"provided port is not in the valid range. The range of valid ports is {self.spec}")

        def take(bitmap: AllocationBitmap) -> bool:
            return bitmap.allocate(port - self.base)

        if not await self._update(take):
            raise AllocationError(ERR_PORT_ALLOCATED)

    async def allocate_next(self) -> int:
        offset = await self._update(lambda bitmap: bitmap.allocate_next())
        if offset is None:
            raise AllocationError(ERR_FULL)
        return self.base + int(offset)

    async def release(self, ports: list[int]) -> None:
        wanted = [p - self.base for p in ports if self.contains(p)]
        if not wanted:
            return

        def give_back(bitmap: AllocationBitmap) -> None:
            for offset in wanted:
                bitmap.release(offset)

        await self._update(give_back)

    async def allocated(self) -> list[int]:
        await self._update(lambda _bitmap: None)
        return [self.base + o for o in self.bitmap.offsets()]


class NodePortOperation:
    """One request's node-port changes (upstream ``PortAllocationOperation``)."""

    def __init__(self, allocator: NodePortAllocator, *, dry_run: bool) -> None:
        self.allocator = allocator
        self.dry_run = dry_run
        self.allocated: list[int] = []
        self.deferred: list[int] = []
        self._committed = False

    async def allocate(self, port: int) -> None:
        if self.dry_run:  # upstream's dry run checks the range only
            if not self.allocator.contains(port):
                await self.allocator.allocate(port)  # raises the range error
            return
        await self.allocator.allocate(port)
        self.allocated.append(port)

    async def allocate_next(self) -> int:
        if self.dry_run:
            return self.allocator.base
        port = await self.allocator.allocate_next()
        self.allocated.append(port)
        return port

    def release_deferred(self, port: int) -> None:
        self.deferred.append(port)

    async def commit(self) -> None:
        self._committed = True
        if not self.dry_run and self.deferred:
            await self.allocator.release(self.deferred)

    async def finish(self) -> None:
        """Give back what this operation allocated unless it was committed."""
        if not self._committed and self.allocated:
            await self.allocator.release(self.allocated)
            self.allocated = []
