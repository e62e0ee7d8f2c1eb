"""The node lifecycle controller's taint helpers (upstream ``doNoScheduleTaintingPass``'s ``TaintSetDiff`` and
``AddOrUpdateTaint``); the writes through the API are exercised end to end by test_nodelifecycle.py."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.taints import Taint
from kubeplane.controllers.nodelifecycle_taints import add_or_update, no_schedule_taint_diff

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"


def _cond(status: str) -> dict[str, str]:
    return {"type": "Ready", "status": status}


@pytest.mark.parametrize(
    ("conditions", "unschedulable", "taints", "add", "remove"),
    [
        ([_cond("True")], False, [], [], []),
        ([_cond("False")], False, [], [NOT_READY], []),
        ([_cond("Unknown")], False, [{"key": NOT_READY, "effect": "NoSchedule"}], [UNREACHABLE], [NOT_READY]),
        ([_cond("True")], True, [], ["node.kubernetes.io/unschedulable"], []),
        (
            [_cond("True"), {"type": "MemoryPressure", "status": "True"}, {"type": "PIDPressure", "status": "False"}],
            False,
            [{"key": "node.kubernetes.io/pid-pressure", "effect": "NoSchedule"}],
            ["node.kubernetes.io/memory-pressure"],
            ["node.kubernetes.io/pid-pressure"],
        ),
        # taints the controller does not own are left alone; NoExecute ones are another pass's business
        (
            [_cond("True")],
            False,
            [{"key": "custom", "effect": "NoSchedule"}, {"key": UNREACHABLE, "effect": "NoExecute"}],
            [],
            [],
        ),
    ],
)
def test_no_schedule_taint_diff(
    conditions: list[dict[str, str]], unschedulable: bool, taints: list[Any], add: list[str], remove: list[str]
) -> None:
    node = {"spec": {"unschedulable": unschedulable, "taints": taints}, "status": {"conditions": conditions}}
    to_add, to_remove = no_schedule_taint_diff(node)
    assert [t.key for t in to_add] == add
    assert all(t.effect == "NoSchedule" for t in to_add + to_remove)
    assert [t.key for t in to_remove] == remove


@pytest.mark.parametrize(
    ("current", "taints", "expected"),
    [
        ([], [Taint("a", "NoExecute", "", "t1")], [Taint("a", "NoExecute", "", "t1")]),
        # same key and effect: replaced in place (timeAdded and value are the new taint's)
        (
            [Taint("a", "NoExecute", "", "t0"), Taint("b", "NoSchedule")],
            [Taint("a", "NoExecute", "v", "t1")],
            [Taint("a", "NoExecute", "v", "t1"), Taint("b", "NoSchedule")],
        ),
        # same key, other effect: a taint of its own, appended
        (
            [Taint("a", "NoSchedule")],
            [Taint("a", "NoExecute", "", "t1")],
            [Taint("a", "NoSchedule"), Taint("a", "NoExecute", "", "t1")],
        ),
    ],
    ids=["appended", "same-key-and-effect-replaced", "other-effect-appended"],
)
def test_add_or_update_follows_upstream_add_or_update_taint(
    current: list[Taint], taints: list[Taint], expected: list[Taint]
) -> None:
    assert add_or_update(current, taints) == expected
