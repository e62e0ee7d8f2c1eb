"""Work queues for controllers, as client-go's ``util/workqueue``: de-duplicating, delaying and rate limiting.

A controller's event handlers :meth:`WorkQueue.add` keys (``"namespace/name"``); workers ``get`` a key,
reconcile it and call ``done``. The queue, not the workers, guarantees the two properties controllers rely on:

* **De-duplication.** An item added while it waits is queued once, however often it is added.
* **One worker per item.** An item handed out by ``get`` is *processing* until ``done``; adding it meanwhile
  marks it *dirty*, and ``done`` queues it again, so it is reconciled once more after the change but never by
  two workers at the same time.

Per item the states are (upstream's ``queue``/``dirty``/``processing`` sets)::

    absent --add--> queued --get--> processing --done--> absent
                                    processing --add--> processing+dirty --done--> queued

Invariants: every queued item is dirty and not processing; an item is in the FIFO at most once; ``get`` hands
an item to exactly one caller. After ``shut_down`` new adds are ignored, ``get`` still hands out what is queued
and raises :class:`QueueShutDown` once the FIFO is empty (upstream's ``shutdown == true``).

:class:`DelayingQueue` adds ``add_after`` on an injected :class:`~kubeplane.client.clock.Clock`: an item waiting
to be added keeps its earliest ready time (a later ``add_after`` never postpones it). :class:`RateLimitingQueue`
adds ``add_rate_limited``/``forget``/``num_requeues`` over a :class:`RateLimiter`; the default is upstream's
``DefaultControllerRateLimiter``: the maximum of a per-item exponential backoff (5 ms doubling to 1000 s) and an
overall token bucket (10 qps, burst 100), both on the injected clock so tests never sleep.

Everything runs on one event loop and no method awaits between reading and changing state, so no locks are
needed; ``get`` is the only waiting call besides ``shut_down_with_drain``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from .clock import Clock
from .flowcontrol import TokenBucket, TokenBucketConfig

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class QueueShutDown(Exception):  # named as asyncio.QueueShutDown (Python 3.13)
    """Raised by :meth:`WorkQueue.get` when the queue is shut down and empty: the worker should return."""


class WorkQueue(Generic[T]):
    """The de-duplicating FIFO with a processing set (upstream ``workqueue.Typed``); see the module docstring."""

    def __init__(self) -> None:
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._getters: deque[asyncio.Future[None]] = deque()
        self._drained: list[asyncio.Future[None]] = []

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing. Ignored after shut down; a no-op while it is already dirty."""
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item in self._processing:
            return  # done() queues it again
        self._queue.append(item)
        self._wake_one()

    def __len__(self) -> int:
        """Items waiting in the FIFO (not those processing or delayed): informational, as upstream's ``Len``."""
        return len(self._queue)

    async def get(self) -> T:
        """Wait for an item and mark it processing; the caller must call :meth:`done` with it.

        Raises :class:`QueueShutDown` when the queue is shut down and nothing is left to hand out."""
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDown
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled: pass the wake-up on so the item is not stranded
                raise
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        """Finish processing ``item``; if it was added meanwhile it is queued again.

        Raises ValueError for an item that is not processing: queuing it here could hand it out twice."""
        if item not in self._processing:
            raise ValueError(f"done({item!r}): the item is not being processed (get() it first, done() once)")
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake_one()
        elif not self._processing:
            self._wake_drained()

    def shut_down(self) -> None:
        """Ignore new items and let workers exit once the FIFO is empty; stops a pending drain from waiting."""
        self._drain = False
        self._shutting_down = True
        self._wake_all()
        self._wake_drained()

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until every item being processed is ``done`` (upstream ``ShutDownWithDrain``).

        Workers must keep calling ``done``, or this waits forever; a later :meth:`shut_down` ends the wait."""
        self._drain = True
        self._shutting_down = True
        self._wake_all()
        while self._processing and self._drain:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._drained.append(waiter)
            await waiter

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _wake_all(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    def _wake_drained(self) -> None:
        waiters, self._drained = self._drained, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


class DelayingQueue(WorkQueue[T]):
    """A :class:`WorkQueue` with :meth:`add_after` (upstream ``delayingType``).

    Waiting items sit in a heap ordered by ready time, with one entry that counts per item: an ``add_after``
    that makes the item ready sooner supersedes the old entry, a later one is ignored (upstream's ``insert``).
    One waiting-loop task adds every ready item in ready-time order, then sleeps on the clock until the next
    ready time; it is (re)started when an entry earlier than its wake-up arrives and ends when the heap is
    empty. It computes each sleep from the clock at the time it sleeps, so a clock that moved before the loop
    ran (a FakeClock advanced by a test) only makes items ready sooner, never later. Shutting down drops
    waiting items, as upstream's waiting loop exits. ``add_after`` must be called on the running event loop.
    """

    def __init__(self, *, clock: Clock) -> None:
        super().__init__()
        self._clock = clock
        self._heap: list[tuple[float, int, T]] = []
        self._ready_at: dict[T, float] = {}
        self._order = itertools.count()
        self._loop_task: asyncio.Task[None] | None = None
        self._loop_wakes_at = -math.inf  # only meaningful while the loop task sleeps

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed on the clock; at once if ``delay <= 0``."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.monotonic() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready_at:
            return
        self._ready_at[item] = ready_at
        heapq.heappush(self._heap, (ready_at, next(self._order), item))
        if self._loop_task is None or self._loop_task.done() or ready_at < self._loop_wakes_at:
            if self._loop_task is not None:
                self._loop_task.cancel()
            self._loop_wakes_at = -math.inf  # starting: it looks at the heap before it sleeps
            self._loop_task = asyncio.get_running_loop().create_task(self._waiting_loop())

    @property
    def waiting(self) -> int:
        """Items whose ``add_after`` delay has not yet passed."""
        return len(self._ready_at)

    async def _waiting_loop(self) -> None:
        heap = self._heap
        while heap:
            now = self._clock.monotonic()
            while heap and heap[0][0] <= now:
                ready_at, _, item = heapq.heappop(heap)
                if self._ready_at.get(item) == ready_at:  # else superseded by an earlier add_after
                    del self._ready_at[item]
                    self.add(item)
            if heap:
                self._loop_wakes_at = heap[0][0]
                await self._clock.sleep(heap[0][0] - now)

    def _stop_waiting(self) -> None:
        if self._loop_task is not None:
            self._loop_task.cancel()
            self._loop_task = None
        self._heap.clear()
        self._ready_at.clear()

    def shut_down(self) -> None:
        self._stop_waiting()
        super().shut_down()

    async def shut_down_with_drain(self) -> None:
        self._stop_waiting()
        await super().shut_down_with_drain()


# --- rate limiters (upstream default_rate_limiters.go) ---------------------------------------------------


class RateLimiter(Protocol[T_contra]):
    """Decides how long an item waits before it is retried (upstream ``workqueue.RateLimiter``)."""

    def when(self, item: T_contra) -> float:
        """Seconds ``item`` should wait now; counts a failure for per-item limiters."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded, or the caller gave up on it)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """Failures counted for ``item`` since it was last forgotten."""
        ...


@dataclass(frozen=True, slots=True)
class ExponentialBackoffConfig:
    """``base_delay * 2**failures`` seconds, capped at ``max_delay`` (upstream: 5 ms and 1000 s)."""

    base_delay: float = 0.005
    max_delay: float = 1000.0

    def __post_init__(self) -> None:
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError(f"backoff delays must not be negative: {self}")


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Per-item ``base_delay * 2**failures``, capped (upstream ``ItemExponentialFailureRateLimiter``).

    The first failure waits ``base_delay``; ``when`` counts the failure it answers for."""

    def __init__(self, config: ExponentialBackoffConfig | None = None) -> None:
        self.config = ExponentialBackoffConfig() if config is None else config
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        # 2.0**1023 is the largest finite power; beyond it the product is inf (upstream's overflow guard).
        backoff = self.config.base_delay * 2.0 ** min(exp, 1023)
        return min(backoff, self.config.max_delay)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)


class BucketRateLimiter:
    """One token bucket for all items (upstream ``BucketRateLimiter``): bounds the overall retry rate."""

    def __init__(self, *, clock: Clock, config: TokenBucketConfig | None = None) -> None:
        self.bucket = TokenBucket(TokenBucketConfig() if config is None else config, clock=clock)

    def when(self, item: Hashable) -> float:
        return self.bucket.reserve()

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def forget(self, item: Hashable) -> None:
        return None


class MaxOfRateLimiter(Generic[T]):
    """The worst case of several limiters (upstream ``MaxOfRateLimiter``); every limiter sees every call."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters

    def when(self, item: T) -> float:
        return max((limiter.when(item) for limiter in self.limiters), default=0.0)

    def num_requeues(self, item: T) -> int:
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)

    def forget(self, item: T) -> None:
        for limiter in self.limiters:
            limiter.forget(item)


def default_controller_rate_limiter(*, clock: Clock) -> MaxOfRateLimiter[Hashable]:
    """Upstream ``DefaultControllerRateLimiter``: max(per-item 5 ms·2ⁿ capped at 1000 s, 10 qps burst 100)."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter[Hashable](ExponentialBackoffConfig(base_delay=0.005, max_delay=1000.0)),
        BucketRateLimiter(clock=clock, config=TokenBucketConfig(qps=10.0, burst=100)),
    )


class RateLimitingQueue(DelayingQueue[T]):
    """A :class:`DelayingQueue` whose retries wait as the rate limiter says (upstream ``rateLimitingType``).

    Workers call ``add_rate_limited`` when a reconcile fails and ``forget`` when it succeeds, so the next
    failure starts again from the base delay."""

    def __init__(self, *, clock: Clock, rate_limiter: RateLimiter[T] | None = None) -> None:
        super().__init__(clock=clock)
        self.rate_limiter: RateLimiter[T] = (
            default_controller_rate_limiter(clock=clock) if rate_limiter is None else rate_limiter
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the limiter's delay (counting one more failure for it)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset ``item``'s failure count; it does not remove the item from the queue."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)


__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ExponentialBackoffConfig",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "QueueShutDown",
    "RateLimiter",
    "RateLimitingQueue",
    "WorkQueue",
    "default_controller_rate_limiter",
]
