"""Pins the client's one token bucket (client-go ``util/flowcontrol`` over ``golang.org/x/time/rate``)."""

from __future__ import annotations

import asyncio

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.client.flowcontrol import TokenBucket, TokenBucketConfig


async def test_token_bucket_allows_burst_then_qps() -> None:
    """client-go's request limiter (tokenBucketRateLimiter.Wait): the burst goes at once, then one per 1/qps."""
    clock = FakeClock()
    bucket = TokenBucket(TokenBucketConfig(qps=10, burst=3), clock=clock)
    taken: list[float] = []

    async def take(n: int) -> None:
        for _ in range(n):
            await bucket.wait()
            taken.append(clock.monotonic())

    task = asyncio.create_task(take(5))
    await asyncio.sleep(0)  # the burst goes at once
    for _ in range(10):
        await clock.advance(0.05)
    await task
    assert taken[:3] == [0.0, 0.0, 0.0]
    assert taken[3] == pytest.approx(0.1, abs=0.051)
    assert taken[4] - taken[3] == pytest.approx(0.1, abs=0.051)


async def test_token_bucket_try_accept() -> None:
    """flowcontrol's passive limiter (TryAccept): takes a token only if one is there; starts full."""
    clock = FakeClock()
    bucket = TokenBucket(TokenBucketConfig(qps=1.0, burst=2), clock=clock)
    assert [bucket.try_accept() for _ in range(3)] == [True, True, False]
    await clock.advance(1.0)
    assert [bucket.try_accept() for _ in range(2)] == [True, False]
    await clock.advance(100.0)  # never more than burst
    assert [bucket.try_accept() for _ in range(3)] == [True, True, False]
