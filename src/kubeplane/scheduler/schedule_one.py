"""One scheduling cycle, for everything that schedules (upstream ``schedule_one.go``: schedulePod,
findNodesThatFitPod, numFeasibleNodesToFind, prioritizeNodes, selectHost, and the PostFilter call of
handleSchedulingFailure's caller).

:class:`SchedulingCycle` owns PreFilter → windowed Filter (:mod:`kubeplane.scheduler.node_search`) →
PreScore/Score/NormalizeScore → select, and PostFilter (preemption) when no node fits. The scheduler runs it with
no recorder; ``kubeplane explain``, ``--what-if`` and the upstream conformance suite run the very same object with a
:class:`~kubeplane.scheduler.framework.recorder.CycleRecorder`, which captures each extension point's status and
each node's per-plugin verdicts and raw, normalised and weighted scores without changing the decision.

Node search follows upstream: nodes are examined in snapshot order starting at a rotating index
(``next_start_node_index``, advanced by the number of nodes processed) until ``num_feasible_nodes_to_find``
feasible nodes are found (adaptive percentageOfNodesToScore: ``50 - nodes/125`` %, at least 5 % and 100 nodes;
one node when the profile has no Score plugin). Upstream examines nodes in parallel and stops "about" there; we
examine them in order and stop exactly there, so a seed makes every decision reproducible.

Opportunistic batching (:mod:`kubeplane.scheduler.batch`, when the scheduler enables it): after PreFilter the
profile's batch may hint a node, which is tried alone as a nominated node is; a cycle that succeeds hands its other
scored nodes, best first, to the batch (upstream GetNodeHint / StoreScheduleResults). Cycles with a recorder
(explain, what-if, conformance) never batch.

A disagreement between a plugin's vector path and its reference is never silently trusted: with
``strict_vectors`` (the test suite sets ``KUBEPLANE_STRICT_VECTORS=1``) it raises :class:`VectorMismatchError`;
otherwise it is logged at error level once per plugin and the reference's verdict is used.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubeplane.scheduler.backend.node_table import IntArray, NodeTable
from kubeplane.scheduler.batch import OpportunisticBatch, SortedScoredNodes
from kubeplane.scheduler.framework.diagnosis import (
    NO_NODES_AVAILABLE,
    Diagnosis,
    FitError,
    NoNodesAvailableError,
    SchedulingError,
    fit_error_message,
)
from kubeplane.scheduler.framework.interface import (
    FEASIBLE_ROWS_KEY,
    Code,
    CycleState,
    FeasibleRows,
    NodeScore,
    NodeToStatus,
    Status,
)
from kubeplane.scheduler.framework.recorder import CycleRecorder, ScoreRecord
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.node_search import MismatchReporter, NodeRows, NodeSearch, SearchResult

__all__ = [
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "NO_NODES_AVAILABLE",
    "STRICT_VECTORS_ENV",
    "Diagnosis",
    "FitError",
    "NoNodesAvailableError",
    "ScheduleResult",
    "SchedulingCycle",
    "SchedulingError",
    "VectorMismatchError",
    "fit_error_message",
]

log = logging.getLogger("kubeplane.scheduler")

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
STRICT_VECTORS_ENV = "KUBEPLANE_STRICT_VECTORS"
"""``1``: a vector/reference disagreement raises instead of being logged (the test suite sets it)."""


class VectorMismatchError(AssertionError):
    """A plugin's vector path disagreed with its reference implementation (strict mode only)."""


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int


@dataclass(slots=True)
class _Hinting:
    """One cycle's use of its profile's :class:`OpportunisticBatch`: the hint it got and the pod's signature."""

    batch: OpportunisticBatch
    cycle_count: int
    hint: str = ""
    signature: str | None = None


class SchedulingCycle:
    """Scheduler-wide search state (the rotating start index, the global percentage, the tie-break RNG) and the
    cycle that uses it. One object per scheduler; explain and what-if make their own."""

    def __init__(
        self,
        *,
        rng: random.Random,
        percentage_of_nodes_to_score: int | None = None,
        strict_vectors: bool | None = None,
    ) -> None:
        self.rng = rng
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score or 0
        self.next_start_node_index = 0
        self.strict_vectors = (
            strict_vectors if strict_vectors is not None else os.environ.get(STRICT_VECTORS_ENV) == "1"
        )
        self._reported: set[str] = set()
        self._report_unrecorded = self._mismatch(None)  # the scheduler's cycles: made once, not per pod
        self.batches: Mapping[str, OpportunisticBatch] = {}
        self._current_cycle: Callable[[], int] = lambda: 0
        # The batch's per-node tie-breakers (upstream's Randomizer) draw from a copy of the seed's sequence, so that
        # sorting the runners-up never shifts the draws of the decisions themselves.
        copy = random.Random()
        copy.setstate(rng.getstate())
        self._tiebreak = np.random.default_rng(copy.getrandbits(64))

    def enable_batching(self, batches: Mapping[str, OpportunisticBatch], current_cycle: Callable[[], int]) -> None:
        """Opportunistic batching (gate ``OpportunisticBatching``) for the profiles in ``batches``;
        ``current_cycle`` is the queue's scheduling cycle counter. Cycles with a recorder never batch."""
        self.batches = batches
        self._current_cycle = current_cycle

    def num_feasible_nodes_to_find(self, profile_percentage: int | None, num_all_nodes: int) -> int:
        if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
            return num_all_nodes
        percentage = profile_percentage if profile_percentage is not None else self.percentage_of_nodes_to_score
        if percentage == 0:
            percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
        num = num_all_nodes * percentage // 100
        return max(num, MIN_FEASIBLE_NODES_TO_FIND)

    def _mismatch(self, recorder: CycleRecorder | None) -> MismatchReporter:
        def report(plugin: str, what: str) -> None:
            message = f"plugin {plugin!r}: vector path and reference disagree: {what}"
            if recorder is not None:
                recorder.mismatches.append(message)
            if self.strict_vectors:
                raise VectorMismatchError(message)
            if plugin not in self._reported:
                self._reported.add(plugin)
                log.error("%s (reported once per plugin; the reference's verdict is used)", message)

        return report

    # --- the cycle ---------------------------------------------------------------------------------------

    def schedule(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        table: NodeTable | None,
        *,
        recorder: CycleRecorder | None = None,
    ) -> ScheduleResult:
        """schedulePod, then PostFilter when no node fits. Raises NoNodesAvailableError, FitError (with
        PostFilter's ``nominating`` result and message) or SchedulingError."""
        if recorder is not None:
            recorder.score_plugins = [(p.name(), fwk.score_weights.get(p.name(), 1)) for p in fwk.score_plugins]
        if not nodes:
            raise NoNodesAvailableError()
        try:
            return self._schedule_pod(fwk, state, pod, nodes, table, recorder)
        except FitError as exc:
            if fwk.has_post_filter_plugins():
                self._post_filter(fwk, state, pod, exc, recorder)
            raise

    def _schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        table: NodeTable | None,
        recorder: CycleRecorder | None,
    ) -> ScheduleResult:
        hinting: _Hinting | None = None
        if recorder is None and self.batches:
            batch = self.batches.get(fwk.profile_name)
            if batch is not None:
                hinting = _Hinting(batch, self._current_cycle())
        found, diagnosis = self.find_nodes_that_fit_pod(
            fwk, state, pod, nodes, table, recorder=recorder, hinting=hinting
        )
        feasible = found.feasible
        if not feasible:
            raise FitError(pod, len(nodes), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1 and recorder is None:
            if hinting is not None:
                hinting.batch.store_schedule_results(
                    hinting.signature, hinting.hint, feasible[0].name, None, hinting.cycle_count
                )
            return ScheduleResult(feasible[0].name, evaluated, 1)
        host = self.prioritize_and_select(fwk, state, pod, found, table, recorder=recorder, hinting=hinting)
        return ScheduleResult(host, evaluated, len(feasible))

    def _post_filter(
        self, fwk: Framework, state: CycleState, pod: PodInfo, exc: FitError, recorder: CycleRecorder | None
    ) -> None:
        diagnosis = exc.diagnosis
        statuses = NodeToStatus(diagnosis.node_to_status, diagnosis.absent_nodes_status)
        nominating, status = fwk.run_post_filter_plugins(state, pod, statuses)
        diagnosis.post_filter_msg = status.message() if status is not None else ""
        exc.nominating = nominating
        if recorder is not None:
            recorder.post_filter_ran = True
            recorder.post_filter, recorder.post_filter_result = status, nominating
        if status is not None and status.code == Code.ERROR:
            log.error("running PostFilter plugins for %s: %s", pod.key, status.message())

    # --- PreFilter and Filter (findNodesThatFitPod) -----------------------------------------------------

    def find_nodes_that_fit_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        all_nodes: Sequence[NodeInfo],
        table: NodeTable | None,
        *,
        recorder: CycleRecorder | None = None,
        exhaustive: bool = False,
        hinting: _Hinting | None = None,
    ) -> tuple[SearchResult, Diagnosis]:
        """PreFilter, the nominated node first, then Filter over the rotation. ``exhaustive`` (what-if) examines
        every node from the first, looking for all feasible ones, and leaves the rotation alone.

        With ``hinting`` (opportunistic batching), the batch is asked for a hint after PreFilter, as upstream,
        and the hinted node is tried alone the way a nominated node is (a nominated node takes precedence); if it
        passes Filter the rotation does not move."""
        state.recorder = recorder  # the framework records PreFilter and PreScore statuses through it
        diagnosis = Diagnosis()
        none = SearchResult([], None, 0)
        result, status, rejected = fwk.run_pre_filter_plugins(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(rejected)
        if status is not None and status.code != Code.SUCCESS:
            if not status.is_rejected():
                raise SchedulingError(status)
            diagnosis.absent_nodes_status = status
            diagnosis.pre_filter_msg = status.message()
            diagnosis.add_plugin_status(status)
            return none, diagnosis
        search = NodeSearch(
            fwk,
            state,
            pod,
            diagnosis=diagnosis,
            on_mismatch=self._report_unrecorded if recorder is None else self._mismatch(recorder),
            recorder=recorder,
        )
        nominated = str(pod.status.get("nominatedNodeName") or "")
        if hinting is not None and not exhaustive:
            hinting.hint, hinting.signature = hinting.batch.get_node_hint(
                state, pod, hinting.cycle_count, lambda name: _find(all_nodes, table, name)
            )
        first = nominated or (hinting.hint if hinting is not None else "")
        if first and not exhaustive:
            node = _find(all_nodes, table, first)
            if node is not None:
                found = search.sequential([node], num_to_find=1, start=0)
                if found.feasible:
                    if recorder is not None:
                        recorder.nominated_node = nominated
                        recorder.feasible = [nominated]
                    return found, diagnosis
        nodes: Sequence[NodeInfo] = all_nodes
        rows: IntArray | None = None
        if result is not None and result.node_names is not None:
            picked = [ni for ni in (_find(all_nodes, table, n) for n in sorted(result.node_names)) if ni is not None]
            nodes = picked
            diagnosis.absent_nodes_status = Status(
                Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                (f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(rejected))}]",),
            )
            if recorder is not None:
                recorder.pre_filter_nodes = frozenset(result.node_names)
            if table is not None:
                rows = np.fromiter((table.index[ni.name] for ni in picked), np.int64, len(picked))
        elif table is not None:
            rows = np.arange(table.size, dtype=np.int64)
        found = self._pass_filters(fwk, search, nodes, rows, table, recorder=recorder, exhaustive=exhaustive)
        if all_nodes and not exhaustive:
            self.next_start_node_index = (self.next_start_node_index + found.processed) % len(all_nodes)
        if recorder is not None:
            recorder.feasible = [ni.name for ni in found.feasible]
        return found, diagnosis

    def _pass_filters(
        self,
        fwk: Framework,
        search: NodeSearch,
        nodes: Sequence[NodeInfo],
        rows: IntArray | None,
        table: NodeTable | None,
        *,
        recorder: CycleRecorder | None,
        exhaustive: bool,
    ) -> SearchResult:
        """Upstream ``findNodesThatPassFilters``: feasible nodes and how many nodes were processed."""
        n = len(nodes)
        if n == 0:
            return SearchResult([], None, 0)
        if exhaustive:
            num_to_find, start = n, 0
        else:
            num_to_find = self.num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, n)
            if not fwk.has_score_plugins():
                num_to_find = 1
            start = self.next_start_node_index % n
        if recorder is not None:
            recorder.num_to_find = num_to_find
        if not fwk.has_filter_plugins():
            picked = [nodes[(start + i) % n] for i in range(min(num_to_find, n))]
            if recorder is not None:
                for ni in picked:
                    recorder.node(ni.name, examined=True)
            return SearchResult(picked, None, len(picked))
        if table is not None and rows is not None:
            return search.vector(rows, table, num_to_find=num_to_find, start=start)
        return search.sequential(nodes, num_to_find=num_to_find, start=start)

    # --- PreScore, Score, selectHost (prioritizeNodes) ------------------------------------------------------

    def prioritize_and_select(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        found: SearchResult,
        table: NodeTable | None,
        *,
        recorder: CycleRecorder | None = None,
        hinting: _Hinting | None = None,
    ) -> str:
        feasible = found.feasible
        if not fwk.has_score_plugins():
            host = feasible[0].name
            if hinting is not None:
                self._store(hinting, host, feasible, None, 0)
        else:
            rows = found.rows
            if table is not None:
                if rows is None or len(rows) != len(feasible):
                    index = table.index
                    rows = np.fromiter((index[ni.name] for ni in feasible), np.int64, len(feasible))
                state.write(FEASIBLE_ROWS_KEY, FeasibleRows(feasible, table, rows))
            status = fwk.run_pre_score_plugins(state, pod, feasible)
            if status is not None:
                raise SchedulingError(status)
            if table is not None and rows is not None:
                totals, status = fwk.vector_scores(state, pod, rows, feasible, table)
            else:
                scores, status = fwk.run_score_plugins(state, pod, feasible)
                totals = np.fromiter((s.total for s in scores), np.int64, len(scores))
            if status is not None:
                raise SchedulingError(status)
            if recorder is not None:
                self._record_scores(fwk, state, pod, found, table, totals, recorder)
            chosen = self.select_index(totals)
            host = feasible[chosen].name
            if hinting is not None:
                self._store(hinting, host, feasible, totals, chosen)
        if recorder is not None:
            recorder.selected = host
        return host

    def _store(
        self, hinting: _Hinting, host: str, feasible: Sequence[NodeInfo], totals: IntArray | None, chosen: int
    ) -> None:
        """Upstream ``StoreScheduleResults`` after a scored cycle: the nodes other than the chosen one, best first,
        score ties in random order (upstream's per-node ``Randomizer``). Sorted only for a pod with a signature:
        without one the list is dropped at once."""
        others: SortedScoredNodes
        if hinting.signature is None:
            others = SortedScoredNodes.unordered(len(feasible) - 1)
        elif totals is None:  # no Score plugin: every node scores the same
            others = SortedScoredNodes([ni.name for i, ni in enumerate(feasible) if i != chosen])
        else:
            keys = self._tiebreak.random(len(feasible))
            order = np.lexsort((-keys, -totals))
            names = feasible.names() if isinstance(feasible, NodeRows) else [ni.name for ni in feasible]
            others = SortedScoredNodes([names[i] for i in order.tolist() if i != chosen])
        hinting.batch.store_schedule_results(hinting.signature, hinting.hint, host, others, hinting.cycle_count)

    def select_index(self, totals: IntArray) -> int:
        """The index of the highest total; ties broken uniformly by the seeded RNG."""
        best = int(totals.max())
        candidates = np.flatnonzero(totals == best)
        if len(candidates) == 1:
            return int(candidates[0])
        return int(candidates[self.rng.randrange(len(candidates))])

    def _record_scores(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        found: SearchResult,
        table: NodeTable | None,
        totals: IntArray,
        recorder: CycleRecorder,
    ) -> None:
        """Each plugin's reference raw and normalised score per feasible node, held against the totals the
        decision used (and against the plugin's own vector raw scores where it has them)."""
        feasible = found.feasible
        report = self._mismatch(recorder)
        reference = np.zeros(len(feasible), np.int64)
        for plugin in fwk.score_plugins:
            name = plugin.name()
            weight = fwk.score_weights.get(name, 1)
            if name in state.skip_score_plugins:
                for ni in feasible:
                    recorder.node(ni.name, examined=True).scores[name] = ScoreRecord(0, 0, weight, skipped=True)
                continue
            raw = fwk.raw_scores(state, pod, plugin, feasible)
            if isinstance(raw, Status):
                raise SchedulingError(raw)
            normalized = [NodeScore(s.name, s.score) for s in raw]
            bad = fwk.normalize(state, pod, plugin, normalized)
            if bad is not None:
                raise SchedulingError(bad)
            vector = fwk.score_vector_path(name)
            if vector is not None and table is not None and found.rows is not None:
                got = vector[0](state, pod, table, found.rows).tolist()
                for ni, r, v in zip(feasible, raw, got, strict=True):
                    if int(v) != r.score:
                        report(name, f"score_vector gave node {ni.name} {int(v)}, score gives {r.score}")
            for i, (r, s) in enumerate(zip(raw, normalized, strict=True)):
                recorder.node(r.name, examined=True).scores[name] = ScoreRecord(r.score, s.score, weight)
                reference[i] += s.score * weight
        for ni, total, want in zip(feasible, totals.tolist(), reference.tolist(), strict=True):
            recorder.node(ni.name, examined=True).total = int(total)
            if int(total) != int(want):
                report("(score totals)", f"node {ni.name}: vector total {total}, reference total {want}")

    # --- the record of the nodes the cycle did not examine ---------------------------------------------------

    def record_unexamined(
        self, fwk: Framework, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo], recorder: CycleRecorder
    ) -> None:
        """Every Filter plugin's verdict on the nodes the cycle did not reach (after it found enough feasible
        nodes), for explain's full picture; marked unexamined, they change nothing about the decision."""
        if recorder.pre_filter and any(
            s is not None and s.code not in (Code.SUCCESS, Code.SKIP) for s in recorder.pre_filter.values()
        ):
            return  # PreFilter rejected the pod: no node was filtered
        for ni in nodes:
            if ni.name not in recorder.nodes:
                recorder.node(ni.name, examined=False).filters = fwk.run_all_filter_plugins(state, pod, ni)


def _find(nodes: Sequence[NodeInfo], table: NodeTable | None, name: str) -> NodeInfo | None:
    if table is not None:
        i = table.index.get(name)
        return table.node_infos[i] if i is not None else None
    for ni in nodes:
        if ni.name == name:
            return ni
    return None
