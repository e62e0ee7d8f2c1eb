"""The node lifecycle controller's rate-limited zone queue (upstream ``pkg/controller/nodelifecycle/scheduler``'s
``RateLimitedTimedQueue`` with its token-bucket limiter, burst :data:`EVICTION_BURST`): one per zone, the nodes
waiting for a NoExecute taint. See :mod:`kubeplane.controllers.nodelifecycle`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kubeplane.client.flowcontrol import TokenBucket, TokenBucketConfig

EVICTION_BURST = 1  # upstream EvictionRateLimiterBurst


class _Limiter:
    """Upstream's token bucket limiter with burst 1, or (qps <= 0) the never-accepting fake limiter."""

    def __init__(self, qps: float, clock: Any) -> None:
        self.qps = qps
        self._bucket = TokenBucket(TokenBucketConfig(qps=qps, burst=EVICTION_BURST), clock=clock) if qps > 0 else None

    def try_accept(self) -> bool:
        return self._bucket is not None and self._bucket.try_accept()


@dataclass(order=True)
class TimedValue:
    process_at: float
    value: str = field(compare=False)
    uid: str = field(compare=False, default="")
    added_at: float = field(compare=False, default=0.0)


class RateLimitedTimedQueue:
    """Upstream ``RateLimitedTimedQueue``: unique values ordered by ``process_at``, processed under a limiter.

    A value stays *known* after it was processed successfully (``Add`` refuses it) until :meth:`remove`; so a
    node is tainted once per unhealthy spell. :meth:`try_process` consumes one token per attempt and stops at
    the first refusal or not-yet-due value, as upstream's ``Try``.
    """

    def __init__(self, qps: float, clock: Any) -> None:
        self._clock = clock
        self.limiter = _Limiter(qps, clock)
        self._queue: list[TimedValue] = []
        self._known: set[str] = set()

    def add(self, value: str, uid: str) -> bool:
        if value in self._known:
            return False
        now = self._clock.monotonic()
        self._queue.append(TimedValue(now, value, uid, now))
        self._queue.sort()
        self._known.add(value)
        return True

    def remove(self, value: str) -> bool:
        if value not in self._known:
            return False
        self._known.discard(value)
        self._queue = [v for v in self._queue if v.value != value]
        return True

    def __len__(self) -> int:  # values waiting (not the known ones already processed)
        return len(self._queue)

    def knows(self, value: str) -> bool:  # added and not removed since (queued, or processed and kept known)
        return value in self._known

    def __contains__(self, value: str) -> bool:
        return any(v.value == value for v in self._queue)

    def swap_limiter(self, qps: float) -> None:
        if self.limiter.qps == qps:
            return
        new = _Limiter(qps, self._clock)
        if qps > 0 and not self.limiter.try_accept():
            new.try_accept()  # we were waiting on the old limiter: the new one starts drained (burst 1)
        self.limiter = new

    async def try_process(self, fn: Callable[[TimedValue], Awaitable[tuple[bool, float]]]) -> None:
        while self._queue:
            head = self._queue[0]
            if not self.limiter.try_accept():
                return
            now = self._clock.monotonic()
            if now < head.process_at:
                return
            ok, wait = await fn(head)
            if head not in self._queue:
                continue  # removed while fn ran
            if ok:
                self._queue.remove(head)  # stays known until remove()
            else:
                head.process_at = now + wait + 1e-9
                self._queue.sort()
