"""Name -> plugin factory, refusing duplicates; in-tree and out-of-tree registries merge (upstream ``Registry``).

A factory is ``new(args, handle) -> plugin``. The registry also knows each plugin's class, so the extension
points a plugin implements (needed to expand ``multiPoint``) are known without instantiating it, and, for an
out-of-tree plugin with typed args (:mod:`.plugin_args`), its args dataclass, so the profile builder can check
every ``pluginConfig`` entry against it before any plugin is constructed. ``origin`` says where an entry came
from (``in-tree``, an entry point, an ``outOfTreeRegistry`` import path), for error messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kubeplane.api.validation import field as fielderr
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
from kubeplane.scheduler.framework.plugin_args import decode_args

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
    factory: Callable[[Any, Handle], Plugin]
    args_type: type | None = None
    origin: str = "in-tree"

    @property
    def points(self) -> frozenset[str]:
        return extension_points_of(self.cls)


class Registry:
    """Plugin name -> :class:`PluginEntry`. ``register`` refuses a name twice (upstream error text)."""

    def __init__(self) -> None:
        self._entries: dict[str, PluginEntry] = {}

    def register(
        self,
        name: str,
        cls: type,
        factory: Callable[[Any, Handle], Plugin] | None = None,
        *,
        args_type: type | None = None,
        origin: str = "in-tree",
    ) -> None:
        """Add ``name``. ``factory`` defaults to ``cls(args, handle)``; with ``args_type`` it receives the args
        already decoded (``pluginConfig`` entries are checked against ``args_type`` when profiles are built)."""
        if name in self._entries:
            raise ValueError(f"a plugin named {name} already exists")
        if factory is None:
            factory = _default_factory(cls)
        self._entries[name] = PluginEntry(name, cls, factory, args_type, origin)

    def merge(self, other: Registry) -> None:
        for entry in other._entries.values():
            self.register(entry.name, entry.cls, entry.factory, args_type=entry.args_type, origin=entry.origin)

    def entry(self, name: str) -> PluginEntry | None:
        """The entry registered as ``name``, or None."""
        return self._entries.get(name)

    def new(self, name: str, args: Mapping[str, Any], handle: Handle) -> Plugin:
        """Construct plugin ``name``; a typed-args plugin gets ``args`` decoded into its dataclass.

        Raises ValueError (one line per problem) when typed args do not decode; the profile builder checks
        them first with the configuration's field paths, so that only happens to direct callers.
        """
        entry = self._entries.get(name)
        if entry is None:
            raise KeyError(f"plugin {name!r} does not exist")
        if entry.args_type is None:
            return entry.factory(args, handle)
        decoded, errors = decode_args(entry.args_type, args, fielderr.new_path(name).child("args"))
        if errors:
            raise ValueError("\n".join(errors))
        return entry.factory(decoded, handle)

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
