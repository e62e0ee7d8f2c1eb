"""Opportunistic batching: reuse the previous cycle's scored node list for the next pod with the same signature
(upstream ``pkg/scheduler/framework/runtime/batch.go``, KEP-5598; feature gate ``OpportunisticBatching``).

After a cycle that scored several feasible nodes, the nodes other than the chosen one are kept sorted best first
(:class:`SortedScoredNodes`) with the pod's signature. The next pod gets the head of that list as a *hint* when all
of upstream's conditions hold (:meth:`OpportunisticBatch.get_node_hint`); the cycle then runs Filter on the hinted
node alone and, if it passes, binds there with no Score at all. The conditions are what makes the reused order the
order a full cycle would compute, and each failed one has a name (``flushes``):

* ``pod_skipped``: the previous pod was not the cycle just before this one (another profile's pod, a pod skipped
  or failed before a node was chosen);
* ``pod_failed``: the previous cycle did not succeed;
* ``pod_incompatible``: the pod has no signature or a different one;
* ``expired``: the list is older than :data:`MAX_BATCH_AGE` (500 ms upstream; read from the scheduler's clock, so
  a simulation's virtual time decides it reproducibly);
* ``node_missing``: the node chosen last time is no longer in the snapshot;
* ``node_not_full``: this pod passes Filter on the node chosen last time. Only when it does *not* fit there any
  more is the next node of the list the best one: the chosen node's score changed (a pod was added to it) and the
  other nodes' did not, so reuse is sound only for "one pod per node" streams (KEP-5598's correctness argument).

When no hint is given, or it was not used, :meth:`OpportunisticBatch.store_schedule_results` replaces the state with
this cycle's list (``pod_not_batchable``: no signature; ``empty_list``: no other node was scored); a used hint
keeps the rest of the list for the next pod. As upstream, a state found unusable is not dropped at once: the next
successful cycle overwrites it.

Where placements can differ from a scheduler without batching: the hinted node was the best node of the *previous*
pod's search window, while a full cycle would search the next window (percentageOfNodesToScore) and break score ties
afresh; and normalised scores (e.g. TaintToleration's, relative to the best node) are not recomputed. Upstream
accepts both; kubeplane does the same.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from kubeplane.client.clock import Clock
from kubeplane.scheduler.framework.interface import CycleState
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["MAX_BATCH_AGE", "OpportunisticBatch", "Signer", "SortedScoredNodes"]

MAX_BATCH_AGE = 0.5
"""Seconds a stored list stays usable (upstream ``maxBatchAge`` = 500 ms)."""


class Signer(Protocol):
    """What signs pods (:class:`kubeplane.scheduler.signature.PodSigner`; upstream's ``SignatureFunc``)."""

    def sign(self, pod: PodInfo) -> str | None: ...


class SortedScoredNodes:
    """Scored node names, best first (upstream's heap on total score, then a random per-node tie-breaker)."""

    __slots__ = ("_names", "_next", "_size")

    def __init__(self, names: list[str], size: int | None = None) -> None:
        self._names = names
        self._next = 0
        self._size = len(names) if size is None else size

    @classmethod
    def unordered(cls, size: int) -> SortedScoredNodes:
        """A list of ``size`` nodes never to be popped: what a cycle hands over for a pod without a signature
        (its nodes are dropped at once, so they are not sorted)."""
        return cls([], size)

    def pop(self) -> str:
        name = self._names[self._next]
        self._next += 1
        return name

    def __len__(self) -> int:
        return self._size - self._next

    def remaining(self) -> list[str]:
        return self._names[self._next :]


@dataclass(slots=True)
class _BatchState:
    signature: str
    sorted_nodes: SortedScoredNodes
    creation_time: float


@dataclass(slots=True)
class _LastCycle:
    cycle_count: int = 0
    chosen_node: str = ""
    succeeded: bool = False


class OpportunisticBatch:
    """One profile's batch state (module docstring). Not thread-safe: the scheduling cycle is single-threaded."""

    def __init__(self, fwk: Framework, signer: Signer, clock: Clock) -> None:
        self.fwk = fwk
        self.signer = signer
        self.clock = clock
        self.state: _BatchState | None = None
        self.last_cycle = _LastCycle()
        self.batched_pods = 0
        """Pods that were bound to their hint (upstream's test-only ``batchedPods``)."""
        self.attempts: Counter[str] = Counter()
        """``no_hint`` / ``hint_used`` / ``hint_not_used`` (upstream's batch attempt stats)."""
        self.flushes: Counter[str] = Counter()
        """Why a state could not be used or was dropped, by reason (module docstring)."""

    def get_node_hint(
        self, state: CycleState, pod: PodInfo, cycle_count: int, lookup: Callable[[str], NodeInfo | None]
    ) -> tuple[str, str | None]:
        """``(hint, signature)``: the node to try first ("" for none) and the pod's signature."""
        signature = self.signer.sign(pod)
        if not self._compatible(state, pod, signature, cycle_count, lookup):
            self.attempts["no_hint"] += 1
            return "", signature
        assert self.state is not None
        return self.state.sorted_nodes.pop(), signature

    def store_schedule_results(
        self,
        signature: str | None,
        hinted_node: str,
        chosen_node: str,
        other_nodes: SortedScoredNodes | None,
        cycle_count: int,
    ) -> None:
        """Record a successful cycle; keep ``other_nodes`` for the next pod unless the hint was used."""
        self.last_cycle = _LastCycle(cycle_count, chosen_node, True)
        if hinted_node and hinted_node == chosen_node:
            self.attempts["hint_used"] += 1
            self.batched_pods += 1
            return
        if hinted_node:
            self.attempts["hint_not_used"] += 1
        if signature is not None and other_nodes is not None and len(other_nodes) > 0:
            self.state = _BatchState(signature, other_nodes, self.clock.monotonic())
            return
        self.flushes["empty_list" if other_nodes is None or len(other_nodes) == 0 else "pod_not_batchable"] += 1
        self.state = None

    def _compatible(
        self,
        state: CycleState,
        pod: PodInfo,
        signature: str | None,
        cycle_count: int,
        lookup: Callable[[str], NodeInfo | None],
    ) -> bool:
        batch = self.state
        if batch is None or len(batch.sorted_nodes) == 0:
            return False
        reason = ""
        if cycle_count != self.last_cycle.cycle_count + 1:
            reason = "pod_skipped"
        elif not self.last_cycle.succeeded:
            reason = "pod_failed"
        elif signature is None or signature != batch.signature:
            reason = "pod_incompatible"
        elif self.clock.monotonic() > batch.creation_time + MAX_BATCH_AGE:
            reason = "expired"
        else:
            node = lookup(self.last_cycle.chosen_node)
            if node is None:
                reason = "node_missing"
            else:
                status = self.fwk.run_filter_plugins(state, pod, node)
                if status is None or not status.is_rejected():
                    reason = "node_not_full"
        if reason:
            self.flushes[reason] += 1
            return False
        return True
