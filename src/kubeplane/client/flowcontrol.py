"""The token bucket every rate limit of the client uses (client-go's ``util/flowcontrol``, over
``golang.org/x/time/rate``).

One bucket, three users: the HTTP transport's request rate (``qps``/``burst`` of the kubeconfig, client-go's
``NewTokenBucketRateLimiter``), the work queues' overall retry rate (``BucketRateLimiter``) and the event
recorder's spam filter (flowcontrol's passive ``TryAccept``); the node lifecycle controller's eviction rate
too. All run on the injected :class:`~kubeplane.client.clock.Clock`, so tests advance time instead of sleeping.

Semantics are ``rate.Limiter``'s: the bucket starts full (``burst`` tokens) and refills at ``qps`` per second, never
above ``burst``. :meth:`TokenBucket.reserve` always takes a token, letting the count go negative, and returns
how long the caller must wait for it; so concurrent waiters queue up one ``1/qps`` apart in the order they
reserved, rather than racing for each refilled token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .clock import Clock

__all__ = ["TokenBucket", "TokenBucketConfig"]


@dataclass(frozen=True, slots=True)
class TokenBucketConfig:
    """A bucket of ``burst`` tokens refilled at ``qps`` per second (upstream's default: 10 qps, burst 100)."""

    qps: float = 10.0
    burst: int = 100

    def __post_init__(self) -> None:
        if not (self.qps > 0 and math.isfinite(self.qps)) or self.burst < 1:
            raise ValueError(f"a token bucket needs a finite qps > 0 and burst >= 1: {self}")


class TokenBucket:
    """A token bucket on the injected clock with ``golang.org/x/time/rate`` semantics.

    It starts full. :meth:`reserve` always takes a token and returns how long the caller must wait for it
    (``rate.Limiter.Reserve().Delay()``); :meth:`wait` takes one and sleeps that long (``Wait``, what client-go's
    ``tokenBucketRateLimiter.Wait`` does before every request); :meth:`try_accept` takes one only if one is there
    (``Allow``, used by flowcontrol's passive limiter, e.g. the event spam filter).
    """

    def __init__(self, config: TokenBucketConfig, *, clock: Clock) -> None:
        self.config = config
        self._clock = clock
        self._tokens = float(config.burst)
        self._last = clock.monotonic()

    def _advance(self) -> tuple[float, float]:
        now = self._clock.monotonic()
        elapsed = max(now - self._last, 0.0)
        return now, min(float(self.config.burst), self._tokens + elapsed * self.config.qps)

    def reserve(self) -> float:
        now, tokens = self._advance()
        tokens -= 1.0
        self._last, self._tokens = now, tokens
        return -tokens / self.config.qps if tokens < 0 else 0.0

    async def wait(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)

    def try_accept(self) -> bool:
        now, tokens = self._advance()
        self._last, self._tokens = now, tokens
        if tokens < 1.0:
            return False
        self._tokens = tokens - 1.0
        return True
