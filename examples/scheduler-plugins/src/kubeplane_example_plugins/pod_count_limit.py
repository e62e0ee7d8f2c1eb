"""CheckPodCountLimit: a node that already runs ``podCountLimit`` pods takes no more.

Filter counts the node's pods that are not terminal (phase neither ``Succeeded`` nor ``Failed``; a pod without
a phase yet, e.g. just bound or assumed by this scheduler, counts) and rejects the node with
``Unschedulable`` and the reason ``node(s) already run <n> pods (podCountLimit)`` when that count reaches the
limit. ``podCountLimit: 0`` therefore rejects every node. Unschedulable, not unresolvable: preemption may free
a slot by evicting a pod.

Args (``pluginConfig[].args``): ``podCountLimit``, an integer >= 0, required.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    Status,
)
from kubeplane.scheduler.framework.plugin_args import InvalidArgs
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["NAME", "TERMINAL_PHASES", "CheckPodCountLimit", "CheckPodCountLimitArgs", "active_pods", "reason"]

NAME: Final = "CheckPodCountLimit"
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


def reason(limit: int) -> str:
    """The Filter reason for a node at ``limit`` pods."""
    return f"node(s) already run {limit} pods (podCountLimit)"


def active_pods(node: NodeInfo) -> list[PodInfo]:
    """The node's pods that still occupy it: every pod whose phase is not Succeeded or Failed."""
    return [p for p in node.pods if (p.pod.get("status") or {}).get("phase") not in TERMINAL_PHASES]


@dataclass(frozen=True, slots=True)
class CheckPodCountLimitArgs:
    """``podCountLimit``: the number of non-terminal pods from which a node is full."""

    pod_count_limit: int

    def __post_init__(self) -> None:
        if self.pod_count_limit < 0:
            raise InvalidArgs("podCountLimit", self.pod_count_limit, "must be greater than or equal to 0")


class CheckPodCountLimit:
    """Filter and EnqueueExtensions (see the module docstring)."""

    NAME = NAME
    Args = CheckPodCountLimitArgs

    def __init__(self, args: CheckPodCountLimitArgs, handle: Handle) -> None:
        self.limit = args.pod_count_limit
        self._reject = Status.unschedulable(reason(self.limit))

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # A slot frees when a pod leaves or finishes (a status update); a new node has slots of its own.
        return (
            ClusterEventWithHint(ClusterEvent("AssignedPod", ActionType.DELETE | ActionType.update())),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD)),
        )

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return self._reject if len(active_pods(node)) >= self.limit else None
