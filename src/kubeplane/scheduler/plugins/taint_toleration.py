"""TaintToleration: a pod lands only on nodes whose NoSchedule/NoExecute taints it tolerates, and prefers nodes
with fewer untolerated PreferNoSchedule taints (upstream ``plugins/tainttoleration``, v1.37).

* Filter: the first NoSchedule or NoExecute taint the pod does not tolerate rejects the node as
  UnschedulableAndUnresolvable with upstream's fixed reason (since v1.35 the reason no longer names the taint;
  upstream logs it instead).
* PreScore keeps the tolerations that can tolerate a PreferNoSchedule taint (effect PreferNoSchedule or empty);
  Score counts the node's PreferNoSchedule taints they do not tolerate; NormalizeScore reverses
  (``100 - 100*count/max``, 100 everywhere when no node has such a taint).
* Comparison operators (``Gt``/``Lt``, feature gate TaintTolerationComparisonOperators, alpha and off) tolerate
  nothing, as upstream with the gate off.

The pod's tolerations are compiled once per pod version (``PodInfo.tolerations``), so Filter and Score are a few
dict lookups per taint. ``filter_vector``/``score_vector`` pass or zero every untainted row from
``NodeTable.has_taints`` and run the reference on the tainted rows only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.api.taints import EFFECT_PREFER_NO_SCHEDULE, CompiledTolerations, Taint
from kubeplane.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeScore,
    QueueingHint,
    ScoreExtensions,
    Status,
)
from kubeplane.scheduler.plugins.helper import (
    default_normalize_score,
    default_normalize_vector,
    do_not_schedule_taint,
    node_taints_of,
    pod_uid_of,
)

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = [
    "ERR_REASON_NOT_MATCH",
    "NAME",
    "PRE_SCORE_STATE_KEY",
    "TaintToleration",
    "count_intolerable_taints_prefer_no_schedule",
    "find_untolerated_do_not_schedule_taint",
    "new",
]

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_NOT_MATCH = "node(s) had untolerated taint(s)"
"""Upstream's Filter reason (``taint_toleration.go``: ``fwk.NewStatus(UnschedulableAndUnresolvable,
"node(s) had untolerated taint(s)")``)."""

_UNTOLERATED = Status.unresolvable(ERR_REASON_NOT_MATCH)


def find_untolerated_do_not_schedule_taint(taints: Sequence[Taint], tolerations: CompiledTolerations) -> Taint | None:
    """The first NoSchedule/NoExecute taint not tolerated, or None (``FindMatchingUntoleratedTaint``)."""
    if not taints:
        return None
    return tolerations.find_untolerated(taints, include=do_not_schedule_taint)


def count_intolerable_taints_prefer_no_schedule(taints: Sequence[Taint], tolerations: CompiledTolerations) -> int:
    """How many PreferNoSchedule taints are not tolerated (upstream ``countIntolerableTaintsPreferNoSchedule``).

    Tolerations with another non-empty effect never match a PreferNoSchedule taint, so counting against all of a
    pod's tolerations equals upstream's count against the PreferNoSchedule-or-empty subset.
    """
    if not taints:
        return 0
    return tolerations.count_untolerated(taints, effect=EFFECT_PREFER_NO_SCHEDULE)


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    tolerations_prefer_no_schedule: CompiledTolerations

    def clone(self) -> _PreScoreState:
        return self  # read-only, as upstream


class TaintToleration:
    """Filter, PreScore, Score, NormalizeScore and EnqueueExtensions, plus their vectorised fast paths."""

    def __init__(self, handle: Handle | None = None) -> None:
        self._handle = handle

    def name(self) -> str:
        return NAME

    # --- EnqueueExtensions (queueing hints on, as upstream's default) --------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_TAINT), self._is_schedulable_after_node
            ),
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.UPDATE_POD_TOLERATIONS), self._is_schedulable_after_toleration_change
            ),
        )

    def _is_schedulable_after_node(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue only when the node went from untolerated (or absent) to tolerated."""
        if new is None:
            return QueueingHint.QUEUE
        tolerations = pod.tolerations
        was_untolerated = True
        if old is not None:
            was_untolerated = find_untolerated_do_not_schedule_taint(node_taints_of(old), tolerations) is not None
        is_untolerated = find_untolerated_do_not_schedule_taint(node_taints_of(new), tolerations) is not None
        if was_untolerated and not is_untolerated:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _is_schedulable_after_toleration_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """A toleration added to the rejected pod itself may make it fit; other pods' changes cannot."""
        if new is None or pod_uid_of(new) == pod.uid:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    # --- Filter ---------------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if find_untolerated_do_not_schedule_taint(node.taints, pod.tolerations) is None:
            return None
        return _UNTOLERATED

    def passes_every_row(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return table.tainted_count == 0  # an untainted node has no taint to tolerate

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        mask: BoolArray = ~table.has_taints[rows]
        tainted = np.flatnonzero(~mask)
        if tainted.size:
            tolerations = pod.tolerations
            infos = table.node_infos
            row_ids = rows[tainted].tolist()
            for pos, row in zip(tainted.tolist(), row_ids, strict=True):
                mask[pos] = find_untolerated_do_not_schedule_taint(infos[row].taints, tolerations) is None
        return mask

    # --- PreScore / Score / NormalizeScore ------------------------------------------------------------------

    def plans_pre_score(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): the pod's tolerations alone decide."""
        return True

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        # Upstream keeps the tolerations with effect PreferNoSchedule or empty; the others never match a
        # PreferNoSchedule taint, so the pod's compiled tolerations (built once per pod version) count the same.
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(pod.tolerations))
        return None

    def _tolerations(self, state: CycleState) -> CompiledTolerations | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        return s.tolerations_prefer_no_schedule if isinstance(s, _PreScoreState) else None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        tolerations = self._tolerations(state)
        if tolerations is None:
            return 0, Status.from_error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return count_intolerable_taints_prefer_no_schedule(node.taints, tolerations), None

    def score_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> IntArray:
        scores: IntArray = np.zeros(len(rows), np.int64)
        tolerations = self._tolerations(state)
        if tolerations is None or table.tainted_count == 0:  # no taint anywhere: nothing to count
            return scores
        tainted = np.flatnonzero(table.has_taints[rows])
        if tainted.size:
            infos = table.node_infos
            for pos, row in zip(tainted.tolist(), rows[tainted].tolist(), strict=True):
                scores[pos] = count_intolerable_taints_prefer_no_schedule(infos[row].taints, tolerations)
        return scores

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    def normalize_vector(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray:
        """:meth:`normalize_score` over the raw scores of the vectorised path."""
        return default_normalize_vector(MAX_NODE_SCORE, True, scores)

    def score_extensions(self) -> ScoreExtensions | None:
        return self


def new(args: Mapping[str, Any], handle: Handle) -> TaintToleration:
    """The plugin factory; TaintToleration has no args."""
    return TaintToleration(handle)
