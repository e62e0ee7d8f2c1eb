"""A binary heap with lookup, update and delete by key (upstream ``pkg/scheduler/backend/heap``).

Items are ordered by ``less``; items that neither precede the other come out in insertion order (an
insertion sequence number breaks ties, which upstream's Go heap leaves unspecified), so equal pods are FIFO.
``push`` of a key already present replaces the item and restores the order (``AddOrUpdate``) while keeping its
place among equals. Every operation is O(log n) calls of ``less``, except ``get``/``__contains__`` (O(1)) and
``items`` (O(n)).

Invariant: ``_index[key(item)] == i`` for ``item == _items[i]``, and the heap property holds for the order
"``less``, then sequence number".

:class:`SortKeyHeap` is the same heap for a ``less`` that compares sort keys (PrioritySort's), with the keys
compared in C; the scheduling queue uses it for activeQ when the QueueSort plugin offers a ``sort_key``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

__all__ = ["KeyedHeap", "SortKeyHeap"]

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """A min-heap by ``less`` over items identified by ``key(item)``; see the module docstring."""

    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[T] = []
        self._seqs: list[int] = []
        self._keys: list[str] = []
        self._index: dict[str, int] = {}
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __iter__(self) -> Iterator[T]:
        """The items in heap (not sorted) order."""
        return iter(list(self._items))

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return self._items[i] if i is not None else None

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def push(self, item: T) -> None:
        """Add ``item``, or replace the item with the same key and restore the order."""
        key = self._key(item)
        i = self._index.get(key)
        if i is not None:
            self._items[i] = item
            self._fix(i)
            return
        i = len(self._items)
        self._items.append(item)
        self._seqs.append(next(self._counter))
        self._keys.append(key)
        self._index[key] = i
        self._up(i)

    def pop(self) -> T:
        """Remove and return the first item; IndexError when empty."""
        if not self._items:
            raise IndexError("pop from an empty heap")
        return self._remove_at(0)

    def delete(self, key: str) -> T | None:
        """Remove the item with ``key``; returns it, or None when absent."""
        i = self._index.get(key)
        return self._remove_at(i) if i is not None else None

    def items(self) -> list[T]:
        return list(self._items)

    # --- internals -----------------------------------------------------------------------------------------

    def _lt(self, i: int, j: int) -> bool:
        a, b = self._items[i], self._items[j]
        if self._less(a, b):
            return True
        if self._less(b, a):
            return False
        return self._seqs[i] < self._seqs[j]

    def _swap(self, i: int, j: int) -> None:
        items, seqs, keys = self._items, self._seqs, self._keys
        items[i], items[j] = items[j], items[i]
        seqs[i], seqs[j] = seqs[j], seqs[i]
        keys[i], keys[j] = keys[j], keys[i]
        self._index[keys[i]] = i
        self._index[keys[j]] = j

    def _up(self, i: int) -> bool:
        moved = False
        while i > 0:
            parent = (i - 1) >> 1
            if not self._lt(i, parent):
                break
            self._swap(i, parent)
            i = parent
            moved = True
        return moved

    def _down(self, i: int) -> None:
        n = len(self._items)
        while True:
            left = 2 * i + 1
            if left >= n:
                return
            child = left
            right = left + 1
            if right < n and self._lt(right, left):
                child = right
            if not self._lt(child, i):
                return
            self._swap(i, child)
            i = child

    def _fix(self, i: int) -> None:
        if not self._up(i):
            self._down(i)

    def _remove_at(self, i: int) -> T:
        last = len(self._items) - 1
        if i != last:
            self._swap(i, last)
        item = self._items.pop()
        self._seqs.pop()
        del self._index[self._keys.pop()]
        if i != last:
            self._fix(i)
        return item


class SortKeyHeap(Generic[T]):
    """:class:`KeyedHeap`'s interface and order for a ``less`` that is a comparison of sort keys: ``less(a, b)``
    exactly when ``sort_key(a) < sort_key(b)`` (PrioritySort's ``(-priority, timestamp)``).

    Why: activeQ pops once per scheduling cycle from a heap of up to every pending pod, and ``KeyedHeap`` calls
    ``less`` (two Python calls) at each of ~2 log n steps of a sift; here the entries are lists compared by the C
    ``heapq`` (sort key, then insertion sequence number, as ``KeyedHeap`` breaks ties).

    Invariants: ``_live[key]`` is the one live entry ``[sort_key(item), seq, version, key, item]`` of each key;
    an entry in ``_heap`` that is not its key's live entry (replaced by ``push`` or removed by ``delete``) is
    stale and skipped when it reaches the top; an update keeps its key's ``seq`` (its place among equals, as
    ``KeyedHeap``); ``version`` is unique, so no comparison reaches ``key`` or ``item``. Stale entries are
    dropped all at once when they outnumber the live ones (plus a margin), so the heap stays O(live).
    The sort key is taken when an item is pushed: an item changed while queued must be pushed again (the queue
    does: ``update`` replaces the pod info and pushes; ``KeyedHeap`` needs the same).
    """

    def __init__(self, key: Callable[[T], str], sort_key: Callable[[T], Any]) -> None:
        self._key = key
        self._sort_key = sort_key
        self._heap: list[list[Any]] = []
        self._live: dict[str, list[Any]] = {}
        self._counter = itertools.count()

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def __iter__(self) -> Iterator[T]:
        """The items in no particular order."""
        return iter([entry[4] for entry in self._live.values()])

    def get(self, key: str) -> T | None:
        entry = self._live.get(key)
        return entry[4] if entry is not None else None

    def peek(self) -> T | None:
        self._drop_stale_top()
        return self._heap[0][4] if self._heap else None

    def push(self, item: T) -> None:
        """Add ``item``, or replace the item with the same key (keeping its place among equals)."""
        key = self._key(item)
        old = self._live.get(key)
        seq = old[1] if old is not None else next(self._counter)
        entry = [self._sort_key(item), seq, next(self._counter), key, item]
        self._live[key] = entry
        heapq.heappush(self._heap, entry)
        if old is not None:
            self._compact_if_stale()

    def pop(self) -> T:
        """Remove and return the first item; IndexError when empty."""
        self._drop_stale_top()
        if not self._heap:
            raise IndexError("pop from an empty heap")
        entry = heapq.heappop(self._heap)
        del self._live[entry[3]]
        return entry[4]  # type: ignore[no-any-return]

    def delete(self, key: str) -> T | None:
        """Remove the item with ``key``; returns it, or None when absent."""
        entry = self._live.pop(key, None)
        if entry is None:
            return None
        self._compact_if_stale()
        return entry[4]  # type: ignore[no-any-return]

    def items(self) -> list[T]:
        return list(self)

    def _drop_stale_top(self) -> None:
        heap, live = self._heap, self._live
        while heap and live.get(heap[0][3]) is not heap[0]:
            heapq.heappop(heap)

    def _compact_if_stale(self) -> None:
        if len(self._heap) > 2 * len(self._live) + 64:
            self._heap = list(self._live.values())
            heapq.heapify(self._heap)
