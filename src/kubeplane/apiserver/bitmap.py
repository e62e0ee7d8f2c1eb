"""The allocation bitmap of kube-apiserver's service allocators (``pkg/registry/core/service/allocator``).

An :class:`AllocationBitmap` holds ``size`` items by offset; an item is taken when its bit is set. It is the
in-memory half of both service allocators: the ClusterIP allocator (:mod:`.ipallocator`) mirrors the IPAddress
objects of the store in one, the NodePort allocator (:mod:`.portallocator`) snapshots one into its
RangeAllocation object.

Invariants (upstream ``bitmap.go``)
    * ``count`` is always the number of set bits; ``free() == size - count``.
    * :meth:`allocate_next` is upstream's ``randomScanStrategyWithOffset``: items ``[offset, size)`` (the
      *dynamic* band) are tried first, from a random start, wrapping inside the band; only when the band is full
      are ``[0, offset)`` (the band KEP-3070 keeps for static requests) tried, again from a random start. With
      ``offset == 0`` it is the plain random scan.
    * :meth:`snapshot` / :meth:`restore` are ``big.Int.Bytes()`` / ``SetBytes``: the bits as a big-endian
      integer, so a RangeAllocation written by kube-apiserver reads back the same.
"""

from __future__ import annotations

import random

__all__ = ["AllocationBitmap", "range_offset"]


def range_offset(size: int, *, minimum: int, maximum: int, step: int) -> int:
    """Upstream ``calculateRangeOffset``: ``min(max(minimum, size/step), maximum)``, 0 for a range of
    ``minimum`` items or fewer. ClusterIPs use 16/256/16 on the CIDR's size, NodePorts 16/128/32 on the range's."""
    if size <= minimum:
        return 0
    return max(minimum, min(size // step, maximum))


class AllocationBitmap:
    """A bitmap of ``size`` items whose dynamic allocations prefer ``[offset, size)``."""

    def __init__(self, size: int, range_spec: str, *, offset: int = 0, rng: random.Random | None = None) -> None:
        if not 0 <= offset <= max(size, 0):
            raise ValueError(f"offset {offset} out of range [0,{size}]")
        self.size = max(size, 0)
        self.range_spec = range_spec
        self.offset = offset
        self.rng = rng or random.Random()
        self._bits = 0
        self.count = 0

    def has(self, offset: int) -> bool:
        return offset >= 0 and (self._bits >> offset) & 1 == 1

    def allocate(self, offset: int) -> bool:
        """Take ``offset``; False when it was taken already. Out of range is a ``ValueError`` (upstream's
        ``offset %d out of range [0,%d]``)."""
        if not 0 <= offset < self.size:
            raise ValueError(f"offset {offset} out of range [0,{self.size}]")
        if self.has(offset):
            return False
        self._bits |= 1 << offset
        self.count += 1
        return True

    def allocate_next(self) -> int | None:
        """A free offset, now taken (the dynamic band first, see the module doc), or None when full."""
        found = self.peek_next()
        if found is not None:
            self._bits |= 1 << found
            self.count += 1
        return found

    def peek_next(self) -> int | None:
        """The offset :meth:`allocate_next` would take, without taking it."""
        if self.count >= self.size:
            return None
        upper = self.size - self.offset
        if upper > 0:
            found = self._scan(self.offset, upper)
            if found is not None:
                return found
        return self._scan(0, self.offset) if self.offset > 0 else None

    def _scan(self, base: int, length: int) -> int | None:
        start = self.rng.randrange(length)
        bits = self._bits
        for i in range(length):
            at = base + (start + i) % length
            if not (bits >> at) & 1:
                return at
        return None

    def release(self, offset: int) -> None:
        """Free ``offset``; releasing a free or out-of-range item is a no-op (upstream)."""
        if self.has(offset):
            self._bits &= ~(1 << offset)
            self.count -= 1

    def free(self) -> int:
        return self.size - self.count

    def offsets(self) -> list[int]:
        """Every taken offset, ascending (upstream ``ForEach``)."""
        bits, result, at = self._bits, [], 0
        while bits:
            if bits & 1:
                result.append(at)
            bits >>= 1
            at += 1
        return result

    def snapshot(self) -> tuple[str, bytes]:
        """``(range spec, big-endian bytes)``, as upstream's ``Snapshot`` (``big.Int.Bytes``: no leading zeros)."""
        return self.range_spec, self._bits.to_bytes((self._bits.bit_length() + 7) // 8, "big")

    def restore(self, range_spec: str, data: bytes) -> None:
        if range_spec != self.range_spec:
            raise ValueError("the provided range does not match the current range")
        self._bits = int.from_bytes(data, "big")
        self.count = self._bits.bit_count()
