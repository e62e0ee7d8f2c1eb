"""Cluster events as the scheduling queue sees them (upstream ``framework/events.go`` and ``types.go``).

* :func:`match_cluster_events` is upstream's ``MatchClusterEvents`` with one widening: a registered event covers
  an incoming one when it is the wildcard, or its resource matches (``*``, equal, or - upstream - a registered
  ``Pod`` for an incoming ``AssignedPod``/``UnscheduledPod``; kubeplane also lets an incoming ``Pod``, which does not
  say which kind of pod, match a registered ``AssignedPod``/``UnscheduledPod``) and the actions overlap. An incoming
  event with several action bits is the union of the single-action events upstream would send one by one, except
  the generic ``ActionType.update()`` ("updated, no specific change known"), which only registrations containing
  every update action match (upstream's ``incoming <= registered``: ``Node/UpdateNodeLabel`` does not cover a
  generic ``Node/Update``).
* :func:`pod_update_events` is upstream's ``PodSchedulingPropertiesChange``: the specific ``UpdatePod*`` events a
  pod update amounts to, or one generic ``Update`` event.
* :func:`is_pod_updated`, :func:`pod_uid` and :func:`affinity_term_may_match` are the queue's pod predicates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.labels import SelectorError, label_selector_as_selector
from kubeplane.api.views import meta_of, status_of
from kubeplane.scheduler.framework.interface import ActionType, ClusterEvent
from kubeplane.scheduler.framework.types import PodInfo, Resource

__all__ = [
    "ASSIGNED_POD",
    "EVENT_ASSIGNED_POD_ADD",
    "EVENT_ASSIGNED_POD_DELETE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "POD",
    "UNSCHEDULED_POD",
    "WILDCARD",
    "affinity_term_may_match",
    "event_label",
    "is_pod_updated",
    "is_wildcard",
    "match_cluster_events",
    "pod_uid",
    "pod_update_events",
]

WILDCARD: Final = "*"
POD: Final = "Pod"
ASSIGNED_POD: Final = "AssignedPod"
UNSCHEDULED_POD: Final = "UnscheduledPod"

EVENT_ASSIGNED_POD_ADD: Final = ClusterEvent(ASSIGNED_POD, ActionType.ADD)
EVENT_ASSIGNED_POD_DELETE: Final = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT: Final = ClusterEvent(WILDCARD, ActionType.all(), "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE: Final = ClusterEvent(WILDCARD, ActionType.all(), "ForceActivate")

_ALL: Final = ActionType.all()


def is_wildcard(event: ClusterEvent) -> bool:
    """``*`` resource with every action (upstream ``ClusterEventIsWildCard``)."""
    return event.resource == WILDCARD and event.action_type == _ALL


def event_label(event: ClusterEvent) -> str:
    """The event's custom label, else resource plus action names (for logs and ``pending_pods``)."""
    if event.label:
        return event.label
    return f"{event.resource}{event.action_type.name or int(event.action_type)}"


_POD_KINDS: Final = (ASSIGNED_POD, UNSCHEDULED_POD)
_UPDATE: Final = ActionType.update()


def _match_resources(registered: str, incoming: str) -> bool:
    return (
        registered in (WILDCARD, incoming)
        or (registered == POD and incoming in _POD_KINDS)
        or (incoming == POD and registered in _POD_KINDS)
    )


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """True when the ``registered`` event covers the ``incoming`` one; see the module docstring."""
    if is_wildcard(registered):
        return True
    if not _match_resources(registered.resource, incoming.resource):
        return False
    if incoming.action_type == _UPDATE:
        return registered.action_type & _UPDATE == _UPDATE
    return bool(registered.action_type & incoming.action_type)


def _scaled_down(old: Resource, new: Resource) -> bool:
    if new.milli_cpu < old.milli_cpu or new.memory < old.memory or new.ephemeral_storage < old.ephemeral_storage:
        return True
    return any(new.scalar.get(name, 0) < amount for name, amount in old.scalar.items())


def pod_update_events(old: PodInfo, new: PodInfo) -> list[ClusterEvent]:
    """The events an update of a pod amounts to, on ``AssignedPod`` or ``UnscheduledPod`` by ``new``'s node."""
    resource = ASSIGNED_POD if new.node_name else UNSCHEDULED_POD
    actions: list[ActionType] = []
    if dict(old.labels) != dict(new.labels):
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(old.requests, new.requests):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if old.spec.get("schedulingGates") and not new.spec.get("schedulingGates"):
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if (old.spec.get("tolerations") or []) != (new.spec.get("tolerations") or []):
        actions.append(ActionType.UPDATE_POD_TOLERATIONS)
    if not actions:
        actions.append(ActionType.update())
    return [ClusterEvent(resource, action) for action in actions]


def _strip(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta = {
        k: v
        for k, v in meta_of(pod).items()
        if k not in ("resourceVersion", "generation", "managedFields", "finalizers")
    }
    status = status_of(pod)
    kept = {k: status[k] for k in ("resourceClaimStatuses", "extendedResourceClaimStatus") if k in status}
    return {**pod, "metadata": meta, "status": kept}


def is_pod_updated(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Upstream ``isPodUpdated``: the pods differ beyond status (except resource claims), resourceVersion,
    generation, managedFields and finalizers, so the update may make the pod schedulable."""
    return _strip(old) != _strip(new)


def pod_uid(obj: object) -> str | None:
    """The UID of a PodInfo or pod dict, None for anything else (wildcard events aimed at one pod)."""
    if isinstance(obj, PodInfo):
        return obj.uid
    if isinstance(obj, Mapping):
        uid = meta_of(obj).get("uid")
        return uid if isinstance(uid, str) else None
    return None


def affinity_term_may_match(term: Mapping[str, Any], owner: PodInfo, pod: PodInfo) -> bool:
    """Whether ``pod`` may match a required pod affinity term of ``owner``; a namespaceSelector is assumed to
    match (namespace labels are not known here) and a bad selector matches, so that no pod is left stranded."""
    namespaces = term.get("namespaces") or ()
    ns_selector = term.get("namespaceSelector")
    if ns_selector is None and pod.namespace not in (namespaces or (owner.namespace,)):
        return False
    try:
        return label_selector_as_selector(term.get("labelSelector")).matches(pod.labels)
    except SelectorError:
        return True
