"""The report's plots (kubeplane.sim.plots): the scenario's actions on every time axis, all-zero series replaced
by a sentence, and the scheduling latency CDF replaced when the virtual clock makes it a single step at zero."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from kubeplane.sim.plots import actions_of
from kubeplane.sim.report import render_html, write_outputs

from .test_report import IMG, FakeResult, make_result

ACTIONS = [
    {"t": 120.0, "action": "taint", "label": "taint node02 check:NoExecute", "ok": True},
    {"t": 300.0, "action": "nodeFailure", "label": "nodeFailure node01", "ok": True},
    {"t": 300.0, "action": "scale", "label": "scale web to 5", "ok": False},
]


def _with_actions(**kwargs: Any) -> FakeResult:
    result = make_result(**kwargs)
    result.actions = [dict(a) for a in ACTIONS]  # type: ignore[attr-defined]
    return result


def _captions(page: str) -> list[str]:
    return re.findall(r"<figcaption>(.*?)</figcaption>", page)


def test_actions_are_numbered_in_time_order_and_merged_across_runs() -> None:
    a, b = _with_actions(), _with_actions(label="other")
    numbered = actions_of([a, b, make_result()])
    assert [(x.number, x.t, x.label) for x in numbered] == [
        (1, 120.0, "taint node02 check:NoExecute"),
        (2, 300.0, "nodeFailure node01"),
        (3, 300.0, "scale web to 5"),
    ]
    assert actions_of([make_result()]) == []


def test_every_time_axis_marks_the_actions_and_the_report_lists_them(tmp_path: Path) -> None:
    with_actions = write_outputs(_with_actions(), tmp_path / "a")
    page = with_actions["report"].read_text(encoding="utf-8")
    captions = _captions(page)
    time_figures = [c for c in captions if not c.startswith("Distribution")]
    assert time_figures
    key = "Dashed lines: the scenario&#x27;s actions — 1 taint node02 check:NoExecute; 2 nodeFailure node01; 3 scale"
    assert all(key in c for c in time_figures)
    assert not any(key in c for c in captions if c.startswith("Distribution"))  # no time axis there
    assert "<h2>Scenario actions</h2>" in page
    assert '<td class="num">2</td><td class="num">300 s (5 min)</td><td class="key">nodeFailure node01</td>' in page
    # the lines are drawn: every time plot differs from the same data without actions, the CDF does not
    plain = render_html([make_result()])
    drawn = re.findall(r'base64,([^"]+)" alt="([^"]+)"', page)
    before = {alt: png for png, alt in re.findall(r'base64,([^"]+)" alt="([^"]+)"', plain)}
    for png, alt in drawn:
        assert (png == before[alt]) == alt.startswith("Distribution"), alt
    # actions.csv: the actions as run
    with with_actions["actions"].open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["label"] for r in rows] == [a["label"] for a in ACTIONS]
    assert rows[2]["ok"] == "False"


def test_a_comparison_marks_the_actions_once(tmp_path: Path) -> None:
    page = render_html([_with_actions(label="a"), _with_actions(label="b", factor=2)])
    assert page.count('<tr><td class="num">1</td>') == 1
    assert all("1 taint node02" in c for c in _captions(page) if not c.startswith("Distribution"))


def _series(**columns: list[float]) -> FakeResult:
    n = len(next(iter(columns.values())))
    return FakeResult(timeseries=[{"t": 60.0 * i, **{k: v[i] for k, v in columns.items()}} for i in range(n)])


def test_a_figure_whose_series_are_all_zero_is_one_sentence() -> None:
    page = render_html([_series(scheduling_attempts=[0, 0, 0], preemptions=[0, 0, 0], evictions=[0, 0, 0])])
    assert IMG not in page
    assert (
        '<p class="note">Cumulative scheduling attempts, preemptions and evictions: scheduling_attempts, '
        "preemptions, evictions are zero throughout, so there is nothing to plot.</p>"
    ) in page


def test_all_zero_series_are_left_out_of_a_figure_and_named_in_its_caption() -> None:
    page = render_html([_series(pods_pending=[0, 0, 0], pods_running=[1, 2, 2], pods_failed=[0, 0, 0])])
    assert page.count(IMG) == 1
    (caption,) = _captions(page)
    assert caption.startswith("Pods by phase over time")
    assert "Zero throughout, not drawn: pods_pending, pods_failed." in caption
    # a series that is zero in one run only is drawn (the comparison needs it)
    other = _series(pods_pending=[0, 3, 0], pods_running=[1, 2, 2], pods_failed=[0, 0, 0])
    other.label = "other"
    compared = render_html([_series(pods_pending=[0, 0, 0], pods_running=[1, 2, 2], pods_failed=[0, 0, 0]), other])
    assert "Zero throughout in every run, not drawn: pods_failed." in compared


def test_scheduling_latency_all_zero_on_the_virtual_clock_is_a_sentence() -> None:
    pods = [{"name": f"p{i}", "phase": "Running", "scheduling_latency": 0.0, "pending_time": 1.0 + i} for i in range(3)]
    page = render_html([FakeResult(pods=pods)])
    assert page.count(IMG) == 1
    assert 'alt="Distribution of pending time (CDF)"' in page
    assert "Scheduling latency is 0 s for all 3 scheduled pods: on the virtual clock" in page
    # one pod that waited (back-off): the latency CDF is drawn
    pods[0]["scheduling_latency"] = 2.5
    page = render_html([FakeResult(pods=pods)])
    assert 'alt="Distribution of scheduling latency and pending time (CDF)"' in page
    assert "Scheduling latency is 0 s" not in page
