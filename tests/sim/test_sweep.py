"""``kubeplane sim sweep`` on the local process pool: the grid, pure cells, the combined report, the CLI's one-line
errors. (The same sweep on Ray, file for file identical: tests/sim/test_sweep_ray.py.)

kubeplane's own feature (issue 29): the grid is what ``fgd-repro`` runs for the FGD paper (policies × seeds) and what
``sim compare`` runs for one seed; no upstream Kubernetes behaviour is involved beyond the scheduler configurations
each cell runs (upstream's LeastAllocated default vs MostAllocated, pinned elsewhere).
"""

from __future__ import annotations

import asyncio
import csv
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from typer.testing import CliRunner

from kubeplane.cli.main import app
from kubeplane.sim import sweep as sweeping
from kubeplane.sim.executors import RAY_MISSING, ExecutorError, ProcessPool, RayExecutor, executor
from kubeplane.sim.scenario import ScenarioError

from .sweep_scenario import EXAMPLES, files, sweep_args, write_tiny

In = TypeVar("In")
Out = TypeVar("Out")


class InProcess:
    """The simplest executor: a loop in this process (the reference the process pool must agree with)."""

    name = "in-process"

    def map(self, fn: Callable[[In], Out], items: Sequence[In]) -> list[Out]:
        return [fn(item) for item in items]


@pytest.fixture
def tiny_grid(tmp_path: Path) -> sweeping.Grid:
    scenario = write_tiny(tmp_path)
    configs = [("least", EXAMPLES / "least-allocated.yaml"), ("most", EXAMPLES / "most-allocated.yaml")]
    return sweeping.grid([scenario], configs, [1, 2, 3])


def test_grid_cells_are_scenario_then_config_then_seed(tiny_grid: sweeping.Grid) -> None:
    cells = tiny_grid.cells()
    assert [c.label for c in cells] == [
        "tiny/least/seed=1", "tiny/least/seed=2", "tiny/least/seed=3",
        "tiny/most/seed=1", "tiny/most/seed=2", "tiny/most/seed=3",
    ]  # fmt: skip
    most = cells[3].config
    assert most is not None
    assert most["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"]["type"] == ("MostAllocated")


def test_grid_defaults_to_the_scenarios_own_seed_and_configuration(tmp_path: Path) -> None:
    cells = sweeping.grid([write_tiny(tmp_path)]).cells()
    assert [(c.config_label, c.config, c.seed) for c in cells] == [(sweeping.OWN_CONFIG, None, 1)]


def test_a_cell_is_pure_and_keeps_wall_clock_figures_apart(tiny_grid: sweeping.Grid) -> None:
    cell = tiny_grid.cells()[0]
    first, second = sweeping.run_cell(cell), sweeping.run_cell(cell)
    assert first.result.summary == second.result.summary
    assert first.result.pods == second.result.pods
    assert first.result.timeseries == second.result.timeseries
    assert set(first.wall) == set(sweeping.WALL_CLOCK)
    assert not set(sweeping.WALL_CLOCK) & set(first.result.summary)
    assert first.result.summary["pods_created"] == 12
    assert first.result.label == "tiny/least/seed=1"


def test_a_cell_runs_on_asyncios_loop_under_a_uvloop_policy(tiny_grid: sweeping.Grid) -> None:
    """A Ray worker installs uvloop's event loop policy; the virtual clock needs asyncio's loop (it reads the
    loop's ready queue), so run_cell picks the loop itself. Without that this cell raised AttributeError."""
    uvloop = pytest.importorskip("uvloop")  # uvicorn[standard], a main dependency, brings it
    reference = sweeping.run_cell(tiny_grid.cells()[1])
    previous = asyncio.get_event_loop_policy()
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    try:
        under_uvloop = sweeping.run_cell(tiny_grid.cells()[1])
    finally:
        asyncio.set_event_loop_policy(previous)
    assert under_uvloop.result.summary == reference.result.summary


def test_the_process_pool_writes_the_same_report_as_a_loop_in_process(tiny_grid: sweeping.Grid, tmp_path: Path) -> None:
    pooled = sweeping.sweep(tiny_grid, ProcessPool(2))
    looped = sweeping.sweep(tiny_grid, InProcess())
    sweeping.write_sweep(pooled, tmp_path / "pool", executor="process-pool")
    sweeping.write_sweep(looped, tmp_path / "loop", executor="in-process")
    pool_files, loop_files = files(tmp_path / "pool"), files(tmp_path / "loop")
    assert pool_files == loop_files
    assert {"sweep.json", "sweep.csv", "aggregate.csv", "comparison.json", "comparison.csv", "report.html"} <= set(
        pool_files
    )
    assert "tiny_most_seed_3/summary.json" in pool_files
    assert "tiny_least_seed_1/pods.csv" in pool_files
    hashes = [r.result.summary["event_log_hash"] for r in pooled]
    assert len(set(hashes)) == 6  # every cell is a different simulation: seeds and configurations matter
    assert json.loads((tmp_path / "pool" / "timing.json").read_text())["executor"] == "process-pool"


def test_the_report_records_each_cell_and_aggregates_over_seeds(tiny_grid: sweeping.Grid, tmp_path: Path) -> None:
    results = sweeping.sweep(tiny_grid, InProcess())
    sweeping.write_sweep(results, tmp_path)
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert doc["scenarios"] == ["tiny"]
    assert doc["configs"] == ["least", "most"]
    assert doc["seeds"] == [1, 2, 3]
    assert [(c["config"], c["seed"], c["dir"]) for c in doc["cells"]][:2] == [
        ("least", 1, "tiny_least_seed_1"),
        ("least", 2, "tiny_least_seed_2"),
    ]
    for cell in doc["cells"]:  # each cell's summary is its subdirectory's summary.json
        assert json.loads((tmp_path / cell["dir"] / "summary.json").read_text()) == cell["summary"]
    rows = list(csv.DictReader((tmp_path / "sweep.csv").read_text().splitlines()))
    assert [r["seed"] for r in rows] == ["1", "2", "3", "1", "2", "3"]
    assert "wall_seconds" not in rows[0]
    aggregate = {
        (r["config"], r["metric"]): r for r in csv.DictReader((tmp_path / "aggregate.csv").read_text().splitlines())
    }
    peaks = [float(r["nodes_in_use_peak"]) for r in rows if r["config"] == "most"]
    most = aggregate[("most", "nodes_in_use_peak")]
    assert int(most["seeds"]) == 3
    assert float(most["mean"]) == pytest.approx(statistics.fmean(peaks))
    assert float(most["min"]) == min(peaks)
    assert float(most["max"]) == max(peaks)
    page = (tmp_path / "report.html").read_text()
    assert "<h2>Over seeds</h2>" in page
    assert page.index("Over seeds") < page.index("<h2>Summary</h2>")


def test_a_grid_file_names_its_files_relative_to_itself(tmp_path: Path) -> None:
    write_tiny(tmp_path)
    (tmp_path / "least.yaml").write_text((EXAMPLES / "least-allocated.yaml").read_text())
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text("scenarios: [tiny.yaml]\nconfigs: {spread: least.yaml}\nseeds: 4..5\nuntil: 1m\n")
    fields = sweeping.load_grid(grid_file)
    grid = sweeping.grid(**fields)
    assert [c.label for c in grid.cells()] == ["tiny/spread/seed=4", "tiny/spread/seed=5"]
    assert grid.until == 60.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("scenarios: [tiny.yaml]\nworkers: 3\n", "unknown field(s) workers"),
        ("scenarios: [tiny.yaml]\nseeds: 3..1\n", "seeds: '3..1' is not a seed, a list a,b or a range a..b"),
        ("scenarios: tiny.yaml\n", "scenarios: expected a list of scenario files"),
        ("scenarios: [tiny.yaml]\nconfigs: 7\n", "configs: expected a mapping label: file or a list of files"),
        ("- a\n", "expected a mapping with scenarios, configs, seeds"),
    ],
)
def test_grid_file_errors_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    write_tiny(tmp_path)
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(text)
    with pytest.raises(ScenarioError) as caught:
        sweeping.load_grid(grid_file)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_grid_refuses_duplicate_labels_and_invalid_configurations(tmp_path: Path) -> None:
    scenario = write_tiny(tmp_path)
    least = EXAMPLES / "least-allocated.yaml"
    with pytest.raises(ScenarioError, match="two configurations are labelled 'a'"):
        sweeping.grid([scenario], [("a", least), ("a", least)])
    with pytest.raises(ScenarioError, match="two scenarios are labelled 'tiny'"):
        sweeping.grid([scenario, scenario])
    with pytest.raises(ScenarioError, match="a seed is given twice"):
        sweeping.grid([scenario], seeds=[1, 1])
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nparallelism: 0\n")
    with pytest.raises(ScenarioError, match=r"^scheduler configuration: .*parallelism"):
        sweeping.grid([scenario], [("bad", bad)])


def test_sweep_cli_writes_the_combined_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    got = CliRunner().invoke(app, [*sweep_args(write_tiny(tmp_path), out), "--workers", "2", "--until", "1m"])
    assert got.exit_code == 0, got.output
    assert "tiny/most/seed=3: scheduled" in got.output
    assert "6 cell(s) in" in got.output
    assert json.loads((out / "sweep.json").read_text())["until"] == 60.0
    assert len(json.loads((out / "comparison.json").read_text())["labels"]) == 6


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--workers", "0"], "error: --workers must be at least 1, not 0"),
        (["--workers", "2", "--ray-address", "127.0.0.1:1"], "error: --workers sizes the local process pool"),
        (["--seeds", "x"], "error: seeds: 'x' is not a seed"),
        (["--config", "=x.yaml"], "error: --config '=x.yaml': expected LABEL=FILE or FILE"),
        (["--config", "a=/nonexistent/x.yaml"], "error: config a: cannot read /nonexistent/x.yaml"),
    ],
)
def test_sweep_cli_errors_are_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    got = CliRunner().invoke(app, ["sim", "sweep", "--scenario", str(write_tiny(tmp_path)), *extra])
    assert got.exit_code == 1
    assert got.output.startswith(message), got.output
    assert got.output.count("\n") == 1, got.output


def test_sweep_cli_without_a_scenario_says_so() -> None:
    got = CliRunner().invoke(app, ["sim", "sweep", "--seeds", "1"])
    assert got.exit_code == 1
    assert got.output == "error: give at least one --scenario (or a grid file with scenarios)\n"


def test_ray_address_without_ray_installed_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError, whether the extra is installed or not
    with pytest.raises(ExecutorError, match="pip install 'kubeplane\\[ray\\]'"):
        RayExecutor("127.0.0.1:1").map(len, ["a"])
    got = CliRunner().invoke(app, ["sim", "sweep", "--scenario", str(write_tiny(tmp_path)), "--ray-address", "x:1"])
    assert got.exit_code == 1
    assert got.output.endswith(f"error: {RAY_MISSING}\n")
    assert "Traceback" not in got.output


def test_executor_choice() -> None:
    assert isinstance(executor(), ProcessPool)
    pool = executor(workers=3)
    assert isinstance(pool, ProcessPool)
    assert pool.workers == 3
    assert isinstance(executor(ray_address="auto"), RayExecutor)
    with pytest.raises(ValueError, match="workers must be at least 1"):
        ProcessPool(0)


def test_variants_multiply_the_scenario_axis(tmp_path: Path) -> None:
    """``variants`` (sim.variants files): each scenario under each autoscaler section, labelled scenario+variant."""
    variants = [EXAMPLES / "expander-least-waste.yaml", EXAMPLES / "expander-price.yaml"]
    built = sweeping.grid([EXAMPLES / "autoscaling.yaml"], seeds=[1], variants=variants)
    cells = built.cells()
    assert [c.label for c in cells] == [
        "autoscaling+expander-least-waste/scenario/seed=1",
        "autoscaling+expander-price/scenario/seed=1",
    ]
    assert [dict(c.scenario.autoscaler or {})["expander"] for c in cells] == ["least-waste", "price"]
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(f"scenarios: [{EXAMPLES / 'autoscaling.yaml'}]\nvariants: [{variants[1]}]\nuntil: 1m\n")
    out = tmp_path / "out"
    got = CliRunner().invoke(app, ["sim", "sweep", str(grid_file), "--workers", "1", "--out", str(out)])
    assert got.exit_code == 0, got.output
    assert "autoscaling+expander-price/scenario/seed=1: scheduled" in got.output
    record = json.loads((out / "sweep.json").read_text())["cells"][0]
    assert "cost" in record["summary"]


def test_a_variant_without_one_known_section_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("scheduler: {}\n")
    with pytest.raises(
        ScenarioError, match=r"^variant .*bad\.yaml: expected one section, autoscaler: or descheduler:$"
    ):
        sweeping.grid([write_tiny(tmp_path)], variants=[bad])
