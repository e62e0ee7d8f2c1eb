"""The Runs view of runs with node groups (docs/ui.md "Runs"), in a real headless Chromium: the autoscaling
table (cost, node-hours, nodes added/removed, pending-time percentiles) with one column per label, the per-group
figures and each run's autoscaler events (scaling.csv: time, group, delta, reason), for a run and for a
comparison of the expanders least-waste and price on examples/sim/autoscaling.yaml (real CLI outputs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeplane.ui.runs import load
from tests.ui.runs_server import ROOT, kubeplane, serving
from tests.ui.test_runs_view import open_ui, shot

SIM = ROOT / "examples" / "sim"
UNTIL = "1h10m"  # past the midday peak's scale-up (large under least-waste, small under price)


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    scenario = str(SIM / "autoscaling.yaml")
    kubeplane("sim", "run", scenario, "--out", str(root / "day"), "--until", UNTIL, cwd=root)
    kubeplane(
        "sim", "compare", scenario, "--autoscaler", str(SIM / "expander-least-waste.yaml"),
        "--autoscaler", str(SIM / "expander-price.yaml"), "--out", str(root / "expanders"), "--until", UNTIL, cwd=root,
    )  # fmt: skip
    return root


@pytest.fixture(scope="module")
def server(runs_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with serving(tmp_path_factory.mktemp("api") / "data", runs_root) as found:
        yield found


def test_load_reads_each_labels_scaling_csv(runs_root: Path) -> None:
    doc = load(runs_root, "expanders")
    assert list(doc["scaling"]) == ["expander-least-waste", "expander-price"]
    ups = [
        (r["group"], r["delta"]) for r in doc["scaling"]["expander-least-waste"] if r["reason"] == "TriggeredScaleUp"
    ]
    assert ups == [("small", 1.0), ("small", 3.0), ("large", 1.0)]


def _cells(page: Any, selector: str) -> list[list[str]]:
    rows: list[list[str]] = page.eval_on_selector_all(
        f"{selector} tbody tr", "rows => rows.map(r => [...r.children].map(c => c.textContent.trim()))"
    )
    return rows


def test_a_comparison_shows_cost_side_by_side_and_the_events(
    browser: Any, server: tuple[str, str], runs_root: Path
) -> None:
    address, token = server
    page = open_ui(browser, address, token, "#/runs/expanders")
    page.wait_for_selector("#run-autoscaling")
    summaries = json.loads((runs_root / "expanders" / "comparison.json").read_text())["summaries"]
    costs = [summaries[label]["cost"] for label in ("expander-least-waste", "expander-price")]
    assert costs[0] != costs[1]
    rows = {r[0]: r[1:] for r in _cells(page, "#run-autoscaling")}
    assert [float(v) for v in rows["cost"]] == pytest.approx(costs, rel=1e-3)
    assert {"node_hours", "nodes_added", "nodes_removed", "pending_time_p50", "pending_time_p99"} <= set(rows)
    events = _cells(page, "#run-scaling-events-0")
    assert ["small", "+3", "TriggeredScaleUp"] in [r[1:4] for r in events]
    assert ["large", "+1", "TriggeredScaleUp"] in [r[1:4] for r in events]
    price = [r[1:4] for r in _cells(page, "#run-scaling-events-1")]
    assert all(group == "small" for group, _, _ in price)
    assert page.text_content("h3 >> nth=1") == "Autoscaler events — expander-least-waste"
    page.evaluate("document.getElementById('run-autoscaling').previousElementSibling.scrollIntoView()")
    shot(page, "runs-autoscaling.png", full_page=False)
    assert not page.console_errors, page.console_errors
    page.context.close()


def test_a_run_shows_its_cost_and_events(browser: Any, server: tuple[str, str]) -> None:
    address, token = server
    page = open_ui(browser, address, token, "#/runs/day")
    page.wait_for_selector("#run-scaling-events-0")
    rows = {r[0]: r[1:] for r in _cells(page, "#run-autoscaling")}
    assert len(rows["cost"]) == 1
    assert float(rows["cost"][0]) > 0
    groups = {r[0]: r[1:] for r in _cells(page, "#run-node-groups")}
    assert groups["large nodes_added"] == ["1"]
    assert page.text_content("h3 >> nth=1") == "Autoscaler events"
    assert not page.console_errors, page.console_errors
    page.context.close()
