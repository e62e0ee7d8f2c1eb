"""NodeName: a pod with ``spec.nodeName`` set fits only the node of that name (upstream ``plugins/nodename``).

PreFilter narrows the candidates to that one node (a PreFilterResult); Filter rejects every other node as
UnschedulableAndUnresolvable, so preemption never tries them. A pod without ``spec.nodeName`` fits every node.
The vectorised Filter is one comparison of row indexes with the named node's row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    PreFilterExtensions,
    PreFilterResult,
    Status,
)

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["ERR_REASON", "NAME", "NodeName", "fits", "new"]

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"
"""Upstream ``nodename.ErrReason``."""

_MISMATCH = Status.unresolvable(ERR_REASON)


def fits(pod: PodInfo, node_info: NodeInfo) -> bool:
    """True when the pod names no node or names this one (upstream ``Fits``)."""
    return not pod.node_name or pod.node_name == node_info.name


class NodeName:
    """PreFilter, Filter (with its vectorised form) and EnqueueExtensions."""

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # No hint: an added node is retried with backoff, as upstream.
        return (ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),)

    def plans_pre_filter(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): the pod's spec.nodeName alone decides."""
        return True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.node_name:
            return None, None
        return PreFilterResult(frozenset((pod.node_name,))), None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if fits(pod, node) else _MISMATCH

    def passes_every_row(self, state: CycleState, pod: PodInfo, table: NodeTable) -> bool:
        return not pod.node_name

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        wanted = pod.node_name
        if not wanted:
            return np.ones(len(rows), np.bool_)
        infos = table.node_infos
        row = table.index.get(wanted)
        if row is not None and infos[row].name == wanted:
            mask: BoolArray = rows == row
            return mask
        # The name index is stale (a NodeInfo renamed since the table was built): compare names directly.
        return np.fromiter((infos[i].name == wanted for i in rows.tolist()), np.bool_, len(rows))


def new(args: Mapping[str, Any], handle: Handle) -> NodeName:
    """The plugin factory; NodeName has no args."""
    return NodeName()
