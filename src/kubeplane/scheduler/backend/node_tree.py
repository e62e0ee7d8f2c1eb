"""The order in which the scheduler lists nodes: grouped by zone, zones taken round-robin (upstream ``node_tree.go``).

A :class:`NodeTree` holds node *names* per zone key (:func:`kubeplane.api.views.zone_key`: region and zone labels,
``""`` for nodes without either). :meth:`NodeTree.list` interleaves the zones: the first node of every zone (zones
in the order they were first seen), then the second node of every zone, and so on, so that a scheduler looking at
only part of the nodes (``percentageOfNodesToScore``) still spreads over zones.

Invariants:

* a node name is in at most one zone list (``_zone_of`` maps it to that zone); ``num_nodes`` is the number of names;
* a zone is in ``zones`` exactly when its list is non-empty, in first-seen order;
* ``version`` increases on every change of the order (add, remove, zone change), so a snapshot can tell whether
  its node list is still in tree order without listing the tree.

Not thread-safe; the scheduler cache is its only user.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from kubeplane.api.views import name_of, zone_key

__all__ = ["NodeTree"]


class NodeTree:
    """Node names grouped by zone; see the module docstring."""

    def __init__(self, nodes: Iterable[Mapping[str, Any]] = ()) -> None:
        self.tree: dict[str, list[str]] = {}
        self.zones: list[str] = []
        self._zone_of: dict[str, str] = {}
        self.version = 0
        for node in nodes:
            self.add_node(node)

    @property
    def num_nodes(self) -> int:
        return len(self._zone_of)

    def __contains__(self, name: object) -> bool:
        return name in self._zone_of

    def add_node(self, node: Mapping[str, Any]) -> bool:
        """Append the node to its zone; False (and no change) when a node of that name is already in the tree."""
        name = name_of(node)
        if name in self._zone_of:
            return False
        zone = zone_key(node)
        names = self.tree.get(zone)
        if names is None:
            self.zones.append(zone)
            self.tree[zone] = [name]
        else:
            names.append(name)
        self._zone_of[name] = zone
        self.version += 1
        return True

    def remove_node(self, node: Mapping[str, Any]) -> None:
        """Remove the node from the zone its labels name; KeyError when it is not there (upstream's error)."""
        name = name_of(node)
        zone = zone_key(node)
        if self._zone_of.get(name) != zone:
            raise KeyError(f"node {name!r} in group {zone!r} was not found")
        names = self.tree[zone]
        names.remove(name)
        if not names:
            del self.tree[zone]
            self.zones.remove(zone)
        del self._zone_of[name]
        self.version += 1

    def update_node(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        """Move the node when its zone changed (the name never changes); a missing old node is ignored."""
        old_zone = zone_key(old) if old is not None else ""
        if old_zone == zone_key(new):
            return
        if old is not None:
            with contextlib.suppress(KeyError):  # upstream ignores whether the old node existed
                self.remove_node(old)
        self.add_node(new)

    def list(self) -> list[str]:
        """All names, zones round-robin: the i-th node of every zone before the (i+1)-th of any."""
        if len(self.zones) == 1:
            return list(self.tree[self.zones[0]])
        out: list[str] = []
        lists = [self.tree[zone] for zone in self.zones]
        depth = max((len(names) for names in lists), default=0)
        for i in range(depth):
            for names in lists:
                if i < len(names):
                    out.append(names[i])
        return out
