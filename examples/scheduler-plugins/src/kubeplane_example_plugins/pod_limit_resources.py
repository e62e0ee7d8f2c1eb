"""CheckPodLimitResources: keep the sum of pod *limits* on a node under a ratio of its allocatable.

For every resource named in ``limitRatio``, Filter adds up the limits (upstream ``PodLimits`` semantics, via
:func:`kubeplane.api.pods.pod_limits`: containers summed, init containers and sidecars by the KEP-753 formula,
pod-level limits, overhead) of the node's non-terminal pods and of the pod being scheduled, and rejects the node
with ``Unschedulable`` when that sum exceeds ``ratio × allocatable`` of the resource, one reason per resource:
``node(s) would exceed 0.7 of allocatable cpu in pod limits``. A pod that sets no limit for a resource adds 0
to it (it is unbounded, but this plugin only caps what pods declare). Amounts are compared in natural units
(cpu in millicores, everything else in whole units); a node that does not list the resource has allocatable 0.

Args: ``limitRatio``, resource name -> ratio, every ratio a number > 0 (above 1 allows overcommitting limits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kubeplane.api.pods import pod_limits
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
from kubeplane_example_plugins.pod_count_limit import active_pods

__all__ = ["NAME", "CheckPodLimitResources", "CheckPodLimitResourcesArgs", "reason"]

NAME: Final = "CheckPodLimitResources"


def reason(resource: str, ratio: float) -> str:
    """The Filter reason for ``resource`` over ``ratio`` of allocatable."""
    return f"node(s) would exceed {ratio:g} of allocatable {resource} in pod limits"


@dataclass(frozen=True, slots=True)
class CheckPodLimitResourcesArgs:
    """``limitRatio``: resource name -> the share of allocatable the node's pod limits may add up to."""

    limit_ratio: Mapping[str, float]

    def __post_init__(self) -> None:
        if not self.limit_ratio:
            raise InvalidArgs("limitRatio", dict(self.limit_ratio), "must name at least one resource")
        for name, ratio in self.limit_ratio.items():
            if not name:
                raise InvalidArgs("limitRatio", dict(self.limit_ratio), "resource names must not be empty")
            if not ratio > 0:
                raise InvalidArgs(f"limitRatio[{name}]", ratio, "must be greater than 0")


class CheckPodLimitResources:
    """Filter and EnqueueExtensions (see the module docstring)."""

    NAME = NAME
    Args = CheckPodLimitResourcesArgs

    def __init__(self, args: CheckPodLimitResourcesArgs, handle: Handle) -> None:
        self.ratios = dict(sorted(args.limit_ratio.items()))  # reasons in resource-name order

    def name(self) -> str:
        return NAME

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # Room appears when a pod leaves or finishes, or a node is added or grows.
        return (
            ClusterEventWithHint(ClusterEvent("AssignedPod", ActionType.DELETE | ActionType.update())),
            ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)),
        )

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        totals = dict.fromkeys(self.ratios, 0)
        for placed in (*active_pods(node), pod):
            limits = pod_limits(placed.pod)
            for name in totals:
                totals[name] += limits.get(name, 0)
        reasons = [
            reason(name, ratio)
            for name, ratio in self.ratios.items()
            if totals[name] > ratio * node.allocatable.get(name)
        ]
        return Status.unschedulable(*reasons) if reasons else None
