"""The scheduling queue against upstream scheduling_queue_test.go, backoff_queue_test.go, nominator and heap tests.

Each test names the upstream behaviour it pins. Time is a FakeClock (monotonic starts at 0): nothing sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.backend.heap import KeyedHeap, SortKeyHeap
from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.backend.queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE_Q, SchedulingQueue
from kubeplane.scheduler.backend.queue_events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    is_pod_updated,
    match_cluster_events,
    pod_update_events,
)
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo, QueuedPodInfo

pytestmark = pytest.mark.timeout(30)

NODE_ADD = ClusterEvent("Node", ActionType.ADD)
NODE_LABEL = ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL)
NODE_TAINT = ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT)
NODE_UPDATE = ClusterEvent("Node", ActionType.update())
GATES_GONE = ClusterEvent("Pod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)


def make_pod(
    name: str,
    priority: int = 0,
    *,
    ns: str = "ns",
    labels: dict[str, str] | None = None,
    gates: list[str] | None = None,
    nominated: str = "",
    node: str = "",
    affinity: dict[str, Any] | None = None,
    cpu: str = "100m",
    status: dict[str, Any] | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {
        "priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
    }
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    if node:
        spec["nodeName"] = node
    if affinity:
        spec["affinity"] = affinity
    st_: dict[str, Any] = dict(status or {})
    if nominated:
        st_["nominatedNodeName"] = nominated
    meta = {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "labels": labels or {}}
    return PodInfo({"metadata": meta, "spec": spec, "status": st_})


def changed(pod: PodInfo, **spec: Any) -> PodInfo:
    return PodInfo({**pod.pod, "spec": {**pod.spec, **spec}})


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher priority first, then earlier timestamp."""
    pa, pb = a.pod_info.priority, b.pod_info.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def gates(pod: PodInfo) -> Status | None:
    """The SchedulingGates PreEnqueue plugin."""
    if pod.spec.get("schedulingGates"):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("waiting for scheduling gates",), "SchedulingGates")
    return None


def new_queue(clock: FakeClock, **kwargs: Any) -> SchedulingQueue:
    return SchedulingQueue(priority_less, clock, **kwargs)


def fail(q: SchedulingQueue, qpi: QueuedPodInfo, *plugins: str, pending: tuple[str, ...] = ()) -> None:
    """Upstream's handleSchedulingFailure: record the rejectors and put the pod back in its cycle."""
    qpi.unschedulable_plugins.update(plugins)
    qpi.pending_plugins.update(pending)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())


def pop(q: SchedulingQueue) -> QueuedPodInfo:
    qpi = q.pop_nowait()
    assert qpi is not None
    return qpi


# --- activeQ ---------------------------------------------------------------------------------------------------


def test_add_pops_by_less() -> None:
    """TestPriorityQueue_Add: the head is the highest-priority pod; equal pods come out FIFO."""
    q = new_queue(FakeClock())
    low, mid1, mid2, high = make_pod("low", 1), make_pod("mid1", 5), make_pod("mid2", 5), make_pod("high", 10)
    for p in (low, mid1, mid2, high):
        q.add(p)
    assert len(q) == 4
    popped = [pop(q) for _ in range(4)]
    assert [p.pod_info.name for p in popped] == ["high", "mid1", "mid2", "low"]
    assert all(p.attempts == 1 and p.initial_attempt_timestamp == 0.0 for p in popped)
    assert q.scheduling_cycle() == 4
    assert q.pop_nowait() is None


async def test_pop_blocks_until_add() -> None:
    """TestPriorityQueue_Pop: a waiting pop is woken by add."""
    q = new_queue(FakeClock())
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    q.add(make_pod("p"))
    got = await asyncio.wait_for(waiter, 1)
    assert got is not None
    assert got.pod_info.name == "p"


async def test_close_wakes_pop() -> None:
    """TestPriorityQueue_Close: pop returns None once closed; queued pods are still handed out first."""
    q = new_queue(FakeClock())
    waiters = [asyncio.create_task(q.pop()) for _ in range(2)]
    await asyncio.sleep(0)
    q.close()
    assert await asyncio.wait_for(asyncio.gather(*waiters), 1) == [None, None]
    q2 = new_queue(FakeClock())
    q2.add(make_pod("p"))
    q2.close()
    first = await q2.pop()
    assert first is not None
    assert await q2.pop() is None
    assert q2.closed


async def test_two_poppers_each_get_one_pod() -> None:
    q = new_queue(FakeClock())
    waiters = [asyncio.create_task(q.pop()) for _ in range(2)]
    await asyncio.sleep(0)
    q.add(make_pod("a"))
    q.add(make_pod("b"))
    got = await asyncio.wait_for(asyncio.gather(*waiters), 1)
    assert sorted(p.pod_info.name for p in got if p is not None) == ["a", "b"]


def test_in_flight_pods_until_done() -> None:
    """Done: popped pods are in flight until done() or put back."""
    q = new_queue(FakeClock())
    q.add(make_pod("a"))
    q.add(make_pod("b"))
    a, b = pop(q), pop(q)
    assert {p.name for p in q.in_flight_pods()} == {"a", "b"}
    q.done(a.pod_info.uid)
    fail(q, b, "Fit")
    assert q.in_flight_pods() == []
    q.done("unknown")


def test_pop_clears_rejectors() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(make_pod("p"))
    qpi = pop(q)
    fail(q, qpi, "Fit", pending=("DRA",))
    q.move_all_to_active_or_backoff_queue(EVENT_FORCE_ACTIVATE)
    q.flush_backoff_q_completed()
    assert q.where("ns/p") == BACKOFF_Q
    qpi.timestamp = -100.0  # expire the backoff
    q.flush_backoff_q_completed()
    again = pop(q)
    assert again is qpi
    assert (again.attempts, again.unschedulable_plugins, again.pending_plugins) == (2, set(), set())


# --- backoff ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempts", "want"),
    [(0, 0.0), (1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (6, 10.0), (1000, 10.0)],
)
def test_backoff_duration(attempts: int, want: float) -> None:
    """backoff_queue_test.go TestBackoffQueue_calculateBackoffDuration: 1s doubling, capped at 10s."""
    assert new_queue(FakeClock()).backoff_duration(attempts) == want


async def test_backoff_flow() -> None:
    """TestBackOffFlow: each failed attempt backs off 1s, 2s, 4s, 8s, then 10s; an early flush keeps the pod, and
    (SchedulerPopFromBackoffQ) so does one inside the one-second window where the backoff ends."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(make_pod("test-pod"))
    for want in (1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0):
        start = clock.monotonic()
        qpi = pop(q)
        fail(q, qpi, "fooPlugin")
        assert q.where("ns/test-pod") == UNSCHEDULABLE_Q
        q.move_all_to_active_or_backoff_queue(EVENT_UNSCHEDULABLE_TIMEOUT)
        assert q.where("ns/test-pod") == BACKOFF_Q
        assert q.backoff_expiry(qpi) - start == want
        await clock.advance(0.5)
        q.flush_backoff_q_completed()
        assert q.where("ns/test-pod") == BACKOFF_Q
        await clock.advance(want)  # expiry reached, but inside the current window: still backing off
        q.flush_backoff_q_completed()
        assert q.where("ns/test-pod") == BACKOFF_Q
        await clock.advance(0.5)  # the window of the expiry is over
        q.flush_backoff_q_completed()
        assert q.where("ns/test-pod") == ACTIVE_Q


async def test_backoff_q_is_ordered_by_expiry() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    for name in ("a", "b"):
        q.add(make_pod(name))
    a, b = pop(q), pop(q)
    b.attempts = 3  # backs off 4s
    fail(q, b)  # errors go to backoff
    fail(q, a)  # 1s
    assert {p.name for p in q.pods_in_backoff_q()} == {"a", "b"}
    await clock.advance(2)  # a's window [1, 2) is over, b's [4, 5) is not
    q.flush_backoff_q_completed()
    assert (q.where("ns/a"), q.where("ns/b")) == (ACTIVE_Q, BACKOFF_Q)
    assert a.consecutive_errors == 1


# --- AddUnschedulableIfNotPresent --------------------------------------------------------------------------------


def test_add_unschedulable_if_not_present() -> None:
    """TestPriorityQueue_AddUnschedulableIfNotPresent(_Backoff): rejected -> unschedulable; an error -> backoff;
    a move request during the pod's cycle -> backoff; a Pending rejection with a move request -> activeQ."""
    clock = FakeClock()
    q = new_queue(clock, events_for_plugins={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    for name in ("rejected", "error", "moved", "pending"):
        q.add(make_pod(name))
    rejected, error = pop(q), pop(q)
    fail(q, rejected, "Fit")
    fail(q, error)
    assert q.where("ns/rejected") == UNSCHEDULABLE_Q
    assert q.where("ns/error") == BACKOFF_Q
    assert rejected.consecutive_errors == 0
    assert error.consecutive_errors == 1
    with pytest.raises(ValueError, match="already present in the unschedulable queue"):
        q.add_unschedulable_if_not_present(rejected, q.scheduling_cycle())

    moved = pop(q)
    cycle = q.scheduling_cycle()
    q.move_all_to_active_or_backoff_queue(NODE_ADD)  # while "moved" is being scheduled
    moved.unschedulable_plugins.add("Fit")
    q.add_unschedulable_if_not_present(moved, cycle)
    assert q.where("ns/moved") == BACKOFF_Q
    assert q.where("ns/rejected") == BACKOFF_Q  # it was waiting for Fit's event

    pending = pop(q)
    cycle = q.scheduling_cycle()
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    pending.pending_plugins.add("DRA")
    q.add_unschedulable_if_not_present(pending, cycle)
    assert q.where("ns/pending") == ACTIVE_Q
    assert q.pending_pods()[1] == "activeQ:1; backoffQ:3; unschedulablePods:0"


def test_no_move_request_from_an_event_nobody_registered() -> None:
    q = new_queue(FakeClock(), events_for_plugins={"Fit": [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("p"))
    qpi = pop(q)
    cycle = q.scheduling_cycle()
    q.move_all_to_active_or_backoff_queue(ClusterEvent("PersistentVolume", ActionType.ADD))
    fail(q, qpi, "Fit")
    assert cycle == q.scheduling_cycle()
    assert q.where("ns/p") == UNSCHEDULABLE_Q


# --- MoveAllToActiveOrBackoffQueue ------------------------------------------------------------------------------


def skip_for_b(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP if pod.name == "b" else QueueingHint.QUEUE


def boom(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("hint failed")


EVENTS = {
    "Fit": [ClusterEventWithHint(NODE_ADD), ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE))],
    "Taint": [ClusterEventWithHint(NODE_TAINT, skip_for_b)],
    "Labels": [ClusterEventWithHint(NODE_LABEL, boom)],
    "DRA": [ClusterEventWithHint(ClusterEvent("ResourceClaim", ActionType.ADD))],
}


def unschedulable_queue(clock: FakeClock, rejectors: dict[str, tuple[str, ...]]) -> SchedulingQueue:
    q = new_queue(clock, events_for_plugins=EVENTS, pre_enqueue=gates)
    for name in rejectors:
        q.add(make_pod(name))
    for _ in rejectors:
        qpi = pop(q)
        plugins = rejectors[qpi.pod_info.name]
        fail(q, qpi, *(p for p in plugins if p != "DRA"), pending=tuple(p for p in plugins if p == "DRA"))
    assert len(q.unschedulable_pods()) == len(rejectors)
    return q


@pytest.mark.parametrize(
    ("event", "moved"),
    [
        pytest.param(NODE_ADD, {"fit", "fit+taint"}, id="Node/Add moves pods Fit rejected"),
        pytest.param(NODE_TAINT, {"a", "fit+taint"}, id="hint QUEUE_SKIP keeps b"),
        pytest.param(NODE_LABEL, {"labels"}, id="an erroring hint counts as QUEUE"),
        pytest.param(NODE_UPDATE, set(), id="a generic Node/Update is wider than UpdateNodeTaint"),
        pytest.param(ClusterEvent("AssignedPod", ActionType.DELETE), {"fit", "fit+taint"}, id="Pod covers AssignedPod"),
        pytest.param(ClusterEvent("ResourceClaim", ActionType.ADD), {"dra"}, id="pending plugin"),
        pytest.param(ClusterEvent("PersistentVolume", ActionType.ADD), set(), id="event of no interest"),
        pytest.param(
            EVENT_UNSCHEDULABLE_TIMEOUT, {"fit", "a", "b", "fit+taint", "labels", "dra", "nobody"}, id="wildcard"
        ),
    ],
)
def test_move_all_respects_registered_events(event: ClusterEvent, moved: set[str]) -> None:
    """TestPriorityQueue_MoveAllToActiveOrBackoffQueue(WithQueueingHint): only pods rejected by a plugin that
    registered the event (and whose hint says QUEUE) move; to backoffQ while backing off."""
    clock = FakeClock()
    rejectors = {
        "fit": ("Fit",),
        "a": ("Taint",),
        "b": ("Taint",),
        "fit+taint": ("Fit", "Taint"),
        "labels": ("Labels",),
        "dra": ("DRA",),
        "nobody": ("Unregistered",),
    }
    q = unschedulable_queue(clock, rejectors)
    q.move_all_to_active_or_backoff_queue(event)
    got = {name for name in rejectors if q.where(f"ns/{name}") != UNSCHEDULABLE_Q}
    assert got == moved
    # Still backing off (failed at t=0): backoffQ, except a QUEUE from a Pending plugin -> activeQ at once
    # (a wildcard event asks no plugin, so it always respects the backoff).
    for name in moved:
        immediate = name == "dra" and event != EVENT_UNSCHEDULABLE_TIMEOUT
        assert q.where(f"ns/{name}") == (ACTIVE_Q if immediate else BACKOFF_Q)


async def test_moved_pods_skip_backoff_once_expired() -> None:
    clock = FakeClock()
    q = unschedulable_queue(clock, {"fit": ("Fit",)})
    await clock.advance(2)  # failed at 0: backoff ends at 1, its window at 2
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert q.where("ns/fit") == ACTIVE_Q


async def test_move_wakes_pop() -> None:
    clock = FakeClock()
    q = unschedulable_queue(clock, {"fit": ("Fit",)})
    await clock.advance(5)
    waiter = asyncio.create_task(q.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    got = await asyncio.wait_for(waiter, 1)
    assert got is not None
    assert got.pod_info.name == "fit"


def test_precheck_filters_candidates() -> None:
    q = unschedulable_queue(FakeClock(), {"x": ("Fit",), "y": ("Fit",)})
    q.move_all_to_active_or_backoff_queue(NODE_ADD, precheck=lambda p: p.name == "x")
    assert (q.where("ns/x"), q.where("ns/y")) == (BACKOFF_Q, UNSCHEDULABLE_Q)


def test_wildcard_event_for_one_pod() -> None:
    """isPodWorthRequeuing: a wildcard event with a pod in new_obj is for that pod only."""
    q = unschedulable_queue(FakeClock(), {"x": ("Fit",), "y": ("Fit",)})
    target = q.get("ns/x")
    assert target is not None
    q.move_all_to_active_or_backoff_queue(EVENT_FORCE_ACTIVATE, None, target.pod_info)
    assert (q.where("ns/x"), q.where("ns/y")) == (BACKOFF_Q, UNSCHEDULABLE_Q)


async def test_activate() -> None:
    clock = FakeClock()
    q = unschedulable_queue(clock, {"x": ("Fit",), "y": ("Fit",)})
    q.activate([make_pod("x"), make_pod("unknown")])
    assert (q.where("ns/x"), q.where("ns/y")) == (ACTIVE_Q, UNSCHEDULABLE_Q)
    assert q.where("ns/unknown") is None


# --- unschedulable flush and run() --------------------------------------------------------------------------------


async def test_flush_unschedulable_pods_left_over() -> None:
    """TestHighPriorityFlushUnschedulablePodsLeftover: after 5 minutes unschedulable pods go back (by priority)."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(make_pod("low", 1))
    q.add(make_pod("high", 100))
    for qpi in (pop(q), pop(q)):
        fail(q, qpi, "Fit")
    await clock.advance(299)
    q.flush_unschedulable_pods_left_over()
    assert len(q.unschedulable_pods()) == 2
    await clock.advance(2)
    q.flush_unschedulable_pods_left_over()
    assert [pop(q).pod_info.name for _ in range(2)] == ["high", "low"]


async def test_run_flushes_on_the_clock() -> None:
    """Run: backoffQ at every whole second, unschedulablePods every 30 s (so a pod waits at most 5 min + 30 s)."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(make_pod("err"))
    q.add(make_pod("stuck"))
    fail(q, pop(q))  # -> backoffQ for 1s
    fail(q, pop(q), "Fit")  # -> unschedulable
    runner = asyncio.create_task(q.run())
    for _ in range(3):
        await asyncio.sleep(0)
    await clock.advance(1)  # the backoff ends at 1, in the window [1, 2): flushed at 2
    assert q.where("ns/err") == BACKOFF_Q
    await clock.advance(1)
    assert q.where("ns/err") == ACTIVE_Q
    pop(q)
    await clock.advance(299)
    assert q.where("ns/stuck") == UNSCHEDULABLE_Q
    await clock.advance(31)
    assert q.where("ns/stuck") == ACTIVE_Q
    q.close()
    await asyncio.wait_for(runner, 1)


# --- PreEnqueue gates --------------------------------------------------------------------------------------------


def test_gated_pod_waits_in_unschedulable() -> None:
    """TestPriorityQueue_Add with PreEnqueue: a gated pod is never popped and only its gate's events move it."""
    q = new_queue(
        FakeClock(),
        pre_enqueue=gates,
        events_for_plugins={"SchedulingGates": [ClusterEventWithHint(GATES_GONE)], **EVENTS},
    )
    gated = make_pod("gated", gates=["example.com/gate"])
    q.add(gated)
    qpi = q.get("ns/gated")
    assert qpi is not None
    assert (qpi.gated, qpi.gating_plugin, qpi.unschedulable_plugins) == (True, "SchedulingGates", {"SchedulingGates"})
    assert q.where("ns/gated") == UNSCHEDULABLE_Q
    assert q.pop_nowait() is None
    for event in (NODE_ADD, EVENT_UNSCHEDULABLE_TIMEOUT):
        q.move_all_to_active_or_backoff_queue(event)
        assert q.where("ns/gated") == UNSCHEDULABLE_Q
    q.move_all_to_active_or_backoff_queue(GATES_GONE)  # gate still there: PreEnqueue runs again and says no
    assert q.where("ns/gated") == UNSCHEDULABLE_Q
    assert q.get("ns/gated") is qpi
    q.update(gated, changed(gated, schedulingGates=[]))
    assert q.where("ns/gated") == ACTIVE_Q
    popped = pop(q)
    assert (popped is qpi, popped.gated, popped.gating_plugin) == (True, False, "")


def test_update_of_a_gated_pod_keeping_a_gate_stays_gated() -> None:
    q = new_queue(FakeClock(), pre_enqueue=gates)
    gated = make_pod("g", gates=["a", "b"])
    q.add(gated)
    q.update(gated, changed(gated, schedulingGates=[{"name": "b"}]))
    assert q.where("ns/g") == UNSCHEDULABLE_Q
    assert len(q) == 1


# --- Update / Delete -------------------------------------------------------------------------------------------


async def test_update() -> None:
    """TestPriorityQueue_Update: in place in activeQ/backoffQ; unschedulable pods move when the update may
    help; status-only updates do not; unknown pods are added."""
    clock = FakeClock()
    q = new_queue(clock)
    a, b = make_pod("a", 1), make_pod("b", 2)
    q.add(a)
    q.add(b)
    a2 = changed(a, priority=10)
    q.update(a, a2)
    head = pop(q)
    assert head.pod_info is a2
    assert q.where("ns/b") == ACTIVE_Q

    fail(q, head)  # error: backoffQ
    a3 = changed(a2, priority=11)
    q.update(a2, a3)
    assert q.where("ns/a") == BACKOFF_Q
    got = q.get("ns/a")
    assert got is not None
    assert got.pod_info is a3

    c = make_pod("c")
    q.add(c)
    while (qpi := q.pop_nowait()) is not None:
        if qpi.pod_info.name == "c":
            fail(q, qpi, "Fit")
    status_only = PodInfo({**c.pod, "status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}})
    q.update(c, status_only)
    assert q.where("ns/c") == UNSCHEDULABLE_Q
    labelled = PodInfo({**c.pod, "metadata": {**c.pod["metadata"], "labels": {"x": "y"}}})
    q.update(status_only, labelled)
    assert q.where("ns/c") == BACKOFF_Q  # still backing off
    q.update(None, make_pod("new"))
    assert q.where("ns/new") == ACTIVE_Q


async def test_update_of_unschedulable_pod_after_backoff_goes_active() -> None:
    clock = FakeClock()
    q = unschedulable_queue(clock, {"c": ("Fit",)})
    await clock.advance(2)
    c = make_pod("c")
    q.update(c, changed(c, priority=3))
    assert q.where("ns/c") == ACTIVE_Q


def test_delete() -> None:
    """TestPriorityQueue_Delete: from whichever sub-queue holds the pod, nomination included."""
    q = unschedulable_queue(FakeClock(), {"u": ("Fit",)})
    q.add(make_pod("b"))
    fail(q, pop(q))
    q.add(make_pod("a", nominated="n1"))
    assert [p.name for p in q.nominated_pods_for_node("n1")] == ["a"]
    for name in ("a", "b", "u"):
        assert make_pod(name) in q
        q.delete(make_pod(name))
        assert make_pod(name) not in q
    assert len(q) == 0
    assert q.nominated_pods_for_node("n1") == []
    q.delete(make_pod("never"))


# --- assigned pod events ------------------------------------------------------------------------------------------

AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
        ]
    }
}
POD_EVENTS = {
    "InterPodAffinity": [ClusterEventWithHint(ClusterEvent("Pod", ActionType.ADD | ActionType.UPDATE_POD_LABEL))],
    "PodTopologySpread": [ClusterEventWithHint(ClusterEvent("Pod", ActionType.ADD))],
    "Fit": [ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN))],
}


def assigned_queue(clock: FakeClock) -> SchedulingQueue:
    q = new_queue(clock, events_for_plugins=POD_EVENTS)
    pods = [
        (make_pod("wants-db", affinity=AFFINITY), "InterPodAffinity"),
        (make_pod("wants-db-other-ns", ns="other", affinity=AFFINITY), "InterPodAffinity"),
        (make_pod("spread"), "PodTopologySpread"),
        (make_pod("spread-other-ns", ns="other"), "PodTopologySpread"),
        (make_pod("fit"), "Fit"),
    ]
    for pod, _ in pods:
        q.add(pod)
    by_name = {pod.key: plugin for pod, plugin in pods}
    while (qpi := q.pop_nowait()) is not None:
        fail(q, qpi, by_name[qpi.key])
    return q


def test_assigned_pod_added() -> None:
    """TestPriorityQueue_AssignedPodAdded: only pods with a cross-topology term the pod may satisfy move."""
    q = assigned_queue(FakeClock())
    q.assigned_pod_added(make_pod("db", labels={"app": "db"}, node="n1"))
    assert {p.name for p in q.pods_in_backoff_q()} == {"wants-db", "spread"}
    q2 = assigned_queue(FakeClock())
    q2.assigned_pod_added(make_pod("web", labels={"app": "web"}, node="n1"))
    assert {p.name for p in q2.pods_in_backoff_q()} == {"spread"}


def test_assigned_pod_updated() -> None:
    """TestPriorityQueue_AssignedPodUpdated: a label change helps affinity pods; a scale down helps anyone."""
    q = assigned_queue(FakeClock())
    old = make_pod("db", node="n1", labels={"app": "web"})
    q.assigned_pod_updated(old, make_pod("db", node="n1", labels={"app": "db"}))
    assert {p.name for p in q.pods_in_backoff_q()} == {"wants-db"}
    q.assigned_pod_updated(old, make_pod("db", node="n1", labels={"app": "web"}, cpu="50m"))
    assert {p.name for p in q.pods_in_backoff_q()} == {"wants-db", "fit"}


def test_assigned_pod_add_with_explicit_event_matches_pod_registrations() -> None:
    q = assigned_queue(FakeClock())
    q.move_all_to_active_or_backoff_queue(EVENT_ASSIGNED_POD_ADD)
    assert {p.name for p in q.pods_in_backoff_q()} == {
        "wants-db",
        "wants-db-other-ns",
        "spread",
        "spread-other-ns",
    }


# --- nominator ---------------------------------------------------------------------------------------------------


def test_nominated_pods() -> None:
    """TestPriorityQueue_NominatedPodsForNode / UpdateNominatedPod / DeleteNominatedPodIfExists."""
    q = new_queue(FakeClock())
    a = make_pod("a", nominated="node1")
    b = make_pod("b")
    q.add(a)  # from status.nominatedNodeName
    q.add(b)
    q.add_nominated_pod(b, "node1")
    assert q.has_nominated_pods()
    assert [p.name for p in q.nominated_pods_for_node("node1")] == ["a", "b"]
    b2 = changed(b, priority=7)
    q.update(b, b2)  # neither version has status.nominatedNodeName: the nomination stays
    assert q.nominated_pods_for_node("node1")[1] is b2
    a2 = make_pod("a", nominated="node2")
    q.update(a, a2)
    assert [p.name for p in q.nominated_pods_for_node("node1")] == ["b"]
    assert [p.name for p in q.nominated_pods_for_node("node2")] == ["a"]
    q.add_nominated_pod(b2, "")  # override with "" clears
    assert q.nominated_pods_for_node("node1") == []
    q.delete_nominated_pod_if_exists(a2)
    assert q.nominated_pods_for_node("node2") == []
    assert len(q.nominator) == 0
    assert not q.has_nominated_pods()


def test_nominated_columns_follow_the_queue() -> None:
    """The queue's nominated columns (per NodeTable row: the pods nominated there of at least a priority, counted
    and summed, each in the version nominated_pods_for_node gives) follow additions, updates, overrides, popping
    and deletions, as a recount over nominated_pods_for_node."""
    q = new_queue(FakeClock())
    names = ["node1", "node2"]
    table = NodeTable([NodeInfo({"kind": "Node", "metadata": {"name": n}}) for n in names])

    def check() -> None:
        for threshold in (0, 5):
            cols = q.nominated_columns(table, threshold)
            for row, name in enumerate(names):
                counted = [p for p in q.nominated_pods_for_node(name) if p.priority >= threshold]
                assert cols.count[row] == len(counted)
                assert cols.amount("cpu")[row] == sum(p.requests.milli_cpu for p in counted)

    a = make_pod("a", 5, nominated="node1", cpu="300m")
    b = make_pod("b", 1)
    q.add(a)
    q.add(b)
    check()
    q.add_nominated_pod(b, "node1")
    check()
    a2 = changed(a, containers=[{"name": "c", "image": "i", "resources": {"requests": {"cpu": "700m"}}}])
    q.update(a, a2)  # the queue's version is the one counted
    check()
    popped = q.pop_nowait()
    assert popped is not None
    check()
    q.add_nominated_pod(b, "node2")
    check()
    q.add_nominated_pod(b, "")
    check()
    q.delete(a2)
    check()
    assert q.nominated_node_of(a2.uid) is None


def test_nominated_pod_not_in_the_queue_is_returned_as_recorded() -> None:
    q = new_queue(FakeClock())
    p = make_pod("inflight")
    q.add_nominated_pod(p, "n")
    assert q.nominated_pods_for_node("n") == [p]
    q.update_nominated_pod(p, make_pod("inflight", nominated="m"))
    assert [x.name for x in q.nominated_pods_for_node("m")] == ["inflight"]


# --- inspection ----------------------------------------------------------------------------------------------------


def test_pending_pods_and_helpers() -> None:
    q = unschedulable_queue(FakeClock(), {"u": ("Fit",)})
    q.add(make_pod("a"))
    q.add(make_pod("b"))
    fail(q, pop(q))
    pods, summary = q.pending_pods()
    assert sorted(p.name for p in pods) == ["a", "b", "u"]
    assert summary == "activeQ:1; backoffQ:1; unschedulablePods:1"
    assert len(q) == 3
    assert "ns/a" in q
    assert q.where("ns/u") == UNSCHEDULABLE_Q
    assert "ns/zzz" not in q
    assert 3 not in q


# --- events, pod updates, heap --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("registered", "incoming", "want"),
    [
        (ClusterEvent("*", ActionType.all()), NODE_ADD, True),
        (ClusterEvent("Node", ActionType.all()), NODE_LABEL, True),
        (NODE_LABEL, NODE_UPDATE, False),
        (NODE_UPDATE, NODE_LABEL, True),
        (ClusterEvent("Pod", ActionType.ADD), ClusterEvent("AssignedPod", ActionType.ADD), True),
        (ClusterEvent("Pod", ActionType.ADD), ClusterEvent("UnscheduledPod", ActionType.ADD), True),
        (ClusterEvent("AssignedPod", ActionType.ADD), ClusterEvent("Pod", ActionType.ADD), True),
        (ClusterEvent("AssignedPod", ActionType.ADD), ClusterEvent("UnscheduledPod", ActionType.ADD), False),
        (NODE_TAINT, ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT), True),
        (NODE_ADD, ClusterEvent("Node", ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT), False),
        (ClusterEvent("Node", ActionType.update()), NODE_UPDATE, True),
        (ClusterEvent("*", ActionType.ADD), NODE_ADD, True),
        (NODE_ADD, EVENT_UNSCHEDULABLE_TIMEOUT, False),
        (NODE_ADD, ClusterEvent("Node", ActionType.DELETE), False),
    ],
)
def test_match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent, want: bool) -> None:
    """framework/types_test.go TestMatchClusterEvents, plus kubeplane's union reading of combined actions."""
    assert match_cluster_events(registered, incoming) is want


def test_pod_update_events() -> None:
    """PodSchedulingPropertiesChange: one event per kind of change, else a generic Update."""
    base = make_pod("p", labels={"a": "1"}, gates=["g"], cpu="200m")
    got = pod_update_events(base, make_pod("p", labels={"a": "2"}, cpu="100m"))
    assert [e.action_type for e in got] == [
        ActionType.UPDATE_POD_LABEL,
        ActionType.UPDATE_POD_SCALE_DOWN,
        ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    ]
    assert {e.resource for e in got} == {"UnscheduledPod"}
    tolerated = changed(base, tolerations=[{"key": "k", "operator": "Exists"}])
    assert pod_update_events(base, tolerated) == [ClusterEvent("UnscheduledPod", ActionType.UPDATE_POD_TOLERATIONS)]
    assert pod_update_events(base, changed(base, nodeName="n")) == [ClusterEvent("AssignedPod", ActionType.update())]


def test_is_pod_updated() -> None:
    p = make_pod("p")
    meta = {**p.pod["metadata"], "resourceVersion": "9", "generation": 3, "finalizers": ["x"], "managedFields": [1]}
    assert not is_pod_updated(p.pod, {**p.pod, "metadata": meta, "status": {"phase": "Pending"}})
    assert is_pod_updated(p.pod, {**p.pod, "status": {"resourceClaimStatuses": [{"name": "c"}]}})
    assert is_pod_updated(p.pod, changed(p, priority=1).pod)


@given(st.lists(st.tuples(st.sampled_from(["push", "delete", "pop"]), st.integers(0, 9), st.integers(0, 3))))
def test_keyed_heap_matches_a_sorted_model(ops: list[tuple[str, int, int]]) -> None:
    """The heap pops by (less, insertion order) and supports update and delete by key."""
    heap: KeyedHeap[tuple[str, int]] = KeyedHeap(lambda item: item[0], lambda a, b: a[1] < b[1])
    model: dict[str, tuple[int, int]] = {}  # key -> (value, insertion seq)
    seq = 0
    for op, k, value in ops:
        key = f"k{k}"
        if op == "push":
            heap.push((key, value))
            model[key] = (value, model[key][1] if key in model else seq)
            seq += 1
        elif op == "delete":
            got = heap.delete(key)
            assert (got is None) == (key not in model)
            model.pop(key, None)
        elif model:
            want = min(model, key=lambda kk: model[kk])
            assert heap.pop() == (want, model.pop(want)[0])
        else:
            with pytest.raises(IndexError):
                heap.pop()
        assert len(heap) == len(model)
        assert all(key in heap for key in model)
    order = sorted(model, key=lambda kk: model[kk])
    assert [heap.pop()[0] for _ in range(len(heap))] == order


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["push", "push", "delete", "pop", "peek", "get"]), st.integers(0, 4), st.integers(0, 2)
        )
    )
)
def test_sort_key_heap_matches_keyed_heap(ops: list[tuple[str, int, int]]) -> None:
    """SortKeyHeap (activeQ under PrioritySort) answers every operation as KeyedHeap with the equivalent ``less``:
    same pops, same order among equals (insertion order, kept by an update), stale entries never surface."""
    reference: KeyedHeap[tuple[str, int]] = KeyedHeap(lambda item: item[0], lambda a, b: a[1] < b[1])
    fast: SortKeyHeap[tuple[str, int]] = SortKeyHeap(lambda item: item[0], lambda item: item[1])
    for op, k, value in ops:
        key = f"k{k}"
        if op == "push":
            reference.push((key, value))
            fast.push((key, value))
        elif op == "delete":
            assert fast.delete(key) == reference.delete(key)
        elif op == "peek":
            assert fast.peek() == reference.peek()
        elif op == "get":
            assert fast.get(key) == reference.get(key)
        elif len(reference):
            assert fast.pop() == reference.pop()
        else:
            with pytest.raises(IndexError):
                fast.pop()
        assert len(fast) == len(reference)
        assert sorted(fast.items()) == sorted(reference.items())
        assert all(item[0] in fast for item in reference)
    assert [fast.pop() for _ in range(len(fast))] == [reference.pop() for _ in range(len(reference))]


def test_sort_key_heap_compacts_stale_entries() -> None:
    """Updates and deletes leave stale entries behind; they are dropped once they outnumber the live ones, so a
    long-lived activeQ stays the size of its pods."""
    heap: SortKeyHeap[tuple[str, int]] = SortKeyHeap(lambda item: item[0], lambda item: item[1])
    for round_ in range(200):
        heap.push(("a", round_ % 5))
        heap.push((f"b{round_}", 1))
        heap.delete(f"b{round_}")
    assert len(heap) == 1
    assert len(heap._heap) <= 2 * len(heap) + 64 + 1
    assert heap.pop() == ("a", 4)
