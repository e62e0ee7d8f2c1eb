"""SchedulingGates: a pod with ``spec.schedulingGates`` does not enter the active queue until every gate is
removed (upstream ``plugins/schedulinggates``).

PreEnqueue rejects a gated pod as UnschedulableAndUnresolvable with "waiting for scheduling gates: [a b]" (the
gate names formatted as Go's ``%v`` of a string slice); the queue keeps it gated. The registered event, an update
of the pod itself that removes its last gate, moves it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubeplane.api.views import spec_of
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins.helper import pod_uid_of

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle

__all__ = ["NAME", "SchedulingGates", "gates_reason", "new"]

NAME = "SchedulingGates"


def gates_reason(gates: Sequence[str]) -> str:
    """Upstream's ``fmt.Sprintf("waiting for scheduling gates: %v", gates)``."""
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


def _gates_of(pod: Mapping[str, Any]) -> list[str]:
    return [g.get("name") or "" for g in spec_of(pod).get("schedulingGates") or ()]


class SchedulingGates:
    """PreEnqueue and EnqueueExtensions."""

    def name(self) -> str:
        return NAME

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        gates = _gates_of(pod.pod)
        if not gates:
            return None
        return Status.unresolvable(gates_reason(gates))

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        event = ClusterEvent("Pod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
        return (ClusterEventWithHint(event, self._is_schedulable_after_gates_removed),)

    def _is_schedulable_after_gates_removed(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Queue when the gated pod itself has no gates left."""
        if new is None:
            return QueueingHint.QUEUE
        if pod_uid_of(new) != pod.uid:
            return QueueingHint.QUEUE_SKIP
        obj = new.pod if isinstance(new, PodInfo) else new
        return QueueingHint.QUEUE_SKIP if _gates_of(obj) else QueueingHint.QUEUE


def new(args: Mapping[str, Any], handle: Handle) -> SchedulingGates:
    """The plugin factory; SchedulingGates has no args."""
    return SchedulingGates()
