"""tools/perf_figures.py: issue 29's rows and upstream's CI floors, parsing a bench's JSON lines, the markdown
table (with and without a base), --write replacing only the figures block of docs/performance.md, and one real
--quick run of the fastest row as a subprocess. Figures are not asserted (benchmarks measure; tests do not time):
canned JSON lines stand in for the benches."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tools.loading import load_script, load_tool

ROOT = Path(__file__).resolve().parents[2]


tool = load_tool("perf_figures")


def _line(bench: str, metric: str, value: float, unit: str, **extra: Any) -> str:
    return json.dumps({"bench": bench, "metric": metric, "value": value, "unit": unit, **extra})


def _sched_out(average: float, *, end_to_end: float = 1.0, workload: str = "SchedulingBasic") -> str:
    """What bench/scheduler_perf.py prints (its line order), with a non-JSON note mixed in."""
    params = {"workload": workload, "transport": "local"}
    return "\n".join(
        [
            _line("scheduler_perf", "SchedulingThroughput", average, "pods/s", stat="Average", **params),
            _line("scheduler_perf", "SchedulingThroughput", average + 7, "pods/s", stat="Perc50", **params),
            "a line that is not JSON",
            _line("scheduler_perf", "PeakRSS", 99.0, "MB", component="bench", **params),
            _line("scheduler_perf", "EndToEndThroughput", end_to_end, "pods/s", **params),
        ]
    )


def _row(name: str, metric: str | None = None) -> Any:
    return next(r for r in tool.ROWS if r.name == name and (metric is None or r.metric == metric))


# --- the rows: issue 29's table and upstream's floors ---------------------------------------------------------


@pytest.mark.parametrize(
    ("workload", "threshold", "file", "case"),
    [
        ("SchedulingBasic", 680, "misc/performance-config.yaml", "5000Nodes_10000Pods"),
        ("SchedulingNodeAffinity", 220, "affinity/performance-config.yaml", "5000Nodes_10000Pods"),
        ("SchedulingPodAntiAffinity", 60, "affinity/performance-config.yaml", "5000Nodes_2000Pods"),
        ("SchedulingPodAffinity", 35, "affinity/performance-config.yaml", "5000Nodes_5000Pods"),
        ("SchedulingPreferredPodAffinity", 90, "affinity/performance-config.yaml", "5000Nodes_5000Pods"),
        ("SchedulingPreferredPodAntiAffinity", 90, "affinity/performance-config.yaml", "5000Nodes_5000Pods"),
        ("MixedSchedulingBasePod", 140, "affinity/performance-config.yaml", "5000Nodes_5000Pods"),
        ("TopologySpreading", 460, "topology_spreading/performance-config.yaml", "5000Nodes_5000Pods"),
        ("PreferredTopologySpreading", 340, "topology_spreading/performance-config.yaml", "5000Nodes_5000Pods"),
    ],
    ids=str,
)
def test_floors_are_upstreams_thresholds_with_their_file(workload: str, threshold: int, file: str, case: str) -> None:
    """The v1.37 performance-config.yaml threshold of the case whose params are our bench's full sizes."""
    floor = tool.FLOORS[workload]
    assert (floor.threshold, floor.file, floor.case) == (threshold, file, case)
    assert floor.source.startswith("kubernetes/kubernetes v1.37 test/integration/scheduler_perf/")


def test_other_workloads_target_five_times_the_floor() -> None:
    """Every scheduler_perf workload the issue's table does not give a target has 5x upstream's floor, read as
    upstream's threshold is: SchedulingThroughput Average."""
    judged = [r for r in tool.ROWS if r.floor is not None and r.name not in ("SchedulingBasic", "SchedulingBasic-http")]
    assert {r.name for r in judged} == set(tool.FLOORS) - {"SchedulingBasic"}
    for row in judged:
        assert (row.metric, row.stat) == ("SchedulingThroughput", "Average"), row.name
        assert row.target == 5 * row.floor.threshold, row.name
        assert not row.at_most
    assert _row("TopologySpreading").target == 2300  # issue 29: ≥ 2,300 / ≥ 1,700 (5× upstream's CI floors)
    assert _row("PreferredTopologySpreading").target == 1700


@pytest.mark.parametrize(
    ("name", "metric", "args", "target", "at_most"),
    [
        ("SchedulingBasic", "SchedulingThroughput", ("--workload", "SchedulingBasic"), 5000, False),
        ("SchedulingBasic-http", "SchedulingThroughput", ("--workload", "SchedulingBasic", "--transport", "http"),
         2000, False),
        ("PreemptionBasic", "EndToEndThroughput", ("--workload", "PreemptionBasic"), 300, False),
        ("sim-5k", "wall_seconds", (), 180, True),
        ("sim-5k", "peak_rss", (), 4096, True),
        ("sim-idle-1k", "steady_wall_ms_per_sim_second", ("--nodes", "1000", "--pods", "0", "--until", "300"), 2,
         True),
        ("sim-idle-1k", "steady_cpu_ms_per_sim_second", ("--nodes", "1000", "--pods", "0", "--until", "300"), 2,
         True),
        ("sim-1k-10k", "wall_seconds", ("--nodes", "1000", "--pods", "10000", "--until", "900"), 10, True),
    ],
    ids=["basic-local", "basic-http", "preemption-e2e", "sim5k-wall", "sim5k-rss", "idle-wall", "idle-cpu",
         "sim1k-wall"],
)  # fmt: skip
def test_issue_29_rows(name: str, metric: str, args: tuple[str, ...], target: float, at_most: bool) -> None:
    row = _row(name, metric)
    assert row.args == args
    assert (row.target, row.at_most) == (target, at_most)


def test_every_scheduler_perf_workload_has_a_row() -> None:
    bench = load_script("scheduler_perf_for_rows", ROOT / "bench" / "scheduler_perf.py")
    workloads = {r.args[1] for r in tool.ROWS if r.bench == "scheduler_perf.py"}
    assert workloads == set(bench.WORKLOADS)


def test_preemption_basic_has_no_upstream_floor() -> None:
    """default_preemption/performance-config.yaml's 1000Nodes cases carry no threshold: the Average is reported,
    not judged."""
    row = _row("PreemptionBasic", "SchedulingThroughput")
    assert row.floor is None
    assert row.target is None
    assert row.met(10_000.0) is None


# --- parsing and judging --------------------------------------------------------------------------------------


def test_parse_lines_keeps_metric_objects_only() -> None:
    text = "\n".join(["noise", "{not json", '{"no": "metric"}', _line("sim", "wall_seconds", 12.5, "s"), ""])
    assert tool.parse_lines(text) == ({"bench": "sim", "metric": "wall_seconds", "value": 12.5, "unit": "s"},)


def test_pick_reads_the_rows_metric_and_stat() -> None:
    records = tool.parse_lines(_sched_out(812.5, end_to_end=31.0))
    assert _row("SchedulingBasic").pick(records) == 812.5  # Average, not Perc50
    assert _row("PreemptionBasic", "EndToEndThroughput").pick(records) == 31.0
    assert _row("sim-5k", "wall_seconds").pick(records) is None


@pytest.mark.parametrize(
    ("name", "metric", "value", "met"),
    [
        ("SchedulingBasic", None, 5000.0, True),
        ("SchedulingBasic", None, 4999.9, False),
        ("sim-5k", "wall_seconds", 180.0, True),
        ("sim-5k", "wall_seconds", 805.0, False),
        ("sim-1k-10k", "peak_rss", 1500.0, None),
    ],
    ids=["throughput-at-target", "throughput-below", "time-at-target", "time-above", "no-target"],
)
def test_met_direction(name: str, metric: str | None, value: float, met: bool | None) -> None:
    assert _row(name, metric).met(value) is met


# --- running: one run per command, --base back to back ----------------------------------------------------------


class FakeRunner:
    """Stands in for the subprocess: canned output per checkout; records the order of the calls."""

    def __init__(self, outputs: dict[Path, str]) -> None:
        self.outputs = outputs
        self.calls: list[tuple[Path, str]] = []

    def __call__(self, checkout: Path, row: Any, quick: bool) -> Any:
        self.calls.append((checkout, row.command(quick=quick)))
        return tool.Run(tool.parse_lines(self.outputs[checkout]))


def test_rows_of_one_command_share_one_run() -> None:
    here = Path("/after")
    sim = "\n".join([_line("sim", "wall_seconds", 700.0, "s"), _line("sim", "peak_rss", 12000.0, "MB")])
    runner = FakeRunner({here: sim})
    figures = tool.measure(tool.select(["sim-5k"], []), quick=False, checkout=here, runner=runner)
    assert len(runner.calls) == 1
    assert [f.values["after"] for f in figures] == [700.0, 12000.0]


def test_base_runs_back_to_back_before_after() -> None:
    base, here = Path("/base"), Path("/after")
    runner = FakeRunner({base: _sched_out(1400.0), here: _sched_out(5100.0)})
    rows = tool.select(["SchedulingBasic", "TopologySpreading"], [])
    figures = tool.measure(rows, quick=True, checkout=here, base=base, runner=runner)
    assert [c[0] for c in runner.calls] == [base, here, base, here]  # per command: base, then this checkout
    assert runner.calls[0][1] == runner.calls[1][1]
    assert runner.calls[0][1].endswith("--quick")
    table = tool.render(figures, quick=False)
    header, rule, first, _ = table.splitlines()
    assert header == "| benchmark | command | metric | before | after | target | met? |"
    assert rule.count("---") == 7
    cells = [c.strip() for c in first.strip("|").split("|")]
    assert cells[0] == "SchedulingBasic"
    assert cells[1] == "`.venv/bin/python bench/scheduler_perf.py --workload SchedulingBasic`"
    assert cells[2] == "SchedulingThroughput Average"
    assert cells[3:5] == ["1,400 pods/s", "5,100 pods/s"]
    assert cells[5] == "≥ 5,000 pods/s (issue 29; 5x upstream's CI floor would be 3,400)"
    assert cells[6] == "yes"  # judged on after


def test_render_without_base_and_quick() -> None:
    here = Path("/after")
    figures = tool.measure(
        tool.select(["PreemptionBasic"], []), quick=True, checkout=here, runner=FakeRunner({here: _sched_out(9.5)})
    )
    table = tool.render(figures, quick=True)
    lines = table.splitlines()
    assert lines[0] == "| benchmark | command | metric | figure | target | met? |"
    e2e = [c.strip() for c in lines[2].strip("|").split("|")]
    assert e2e == [
        "PreemptionBasic",
        "`.venv/bin/python bench/scheduler_perf.py --workload PreemptionBasic --quick`",
        "EndToEndThroughput",
        "1.00 pods/s",
        "≥ 300 pods/s (issue 29)",
        "— (--quick)",  # a smoke run at other sizes is not judged
    ]
    average = [c.strip() for c in lines[3].strip("|").split("|")]
    assert average[3] == "9.50 pods/s"
    assert average[4] == "— (none upstream: its 1000Nodes cases have no threshold)"


def test_a_failed_run_shows_its_error() -> None:
    row = _row("sim-5k", "wall_seconds")
    fig = tool.Figure.of(row, tool.Run((), "exit 1: MemoryError"))
    table = tool.render([fig], quick=False)
    assert "error (exit 1: MemoryError)" in table
    assert table.rstrip().endswith("| — |")


def test_json_has_value_target_and_floor() -> None:
    here, base = Path("/after"), Path("/base")
    runner = FakeRunner({base: _sched_out(300.0), here: _sched_out(2400.0, workload="TopologySpreading")})
    figures = tool.measure(tool.select(["TopologySpreading"], []), quick=False, checkout=here, base=base,
                           runner=runner)  # fmt: skip
    (obj,) = [json.loads(line) for line in tool.as_json(figures, quick=False).splitlines()]
    assert obj["value"] == 2400.0
    assert obj["base_value"] == 300.0
    assert obj["target"] == 2300
    assert obj["met"] is True
    assert obj["floor"]["threshold"] == 460
    assert obj["floor"]["source"].endswith("topology_spreading/performance-config.yaml 5000Nodes_5000Pods")


def test_select_only_skip_and_unknown() -> None:
    assert {r.name for r in tool.select([], ["sim-5k", "sim-1k-10k"])} == set(tool.NAMES) - {"sim-5k", "sim-1k-10k"}
    assert [r.metric for r in tool.select(["sim-idle-1k"], [])] == [
        "steady_wall_ms_per_sim_second",
        "steady_cpu_ms_per_sim_second",
    ]
    with pytest.raises(SystemExit, match="error: unknown benchmark nope"):
        tool.select(["nope"], [])


# --- --write ------------------------------------------------------------------------------------------------------


def test_replace_block_changes_only_the_block() -> None:
    doc = "# Title\n\nintro\n\n<!-- perf-figures -->\nold table\nold line\n<!-- /perf-figures -->\n\nafter text\n"
    out = tool.replace_block(doc, "| new |\n\nProduced by x.\n")
    block = "<!-- perf-figures -->\n| new |\n\nProduced by x.\n<!-- /perf-figures -->"
    assert out == f"# Title\n\nintro\n\n{block}\n\nafter text\n"
    assert tool.replace_block(out, "| newer |") == out.replace("| new |\n\nProduced by x.", "| newer |")
    with pytest.raises(SystemExit, match="exactly one"):
        tool.replace_block("no markers here\n", "x")


def test_main_write_rewrites_the_docs_block(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    doc = tmp_path / "performance.md"
    doc.write_text("before\n<!-- perf-figures -->\nstale\n<!-- /perf-figures -->\nafter\n", encoding="utf-8")
    monkeypatch.setattr(tool, "DOC", doc)
    monkeypatch.setattr(tool, "ROOT", tmp_path)
    monkeypatch.setattr(tool, "run_bench", lambda path, row, quick: tool.Run(tool.parse_lines(_sched_out(777.0))))
    tool.main(["--only", "SchedulingPodAffinity", "--write"])
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("before\n<!-- perf-figures -->\n| benchmark |")
    assert text.endswith("<!-- /perf-figures -->\nafter\n")
    assert "stale" not in text
    assert "| 777 pods/s | ≥ 175 pods/s (5x upstream's CI floor 35) | yes |" in text
    assert "Produced by `.venv/bin/python tools/perf_figures.py --only SchedulingPodAffinity --write` on " in text
    assert "777 pods/s" in capsys.readouterr().out


def test_docs_performance_md_has_one_block_and_the_floors() -> None:
    doc = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert doc.count(tool.BEGIN) == doc.count(tool.END) == 1
    for workload, floor in tool.FLOORS.items():
        assert f"| {workload} | `{floor.file}` | {floor.case} | {floor.threshold:g} |" in doc, workload
    assert "(docs/performance.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


# --- one real run ---------------------------------------------------------------------------------------------------


def test_quick_run_of_the_fastest_row_end_to_end() -> None:
    """The tool runs the bench as a subprocess and reads its figure (SchedulingPodAntiAffinity --quick: 500 nodes,
    100 init and 400 measured pods, a few seconds)."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "perf_figures.py"), "--quick", "--only", "SchedulingPodAntiAffinity",
         "--json"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (obj,) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert obj["name"] == "SchedulingPodAntiAffinity"
    assert obj["command"] == ".venv/bin/python bench/scheduler_perf.py --workload SchedulingPodAntiAffinity --quick"
    assert obj["value"] > 0
    assert "errors" not in obj


@pytest.mark.parametrize(
    ("name", "metric", "text"),
    [
        ("sim-idle-1k", "steady_cpu_ms_per_sim_second", "≤ 2 ms (issue 29)"),
        ("sim-5k", "peak_rss", "≤ 4,096 MB (issue 29: 4 GB)"),
        ("sim-1k-10k", "peak_rss", "— (none in issue 29)"),
    ],
    ids=["idle-cpu", "sim5k-rss", "no-target"],
)
def test_target_cell(name: str, metric: str, text: str) -> None:
    assert tool.fmt_target(_row(name, metric)) == text


def test_provenance_says_when_and_whether_quick() -> None:
    now = datetime.datetime(2026, 11, 29, 7, 9, tzinfo=datetime.UTC)
    full = tool.provenance(["--write"], now=now)
    assert full.startswith("Produced by `.venv/bin/python tools/perf_figures.py --write` on 2026-11-29 07:09 UTC (")
    assert "--quick" not in full
    assert "smoke sizes" in tool.provenance(["--quick", "--write"], now=now)
