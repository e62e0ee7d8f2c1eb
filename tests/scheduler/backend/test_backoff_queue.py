"""backoffQ with SchedulerPopFromBackoffQ (KEP-5142, on by default in v1.37) against upstream's backoff_queue_test.go
and the scheduling_queue_test.go cases about popping backoffQ, window alignment and PreEnqueue before backoffQ.

Each case names the upstream test it translates; most run with the feature on and off (``pop_from_backoff_q``).
Time is a FakeClock (monotonic starts at 0, a whole second): nothing sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.backoff_queue import NO_BACKOFF, BackoffQueue
from kubeplane.scheduler.backend.queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q, SchedulingQueue
from kubeplane.scheduler.backend.queue_events import EVENT_FORCE_ACTIVATE, EVENT_UNSCHEDULABLE_TIMEOUT
from kubeplane.scheduler.framework.interface import Code, Status
from kubeplane.scheduler.framework.types import PodInfo, QueuedPodInfo
from tests.scheduler.backend.test_queue import changed, make_pod, priority_less

pytestmark = pytest.mark.timeout(30)

ON_OFF = pytest.mark.parametrize("enabled", [True, False], ids=["PopFromBackoffQ", "PopFromBackoffQ-disabled"])


def new_bq(clock: FakeClock, enabled: bool = True, **kwargs: Any) -> BackoffQueue:
    options: dict[str, Any] = {"initial_backoff": 1.0, "max_backoff": 10.0, "active_less": priority_less}
    options.update(kwargs)
    return BackoffQueue(clock, pop_from_backoff_q=enabled, **options)


def queued(name: str, *, timestamp: float, attempts: int = 1, plugin: bool = True, priority: int = 0) -> QueuedPodInfo:
    qpi = QueuedPodInfo(make_pod(name, priority), timestamp=timestamp, attempts=attempts)
    if plugin:
        qpi.unschedulable_plugins.add("plugin")
    return qpi


class Deny:
    """A PreEnqueue plugin that rejects the pods whose names are in ``names``, counting its calls."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.calls = 0

    def __call__(self, pod: PodInfo) -> Status | None:
        self.calls += 1
        if pod.name in self.names:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("denied",), "Deny")
        return None


def new_queue(clock: FakeClock, enabled: bool = True, **kwargs: Any) -> SchedulingQueue:
    return SchedulingQueue(priority_less, clock, pop_from_backoff_q=enabled, **kwargs)


def pop(q: SchedulingQueue) -> QueuedPodInfo:
    qpi = q.pop_nowait()
    assert qpi is not None
    return qpi


def to_backoff(q: SchedulingQueue, pod: PodInfo, *plugins: str) -> QueuedPodInfo:
    """Add, pop and fail ``pod``: rejected by ``plugins`` it waits in unschedulablePods until a wildcard event moves
    it to backoffQ; with no plugin (an error) it goes to the error backoff queue at once."""
    q.add(pod)
    qpi = pop(q)
    qpi.unschedulable_plugins.update(plugins)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    if plugins:
        q.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert q.where(pod.key) == BACKOFF_Q
    return qpi


# --- backoff_queue_test.go -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("initial", "maximum", "attempts", "want"),
    [
        (1, 32, 0, 0),
        (1, 32, 16, 32),
        (1, 2**31 - 1, 32, 2**31 - 1),
        (1, 2**63 - 1, 64, 2**63 - 1),
    ],
    ids=["no backoff", "normal", "overflow_32bit", "overflow_64bit"],
)
def test_calculate_backoff_duration(initial: int, maximum: int, attempts: int, want: int) -> None:
    """TestBackoffQueue_calculateBackoffDuration (durations in seconds here, nanoseconds there)."""
    bq = new_bq(FakeClock(), initial_backoff=float(initial), max_backoff=float(maximum))
    assert bq.backoff_duration(attempts) == float(want)


@ON_OFF
@pytest.mark.parametrize(
    ("in_backoff", "want"),
    [
        ([], []),
        (["pod0", "pod1"], ["pod0"]),
        (["pod2", "pod3"], ["pod2"]),
        (["pod0", "pod1", "pod2", "pod3"], ["pod0", "pod2"]),
        (["pod0", "pod2"], ["pod0", "pod2"]),
        (["pod1", "pod3"], []),
    ],
    ids=[
        "Both queues empty, no pods moved to activeQ",
        "Pods only in backoffQ, some pods moved to activeQ",
        "Pods only in errorBackoffQ, some pods moved to activeQ",
        "Pods in both queues, some pods moved to activeQ",
        "Pods in both queues, all pods moved to activeQ",
        "Pods in both queues, no pods moved to activeQ",
    ],
)
async def test_pop_all_backoff_completed(enabled: bool, in_backoff: list[str], want: list[str]) -> None:
    """TestBackoffQueue_popEachBackoffCompleted: podBackoffQ's completed pods, then podErrorBackoffQ's; the clock is
    not on a window boundary (upstream's fake clock starts at time.Now())."""
    clock = FakeClock()
    await clock.advance(10.25)
    now = clock.monotonic()
    pods = {
        "pod0": queued("pod0", timestamp=now - 2),
        "pod1": queued("pod1", timestamp=now + 1),
        "pod2": queued("pod2", timestamp=now - 2, plugin=False),
        "pod3": queued("pod3", timestamp=now + 1, plugin=False),
    }
    bq = new_bq(clock, enabled)
    for name in in_backoff:
        bq.add(pods[name])
    assert [qpi.pod_info.name for qpi in bq.pop_all_backoff_completed()] == want
    assert len(bq) == len(in_backoff) - len(want)


@ON_OFF
async def test_backoff_queue_ordering(enabled: bool) -> None:
    """TestBackoffQueueOrdering: with the feature on, pods whose backoff ends in one window leave by priority.

    Off, by expiry alone: pod3 and pod4 expire at the same instant, a tie upstream's Go heap leaves unspecified (its
    table lists pod4 first) and kubeplane's heaps break by insertion order (pod3 first)."""
    clock = FakeClock()
    await clock.advance(10)  # aligned with the ordering window
    t = clock.monotonic()
    pods = [
        queued("pod0", timestamp=t, priority=1),
        queued("pod1", timestamp=t - 1, priority=1),
        queued("pod2", timestamp=t - 2 + 0.001, priority=2),
        queued("pod3", timestamp=t - 2, priority=1),
        queued("pod4", timestamp=t - 2, priority=2),
        queued("pod5", timestamp=t - 3, priority=1),
    ]
    bq = new_bq(clock, enabled)
    for qpi in pods:
        bq.add(qpi)
    got = [qpi.pod_info.name for qpi in bq.pop_all_backoff_completed()]
    assert got == (["pod5", "pod4", "pod2", "pod3"] if enabled else ["pod5", "pod3", "pod4", "pod2"])


@pytest.mark.parametrize(
    ("enabled", "now", "timestamp", "attempts", "backing_off"),
    [
        (True, 10.5, 9.25, 1, True),  # expiry 10.25 -> window 10, the current one
        (True, 11.0, 9.25, 1, False),  # window 10 is over
        (True, 10.99, 9.0, 1, True),  # expiry exactly on the current window's start: still backing off
        (True, 10.0, 5.0, 0, False),  # never attempted: no backoff
        (False, 10.25, 9.25, 1, True),  # off: expiry == now is still backing off (not Before)
        (False, 10.5, 9.25, 1, False),
    ],
    ids=[
        "expiry inside the current window",
        "expiry window over",
        "expiry on the window start",
        "never attempted",
        "disabled, expiry now",
        "disabled, expiry past",
    ],
)
async def test_is_pod_backing_off(
    enabled: bool, now: float, timestamp: float, attempts: int, backing_off: bool
) -> None:
    """isPodBackingoff: ``!alignToWindow(timestamp + backoff).Before(alignToWindow(now))``."""
    clock = FakeClock()
    await clock.advance(now)
    bq = new_bq(clock, enabled)
    assert bq.is_backing_off(queued("p", timestamp=timestamp, attempts=attempts)) is backing_off


def test_backoff_time_is_aligned_and_cached() -> None:
    """getBackoffTime: truncated to the window (feature on), cached in BackoffExpiration; 0 attempts: no expiry."""
    bq = new_bq(FakeClock())
    qpi = queued("p", timestamp=3.75, attempts=2)
    assert bq.backoff_time(qpi) == 5.0 == qpi.backoff_expiration
    qpi.timestamp = 100.0  # the cache answers until the queue clears it
    assert bq.backoff_time(qpi) == 5.0
    assert new_bq(FakeClock(), False).backoff_time(queued("q", timestamp=3.75, attempts=2)) == 5.75
    never = queued("n", timestamp=3.75, attempts=0)
    assert bq.backoff_time(never) == NO_BACKOFF
    assert never.backoff_expiration is None


def test_add_get_has_delete_update_span_both_heaps() -> None:
    """backoffQueue add/get/has/delete/update/len/lenBackoff: an error goes to podErrorBackoffQ, a rejection to
    podBackoffQ, a pod is never in both, and lookups find it in either."""
    bq = new_bq(FakeClock())
    rejected, error = queued("r", timestamp=0.0), queued("e", timestamp=0.0, plugin=False)
    bq.add(rejected)
    bq.add(error)
    assert (len(bq), bq.len_backoff()) == (2, 1)
    assert bq.get("ns/r") is rejected
    assert bq.get("ns/e") is error
    assert "ns/e" in bq
    error.unschedulable_plugins.add("plugin")  # re-added as a rejection: moves heaps
    bq.add(error)
    assert (len(bq), bq.len_backoff()) == (2, 2)
    error.pod_info = changed(error.pod_info, priority=5)
    assert bq.update(error)
    assert not bq.update(queued("absent", timestamp=0.0))
    assert bq.delete("ns/e") is error
    assert bq.delete("ns/e") is None
    assert [qpi.pod_info.name for qpi in bq] == ["r"]


# --- scheduling_queue_test.go ---------------------------------------------------------------------------------------


@ON_OFF
def test_pop(enabled: bool) -> None:
    """TestPriorityQueue_Pop: activeQ first; then, with the feature on, podBackoffQ's head though its backoff is not
    over; never the error backoff queue nor unschedulablePods."""
    q = new_queue(FakeClock(), enabled)
    to_backoff(q, make_pod("hpp", 100), "plugin")
    to_backoff(q, make_pod("hpp2", 100))  # an error: podErrorBackoffQ
    q.add(make_pod("unsched"))
    unsched = pop(q)
    unsched.unschedulable_plugins.add("plugin")
    q.add_unschedulable_if_not_present(unsched, q.scheduling_cycle())
    q.add(make_pod("mpp", 50))
    got = []
    while (qpi := q.pop_nowait()) is not None:
        got.append(qpi.pod_info.name)
    assert got == (["mpp", "hpp"] if enabled else ["mpp"])
    assert q.popped_from_backoff == (1 if enabled else 0)


def test_pop_from_backoff_q_bookkeeping() -> None:
    """unlockedPop: a pod taken from backoffQ is moved in flight as an activeQ pop is (attempts, cycle, in-flight,
    rejectors and the cached expiry cleared; the caller's next failure recomputes the backoff)."""
    q = new_queue(FakeClock())
    qpi = to_backoff(q, make_pod("p"), "plugin")
    assert qpi.backoff_expiration == 1.0
    cycle = q.scheduling_cycle()
    got = pop(q)
    assert got is qpi
    assert (got.attempts, q.scheduling_cycle(), got.unschedulable_plugins, got.backoff_expiration) == (
        2,
        cycle + 1,
        set(),
        None,
    )
    assert [p.name for p in q.in_flight_pods()] == ["p"]
    got.unschedulable_plugins.add("plugin")
    q.add_unschedulable_if_not_present(got, q.scheduling_cycle())
    q.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert q.backoff_expiry(got) == 2.0  # attempts 2: 2 s from t=0


async def test_pop_from_backoff_q_takes_the_earliest_window_then_priority() -> None:
    """lessBackoffCompletedWithPriority: podBackoffQ pops by aligned expiry, then as activeQ would (priority)."""
    clock = FakeClock()
    q = new_queue(clock)
    low = to_backoff(q, make_pod("low", 1), "plugin")
    await clock.advance(0.5)
    high = to_backoff(q, make_pod("high", 100), "plugin")
    assert q.backoff_expiry(low) == q.backoff_expiry(high) == 1.0  # 1.0 and 1.5: one window
    await clock.advance(0.5)
    later = to_backoff(q, make_pod("later", 1000), "plugin")
    assert q.backoff_expiry(later) == 2.0
    assert [pop(q).pod_info.name for _ in range(3)] == ["high", "low", "later"]


@ON_OFF
async def test_pop_wakes_when_a_pod_enters_backoff_q(enabled: bool) -> None:
    """Upstream broadcasts when a pod goes to backoffQ with the feature on, so a Pop waiting on an empty activeQ
    takes it; off, the waiter sleeps until the backoff flush."""
    clock = FakeClock()
    q = new_queue(clock, enabled)
    q.add(make_pod("p"))
    qpi = pop(q)
    qpi.unschedulable_plugins.add("plugin")
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    q.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT)
    for _ in range(3):
        await asyncio.sleep(0)
    assert waiter.done() is enabled
    if enabled:
        assert waiter.result() is qpi
    q.close()
    if not enabled:
        assert await asyncio.wait_for(waiter, 1) is None


async def test_pop_does_not_take_an_error_backoff() -> None:
    """popBackoff never pops podErrorBackoffQ (lenBackoff counts podBackoffQ only): errors keep their backoff."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(make_pod("err"))
    waiter = asyncio.create_task(q.pop())
    first = await asyncio.wait_for(waiter, 1)
    assert first is not None
    waiter = asyncio.create_task(q.pop())
    q.add_unschedulable_if_not_present(first, q.scheduling_cycle())  # no plugin: podErrorBackoffQ
    await asyncio.sleep(0)
    assert not waiter.done()
    assert q.where("ns/err") == BACKOFF_Q
    await clock.advance(2)
    q.flush_backoff_q_completed()
    assert await asyncio.wait_for(waiter, 1) is first


@ON_OFF
def test_move_to_backoff_q_runs_pre_enqueue(enabled: bool) -> None:
    """TestPriorityQueue_moveToBackoffQ: with the feature on PreEnqueue runs before a pod enters backoffQ, and a
    rejected pod stays gated in unschedulablePods; off, it enters backoffQ and PreEnqueue waits for activeQ."""
    deny = Deny()
    q = new_queue(FakeClock(), enabled, pre_enqueue=deny)
    q.add(make_pod("p"))
    qpi = pop(q)
    qpi.unschedulable_plugins.add("plugin")
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    deny.names.add("p")
    q.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT)
    assert q.where("ns/p") == (UNSCHEDULABLE_Q if enabled else BACKOFF_Q)
    assert (qpi.gated, qpi.gating_plugin) == ((True, "Deny") if enabled else (False, ""))


@ON_OFF
async def test_move_from_backoff_q_skips_pre_enqueue(enabled: bool) -> None:
    """TestPriorityQueue_moveToActiveQ (movesFromBackoffQ) / flushBackoffQCompleted / Activate: a pod going from
    backoffQ to activeQ does not run PreEnqueue again with the feature on; off, it does (and may be gated)."""
    clock = FakeClock()
    deny = Deny()
    q = new_queue(clock, enabled, pre_enqueue=deny)
    to_backoff(q, make_pod("flushed"), "plugin")
    to_backoff(q, make_pod("activated"), "plugin")
    deny.names.update({"flushed", "activated"})
    calls = deny.calls
    q.activate([make_pod("activated")])
    await clock.advance(2)
    q.flush_backoff_q_completed()
    assert deny.calls - calls == (0 if enabled else 2)
    want = ACTIVE_Q if enabled else UNSCHEDULABLE_Q
    assert (q.where("ns/flushed"), q.where("ns/activated")) == (want, want)


async def test_flush_runs_on_whole_seconds() -> None:
    """waitUntilAlignedWithOrderingWindow: Run flushes backoffQ at the next whole second, then every second; a pod
    leaves once the window holding its expiry is over."""
    clock = FakeClock()
    await clock.advance(0.25)
    q = new_queue(clock)
    q.add(make_pod("err"))
    q.add(make_pod("other"))
    err, other = pop(q), pop(q)
    q.add_unschedulable_if_not_present(err, q.scheduling_cycle())  # error backoff: expiry 1.25 -> window 1
    runner = asyncio.create_task(q.run())
    for _ in range(3):
        await asyncio.sleep(0)
    await clock.advance(1.75 - 0.25)  # t = 1.75: the flush at 1.0 ran, window 1 is not over
    assert q.where("ns/err") == BACKOFF_Q
    await clock.advance(0.25)  # t = 2.0: flushed
    assert q.where("ns/err") == ACTIVE_Q
    q.done(other.pod_info.uid)
    q.close()
    await asyncio.wait_for(runner, 1)


def test_activate_from_backoff_q_and_force_activate_label() -> None:
    """Activate: a pod in backoffQ goes to activeQ at once (deleted from backoffQ first)."""
    q = new_queue(FakeClock())
    to_backoff(q, make_pod("p"), "plugin")
    q.activate([make_pod("p")])
    assert q.where("ns/p") == ACTIVE_Q
    q.move_all_to_active_or_backoff_queue(EVENT_FORCE_ACTIVATE)  # nothing left to move
    assert q.pending_pods()[1] == "activeQ:1; backoffQ:0; unschedulablePods:0"
