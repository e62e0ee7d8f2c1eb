"""Name -> plugin factory, refusing duplicates; in-tree and out-of-tree registries merge (upstream ``Registry``).

A factory is ``new(args, handle) -> plugin``. The registry also knows each plugin's class, so the extension
points a plugin implements (needed to expand ``multiPoint``) are known without instantiating it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)

__all__ = ["POINT_PROTOCOLS", "PluginEntry", "Registry", "extension_points_of"]

POINT_PROTOCOLS: tuple[tuple[str, type], ...] = (
    ("preEnqueue", PreEnqueuePlugin),
    ("queueSort", QueueSortPlugin),
    ("preFilter", PreFilterPlugin),
    ("filter", FilterPlugin),
    ("postFilter", PostFilterPlugin),
    ("preScore", PreScorePlugin),
    ("score", ScorePlugin),
    ("reserve", ReservePlugin),
    ("permit", PermitPlugin),
    ("preBind", PreBindPlugin),
    ("bind", BindPlugin),
    ("postBind", PostBindPlugin),
)


def extension_points_of(cls: type) -> frozenset[str]:
    """The extension points a plugin class implements (by its methods, as Go's interface assertions)."""
    return frozenset(point for point, proto in POINT_PROTOCOLS if issubclass(cls, proto))


@dataclass(frozen=True, slots=True)
class PluginEntry:
    name: str
    cls: type
    factory: Callable[[Mapping[str, Any], Handle], Plugin]

    @property
    def points(self) -> frozenset[str]:
        return extension_points_of(self.cls)


class Registry:
    """Plugin name -> :class:`PluginEntry`. ``register`` refuses a name twice (upstream error text)."""

    def __init__(self) -> None:
        self._entries: dict[str, PluginEntry] = {}

    def register(
        self, name: str, cls: type, factory: Callable[[Mapping[str, Any], Handle], Plugin] | None = None
    ) -> None:
        if name in self._entries:
            raise ValueError(f"a plugin named {name} already exists")
        self._entries[name] = PluginEntry(name, cls, factory if factory is not None else _default_factory(cls))

    def merge(self, other: Registry) -> None:
        for entry in other._entries.values():
            self.register(entry.name, entry.cls, entry.factory)

    def new(self, name: str, args: Mapping[str, Any], handle: Handle) -> Plugin:
        entry = self._entries.get(name)
        if entry is None:
            raise KeyError(f"plugin {name!r} does not exist")
        return entry.factory(args, handle)

    def available(self) -> dict[str, frozenset[str]]:
        """Name -> extension points, the input of config.resolve_plugins."""
        return {name: entry.points for name, entry in self._entries.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)


def _default_factory(cls: type) -> Callable[[Mapping[str, Any], Handle], Plugin]:
    def factory(args: Mapping[str, Any], handle: Handle) -> Plugin:
        plugin: Plugin = cls(args, handle)
        return plugin

    return factory
