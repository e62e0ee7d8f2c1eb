"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) take only pods that tolerate the
``node.kubernetes.io/unschedulable:NoSchedule`` taint (upstream ``plugins/nodeunschedulable``).

A rejection is UnschedulableAndUnresolvable ("node(s) were unschedulable"): preempting pods cannot uncordon a
node. The toleration check uses the pod's tolerations compiled once per pod version; the vectorised Filter is
``~NodeTable.unschedulable`` (or all True for a tolerating pod).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from kubeplane.api.taints import EFFECT_NO_SCHEDULE, Taint
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.plugins.helper import as_pod_info, node_unschedulable_of, pod_uid_of

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = [
    "ERR_REASON_UNKNOWN_CONDITION",
    "ERR_REASON_UNSCHEDULABLE",
    "NAME",
    "UNSCHEDULABLE_TAINT",
    "NodeUnschedulable",
    "new",
    "tolerates_unschedulable",
]

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
"""Upstream ``ErrReasonUnschedulable``."""
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
"""Upstream ``ErrReasonUnknownCondition`` (kept for callers; v1.37's Filter no longer returns it)."""
UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", EFFECT_NO_SCHEDULE)
"""``v1.TaintNodeUnschedulable`` with effect NoSchedule: tolerating it tolerates ``spec.unschedulable``."""

_UNSCHEDULABLE = Status.unresolvable(ERR_REASON_UNSCHEDULABLE)


def tolerates_unschedulable(pod: PodInfo) -> bool:
    """Whether the pod tolerates the unschedulable taint, hence a cordoned node."""
    return pod.tolerations.tolerates(UNSCHEDULABLE_TAINT)


class NodeUnschedulable:
    """Filter (with its vectorised form) and EnqueueExtensions."""

    def name(self) -> str:
        return NAME

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
        """Queue for a schedulable node added, or a node uncordoned."""
        if new is None:
            return QueueingHint.QUEUE
        if node_unschedulable_of(new):
            return QueueingHint.QUEUE_SKIP
        if old is None or node_unschedulable_of(old):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP

    def _is_schedulable_after_toleration_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue when the rejected pod itself now tolerates the unschedulable taint."""
        if new is None:
            return QueueingHint.QUEUE
        if pod_uid_of(new) != pod.uid:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE if tolerates_unschedulable(as_pod_info(new)) else QueueingHint.QUEUE_SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not node.unschedulable or tolerates_unschedulable(pod):
            return None
        return _UNSCHEDULABLE

    def passes_every_row(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return table.unschedulable_count == 0 or tolerates_unschedulable(pod)

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        if tolerates_unschedulable(pod):
            return np.ones(len(rows), np.bool_)
        mask: BoolArray = ~table.unschedulable[rows]
        return mask


def new(args: Mapping[str, Any], handle: Handle) -> NodeUnschedulable:
    """The plugin factory; NodeUnschedulable has no args."""
    return NodeUnschedulable()
