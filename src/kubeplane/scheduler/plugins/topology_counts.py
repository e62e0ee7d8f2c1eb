"""Per-node pod counts memoised across scheduling cycles, and their sums per topology domain: the machinery that
PodTopologySpread and InterPodAffinity share for their PreFilter/PreScore counts and vectorised Filter/Score.

Why: both plugins count, for every cycle, the pods on every node that match some selector or term, then sum the
counts per topology domain (the value of a node label). Between two cycles only the few nodes that received or
lost a pod change, so the per-node counts are kept per key (a selector, a term) and recomputed only for rows
whose NodeInfo generation changed (:attr:`NodeTable.generation`); the per-domain sums are then one
``np.bincount`` over the table's :meth:`~NodeTable.domains`.

Invariants:

* A memo entry holds, per row, the value of its function for the NodeInfo of the recorded generation.
  Generations come from one global counter and ``NodeInfo.clone`` keeps them, so a row whose generation equals
  the recorded one has the same node and pods: its memoised value is exact even if the table was rebuilt, as
  long as it has the same number of rows (otherwise the entry is recomputed). An entry also records the table
  and its :attr:`~NodeTable.epoch`: against the same table only the rows refilled since are looked at (the
  others kept their generation), so a cycle costs what changed since the previous one.
* The functions are pure in the NodeInfo (and the key); arrays returned are owned by the memo and valid until
  its next call: callers read them within the cycle and never write them.
* The table must describe the NodeInfos' current contents (a snapshot's table is synced before every cycle;
  :func:`table_for` builds a fresh one for any other node list).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from kubeplane.scheduler.backend.node_table import BoolArray, Domains, IntArray, NodeTable
from kubeplane.scheduler.backend.row_memo import changed_rows

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.types import NodeInfo

__all__ = ["Census", "DomainSums", "RowCounts", "at_rows", "domain_sums", "table_for"]

K = TypeVar("K", bound=Hashable)

_MAX_KEYS = 64
"""Memo entries kept per plugin instance (least recently used dropped): selectors and terms in use at once."""


def table_for(lister: Any, nodes: Sequence[NodeInfo]) -> NodeTable:
    """The snapshot's NodeTable when ``nodes`` is the snapshot's node list (row ``i`` is ``nodes[i]``, the
    snapshot's invariant), else a table built for ``nodes`` (offline callers, tests)."""
    table = getattr(lister, "node_table", None)
    if isinstance(table, NodeTable) and table.size == len(nodes) and nodes is lister.list():
        return table
    return NodeTable(nodes)


def domain_sums(domains: Domains, per_row: IntArray, include: BoolArray) -> IntArray:
    """Per domain id of ``domains``: the sum of ``per_row`` over included rows carrying the key."""
    rows = np.flatnonzero(include & (domains.ids >= 0))
    sums: IntArray = np.bincount(domains.ids[rows], weights=per_row[rows], minlength=len(domains.values)).astype(
        np.int64
    )
    return sums


def at_rows(per_domain: IntArray, ids: IntArray) -> IntArray:
    """``per_domain[ids]`` with 0 where ``ids`` is -1 (a row lacking the key)."""
    if not len(per_domain):
        return np.zeros(len(ids), np.int64)
    picked: IntArray = np.where(ids >= 0, per_domain[np.maximum(ids, 0)], 0)
    return picked


class RowCounts:
    """Per-row ``count(NodeInfo)`` for many keys, memoised by row generation (see the module invariants)."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, _Entry] = {}

    def get(self, table: NodeTable, key: Hashable, count: Callable[[NodeInfo], int]) -> IntArray:
        """``count`` of every row of ``table``; ``key`` must identify ``count`` (same key, same function)."""
        entry = self._entries.pop(key, None)
        infos = table.node_infos
        if entry is None or len(entry.values) != table.size:
            values = np.fromiter((count(ni) for ni in infos), np.int64, table.size)
            entry = _Entry(table.generation.copy(), values, table, table.epoch)
        else:
            values = entry.values
            for r in changed_rows(entry.gens, table, entry.table, entry.epoch):
                values[r] = count(infos[r])
            entry.table, entry.epoch = table, table.epoch
        self._entries[key] = entry
        if len(self._entries) > _MAX_KEYS:
            del self._entries[next(iter(self._entries))]
        return entry.values


class _Entry:
    """One memo: per-row generations and values, and the table and epoch they were last brought up to."""

    __slots__ = ("epoch", "gens", "table", "values")

    def __init__(self, gens: IntArray, values: IntArray, table: NodeTable, epoch: int) -> None:
        self.gens = gens
        self.values = values
        self.table = table
        self.epoch = epoch


class DomainSums:
    """Per-domain sums of a :class:`RowCounts` column over the rows that have a Node and carry the key
    (``domain_sums(domains, per_row, table.has_node)``), kept per key across cycles and brought up to date by
    the rows changed since: what PodTopologySpread's PreFilter sums when every such row counts. Rebuilt for
    another table or Domains object (a node's labels changed)."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, _Sums] = {}

    def get(self, table: NodeTable, key: Hashable, domains: Domains, per_row: IntArray) -> IntArray:
        """The sums (a fresh array); ``per_row`` is ``key``'s RowCounts column, just brought up to date."""
        entry = self._entries.pop(key, None)
        if entry is None or entry.table is not table or entry.domains is not domains:
            counted = table.has_node & (domains.ids >= 0)
            entry = _Sums(
                table,
                domains,
                table.epoch,
                table.generation.copy(),
                np.where(counted, per_row, 0),
                domain_sums(domains, per_row, table.has_node),
            )
        else:
            ids, has_node, contrib, sums = domains.ids, table.has_node, entry.contrib, entry.sums
            for r in changed_rows(entry.gens, table, table, entry.epoch):
                d = ids[r]
                if d < 0:
                    continue
                new = per_row[r] if has_node[r] else 0
                if new != contrib[r]:
                    sums[d] += new - contrib[r]
                    contrib[r] = new
            entry.epoch = table.epoch
        self._entries[key] = entry
        if len(self._entries) > _MAX_KEYS:
            del self._entries[next(iter(self._entries))]
        return entry.sums.copy()


class _Sums:
    __slots__ = ("contrib", "domains", "epoch", "gens", "sums", "table")

    def __init__(
        self, table: NodeTable, domains: Domains, epoch: int, gens: IntArray, contrib: IntArray, sums: IntArray
    ) -> None:
        self.table = table
        self.domains = domains
        self.epoch = epoch
        self.gens = gens
        self.contrib = contrib
        self.sums = sums


class Census(Generic[K]):
    """Per-row multiplicities of keys ``K`` (e.g. the distinct anti-affinity terms of the pods on a node), with
    the per-key row arrays, memoised by row generation like :class:`RowCounts`.

    ``tally(NodeInfo)`` gives the keys found on a node with their multiplicities. :meth:`get` returns
    ``{key: per-row counts}``; a key may map to all zeros once its last holder left.
    """

    def __init__(self, tally: Callable[[NodeInfo], Mapping[K, int]]) -> None:
        self._tally = tally
        self._gens: IntArray = np.zeros(0, np.int64)
        self._rows: list[Mapping[K, int]] = []
        self._totals: dict[K, IntArray] = {}
        self._table: NodeTable | None = None
        self._epoch = 0

    def get(self, table: NodeTable) -> Mapping[K, IntArray]:
        n = table.size
        infos = table.node_infos
        if len(self._gens) != n:
            self._gens = table.generation.copy()
            self._rows = [self._tally(ni) for ni in infos]
            self._totals = {}
            for r, found in enumerate(self._rows):
                for key, c in found.items():
                    self._add(key, r, c, n)
            self._table, self._epoch = table, table.epoch
            return self._totals
        for r in changed_rows(self._gens, table, self._table, self._epoch):
            for key, c in self._rows[r].items():
                self._totals[key][r] -= c
            found = self._tally(infos[r])
            self._rows[r] = found
            for key, c in found.items():
                self._add(key, r, c, n)
        self._table, self._epoch = table, table.epoch
        return self._totals

    def _add(self, key: K, row: int, c: int, n: int) -> None:
        col = self._totals.get(key)
        if col is None:
            col = self._totals[key] = np.zeros(n, np.int64)
        col[row] += c
