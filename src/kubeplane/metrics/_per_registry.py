"""One set of metrics per :class:`prometheus_client.CollectorRegistry`.

A metric name can be registered only once per registry, so every component that may be built many times in one
process (tests build many schedulers and API servers) shares the set of its registry. Invariant: for a given
registry ``get`` always returns the same object; the set lives as long as the registry does.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry

__all__ = ["PerRegistry"]

T = TypeVar("T")


class PerRegistry(Generic[T]):
    """``get(registry)``: the object ``factory(registry)`` built on first use for that registry."""

    def __init__(self, factory: Callable[[CollectorRegistry], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._by_registry: weakref.WeakKeyDictionary[CollectorRegistry, T] = weakref.WeakKeyDictionary()

    def get(self, registry: CollectorRegistry | None = None) -> T:
        """The set of ``registry`` (default: the process-wide ``prometheus_client.REGISTRY``)."""
        target = registry if registry is not None else REGISTRY
        with self._lock:
            found = self._by_registry.get(target)
            if found is None:
                found = self._by_registry[target] = self._factory(target)
        return found
