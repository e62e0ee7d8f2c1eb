"""Issue 24's simulation browser in a real headless Chromium: ``#/runs`` lists the ``kubeplane sim`` outputs under
the UI's runs directory, ``#/runs/<id>`` draws their time series as interactive SVG charts (static/charts.js).

What each test pins: the list shows both runs with their scenario, seed and headline (the report's headline,
kubeplane.sim.report); opening one draws one line per drawn column (per label in a comparison: the report's
overlay); hover shows the value of each series at that sample; a legend checkbox removes its line; a drag zooms
the time axis and a double-click resets it (keyboard: + and 0); the scenario's actions (actions.csv) are marked
on every chart. The runs are real: the fixtures run the CLI (tests/ui/runs_server.py).
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.a11y import audit
from tests.ui.conftest import new_page
from tests.ui.runs_server import serving, write_runs

SHOTS = Path(os.environ.get("KUBEPLANE_UI_SHOTS", "")) if os.environ.get("KUBEPLANE_UI_SHOTS") else None


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    write_runs(root)
    return root


@pytest.fixture(scope="module")
def server(runs_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with serving(tmp_path_factory.mktemp("api") / "data", runs_root) as found:
        yield found


def open_ui(browser: Any, address: str, token: str, hash_: str) -> Any:
    page = new_page(browser)
    page.goto(f"{address}/ui/")
    page.wait_for_url("**/ui/login")
    page.fill("#token", token)
    page.click("button[type=submit]")
    page.wait_for_url("**/ui/")
    page.goto(f"{address}/ui/{hash_}")
    return page


def shot(page: Any, name: str, *, full_page: bool = True) -> None:
    """docs/ui.md's screenshots when ``$KUBEPLANE_UI_SHOTS`` names a directory (tools/ui_runs_screenshots.py)."""
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / name), full_page=full_page)


def test_the_list_shows_the_runs_with_their_headline(browser: Any, server: tuple[str, str], runs_root: Path) -> None:
    address, token = server
    page = open_ui(browser, address, token, "#/runs")
    page.wait_for_selector("#runs-table")
    page.wait_for_selector("#nav-runs", state="visible")  # shown: the server has a runs directory
    rows = page.locator("#runs-table tbody tr")
    assert rows.count() == 2
    story = page.locator('tr[data-run="story"]')
    summary = json.loads((runs_root / "story" / "summary.json").read_text())
    assert "seeds-story" in story.inner_text()
    assert "run" in story.inner_text()
    assert str(summary["seed"]) in story.inner_text()
    assert f"pods_evicted {summary['pods_evicted']}" in story.inner_text()  # the scenario's headline figures
    compare = page.locator('tr[data-run="nested/compare"]')
    assert "least-allocated, most-allocated" in compare.inner_text()
    assert "comparison" in compare.inner_text()
    shot(page, "runs-list.png")
    assert not page.outside_requests
    assert not page.console_errors, page.console_errors
    page.context.close()


def test_a_run_draws_charts_with_hover_toggles_zoom_and_action_markers(
    browser: Any, server: tuple[str, str], runs_root: Path
) -> None:
    address, token = server
    page = open_ui(browser, address, token, "#/runs")
    page.click('tr[data-run="story"] a')
    page.wait_for_selector("#run-charts figure.chart")
    assert "error" not in (page.get_attribute("#run-message", "class") or "")
    phases = page.locator("figure.chart").filter(has_text="Pods by phase")
    # one line per drawn column: pods_running and pods_succeeded (pending and failed are zero throughout: omitted)
    assert phases.locator("path.series-line").count() == 2
    assert "pods_pending" in phases.inner_text()  # named as not drawn
    # actions (scale at 5m, taint at 10m) are marked on every chart, with their labels
    actions = list(csv.DictReader((runs_root / "story" / "actions.csv").read_text().splitlines()))
    charts = page.locator("#run-charts figure.chart")
    for i in range(charts.count()):
        assert charts.nth(i).locator("g.marker").count() == len(actions) == 2
    assert "scale myapp-deploy to 5" in phases.locator("g.marker").first.text_content()

    # hover: the tooltip shows each series' value at the nearest sample
    series = list(csv.DictReader((runs_root / "story" / "timeseries.csv").read_text().splitlines()))
    plot = phases.locator("svg.chart-svg")
    box = plot.bounding_box()
    plot.hover(position={"x": box["width"] * 0.5, "y": box["height"] * 0.5})
    tip = phases.locator(".chart-tooltip")
    assert tip.is_visible()
    t_text = tip.locator("strong").inner_text()  # "t = 7.5 min"
    minutes = float(t_text.split("=")[1].split()[0])
    row = min(series, key=lambda r: abs(float(r["t"]) - minutes * 60))
    running = tip.locator('li[data-series="pods_running"]').inner_text()
    assert running.split()[-1] == row["pods_running"]
    shot(page, "runs-run.png")

    # toggling a series removes its line
    phases.get_by_label("pods_succeeded").uncheck()
    assert phases.locator('path.series-line[data-series="pods_succeeded"]').count() == 0
    assert phases.locator("path.series-line").count() == 1
    phases.get_by_label("pods_succeeded").check()
    assert phases.locator("path.series-line").count() == 2

    # zoom: a drag from 20% to 50% of the plot narrows the time range; double-click resets it
    rng = phases.locator("[data-range]")
    full = [float(v) for v in rng.get_attribute("data-range").split(",")]
    page.mouse.move(box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.5)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5, steps=5)
    page.mouse.up()
    zoomed = [float(v) for v in rng.get_attribute("data-range").split(",")]
    assert full[0] < zoomed[0] < zoomed[1] < full[1]
    assert "Zoomed to" in rng.inner_text()
    plot.dblclick()
    assert [float(v) for v in rng.get_attribute("data-range").split(",")] == full
    # keyboard: + zooms in around the cursor, 0 resets
    plot.focus()
    page.keyboard.press("ArrowRight")
    assert tip.is_visible()
    page.keyboard.press("+")
    keyed = [float(v) for v in rng.get_attribute("data-range").split(",")]
    assert keyed[1] - keyed[0] < (full[1] - full[0]) * 0.75
    page.keyboard.press("0")
    assert [float(v) for v in rng.get_attribute("data-range").split(",")] == full
    # Tab from the plot reaches its legend; Space toggles the first series off
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.series") == "pods_running"
    page.keyboard.press("Space")
    assert phases.locator('path.series-line[data-series="pods_running"]').count() == 0
    assert not page.outside_requests
    assert not page.console_errors, page.console_errors
    page.context.close()


def test_a_comparison_overlays_one_line_per_label(browser: Any, server: tuple[str, str]) -> None:
    address, token = server
    page = open_ui(browser, address, token, "#/runs/nested%2Fcompare")
    page.wait_for_selector("#run-charts figure.chart")
    assert "comparison" in page.inner_text("#run-title")
    chart = page.locator("figure.chart").filter(has_text="cpu_allocation").first
    lines = chart.locator("path.series-line")
    assert lines.count() == 2
    assert {lines.nth(i).get_attribute("data-series") for i in range(2)} == {"least-allocated", "most-allocated"}
    assert chart.locator("g.marker").count() == 2
    headers = page.locator("#run-summary-table thead th").all_inner_texts()
    assert headers == ["metric", "least-allocated", "most-allocated"]
    page.locator("#run-charts").scroll_into_view_if_needed()
    chart.locator("svg.chart-svg").hover()
    shot(page, "runs-compare.png", full_page=False)
    assert not page.outside_requests
    assert not page.console_errors, page.console_errors
    page.context.close()


@pytest.mark.parametrize(
    ("hash_", "ready"),
    [
        ("#/runs", 'tr[data-run="story"] a'),
        ("#/runs/story", "#run-charts figure.chart"),
        ("#/runs/nested%2Fcompare", "#run-charts figure.chart"),
    ],
    ids=["list", "run", "comparison"],
)
def test_the_runs_views_pass_the_accessibility_audit(
    browser: Any, server: tuple[str, str], hash_: str, ready: str
) -> None:
    """Issue 24: "Accessible (keyboard, contrast, labels)": tests/ui/a11y.py's WCAG 2.2 AA audit (names, contrast,
    focus order and visibility) finds nothing on the list, a run and a comparison with their charts."""
    address, token = server
    page = open_ui(browser, address, token, hash_)
    try:
        page.wait_for_selector(ready)
        assert audit(page) == []
        assert not page.console_errors, page.console_errors
    finally:
        page.context.close()


def test_without_a_runs_directory_the_view_is_hidden_and_404(browser: Any, tmp_path: Path) -> None:
    with serving(tmp_path / "data", None) as (address, token):
        page = open_ui(browser, address, token, "#/cluster")
        page.wait_for_selector("#cluster-summary")
        page.wait_for_function("() => window.performance.getEntriesByName(location.origin + '/ui/whoami').length >= 2")
        assert page.locator("#nav-runs").is_hidden()
        assert page.console_errors == []  # the view's probe asks /ui/whoami, never a 404
        status = page.evaluate(
            "fetch('/ui/runs', {headers: {'X-Kubeplane-UI': '1'}}).then(async r => [r.status, await r.json()])"
        )
        assert status[0] == 404
        assert status[1]["kind"] == "Status"
        assert status[1]["reason"] == "NotFound"
        page.context.close()
