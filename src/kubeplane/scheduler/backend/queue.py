"""The scheduling queue: pods waiting to be scheduled (upstream ``PriorityQueue`` in ``scheduling_queue.go``).

A pending pod is in exactly one of three places, keyed by ``namespace/name``:

* **activeQ** - a heap ordered by the QueueSort ``less``; :meth:`SchedulingQueue.pop` takes its head.
* **backoffQ** - :mod:`.backoff_queue`: podBackoffQ (rejected pods) and podErrorBackoffQ (errors), ordered by
  backoff expiry, ``timestamp + backoff(attempts)`` with ``backoff = initial * 2**(attempts - 1)`` capped at
  ``max`` (0 before the first attempt), truncated to one-second windows; within a window podBackoffQ orders as
  activeQ. Flushed to activeQ at every whole second of the clock, once the window holding a pod's expiry is over.
* **unschedulablePods** - a map of pods that a plugin rejected, waiting for a cluster event that one of those
  plugins registered, and of *gated* pods (PreEnqueue said no). Pods that stay longer than
  ``pod_max_in_unschedulable_pods_duration`` go back (every 30 s).

Transitions (``event`` names as upstream)::

    add/update(new pod) --PreEnqueue ok--> activeQ          --PreEnqueue rejects--> unschedulable (gated)
    activeQ --pop--> in flight (attempts += 1, scheduling_cycle += 1, rejecting plugins cleared) --done--> gone
    podBackoffQ --pop while activeQ is empty--> in flight (the same bookkeeping; ``PopFromBackoffQ``)
    in flight --add_unschedulable_if_not_present-->
        no rejecting plugin (an error)                     --> backoffQ (podErrorBackoffQ)
        move request since the pod's cycle started         --> backoffQ (activeQ when a Pending plugin rejected it)
        otherwise                                          --> unschedulable
    unschedulable --event registered by a rejecting plugin (queue_events.match_cluster_events), hint QUEUE-->
        backoffQ while backing off, else activeQ (activeQ at once when the QUEUE came from a Pending plugin)
    unschedulable --update that may make it schedulable--> backoffQ / activeQ
    backoffQ --backoff window over--> activeQ

Every move into activeQ runs ``pre_enqueue``, except a move straight from backoffQ; every move into backoffQ runs
it first (a pod it rejects is gated in unschedulablePods instead), so a pod popped from backoffQ passed it. A pod
PreEnqueue rejects is (or stays) gated in unschedulablePods with ``gating_plugin`` set and only events the gating
plugin registered can move it. A plugin absent from ``events_for_plugins`` registered nothing: pods it rejected
move only on wildcard events and timeouts (register ``ClusterEvent("*", ActionType.all())`` for plugins without
EnqueueExtensions, as upstream's framework does).

This is upstream v1.37's queue with ``SchedulerQueueingHints`` evaluated for unschedulable pods and
``SchedulerPopFromBackoffQ`` (KEP-5142, on by default; ``pop_from_backoff_q=False`` gives the queue before it:
activeQ only, unaligned expiry, PreEnqueue when leaving backoffQ), but *without* in-flight event tracking: a pod
that fails while a move request happened during its cycle goes to backoffQ (upstream's ``moveRequestCycle``
path; :meth:`SchedulingQueue.done` only maintains :meth:`SchedulingQueue.in_flight_pods`). A waiting
:meth:`SchedulingQueue.pop` is woken when a pod enters activeQ, or podBackoffQ with the feature on (upstream
broadcasts then). All times come from ``clock.monotonic()``.

Everything runs on one event loop and no method but :meth:`SchedulingQueue.pop` and :meth:`run` awaits, so no
locks are needed. activeQ/backoffQ operations are O(log n); event moves are O(unschedulable pods).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from kubeplane.client.clock import Clock, sleep_until
from kubeplane.scheduler.backend.backoff_queue import BACKOFF_Q_ORDERING_WINDOW, BackoffQueue
from kubeplane.scheduler.backend.heap import KeyedHeap, SortKeyHeap
from kubeplane.scheduler.backend.node_table import NodeTable
from kubeplane.scheduler.backend.nominated_columns import NominatedColumns, NominatedColumnsCache
from kubeplane.scheduler.backend.nominator import Nominator
from kubeplane.scheduler.backend.queue_events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_FORCE_ACTIVATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    POD,
    affinity_term_may_match,
    event_label,
    is_pod_updated,
    is_wildcard,
    match_cluster_events,
    pod_uid,
    pod_update_events,
)
from kubeplane.scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Status,
    is_success,
)
from kubeplane.scheduler.framework.types import PodInfo, QueuedPodInfo

__all__ = ["ACTIVE_Q", "BACKOFF_Q", "POP_FROM_BACKOFF_Q", "UNSCHEDULABLE_Q", "SchedulingQueue"]

ACTIVE_Q = "Active"
BACKOFF_Q = "Backoff"
UNSCHEDULABLE_Q = "Unschedulable"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
"""Upstream ``framework.PopFromBackoffQ``: the event label of a pod an empty activeQ took from backoffQ."""

_PRE_ENQUEUE = "PreEnqueue"
_POD_TOPOLOGY_SPREAD = "PodTopologySpread"
_SCALE_DOWN = ClusterEvent(POD, ActionType.UPDATE_POD_SCALE_DOWN)
_UNSCHEDULABLE_FLUSH_PERIOD = 30.0
_BACKOFF_FLUSH_PERIOD = BACKOFF_Q_ORDERING_WINDOW


class _Strategy(enum.IntEnum):
    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


def _qkey(qpi: QueuedPodInfo) -> str:
    return qpi.pod_info.key


class SchedulingQueue:
    """activeQ, backoffQ and unschedulablePods with a nominator; see the module docstring."""

    def __init__(
        self,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
        clock: Clock,
        *,
        pod_initial_backoff: float = 1.0,
        pod_max_backoff: float = 10.0,
        pod_max_in_unschedulable_pods_duration: float = 300.0,
        pre_enqueue: Callable[[PodInfo], Status | None] | None = None,
        events_for_plugins: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
        sort_key: Callable[[QueuedPodInfo], Any] | None = None,
        pop_from_backoff_q: bool = True,
    ) -> None:
        """``sort_key``, when the QueueSort plugin has one (``less(a, b)`` exactly when ``sort_key(a) <
        sort_key(b)``), orders activeQ by keys compared in C (:class:`SortKeyHeap`) instead of ``less`` calls.
        ``pop_from_backoff_q`` is the ``SchedulerPopFromBackoffQ`` feature gate (v1.37: on)."""
        self._clock = clock
        self._pop_from_backoff_q = pop_from_backoff_q
        self._max_unschedulable = pod_max_in_unschedulable_pods_duration
        self._pre_enqueue = pre_enqueue
        self._plugin_events: dict[str, tuple[ClusterEventWithHint, ...]] = {
            name: tuple(events) for name, events in (events_for_plugins or {}).items()
        }
        self._registered = [e.event for events in self._plugin_events.values() for e in events]
        self._of_interest: dict[ClusterEvent, bool] = {}
        """:meth:`_is_event_of_interest` per event: the registrations are fixed, events repeat (every binding)."""
        self._active: KeyedHeap[QueuedPodInfo] | SortKeyHeap[QueuedPodInfo] = (
            KeyedHeap(_qkey, less) if sort_key is None else SortKeyHeap(_qkey, sort_key)
        )
        self._backoff = BackoffQueue(
            clock,
            initial_backoff=pod_initial_backoff,
            max_backoff=pod_max_backoff,
            active_less=less,
            active_sort_key=sort_key,
            pop_from_backoff_q=pop_from_backoff_q,
        )
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, PodInfo] = {}  # uid -> pod popped and not yet done
        self.nominator = Nominator()
        self._nominated_columns = NominatedColumnsCache(self.nominator, self.nominated_pods_for_node)
        self._scheduling_cycle = 0
        self.popped_from_backoff = 0
        self._move_request_cycle = -1
        self._closed = False
        self._wakeup = asyncio.Event()
        self._stopped = asyncio.Event()

    # --- backoff -------------------------------------------------------------------------------------------

    def backoff_duration(self, attempts: int) -> float:
        """``initial * 2**(attempts - 1)`` capped at ``max``; 0 for a pod never attempted."""
        return self._backoff.backoff_duration(attempts)

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        """When the pod's backoff ends, aligned to its one-second window (:mod:`.backoff_queue`)."""
        return self._backoff.backoff_time(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self._backoff.is_backing_off(qpi)

    # --- adding and moving -----------------------------------------------------------------------------------

    def _run_pre_enqueue(self, qpi: QueuedPodInfo) -> None:
        status = self._pre_enqueue(qpi.pod_info) if self._pre_enqueue is not None else None
        if is_success(status):
            qpi.gating_plugin = ""
            qpi.gated = False
            return
        assert status is not None
        plugin = status.plugin or _PRE_ENQUEUE
        qpi.unschedulable_plugins.add(plugin)
        qpi.gating_plugin = plugin
        qpi.gated = True

    def _in_queue(self, key: str) -> bool:
        return key in self._active or key in self._backoff or key in self._unschedulable

    def _move_to_active(self, qpi: QueuedPodInfo, event: str, *, from_backoff: bool = False) -> bool:
        """PreEnqueue, then activeQ (True), or gated into unschedulablePods unless already queued (False).

        A pod coming straight from backoffQ skips PreEnqueue when the feature is on: it ran when the pod entered
        backoffQ (upstream ``moveToActiveQ``'s ``movesFromBackoffQ``)."""
        if not (from_backoff and self._pop_from_backoff_q):
            self._run_pre_enqueue(qpi)
        key = qpi.key
        if qpi.gated:
            if not self._in_queue(key):
                self._unschedulable[key] = qpi
            return False
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock.monotonic()
        self._unschedulable.pop(key, None)
        self._backoff.delete(key)
        self._active.push(qpi)
        if event in ("UnscheduledPodAdd", "UnscheduledPodUpdate"):
            self.nominator.add(qpi.pod_info)
        return True

    def _move_to_backoff(self, qpi: QueuedPodInfo) -> bool:
        """backoffQ (True); with the feature on PreEnqueue runs first and a pod it rejects is (or stays) gated in
        unschedulablePods instead (False), so that popping backoffQ need not run it (upstream ``moveToBackoffQ``)."""
        key = qpi.key
        if self._pop_from_backoff_q:
            self._run_pre_enqueue(qpi)
            if qpi.gated:
                self._unschedulable.setdefault(key, qpi)
                return False
        self._unschedulable.pop(key, None)
        self._backoff.add(qpi)
        return True

    def _requeue(self, qpi: QueuedPodInfo, strategy: _Strategy, event: str) -> str:
        """Upstream ``requeuePodWithQueueingStrategy``: the queue the pod went to."""
        if strategy == _Strategy.SKIP:
            self._unschedulable[qpi.key] = qpi
            return UNSCHEDULABLE_Q
        if strategy == _Strategy.AFTER_BACKOFF and self.is_backing_off(qpi):
            return BACKOFF_Q if self._move_to_backoff(qpi) else UNSCHEDULABLE_Q
        return ACTIVE_Q if self._move_to_active(qpi, event) else UNSCHEDULABLE_Q

    def _wakes_pop(self, queue: str) -> bool:
        """Whether a pod that went to ``queue`` must wake a waiting :meth:`pop`: activeQ, and backoffQ when an
        empty activeQ pops it (upstream broadcasts then)."""
        return queue == ACTIVE_Q or (queue == BACKOFF_Q and self._pop_from_backoff_q)

    def _new_queued(self, pod_info: PodInfo) -> QueuedPodInfo:
        return QueuedPodInfo(pod_info, timestamp=self._clock.monotonic())

    def _broadcast(self) -> None:
        self._wakeup.set()

    def add(self, pod_info: PodInfo) -> None:
        """A new pending pod: activeQ, or unschedulablePods when PreEnqueue gates it."""
        if self._move_to_active(self._new_queued(pod_info), "UnscheduledPodAdd"):
            self._broadcast()

    def activate(self, pod_infos: Iterable[PodInfo]) -> None:
        """Move these pods from unschedulablePods/backoffQ to activeQ (upstream ``Activate``); pods elsewhere
        are ignored, except that a pod not queued at all counts as a move request for the current cycle."""
        activated = False
        for pod_info in pod_infos:
            qpi = self._unschedulable.get(pod_info.key)
            from_backoff = False
            if qpi is None:
                qpi = self._backoff.delete(pod_info.key)
                from_backoff = qpi is not None
            if qpi is None:
                self._move_request_cycle = self._scheduling_cycle
                continue
            self._unschedulable.pop(pod_info.key, None)
            activated |= self._move_to_active(qpi, event_label(EVENT_FORCE_ACTIVATE), from_backoff=from_backoff)
        if activated:
            self._broadcast()

    def update(self, old: PodInfo | None, new: PodInfo) -> None:
        """A pending pod changed: updated in place in activeQ/backoffQ; an unschedulable (or gated) pod whose
        update may make it schedulable goes to backoffQ/activeQ (re-running PreEnqueue); an unknown pod is
        added."""
        key = new.key
        if old is not None:
            qpi = self._active.get(key)
            if qpi is not None:
                qpi.pod_info = new
                self._active.push(qpi)
                self.nominator.update(old, new)
                return
            qpi = self._backoff.get(key)
            if qpi is not None:
                qpi.pod_info = new
                self._backoff.update(qpi)
                self.nominator.update(old, new)
                return
        qpi = self._unschedulable.get(key)
        if qpi is not None:
            previous = qpi.pod_info
            qpi.pod_info = new
            self.nominator.update(old if old is not None else previous, new)
            if old is None or is_pod_updated(old.pod, new.pod):
                if self.is_backing_off(qpi):
                    if self._move_to_backoff(qpi) and self._pop_from_backoff_q:
                        self._broadcast()
                elif self._move_to_active(qpi, "UnscheduledPodUpdate"):
                    self._broadcast()
            return
        if self._move_to_active(self._new_queued(new), "UnscheduledPodUpdate"):
            self._broadcast()

    def delete(self, pod_info: PodInfo) -> None:
        """Forget a pending pod (deleted, or bound by someone else) and its nomination."""
        self.nominator.delete(pod_info)
        key = pod_info.key
        if self._active.delete(key) is None and self._backoff.delete(key) is None:
            self._unschedulable.pop(key, None)

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, scheduling_cycle: int) -> None:
        """Put back a pod whose attempt failed in ``scheduling_cycle`` (see the module docstring for where it goes).

        The caller sets ``unschedulable_plugins``/``pending_plugins`` (empty for an error). ValueError when the
        pod is already queued."""
        key = qpi.key
        for place, present in (
            ("unschedulable", key in self._unschedulable),
            ("active", key in self._active),
            ("backoff", key in self._backoff),
        ):
            if present:
                raise ValueError(f"pod {key} is already present in the {place} queue")
        self._in_flight.pop(qpi.pod_info.uid, None)
        rejected = bool(qpi.unschedulable_plugins or qpi.pending_plugins)
        qpi.consecutive_errors = 0 if rejected else qpi.consecutive_errors + 1
        qpi.timestamp = self._clock.monotonic()
        qpi.backoff_expiration = None  # attempts and timestamp changed since it was computed
        if rejected and self._move_request_cycle < scheduling_cycle:
            self._unschedulable[key] = qpi
            return
        strategy = _Strategy.IMMEDIATELY if qpi.pending_plugins else _Strategy.AFTER_BACKOFF
        if self._wakes_pop(self._requeue(qpi, strategy, "ScheduleAttemptFailure")):
            self._broadcast()

    # --- popping -------------------------------------------------------------------------------------------

    def _can_pop(self) -> bool:
        return bool(self._active) or (self._pop_from_backoff_q and self._backoff.len_backoff() > 0)

    def pop_nowait(self) -> QueuedPodInfo | None:
        """The head of activeQ; when activeQ is empty, podBackoffQ's head even if still backing off (upstream
        ``popBackoff``; never an error-backoff pod); None when neither has one. Either way: attempts += 1,
        scheduling cycle += 1, rejecting plugins and the cached backoff expiry cleared (the caller records the
        next attempt's rejectors). :attr:`popped_from_backoff` counts the pods taken from backoffQ (upstream's
        ``scheduler_queue_incoming_pods_total{queue="active", event="PopFromBackoffQ"}``)."""
        if self._active:
            qpi = self._active.pop()
        elif self._pop_from_backoff_q and (head := self._backoff.pop_backoff()) is not None:
            qpi = head
            self.popped_from_backoff += 1
        else:
            return None
        qpi.attempts += 1
        qpi.backoff_expiration = None
        self._scheduling_cycle += 1
        qpi.unschedulable_plugins.clear()
        qpi.pending_plugins.clear()
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock.monotonic()
        self._in_flight[qpi.pod_info.uid] = qpi.pod_info
        return qpi

    async def pop(self) -> QueuedPodInfo | None:
        """Wait until :meth:`pop_nowait` has a pod (activeQ, or podBackoffQ with the feature on) and pop it; None
        once the queue is closed and there is none."""
        while True:
            if self._can_pop():
                return self.pop_nowait()
            if self._closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()

    def done(self, uid: str) -> None:
        """The attempt of a popped pod is over (bound, dropped, or put back; upstream ``Done``).

        Only the in-flight bookkeeping of :meth:`in_flight_pods` depends on it: this queue does not record events
        per in-flight pod (see the module docstring). :meth:`add_unschedulable_if_not_present` implies it."""
        self._in_flight.pop(uid, None)

    def in_flight_pods(self) -> list[PodInfo]:
        """Pods popped and not yet :meth:`done` (upstream ``InFlightPods``)."""
        return list(self._in_flight.values())

    def scheduling_cycle(self) -> int:
        """The number of pops so far; a pod's cycle is this value right after it was popped."""
        return self._scheduling_cycle

    # --- cluster events --------------------------------------------------------------------------------------

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        found = self._of_interest.get(event)
        if found is None:
            found = is_wildcard(event) or any(match_cluster_events(r, event) for r in self._registered)
            self._of_interest[event] = found
        return found

    def _worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old_obj: Any, new_obj: Any) -> _Strategy:
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return _Strategy.AFTER_BACKOFF
        if is_wildcard(event):
            if new_obj is not None and pod_uid(new_obj) != qpi.pod_info.uid:
                return _Strategy.SKIP  # a wildcard event aimed at another pod
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        for plugin in sorted(rejectors):
            for registration in self._plugin_events.get(plugin, ()):
                if not match_cluster_events(registration.event, event):
                    continue
                hint = QueueingHint.QUEUE
                if registration.hint is not None:
                    try:
                        hint = registration.hint(qpi.pod_info, old_obj, new_obj)
                    except Exception:
                        hint = QueueingHint.QUEUE  # upstream: an erroring hint must not strand the pod
                if hint == QueueingHint.QUEUE_SKIP:
                    continue
                if plugin in qpi.pending_plugins:
                    return _Strategy.IMMEDIATELY
                if not qpi.pending_plugins:
                    return _Strategy.AFTER_BACKOFF
                strategy = _Strategy.AFTER_BACKOFF
        return strategy

    def _move_pods(self, pods: Iterable[QueuedPodInfo], event: ClusterEvent, old_obj: Any, new_obj: Any) -> None:
        if not self._is_event_of_interest(event):
            return
        label = event_label(event)
        activated = False
        for qpi in pods:
            if qpi.gated and not any(
                match_cluster_events(r.event, event) for r in self._plugin_events.get(qpi.gating_plugin, ())
            ):
                continue
            strategy = self._worth_requeuing(qpi, event, old_obj, new_obj)
            if strategy == _Strategy.SKIP:
                continue
            self._unschedulable.pop(qpi.key, None)
            activated |= self._wakes_pop(self._requeue(qpi, strategy, label))
        self._move_request_cycle = self._scheduling_cycle
        if activated:
            self._broadcast()

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old_obj: Any = None,
        new_obj: Any = None,
        precheck: Callable[[PodInfo], bool] | None = None,
    ) -> None:
        """Move the unschedulable pods this event may help (upstream ``MoveAllToActiveOrBackoffQueue``): a pod
        moves when a plugin that rejected it registered a matching event whose hint (if any) says QUEUE, or when
        no plugin rejected it; ``precheck`` filters the candidates first. Records a move request."""
        if not self._is_event_of_interest(event):
            return
        pods = [qpi for qpi in self._unschedulable.values() if precheck is None or precheck(qpi.pod_info)]
        self._move_pods(pods, event, old_obj, new_obj)

    def _pods_with_cross_topology_term(self, pod_info: PodInfo) -> list[QueuedPodInfo]:
        """Unschedulable pods an assigned pod may help: rejected by PodTopologySpread in its namespace, or with a
        required pod affinity term the pod matches (upstream ``getUnschedulablePodsWithCrossTopologyTerm``)."""
        out: list[QueuedPodInfo] = []
        for qpi in self._unschedulable.values():
            owner = qpi.pod_info
            if _POD_TOPOLOGY_SPREAD in qpi.unschedulable_plugins and owner.namespace == pod_info.namespace:
                out.append(qpi)
                continue
            terms = owner.pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
            if any(affinity_term_may_match(term, owner, pod_info) for term in terms or ()):
                out.append(qpi)
        return out

    def assigned_pod_added(self, pod_info: PodInfo) -> None:
        """A pod was bound: move pods it may help, with event ``AssignedPod/Add`` (``new_obj`` is the PodInfo)."""
        self._move_pods(self._pods_with_cross_topology_term(pod_info), EVENT_ASSIGNED_POD_ADD, None, pod_info)

    def assigned_pod_updated(self, old: PodInfo, new: PodInfo, event: ClusterEvent | None = None) -> None:
        """A bound pod changed: for each of its update events (``event``, or :func:`pod_update_events`), a scale
        down may help any pod; other changes only pods with cross-topology terms (upstream)."""
        for evt in [event] if event is not None else pod_update_events(old, new):
            if match_cluster_events(_SCALE_DOWN, evt):
                self.move_all_to_active_or_backoff_queue(evt, old, new)
            else:
                self._move_pods(self._pods_with_cross_topology_term(new), evt, old, new)

    # --- periodic flushes ------------------------------------------------------------------------------------

    def flush_backoff_q_completed(self) -> None:
        """Move every pod whose backoff is over from backoffQ to activeQ (upstream ``flushBackoffQCompleted``):
        podBackoffQ's in order, then the error queue's; PreEnqueue is not run again with the feature on."""
        activated = False
        for qpi in self._backoff.pop_all_backoff_completed():
            activated |= self._move_to_active(qpi, "BackoffComplete", from_backoff=True)
        if activated:
            self._broadcast()

    def flush_unschedulable_pods_left_over(self) -> None:
        """Move pods unschedulable for longer than ``pod_max_in_unschedulable_pods_duration`` (wildcard event)."""
        now = self._clock.monotonic()
        stale = [qpi for qpi in self._unschedulable.values() if now - qpi.timestamp > self._max_unschedulable]
        if stale:
            self._move_pods(stale, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    async def _sleep_until(self, deadline: float) -> bool:
        """Sleep on the clock until ``deadline``; False when :meth:`close` came first."""
        sleeper = asyncio.ensure_future(sleep_until(self._clock, deadline))
        stopper = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait((sleeper, stopper), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, stopper):
                task.cancel()
        return not self._closed

    async def _run_backoff_flush(self) -> None:
        """Upstream ``waitUntilAlignedWithOrderingWindow``: wait for the next window's start, then flush at every
        window start (a ticker: deadlines on whole periods, not drifting with late wake-ups)."""
        deadline = self._backoff.next_window_start()
        while await self._sleep_until(deadline):
            self.flush_backoff_q_completed()
            deadline += _BACKOFF_FLUSH_PERIOD

    async def _run_unschedulable_flush(self) -> None:
        """Upstream ``wait.Until(flushUnschedulablePodsLeftover, 30s)``: at once, then every 30 s."""
        deadline = self._clock.monotonic()
        while not self._closed:
            self.flush_unschedulable_pods_left_over()
            deadline += _UNSCHEDULABLE_FLUSH_PERIOD
            if not await self._sleep_until(deadline):
                return

    async def run(self) -> None:
        """Flush backoffQ at every whole second and unschedulablePods every 30 s of the clock until :meth:`close`
        (upstream ``Run``)."""
        tasks = [
            asyncio.ensure_future(self._run_unschedulable_flush()),
            asyncio.ensure_future(self._run_backoff_flush()),
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    def close(self) -> None:
        """Wake every waiting :meth:`pop` (they return None once activeQ is empty) and stop :meth:`run`."""
        self._closed = True
        self._stopped.set()
        self._broadcast()

    @property
    def closed(self) -> bool:
        return self._closed

    # --- nominator -------------------------------------------------------------------------------------------

    def add_nominated_pod(self, pod_info: PodInfo, node_name: str | None = None) -> None:
        """Nominate the pod to ``node_name`` (None: its ``status.nominatedNodeName``; ``""`` clears it)."""
        self.nominator.add(pod_info, node_name)

    def delete_nominated_pod_if_exists(self, pod_info: PodInfo) -> None:
        self.nominator.delete(pod_info)

    def update_nominated_pod(self, old: PodInfo, new: PodInfo) -> None:
        self.nominator.update(old, new)

    def has_nominated_pods(self) -> bool:
        """Whether any pod is nominated anywhere (lets filtering skip the nominated-pods pass)."""
        return len(self.nominator) > 0

    def nominated_node_names(self) -> Collection[str]:
        """The nodes that have at least one nominated pod (a live view; do not keep it across cycles)."""
        return self.nominator.node_names()

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        """Pods nominated to the node, each in its latest version known to the queue."""
        out: list[PodInfo] = []
        for pod_info in self.nominator.pods_for_node(node_name):
            qpi = self.get(pod_info.key)
            out.append(qpi.pod_info if qpi is not None and qpi.pod_info.uid == pod_info.uid else pod_info)
        return out

    def nominated_columns(self, table: NodeTable, priority: int) -> NominatedColumns:
        """Per row of ``table``: the pods nominated there of at least ``priority``, counted and summed
        (:mod:`.nominated_columns`; the resource-only Filter and dry run read them instead of each node's list)."""
        return self._nominated_columns.columns(table, priority)

    def nominated_node_of(self, uid: str) -> str | None:
        return self.nominator.node_of_uid(uid)

    # --- inspection ------------------------------------------------------------------------------------------

    def get(self, key: str) -> QueuedPodInfo | None:
        """The queued pod ``namespace/name`` wherever it is, None when not pending."""
        return self._active.get(key) or self._backoff.get(key) or self._unschedulable.get(key)

    def where(self, key: str) -> str | None:
        """:data:`ACTIVE_Q`, :data:`BACKOFF_Q`, :data:`UNSCHEDULABLE_Q` or None."""
        if key in self._active:
            return ACTIVE_Q
        if key in self._backoff:
            return BACKOFF_Q
        if key in self._unschedulable:
            return UNSCHEDULABLE_Q
        return None

    def pods_in_active_q(self) -> list[PodInfo]:
        return [qpi.pod_info for qpi in self._active]

    def pods_in_backoff_q(self) -> list[PodInfo]:
        return [qpi.pod_info for qpi in self._backoff]

    def unschedulable_pods(self) -> list[PodInfo]:
        return [qpi.pod_info for qpi in self._unschedulable.values()]

    def pending_pods(self) -> tuple[list[PodInfo], str]:
        """Every pending pod and upstream's summary ``activeQ:%d; backoffQ:%d; unschedulablePods:%d``."""
        active, backoff, unschedulable = self.pods_in_active_q(), self.pods_in_backoff_q(), self.unschedulable_pods()
        summary = f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(unschedulable)}"
        return active + backoff + unschedulable, summary

    def pending_pod_counts(self) -> dict[str, int]:
        """Pods per ``scheduler_pending_pods`` queue label; ``gated`` pods (PreEnqueue said no, never attempted)
        are counted apart from the ``unschedulable`` ones. O(unschedulable pods): called at scrape time."""
        gated = sum(1 for qpi in self._unschedulable.values() if qpi.gated)
        return {
            "active": len(self._active),
            "backoff": len(self._backoff),
            "unschedulable": len(self._unschedulable) - gated,
            "gated": gated,
        }

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable)

    def __contains__(self, item: object) -> bool:
        key = item.key if isinstance(item, PodInfo | QueuedPodInfo) else item
        return isinstance(key, str) and self._in_queue(key)
