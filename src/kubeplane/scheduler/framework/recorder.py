"""What one scheduling cycle did, captured when a recorder is switched on (explain, what-if, the conformance
suite and, later, the web UI read it; the scheduler runs the same cycle with no recorder).

The recorder is passive: the cycle and the framework write into it, it never changes a decision. With it on,
the cycle additionally runs every Filter plugin on every node it examined (not stopping at the first failure)
and every Score plugin's per-node reference next to the vector path, so each verdict and score here is the
plugin's own; the decision itself (which nodes were examined, which was selected) is the scheduler's.

Invariants: ``nodes`` lists the examined nodes first, in the order the cycle examined them, then (after
:meth:`kubeplane.scheduler.schedule_one.SchedulingCycle.record_unexamined`) the others with ``examined``
false; a node has ``scores`` only if the cycle scored it; ``selected`` is None when the pod fits nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubeplane.scheduler.framework.interface import PostFilterResult, Status

__all__ = ["CycleRecorder", "NodeRecord", "ScoreRecord"]


@dataclass(frozen=True, slots=True)
class ScoreRecord:
    """One plugin's score of one node: raw (Score), normalised (NormalizeScore) and the profile's weight."""

    raw: int
    normalized: int
    weight: int
    skipped: bool = False
    """The plugin's PreScore returned Skip: it did not score this cycle (all zero)."""

    @property
    def weighted(self) -> int:
        return self.normalized * self.weight


@dataclass(slots=True)
class NodeRecord:
    """One node as the cycle saw it."""

    examined: bool
    """The cycle examined the node (its rotation reached it before enough feasible nodes were found); an
    unexamined node's verdicts were computed afterwards, for the record only."""
    filters: dict[str, Status | None] = field(default_factory=dict)
    """Filter plugin -> its verdict (None: success; Skip when its PreFilter skipped it), every plugin."""
    scores: dict[str, ScoreRecord] = field(default_factory=dict)
    total: int | None = None
    """Σ weight × normalised score, when the cycle scored the node."""


@dataclass
class CycleRecorder:
    """Every extension point's outcome in one cycle, per plugin and node."""

    pre_filter: dict[str, Status | None] = field(default_factory=dict)
    """PreFilter plugin -> its status, for the plugins the framework ran (it stops at an unresolvable one)."""
    pre_filter_nodes: frozenset[str] | None = None
    """The merged PreFilterResult: the only nodes Filter may examine (None: all)."""
    pre_score: dict[str, Status | None] = field(default_factory=dict)
    score_plugins: list[tuple[str, int]] = field(default_factory=list)
    """The profile's Score plugins and weights, in profile order."""
    nodes: dict[str, NodeRecord] = field(default_factory=dict)
    feasible: list[str] = field(default_factory=list)
    nominated_node: str | None = None
    """Set when the pod's ``status.nominatedNodeName`` was examined first and fit (upstream's shortcut)."""
    num_to_find: int = 0
    """How many feasible nodes the cycle looked for (numFeasibleNodesToFind; 1 without Score plugins)."""
    selected: str | None = None
    post_filter: Status | None = None
    post_filter_result: PostFilterResult | None = None
    post_filter_ran: bool = False
    mismatches: list[str] = field(default_factory=list)
    """Disagreements between a plugin's vector path and its reference found in this cycle (should be none)."""

    def node(self, name: str, *, examined: bool) -> NodeRecord:
        record = self.nodes.get(name)
        if record is None:
            record = self.nodes[name] = NodeRecord(examined)
        return record
