"""DefaultPreemption's memo of the resource-only dry run: each node's ``SelectVictimsOnNode`` result, kept across
preemptors until one of its inputs changes.

A result of :meth:`.resource_only.ResourceOnly.select_victims` is a function of the node's pods and allocatable
(its NodeInfo generation), the preemptor's priority and checked requests, the nominated pods that upstream's first
Filter pass adds (compared by identity: the queue's PodInfos), the PDB objects (identity: an update replaces the
object) and, only when victims with and without a startTime were ordered, the clock. The pod-independent Filter
plugins are not part of it: they read the preemptor's spec and are asked on every use.

Besides the per-node entries, :class:`VictimCache` keeps the results that need no nominated pod and no clock as
columns over one NodeTable (the generation each row's result was computed from and the *epoch* — priority,
checked requests and PDB objects — it belongs to), so a dry run looks up a hundred candidate rows with a few
array compares (:meth:`VictimCache.kept_rows`) instead of a hundred entry checks. Why: in a preemption burst
(PreemptionBasic) almost every candidate's result is unchanged since the previous preemptor; only the node just
nominated changed. A row's column entry is only trusted when the same node's entry is the row's: every
:meth:`VictimCache.put` of a node rewrites or voids its row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
from kubeplane.scheduler.framework.interface import Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["Checks", "Selection", "VictimCache"]

Selection = tuple[list[PodInfo], int, Status | None]
"""``(victims most important first, how many violate a PDB, status)``, as ``select_victims_on_node`` returns."""

Checks = tuple[tuple[str, int, bool, str], ...]
"""NodeResourcesFit's checks for the preemptor: (resource, requested quantity, DRA-backed, reason)."""

_MAX_EPOCHS = 64


@dataclass(slots=True)
class _Entry:
    generation: int
    priority: int
    checks: Checks
    nominated: list[PodInfo]
    pdbs: tuple[object, ...]
    now: float | None
    selection: Selection
    no_victims: bool


class VictimCache:
    """The last :meth:`.resource_only.ResourceOnly.select_victims` result per node; see the module docstring."""

    __slots__ = ("_entries", "_epochs", "_row_entry", "_row_epoch", "_row_generation", "_table", "pdbs")

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self.pdbs: tuple[object, ...] = ()
        """The PDB objects of the current dry run (set by the caller before it starts)."""
        self._epochs: dict[tuple[int, Checks, tuple[int, ...]], tuple[int, tuple[object, ...]]] = {}
        """(priority, checks, the PDB objects' ids) -> (epoch number, the PDB objects: kept so ids stay theirs)."""
        self._table: NodeTable | None = None
        self._row_generation: IntArray = np.zeros(0, np.int64)
        self._row_epoch: IntArray = np.zeros(0, np.int64)
        """Per row of ``_table``: the epoch of the row's kept result, -1 when it has none (or it needs the
        nominated pods or the clock)."""
        self._row_entry: list[_Entry | None] = []

    def get(self, node: NodeInfo, priority: int, checks: Checks, nominated: list[PodInfo], now: float) -> _Entry | None:
        e = self._entries.get(node.name)
        if (
            e is None
            or e.generation != node.generation
            or e.priority != priority
            or e.checks != checks
            or (e.now is not None and e.now != now)
            or not _same(e.nominated, nominated)
            or not _same(e.pdbs, self.pdbs)
        ):
            return None
        return e

    def put(
        self,
        node: NodeInfo,
        priority: int,
        checks: Checks,
        nominated: list[PodInfo],
        now: float | None,
        selection: Selection,
        *,
        no_victims: bool = False,
    ) -> None:
        victims, violations, status = selection
        kept: Selection = (list(victims), violations, status)
        entry = _Entry(node.generation, priority, checks, list(nominated), self.pdbs, now, kept, no_victims)
        self._entries[node.name] = entry
        table = self._table
        if table is None:
            return
        row = table.index.get(node.name, -1)
        if row < 0:
            return
        if nominated or now is not None:
            self._row_epoch[row] = -1  # the columns hold only results that need neither
            return
        self._row_generation[row] = node.generation
        self._row_epoch[row] = self._epoch(priority, checks)
        self._row_entry[row] = entry

    def begin(self, pdbs: Sequence[object], nodes: Sequence[NodeInfo], table: NodeTable | None = None) -> None:
        """Start a dry run with these PDB objects over a cluster of ``nodes`` (entries of removed nodes are
        dropped once they outnumber the nodes); ``table``: the snapshot's NodeTable the rows refer to."""
        self.pdbs = tuple(pdbs)
        if len(self._entries) > 2 * len(nodes):
            names = {ni.name for ni in nodes}
            for name in [n for n in self._entries if n not in names]:
                del self._entries[name]
        if table is not None and (table is not self._table or len(self._row_entry) != table.size):
            self._table = table
            self._row_generation = np.full(table.size, -1, np.int64)
            self._row_epoch = np.full(table.size, -1, np.int64)
            self._row_entry = [None] * table.size

    def kept_rows(self, table: NodeTable, rows: IntArray, priority: int, checks: Checks) -> BoolArray | None:
        """Which of ``rows`` have a result in the columns that :meth:`get` would return for a node with no
        nominated pods (the caller leaves out rows that have some); None when the columns are not over ``table``."""
        if table is not self._table or len(self._row_entry) != table.size:
            return None
        epoch = self._epoch(priority, checks)
        same: BoolArray = (self._row_epoch[rows] == epoch) & (self._row_generation[rows] == table.generation[rows])
        return same

    def row_selection(self, row: int) -> Selection:
        """The kept result of a row :meth:`kept_rows` named (the same victims list each time: read-only)."""
        entry = self._row_entry[row]
        assert entry is not None
        return entry.selection

    def _epoch(self, priority: int, checks: Checks) -> int:
        pdbs = self.pdbs
        key = (priority, checks, tuple(map(id, pdbs)))
        found = self._epochs.get(key)
        if found is None:
            if len(self._epochs) >= _MAX_EPOCHS:  # forget them all: no row may keep an old epoch's number
                self._epochs.clear()
                self._row_epoch[:] = -1
            number = max((n for n, _ in self._epochs.values()), default=-1) + 1
            found = self._epochs[key] = (number, pdbs)
        return found[0]


def _same(a: Sequence[object], b: Sequence[object]) -> bool:
    """The same objects in the same order."""
    if len(a) != len(b):
        return False
    return all(x is y for x, y in zip(a, b, strict=True)) if a else True
