"""Unit tests of the service allocators: the bitmap, the ClusterIP ranges and the NodePort RangeAllocation.

Each test names the upstream behaviour it pins (``pkg/registry/core/service/allocator/bitmap.go``,
``ipallocator/ipallocator.go`` and ``cidrallocator.go``, ``portallocator/allocator.go``).
"""

from __future__ import annotations

import asyncio
import random

import pytest

from kubeplane.apiserver.bitmap import AllocationBitmap, range_offset
from kubeplane.apiserver.ipallocator import AllocationError, ClusterIPAllocator, ServiceCIDR, parse_service_cidrs
from kubeplane.apiserver.portallocator import NodePortAllocator, parse_port_range
from kubeplane.store.memory import MemoryStore


def test_bitmap_fills_the_dynamic_band_first() -> None:
    """bitmap.go randomScanStrategyWithOffset: [offset, max) first, then [0, offset)."""
    bitmap = AllocationBitmap(20, "r", offset=5, rng=random.Random(1))
    first = [bitmap.allocate_next() for _ in range(15)]
    assert sorted(o for o in first if o is not None) == list(range(5, 20))
    rest = [bitmap.allocate_next() for _ in range(5)]
    assert sorted(o for o in rest if o is not None) == list(range(5))
    assert bitmap.allocate_next() is None
    assert bitmap.free() == 0


def test_bitmap_allocate_release_snapshot() -> None:
    """bitmap.go Allocate/Release/Snapshot/Restore: big.Int bytes, count from the set bits."""
    bitmap = AllocationBitmap(16, "30000-30015")
    assert bitmap.allocate(3)
    assert not bitmap.allocate(3)
    bitmap.release(3)
    bitmap.release(3)  # releasing a free item is a no-op
    assert bitmap.allocate(9)
    spec, data = bitmap.snapshot()
    assert data == (1 << 9).to_bytes(2, "big")
    other = AllocationBitmap(16, spec)
    other.restore(spec, data)
    assert other.offsets() == [9]
    assert other.count == 1
    with pytest.raises(ValueError, match="out of range"):
        bitmap.allocate(16)


def test_range_offset() -> None:
    """calculateRangeOffset: min(max(16, size/16), 256) for IPs, 16/128/32 for ports; 0 at 16 or fewer."""
    assert range_offset(16, minimum=16, maximum=256, step=16) == 0
    assert range_offset(256, minimum=16, maximum=256, step=16) == 16
    assert range_offset(1 << 20, minimum=16, maximum=256, step=16) == 256
    assert range_offset(2768, minimum=16, maximum=128, step=32) == 86


def test_service_cidr_bounds() -> None:
    """ipallocator.go NewIPAllocator: no network address, no IPv4 broadcast; IPv6 prefixes of at least /64."""
    cidr = ServiceCIDR("10.0.0.0/29")
    assert cidr.size == 6
    assert cidr.range_offset == 0
    order = list(cidr.candidates(random.Random(0)))
    assert sorted(order) == [f"10.0.0.{i}" for i in range(1, 7)]
    big = ServiceCIDR("10.96.0.0/12")
    assert big.range_offset == 256
    assert next(iter(big.candidates(random.Random(0)))) not in {f"10.96.0.{i}" for i in range(1, 256)}
    with pytest.raises(ValueError, match="shortest allowed prefix length for service CIDR is 64, got 48"):
        ServiceCIDR("fd00::/48")
    with pytest.raises(ValueError, match="must be of different IP families"):
        parse_service_cidrs("10.0.0.0/24,10.1.0.0/24")
    assert [c.family for c in parse_service_cidrs("10.0.0.0/24,fd00::/108")] == ["IPv4", "IPv6"]


def test_cluster_ip_allocator_messages_and_persistence() -> None:
    """cidrallocator.go getAllocator → ErrMismatchedNetwork; createIPAddress AlreadyExists → ErrAllocated;
    the IPAddress objects are what a new allocator reads back."""

    async def scenario() -> None:
        store = MemoryStore()
        alloc = ClusterIPAllocator(store, [ServiceCIDR("10.0.0.0/29")], rng=random.Random(3))
        parent = {"namespace": "default", "name": "a"}
        await alloc.allocate("10.0.0.1", parent)
        with pytest.raises(AllocationError, match=r"^provided IP is already allocated$"):
            await alloc.allocate("10.0.0.1", parent)
        for outside in ("10.0.0.0", "10.0.0.7", "10.0.1.1"):
            with pytest.raises(AllocationError, match=r"^the provided network does not match the current range$"):
                await alloc.allocate(outside, parent)
        got = {await alloc.allocate_next("IPv4", parent) for _ in range(5)}
        assert got == {f"10.0.0.{i}" for i in range(2, 7)}
        with pytest.raises(AllocationError, match=r"^range is full$"):
            await alloc.allocate_next("IPv4", parent)
        await alloc.release("10.0.0.4")
        fresh = ClusterIPAllocator(store, [ServiceCIDR("10.0.0.0/29")])
        await fresh.load()
        assert await fresh.allocate_next("IPv4", parent) == "10.0.0.4"
        kv = await store.get(ClusterIPAllocator.key("10.0.0.1"))
        assert kv is not None
        assert b'"parentRef":{"resource":"services","namespace":"default","name":"a"}' in kv.value

    asyncio.run(scenario())


def test_cluster_ip_concurrent_allocations_are_distinct() -> None:
    """Concurrent dynamic allocations never hand out one address twice (claimed before the store write)."""

    async def scenario() -> None:
        alloc = ClusterIPAllocator(MemoryStore(), [ServiceCIDR("10.0.0.0/26")])
        ips = await asyncio.gather(*(alloc.allocate_next("IPv4", None) for _ in range(62)))
        assert len(set(ips)) == 62

    asyncio.run(scenario())


def test_node_port_allocator_range_allocation() -> None:
    """portallocator: messages, and the RangeAllocation written back and read by another allocator."""

    async def scenario() -> None:
        store = MemoryStore()
        base, last = parse_port_range("30000-30003")
        ports = NodePortAllocator(store, base, last)
        await ports.allocate(30001)
        with pytest.raises(AllocationError, match=r"^provided port is already allocated$"):
            await ports.allocate(30001)
        with pytest.raises(
            AllocationError,
            match=r"^provided port is not in the valid range\. The range of valid ports is 30000-30003$",
        ):
            await ports.allocate(29999)
        other = NodePortAllocator(store, base, last)
        assert sorted([await other.allocate_next() for _ in range(3)]) == [30000, 30002, 30003]
        with pytest.raises(AllocationError, match=r"^range is full$"):
            await ports.allocate_next()
        await ports.release([30002])
        assert await other.allocated() == [30000, 30001, 30003]

    asyncio.run(scenario())


def test_parse_port_range() -> None:
    assert parse_port_range("30000-32767") == (30000, 32767)
    with pytest.raises(ValueError, match="unable to parse port range: x-1"):
        parse_port_range("x-1")
