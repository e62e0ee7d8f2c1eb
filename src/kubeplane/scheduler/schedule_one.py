"""The scheduling algorithm of one pod (upstream ``schedule_one.go``: schedulePod, findNodesThatFitPod,
findNodesThatPassFilters, numFeasibleNodesToFind, prioritizeNodes, selectHost) and the FitError message.

Node search follows upstream: nodes are examined in snapshot order starting at a rotating index
(``next_start_node_index``, advanced by the number of nodes processed) until ``num_feasible_nodes_to_find``
feasible nodes are found (adaptive percentageOfNodesToScore: ``50 - nodes/125`` %, at least 5 % and 100 nodes).
Upstream examines nodes in parallel and stops "about" there; we examine them in order and stop exactly there.

Fast path (DESIGN decision 6): the rotation is scanned in windows with numpy masks over the snapshot's
NodeTable (a plugin without ``filter_vector`` is asked node by node for the rows still passing, so out-of-tree
plugins keep working). Nodes with nominated pods are the exception: a row the masks pass is checked again by
``run_filter_plugins_with_nominated_pods`` (a node the masks reject fails that check too, since it requires the
pod to fit without the nominated pods as well). The per-node reference filters run only on rejected nodes, and
only when their reasons are needed (the pod did not fit), so the statuses and the FailedScheduling message are
the reference's.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
from kubeplane.scheduler.framework.interface import Code, CycleState, FilterPlugin, Status, VectorFilterPlugin
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = [
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "NO_NODES_AVAILABLE",
    "Diagnosis",
    "FitError",
    "NoNodesAvailableError",
    "ScheduleAlgorithm",
    "ScheduleResult",
    "fit_error_message",
]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass
class Diagnosis:
    """Why a pod did not fit (upstream ``framework.Diagnosis``)."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    absent_nodes_status: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """Upstream ``FitError.Error()``: ``0/N nodes are available: <sorted "count reason" list>.``"""
    msg = f"0/{num_all_nodes} nodes are available:"
    if diagnosis.pre_filter_msg:
        msg += f" {diagnosis.pre_filter_msg}."
    else:
        counts: dict[str, int] = {}
        for status in diagnosis.node_to_status.values():
            for reason in status.reasons:
                counts[reason] = counts.get(reason, 0) + 1
        absent = num_all_nodes - len(diagnosis.node_to_status)
        if absent > 0 and diagnosis.absent_nodes_status is not None:
            for reason in diagnosis.absent_nodes_status.reasons:
                counts[reason] = counts.get(reason, 0) + absent
        histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        msg += f" {diagnosis.post_filter_msg}."
    return msg


class FitError(Exception):
    """No node fits the pod; ``str`` is the FailedScheduling message."""

    def __init__(self, pod: PodInfo, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis

    def __str__(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)


class NoNodesAvailableError(Exception):
    def __str__(self) -> str:
        return NO_NODES_AVAILABLE


class SchedulingError(Exception):
    """A plugin returned an error: the pod is retried with backoff."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int


NominatedPodsFn = Callable[[str], Sequence[PodInfo]]


class ScheduleAlgorithm:
    """Scheduler-wide search state: the rotating start index, the global percentage, the tie-break RNG."""

    def __init__(
        self,
        *,
        rng: random.Random,
        percentage_of_nodes_to_score: int | None = None,
        nominated_pods_for_node: NominatedPodsFn | None = None,
        nominated_nodes: Callable[[], Collection[str]] | None = None,
    ) -> None:
        self.rng = rng
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score or 0
        self.next_start_node_index = 0
        self.nominated_pods_for_node = nominated_pods_for_node
        self.nominated_nodes = nominated_nodes
        # The rows of the last feasible list the vector filter path produced, so that scoring need not look
        # them up again; only used when prioritize_and_select receives that very list.
        self._feasible_rows: tuple[list[NodeInfo], IntArray] | None = None

    def num_feasible_nodes_to_find(self, profile_percentage: int | None, num_all_nodes: int) -> int:
        if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
            return num_all_nodes
        percentage = profile_percentage if profile_percentage is not None else self.percentage_of_nodes_to_score
        if percentage == 0:
            percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
        num = num_all_nodes * percentage // 100
        return max(num, MIN_FEASIBLE_NODES_TO_FIND)

    # --- schedulePod ----------------------------------------------------------------------------------------

    def schedule_pod(
        self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], table: NodeTable | None
    ) -> ScheduleResult:
        """Raises NoNodesAvailableError, FitError or SchedulingError (upstream ``schedulePod``)."""
        if not nodes:
            raise NoNodesAvailableError()
        feasible, diagnosis = self.find_nodes_that_fit_pod(fwk, state, pod, nodes, table)
        if not feasible:
            raise FitError(pod, len(nodes), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1)
        host = self.prioritize_and_select(fwk, state, pod, feasible, table)
        return ScheduleResult(host, evaluated, len(feasible))

    def find_nodes_that_fit_pod(
        self, fwk: Framework, state: CycleState, pod: PodInfo, all_nodes: Sequence[NodeInfo], table: NodeTable | None
    ) -> tuple[list[NodeInfo], Diagnosis]:
        diagnosis = Diagnosis()
        result, status, rejected = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(rejected)
        if status is not None and status.code != Code.SUCCESS:
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.absent_nodes_status = status
            diagnosis.pre_filter_msg = status.message()
            diagnosis.add_plugin_status(status)
            return [], diagnosis
        nominated = str(((pod.pod.get("status") or {}).get("nominatedNodeName")) or "")
        if nominated:
            node = _find(all_nodes, table, nominated)
            if node is not None:
                feasible = self._filter_sequential(fwk, state, pod, diagnosis, [node], num_to_find=1, start=0)[0]
                if feasible:
                    return feasible, diagnosis
        nodes: Sequence[NodeInfo] = all_nodes
        rows: IntArray | None = None
        if result is not None and result.node_names is not None:
            picked = [ni for ni in (_find(all_nodes, table, n) for n in sorted(result.node_names)) if ni is not None]
            nodes = picked
            diagnosis.absent_nodes_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejected))}]",),
            )
            if table is not None:
                rows = np.fromiter((table.index[ni.name] for ni in picked), np.int64, len(picked))
        elif table is not None:
            rows = np.arange(table.size, dtype=np.int64)
        feasible, processed = self.find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes, rows, table)
        if all_nodes:
            self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        return feasible, diagnosis

    def find_nodes_that_pass_filters(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        rows: IntArray | None,
        table: NodeTable | None,
    ) -> tuple[list[NodeInfo], int]:
        """Feasible nodes and how many nodes were processed (feasible + rejected)."""
        n = len(nodes)
        if n == 0:
            return [], 0
        num_to_find = self.num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, n)
        if not fwk.has_score_plugins():
            num_to_find = 1
        start = self.next_start_node_index % n
        if not fwk.has_filter_plugins():
            picked = [nodes[(start + i) % n] for i in range(min(num_to_find, n))]
            return picked, len(picked)
        if table is not None and rows is not None:
            return self._filter_vector(fwk, state, pod, diagnosis, nodes, rows, table, num_to_find, start)
        return self._filter_sequential(fwk, state, pod, diagnosis, nodes, num_to_find=num_to_find, start=start)

    def _filter_sequential(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        *,
        num_to_find: int,
        start: int,
    ) -> tuple[list[NodeInfo], int]:
        n = len(nodes)
        feasible: list[NodeInfo] = []
        processed = 0
        for i in range(n):
            node = nodes[(start + i) % n]
            processed += 1
            status = self._filter_node(fwk, state, pod, node)
            if status is None:
                feasible.append(node)
                if len(feasible) >= num_to_find:
                    break
                continue
            if status.code == Code.ERROR:
                raise SchedulingError(status)
            diagnosis.node_to_status[node.name] = status
            diagnosis.add_plugin_status(status)
        return feasible, processed

    def _filter_node(self, fwk: Framework, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        """The reference verdict on one node, nominated pods included (upstream
        ``RunFilterPluginsWithNominatedPods``)."""
        nominated = self.nominated_pods_for_node(node.name) if self.nominated_pods_for_node is not None else ()
        if nominated:
            return fwk.run_filter_plugins_with_nominated_pods(state, pod, node, nominated)
        return fwk.run_filter_plugins(state, pod, node)

    def _nominated_rows(self, table: NodeTable) -> IntArray | None:
        """Rows of nodes that have nominated pods, None when there are none."""
        names = self.nominated_nodes() if self.nominated_nodes is not None else ()
        if not names:
            return None
        index = table.index
        found = [index[name] for name in names if name in index]
        return np.array(found, np.int64) if found else None

    def _filter_vector(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        diagnosis: Diagnosis,
        nodes: Sequence[NodeInfo],
        rows: IntArray,
        table: NodeTable,
        num_to_find: int,
        start: int,
    ) -> tuple[list[NodeInfo], int]:
        n = len(nodes)
        order = np.concatenate((rows[start:], rows[:start])) if start else rows
        skip = state.skip_filter_plugins
        vector = fwk.has_filter_vector
        masks = [_mask_fn(p, vector[p.name()], state, pod, table) for p in fwk.filter_plugins if p.name() not in skip]
        nominated_rows = self._nominated_rows(table)
        if nominated_rows is not None:
            infos = table.node_infos

            def with_nominated(rows: IntArray) -> BoolArray:
                out = np.ones(len(rows), np.bool_)
                for i in np.flatnonzero(np.isin(rows, nominated_rows)).tolist():
                    out[i] = self._filter_node(fwk, state, pod, infos[int(rows[i])]) is None
                return out

            masks.append(with_nominated)
        window = max(256, num_to_find + num_to_find // 4)
        found: list[IntArray] = []
        found_count = 0
        processed = 0
        rejected_rows: list[IntArray] = []
        for offset in range(0, n, window):
            chunk = order[offset : offset + window]
            passing = chunk
            for mask_of in masks:
                passing = passing[mask_of(passing)]
                if len(passing) == 0:
                    break
            need = num_to_find - found_count
            if len(passing) >= need:
                passing = passing[:need]
                last = int(passing[-1])
                upto = int(np.flatnonzero(chunk == last)[0]) + 1
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
        if len(found) == 1:
            feasible_rows = found[0]
        else:
            feasible_rows = np.concatenate(found) if found else np.zeros(0, np.int64)
        feasible = list(map(table.node_infos.__getitem__, feasible_rows.tolist()))
        self._feasible_rows = (feasible, feasible_rows)
        if len(rejected_rows) == 1:
            rejected = rejected_rows[0]
        else:
            rejected = np.concatenate(rejected_rows) if rejected_rows else np.zeros(0, np.int64)
        if len(rejected):
            # Reasons come from the reference filters; a pod that fits somewhere needs only their count.
            if not feasible:
                for r in rejected:
                    node = table.node_infos[int(r)]
                    status = self._filter_node(fwk, state, pod, node)
                    if status is None:  # the vector path and the reference disagree: trust the reference
                        feasible.append(node)
                        continue
                    if status.code == Code.ERROR:
                        raise SchedulingError(status)
                    diagnosis.node_to_status[node.name] = status
                    diagnosis.add_plugin_status(status)
            else:
                placeholder = Status(Code.UNSCHEDULABLE, ())
                for r in rejected:
                    diagnosis.node_to_status[table.names[int(r)]] = placeholder
        return feasible, processed

    # --- prioritizeNodes / selectHost ----------------------------------------------------------------------

    def prioritize_and_select(
        self, fwk: Framework, state: CycleState, pod: PodInfo, feasible: Sequence[NodeInfo], table: NodeTable | None
    ) -> str:
        if not fwk.has_score_plugins():
            return feasible[0].name
        status = fwk.run_pre_score_plugins(state, pod, feasible)
        if status is not None:
            raise SchedulingError(status)
        if table is not None:
            cached = self._feasible_rows
            self._feasible_rows = None
            if cached is not None and cached[0] is feasible and len(cached[1]) == len(feasible):
                rows = cached[1]
            else:
                index = table.index
                rows = np.fromiter((index[ni.name] for ni in feasible), np.int64, len(feasible))
            totals, status = fwk.vector_scores(state, pod, rows, feasible, table)
            if status is not None:
                raise SchedulingError(status)
            return feasible[self.select_index(totals)].name
        scores, status = fwk.run_score_plugins(state, pod, feasible)
        if status is not None:
            raise SchedulingError(status)
        totals = np.fromiter((s.total for s in scores), np.int64, len(scores))
        return feasible[self.select_index(totals)].name

    def select_index(self, totals: IntArray) -> int:
        """The index of the highest total; ties broken uniformly by the seeded RNG."""
        best = int(totals.max())
        candidates = np.flatnonzero(totals == best)
        if len(candidates) == 1:
            return int(candidates[0])
        return int(candidates[self.rng.randrange(len(candidates))])


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


def _find(nodes: Sequence[NodeInfo], table: NodeTable | None, name: str) -> NodeInfo | None:
    if table is not None:
        i = table.index.get(name)
        return table.node_infos[i] if i is not None else None
    for ni in nodes:
        if ni.name == name:
            return ni
    return None
