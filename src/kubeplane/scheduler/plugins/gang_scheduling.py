"""GangScheduling: all-or-nothing scheduling of the pods of a PodGroup with a ``gang`` policy (upstream
``pkg/scheduler/framework/plugins/gangscheduling``, v1.37, scheduling.k8s.io/v1beta1 PodGroups).

* PreEnqueue holds a pod of a gang out of the active queue until its PodGroup exists and at least
  ``minCount`` pods of the group exist (unscheduled, assumed or bound).
* Permit: while fewer than ``minCount`` pods of the group are scheduled (assumed or bound, this one included)
  the pod waits (``Wait``, :data:`PERMIT_TIMEOUT`), and the group's unscheduled pods are activated so they get
  their turn at once; the pod that completes the quorum allows every waiting pod of the group. A wait that
  times out is rejected by the framework (``rejected due to timeout after waiting 5m0s at plugin
  GangScheduling``) and the pod is requeued, its node freed.
* EventsToRegister as upstream: an unscheduled or assigned pod added (may complete the gang; the scheduling
  group is immutable, so pod updates never matter), a PodGroup added, a PodGroup updated with a smaller
  ``minCount``.

Pods without ``spec.schedulingGroup`` and groups with the ``basic`` policy pass every point untouched.
Upstream's PlacementFeasible (the pod-group scheduling cycle of the TopologyAwareWorkloadScheduling gate, alpha)
is not implemented: kubeplane schedules a gang pod by pod, as upstream does with that gate off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kubeplane.api.views import meta_of, spec_of
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.pod_groups import PodGroupManager, pod_group_name
from kubeplane.scheduler.framework.types import PodInfo

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle

__all__ = ["NAME", "PERMIT_TIMEOUT", "POD_GROUP", "GangScheduling", "gang_min_count", "new"]

NAME = "GangScheduling"
PERMIT_TIMEOUT = 5 * 60.0
"""Upstream ``permitTimeoutDuration``: how long gang pods wait at Permit for the quorum."""
POD_GROUP = "PodGroup"
"""The cluster-event resource of PodGroup objects (upstream ``fwk.PodGroup``)."""

WAITING_FOR_MIN_COUNT = "waiting for minCount pods from a gang to appear in scheduling queue"
WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"


def gang_min_count(pod_group: Mapping[str, Any] | None) -> int | None:
    """The gang policy's ``minCount``, or None for a missing group or a non-gang (basic) policy."""
    if pod_group is None:
        return None
    gang = (spec_of(pod_group).get("schedulingPolicy") or {}).get("gang")
    if not isinstance(gang, Mapping):
        return None
    count = gang.get("minCount")
    return int(count) if isinstance(count, int) else 0


def _obj(o: Any) -> Mapping[str, Any]:
    return o.pod if isinstance(o, PodInfo) else o


class GangScheduling:
    """PreEnqueue, Permit and EnqueueExtensions."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    @property
    def groups(self) -> PodGroupManager:
        manager = self.handle.pod_groups
        return manager if manager is not None else PodGroupManager()

    # --- EnqueueExtensions -----------------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return (
            ClusterEventWithHint(ClusterEvent("UnscheduledPod", ActionType.ADD), self._after_pod_added),
            ClusterEventWithHint(ClusterEvent("AssignedPod", ActionType.ADD), self._after_pod_added),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.ADD), self._after_pod_group_added),
            ClusterEventWithHint(ClusterEvent(POD_GROUP, ActionType.update()), self._after_pod_group_updated),
        )

    def _after_pod_added(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodAdded``: queue when the added pod is of the same scheduling group."""
        if new is None:
            return QueueingHint.QUEUE
        added = _obj(new)
        group = pod_group_name(pod.pod)
        same = group is not None and group == pod_group_name(added) and meta_of(added).get("namespace") == pod.namespace
        return QueueingHint.QUEUE if same else QueueingHint.QUEUE_SKIP

    def _matches(self, pod: PodInfo, pod_group: Mapping[str, Any]) -> bool:
        meta = meta_of(pod_group)
        return pod_group_name(pod.pod) == meta.get("name") and pod.namespace == meta.get("namespace")

    def _after_pod_group_added(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodGroupAdded``: queue the pods of the group that appeared."""
        if new is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if self._matches(pod, new) else QueueingHint.QUEUE_SKIP

    def _after_pod_group_updated(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        """Upstream ``isSchedulableAfterPodGroupUpdated``: queue only when the gang's minCount decreased (a
        non-gang policy on either side is unexpected and queues)."""
        if new is None or old is None:
            return QueueingHint.QUEUE
        if not self._matches(pod, new):
            return QueueingHint.QUEUE_SKIP
        old_count, new_count = gang_min_count(old), gang_min_count(new)
        if old_count is None or new_count is None:
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if new_count < old_count else QueueingHint.QUEUE_SKIP

    # --- PreEnqueue ------------------------------------------------------------------------------------------

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        group = pod_group_name(pod.pod)
        if group is None:
            return None
        pod_group = self.groups.pod_group(pod.namespace, group)
        if pod_group is None:
            # upstream's message, "pods's" included
            return Status.unresolvable(f'waiting for pods\'s pod group "{group}" to appear in scheduling queue')
        min_count = gang_min_count(pod_group)
        if min_count is None:
            return None
        if self.groups.state(pod.namespace, group).all_pods_count() < min_count:
            return Status.unresolvable(WAITING_FOR_MIN_COUNT)
        return None

    # --- Permit ----------------------------------------------------------------------------------------------

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        group = pod_group_name(pod.pod)
        if group is None:
            return None, 0.0
        pod_group = self.groups.pod_group(pod.namespace, group)
        if pod_group is None:
            message = f"failed to get podGroup {pod.namespace}/{group}: podgroup.scheduling.k8s.io {group!r} not found"
            return Status(Code.ERROR, (message.replace("'", '"'),)), 0.0
        min_count = gang_min_count(pod_group)
        if min_count is None:
            return None, 0.0
        group_state = self.groups.state(pod.namespace, group)
        if group_state.scheduled_pods_count() < min_count:
            # Activate the group's unscheduled pods in case they were waiting for this one to be scheduled.
            self.handle.activate(group_state.unscheduled_pods())
            return Status(Code.WAIT, (WAITING_AT_PERMIT,)), PERMIT_TIMEOUT
        framework = self.handle.framework
        if framework is not None:
            for uid in group_state.assumed_pods():
                waiting = framework.get_waiting_pod(uid)
                if waiting is not None:
                    waiting.allow(NAME)
        return None, 0.0


def new(args: Mapping[str, Any], handle: Handle) -> GangScheduling:
    """The plugin factory; GangScheduling has no args."""
    return GangScheduling(handle)
