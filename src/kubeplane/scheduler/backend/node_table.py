"""A columnar (numpy) view of the snapshot's nodes, for vectorised Filter and Score (DESIGN decision 6).

Row ``i`` describes ``node_infos[i]`` of the snapshot the table was built from. Columns:

* ``allocatable[name]`` / ``requested[name]``: int64 per resource API name (``cpu`` in millicores,
  ``memory``/``ephemeral-storage`` in bytes, ``pods``, extended resources). ``requested["pods"]`` is the
  number of pods on the node (what NodeResourcesFit compares with allocatable pods). A resource column
  that no node has is absent: read it with :meth:`NodeTable.allocatable_of` / :meth:`requested_of`, which
  return zeros.
* ``free``: a 4 x rows matrix of allocatable minus requested for :data:`FREE_RESOURCES` (pods, cpu, memory,
  ephemeral-storage), in that order: NodeResourcesFit's Filter reads all four with one gather.
* ``non_zero_cpu`` / ``non_zero_memory``: the scoring requests (NodeInfo.non_zero_requested).
* ``unschedulable``: spec.unschedulable; ``has_taints``: the node has at least one taint; ``has_ports``:
  some pod on the node uses a host port; ``has_images``: the node reports image states.
* :meth:`label` gives one label key as an object array (the value or ``None``), built lazily and kept until
  a node's labels change.
* ``generation``: the NodeInfo generation each row was last filled from. Generations are drawn from one global
  counter and copied by ``NodeInfo.clone``, so equal generations mean equal contents (node and pods): memos of
  per-node facts (e.g. how many pods match a selector) stay valid for a row while its generation is unchanged.
* ``has_node``: the NodeInfo has a Node object (always, in a cache-built snapshot).
* ``epoch`` and :meth:`changed_since`: every refill of a row after construction is logged, so a memo of per-row
  facts that recorded the epoch can revisit only the rows refilled since (O(changed), not O(rows)); ``None``
  when the log no longer reaches back that far (the memo compares every row's generation instead).
* ``unschedulable_count`` / ``tainted_count`` / ``nodeless_count``: how many rows are unschedulable / have taints /
  have no Node, kept with the rows, so a Filter that only ever rejects such rows knows at once that it passes
  everything (and a count over rows with a Node knows it covers every row).
* :meth:`domains` gives one label key as topology domains: per row an int id (``-1`` where the node lacks the
  key) into the distinct values; built lazily and rebuilt after any row's labels changed (``labels_version``).

Invariants: the table is only ever read during a scheduling cycle and updated between cycles by
:meth:`sync` from the same NodeInfo objects, so a vectorised plugin sees exactly what its per-node reference
implementation would; property tests hold every vectorised plugin to its reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from kubeplane.scheduler.framework.types import NodeInfo

__all__ = ["FREE_RESOURCES", "BoolArray", "Domains", "IntArray", "NodeTable"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_BASE = ("cpu", "memory", "ephemeral-storage", "pods")
FREE_RESOURCES = ("pods", "cpu", "memory", "ephemeral-storage")
"""The rows of :attr:`NodeTable.free`."""


class Domains:
    """The topology domains of one label key over a table's rows.

    ``ids[row]`` indexes ``values`` (``-1`` where the node lacks the key); ``id_of`` inverts ``values``. Ids are
    assigned in row order of first appearance, so they are stable for an unchanged table.
    """

    __slots__ = ("_empty", "complete", "id_of", "ids", "values")

    def __init__(self, column: npt.NDArray[np.object_]) -> None:
        id_of: dict[str, int] = {}
        ids = np.empty(len(column), np.int64)
        for i, value in enumerate(column.tolist()):
            if value is None:
                ids[i] = -1
            else:
                d = id_of.get(value)
                if d is None:
                    d = id_of[value] = len(id_of)
                ids[i] = d
        self.ids: IntArray = ids
        self.id_of = id_of
        self.values: tuple[str, ...] = tuple(id_of)
        self.complete = not bool((ids < 0).any())
        """Every row carries the key."""
        self._empty: tuple[IntArray, dict[str, int]] | None = None

    def missing_as_empty(self) -> tuple[IntArray, dict[str, int]]:
        """``(ids, id_of)`` where a node lacking the key is in the domain of the value ``""`` (what
        ``labels.get(key, "")`` gives); ``""`` gets the id ``len(values)`` when no node has it literally."""
        if self._empty is None:
            if not (self.ids < 0).any():
                self._empty = (self.ids, self.id_of)
            else:
                id_of = self.id_of
                empty = id_of.get("")
                if empty is None:
                    empty = len(self.values)
                    id_of = {**id_of, "": empty}
                self._empty = (np.where(self.ids < 0, empty, self.ids), id_of)
        return self._empty


class NodeTable:
    """Columns over a fixed list of NodeInfos; see the module docstring for the layout."""

    def __init__(self, node_infos: Sequence[NodeInfo]) -> None:
        self.node_infos: list[NodeInfo] = list(node_infos)
        n = len(self.node_infos)
        self.size = n
        self.names: list[str] = [ni.name for ni in self.node_infos]
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self.allocatable: dict[str, IntArray] = {name: np.zeros(n, np.int64) for name in _BASE}
        self.requested: dict[str, IntArray] = {name: np.zeros(n, np.int64) for name in _BASE}
        self.free: npt.NDArray[np.int64] = np.zeros((len(FREE_RESOURCES), n), np.int64)
        self.non_zero_cpu: IntArray = np.zeros(n, np.int64)
        self.non_zero_memory: IntArray = np.zeros(n, np.int64)
        self.unschedulable: BoolArray = np.zeros(n, np.bool_)
        self.has_taints: BoolArray = np.zeros(n, np.bool_)
        self.has_ports: BoolArray = np.zeros(n, np.bool_)
        self.has_images: BoolArray = np.zeros(n, np.bool_)
        self.generation: IntArray = np.zeros(n, np.int64)
        self.has_node: BoolArray = np.zeros(n, np.bool_)
        self.labels_version = 0
        """Bumped whenever a row's labels object changes after the first fill; :meth:`domains` keys on it."""
        self._labels: dict[str, npt.NDArray[np.object_]] = {}
        self._domains: dict[str, tuple[int, Domains]] = {}
        self._generations: list[int] = [0] * n
        self._label_maps: list[object] = [None] * n
        self.unschedulable_count = 0
        self.tainted_count = 0
        self.nodeless_count = n  # every row starts without a Node (has_node all False) until filled
        self._log: list[int] | None = None
        self._log_start = 0
        for i in range(n):
            self._fill(i)
        self._log = []

    @property
    def epoch(self) -> int:
        """The number of row refills since construction: a point in the change log."""
        log = self._log
        return self._log_start + (len(log) if log is not None else 0)

    def changed_since(self, epoch: int) -> list[int] | None:
        """The rows refilled since ``epoch`` (in refill order, possibly repeated), or None when the log was
        trimmed past it. A row not listed has the same generation (and contents) as at ``epoch``."""
        log = self._log
        if log is None or epoch < self._log_start or epoch > self._log_start + len(log):
            return None
        return log[epoch - self._log_start :]

    def _column(self, columns: dict[str, IntArray], name: str) -> IntArray:
        col = columns.get(name)
        if col is None:
            col = columns[name] = np.zeros(self.size, np.int64)
        return col

    def _fill(self, i: int) -> None:
        ni = self.node_infos[i]
        alloc, req = ni.allocatable, ni.requested
        self.allocatable["cpu"][i] = alloc.milli_cpu
        self.allocatable["memory"][i] = alloc.memory
        self.allocatable["ephemeral-storage"][i] = alloc.ephemeral_storage
        self.allocatable["pods"][i] = alloc.allowed_pod_number
        self.requested["cpu"][i] = req.milli_cpu
        self.requested["memory"][i] = req.memory
        self.requested["ephemeral-storage"][i] = req.ephemeral_storage
        self.requested["pods"][i] = len(ni.pods)
        free = self.free  # one scalar store each: a tuple assigned to the column costs ten times as much
        free[0, i] = alloc.allowed_pod_number - len(ni.pods)
        free[1, i] = alloc.milli_cpu - req.milli_cpu
        free[2, i] = alloc.memory - req.memory
        free[3, i] = alloc.ephemeral_storage - req.ephemeral_storage
        for name, amount in alloc.scalar.items():
            self._column(self.allocatable, name)[i] = amount
        for name, col in self.allocatable.items():
            if name not in _BASE and name not in alloc.scalar:
                col[i] = 0
        for name, amount in req.scalar.items():
            self._column(self.requested, name)[i] = amount
        for name, col in self.requested.items():
            if name not in _BASE and name not in req.scalar:
                col[i] = 0
        self.non_zero_cpu[i] = ni.non_zero_requested.milli_cpu
        self.non_zero_memory[i] = ni.non_zero_requested.memory
        unschedulable, tainted = bool(ni.unschedulable), bool(ni.taints)
        self.unschedulable_count += unschedulable - bool(self.unschedulable[i])
        self.tainted_count += tainted - bool(self.has_taints[i])
        self.unschedulable[i] = unschedulable
        self.has_taints[i] = tainted
        self.has_ports[i] = len(ni.used_ports) > 0
        self.has_images[i] = bool(ni.image_states)
        if self._label_maps[i] is not ni.labels:
            if self._label_maps[i] is not None:
                self.labels_version += 1
            self._label_maps[i] = ni.labels
            for key, values in self._labels.items():
                values[i] = ni.labels.get(key)
        self._generations[i] = ni.generation
        self.generation[i] = ni.generation
        has_node = ni.node is not None
        self.nodeless_count += bool(self.has_node[i]) - has_node
        self.has_node[i] = has_node
        log = self._log
        if log is not None:
            log.append(i)
            if len(log) > 4 * self.size + 1024:  # bounded: memos this far behind compare generations instead
                self._log_start += len(log)
                self._log = []

    def sync(self) -> int:
        """Refresh the rows whose NodeInfo changed since the last fill; returns how many were refreshed."""
        changed = 0
        for i, ni in enumerate(self.node_infos):
            if ni.generation != self._generations[i]:
                self._fill(i)
                changed += 1
        return changed

    def refresh_row(self, i: int) -> None:
        self._fill(i)

    def allocatable_of(self, name: str) -> IntArray:
        col = self.allocatable.get(name)
        return col if col is not None else np.zeros(self.size, np.int64)

    def requested_of(self, name: str) -> IntArray:
        col = self.requested.get(name)
        return col if col is not None else np.zeros(self.size, np.int64)

    def label(self, key: str) -> npt.NDArray[np.object_]:
        """The values of label ``key`` per row (``None`` where a node lacks it)."""
        col = self._labels.get(key)
        if col is None:
            col = np.empty(self.size, dtype=object)
            for i, ni in enumerate(self.node_infos):
                col[i] = ni.labels.get(key)
            self._labels[key] = col
        return col

    def domains(self, key: str) -> Domains:
        """Label ``key`` as topology domains (see :class:`Domains`), cached until a node's labels change."""
        cached = self._domains.get(key)
        if cached is not None and cached[0] == self.labels_version:
            return cached[1]
        domains = Domains(self.label(key))
        self._domains[key] = (self.labels_version, domains)
        return domains
