"""NodeDeclaredFeatures: a pod that needs a node feature (restart-all-containers rules, user namespaces with host
network, bind mount options, ...) only fits nodes that declare it in ``status.declaredFeatures`` (upstream
``plugins/nodedeclaredfeatures``, v1.37; the feature registry is :mod:`kubeplane.api.nodedeclaredfeatures`).

* PreFilter infers the pod's requirements from its spec (``InferForPodScheduling`` at the scheduler's version);
  none -> Skip (Filter is not called), else the requirement bitmask goes to the cycle state.
* Filter: the requirements must be a subset of the node's declared features, else UnschedulableAndUnresolvable
  ``node(s) didn't match Pod's required features`` (preemption cannot add a feature to a node).
* Events: Node Add | UpdateNodeDeclaredFeature (queue unless an update left the declared list unchanged) and
  updates of the pod itself (upstream's TargetPod Update; queue when its inferred requirements changed).
* A pod whose resize is deferred is skipped when InPlacePodVerticalScalingSchedulerPreemption is on (alpha, off).

With the plugin disabled (``enabled=False``: the gate off), PreFilter skips, Filter passes and no event is
registered, as upstream's zero-value plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from kubeplane.api.nodedeclaredfeatures import DEFAULT_FRAMEWORK, Framework
from kubeplane.api.views import spec_of, status_of
from kubeplane.scheduler.config.features import (
    DEFAULT_GATES,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    NODE_DECLARED_FEATURES,
    FeatureGates,
)
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
from kubeplane.scheduler.plugins.helper import pod_uid_of

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["ERR_REASON_UNSATISFIED_REQUIREMENTS", "NAME", "PRE_FILTER_STATE_KEY", "NodeDeclaredFeatures", "new"]

NAME: Final = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS: Final = "node(s) didn't match Pod's required features"
"""Upstream ``errReasonUnsatisfiedRequirements``."""
SCHEDULER_VERSION: Final = (1, 37, 0)

_UNSATISFIED = Status.unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    reqs: int

    def clone(self) -> _PreFilterState:
        return self


def _declared(node: Mapping[str, Any] | None) -> list[str]:
    if node is None:
        return []
    return [str(f) for f in status_of(node).get("declaredFeatures") or ()]


class NodeDeclaredFeatures:
    """PreFilter, Filter and EnqueueExtensions (module docstring)."""

    def __init__(
        self,
        *,
        framework: Framework = DEFAULT_FRAMEWORK,
        version: tuple[int, int, int] | None = SCHEDULER_VERSION,
        enabled: bool = True,
        skip_deferred_resize: bool = False,
    ) -> None:
        self.framework, self.version, self.enabled = framework, version, enabled
        self.skip_deferred_resize = skip_deferred_resize

    def name(self) -> str:
        return NAME

    def plans_pre_filter(self, pod: PodInfo) -> bool:
        """Per-shape plans (framework/shape_plan.py): the pod's spec and status conditions and this plugin's
        configuration decide."""
        return True

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if self.skip_deferred_resize and _resize_deferred(pod.pod):
            return None, Status.skip()
        if not self.enabled:
            return None, Status.skip()
        try:
            reqs = self.framework.infer_for_pod_scheduling(spec_of(pod.pod), self.version)
        except ValueError as exc:
            return None, Status.from_error(exc)
        if not reqs:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(reqs))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not self.enabled:
            return None
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return Status.from_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found')
        have = self.framework.try_map(_declared(node.node))
        return None if s.reqs & ~have == 0 else _UNSATISFIED

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        if not self.enabled:
            return ()
        return (
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURES),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("UnscheduledPod", ActionType.update()), self.is_schedulable_after_pod_update
            ),
        )

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterNodeChange``: skip an update that left the declared features as they were."""
        if new is None:
            return QueueingHint.QUEUE
        if old is not None and _declared(old) == _declared(new):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_update(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """``isSchedulableAfterTargetPodUpdate``: only the pod itself, and only when its requirements changed (an
        inference error queues, as upstream)."""
        if old is None or new is None:
            return QueueingHint.QUEUE
        if pod_uid_of(new) != pod.uid:
            return QueueingHint.QUEUE_SKIP
        try:
            before = self.framework.infer_for_pod_scheduling(spec_of(old), self.version)
            after = self.framework.infer_for_pod_scheduling(spec_of(new), self.version)
        except ValueError:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE_SKIP if before == after else QueueingHint.QUEUE


def _resize_deferred(pod: Mapping[str, Any]) -> bool:
    """``resource.IsPodResizeDeferred``: a PodResizePending condition with reason Deferred."""
    return any(
        isinstance(c, Mapping) and c.get("type") == "PodResizePending" and c.get("reason") == "Deferred"
        for c in status_of(pod).get("conditions") or ()
    )


def new(args: Mapping[str, Any], handle: Handle) -> NodeDeclaredFeatures:
    """The plugin factory: enabled by the NodeDeclaredFeatures gate (GA, locked on in v1.37)."""
    gates = handle.extra.get("feature_gates")
    if not isinstance(gates, FeatureGates):
        gates = DEFAULT_GATES
    return NodeDeclaredFeatures(
        enabled=gates.enabled(NODE_DECLARED_FEATURES),
        skip_deferred_resize=gates.enabled(IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION),
    )
