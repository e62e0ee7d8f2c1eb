"""The eviction pass of each node: upstream's eviction manager (``pkg/kubelet/eviction/eviction_manager.go``).

The pure part (signals, thresholds, the usage model, ranking, messages) is :mod:`kubeplane.kubelet.eviction`;
this module runs it against a node's pods every ``eviction_monitoring_period`` (the fleet's heartbeat calls
:meth:`EvictionManager.synchronize`), as upstream's ``synchronize``:

* observe ``memory.available`` (capacity minus the running pods' simulated usage);
* keep the ``MemoryPressure`` condition: true while the threshold is crossed and for
  ``pressure_transition_period`` after it was last crossed; a change records ``NodeHasInsufficientMemory`` /
  ``NodeHasSufficientMemory`` and reports the node's status at once;
* while the threshold is crossed, evict at most one pod per pass, in ``rankMemoryPressure`` order (critical pods
  never).

Invariants: an evicted pod's containers are killed at once (hard threshold: grace 0, exit 137); it ends
``Failed``/``Evicted`` with a ``DisruptionTarget`` condition and is not deleted (its controller replaces it); it
stops holding resources on the node. A pod's simulated usage never changes, so it is computed once per runtime.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubeplane.api.meta import format_time
from kubeplane.api.pods import with_observed_generation
from kubeplane.api.views import is_pod_terminal, uid_of
from kubeplane.client.clock import Clock

from . import eviction
from .runtime import PodRuntime
from .state import FleetOptions, NodeEvents, Obj, PodTasks, SimNode
from .status_manager import StatusManager


class EvictionManager:
    """Observes memory.available on each node, keeps MemoryPressure and evicts (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Clock,
        options: FleetOptions,
        runtimes: Mapping[str, PodRuntime],
        tasks: PodTasks,
        status: StatusManager,
        events: NodeEvents,
        report: Callable[[SimNode], Awaitable[None]],
    ) -> None:
        """``report(sim)`` writes the node's status at once (a pressure transition)."""
        self._clock, self._options, self._runtimes = clock, options, runtimes
        self._tasks, self._status, self._events, self._report = tasks, status, events, report
        self._capacity: dict[str, tuple[Obj, int]] = {}  # node -> (the Node object read, its memory capacity)

    def _observe(self, sim: SimNode) -> tuple[eviction.Threshold, list[Mapping[str, Any]], int, int] | None:
        """``(threshold, active pods, memory.available, capacity)`` of ``sim``; None when it has no
        ``memory.available`` threshold or no Node yet (nothing to do)."""
        threshold = None
        for candidate in sim.thresholds:
            if candidate.signal == eviction.MEMORY_AVAILABLE:
                threshold = candidate
                break
        node = sim.node
        if threshold is None or node is None:
            return None
        active: list[Mapping[str, Any]] = []
        used = 0
        for rt in sim.pods.values():
            if not rt.holding or rt.terminating:
                continue
            active.append(rt.pod)
            if not is_pod_terminal(rt.pod):  # eviction.memory_available's sum, each pod's usage computed once
                if rt.memory_usage is None:
                    rt.memory_usage = eviction.pod_memory_usage(rt.pod)
                used += rt.memory_usage
        seen = self._capacity.get(sim.spec.name)
        if seen is not None and seen[0] is node:
            capacity = seen[1]
        else:
            capacity = eviction.node_memory_capacity(node)
            self._capacity[sim.spec.name] = (node, capacity)
        return threshold, active, max(capacity - used, 0), capacity

    def quiet(self, sim: SimNode, now: float) -> bool:
        """Whether :meth:`synchronize` at monotonic ``now`` would change nothing (no threshold crossed, the
        MemoryPressure condition as it is): the heartbeat may then pass over the node (:mod:`.heartbeat`)."""
        observed = self._observe(sim)
        if observed is None:
            return True
        threshold, _, available, capacity = observed
        if available < threshold.value(capacity):
            return False
        return (now - sim.pressure_seen_at < self._options.pressure_transition_period) == sim.memory_pressure

    async def synchronize(self, sim: SimNode) -> None:
        """Upstream eviction manager ``synchronize``: observe memory.available, keep the MemoryPressure
        condition (with its transition period), and evict at most one pod per pass in rank order."""
        observed = self._observe(sim)
        if observed is None:
            return
        threshold, active, available, capacity = observed
        now = self._clock.monotonic()
        crossed = available < threshold.value(capacity)
        if crossed:
            sim.pressure_seen_at = now
        pressure = crossed or now - sim.pressure_seen_at < self._options.pressure_transition_period
        if pressure != sim.memory_pressure:
            sim.memory_pressure = pressure
            event = eviction.pressure_condition("MemoryPressure", pressure).event_reason
            self._events.node(sim, "Normal", event, f"Node {sim.name} status is now: {event}")
            await self._report(sim)
        if not crossed or not active:
            return
        victim = eviction.pick_pod_to_evict(eviction.rank_for_memory_eviction(active))
        rt = None if victim is None else self._runtimes.get(uid_of(victim))
        if victim is None or rt is None:
            return
        message = eviction.eviction_message("memory", threshold, available, victim, capacity=capacity)
        self.evict(sim, rt, message)

    def evict(self, sim: SimNode, rt: PodRuntime, message: str) -> None:
        """Kill the pod at once (hard threshold: grace 0), phase Failed, reason Evicted, DisruptionTarget."""
        self._tasks.cancel(rt.uid)
        now = self._clock.now()
        for c in rt.all_containers():
            if c.running:
                c.terminate(137, now)
        rt.phase, rt.reason, rt.message = "Failed", "Evicted", message
        rt.extra_conditions = [
            with_observed_generation(
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": format_time(now),
                    "reason": "TerminationByKubelet",
                    "message": message,
                },
                rt.pod,
            )
        ]
        self._events.pod(sim, rt.pod, "Warning", "Evicted", message)
        sim.release(rt)
        self._status.mark_dirty(rt)
