"""The autoscaler's events as a table (kubeplane.sim.scaling) and the autoscaling example through them
(examples/sim/autoscaling.yaml): scale-up within a scan of the first Unschedulable pods and bound after the
group's provisioning delay, scale-down after scale-down-unneeded-time, a PDB-protected node never removed (and
removed without the PDB), the same hash twice."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from kubeplane.sim import Scenario
from kubeplane.sim.runner import SimResult, run
from kubeplane.sim.scaling import ScalingEvent, scaling_rows

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sim" / "autoscaling.yaml"
SCAN = 30.0  # the example's scan-interval
UNNEEDED = 600.0  # its scale-down-unneeded-time
NIGHT = 2 * 3600 + 40 * 60  # the action scaling web to one replica
DELAY = {"small": 120.0, "large": 180.0}  # the groups' provisioningDelay
DB_NODE = "small-0"


def _event(t: float, reason: str, kind: str, name: str, message: str) -> ScalingEvent:
    return ScalingEvent(t, reason, kind, name, message)


CM = "ConfigMap"
STATUS = "cluster-autoscaler-status"
SETTING = "Scale-up: setting group small size to 3 instead of 1 (max: 5)"
MAX_REACHED = "pod didn't trigger scale-up: 2 max node group size reached"


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (
            [
                _event(30, "ScaledUpGroup", CM, STATUS, SETTING),
                _event(30, "ScaledUpGroup", CM, STATUS, "Scale-up: group small size set to 3 instead of 1 (max: 5)"),
                _event(30, "TriggeredScaleUp", "Pod", "a", "pod triggered scale-up: [{small 1->3 (max: 5)}]"),
                _event(30, "TriggeredScaleUp", "Pod", "b", "pod triggered scale-up: [{small 1->3 (max: 5)}]"),
            ],
            [{"t": 30, "group": "small", "delta": 2, "reason": "TriggeredScaleUp", "detail": "2 pod(s)"}],
        ),
        (
            [
                _event(90, "ScaleDown", "Node", "small-1", "marked the node as toBeDeleted/unschedulable"),
                _event(90, "ScaleDown", "Pod", "web-1", "deleting pod for node scale down"),
                _event(90, "ScaleDown", CM, STATUS, "Scale-down: node small-1 removed with drain"),
                _event(95, "ScaleDownEmpty", CM, STATUS, "Scale-down: empty node large-0 removed"),
            ],
            [
                {"t": 90, "group": "small", "delta": -1, "reason": "ScaleDown", "detail": "small-1"},
                {"t": 95, "group": "large", "delta": -1, "reason": "ScaleDownEmpty", "detail": "large-0"},
            ],
        ),
        (
            [
                _event(10, "NotTriggerScaleUp", "Pod", "a", MAX_REACHED),
                _event(10, "NotTriggerScaleUp", "Pod", "b", MAX_REACHED),
            ],
            [{"t": 10, "group": "", "delta": 0, "reason": "NotTriggerScaleUp", "detail": f"2 pod(s): {MAX_REACHED}"}],
        ),
    ],
    ids=[
        "upstream-ScaledUpGroup-size-set-then-TriggeredScaleUp-per-pod",
        "upstream-status-ScaleDown-with-drain-and-ScaleDownEmpty-node-and-pod-events-not-rows",
        "upstream-NotTriggerScaleUp-per-pod-one-row-per-instant-and-message",
    ],
)
def test_scaling_rows(events: list[ScalingEvent], expected: list[dict[str, Any]]) -> None:
    assert scaling_rows(events, group_of={"small-1": "small", "large-0": "large"}) == expected


# --- the example ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def day() -> SimResult:
    return run(EXAMPLE)


def _ups(result: SimResult) -> list[dict[str, Any]]:
    return [r for r in result.scaling if r["reason"] == "TriggeredScaleUp"]


def _bound_by(pod: dict[str, Any], t: float) -> bool:
    return pod["scheduled"] is not None and pod["scheduled"] <= t


def test_scale_up_within_a_scan_and_pods_bound_after_the_provisioning_delay(day: SimResult) -> None:
    ups = _ups(day)
    # least-waste: small for the first web pod (small-0 is the database's) and at 20m, large at the midday peak
    assert [r["group"] for r in ups] == ["small", "small", "large"]
    for up in ups:
        waiting = [p for p in day.pods if p["created"] <= up["t"] and not _bound_by(p, up["t"])]
        assert waiting, up
        first = min(p["created"] for p in waiting)
        assert 0 <= up["t"] - first <= SCAN  # the next scan after the first Unschedulable pods
        for pod in waiting:
            # the group's node registers after its provisioning delay and the pod binds to it then
            assert pod["scheduled"] <= up["t"] + DELAY[up["group"]] + SCAN, pod


def test_scale_down_after_the_unneeded_time_when_load_falls(day: SimResult) -> None:
    removals = [r for r in day.scaling if r["delta"] < 0]
    assert removals
    for removal in removals:
        assert NIGHT + UNNEEDED <= removal["t"] <= NIGHT + UNNEEDED + 2 * SCAN, removal
    groups = day.summary["node_groups"]
    assert groups["large"]["nodes_at_end"] == 0
    assert groups["small"]["nodes_at_end"] == 2  # the database's node and the last web pod's
    assert day.summary["nodes_removed"] == len(removals)


def test_a_node_whose_pod_a_pdb_protects_is_never_removed(day: SimResult) -> None:
    db = [p for p in day.pods if p["name"].startswith("db-")]
    assert [(p["node"], p["end"]) for p in db] == [(DB_NODE, "running")]
    assert DB_NODE not in {r["detail"] for r in day.scaling if r["delta"] < 0}


def test_without_the_pdb_the_same_node_is_drained_and_removed() -> None:
    """Upstream's drain check (NotEnoughPdb) is what keeps small-0: without the PDB the database moves."""
    scenario = Scenario.load(EXAMPLE)
    arrivals = [a for a in scenario.arrivals if all(o.get("kind") != "PodDisruptionBudget" for o in a.objects)]
    result = run(dataclasses.replace(scenario, arrivals=arrivals), until=1800)
    removed = [r for r in result.scaling if r["detail"] == DB_NODE]
    assert [(r["reason"], r["group"], r["delta"]) for r in removed] == [("ScaleDown", "small", -1)]
    db = sorted((p for p in result.pods if p["name"].startswith("db-")), key=lambda p: p["created"])
    assert [(p["node"] == DB_NODE, p["end"]) for p in db] == [(True, "deleted"), (False, "running")]


def test_same_hash_twice() -> None:
    first, second = run(EXAMPLE, until=4500), run(EXAMPLE, until=4500)
    assert first.summary["event_log_hash"] == second.summary["event_log_hash"]
    assert first.scaling == second.scaling
    assert first.summary["cost"] == second.summary["cost"]
