"""The Runs view's server side (kubeplane.ui.runs and the /ui/runs routes of UIApp), no browser.

The directories are written by kubeplane.sim.report's own writers (write_outputs, write_comparison), so the view
reads exactly the report's format. Pinned: discovery (recursive, bounded, a comparison's label directories are
part of it, symlinks never followed); path traversal refused with a 400 Status before anything outside the root
is looked at; the series as numbers with text columns left out and long series thinned; the actions merged and
numbered as kubeplane.sim.plots.actions_of numbers them; the chart groups equal kubeplane.sim.plots'; the routes'
session, X-Kubeplane-UI header and 404 Status without a runs directory (the API's NotFound text).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeplane.sim import plots
from kubeplane.sim.report import write_comparison, write_outputs
from kubeplane.ui import runs
from kubeplane.ui.app import UIApp
from kubeplane.ui.sessions import COOKIE


@dataclass
class Result:
    scenario: str = "story"
    label: str = "run"
    seed: int = 7
    summary: dict[str, Any] = field(default_factory=lambda: {"headline": ["pods_evicted"], "pods_evicted": 3})
    timeseries: list[dict[str, Any]] = field(
        default_factory=lambda: [
            {"t": 0.0, "pods_running": 0, "pods_pending": 0, "cpu_allocation": 0.0, "note": "start"},
            {"t": 10.0, "pods_running": 4, "pods_pending": 0, "cpu_allocation": 0.25, "note": ""},
            {"t": 20.0, "pods_running": 5, "pods_pending": 0, "cpu_allocation": None, "note": "x"},
        ]
    )
    pods: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(
        default_factory=lambda: [
            {"t": 15.0, "action": "taint", "label": "taint n1", "ok": True},
            {"t": 5.0, "action": "scale", "label": "scale web to 5", "ok": True},
        ]
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    write_outputs(Result(), tmp_path / "a")
    write_comparison(
        [Result(label="least allocated"), Result(label="most/allocated", actions=[{"t": 30.0, "label": "late"}])],
        tmp_path / "deep" / "er" / "cmp",
    )
    (tmp_path / "empty").mkdir()
    return tmp_path


def test_discovery_finds_runs_and_comparisons_but_not_a_comparisons_label_dirs(root: Path) -> None:
    found = runs.discover(root)
    assert [(f.id, f.kind) for f in found] == [("a", "run"), ("deep/er/cmp", "comparison")]
    assert [(f.id, f.kind) for f in runs.discover(root / "a")] == [(".", "run")]  # the root itself may be a run


def test_discovery_is_depth_bounded_and_never_follows_symlinks(root: Path, tmp_path_factory: Any) -> None:
    outside = tmp_path_factory.mktemp("outside")
    write_outputs(Result(scenario="secret"), outside / "run")
    (root / "link").symlink_to(outside, target_is_directory=True)
    deep = root.joinpath(*["d"] * (runs.MAX_DEPTH + 1))
    write_outputs(Result(), deep)
    ids = [f.id for f in runs.discover(root)]
    assert not any(i.startswith("link") for i in ids)
    assert not any(i.startswith("d/") for i in ids)
    assert "secret" not in json.dumps(runs.listing(root))


@pytest.mark.parametrize(
    "run_id",
    ["..", "../x", "/etc", "/etc/passwd", "a/../..", "a/../../x", "deep/../..", "a/./b", "a//b", "a\\..\\..", "a\x00"],
)
def test_ids_outside_the_root_are_refused_with_400(root: Path, run_id: str) -> None:
    with pytest.raises(runs.RunsError) as caught:
        runs.load(root, run_id)
    assert caught.value.code == 400
    assert caught.value.message == f'invalid run id "{run_id}": not a path inside the runs directory'


def test_a_symlink_out_of_the_root_is_refused_even_when_its_target_is_a_run(root: Path, tmp_path_factory: Any) -> None:
    outside = tmp_path_factory.mktemp("outside")
    write_outputs(Result(scenario="secret"), outside)
    (root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(runs.RunsError) as caught:
        runs.load(root, "link")
    assert caught.value.code == 400
    (root / "a" / "leak.json").symlink_to(outside / "summary.json")
    with pytest.raises(runs.RunsError) as caught:
        runs.load(root, "a/leak.json")
    assert caught.value.code == 400


def test_a_directory_that_is_not_a_run_is_404(root: Path) -> None:
    for run_id in ("empty", "nope", "deep/er"):
        with pytest.raises(runs.RunsError) as caught:
            runs.load(root, run_id)
        assert (caught.value.code, caught.value.reason, caught.value.message) == (
            404,
            "NotFound",
            f'run "{run_id}" not found',
        )


def test_a_run_loads_as_numbers_with_actions_numbered_in_time_order_and_charts(root: Path) -> None:
    doc = runs.load(root, "a")
    assert (doc["scenario"], doc["labels"], doc["seeds"]) == ("story", ["run"], {"run": 7})
    series = doc["series"]["run"]
    assert series["t"] == [0.0, 10.0, 20.0]
    assert series["columns"]["pods_running"] == [0.0, 4.0, 5.0]
    assert series["columns"]["cpu_allocation"] == [0.0, 0.25, None]  # an empty cell is a gap, not a zero
    assert "note" not in series["columns"]  # text column
    assert [(a["number"], a["t"], a["label"]) for a in doc["actions"]] == [
        (1, 5.0, "scale web to 5"),
        (2, 15.0, "taint n1"),
    ]
    phases = next(c for c in doc["charts"] if c["title"] == "Pods by phase")
    assert [line["column"] for line in phases["lines"]] == ["pods_running"]
    assert phases["omitted"] == ["pods_pending"]  # zero throughout: not drawn, as the report's plots


def test_a_comparison_overlays_one_line_per_label_and_merges_the_actions(root: Path) -> None:
    doc = runs.load(root, "deep/er/cmp")
    assert doc["kind"] == "comparison"
    assert doc["labels"] == ["least allocated", "most/allocated"]  # the labels, not the sanitised dir names
    assert set(doc["series"]) == set(doc["labels"])
    running = next(c for c in doc["charts"] if c["lines"] and c["lines"][0]["column"] == "pods_running")
    assert [line["run"] for line in running["lines"]] == doc["labels"]
    # the same (t, label) in both runs is one action; "late" only in the second run
    assert [a["label"] for a in doc["actions"]] == ["scale web to 5", "taint n1", "late"]


def test_long_series_are_thinned_keeping_the_last_sample(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"t": float(i), "pods_running": i} for i in range(101)]
    write_outputs(Result(timeseries=rows), root / "long")
    monkeypatch.setattr(runs, "MAX_POINTS", 10)
    series = runs.load(root, "long")["series"]["run"]
    assert series["thinned"] == 11
    assert len(series["t"]) <= 11
    assert series["t"][0] == 0.0
    assert series["t"][-1] == 100.0


def test_an_unreadable_summary_is_listed_with_its_error_and_loads_as_422(root: Path) -> None:
    (root / "broken").mkdir()
    (root / "broken" / "summary.json").write_text("{not json")
    listed = {item["id"]: item for item in runs.listing(root)["runs"]}
    assert "error" in listed["broken"]
    with pytest.raises(runs.RunsError) as caught:
        runs.load(root, "broken")
    assert caught.value.code == 422


def test_the_chart_groups_are_the_reports() -> None:
    for name in ("PHASE_COLUMNS", "ALLOCATION_COLUMNS", "NODE_COLUMNS", "COUNTER_COLUMNS", "ENDED_COLUMNS",
                 "RAW_COLUMNS", "GPU_PCT_COLUMNS", "GPU_COUNT_COLUMNS"):  # fmt: skip
        assert getattr(runs, name) == getattr(plots, name), name


# --------------------------------------------------------------------------------------------------- routes


async def _refuse_api(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the Runs routes never call the API")


def _get(app: UIApp, path: str, *, session: str | None, csrf: bool = True) -> tuple[int, Any]:
    target, _, query = path.partition("?")
    headers = [(b"host", b"127.0.0.1")]
    if session:
        headers.append((b"cookie", f"{COOKIE}={session}".encode()))
    if csrf:
        headers.append((b"x-kubeplane-ui", b"1"))
    scope = {"type": "http", "method": "GET", "path": target, "query_string": query.encode(), "headers": headers}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], orjson.loads(body) if body else None


def test_the_routes_need_a_session_and_the_ui_header(root: Path) -> None:
    app = UIApp(_refuse_api, runs_dir=root)
    sid = app.sessions.open("token", "admin")
    assert _get(app, "/ui/runs", session=None)[0] == 401
    assert _get(app, "/ui/runs", session=sid, csrf=False)[0] == 403
    status, doc = _get(app, "/ui/runs", session=sid)
    assert status == 200
    assert [r["id"] for r in doc["runs"]] == ["a", "deep/er/cmp"]
    status, doc = _get(app, "/ui/runs/run?id=deep%2Fer%2Fcmp", session=sid)
    assert status == 200
    assert doc["kind"] == "comparison"


def test_traversal_over_http_is_a_400_status(root: Path) -> None:
    app = UIApp(_refuse_api, runs_dir=root / "a")
    sid = app.sessions.open("token", "admin")
    for query in ("id=..", "id=%2e%2e", "id=..%2Fdeep%2Fer%2Fcmp", "id=%2Fetc"):
        status, doc = _get(app, f"/ui/runs/run?{query}", session=sid)
        assert status == 400, query
        assert doc["kind"] == "Status"
        assert doc["reason"] == "BadRequest"
        assert doc["code"] == 400
    status, doc = _get(app, "/ui/runs/run", session=sid)  # no id: the root itself
    assert status == 200
    assert doc["id"] == "."


def test_without_a_runs_directory_the_routes_are_404_statuses(root: Path) -> None:
    app = UIApp(_refuse_api)
    sid = app.sessions.open("token", "admin")
    for path in ("/ui/runs", "/ui/runs/run?id=a"):
        status, doc = _get(app, path, session=sid)
        assert status == 404
        assert doc == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "the server could not find the requested resource",
            "reason": "NotFound",
            "code": 404,
        }
    app = UIApp(_refuse_api, runs_dir=root)
    assert _get(app, "/ui/runs/elsewhere", session=app.sessions.open("t", "u"))[0] == 404


def test_node_group_columns_share_one_chart_as_in_the_report() -> None:
    series = {"run": {"columns": {"nodes_group_small": [1.0, 3.0], "nodes_group_big": [0.0, 0.0], "x": [1.0, 2.0]}}}
    charts = runs.charts(series, comparing=False)
    groups = next(c for c in charts if c["title"] == "Nodes per node group")
    assert [line["column"] for line in groups["lines"]] == ["nodes_group_small"]
    assert groups["omitted"] == ["nodes_group_big"]
    assert [c["title"] for c in charts] == ["Nodes per node group", "x"]
