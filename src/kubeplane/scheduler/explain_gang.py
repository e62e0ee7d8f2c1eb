"""A gang's state for ``kubeplane explain``: how far a pod's PodGroup is from its ``minCount``.

Derived from API objects only (the PodGroup and the group's pods), so it reads the same from a cluster file and
from a live cluster. The pods a scheduler holds at Permit are not visible through the API (upstream writes
nothing while a pod waits), so they count among the *pending* pods: unbound, not terminal. The verdict follows
GangScheduling's two gates (:mod:`kubeplane.scheduler.plugins.gang_scheduling`):

* PreEnqueue: the PodGroup must exist, and ``minCount`` pods of the group must exist, before any is queued;
* Permit: pods wait until ``minCount`` of them are placed (assumed or bound), then bind together; after the
  timeout they are rejected and requeued.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.api.views import is_pod_terminal, meta_of, name_of, namespace_of, spec_of
from kubeplane.scheduler.framework.pod_groups import pod_group_name
from kubeplane.scheduler.plugins.gang_scheduling import PERMIT_TIMEOUT, gang_min_count

__all__ = ["gang_state"]


def gang_state(
    pod: Mapping[str, Any], pods: Sequence[Mapping[str, Any]], objects: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    """``{"podGroup", "exists", "policy", "minCount", "pods", "placed", "pending", "message"}`` for ``pod``'s
    group (``pod`` itself counted once, whether or not ``pods`` holds it), or None for a pod in no group."""
    group = pod_group_name(pod)
    if group is None:
        return None
    namespace = namespace_of(pod) or "default"
    key = (namespace, name_of(pod))
    pod_group = next(
        (
            o
            for o in objects
            if o.get("kind") == "PodGroup" and name_of(o) == group and (namespace_of(o) or "default") == namespace
        ),
        None,
    )
    members = [pod] + [
        p
        for p in pods
        if pod_group_name(p) == group
        and (namespace_of(p) or "default") == namespace
        and (namespace_of(p) or "default", name_of(p)) != key
    ]
    live = [p for p in members if not is_pod_terminal(p) and not meta_of(p).get("deletionTimestamp")]
    placed = sum(1 for p in live if spec_of(p).get("nodeName"))
    out: dict[str, Any] = {
        "podGroup": f"{namespace}/{group}",
        "exists": pod_group is not None,
        "pods": len(live),
        "placed": placed,
        "pending": len(live) - placed,
    }
    if pod_group is None:
        out["message"] = f"PodGroup {namespace}/{group} does not exist: the pod waits in PreEnqueue until it appears"
        return out
    min_count = gang_min_count(pod_group)
    out["policy"] = "gang" if min_count is not None else "basic"
    out["minCount"] = min_count
    if min_count is None:
        out["message"] = f"PodGroup {namespace}/{group} has the basic policy: its pods schedule one by one"
    elif len(live) < min_count:
        out["message"] = (
            f"{len(live)} of minCount {min_count} pods exist: they wait in PreEnqueue until {min_count} exist"
        )
    elif placed >= min_count:
        out["message"] = f"{placed} of minCount {min_count} pods placed: the gang is scheduled"
    else:
        out["message"] = (
            f"{placed} of minCount {min_count} pods placed, {len(live) - placed} pending: pods that fit wait at "
            f"Permit (up to {int(PERMIT_TIMEOUT)}s) until {min_count} are placed, then bind together"
        )
    return out
