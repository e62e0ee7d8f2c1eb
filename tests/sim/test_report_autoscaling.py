"""The report's autoscaling part (kubeplane.sim.report_autoscaling): cost, node-hours, nodes added/removed and
pending-time percentiles side by side, per-group figures, the autoscaler's events per run and the descheduler's
evictions by plugin; nothing for runs without node groups or a descheduler."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubeplane.sim.report import render_html


@dataclass
class FakeResult:
    label: str
    summary: dict[str, Any]
    scaling: list[dict[str, Any]] = field(default_factory=list)
    scenario: str = "autoscaling"
    seed: int = 1
    timeseries: list[dict[str, Any]] = field(default_factory=list)
    pods: list[dict[str, Any]] = field(default_factory=list)


def _groups(small: float, large: float) -> dict[str, Any]:
    def group(cost: float) -> dict[str, Any]:
        return {
            "node_hours": cost * 10,
            "cost": cost,
            "nodes_added": 1,
            "nodes_removed": 1,
            "nodes_peak": 2,
            "nodes_at_end": 1,
        }

    return {"small": group(small), "large": group(large)}


def _result(label: str, cost: float, events: list[dict[str, Any]]) -> FakeResult:
    summary = {
        "cost": cost,
        "node_hours": 12.5,
        "nodes_added": 3,
        "nodes_removed": 2,
        "pending_time_p50": 120.0,
        "pending_time_p90": 151.0,
        "pending_time_p99": 211.0,
        "node_groups": _groups(cost / 2, cost / 2),
    }
    return FakeResult(label, summary, events)


UP = {"t": 1230.0, "group": "small", "delta": 3, "reason": "TriggeredScaleUp", "detail": "3 pod(s)"}
DOWN = {"t": 10230.0, "group": "large", "delta": -1, "reason": "ScaleDownEmpty", "detail": "large-0"}


def test_a_comparison_shows_cost_side_by_side_and_each_runs_events() -> None:
    page = render_html([_result("least-waste", 2.664167, [UP, DOWN]), _result("price", 2.2125, [])])
    part = page[page.index("<h2>Autoscaling</h2>") :]
    assert '<tr><td class="key">cost</td><td class="num">2.664</td><td class="num">2.212</td></tr>' in part
    for metric in ("node_hours", "nodes_added", "nodes_removed", "pending_time_p50", "pending_time_p99"):
        assert f'<td class="key">{metric}</td>' in part
    assert '<td class="key">small cost</td>' in part
    assert "<h3>Autoscaler events — least-waste</h3>" in part
    assert '<td class="num">+3</td><td class="key">TriggeredScaleUp</td><td>3 pod(s)</td>' in part
    assert '<td class="num">-1</td><td class="key">ScaleDownEmpty</td><td>large-0</td>' in part
    assert 'Autoscaler events — price</h3><p class="note">The autoscaler recorded no scaling event.' in part


def test_descheduler_evictions_by_plugin() -> None:
    summary = {
        "descheduler_evictions": 4,
        "descheduler_evictions_by_plugin": {"LowNodeUtilization": 2, "RemovePodsViolatingNodeTaints": 2},
    }
    page = render_html([FakeResult("run", summary, scenario="descheduler")])
    assert "<h2>Descheduling</h2>" in page
    assert '<tr><td class="key">LowNodeUtilization</td><td class="num">2</td></tr>' in page
    assert "Autoscaler events" not in page


def test_runs_without_node_groups_or_descheduler_get_no_part() -> None:
    page = render_html([FakeResult("run", {"pods_created": 1})])
    assert "<h2>Autoscaling</h2>" not in page
    assert "<h2>Descheduling</h2>" not in page


def test_text_from_the_result_is_escaped() -> None:
    event = {**UP, "detail": "<b>1</b> pod(s)"}
    page = render_html([_result("<x>", 1.0, [event])])
    assert "&lt;b&gt;1&lt;/b&gt; pod(s)" in page
    assert "<b>1</b>" not in page
