"""PriorityClass helpers shared by the API server's Priority admission and offline ``kubeplane explain``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["global_default_class"]


def global_default_class(classes: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The PriorityClass pods without ``priorityClassName`` get: the ``globalDefault`` one, or when a race left
    several, the one with the lowest value (upstream admission's ``getDefaultPriorityClass``); None if none."""
    defaults = [c for c in classes if c.get("globalDefault")]
    return min(defaults, key=lambda c: int(c.get("value", 0))) if defaults else None
