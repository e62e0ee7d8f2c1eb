"""Per-row results of a pod-keyed vector function over the NodeTable, kept across scheduling cycles and brought
up to date for the rows that changed since (DESIGN decision 6; issue 29).

Why: NodeResourcesFit's Filter mask and the allocation scorers' scores of a row depend only on the row's node
(its NodeInfo contents) and on a few numbers of the pod (its requests). Pods of one workload share those
numbers, and between two cycles only the rows of the nodes that received or lost a pod change. So for a key
(the pod's numbers) seen again and again, the function's values over the whole table are kept as one column,
and each cycle recomputes only the rows refilled since (:meth:`NodeTable.changed_since`, else by generation)
and reads its rows with one gather, instead of a dozen array operations over hundreds of rows.

Invariants:

* ``fn(rows)`` must be elementwise: its value at a row depends only on that row's NodeInfo contents and the
  key (same key, same function), never on which other rows are asked. Then ``values[rows]`` equals
  ``fn(rows)`` exactly (the property tests of the vector paths compare with the per-node reference).
* A row whose generation equals the recorded one has the same node and pods (generations are global and
  ``NodeInfo.clone`` keeps them), so its value is current; a table of another size rebuilds the column.
* A key is given a column only after it was asked :data:`_PROMOTE_AFTER` times while among the
  :data:`_MAX_KEYS` most recent keys: a one-off pod costs what ``fn(rows)`` costs, not a whole-table pass.
* Returned arrays are fresh (a gather), callers may keep or write them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import numpy as np
import numpy.typing as npt

from kubeplane.scheduler.backend.node_table import IntArray, NodeTable

__all__ = ["RowMemo", "changed_rows"]

_MAX_KEYS = 16
"""Keys remembered per memo (least recently used dropped): pod shapes in use at once."""

_PROMOTE_AFTER = 3
"""Asks of a key before it gets a whole-table column (the column costs about ten cycles' worth of rows)."""

_ONE_BY_ONE = 8
"""Up to this many changed rows are refreshed with ``one`` (each a few µs) rather than ``fn`` (tens of µs)."""


def changed_rows(gens: IntArray, table: NodeTable, seen: NodeTable | None, epoch: int) -> list[int]:
    """The rows whose generation differs from ``gens`` (which is brought up to date): from ``table``'s change log
    when ``seen`` is the same table and its log reaches back to ``epoch``, else by comparing every row."""
    logged = table.changed_since(epoch) if seen is table else None
    current = table.generation
    if logged is None:
        changed = np.flatnonzero(gens != current)
        gens[changed] = current[changed]
        out: list[int] = changed.tolist()
        return out
    out = []
    for r in dict.fromkeys(logged):
        g = current[r]
        if gens[r] != g:
            gens[r] = g
            out.append(r)
    return out


class _Column:
    __slots__ = ("asked", "epoch", "gens", "table", "values")

    def __init__(self) -> None:
        self.asked = 0
        self.values: npt.NDArray[Any] | None = None
        self.gens: IntArray = np.zeros(0, np.int64)
        self.table: NodeTable | None = None
        self.epoch = 0


class RowMemo:
    """``fn(rows)`` per key, answered from a whole-table column once the key is in steady use."""

    __slots__ = ("_columns",)

    def __init__(self) -> None:
        self._columns: dict[Hashable, _Column] = {}

    def get(
        self,
        table: NodeTable,
        key: Hashable,
        fn: Callable[[IntArray], npt.NDArray[Any]],
        rows: IntArray,
        *,
        one: Callable[[int], Any] | None = None,
    ) -> npt.NDArray[Any]:
        """``fn(rows)``; ``key`` must identify ``fn`` (see the module invariants). ``one(row)``, when given, is
        ``fn`` on a single row (the plugin's per-node reference, which its vector path is held equal to): a
        dozen array operations cost the same for one row as for hundreds, so the few rows a cycle changes are
        brought up to date with it."""
        columns = self._columns
        col = columns.pop(key, None)
        if col is None:
            col = _Column()
            if len(columns) >= _MAX_KEYS:
                del columns[next(iter(columns))]
        columns[key] = col
        values = col.values
        if values is None or len(values) != table.size:
            col.asked += 1
            if col.asked < _PROMOTE_AFTER:
                return fn(rows)
            col.values = values = fn(np.arange(table.size, dtype=np.int64))
            col.gens = table.generation.copy()
        else:
            changed = changed_rows(col.gens, table, col.table, col.epoch)
            if one is not None and len(changed) <= _ONE_BY_ONE:
                for r in changed:
                    values[r] = one(r)
            elif changed:
                at = np.array(changed, np.int64)
                values[at] = fn(at)
        col.table, col.epoch = table, table.epoch
        return values[rows]
