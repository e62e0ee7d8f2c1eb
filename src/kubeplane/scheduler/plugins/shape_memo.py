"""A bounded memo of what a plugin derives from a pod's own fields alone, shared by the pods of one shape (issue 29).

Why: pods of one workload carry the same spreading constraints, selectors and requests, and a scheduling cycle
builds per-pod state from them again for every pod (PodTopologySpread compiles its constraints' label selectors
at PreFilter and again at PreScore, about a tenth of a spreading cycle). Keyed by the exact JSON bytes of the
fields the derivation reads, the second pod of a shape reads what the first one built.

Invariants:

* ``build`` must be a function of what ``key`` encodes (and of the plugin's fixed configuration): equal keys give
  equal values, so a hit returns exactly what building again would. The value must be immutable, or copied by
  the caller before it is changed.
* :func:`json_key` is None for values orjson cannot encode (then nothing is memoised) and never equal for values
  that differ (bytes of canonical-order JSON: equal dicts written in another key order only miss).
* Bounded: the memo forgets everything when it holds ``limit`` keys (a workload's shapes come back at once).
* A ``build`` that raises is not memoised: the next pod raises the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import orjson

__all__ = ["ShapeMemo", "json_key"]

V = TypeVar("V")


def json_key(value: object) -> bytes | None:
    """``value``'s JSON bytes, keys sorted; None when it is not JSON (nothing is memoised then)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None


class ShapeMemo(Generic[V]):
    """``get(key, build)``: ``build()`` once per ``key`` while the memo holds it (module docstring)."""

    __slots__ = ("_limit", "_values")

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._values: dict[Hashable, V] = {}

    def __len__(self) -> int:
        return len(self._values)

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        values = self._values
        value = values.get(key)
        if value is None:
            value = build()
            if len(values) >= self._limit:
                values.clear()
            values[key] = value
        return value
