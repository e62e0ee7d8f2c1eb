"""The resource-only dry run's first step over NodeTable rows: which nodes can preemption help at all.

Upstream ``SelectVictimsOnNode`` (plugins/defaultpreemption, v1.37) starts by removing every pod of lower priority
than the preemptor and running Filter (with the nominated pods): a node with no such pod has no victims, a node
where the pod still does not fit gets that Filter status, and only the others go on to the greedy reprieve. In a
resource-only cycle (:mod:`.resource_only`) that first step is arithmetic on the node's aggregates, so
:func:`screen` does it for every examined row at once: the table's requested amounts minus
:class:`LowerPriorityColumns` (the lower-priority pods' summed requests per row, kept across cycles and refreshed
only for rows whose NodeInfo generation changed), plus the nominated pods' columns. DefaultPreemption then runs
the per-node reprieve (:meth:`.resource_only.ResourceOnly.select_victims`) on the :data:`CANDIDATE` rows alone,
in examination order, and records the others' statuses in bulk. Across a burst of preemptors most rows do not
change between two cycles, so the screen's keys are kept per row for the preemptor shapes in steady use (a
:class:`.backend.row_memo.RowMemo`: only the rows refilled since are recomputed), and candidates whose result the
:class:`.victim_cache.VictimCache` keeps in its columns are read from there without a reprieve call. Hypothesis
tests hold the result to the node-by-node path.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
from kubeplane.scheduler.backend.row_memo import RowMemo
from kubeplane.scheduler.framework.interface import Code, NodeToStatus, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.resource_only import ResourceOnly, Selection

__all__ = [
    "CANDIDATE",
    "GENERIC",
    "KEYED",
    "NO_VICTIMS",
    "LowerPriorityCache",
    "LowerPriorityColumns",
    "dry_run_rows",
    "screen",
]

KEYED = 0
"""The pod does not fit with every lower-priority pod removed: the row's key names NodeResourcesFit's status."""
NO_VICTIMS = 1
"""The node has no pod of lower priority."""
GENERIC = 2
"""A pod-independent Filter plugin rejects the node: the generic path words its status."""
CANDIDATE = 3
"""The pod fits once every lower-priority pod is gone: the reprieve decides the victims."""


class LowerPriorityColumns:
    """Per row of one NodeTable: the number and summed requests of the node's pods below ``priority``."""

    __slots__ = ("_columns", "_generations", "count", "priority", "table")

    def __init__(self, table: NodeTable, priority: int) -> None:
        self.table = table
        self.priority = priority
        self.count: IntArray = np.zeros(table.size, np.int64)
        self._generations: IntArray = np.full(table.size, -1, np.int64)
        """The NodeInfo generation each row was computed from (-1: never)."""
        self._columns: dict[str, IntArray] = {}

    def sync(self) -> None:
        """Recompute the rows whose NodeInfo changed since (the table is synced before every cycle)."""
        table = self.table
        stale = np.flatnonzero(self._generations != table.generation)
        if len(stale) == 0:
            return
        infos, priority, columns = table.node_infos, self.priority, self._columns.items()
        for r in stale.tolist():
            low = [p for p in infos[r].pods if p.priority < priority]
            self.count[r] = len(low)
            for name, col in columns:
                col[r] = sum(p.requests.get(name) for p in low)
        self._generations[stale] = table.generation[stale]

    def amount(self, name: str) -> IntArray:
        """The summed requests of ``name`` per row (after :meth:`sync`; read-only)."""
        col = self._columns.get(name)
        if col is None:
            col = self._columns[name] = np.zeros(self.table.size, np.int64)
            priority = self.priority
            for r, ni in enumerate(self.table.node_infos):
                col[r] = sum(p.requests.get(name) for p in ni.pods if p.priority < priority)
        return col


class LowerPriorityCache:
    """DefaultPreemption's :class:`LowerPriorityColumns`, one per preemptor priority, for the latest table."""

    __slots__ = ("_by_priority",)

    _MAX_PRIORITIES = 8

    def __init__(self) -> None:
        self._by_priority: dict[int, LowerPriorityColumns] = {}

    def columns(self, table: NodeTable, priority: int) -> LowerPriorityColumns:
        cols = self._by_priority.get(priority)
        if cols is None or cols.table is not table:
            if len(self._by_priority) >= self._MAX_PRIORITIES:
                self._by_priority.clear()
            cols = self._by_priority[priority] = LowerPriorityColumns(table, priority)
        cols.sync()
        return cols


def screen(
    fast: ResourceOnly,
    lower: LowerPriorityColumns,
    table: NodeTable,
    rows: IntArray,
    *,
    memo: RowMemo | None = None,
) -> tuple[IntArray, IntArray] | None:
    """``(kind, key)`` per row of ``rows``: :data:`KEYED` (with the key), :data:`NO_VICTIMS`, :data:`GENERIC` or
    :data:`CANDIDATE`; None when a pod-independent plugin has no vector path (the caller goes node by node).
    ``memo``: keeps each row's key without nominated pods across cycles (a function of the row's pods, the
    preemptor's priority and checked requests); the nominated pods' pass is computed on their rows each time."""
    ok = fast.independent_pass(table, rows)
    if ok is None:
        return None
    names = fast.checked_names()

    def remaining(at: IntArray) -> tuple[IntArray, list[IntArray]]:
        """The pod count and checked requests of rows ``at`` with every lower-priority pod removed."""
        used = [u - lower.amount(name)[at] for u, name in zip(fast.used_of(table, at), names, strict=True)]
        return table.requested["pods"][at] - lower.count[at], used

    def alone(at: IntArray) -> IntArray:
        return fast.fit_keys_alone(table, at, *remaining(at))

    pods, used = remaining(rows)
    kept = memo.get(table, ("screen", fast.checks, lower.priority), alone, rows) if memo is not None else None
    keys = fast.fit_keys(table, rows, pods, used, alone=kept)
    count = lower.count[rows]
    kinds = np.full(len(rows), KEYED, np.int64)
    kinds[keys == 0] = CANDIDATE
    kinds[~ok] = GENERIC
    kinds[count == 0] = NO_VICTIMS
    return kinds, keys


def dry_run_rows(
    fast: ResourceOnly,
    lower: LowerPriorityColumns,
    table: NodeTable,
    order: list[int],
    *,
    num_candidates: int,
    select: Callable[[NodeInfo], Selection | None],
    generic: Callable[[NodeInfo], Selection],
    no_victims: Status,
    statuses_needed: bool = True,
    kept: Callable[[IntArray], BoolArray | None] | None = None,
    kept_selection: Callable[[int], Selection] | None = None,
    memo: RowMemo | None = None,
) -> tuple[list[tuple[str, list[PodInfo], int]], NodeToStatus, list[str]] | None:
    """Upstream ``DryRunPreemption`` over the table rows ``order`` (examination order): :func:`screen` settles
    every node that cannot be a candidate at once; ``select`` (the arithmetic reprieve, None when it does not
    apply) or else ``generic`` runs on the others in order, until ``num_candidates`` candidates are found with one
    that violates no PDB. ``kept`` (rows -> which of them have a result kept from an earlier dry run that
    ``select`` would return, None when it cannot tell) and ``kept_selection`` (that result, by row) let the
    candidates whose nodes did not change skip ``select``; ``memo`` is :func:`screen`'s. Returns the candidates
    as ``(node, victims, PDB violations)``, non-violating ones first (each group keeps at most
    ``num_candidates``), the statuses of the examined nodes that are not candidates in examination order, and the
    errors. Without ``statuses_needed`` the statuses are left out when there are candidates (Preempt reads them
    only when there are none, as upstream's). None when the screen cannot run."""
    rows = np.array(order, np.int64)
    screened = screen(fast, lower, table, rows, memo=memo)
    if screened is None:
        return None
    kinds, keys = screened
    infos, names = table.node_infos, table.names
    non_violating: list[tuple[str, list[PodInfo], int]] = []
    violating: list[tuple[str, list[PodInfo], int]] = []
    results: dict[int, Status] = {}
    stop = len(order)
    examined = np.flatnonzero(kinds >= GENERIC)
    examined_rows = rows[examined]
    is_candidate = kinds[examined] == CANDIDATE
    hit = kept(examined_rows) if kept is not None and kept_selection is not None else None
    hits: list[bool] = (hit & is_candidate).tolist() if hit is not None else [False] * len(examined)
    for pos, r, candidate, from_kept in zip(
        examined.tolist(), examined_rows.tolist(), is_candidate.tolist(), hits, strict=True
    ):
        if from_kept:
            assert kept_selection is not None
            victims, violations, status = kept_selection(r)
        else:
            node = infos[r]
            selection = select(node) if candidate else None
            victims, violations, status = selection if selection is not None else generic(node)
        if status is None and victims:
            bucket = non_violating if violations == 0 else violating
            if len(bucket) < num_candidates:
                bucket.append((names[r], victims, violations))
            if non_violating and len(non_violating) + len(violating) >= num_candidates:
                stop = pos + 1
                break
            continue
        if status is None:
            status = Status.from_error(f'expected at least one victim pod on node "{names[r]}"')
        results[pos] = status
    errors = [status.message() for _pos, status in sorted(results.items()) if status.code == Code.ERROR]
    statuses = NodeToStatus()
    if statuses_needed or not (non_violating or violating):
        by_key = {key: fast.status_of_key(key) for key in set(keys[:stop][kinds[:stop] == KEYED].tolist())}
        for pos, kind, key in zip(range(stop), kinds[:stop].tolist(), keys[:stop].tolist(), strict=True):
            if kind == KEYED:
                statuses[names[order[pos]]] = by_key[key]
            elif kind == NO_VICTIMS:
                statuses[names[order[pos]]] = no_victims
            elif pos in results:  # not a candidate
                statuses[names[order[pos]]] = results[pos]
    return non_violating + violating, statuses, errors
