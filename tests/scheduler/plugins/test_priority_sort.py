"""PrioritySort against upstream's priority_sort_test.go (v1.37)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    """Upstream TestLess; the sort key the queue compares instead orders the pair the same way."""
    pl = priority_sort.new({}, Handle())
    assert pl.less(p1, p2) is expected
    assert (pl.sort_key(p1) < pl.sort_key(p2)) is expected


@given(st.lists(st.tuples(st.integers(-3, 3) | st.none(), st.sampled_from([0.0, 1.5, 2.0])), min_size=2, max_size=2))
def test_sort_key_is_less(pair: list[tuple[int | None, float]]) -> None:
    """``less(a, b)`` exactly when ``sort_key(a) < sort_key(b)``: what the activeQ's SortKeyHeap relies on."""
    pl = priority_sort.new({}, Handle())
    a, b = (queued(f"p{i}", priority, ts) for i, (priority, ts) in enumerate(pair))
    assert pl.less(a, b) is (pl.sort_key(a) < pl.sort_key(b))
    assert pl.less(b, a) is (pl.sort_key(b) < pl.sort_key(a))
