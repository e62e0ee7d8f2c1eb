"""The current state of a store: every live key's latest version, in key order.

Both backends keep this in memory: reads at the current revision, the compare of every write and the
``prev_kv`` of every event come from here without touching disk. Invariant: ``_keys`` is exactly the sorted
list of ``_kvs``' keys (updates replace in the dict only; creates and deletes keep the list sorted with bisect,
which costs microseconds even at hundreds of thousands of keys).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator

from .interface import KeyValue


def prefix_end(prefix: str) -> str | None:
    """The smallest key greater than every key starting with ``prefix`` (etcd's GetPrefixRangeEnd).

    None when no such key exists (empty prefix, or a prefix of only maximal code points): the range is open.
    """
    chars = list(prefix)
    while chars:
        last = ord(chars[-1])
        if last < 0x10FFFF:
            chars[-1] = chr(last + 1)
            return "".join(chars)
        chars.pop()
    return None


def range_bounds(prefix: str, start_key: str | None) -> tuple[str, str | None]:
    """The half-open key interval [low, high) of a prefix range continued from ``start_key``."""
    low = prefix if start_key is None or start_key < prefix else start_key
    return low, prefix_end(prefix)


class KeyIndex:
    __slots__ = ("_keys", "_kvs")

    def __init__(self) -> None:
        self._kvs: dict[str, KeyValue] = {}
        self._keys: list[str] = []

    def __len__(self) -> int:
        return len(self._kvs)

    def get(self, key: str) -> KeyValue | None:
        return self._kvs.get(key)

    def put(self, kv: KeyValue) -> None:
        if kv.key not in self._kvs:
            insort(self._keys, kv.key)
        self._kvs[kv.key] = kv

    def remove(self, key: str) -> None:
        del self._kvs[key]
        keys = self._keys
        del keys[bisect_left(keys, key)]

    def values(self) -> Iterator[KeyValue]:
        """Every live version, in key order."""
        kvs = self._kvs
        return (kvs[k] for k in self._keys)

    def range(self, prefix: str, *, start_key: str | None, limit: int) -> tuple[list[KeyValue], bool, int]:
        """``(page, more, count)`` for keys in the prefix range from ``start_key``; ``limit`` 0 means all."""
        keys = self._keys
        low, high = range_bounds(prefix, start_key)
        lo = bisect_left(keys, low)
        hi = len(keys) if high is None else bisect_left(keys, high, lo)
        count = hi - lo
        end = hi if limit <= 0 or limit >= count else lo + limit
        kvs = self._kvs
        return [kvs[k] for k in keys[lo:end]], end < hi, count

    def keys_in(self, prefix: str, start_key: str | None = None) -> list[str]:
        keys = self._keys
        low, high = range_bounds(prefix, start_key)
        lo = bisect_left(keys, low)
        hi = len(keys) if high is None else bisect_left(keys, high, lo)
        return keys[lo:hi]
