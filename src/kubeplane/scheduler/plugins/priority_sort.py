"""PrioritySort: the default QueueSort plugin (upstream ``plugins/queuesort``).

Higher ``spec.priority`` first (a pod without one has priority 0); among equal priorities, the pod that
entered the queue earlier (``QueuedPodInfo.timestamp``) first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubeplane.scheduler.framework.handle import Handle
    from kubeplane.scheduler.framework.types import QueuedPodInfo

__all__ = ["NAME", "PrioritySort", "new"]

NAME = "PrioritySort"


class PrioritySort:
    """QueueSort."""

    def name(self) -> str:
        return NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """True when ``a`` should be popped before ``b``."""
        p1, p2 = a.pod_info.priority, b.pod_info.priority
        return p1 > p2 or (p1 == p2 and a.timestamp < b.timestamp)

    def sort_key(self, qpi: QueuedPodInfo) -> tuple[int, float]:
        """``less(a, b)`` exactly when ``sort_key(a) < sort_key(b)``: the queue compares these in C."""
        return -qpi.pod_info.priority, qpi.timestamp


def new(args: Mapping[str, Any], handle: Handle) -> PrioritySort:
    """The plugin factory; PrioritySort has no args."""
    return PrioritySort()
