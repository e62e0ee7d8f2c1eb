"""The nominated pods' requests per NodeTable row, kept across cycles (for the resource-only Filter and dry run).

Upstream ``RunFilterPluginsWithNominatedPods`` adds, on each node, the pods nominated there whose priority is at
least the incoming pod's. In a resource-only cycle (:mod:`..plugins.resource_only`) only their number and summed
requests matter, so for one priority threshold :class:`NominatedColumns` holds per row of one
:class:`.node_table.NodeTable`: ``count`` (how many) and, per resource name, the summed requests (cpu in
millicores) of those pods, each in the version the queue knows (``pods_for_node``). Building it touches every
nominated pod; afterwards :meth:`NominatedColumns.sync` refreshes only the nodes the
:class:`.nominator.Nominator` names as changed since (every change of the queue's version of a nominated pod goes
through the nominator, so a row cannot go stale unseen).

The incoming pod itself is counted where it is nominated (the columns do not depend on the pod): the reader
corrects that one row (upstream skips the pod's own nomination).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import numpy as np

from kubeplane.scheduler.backend.node_table import IntArray, NodeTable
from kubeplane.scheduler.backend.nominator import Nominator
from kubeplane.scheduler.framework.types import PodInfo

__all__ = ["NominatedColumns", "NominatedColumnsCache", "NominatedColumnsSource"]

PodsForNode = Callable[[str], list[PodInfo]]


@runtime_checkable
class NominatedColumnsSource(Protocol):
    """A nominator that keeps :class:`NominatedColumns` (the scheduling queue); others are read node by node."""

    def nominated_columns(self, table: NodeTable, priority: int) -> NominatedColumns: ...

    def nominated_node_of(self, uid: str) -> str | None: ...


class NominatedColumns:
    """For one table and one priority threshold: per row, the nominated pods of at least that priority."""

    __slots__ = ("_columns", "_pods", "count", "generation", "priority", "table")

    def __init__(self, table: NodeTable, priority: int) -> None:
        self.table = table
        self.priority = priority
        self.generation = -1
        """The nominator generation the rows reflect (-1: never synced)."""
        self.count: IntArray = np.zeros(table.size, np.int64)
        self._pods: dict[int, list[PodInfo]] = {}
        """Row -> its counted pods, for the rows that have some (columns of a new name are summed from it)."""
        self._columns: dict[str, IntArray] = {}

    def sync(self, nominator: Nominator, pods_for_node: PodsForNode) -> None:
        """Bring the rows up to ``nominator.generation``: the changed nodes, or all after a long gap."""
        if self.generation == nominator.generation:
            return
        changed = nominator.changed_since(self.generation) if self.generation >= 0 else None
        if changed is None:
            self.count[:] = 0
            self._pods.clear()
            for col in self._columns.values():
                col[:] = 0
            changed = set(nominator.node_names())
        index = self.table.index
        for node in changed:
            row = index.get(node)
            if row is not None:
                self._refresh(row, pods_for_node(node))
        self.generation = nominator.generation

    def _refresh(self, row: int, nominated: list[PodInfo]) -> None:
        priority = self.priority
        pods = [p for p in nominated if p.priority >= priority]
        if pods:
            self._pods[row] = pods
        else:
            self._pods.pop(row, None)
        self.count[row] = len(pods)
        for name, col in self._columns.items():
            col[row] = sum(p.requests.get(name) for p in pods)

    def amount(self, name: str) -> IntArray:
        """The summed requests of ``name`` per row (read-only)."""
        col = self._columns.get(name)
        if col is None:
            col = self._columns[name] = np.zeros(self.table.size, np.int64)
            for row, pods in self._pods.items():
                col[row] = sum(p.requests.get(name) for p in pods)
        return col


class NominatedColumnsCache:
    """The scheduling queue's :class:`NominatedColumns`: one per priority threshold, for the latest table."""

    __slots__ = ("_by_priority", "_nominator", "_pods_for_node")

    _MAX_PRIORITIES = 8

    def __init__(self, nominator: Nominator, pods_for_node: PodsForNode) -> None:
        self._nominator = nominator
        self._pods_for_node = pods_for_node
        self._by_priority: dict[int, NominatedColumns] = {}

    def columns(self, table: NodeTable, priority: int) -> NominatedColumns:
        cols = self._by_priority.get(priority)
        if cols is None or cols.table is not table:
            if len(self._by_priority) >= self._MAX_PRIORITIES:
                self._by_priority.clear()
            cols = self._by_priority[priority] = NominatedColumns(table, priority)
        cols.sync(self._nominator, self._pods_for_node)
        return cols
