"""The work queue against client-go's util/workqueue (queue.go, delaying_queue.go, default_rate_limiters.go).

Each test names the upstream behaviour or upstream test it pins. Time is a FakeClock: nothing sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Hashable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.client.flowcontrol import TokenBucketConfig
from kubeplane.client.workqueue import (
    BucketRateLimiter,
    DelayingQueue,
    ExponentialBackoffConfig,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    QueueShutDown,
    RateLimitingQueue,
    WorkQueue,
    default_controller_rate_limiter,
)

pytestmark = pytest.mark.timeout(20)

# --- queue.go ----------------------------------------------------------------------------------------------


async def test_add_while_queued_is_queued_once() -> None:
    """Add: an item already dirty is not queued again (the dirty set de-duplicates)."""
    q: WorkQueue[str] = WorkQueue()
    for item in ("a", "b", "a", "a"):
        q.add(item)
    assert len(q) == 2
    assert [await q.get(), await q.get()] == ["a", "b"]
    assert len(q) == 0


async def test_add_while_processing_requeues_after_done() -> None:
    """TestReinsert / TestAddWhileProcessing: added while processing -> not handed out until done, then once."""
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert await q.get() == "a"
    q.add("a")
    q.add("a")
    assert len(q) == 0  # processing: never handed to a second worker
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not second.done()
    q.done("a")
    assert await asyncio.wait_for(second, 1) == "a"
    q.done("a")
    assert len(q) == 0


async def test_get_waits_for_an_item() -> None:
    q: WorkQueue[str] = WorkQueue()
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.add("a")
    assert await asyncio.wait_for(getter, 1) == "a"


async def test_done_for_an_item_not_processing_raises() -> None:
    """A stray done() of a queued item would queue it twice; kubeplane refuses it instead."""
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    with pytest.raises(ValueError, match="not being processed"):
        q.done("a")
    assert len(q) == 1


async def test_cancelled_getter_passes_its_wake_up_on() -> None:
    """A getter woken for an item but cancelled before it ran must not strand the item."""
    q: WorkQueue[str] = WorkQueue()
    first, second = asyncio.create_task(q.get()), asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")
    first.cancel()
    assert await asyncio.wait_for(second, 1) == "a"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_shut_down_ignores_adds_and_hands_out_what_is_queued() -> None:
    """ShutDown: Add is ignored; Get returns queued items, then shutdown=true (QueueShutDown)."""
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.shut_down()
    q.add("b")
    assert q.shutting_down
    assert len(q) == 1
    assert await q.get() == "a"
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_shut_down_wakes_waiting_getters() -> None:
    q: WorkQueue[str] = WorkQueue()
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.shut_down()
    results = await asyncio.wait_for(asyncio.gather(*getters, return_exceptions=True), 1)
    assert all(isinstance(r, QueueShutDown) for r in results)


async def test_shut_down_with_drain_waits_for_processing_items() -> None:
    """TestQueueDrainageUsingShutDownWithDrain: returns only after every processing item is done."""
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    a, b = await q.get(), await q.get()
    drain = asyncio.create_task(q.shut_down_with_drain())
    await asyncio.sleep(0)
    q.done(a)
    await asyncio.sleep(0)
    assert not drain.done()
    q.done(b)
    await asyncio.wait_for(drain, 1)


async def test_shut_down_with_drain_requeues_a_dirty_item() -> None:
    """TestQueueDrainageUsingShutDownWithDrainWithDirtyItem: a dirty item is handed out again while draining."""
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert await q.get() == "a"
    q.add("a")
    drain = asyncio.create_task(q.shut_down_with_drain())
    await asyncio.sleep(0)
    q.done("a")
    assert await q.get() == "a"
    await asyncio.sleep(0)
    assert not drain.done()
    q.done("a")
    await asyncio.wait_for(drain, 1)
    with pytest.raises(QueueShutDown):
        await q.get()


async def test_shut_down_ends_a_drain() -> None:
    """TestForceQueueShutdownUsingShutDown: ShutDown after ShutDownWithDrain stops waiting for workers."""
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    await q.get()
    drain = asyncio.create_task(q.shut_down_with_drain())
    await asyncio.sleep(0)
    assert not drain.done()
    q.shut_down()
    await asyncio.wait_for(drain, 1)


async def _run_workers(keys: list[tuple[str, int]], workers: int, seed: int) -> None:
    rng = random.Random(seed)
    q: WorkQueue[str] = WorkQueue()
    seq = itertools.count()
    in_flight: set[str] = set()
    last_add: dict[str, int] = {}
    adds: dict[str, int] = {}
    starts: dict[str, list[int]] = {}

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except QueueShutDown:
                return
            assert key not in in_flight, f"{key} handed to two workers at once"
            in_flight.add(key)
            starts.setdefault(key, []).append(next(seq))
            for _ in range(rng.randrange(4)):
                await asyncio.sleep(0)
            in_flight.discard(key)
            q.done(key)

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    for key, pause in keys:
        for _ in range(pause):
            await asyncio.sleep(0)
        q.add(key)
        last_add[key] = next(seq)
        adds[key] = adds.get(key, 0) + 1
    await q.shut_down_with_drain()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    for key, added_at in last_add.items():
        assert max(starts[key]) > added_at, f"{key} was not processed after its last add"
        assert len(starts[key]) <= adds[key]  # de-duplication: each hand-out consumes at least one add


@settings(max_examples=150, deadline=None)
@given(
    keys=st.lists(st.tuples(st.sampled_from("abcde"), st.integers(0, 3)), max_size=40),
    workers=st.integers(1, 5),
    seed=st.integers(0, 2**32),
)
def test_concurrent_workers_never_share_an_item_and_process_every_last_add(
    keys: list[tuple[str, int]], workers: int, seed: int
) -> None:
    """Upstream's two guarantees, on random interleavings: one worker per item; no add is lost."""
    asyncio.run(_run_workers(keys, workers, seed))


# --- delaying_queue.go -------------------------------------------------------------------------------------


async def test_add_after_adds_once_the_delay_passed() -> None:
    """TestSimpleQueue: nothing before the delay, the item after it."""
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 0.05)
    assert (len(q), q.waiting) == (0, 1)
    await clock.advance(0.04)
    assert len(q) == 0
    await clock.advance(0.02)
    assert (len(q), q.waiting) == (1, 0)


@pytest.mark.parametrize(
    ("first", "second", "fires_at"),
    [(0.05, 0.07, 0.05), (0.07, 0.05, 0.05)],
    ids=["later-add-after-does-not-postpone", "earlier-add-after-wins"],
)
async def test_add_after_keeps_the_earliest_ready_time(first: float, second: float, fires_at: float) -> None:
    """TestDeduping: one waiting entry per item, ready at the earliest requested time, fired once."""
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", first)
    q.add_after("a", second)
    assert q.waiting == 1
    await clock.advance(fires_at - 0.001)
    assert len(q) == 0
    await clock.advance(0.002)
    assert len(q) == 1
    q.done(await q.get())
    await clock.advance(1.0)
    assert len(q) == 0


async def test_add_after_fires_in_ready_order() -> None:
    """TestAddTwoFireEarly / TestCopyShifting: items become ready in ready-time order, not add order."""
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("first", 1.0)
    q.add_after("second", 0.5)
    q.add_after("third", 0.25)
    await clock.advance(2.0)
    assert [await asyncio.wait_for(q.get(), 1) for _ in range(3)] == ["third", "second", "first"]


async def test_add_after_without_delay_adds_now() -> None:
    q: DelayingQueue[str] = DelayingQueue(clock=FakeClock())
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert (len(q), q.waiting) == (2, 0)


@pytest.mark.parametrize("drain", [False, True], ids=["shut_down", "shut_down_with_drain"])
async def test_shut_down_drops_waiting_items(drain: bool) -> None:
    """delayingType.ShutDown stops the waiting loop: items still waiting are never added."""
    clock = FakeClock()
    q: DelayingQueue[str] = DelayingQueue(clock=clock)
    q.add_after("a", 1.0)
    if drain:
        await q.shut_down_with_drain()
    else:
        q.shut_down()
    q.add_after("b", 1.0)
    await clock.advance(2.0)
    assert (len(q), q.waiting) == (0, 0)


# --- default_rate_limiters.go ------------------------------------------------------------------------------


async def test_item_exponential_failure_rate_limiter() -> None:
    """TestItemExponentialFailureRateLimiter (1 ms base, 1 s max): doubling per item, forget resets."""
    limiter = ItemExponentialFailureRateLimiter[str](ExponentialBackoffConfig(base_delay=0.001, max_delay=1.0))
    assert [limiter.when("one") for _ in range(5)] == [0.001, 0.002, 0.004, 0.008, 0.016]
    assert limiter.num_requeues("one") == 5
    assert [limiter.when("two") for _ in range(2)] == [0.001, 0.002]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 0.001


@pytest.mark.parametrize(
    ("base", "cap", "failures", "expected"),
    [(0.001, 1.0, 11, 1.0), (1e-9, 1000.0, 5000, 1000.0), (60.0, 3_600_000.0, 3000, 3_600_000.0)],
    ids=["capped-at-max", "overflow-1ns-base", "overflow-1min-base"],
)
def test_item_exponential_failure_rate_limiter_cap(base: float, cap: float, failures: int, expected: float) -> None:
    """TestItemExponentialFailureRateLimiterOverFlow: huge failure counts return maxDelay, never overflow."""
    limiter = ItemExponentialFailureRateLimiter[str](ExponentialBackoffConfig(base_delay=base, max_delay=cap))
    for _ in range(failures - 1):
        limiter.when("a")
    assert limiter.when("a") == expected


async def test_bucket_rate_limiter_burst_then_qps() -> None:
    """BucketRateLimiter = rate.Limiter.Reserve().Delay(): burst free, then 1/qps apart; refills with time."""
    clock = FakeClock()
    limiter = BucketRateLimiter(clock=clock, config=TokenBucketConfig(qps=10.0, burst=100))
    assert all(limiter.when(i) == 0.0 for i in range(100))
    assert limiter.when("x") == pytest.approx(0.1)
    assert limiter.when("y") == pytest.approx(0.2)
    limiter.forget("x")
    assert limiter.num_requeues("x") == 0
    await clock.advance(1.0)  # -2 + 10 tokens
    assert all(limiter.when(i) == 0.0 for i in range(8))
    assert limiter.when("z") == pytest.approx(0.1)


async def test_default_controller_rate_limiter_is_max_of_item_and_bucket() -> None:
    """DefaultControllerRateLimiter: max(5 ms·2ⁿ per item, 10 qps burst 100 overall)."""
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    assert [limiter.when("a") for _ in range(3)] == [0.005, 0.01, 0.02]
    assert limiter.num_requeues("a") == 3
    for i in range(97):
        limiter.when(i)  # the bucket's burst of 100 is now spent
    assert limiter.when("b") == pytest.approx(0.1)  # bucket wait beats the item's 5 ms
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_max_of_rate_limiter_takes_the_worst() -> None:
    slow = ItemExponentialFailureRateLimiter[str](ExponentialBackoffConfig(base_delay=1.0, max_delay=60.0))
    fast = ItemExponentialFailureRateLimiter[str](ExponentialBackoffConfig(base_delay=0.001, max_delay=60.0))
    limiter = MaxOfRateLimiter(fast, slow)
    assert [limiter.when("a") for _ in range(3)] == [1.0, 2.0, 4.0]
    assert (fast.num_requeues("a"), slow.num_requeues("a"), limiter.num_requeues("a")) == (3, 3, 3)
    limiter.forget("a")
    assert (fast.num_requeues("a"), slow.num_requeues("a")) == (0, 0)


@pytest.mark.parametrize(
    "config",
    [
        lambda: TokenBucketConfig(qps=0.0),
        lambda: TokenBucketConfig(burst=0),
        lambda: TokenBucketConfig(qps=float("inf")),
        lambda: ExponentialBackoffConfig(base_delay=-1.0),
    ],
    ids=["zero-qps", "zero-burst", "infinite-qps", "negative-delay"],
)
def test_invalid_rate_limiter_config_is_refused(config: object) -> None:
    with pytest.raises(ValueError, match=r"must|needs"):
        config()  # type: ignore[operator]


# --- rate_limiting_queue.go --------------------------------------------------------------------------------


async def test_rate_limiting_queue_backs_off_per_failure() -> None:
    """TestRateLimitingQueue: AddRateLimited waits limiter.When(item); Forget resets the count."""
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock)
    q.add_rate_limited("a")
    await clock.advance(0.004)
    assert len(q) == 0
    await clock.advance(0.002)
    assert len(q) == 1
    assert q.num_requeues("a") == 1
    q.done(await q.get())
    q.add_rate_limited("a")  # second failure: 10 ms
    await clock.advance(0.009)
    assert len(q) == 0
    await clock.advance(0.002)
    assert len(q) == 1
    q.forget("a")
    assert q.num_requeues("a") == 0


async def test_rate_limiting_queue_takes_an_injected_limiter() -> None:
    clock = FakeClock()
    limiter = ItemExponentialFailureRateLimiter[Hashable](ExponentialBackoffConfig(base_delay=2.0, max_delay=2.0))
    q: RateLimitingQueue[str] = RateLimitingQueue(clock=clock, rate_limiter=limiter)
    q.add_rate_limited("a")
    await clock.advance(1.9)
    assert len(q) == 0
    await clock.advance(0.2)
    assert len(q) == 1
