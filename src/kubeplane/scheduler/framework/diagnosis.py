"""Why a pod did not fit (upstream ``framework.Diagnosis`` and ``framework.FitError`` in ``framework/types.go``).

One home for the scheduling cycle, preemption (its "0/N nodes are available" suffix) and explain: the
FailedScheduling message is computed here and nowhere else.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubeplane.scheduler.framework.interface import Code, PostFilterResult, Status

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.types import PodInfo

__all__ = [
    "NO_NODES_AVAILABLE",
    "Diagnosis",
    "FitError",
    "NoNodesAvailableError",
    "SchedulingError",
    "fit_error_message",
]

NO_NODES_AVAILABLE = "no nodes available to schedule pods"


@dataclass
class Diagnosis:
    """Why a pod did not fit: the status of each rejecting node, the status of the nodes absent from that map
    (outside a PreFilterResult, or all of them after a PreFilter rejection), the plugins that rejected the pod
    (the queue requeues it on their events) and the PreFilter / PostFilter messages."""

    node_to_status: dict[str, Status] = field(default_factory=dict)
    absent_nodes_status: Status | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        if not status.plugin:
            return
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected():
            self.unschedulable_plugins.add(status.plugin)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """Upstream ``FitError.Error()``: ``0/N nodes are available: <sorted "count reason" list>.``"""
    msg = f"0/{num_all_nodes} nodes are available:"
    if diagnosis.pre_filter_msg:
        msg += f" {diagnosis.pre_filter_msg}."
    else:
        counts: dict[str, int] = {}
        # Nodes rejected for the same reasons mostly share one Status object: count each object once.
        statuses = diagnosis.node_to_status.values()
        by_id = dict(zip(map(id, statuses), statuses, strict=True))
        for status_id, times in Counter(map(id, statuses)).items():
            for reason in by_id[status_id].reasons:
                counts[reason] = counts.get(reason, 0) + times
        absent = num_all_nodes - len(diagnosis.node_to_status)
        if absent > 0 and diagnosis.absent_nodes_status is not None:
            for reason in diagnosis.absent_nodes_status.reasons:
                counts[reason] = counts.get(reason, 0) + absent
        histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
        if histogram:
            msg += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        msg += f" {diagnosis.post_filter_msg}."
    return msg


class FitError(Exception):
    """No node fits the pod; ``str`` is the FailedScheduling message.

    ``nominating`` is what PostFilter (preemption) decided when the cycle ran it: None leaves the pod's
    nomination as it is, a result with ``""`` clears it (upstream ``PostFilterResult``)."""

    def __init__(self, pod: PodInfo, num_all_nodes: int, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.pod = pod
        self.num_all_nodes = num_all_nodes
        self.diagnosis = diagnosis
        self.nominating: PostFilterResult | None = None
        self._message: tuple[tuple[object, ...], str] | None = None

    def __str__(self) -> str:
        # The scheduler reads the message twice per failure (the status, then the event and condition); it is
        # a count over every rejected node, so it is kept while the diagnosis's parts are the same.
        d = self.diagnosis
        key = (self.num_all_nodes, len(d.node_to_status), d.absent_nodes_status, d.pre_filter_msg, d.post_filter_msg)
        kept = self._message
        if kept is not None and kept[0] == key:
            return kept[1]
        message = fit_error_message(self.num_all_nodes, d)
        self._message = (key, message)
        return message

    @classmethod
    def on_one_node(cls, pod: PodInfo, host: str, status: Status) -> FitError | None:
        """The FitError of a rejection after the node was chosen (Reserve, Permit, a Permit wait), or None for a
        non-rejection (an error is not a fit error)."""
        if not status.is_rejected():
            return None
        diagnosis = Diagnosis(node_to_status={host: status})
        diagnosis.add_plugin_status(status)
        return cls(pod, 1, diagnosis)


class NoNodesAvailableError(Exception):
    def __str__(self) -> str:
        return NO_NODES_AVAILABLE


class SchedulingError(Exception):
    """A plugin returned an error: the pod is retried with backoff."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status
