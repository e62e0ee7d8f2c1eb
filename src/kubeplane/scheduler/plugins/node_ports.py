"""NodePorts: a pod's host ports must be free on the node (upstream ``plugins/nodeports``, v1.37).

The wanted ports are the pod's containers' and restartable (sidecar, ``restartPolicy: Always``) init
containers' ports with ``hostPort > 0``, with hostIP defaulting to 0.0.0.0 and protocol to TCP (upstream
``util.GetHostPorts``; PodInfo computes them once per pod version). PreFilter returns Skip for a pod without
host ports. Filter rejects a node where one wanted port conflicts with a used one (``HostPortInfo``: the same
protocol and port on the same IP, or on 0.0.0.0 on either side) as Unschedulable: preempting the pod that
holds the port can free it. The vectorised Filter passes every row without used ports (``NodeTable.has_ports``)
and runs the reference on the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    PreFilterExtensions,
    PreFilterResult,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.types import HostPort, HostPortInfo
from kubeplane.scheduler.plugins.helper import as_pod_info

if TYPE_CHECKING:
    from kubeplane.scheduler.backend.node_table import BoolArray, IntArray, NodeTable
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["ERR_REASON", "NAME", "PRE_FILTER_STATE_KEY", "NodePorts", "fits", "fits_ports", "new"]

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
"""Upstream ``nodeports.ErrReason``."""

_NO_FREE_PORTS = Status.unschedulable(ERR_REASON)


def fits_ports(want: Sequence[HostPort], used: HostPortInfo) -> bool:
    """True when no wanted port conflicts with a used one (upstream ``fitsPorts``)."""
    for port in want:  # noqa: SIM110 - any() would allocate a generator per node
        if used.check_conflict(port):
            return False
    return True


def fits(pod: PodInfo, node_info: NodeInfo) -> bool:
    """Whether the pod's host ports are free on the node (upstream ``Fits``)."""
    return fits_ports(pod.host_ports, node_info.used_ports)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    ports: tuple[HostPort, ...]

    def clone(self) -> _PreFilterState:
        return self  # not affected by adding or removing other pods, as upstream


class NodePorts:
    """PreFilter, Filter (with its vectorised form) and EnqueueExtensions."""

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Container ports are immutable, so pod updates cannot free a port; a new node is retried with backoff.
        return (
            ClusterEventWithHint(
                ClusterEvent("AssignedPod", ActionType.DELETE), self._is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),
        )

    def _is_schedulable_after_pod_deleted(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue only when the deleted pod was placed (or nominated) and held one of the pod's host ports."""
        if old is None:
            return QueueingHint.QUEUE
        deleted = as_pod_info(old)
        nominated = deleted.status.get("nominatedNodeName") or ""
        if not deleted.node_name and not nominated:
            return QueueingHint.QUEUE_SKIP
        if not deleted.host_ports:
            return QueueingHint.QUEUE_SKIP
        in_use = HostPortInfo()
        for port in deleted.host_ports:
            in_use.add(port)
        return QueueingHint.QUEUE_SKIP if fits_ports(pod.host_ports, in_use) else QueueingHint.QUEUE

    def plans_pre_filter(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): the pod's host ports alone decide."""
        return True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.host_ports:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(pod.host_ports))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def _wanted(self, state: CycleState) -> tuple[HostPort, ...] | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        return s.ports if isinstance(s, _PreFilterState) else None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        want = self._wanted(state)
        if want is None:
            return Status.from_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        return None if fits_ports(want, node.used_ports) else _NO_FREE_PORTS

    def filter_vector(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: IntArray) -> BoolArray:
        want = self._wanted(state)
        if want is None:
            return np.zeros(len(rows), np.bool_)
        mask: BoolArray = ~table.has_ports[rows]
        busy = np.flatnonzero(~mask)
        if busy.size:
            infos = table.node_infos
            for pos, row in zip(busy.tolist(), rows[busy].tolist(), strict=True):
                mask[pos] = fits_ports(want, infos[row].used_ports)
        return mask


def new(args: Mapping[str, Any], handle: Handle) -> NodePorts:
    """The plugin factory; NodePorts has no args."""
    return NodePorts()
