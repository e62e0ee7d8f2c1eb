"""The delay before a Job replaces failed pods (upstream ``backoff_utils.go``).

After ``n`` consecutive failures (none succeeded after them) a new pod waits ``10 s * 2**(n-1)``, capped at
``MAX_POD_FAILURE_BACKOFF``, measured from the last failure's finish time on the injected clock. The record of
consecutive failures lives in memory only (a restarted controller starts without backoff, as upstream); with
backoffLimitPerIndex the count is per index, read from the failed pod's failure-count annotations.

Upstream's constants are ``DefaultJobPodFailureBackOff = 10 * time.Second`` and ``MaxJobPodFailureBackOff =
10 * time.Minute`` (the documentation's "capped at six minutes" predates the latter).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.views import find_condition, meta_of, status_of
from kubeplane.client.interface import Obj
from kubeplane.controllers.job_indexed import index_absolute_failure_count
from kubeplane.controllers.podutil import parse_timestamp

__all__ = [
    "DEFAULT_POD_FAILURE_BACKOFF",
    "MAX_POD_FAILURE_BACKOFF",
    "BackoffRecord",
    "BackoffStore",
    "get_finished_time",
    "remaining_time_for_failures",
    "remaining_time_per_index",
]

DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0


def _finish_time_from_containers(pod: Mapping[str, Any]) -> float | None:
    latest: float | None = None
    for cs in status_of(pod).get("containerStatuses") or ():
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated is None:
            return None
        at = parse_timestamp(terminated.get("finishedAt"))
        if at is None:
            return None
        if latest is None or at > latest:
            latest = at
    return latest


def get_finished_time(pod: Mapping[str, Any]) -> float:
    """When the pod finished (upstream ``getFinishedTime``): the last container's finishedAt when all have one;
    else the Ready=False transition; else deletionTimestamp minus the grace period; else its creation."""
    found = _finish_time_from_containers(pod)
    if found is not None:
        return found
    ready = find_condition(status_of(pod).get("conditions"), "Ready")
    if ready is not None and ready.get("status") == "False":
        at = parse_timestamp(ready.get("lastTransitionTime"))
        if at is not None:
            return at
    meta = meta_of(pod)
    deleted = parse_timestamp(meta.get("deletionTimestamp"))
    if deleted is not None:
        return deleted - float(meta.get("deletionGracePeriodSeconds") or 0)
    return parse_timestamp(meta.get("creationTimestamp")) or 0.0


def remaining_time_for_failures(now: float, failures: int, last_failure_time: float | None) -> float:
    """Seconds still to wait after ``failures`` consecutive failures (upstream
    ``getRemainingTimeForFailuresCount``); 0 when none or the backoff has passed."""
    if failures == 0 or last_failure_time is None:
        return 0.0
    backoff = DEFAULT_POD_FAILURE_BACKOFF
    for _ in range(1, failures):
        backoff *= 2
        if backoff >= MAX_POD_FAILURE_BACKOFF:
            backoff = MAX_POD_FAILURE_BACKOFF
            break
    elapsed = now - last_failure_time
    return 0.0 if backoff < elapsed else backoff - elapsed


def remaining_time_per_index(now: float, last_failed_pod: Mapping[str, Any] | None) -> float:
    """The wait before recreating an index whose last failed pod is ``last_failed_pod`` (upstream
    ``getRemainingTimePerIndex``): failures are its failure-count annotations plus this failure."""
    if last_failed_pod is None:
        return 0.0
    failures = index_absolute_failure_count(last_failed_pod) + 1
    return remaining_time_for_failures(now, failures, get_finished_time(last_failed_pod))


@dataclass(frozen=True, slots=True)
class BackoffRecord:
    key: str
    failures_after_last_success: int = 0
    last_failure_time: float | None = None

    def remaining_time(self, now: float) -> float:
        return remaining_time_for_failures(now, self.failures_after_last_success, self.last_failure_time)


class BackoffStore:
    """Job key -> :class:`BackoffRecord` (upstream ``backoffStore``)."""

    def __init__(self) -> None:
        self._records: dict[str, BackoffRecord] = {}

    def get(self, key: str) -> BackoffRecord | None:
        return self._records.get(key)

    def update(self, record: BackoffRecord) -> None:
        self._records[record.key] = record

    def remove(self, key: str) -> None:
        self._records.pop(key, None)

    def new_record(self, key: str, new_succeeded: Sequence[Obj], new_failed: Sequence[Obj]) -> BackoffRecord:
        """The record after this sync's newly finished pods (upstream ``newBackoffRecord``): a success resets the
        count to the failures that finished after the last success."""
        old = self._records.get(key) or BackoffRecord(key)
        succeeded = sorted(get_finished_time(p) for p in new_succeeded)
        failed = sorted(get_finished_time(p) for p in new_failed)
        if not succeeded:
            if not failed:
                return old
            return BackoffRecord(key, old.failures_after_last_success + len(failed), failed[-1])
        if not failed:
            return BackoffRecord(key)
        last_success = succeeded[-1]
        count, last_failure = 0, None
        for at in reversed(failed):
            if at <= last_success:
                break
            if last_failure is None:
                last_failure = at
            count += 1
        return BackoffRecord(key, count, last_failure)
