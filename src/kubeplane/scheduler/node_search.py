"""The Filter stage of one cycle (upstream ``findNodesThatPassFilters``): nodes are examined from a start index in
rotation until ``num_to_find`` are feasible; both the vector path and the per-node reference live here.

Fast path (DESIGN decision 6): the rotation is scanned in windows with numpy masks over the snapshot's
NodeTable (a plugin without ``filter_vector`` is asked node by node for the rows still passing, so out-of-tree
plugins keep working). Nodes with nominated pods are the exception: a row the masks pass is checked again with
the nominated pods (upstream ``RunFilterPluginsWithNominatedPods``; a node the masks reject fails that check
too, since the pod must also fit without them). The reference filters run on rejected nodes only when their
reasons are needed (the pod fit nowhere), so statuses and the FailedScheduling message are the reference's. In a
resource-only cycle (:mod:`.plugins.resource_only`) NodeResourcesFit's statuses for those nodes, and its verdict
with nominated pods, come from the table arithmetic instead (held to the reference by hypothesis tests).

Vector paths are held to their reference: wherever both ran on a node (rejected nodes of a pod that fit nowhere;
every examined node when a recorder is on) a disagreement is reported through ``on_mismatch`` — an error in
tests, logged once per plugin in production — and the reference's verdict is the one used.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast, overload

import numpy as np

from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
from kubeplane.scheduler.framework.diagnosis import Diagnosis, SchedulingError
from kubeplane.scheduler.framework.interface import (
    Code,
    CycleState,
    FilterPlugin,
    Status,
    VectorFilterPlugin,
)
from kubeplane.scheduler.framework.recorder import CycleRecorder
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.resource_only import GENERIC, ResourceOnly

__all__ = ["MismatchReporter", "NodeRows", "NodeSearch", "SearchResult"]

MismatchReporter = Callable[[str, str], None]
"""``(plugin, what happened)``: called for each disagreement between a vector path and its reference."""

_EMPTY_ROWS = np.zeros(0, np.int64)
_PENDING = Status(Code.UNSCHEDULABLE, ("(reference pending)",))
"""Holds a rejected row's place in ``node_to_status`` until the reference filters give its status."""


class NodeRows(Sequence[NodeInfo]):
    """The NodeInfos of some rows of a NodeTable, in row order, looked up when read.

    Why: the Filter stage's feasible nodes (hundreds per cycle) are read by row by the vector PreScore and Score
    paths, and one of them is picked; building the list of NodeInfos touched every one of those objects (a cache
    miss each on a big cluster) for nothing. Reading one element costs a lookup; iterating or slicing builds
    the list once. ``rows`` and ``table`` are read-only, like the snapshot they come from."""

    __slots__ = ("_list", "rows", "table")

    def __init__(self, table: NodeTable, rows: IntArray) -> None:
        self.table = table
        self.rows = rows
        self._list: list[NodeInfo] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | list[NodeInfo]:
        if isinstance(index, slice):
            return self.as_list()[index]
        return self.table.node_infos[int(self.rows[index])]

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.as_list())

    def as_list(self) -> list[NodeInfo]:
        if self._list is None:
            self._list = list(map(self.table.node_infos.__getitem__, self.rows.tolist()))
        return self._list

    def names(self) -> list[str]:
        """The nodes' names, in order, without touching the NodeInfos."""
        return list(map(self.table.names.__getitem__, self.rows.tolist()))


@dataclass(frozen=True, slots=True)
class SearchResult:
    feasible: Sequence[NodeInfo]
    """A list, or a :class:`NodeRows` of ``rows`` (the vector path)."""
    rows: IntArray | None
    """The NodeTable rows of ``feasible`` (same order) when the vector path ran: scoring reuses them."""
    processed: int
    """How many nodes were examined (feasible + rejected): the rotation advances by this much."""


class NodeSearch:
    """One pod's Filter stage: the framework, the cycle's state, the pod and where verdicts go."""

    __slots__ = ("_resource_only", "diagnosis", "fwk", "on_mismatch", "pod", "recorder", "state")

    def __init__(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        *,
        diagnosis: Diagnosis,
        on_mismatch: MismatchReporter,
        recorder: CycleRecorder | None = None,
    ) -> None:
        self.fwk = fwk
        self.state = state
        self.pod = pod
        self.diagnosis = diagnosis
        self.on_mismatch = on_mismatch
        self.recorder = recorder
        self._resource_only: ResourceOnly | bool | None = False
        """:class:`ResourceOnly` for this cycle, None when it is not resource-only, False until first needed."""

    # --- the verdict on one node ---------------------------------------------------------------------

    def filter_node(self, node: NodeInfo) -> Status | None:
        """The reference verdict on one node, nominated pods included (upstream
        ``RunFilterPluginsWithNominatedPods``, through the handle's nominator, the one route to them). In a
        resource-only cycle (:mod:`.plugins.resource_only`) NodeResourcesFit's part is computed on the node's
        aggregates, so a node with nominated pods is not cloned."""
        fast = self._resource_only
        if fast is False:
            fast = self._resource_only = ResourceOnly.for_pod(self.fwk, self.state, self.pod)
        if isinstance(fast, ResourceOnly):
            status = fast.filter_node(node)
            if status is not GENERIC:
                return status  # type: ignore[return-value]
        fwk = self.fwk
        nominated = fwk.nominated_pods_for_node(node.name)
        if nominated:
            return fwk.run_filter_plugins_with_nominated_pods(self.state, self.pod, node, nominated)
        return fwk.run_filter_plugins(self.state, self.pod, node)

    def _reject(self, node: NodeInfo, status: Status) -> None:
        if status.code == Code.ERROR:
            raise SchedulingError(status)
        self.diagnosis.node_to_status[node.name] = status
        self.diagnosis.add_plugin_status(status)

    def _record(self, node: NodeInfo) -> dict[str, Status | None]:
        """Every Filter plugin's verdict on an examined node, into the recorder."""
        assert self.recorder is not None
        verdicts = self.fwk.run_all_filter_plugins(self.state, self.pod, node)
        self.recorder.node(node.name, examined=True).filters = verdicts
        return verdicts

    # --- per-node reference path ---------------------------------------------------------------------

    def sequential(self, nodes: Sequence[NodeInfo], *, num_to_find: int, start: int) -> SearchResult:
        n = len(nodes)
        feasible: list[NodeInfo] = []
        processed = 0
        for i in range(n):
            node = nodes[(start + i) % n]
            processed += 1
            if self.recorder is not None:
                self._record(node)
            status = self.filter_node(node)
            if status is None:
                feasible.append(node)
                if len(feasible) >= num_to_find:
                    break
                continue
            self._reject(node, status)
        return SearchResult(feasible, None, processed)

    # --- vector path -----------------------------------------------------------------------------------

    def _masks(self, table: NodeTable) -> list[tuple[FilterPlugin, Callable[[IntArray], BoolArray]]]:
        """Each Filter plugin's mask over rows; left out (outside a recorded cycle) where the plugin says it
        passes every row (``PassesEveryRowPlugin``): a mask that keeps every row changes nothing."""
        state, pod = self.state, self.pod
        skip = state.skip_filter_plugins
        vector = self.fwk.has_filter_vector
        recorded = self.recorder is not None
        out: list[tuple[FilterPlugin, Callable[[IntArray], BoolArray]]] = []
        for p in self.fwk.filter_plugins:
            name = p.name()
            if name in skip:
                continue
            is_vector = vector[name]
            if is_vector and not recorded:
                passes = getattr(p, "passes_every_row", None)  # PassesEveryRowPlugin (isinstance costs µs)
                if passes is not None and passes(state, pod, table):
                    continue
            out.append((p, _mask_fn(p, is_vector, state, pod, table)))
        return out

    def _nominated_mask(self, table: NodeTable) -> Callable[[IntArray], BoolArray] | None:
        """The mask that re-checks rows of nodes with nominated pods, None when no node has any."""
        names = self.fwk.handle.nominator.nominated_node_names()
        if not names:
            return None
        fast = self._resource_only_for_table()
        by_columns = fast.nominated_rows(table) if fast is not None else None
        if by_columns is not None:  # the rows the table arithmetic re-checks (all others pass as they are)
            if len(by_columns) == 0:
                return None
            nominated_rows = by_columns
        else:
            index = table.index
            found = [index[name] for name in names if name in index]
            if not found:
                return None
            nominated_rows = np.array(found, np.int64)
        infos = table.node_infos
        marked = np.zeros(table.size, np.bool_)  # row -> has nominated pods (np.isin costs ~10x an index)
        marked[nominated_rows] = True

        def with_nominated(rows: IntArray) -> BoolArray:
            out = np.ones(len(rows), np.bool_)
            at = np.flatnonzero(marked[rows])
            if len(at) == 0:
                return out
            # The rows passed every plugin's mask: in a resource-only cycle a row the table arithmetic does not
            # reject with its nominated pods passes (ResourceOnly.rejected_keys).
            fast = self._resource_only_for_table()
            found = fast.rejected_keys(table, rows[at], independent_passed=True) if fast is not None else None
            if found is not None:
                if found[0]:
                    rejected = np.zeros(table.size, np.bool_)
                    rejected[found[0]] = True
                    out[at] = ~rejected[rows[at]]
                return out
            for i in at.tolist():
                out[i] = self.filter_node(infos[int(rows[i])]) is None
            return out

        return with_nominated

    def vector(self, rows: IntArray, table: NodeTable, *, num_to_find: int, start: int) -> SearchResult:
        """Scan ``rows`` (in snapshot order) from ``start`` in windows until ``num_to_find`` rows pass."""
        n = len(rows)
        plugin_masks = self._masks(table)
        masks = [mask for _p, mask in plugin_masks]
        nominated = self._nominated_mask(table)
        if nominated is not None:
            masks.append(nominated)
        window = max(256, num_to_find + num_to_find // 4)
        found: list[IntArray] = []
        found_count = 0
        processed = 0
        rejected_rows: list[IntArray] = []
        for offset in range(0, n, window):
            chunk = _window(rows, start + offset, min(window, n - offset))
            passing = chunk
            for mask_of in masks:
                passing = passing[mask_of(passing)]
                if len(passing) == 0:
                    break
            need = num_to_find - found_count
            if len(passing) >= need:
                if len(passing) == len(chunk):  # nothing rejected in this window: the first ``need`` rows
                    upto = need
                    passing = passing[:need]
                else:
                    passing = passing[:need]
                    upto = int(np.flatnonzero(chunk == int(passing[-1]))[0]) + 1
                processed += upto
                found.append(passing)
                found_count += need
                if upto != need:
                    rejected_rows.append(np.setdiff1d(chunk[:upto], passing, assume_unique=True))
                break
            processed += len(chunk)
            found.append(passing)
            found_count += len(passing)
            if len(passing) != len(chunk):
                rejected_rows.append(np.setdiff1d(chunk, passing, assume_unique=True))
        feasible_rows = _concat(found)
        rejected = _concat(rejected_rows)
        if self.recorder is not None:
            self._check_rows(_window(rows, start, processed), plugin_masks, table)
        infos = table.node_infos
        feasible: Sequence[NodeInfo] = NodeRows(table, feasible_rows)
        if len(rejected):
            if not feasible:  # reasons come from the reference filters
                trusted: list[int] = []
                rest = self._reject_resource_only(table, rejected)
                for r in rest:
                    node = infos[r]
                    status = self.filter_node(node)
                    if status is None:
                        self.diagnosis.node_to_status.pop(node.name, None)
                        self._blame(node, plugin_masks, table, r)
                        trusted.append(r)
                        continue
                    self._reject(node, status)
                if trusted:
                    feasible_rows = np.array(trusted, np.int64)
                    feasible = [infos[r] for r in trusted]
            else:  # a pod that fits somewhere needs only the number of rejected nodes
                placeholder = Status(Code.UNSCHEDULABLE, ())
                names = table.names
                for r in rejected.tolist():
                    self.diagnosis.node_to_status[names[r]] = placeholder
        return SearchResult(feasible, feasible_rows, processed)

    def _resource_only_for_table(self) -> ResourceOnly | None:
        """The cycle's :class:`ResourceOnly` when its table arithmetic applies (no recorder), else None."""
        if self.recorder is not None:
            return None
        fast = self._resource_only
        if fast is False:
            fast = self._resource_only = ResourceOnly.for_pod(self.fwk, self.state, self.pod)
        return fast if isinstance(fast, ResourceOnly) else None

    def _reject_resource_only(self, table: NodeTable, rejected: IntArray) -> list[int]:
        """Record the statuses :meth:`ResourceOnly.rejected_keys` gives for the ``rejected`` rows, in bulk and in
        row order as :meth:`_reject` would; returns the rows it leaves to the reference filters (all of them
        outside a resource-only cycle)."""
        rows: list[int] = rejected.tolist()
        fast = self._resource_only_for_table()
        found = fast.rejected_keys(table, rejected) if fast is not None else None
        if fast is None or found is None:
            return rows
        known_rows, keys = found
        statuses: dict[int, Status] = {}
        for key in keys:
            if key not in statuses:
                statuses[key] = status = fast.status_of_key(key)
                self.diagnosis.add_plugin_status(status)
        names = table.names
        node_to_status = self.diagnosis.node_to_status
        if len(known_rows) == len(rows):
            node_to_status.update(zip(map(names.__getitem__, rows), map(statuses.__getitem__, keys), strict=True))
            return []
        by_row = dict(zip(known_rows, keys, strict=True))
        rest: list[int] = []
        for r in rows:  # the reference's order: statuses interleave with the rows left to it
            at = by_row.get(r)
            if at is None:
                rest.append(r)
                node_to_status[names[r]] = _PENDING
            else:
                node_to_status[names[r]] = statuses[at]
        return rest

    def _blame(
        self,
        node: NodeInfo,
        plugin_masks: Sequence[tuple[FilterPlugin, Callable[[IntArray], BoolArray]]],
        table: NodeTable,
        row: int,
    ) -> None:
        """The masks rejected a node its reference passes: name the vector path(s) that did."""
        one = np.array([row], np.int64)
        for plugin, mask in plugin_masks:
            if self.fwk.has_filter_vector[plugin.name()] and not bool(mask(one)[0]):
                self.on_mismatch(plugin.name(), f"filter_vector rejected node {node.name}, filter passes it")

    def _check_rows(
        self,
        examined: IntArray,
        plugin_masks: Sequence[tuple[FilterPlugin, Callable[[IntArray], BoolArray]]],
        table: NodeTable,
    ) -> None:
        """Recorded cycle: every plugin's reference verdict on every examined row, held against its vector mask."""
        rows = examined.tolist()
        verdicts = [self._record(table.node_infos[r]) for r in rows]
        for plugin, mask in plugin_masks:
            name = plugin.name()
            if not self.fwk.has_filter_vector[name]:
                continue
            got = mask(examined).tolist()
            for r, passed, by_plugin in zip(rows, got, verdicts, strict=True):
                verdict = by_plugin.get(name)
                reference = verdict is None or verdict.code in (Code.SUCCESS, Code.SKIP)
                if bool(passed) != reference:
                    self.on_mismatch(
                        name,
                        f"filter_vector {'passed' if passed else 'rejected'} node {table.names[r]}, "
                        f"filter {'passes' if reference else 'rejects'} it",
                    )


def _window(rows: IntArray, begin: int, length: int) -> IntArray:
    """``length`` rows of ``rows`` from index ``begin``, wrapping around (the rotation's order), without building
    the whole rotated array."""
    n = len(rows)
    if length <= 0 or n == 0:
        return rows[:0]
    begin %= n
    end = begin + length
    if end <= n:
        return rows[begin:end]
    return np.concatenate((rows[begin:], rows[: end - n]))


def _concat(parts: list[IntArray]) -> IntArray:
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else _EMPTY_ROWS


def _mask_fn(
    plugin: FilterPlugin, vector: bool, state: CycleState, pod: PodInfo, table: NodeTable
) -> Callable[[IntArray], BoolArray]:
    """The plugin's verdict over rows: its ``filter_vector``, or its per-node ``filter`` for plugins without one
    (out-of-tree plugins, or in-tree ones that only have a reference implementation)."""
    if vector:
        return functools.partial(cast(VectorFilterPlugin, plugin).filter_vector, state, pod, table)
    infos = table.node_infos

    def per_node(rows: IntArray) -> BoolArray:
        verdicts = (plugin.filter(state, pod, infos[r]) is None for r in rows.tolist())
        return np.fromiter(verdicts, np.bool_, len(rows))

    return per_node
