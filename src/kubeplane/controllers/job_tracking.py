"""Which pods' tracking finalizers the Job controller removed but has not yet seen removed (upstream
``tracking_utils.go``'s ``uidTrackingExpectations``).

Every pod of a Job carries the ``batch.kubernetes.io/job-tracking`` finalizer until the controller has counted it
in ``status.succeeded``/``failed`` (through ``status.uncountedTerminatedPods``), so a finished pod can never be
deleted uncounted. While a removal is in flight the informer may still show the finalizer; these expectations
keep such a pod from being counted twice. Memory only: after a restart the pods' finalizers and the Job's
uncounted lists say everything needed.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FinalizerExpectations"]


class FinalizerExpectations:
    def __init__(self) -> None:
        self._uids: dict[str, set[str]] = {}

    def expected_uids(self, key: str) -> frozenset[str]:
        return frozenset(self._uids.get(key, ()))

    def expect_finalizers_removed(self, key: str, uids: Iterable[str]) -> None:
        self._uids.setdefault(key, set()).update(uids)

    def finalizer_removal_observed(self, key: str, uid: str) -> None:
        found = self._uids.get(key)
        if found is not None:
            found.discard(uid)

    def delete_expectations(self, key: str) -> None:
        self._uids.pop(key, None)
