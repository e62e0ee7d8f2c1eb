"""Pod predicates the workload controllers share (upstream ``pkg/api/v1/pod/util.go``, ``podutil``, and the
pod filters of ``pkg/controller/controller_utils.go``).

Active, terminating, ready, available: the states a controller counts pods by. "Terminal" and "being deleted"
are :mod:`kubeplane.api.views`'s (:func:`~kubeplane.api.views.is_pod_terminal`,
:func:`~kubeplane.api.views.is_being_deleted`), the one definition every component shares. Objects are
wire-format dicts, never changed in place.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from kubeplane.api import meta as apimeta
from kubeplane.api.views import PodView, is_being_deleted, is_pod_terminal, status_of
from kubeplane.client.clock import Clock
from kubeplane.client.interface import Obj

__all__ = [
    "filter_active_pods",
    "filter_terminating_pods",
    "find_min_next_pod_availability_check",
    "get_pod_ready_condition",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "is_pod_terminating",
    "parse_timestamp",
    "pod_condition_patch",
]


def pod_condition_patch(pod: Mapping[str, Any], condition: Mapping[str, Any], now: float) -> Obj | None:
    """The condition to write so ``pod`` carries ``condition``, or None when it already does (upstream
    ``UpdatePodCondition``): ``lastTransitionTime`` moves to ``now`` only when the status changes (or the
    condition is new). Keys the old condition has and the new one lacks are set to None, so a strategic merge
    patch (conditions merge by ``type``) replaces the condition as upstream's update does."""
    conditions = status_of(pod).get("conditions") or []
    existing = next((c for c in conditions if c.get("type") == condition.get("type")), None)
    new: Obj = dict(condition)
    if existing is None:
        new.setdefault("lastTransitionTime", apimeta.format_time(now))
        return new
    if new.get("status") != existing.get("status"):
        new["lastTransitionTime"] = apimeta.format_time(now)
    else:
        new["lastTransitionTime"] = existing.get("lastTransitionTime")
    keys = ("status", "reason", "message", "lastProbeTime", "lastTransitionTime")
    if all(new.get(k) == existing.get(k) for k in keys):
        return None
    for k in existing:
        new.setdefault(k, None)
    return new


def parse_timestamp(value: Any) -> float | None:
    """An RFC 3339 timestamp (``metav1.Time`` or ``MicroTime``) as epoch seconds; None for absent or unparsable
    (Go's zero time). Memoised: controllers re-read the same timestamps every pass (node health every 5 s)."""
    if not value or not isinstance(value, str):
        return None
    return _parse_timestamp(value)


@functools.lru_cache(maxsize=65_536)
def _parse_timestamp(value: str) -> float | None:
    if len(value) in (20, 27) and value[-1] == "Z" and value[10] == "T" and (len(value) == 20 or value[19] == "."):
        # the two shapes the API server writes (Time, MicroTime in UTC): the standard library's ISO parser gives
        # the same instant a tenth of the time (a thousand Lease renewTimes a pass); anything else it refuses
        # goes the RFC 3339 way below
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            pass
    try:
        parsed: datetime = apimeta.parse_time(value)
    except ValueError:
        try:
            parsed = apimeta.parse_micro_time(value)
        except ValueError:
            return None
    return parsed.timestamp()


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """Not Succeeded, not Failed, not being deleted (upstream ``IsPodActive``): the pods a controller counts."""
    return not is_pod_terminal(pod) and not is_being_deleted(pod)


def is_pod_terminating(pod: Mapping[str, Any]) -> bool:
    """Being deleted but not yet terminal (upstream ``IsPodTerminating``)."""
    return not is_pod_terminal(pod) and is_being_deleted(pod)


def filter_active_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if is_pod_active(p)]


def filter_terminating_pods(pods: Iterable[Obj]) -> list[Obj]:
    return [p for p in pods if is_pod_terminating(p)]


def get_pod_ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The first ``Ready`` condition (upstream ``podutil.GetPodReadyCondition``), or None."""
    return PodView(pod).ready_condition


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """The Ready condition is True (upstream ``podutil.IsPodReady``)."""
    return PodView(pod).is_ready


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """Ready, and ready for more than ``min_ready_seconds`` at ``now`` (epoch seconds) (upstream
    ``podutil.IsPodAvailable``: strictly after; a Ready condition without a transition time is never available
    when ``min_ready_seconds`` > 0)."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    cond = get_pod_ready_condition(pod)
    since = parse_timestamp(cond.get("lastTransitionTime")) if cond is not None else None
    return since is not None and since + min_ready_seconds < now


def _next_pod_availability_check(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> float | None:
    """Seconds until a ready pod becomes available, or None if it is not ready or already available."""
    if not is_pod_ready(pod) or min_ready_seconds <= 0:
        return None
    cond = get_pod_ready_condition(pod)
    since = parse_timestamp(cond.get("lastTransitionTime")) if cond is not None else None
    if since is None:
        return None
    remaining = since + min_ready_seconds - now
    return remaining if remaining > 0 else None


def find_min_next_pod_availability_check(
    pods: Iterable[Mapping[str, Any]], min_ready_seconds: int, last_evaluation: float, clock: Clock
) -> float | None:
    """Seconds until the next of ``pods`` becomes available (upstream ``FindMinNextPodAvailabilityCheck``).

    The pod is chosen as of ``last_evaluation`` (when the owner's status was computed); the delay is measured
    from the clock's ``now`` so the time spent writing the status is not waited twice. 0 if that pod has
    become available meanwhile; None if no ready pod is waiting for availability."""
    best: float | None = None
    best_pod: Mapping[str, Any] | None = None
    for pod in pods:
        delay = _next_pod_availability_check(pod, min_ready_seconds, last_evaluation)
        if delay is not None and (best is None or delay < best):
            best, best_pod = delay, pod
    if best_pod is None:
        return None
    updated = _next_pod_availability_check(best_pod, min_ready_seconds, clock.now())
    return updated if updated is not None else 0.0
