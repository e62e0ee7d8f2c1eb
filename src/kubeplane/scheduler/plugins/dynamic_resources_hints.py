"""DynamicResources' EventsToRegister and queueing hints (upstream ``EventsToRegister``,
``isSchedulableAfterClaimChange``, ``isSchedulableAfterPodChange``).

Node Add/UpdateNodeLabel/UpdateNodeAllocatable (topology of slices), ResourceClaim Add/Update (hinted: a
deallocation of any claim queues; a change of one of the pod's own claims queues when created or its status
changed), Pod UpdatePodGeneratedResourceClaim (hinted: the pod's own update, once all its claims exist),
DeviceClass Add/Update and ResourceSlice Add/Update (always queue).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kubeplane.scheduler.framework.interface import ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from kubeplane.scheduler.plugins.dynamic_resources_claims import ClaimError

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.types import PodInfo
    from kubeplane.scheduler.plugins.dynamic_resources import DynamicResources

__all__ = ["events_to_register"]


def _uid(obj: Any) -> Any:
    return ((obj or {}).get("metadata") or {}).get("uid")


def events_to_register(pl: DynamicResources) -> Sequence[ClusterEventWithHint]:
    def after_claim(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        try:
            claims = pl.pod_claims(pod.pod)
        except ClaimError:
            return QueueingHint.QUEUE_SKIP
        if (
            old is not None
            and (old.get("status") or {}).get("allocation")
            and not (new.get("status") or {}).get("allocation")
        ):
            return QueueingHint.QUEUE
        if not any(_uid(c) == _uid(new) for c in claims):
            return QueueingHint.QUEUE_SKIP
        if old is None:
            return QueueingHint.QUEUE
        if (old.get("status") or {}) == (new.get("status") or {}):
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    def after_pod(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if _uid(new) != _uid(pod.pod):
            return QueueingHint.QUEUE_SKIP
        try:
            pl.pod_claims(new)
        except ClaimError:
            return QueueingHint.QUEUE_SKIP
        return QueueingHint.QUEUE

    node = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
    add_update = ActionType.ADD | ActionType.update()
    return (
        ClusterEventWithHint(ClusterEvent("Node", node)),
        ClusterEventWithHint(ClusterEvent("ResourceClaim", add_update), after_claim),
        ClusterEventWithHint(ClusterEvent("Pod", ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM), after_pod),
        ClusterEventWithHint(ClusterEvent("DeviceClass", add_update)),
        ClusterEventWithHint(ClusterEvent("ResourceSlice", add_update)),
    )
