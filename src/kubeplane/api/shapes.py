"""Memos of pure functions of JSON values, keyed by the value's encoding: the write path's cheap repeat.

A control plane's writes repeat themselves: a ReplicaSet's, a Job's or a benchmark's pods differ in their names
and nothing else, so every create validates, defaults and computes the managed fields of the same ``spec``
again. :class:`ShapeMemo` keeps the answer of such a step per distinct input, keyed by ``orjson.dumps`` of the
input: the API server then pays one encode (a microsecond or two for a pod spec) instead of the step (tens to
hundreds of microseconds) whenever it has seen that exact spec before.

Invariants (why a memoised answer is the answer):
    * Only pure steps are memoised: the step's result depends on the keyed value alone (no feature gate, clock,
      random draw or other part of the object), which each user states and a test holds it to by comparing the
      memoised and the direct path on many shapes.
    * The key is exact for JSON values, which is what the write path handles (a body decoded from HTTP, or
      copied through orjson by the local transport, and stored with orjson): two values with the same encoding
      are equal, with the same types (``1`` and ``1.0`` and ``true`` encode differently) and the same key order.
      A value orjson cannot encode (non-string keys, integers beyond 64 bits) has no key and takes the direct
      path. What orjson encodes but JSON has no value for (a tuple, NaN) never reaches the write path: the
      local transport's copy already made it a list or null, as the store would.
    * What is kept is bytes or immutable: a caller gets a fresh decode (``orjson.loads``) of a kept object, so a
      consumer that mutates its answer cannot change the next caller's.
    * Memory is bounded: a value encoding to more than :data:`MAX_KEY_BYTES` has no key (a spec that big is no
      template's copy worth keeping, and its step is dwarfed by its decoding), and at
      :attr:`ShapeMemo.capacity` entries the memo starts afresh (distinct shapes in a cluster are few; a stream
      of all-different shapes only costs the encode it would have saved). Worst case a few megabytes a memo.
"""

from __future__ import annotations

from typing import ClassVar, Generic, TypeVar

import orjson

T = TypeVar("T")

CAPACITY = 256
"""Entries per memo before it is cleared."""

MAX_KEY_BYTES = 16 * 1024
"""The longest encoding memoised: a plain pod's spec is a few hundred bytes, one with many containers and
volumes a few kilobytes."""


def shape_key(value: object) -> bytes | None:
    """The memo key of a JSON value (its orjson encoding), or None when orjson cannot encode it or the encoding
    is longer than :data:`MAX_KEY_BYTES`."""
    try:
        key = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return None
    return key if len(key) <= MAX_KEY_BYTES else None


class ShapeMemo(Generic[T]):
    """A bounded map from :func:`shape_key` to a step's result (bytes or an immutable value)."""

    __slots__ = ("_entries", "capacity", "hits", "misses")

    enabled: ClassVar[bool] = True
    """False: every memo misses and keeps nothing (the direct path, for benchmarks and tests to compare)."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._entries: dict[bytes, T] = {}
        self.capacity = capacity
        self.hits = 0
        self.misses = 0

    def get(self, key: bytes | None) -> T | None:
        if key is None or not ShapeMemo.enabled:
            return None
        found = self._entries.get(key)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def put(self, key: bytes | None, result: T) -> None:
        if key is None or not ShapeMemo.enabled:
            return
        if len(self._entries) >= self.capacity:
            self._entries.clear()
        self._entries[key] = result

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
