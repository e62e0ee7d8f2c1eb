"""PrioritySort against upstream's priority_sort_test.go (v1.37)."""

from __future__ import annotations

import pytest

from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import QueueSortPlugin
from kubeplane.scheduler.framework.types import PodInfo, QueuedPodInfo
from kubeplane.scheduler.plugins import priority_sort
from kubeplane.scheduler.plugins.priority_sort import NAME


def queued(name: str, priority: int | None, timestamp: float) -> QueuedPodInfo:
    spec = {} if priority is None else {"priority": priority}
    return QueuedPodInfo(PodInfo({"metadata": {"name": name, "uid": name}, "spec": spec}), timestamp=timestamp)


def test_plugin_shape() -> None:
    pl = priority_sort.new({}, Handle())
    assert pl.name() == NAME == "PrioritySort"
    assert isinstance(pl, QueueSortPlugin)


LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


@pytest.mark.parametrize(
    ("p1", "p2", "expected"),
    [
        (queued("t1-p1", LOW, T1), queued("t1-p2", HIGH, T2), False),
        (queued("t1-p1", HIGH, T1), queued("t1-p2", LOW, T2), True),
        (queued("t1-p1", HIGH, T1), queued("t1-p2", HIGH, T2), True),
        (queued("t1-p1", HIGH, T2), queued("t1-p2", HIGH, T1), False),
        (queued("t1-p1", HIGH, T1), queued("t1-p2", HIGH, T1), False),
        (queued("t1-p1", None, T1), queued("t1-p2", -5, T1), True),
    ],
    ids=[
        "p1.priority less than p2.priority",
        "p1.priority greater than p2.priority",
        "equal priority. p1 is added to schedulingQ earlier than p2",
        "equal priority. p2 is added to schedulingQ earlier than p1",
        "equal priority and timestamp: not less (a strict order)",
        "no priority means 0, above a negative one",
    ],
)
def test_less(p1: QueuedPodInfo, p2: QueuedPodInfo, expected: bool) -> None:
    """Upstream TestLess."""
    assert priority_sort.new({}, Handle()).less(p1, p2) is expected
