"""NodeResourcesBalancedAllocation: favours nodes whose resource usage becomes more balanced with the pod.

Mirrors upstream ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go`` (kube-scheduler
v1.37). Behaviour:

* PreScore computes the pod's plain requests (no non-zero defaults) for the configured resources (``resources``
  in the args, cpu and memory by default) and returns SKIP for a best-effort pod, i.e. one whose requests are
  all 0 (upstream issue 129138: scoring such pods on balance piled them onto one node).
* Score compares the balance of the node's requested fractions (capped at 1) with and without the pod:
  ``balance = int64((1 - std) * 100)`` and the score is ``50 + (50 + balance_with - balance_without) / 2``
  (Go integer arithmetic), so 75 means "no change". Scalar resources the pod does not request and resources
  the node does not have are left out; one a DeviceClass serves is counted by the node's devices
  (DRAExtendedResource, :mod:`.resource_allocation_dra`). There is no NormalizeScore.

Invariant: ``score_vector`` equals ``score`` per row (property tests pin it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubeplane.scheduler.dra.features import gate
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.resource_allocation import (
    AllocationScorePlugin,
    BalancedStrategy,
    ResourceAllocationScorer,
    parse_resource_specs,
)

__all__ = ["NAME", "PRE_SCORE_STATE_KEY", "NodeResourcesBalancedAllocation", "new"]

NAME: Final = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME


class NodeResourcesBalancedAllocation(AllocationScorePlugin):
    """PreScore and Score (and ``score_vector``)."""

    score_state_key = PRE_SCORE_STATE_KEY

    def __init__(self, scorer: ResourceAllocationScorer, handle: Handle | None = None) -> None:
        self.scorer = scorer
        self.handle = handle
        gates = handle.extra.get("feature_gates") if handle is not None else None
        self.dra_extended_resource = gate(gates if isinstance(gates, Mapping) else None, "DRAExtendedResource")

    @classmethod
    def from_args(cls, args: Mapping[str, Any] | None, handle: Handle | None = None) -> NodeResourcesBalancedAllocation:
        """From v1 ``NodeResourcesBalancedAllocationArgs``; missing resources default to cpu and memory."""
        resources = parse_resource_specs(args.get("resources") if args else None)
        return cls(ResourceAllocationScorer(NAME, resources, BalancedStrategy(), use_requested=True), handle)

    def name(self) -> str:
        return NAME

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        s = self._score_state(pod)
        if not any(s.pod_requests):
            return Status.skip()  # best-effort pod
        state.write(PRE_SCORE_STATE_KEY, s)
        return None


def new(args: Mapping[str, Any], handle: Handle) -> NodeResourcesBalancedAllocation:
    """The plugin factory: ``args`` is v1 ``NodeResourcesBalancedAllocationArgs`` (``{}`` for the defaults)."""
    return NodeResourcesBalancedAllocation.from_args(args, handle)
