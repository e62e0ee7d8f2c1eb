"""The scheduling queue's backoffQ (upstream ``backoff_queue.go``, with ``SchedulerPopFromBackoffQ`` as v1.37 has it:
beta and on by default since v1.33, KEP-5142).

Two heaps behind one interface, a pod in at most one of them, keyed by ``namespace/name``:

* **podBackoffQ** - pods a plugin rejected (``unschedulable_plugins`` or ``pending_plugins`` non-empty). With the
  feature on it is ordered by the *aligned* backoff expiry, then by activeQ's ``less`` within one expiry window, so
  that popping it when activeQ is empty (:meth:`BackoffQueue.pop_backoff`) takes the pod activeQ would take first
  among those whose backoff ends soonest. Off: by expiry alone.
* **podErrorBackoffQ** - pods whose attempt ended in an error (no rejecting plugin), ordered by expiry. It is never
  popped early: errors keep their backoff as a rate limit on retries (KEP-5142 "Risks").

Expiry is ``timestamp + backoff(attempts)`` (``initial * 2**(attempts - 1)`` capped at ``max``) truncated to the
one-second ordering window when the feature is on (``alignToWindow``), and cached on the pod
(``QueuedPodInfo.backoff_expiration``, upstream ``BackoffExpiration``) until the pod is popped or put back after an
attempt, the only moments attempts or timestamp change. A pod never attempted has no expiry (``-inf``, never
cached): it is never backing off. A pod is backing off while its expiry is not before the current window's start
(``isPodBackingoff``: ``!expiry.Before(alignToWindow(now))``), so a whole window completes at once - which is why
the queue flushes backoffQ on whole seconds (:meth:`BackoffQueue.next_window_start`).

Times are ``clock.monotonic()`` seconds; windows are whole seconds of it (upstream truncates wall time: the
simulation's and tests' clocks start on a whole second, so both agree there).

The expiry is fixed while a pod is in a heap (attempts and timestamp only change outside), so it is taken as part
of the sort key at push time: with a ``sort_key`` for activeQ's order the heaps compare keys in C
(:class:`SortKeyHeap`), else :class:`KeyedHeap` calls ``less``. Both break ties by insertion order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from kubeplane.client.clock import Clock
from kubeplane.scheduler.backend.heap import KeyedHeap, SortKeyHeap
from kubeplane.scheduler.framework.types import QueuedPodInfo

__all__ = ["BACKOFF_Q_ORDERING_WINDOW", "NO_BACKOFF", "BackoffQueue"]

BACKOFF_Q_ORDERING_WINDOW = 1.0
"""Upstream ``backoffQOrderingWindowDuration``: one second, also the flush period."""
NO_BACKOFF = -math.inf
"""The expiry of a pod never attempted (upstream's zero ``time.Time``): before every window."""


def _qkey(qpi: QueuedPodInfo) -> str:
    return qpi.pod_info.key


class BackoffQueue:
    """podBackoffQ and podErrorBackoffQ; see the module docstring. Not thread-safe: one event loop drives it."""

    def __init__(
        self,
        clock: Clock,
        *,
        initial_backoff: float,
        max_backoff: float,
        active_less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
        active_sort_key: Callable[[QueuedPodInfo], Any] | None = None,
        pop_from_backoff_q: bool = True,
    ) -> None:
        self._clock = clock
        self._initial = initial_backoff
        self._max = max_backoff
        self._active_less = active_less
        self.pop_from_backoff_q = pop_from_backoff_q
        self._pods: KeyedHeap[QueuedPodInfo] | SortKeyHeap[QueuedPodInfo]
        if not pop_from_backoff_q:
            self._pods = SortKeyHeap(_qkey, self.backoff_time)
        elif active_sort_key is not None:
            key = active_sort_key
            self._pods = SortKeyHeap(_qkey, lambda qpi: (self.backoff_time(qpi), key(qpi)))
        else:
            self._pods = KeyedHeap(_qkey, self._less_with_priority)
        self._errors: SortKeyHeap[QueuedPodInfo] = SortKeyHeap(_qkey, self.backoff_time)

    # --- expiry ----------------------------------------------------------------------------------------------

    @property
    def initial_backoff(self) -> float:
        return self._initial

    @property
    def max_backoff(self) -> float:
        return self._max

    def align_to_window(self, t: float) -> float:
        """``t`` truncated to its ordering window's start (upstream ``alignToWindow``); ``t`` itself when the
        feature is off."""
        if not self.pop_from_backoff_q:
            return t
        return float(math.floor(t / BACKOFF_Q_ORDERING_WINDOW)) * BACKOFF_Q_ORDERING_WINDOW

    def backoff_duration(self, attempts: int) -> float:
        """``initial * 2**(attempts - 1)`` capped at ``max``; 0 for a pod never attempted
        (upstream ``calculateBackoffDuration``)."""
        if attempts <= 0 or self._initial <= 0:
            return 0.0
        duration = self._initial
        for _ in range(1, attempts):
            if duration > self._max - duration:
                return self._max
            duration += duration
        return duration

    def backoff_time(self, qpi: QueuedPodInfo) -> float:
        """When the pod's backoff ends, aligned to its window, cached on the pod (upstream ``getBackoffTime``)."""
        if qpi.attempts == 0:
            return NO_BACKOFF
        expiry = qpi.backoff_expiration
        if expiry is None:
            expiry = self.align_to_window(qpi.timestamp + self.backoff_duration(qpi.attempts))
            qpi.backoff_expiration = expiry
        return expiry

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        """True while the pod's expiry is not before the current window (upstream ``isPodBackingoff``): a pod whose
        backoff ends inside the current window still waits for the window's end."""
        return not self.backoff_time(qpi) < self.align_to_window(self._clock.monotonic())

    def next_window_start(self) -> float:
        """When the next window starts: upstream ``waitUntilAlignedWithOrderingWindow`` waits until then (one
        period from now with the feature off), then ticks every period. A deadline, not a duration, so that a
        virtual clock lands exactly on the whole second."""
        return self.align_to_window(self._clock.monotonic() + BACKOFF_Q_ORDERING_WINDOW)

    def _less_with_priority(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """podBackoffQ's order with the feature on (upstream ``lessBackoffCompletedWithPriority``)."""
        bo_a, bo_b = self.backoff_time(a), self.backoff_time(b)
        if bo_a != bo_b:
            return bo_a < bo_b
        return self._active_less(a, b)

    # --- contents --------------------------------------------------------------------------------------------

    def add(self, qpi: QueuedPodInfo) -> None:
        """Into podErrorBackoffQ when no plugin rejected the pod (an error), else podBackoffQ; never in both."""
        key = qpi.key
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            self._pods.delete(key)
            self._errors.push(qpi)
        else:
            self._errors.delete(key)
            self._pods.push(qpi)

    def update(self, qpi: QueuedPodInfo) -> bool:
        """Re-sort a queued pod whose pod info the caller replaced; False when it is not here."""
        key = qpi.key
        for heap in (self._pods, self._errors):
            if key in heap:
                heap.push(qpi)
                return True
        return False

    def delete(self, key: str) -> QueuedPodInfo | None:
        """Remove the pod from whichever heap holds it; returns it, or None."""
        found = self._pods.delete(key)
        return found if found is not None else self._errors.delete(key)

    def get(self, key: str) -> QueuedPodInfo | None:
        found = self._pods.get(key)
        return found if found is not None else self._errors.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._pods or key in self._errors

    def __len__(self) -> int:
        return len(self._pods) + len(self._errors)

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        """podBackoffQ's pods, then podErrorBackoffQ's (each in no particular order), as upstream ``list``."""
        yield from self._pods
        yield from self._errors

    def len_backoff(self) -> int:
        """Pods in podBackoffQ only (upstream ``lenBackoff``): what an empty activeQ may pop."""
        return len(self._pods)

    # --- popping ---------------------------------------------------------------------------------------------

    def pop_backoff(self) -> QueuedPodInfo | None:
        """podBackoffQ's head whether or not its backoff is over, None when empty (upstream ``popBackoff``; never
        podErrorBackoffQ)."""
        return self._pods.pop() if self._pods else None

    def pop_all_backoff_completed(self) -> list[QueuedPodInfo]:
        """Every pod whose backoff is over: podBackoffQ's in order, then podErrorBackoffQ's
        (upstream ``popAllBackoffCompleted``)."""
        out: list[QueuedPodInfo] = []
        for heap in (self._pods, self._errors):
            while heap:
                head = heap.peek()
                if head is None or self.is_backing_off(head):
                    break
                out.append(heap.pop())
        return out
