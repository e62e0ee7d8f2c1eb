"""DefaultPreemption: when no node fits, evict lower-priority pods from one node so the pod fits there.

Upstream ``plugins/defaultpreemption`` with ``framework/preemption`` (Evaluator, Executor), kube-scheduler v1.37,
with asynchronous preemption (``SchedulerAsyncPreemption``, on by default):

1. Eligibility: ``preemptionPolicy: Never`` is not eligible; a pod already nominated to a node where a
   lower-priority pod is terminating because of preemption waits for it (unless the nominated node is now
   UnschedulableAndUnresolvable for the pod).
2. Candidates: nodes whose Filter status is Unschedulable (UnschedulableAndUnresolvable nodes cannot be helped),
   examined from a random offset; on each, every lower-priority pod is removed (through the PreFilter
   extensions, so InterPodAffinity and PodTopologySpread state follows), the pod must then pass Filter
   (with nominated pods), and victims are reprieved highest priority first (PDB-violating ones before the
   others) while the pod still fits. The search stops once ``max(minCandidateNodesPercentage % of the
   candidates, minCandidateNodesAbsolute)`` candidates are found and one of them violates no PDB. In a
   resource-only cycle each node's victims come from :meth:`.resource_only.ResourceOnly.select_victims`
   (arithmetic, no clone, results kept per node across preemptors in a :class:`.victim_cache.VictimCache`),
   after :mod:`.preemption_screen` has settled every examined node that cannot be a candidate over the
   NodeTable at once; ``fast_dry_run = False`` forces the generic path and ``screen_rows = False`` the
   node-by-node arithmetic (tests compare them).
3. Choice: fewest PDB violations, then lowest highest-victim priority, smallest sum of priorities, fewest
   victims, latest start time among the highest-priority victims; then the first in examination order (one
   lexicographic key per candidate, kept across cycles while the candidate's cached victims are unchanged).
4. Execution (an asyncio task, the cycle does not wait): lower-priority pods nominated to the node lose their
   nomination, each victim gets the ``DisruptionTarget`` condition and is deleted gracefully with a
   ``Preempted`` event; a victim waiting at Permit is rejected instead. Until the task has issued the last
   deletion the preemptor is gated by :meth:`DefaultPreemption.pre_enqueue`, so it cannot preempt twice.

The scheduler then records ``status.nominatedNodeName`` on the preemptor and keeps it in the nominator, so
later cycles count it on that node (``run_filter_plugins_with_nominated_pods``).

Every evaluation leaves a :class:`PreemptionOutcome` in the CycleState under :data:`OUTCOME_KEY` (explain reports
it). With ``handle.client`` None (explain) nothing is executed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubeplane.api.labels import SelectorError, label_selector_as_selector
from kubeplane.api.meta import format_time, parse_time
from kubeplane.api.pods import with_observed_generation
from kubeplane.api.views import is_being_deleted, namespace_of, spec_of, status_of
from kubeplane.client.errors import ClientError, NotFoundError
from kubeplane.client.interface import PatchType
from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
from kubeplane.scheduler.backend.row_memo import RowMemo
from kubeplane.scheduler.framework.diagnosis import Diagnosis, fit_error_message
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    NodeToStatus,
    PostFilterResult,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.preemption_screen import LowerPriorityCache, dry_run_rows
from kubeplane.scheduler.plugins.resource_only import ResourceOnly, Split
from kubeplane.scheduler.plugins.victim_cache import VictimCache

__all__ = ["NAME", "OUTCOME_KEY", "Candidate", "DefaultPreemption", "PreemptionOutcome", "ScoreMemo", "new"]

log = logging.getLogger("kubeplane.scheduler.preemption")

NAME = "DefaultPreemption"
OUTCOME_KEY = "DefaultPreemption/outcome"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
_INT32_OFFSET = 2**31
_DISTINCT_BY_ID = 16
"""Up to this many distinct statuses, :func:`_rows_for_status_code` matches rows by status identity."""


@dataclass
class Candidate:
    """A node where preemption would work: its victims (most important first) and how many violate a PDB."""

    name: str
    victims: list[PodInfo]
    num_pdb_violations: int


@dataclass
class PreemptionOutcome:
    """What one PostFilter evaluation found: the chosen node (None when preemption did not help) and the
    candidates examined (the message is the PostFilter status's)."""

    nominated_node: str | None
    candidates: list[Candidate] = field(default_factory=list)


def start_time(pod: PodInfo, now: float) -> float:
    """``status.startTime`` as epoch seconds; ``now`` for pods not started yet (upstream ``GetPodStartTime``)."""
    started = _start_epoch(pod)
    return now if started is None else started


def _start_epoch(pod: PodInfo) -> float | None:
    """``status.startTime`` as epoch seconds, None when the pod has none (or it does not parse)."""
    raw = pod.status.get("startTime")
    return _epoch(str(raw)) if raw else None


@functools.lru_cache(maxsize=8192)
def _epoch(raw: str) -> float | None:
    """An RFC 3339 time as epoch seconds, None when it does not parse (each victim's start time is read by every
    ordering and every candidate comparison: pods share few distinct start times)."""
    try:
        return parse_time(raw).timestamp()
    except ValueError:
        return None


def _importance(pod: PodInfo, now: float) -> tuple[int, float]:
    """Sort key, most important first (upstream ``MoreImportantPod``): higher priority, then started earlier."""
    return (-pod.priority, start_time(pod, now))


def _terminating_by_preemption(pod: PodInfo) -> bool:
    if not pod.is_terminating:
        return False
    for condition in pod.status.get("conditions") or ():
        if condition.get("type") == "DisruptionTarget":
            return bool(condition.get("status") == "True" and condition.get("reason") == "PreemptionByScheduler")
    return False


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[Mapping[str, Any]]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` (in order) into those whose eviction would exceed a matching PDB's disruptionsAllowed and
    the rest, charging each matching PDB once per pod in order (upstream ``filterPodsWithPDBViolation``)."""
    allowed = [int(status_of(p).get("disruptionsAllowed") or 0) for p in pdbs]
    selectors = []
    for pdb in pdbs:
        try:
            selector = label_selector_as_selector(spec_of(pdb).get("selector"))
        except SelectorError:
            selector = None  # an invalid selector matches nothing
        selectors.append(selector)
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                selector = selectors[i]
                if namespace_of(pdb) != pod.namespace or selector is None:
                    continue
                if selector.empty() or not selector.matches(pod.labels):
                    continue  # a PDB with an empty selector matches nothing
                if pod.name in (status_of(pdb).get("disruptedPods") or ()):
                    continue  # already being disrupted: the API server has counted it
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating


_Score = tuple[int, int, int, int, float]
ScoreMemo = dict[str, tuple[list[PodInfo], int, tuple[int, int, int, int], float, bool]]
"""Node name -> (the victims list it was computed for, PDB violations, the first four scores, the earliest start
time among the highest-priority victims that have one, whether one of them has none): kept by DefaultPreemption
across cycles, so a node whose dry-run result came from the :class:`.victim_cache.VictimCache` (the same list
object) is not scored again. Holding the list keeps its identity from being reused."""


def pick_one_node_for_preemption(
    candidates: Sequence[Candidate], now: float, *, memo: ScoreMemo | None = None
) -> Candidate | None:
    """Upstream ``pickOneNodeForPreemption`` over the default score functions, ties to the first candidate."""
    if not candidates:
        return None

    def score(c: Candidate) -> _Score:
        # The score functions in upstream's order, compared lexicographically: the best of one, then of the next
        # among its ties, and so on (max() keeps the first of equal keys, upstream's first-examined tie). A pod
        # without a start time counts as started now (GetPodStartTime), the one part that reads the clock.
        victims = c.victims
        kept = memo.get(c.name) if memo is not None else None
        if kept is not None and kept[0] is victims and kept[1] == c.num_pdb_violations:
            first, fixed, floating = kept[2], kept[3], kept[4]
        else:
            top = victims[0].priority
            total = 0
            for p in victims:
                total += p.priority + _INT32_OFFSET
                top = max(top, p.priority)
            fixed, floating = math.inf, False
            for p in victims:
                if p.priority == top:
                    started = _start_epoch(p)
                    if started is None:
                        floating = True
                    else:
                        fixed = min(fixed, started)
            first = (-c.num_pdb_violations, -victims[0].priority, -total, -len(victims))
            if memo is not None:
                memo[c.name] = (victims, c.num_pdb_violations, first, fixed, floating)
        return (*first, min(fixed, now) if floating else fixed)

    return max(candidates, key=score)


class DefaultPreemption:
    """The PostFilter and PreEnqueue plugin; see the module docstring."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        self.handle = handle
        self.min_candidate_nodes_percentage = int(args.get("minCandidateNodesPercentage", 10))
        self.min_candidate_nodes_absolute = int(args.get("minCandidateNodesAbsolute", 100))
        # UIDs of preemptors whose victims are still being preempted, and for those whose last victim's
        # deletion is under way, that victim (namespace, name): the pod is gated until it is deleting.
        self._preempting: set[str] = set()
        self._last_victim: dict[str, tuple[str, str]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._victims = VictimCache()
        self.fast_dry_run = True
        """Use :meth:`ResourceOnly.select_victims` where it applies (tests turn it off to compare the paths)."""
        self.screen_rows = True
        """In the fast dry run, settle the nodes that cannot be candidates over the NodeTable
        (:mod:`.preemption_screen`); tests turn it off to compare with the node-by-node loop."""
        self._lower = LowerPriorityCache()
        self._screen_memo = RowMemo()
        """The screen's per-row keys of preemptor shapes in steady use (:func:`.preemption_screen.screen`)."""
        self._scores: ScoreMemo = {}

    def name(self) -> str:
        return NAME

    @property
    def framework(self) -> Framework:
        fwk = self.handle.framework
        if fwk is None:
            raise RuntimeError("DefaultPreemption needs the profile's framework on its handle")
        return fwk

    # --- PreEnqueue / events -----------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if self.is_pod_running_preemption(pod.uid):
            return Status.unresolvable("waiting for the preemption for this pod to be finished")
        return None

    def is_pod_running_preemption(self, uid: str) -> bool:
        """True while the preemptor's victims are not all being deleted yet (upstream ``IsPodRunningPreemption``)."""
        if uid not in self._preempting:
            return False
        last = self._last_victim.get(uid)
        if last is None:
            return True
        factory = self.handle.informer_factory
        if factory is None:
            return True
        victim = factory.informer_for("pods").lister().get(last[0], last[1])
        return victim is not None and not is_being_deleted(victim)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Lets a pod gated here be re-examined after a victim's deletion; the plugins that rejected the pod
        # decide whether it moves (this hint always skips), as upstream.
        return [
            ClusterEventWithHint(
                ClusterEvent("AssignedPod", ActionType.DELETE), lambda _pod, _old, _new: QueueingHint.QUEUE_SKIP
            )
        ]

    # --- PostFilter ----------------------------------------------------------------------------------------

    def post_filter(
        self, state: CycleState, pod: PodInfo, filtered_node_status: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        fwk = self.handle.framework
        if fwk is not None and fwk.metrics is not None:  # upstream counts every PostFilter call
            fwk.metrics.preemption_attempt()
        result, status = self.preempt(state, pod, filtered_node_status)
        if status is not None and status.message():
            status = Status(status.code, ("preemption: " + status.message(),))
        return result, status

    def preempt(
        self, state: CycleState, pod: PodInfo, m: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Upstream ``Evaluator.Preempt``: None result = leave the nomination alone; ``""`` clears it."""
        state.write(OUTCOME_KEY, PreemptionOutcome(None))
        nominated = str(pod.status.get("nominatedNodeName") or "")
        eligible, reason = self.pod_eligible_to_preempt_others(pod, m.status_of(nominated) if nominated else None)
        if not eligible:
            return None, Status.unschedulable(reason)
        all_nodes = list(self.handle.snapshot_lister.list())
        if not all_nodes:
            return None, Status.from_error("no nodes available")
        candidates, statuses, errors = self.find_candidates(state, all_nodes, pod, m)
        state.write(OUTCOME_KEY, PreemptionOutcome(None, candidates))
        if errors and not candidates:
            return None, Status.from_error(errors[0])
        if not candidates:
            diagnosis = Diagnosis(node_to_status=dict(statuses), absent_nodes_status=Status.unresolvable(NOT_HELPFUL))
            return PostFilterResult(""), Status.unschedulable(fit_error_message(len(all_nodes), diagnosis))
        if len(self._scores) > 2 * len(all_nodes):
            self._scores.clear()  # scores of nodes that left the cluster
        best = pick_one_node_for_preemption(candidates, self.handle.clock.now(), memo=self._scores)
        if best is None:
            return None, Status.unschedulable("no candidate node for preemption")
        state.write(OUTCOME_KEY, PreemptionOutcome(best.name, candidates))
        fwk = self.handle.framework
        if fwk is not None and fwk.metrics is not None:  # as upstream, when the candidate's preparation starts
            fwk.metrics.preemption(len(best.victims))
        self.prepare_candidate(best, pod)
        return PostFilterResult(best.name), None

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_status: Status | None) -> tuple[bool, str]:
        if pod.spec.get("preemptionPolicy") == "Never":
            return False, "not eligible due to preemptionPolicy=Never."
        nominated = str(pod.status.get("nominatedNodeName") or "")
        if nominated:
            if nominated_status is not None and nominated_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node = self.handle.snapshot_lister.get(nominated)
            if node is not None:
                for p in node.pods:
                    if p.priority < pod.priority and _terminating_by_preemption(p):
                        return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def calculate_num_candidates(self, num_nodes: int) -> int:
        n = num_nodes * self.min_candidate_nodes_percentage // 100
        n = max(n, self.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.handle.rng.randrange(num_nodes), self.calculate_num_candidates(num_nodes)

    def _pdbs(self) -> list[Mapping[str, Any]]:
        return list(self.handle.list_objects("poddisruptionbudgets", ""))

    def find_candidates(
        self, state: CycleState, all_nodes: Sequence[NodeInfo], pod: PodInfo, m: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Upstream ``findCandidates``: the dry run over the nodes ``m`` marks Unschedulable. On the table path
        the statuses are only filled when no candidate was found (the one case Preempt reads them)."""
        table = self._table_of(all_nodes) if self.fast_dry_run and self.screen_rows else None
        if table is not None:
            # The snapshot's rows are its node list (Snapshot's invariant): the potential nodes as rows, in order.
            rows = _rows_for_status_code(table.names, m, Code.UNSCHEDULABLE)
            if not rows:
                return [], NodeToStatus(), []
            offset, num = self.get_offset_and_num_candidates(len(rows))
            fast = ResourceOnly.for_pod(self.framework, state, pod)
            if fast is not None:
                pdbs = self._pdbs()
                now = self.handle.clock.now()
                self._victims.begin(pdbs, all_nodes, table)
                found = self._dry_run_rows(state, pod, fast, table, rows, pdbs, offset, num, now, statuses_needed=False)
                if found is not None:
                    return found
            infos = table.node_infos
            return self.dry_run_preemption(state, pod, [infos[r] for r in rows], self._pdbs(), offset, num)
        potential = m.nodes_for_status_code(all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            return [], NodeToStatus(), []
        offset, num = self.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, self._pdbs(), offset, num)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[Mapping[str, Any]],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]]:
        """Upstream ``DryRunPreemption``, sequentially: each list keeps at most ``num_candidates``; the search
        stops once there is a non-violating candidate and ``num_candidates`` in all."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[str] = []
        n = len(potential)
        fast = ResourceOnly.for_pod(self.framework, state, pod) if self.fast_dry_run else None
        now = self.handle.clock.now()
        split = self._splitter(pdbs, now)
        cache = self._victims if fast is not None else None
        table = self._table_of(self.handle.snapshot_lister.list()) if fast is not None and self.screen_rows else None
        if cache is not None:
            cache.begin(pdbs, self.handle.snapshot_lister.list(), table)
        if fast is not None and table is not None:
            index, infos = table.index, table.node_infos
            rows = [index.get(ni.name, -1) for ni in potential]
            if all(r >= 0 and infos[r] is ni for r, ni in zip(rows, potential, strict=True)):
                found = self._dry_run_rows(state, pod, fast, table, rows, pdbs, offset, num_candidates, now)
                if found is not None:
                    return found
        for i in range(n):
            node = potential[(offset + i) % n]
            selection = fast.select_victims(node, split, cache=cache, now=now) if fast is not None else None
            if selection is None:
                selection = self.select_victims_on_node(state.clone(), pod, node.clone(), pdbs)
            victims, violations, status = selection
            if status is None and victims:
                bucket = non_violating if violations == 0 else violating
                if len(bucket) < num_candidates:
                    bucket.append(Candidate(node.name, victims, violations))
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status is None:
                status = Status.from_error(f'expected at least one victim pod on node "{node.name}"')
            if status.code == Code.ERROR:
                errors.append(status.message())
            statuses[node.name] = status
        return non_violating + violating, statuses, errors

    def _table_of(self, all_nodes: Sequence[NodeInfo]) -> NodeTable | None:
        """The snapshot's NodeTable when the lister has one over ``all_nodes`` (its node list)."""
        table = getattr(self.handle.snapshot_lister, "node_table", None)
        if not isinstance(table, NodeTable) or table.size != len(all_nodes):
            return None
        if table.size and (table.node_infos[0] is not all_nodes[0] or table.node_infos[-1] is not all_nodes[-1]):
            return None
        return table

    def _dry_run_rows(
        self,
        state: CycleState,
        pod: PodInfo,
        fast: ResourceOnly,
        table: NodeTable,
        potential: list[int],
        pdbs: Sequence[Mapping[str, Any]],
        offset: int,
        num_candidates: int,
        now: float,
        *,
        statuses_needed: bool = True,
    ) -> tuple[list[Candidate], NodeToStatus, list[str]] | None:
        """:meth:`dry_run_preemption` over the table rows ``potential`` from ``offset``
        (:func:`.preemption_screen.dry_run_rows`); None when the screen cannot run."""
        split = self._splitter(pdbs, now)
        victims, priority, checks = self._victims, pod.priority, fast.checks

        def kept(rows: IntArray) -> BoolArray | None:
            found = victims.kept_rows(table, rows, priority, checks)
            return found & fast.without_nominated(table, rows) if found is not None else None

        found = dry_run_rows(
            fast,
            self._lower.columns(table, pod.priority),
            table,
            potential[offset:] + potential[:offset],
            num_candidates=num_candidates,
            select=lambda node: fast.select_victims(node, split, cache=self._victims, now=now, screened=True),
            generic=lambda node: self.select_victims_on_node(state.clone(), pod, node.clone(), pdbs),
            no_victims=Status.unresolvable(NO_VICTIMS),
            statuses_needed=statuses_needed,
            kept=kept,
            kept_selection=victims.row_selection,
            memo=self._screen_memo,
        )
        if found is None:
            return None
        found_candidates, statuses, errors = found
        return (
            [Candidate(name, victims, violations) for name, victims, violations in found_candidates],
            statuses,
            errors,
        )

    def _splitter(self, pdbs: Sequence[Mapping[str, Any]], now: float) -> Split:
        """The fast path's ordering of potential victims: most important first, then (PDB-violating, others)."""

        def importance(p: PodInfo) -> tuple[int, float]:
            return _importance(p, now)

        def split(potential: list[PodInfo]) -> tuple[list[PodInfo], list[PodInfo], Callable[[PodInfo], object]]:
            potential.sort(key=importance)
            violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
            return violating, non_violating, importance

        return split

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: Sequence[Mapping[str, Any]]
    ) -> tuple[list[PodInfo], int, Status | None]:
        """The fewest (most important kept) lower-priority pods to remove from ``node`` (a clone, changed in
        place) for ``pod`` to fit; upstream ``SelectVictimsOnNode``."""
        fwk = self.framework

        def remove(victim: PodInfo) -> Status | None:
            node.remove_pod(victim)
            return fwk.run_pre_filter_extension_remove_pod(state, pod, victim, node)

        def add(victim: PodInfo) -> Status | None:
            node.add_pod(victim)
            return fwk.run_pre_filter_extension_add_pod(state, pod, victim, node)

        potential = [p for p in node.pods if p.priority < pod.priority]
        for victim in potential:
            status = remove(victim)
            if status is not None:
                return [], 0, status
        if not potential:
            return [], 0, Status.unresolvable(NO_VICTIMS)
        nominated = fwk.nominated_pods_for_node(node.name)
        status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node, nominated)
        if status is not None:
            return [], 0, status
        now = self.handle.clock.now()
        potential.sort(key=lambda p: _importance(p, now))
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0
        for group, counts in ((violating, True), (non_violating, False)):
            for victim in group:
                status = add(victim)
                if status is not None:
                    return [], 0, status
                if fwk.run_filter_plugins_with_nominated_pods(state, pod, node, nominated) is None:
                    continue  # reprieved
                status = remove(victim)
                if status is not None:
                    return [], 0, status
                victims.append(victim)
                num_violating += 1 if counts else 0
        if violating and non_violating:
            victims.sort(key=lambda p: _importance(p, now))
        return victims, num_violating, None

    # --- execution -----------------------------------------------------------------------------------------

    def prepare_candidate(self, candidate: Candidate, pod: PodInfo) -> None:
        """Start the API work of preempting ``candidate`` for ``pod`` (upstream ``prepareCandidateAsync``)."""
        if self.handle.client is None:
            return  # offline evaluation (explain)
        victims = [v for v in candidate.victims if not v.is_terminating]
        if not victims:
            return
        self._preempting.add(pod.uid)
        task = asyncio.ensure_future(self._execute(candidate.name, victims, pod))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _execute(self, node_name: str, victims: list[PodInfo], pod: PodInfo) -> None:
        failed = False
        try:
            lower = [p for p in self.framework.nominated_pods_for_node(node_name) if p.priority < pod.priority]
            for other in lower:
                try:
                    await self._clear_nomination(other)
                except ClientError as exc:
                    log.warning("cannot clear the nominatedNodeName of %s: %s", other.key, exc)
            for i, victim in enumerate(victims):
                if i == len(victims) - 1:
                    self._last_victim[pod.uid] = (victim.namespace, victim.name)
                try:
                    await self.preempt_pod(node_name, pod, victim)
                except ClientError as exc:
                    log.error("preempting %s for %s failed: %s", victim.key, pod.key, exc)
                    failed = True
                    break
        finally:
            self._preempting.discard(pod.uid)
            self._last_victim.pop(pod.uid, None)
        if failed:  # the pod may be stuck in the unschedulable pool: retry it now, as upstream
            self.handle.activate([pod])

    async def _clear_nomination(self, pod: PodInfo) -> None:
        if not pod.status.get("nominatedNodeName"):
            return
        client = self.handle.client
        assert client is not None
        await client.patch(
            client.resource("pods"),
            pod.name,
            {"status": {"nominatedNodeName": None}},
            patch_type=PatchType.MERGE,
            namespace=pod.namespace,
            subresource="status",
        )

    async def preempt_pod(self, node_name: str, preemptor: PodInfo, victim: PodInfo) -> None:
        """Reject a victim waiting at Permit, or mark it DisruptionTarget and delete it gracefully; then the
        ``Preempted`` event (upstream ``Executor.PreemptPod``). A victim already gone is not an error."""
        client = self.handle.client
        assert client is not None
        waiting = self.framework.get_waiting_pod(victim.uid)
        if waiting is not None:
            waiting.reject(NAME, "preempted")
        else:
            pods = client.resource("pods")
            condition = with_observed_generation(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "PreemptionByScheduler",
                    "message": f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod",
                    "lastTransitionTime": format_time(self.handle.clock.now()),
                },
                victim.pod,
            )
            try:
                if not _has_condition(victim, condition):
                    await client.patch(
                        pods,
                        victim.name,
                        {"status": {"conditions": [condition]}},
                        patch_type=PatchType.STRATEGIC,
                        namespace=victim.namespace,
                        subresource="status",
                    )
                await client.delete(pods, victim.name, namespace=victim.namespace)
            except NotFoundError:
                return
        recorder = self.handle.event_recorder
        if recorder is not None:
            obj = {"apiVersion": "v1", "kind": "Pod", "metadata": victim.pod.get("metadata") or {}}
            by = {"apiVersion": "v1", "kind": "Pod", "metadata": preemptor.pod.get("metadata") or {}}
            message = f"Preempted by pod {preemptor.uid} on node {node_name}"
            await recorder.event(obj, "Normal", "Preempted", message, action="Preempting", related=by)

    def busy(self) -> bool:
        return bool(self._tasks)

    async def wait(self) -> None:
        """Wait for preemptions under way (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def _rows_for_status_code(names: Sequence[str], m: NodeToStatus, code: Code) -> list[int]:
    """The rows (of a table with these node ``names``) whose status in ``m`` has ``code``, absent nodes included
    when the absent status has it: ``NodeToStatus.nodes_for_status_code`` as rows. The node search shares one
    Status object among the nodes it rejects for the same reasons, so the rows are matched by the identity of the
    few distinct statuses (a compare over an array of ids each) rather than by reading every node's code."""
    found = list(map(m.get, names))
    distinct = dict(zip(map(id, found), found, strict=True))
    absent = m.absent_nodes_status.code == code
    wanted = [i for i, s in distinct.items() if (s.code == code if s is not None else absent)]
    if len(wanted) == len(distinct):
        return list(range(len(found)))
    if not wanted:
        return []
    if len(distinct) > _DISTINCT_BY_ID:
        return [r for r, s in enumerate(found) if (s.code == code if s is not None else absent)]
    ids = np.fromiter(map(id, found), np.uint64, len(found))
    mask = ids == np.uint64(wanted[0])
    for i in wanted[1:]:
        mask |= ids == np.uint64(i)
    rows: list[int] = np.flatnonzero(mask).tolist()
    return rows


def _has_condition(pod: PodInfo, condition: Mapping[str, Any]) -> bool:
    for c in pod.status.get("conditions") or ():
        if c.get("type") == condition["type"]:
            return all(c.get(k) == condition[k] for k in ("status", "reason", "message"))
    return False


def new(args: Mapping[str, Any], handle: Handle) -> DefaultPreemption:
    return DefaultPreemption(args, handle)
