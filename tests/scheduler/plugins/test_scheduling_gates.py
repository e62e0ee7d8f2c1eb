"""SchedulingGates against upstream's scheduling_gates_test.go (v1.37)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    Code,
    EnqueueExtensions,
    PreEnqueuePlugin,
    QueueingHint,
    Status,
)
from kubeplane.scheduler.framework.types import PodInfo
from kubeplane.scheduler.plugins import scheduling_gates
from kubeplane.scheduler.plugins.scheduling_gates import NAME, SchedulingGates, gates_reason


def gated_pod(*gates: str, uid: str = "p") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"metadata": {"name": "p", "namespace": "default", "uid": uid}, "spec": spec}


def plugin() -> SchedulingGates:
    return scheduling_gates.new({}, Handle())


def test_plugin_shape() -> None:
    pl = plugin()
    assert pl.name() == NAME == "SchedulingGates"
    assert isinstance(pl, PreEnqueuePlugin)
    assert isinstance(pl, EnqueueExtensions)


@pytest.mark.parametrize(
    ("gates", "want"),
    [
        ((), None),
        (("foo", "bar"), Status.new(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates: [foo bar]")),
        (("example.com/one",), Status.unresolvable("waiting for scheduling gates: [example.com/one]")),
    ],
    ids=["pod does not carry scheduling gates", "pod carries scheduling gates", "one gate"],
)
def test_pre_enqueue(gates: tuple[str, ...], want: Status | None) -> None:
    """Upstream TestPreEnqueue: the gate names formatted as Go's %v of a []string."""
    assert plugin().pre_enqueue(PodInfo(gated_pod(*gates))) == want


def test_gates_reason_is_go_slice_formatting() -> None:
    assert gates_reason([]) == "waiting for scheduling gates: []"
    assert gates_reason(["a", "b", "c"]) == "waiting for scheduling gates: [a b c]"


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (gated_pod(), QueueingHint.QUEUE),
        (gated_pod("foo"), QueueingHint.QUEUE_SKIP),
        (gated_pod(uid="other"), QueueingHint.QUEUE_SKIP),
    ],
    ids=["queue-when-the-last-gate-is-removed", "skip-while-gates-remain", "skip-another-pod"],
)
def test_gates_eliminated_hint(new: dict[str, Any], expected: QueueingHint) -> None:
    """Upstream TestIsSchedulableAfterUpdateTargetPodSchedulingGatesEliminated."""
    (registration,) = plugin().events_to_register()
    assert registration.event.resource == "Pod"
    assert registration.event.action_type == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert registration.hint is not None
    pod = PodInfo(gated_pod("foo", "bar"))
    assert registration.hint(pod, gated_pod("foo"), new) == expected
    assert registration.hint(pod, PodInfo(gated_pod("foo")), PodInfo(new)) == expected
