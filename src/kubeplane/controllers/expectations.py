"""Expectations: what a controller waits to observe before it acts on a key again (upstream
``pkg/controller/controller_utils.go``, its ``ControllerExpectations`` and ``UIDTrackingControllerExpectations``).

A controller that has just asked for N creations or deletions records them, and does not act on the same key
again until its informer has observed them (``creation_observed`` / ``deletion_observed`` from the event
handlers) or :data:`EXPECTATIONS_TIMEOUT` has passed on the injected clock. This is what keeps a ReplicaSet from
creating the same pods twice while its pod informer lags behind its own writes. Expectations only ever *delay* a
sync; a restarted controller starts with none and reads the truth from the informers.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from kubeplane.client.clock import Clock

__all__ = [
    "EXPECTATIONS_TIMEOUT",
    "ControlleeExpectations",
    "ControllerExpectations",
    "UIDTrackingControllerExpectations",
]

log = logging.getLogger("kubeplane.controllers")

EXPECTATIONS_TIMEOUT = 5 * 60.0
"""Seconds after which unmet expectations stop blocking a sync (upstream ``ExpectationsTimeout``): a dropped
watch event must not put a controller to sleep forever."""


@dataclass
class ControlleeExpectations:
    """Creations and deletions one controller key still waits to observe, and when they were set (monotonic)."""

    key: str
    add: int
    delete: int
    timestamp: float

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0

    def expired(self, now: float) -> bool:
        return now - self.timestamp > EXPECTATIONS_TIMEOUT


class ControllerExpectations:
    """Per controller key, the creations/deletions it expects (upstream ``ControllerExpectations``).

    Invariants: setting expectations replaces the previous ones and stamps them with the clock; afterwards they
    are only lowered (by observations) or raised explicitly. A key with no expectations, fulfilled ones, or ones
    older than :data:`EXPECTATIONS_TIMEOUT` is *satisfied* and may sync. Everything runs on one event loop, so
    the counters need no atomics.
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._store: dict[str, ControlleeExpectations] = {}

    def get_expectations(self, key: str) -> ControlleeExpectations | None:
        return self._store.get(key)

    def delete_expectations(self, key: str) -> None:
        self._store.pop(key, None)

    def satisfied_expectations(self, key: str) -> bool:
        """True if ``key`` may sync: no expectations, fulfilled, or expired."""
        exp = self._store.get(key)
        if exp is None:
            return True
        if exp.fulfilled():
            return True
        if exp.expired(self._clock.monotonic()):
            log.debug("controller expectations expired: %s", exp)
            return True
        log.debug("controller still waiting on expectations: %s", exp)
        return False

    def set_expectations(self, key: str, add: int, delete: int) -> None:
        self._store[key] = ControlleeExpectations(key, add, delete, self._clock.monotonic())

    def expect_creations(self, key: str, adds: int) -> None:
        self.set_expectations(key, adds, 0)

    def expect_deletions(self, key: str, dels: int) -> None:
        self.set_expectations(key, 0, dels)

    def lower_expectations(self, key: str, add: int, delete: int) -> None:
        exp = self._store.get(key)
        if exp is not None:
            exp.add -= add
            exp.delete -= delete

    def raise_expectations(self, key: str, add: int, delete: int) -> None:
        exp = self._store.get(key)
        if exp is not None:
            exp.add += add
            exp.delete += delete

    def creation_observed(self, key: str) -> None:
        self.lower_expectations(key, 1, 0)

    def deletion_observed(self, key: str) -> None:
        self.lower_expectations(key, 0, 1)


class UIDTrackingControllerExpectations:
    """:class:`ControllerExpectations` that also remembers *which* pods it expects to see deleted (upstream
    ``UIDTrackingControllerExpectations``; the "UIDs" are pod keys, as upstream).

    A graceful delete is observed twice (the update setting ``deletionTimestamp``, then the delete); only the
    first observation of a remembered pod lowers the count, so a deletion is never counted twice and a pod the
    controller did not delete never lowers it.
    """

    def __init__(self, clock: Clock) -> None:
        self.expectations = ControllerExpectations(clock)
        self._uids: dict[str, set[str]] = {}

    def get_uids(self, key: str) -> set[str] | None:
        return self._uids.get(key)

    def get_expectations(self, key: str) -> ControlleeExpectations | None:
        return self.expectations.get_expectations(key)

    def satisfied_expectations(self, key: str) -> bool:
        return self.expectations.satisfied_expectations(key)

    def expect_creations(self, key: str, adds: int) -> None:
        self.expectations.expect_creations(key, adds)

    def creation_observed(self, key: str) -> None:
        self.expectations.creation_observed(key)

    def expect_deletions(self, key: str, deleted_keys: Iterable[str]) -> None:
        existing = self._uids.get(key)
        if existing:
            log.error("Clobbering existing delete keys: %s", sorted(existing))
        expected = set(deleted_keys)
        self._uids[key] = expected
        self.expectations.expect_deletions(key, len(expected))

    def deletion_observed(self, key: str, deleted_key: str) -> None:
        uids = self._uids.get(key)
        if uids is not None and deleted_key in uids:
            self.expectations.deletion_observed(key)
            uids.discard(deleted_key)

    def delete_expectations(self, key: str) -> None:
        self.expectations.delete_expectations(key)
        self._uids.pop(key, None)
