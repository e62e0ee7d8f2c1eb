"""Sweeps: a grid of scenarios × scheduler configurations × seeds, each cell one simulation, one combined report.

``kubeplane sim sweep`` (docs/sim.md) is ``sim compare`` generalised to a grid, the way ``fgd-repro`` runs its
policies × seeds: :class:`Grid` names the axes, :meth:`Grid.cells` lists one :class:`Cell` per combination
(scenario-major, then configuration, then seed), an executor (:mod:`kubeplane.sim.executors`: a local process
pool or a Ray cluster) runs :func:`run_cell` over them, and :func:`write_sweep` writes the report.

Invariants:

* A cell is self-contained and :func:`run_cell` is a pure function of it. The scenario travels *parsed*: its
  files (node lists, traces, ``configFile``, workload files) are read on the machine that builds the grid, so a
  worker on another machine needs nothing but kubeplane; the configuration travels as a mapping. The same cell
  gives the same result record (summary, time series, pods, event-log hash) in any process on any machine.
* Wall-clock figures (``wall_seconds`` and the rates derived from it) and memory figures (``bytes_per_node``,
  ``bytes_per_pod``) vary from run to run, so :func:`run_cell`
  moves them out of the summary into :attr:`CellResult.wall`, and :func:`write_sweep` writes them, with the
  executor's name, only to ``timing.json``. Every other file of a sweep's output is byte-identical whichever
  executor ran it (the test compares the directories of a process-pool and a Ray sweep file by file).
* Results are written in the cells' order, not in the order they finished.
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import memory
from .executors import Executor
from .report import COMPARISON_JSON, REPORT_HTML, render_html, write_comparison, write_csv
from .runner import SimResult, scheduler_configuration
from .scenario import Scenario, ScenarioError, load_scheduler_config, read_yaml, seconds

SWEEP_JSON = "sweep.json"
SWEEP_CSV = "sweep.csv"
AGGREGATE_CSV = "aggregate.csv"
TIMING_JSON = "timing.json"
WALL_CLOCK = ("wall_seconds", "sim_seconds_per_wall_second", "pods_scheduled_per_wall_second", *memory.FIELDS)
"""What varies from run to run: the wall-clock figures and the memory ones (:mod:`kubeplane.sim.memory`)."""
OWN_CONFIG = "scenario"
"""The configuration label of a grid without configurations: each scenario's own ``scheduler`` section."""


@dataclass(frozen=True)
class Cell:
    """One simulation of the grid: ``scenario`` under ``config`` (None: the scenario's own) with ``seed``."""

    scenario_label: str
    config_label: str
    seed: int
    scenario: Scenario
    config: Mapping[str, Any] | None
    until: float | None = None

    @property
    def label(self) -> str:
        """``scenario/config/seed=N``: the cell's name in the report and (sanitised) its subdirectory."""
        return f"{self.scenario_label}/{self.config_label}/seed={self.seed}"


@dataclass
class CellResult:
    """A cell's result: the run's records (its summary without wall-clock figures) and those figures apart."""

    cell: Cell
    result: SimResult
    wall: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Grid:
    """The axes of a sweep. ``seeds`` empty: each scenario's own seed. ``configs`` empty: each scenario's own
    configuration (label ``scenario``). Labels are unique per axis (checked by :func:`grid`)."""

    scenarios: Sequence[tuple[str, Scenario]]
    configs: Sequence[tuple[str, Mapping[str, Any] | None]] = ()
    seeds: Sequence[int] = ()
    until: float | None = None

    def cells(self) -> list[Cell]:
        configs = list(self.configs) or [(OWN_CONFIG, None)]
        return [
            Cell(scenario_label, config_label, seed, scenario, config, self.until)
            for scenario_label, scenario in self.scenarios
            for config_label, config in configs
            for seed in (list(self.seeds) or [scenario.seed])
        ]


def run_cell(cell: Cell) -> CellResult:
    """Run one cell (in a worker process or a Ray task: module-level, so it pickles by reference)."""
    from .runner import simulate

    # The virtual clock needs asyncio's own loop (kubeplane.sim.clock); a Ray worker installs uvloop's policy, so
    # the loop is chosen here rather than by whatever policy the worker process has.
    with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
        simulation = simulate(
            cell.scenario, seed=cell.seed, until=cell.until, scheduler_config=cell.config, label=cell.label
        )
        result = runner.run(simulation)
    wall = {key: result.summary.pop(key) for key in WALL_CLOCK if key in result.summary}
    return CellResult(cell, result, wall)


def sweep(grid: Grid, executor: Executor) -> list[CellResult]:
    """Every cell of ``grid`` on ``executor``, in the cells' order."""
    return executor.map(run_cell, grid.cells())


# --------------------------------------------------------------------------------------------------- the grid


def grid(
    scenarios: Sequence[str | Path],
    configs: Sequence[tuple[str, str | Path]] = (),
    seeds: Sequence[int] = (),
    until: float | None = None,
    *,
    variants: Sequence[str | Path] = (),
    base: Path | None = None,
) -> Grid:
    """Load a grid's files (relative to ``base``, else the working directory) and check every configuration, so
    that every mistake is one :class:`ScenarioError` line before any simulation starts. ``variants``
    (:mod:`.variants` files: an ``autoscaler:`` or ``descheduler:`` section) multiply the scenario axis: each
    scenario under each variant, labelled ``<scenario>+<variant>``."""
    from .variants import apply_variant, load_any_variant

    root = base or Path.cwd()
    if not scenarios:
        raise ScenarioError("sweep: give at least one scenario")
    loaded = [Scenario.load(root / Path(path)) for path in scenarios]
    names = [s.name for s in loaded]
    if variants:
        checked_variants = [load_any_variant(root / Path(path)) for path in variants]
        _unique([v.label for v in checked_variants], "variant")
        loaded = [apply_variant(s, v) for s in loaded for v in checked_variants]
        names = [f"{name}+{v.label}" for name in names for v in checked_variants]
    scenario_labels = _unique(names, "scenario")
    checked: list[tuple[str, Mapping[str, Any] | None]] = []
    for label, path in configs:
        config = load_scheduler_config(root / Path(path), where=f"config {label}: ")
        scheduler_configuration(config)  # a ScenarioError naming what is wrong
        checked.append((label, config))
    _unique([label for label, _ in checked], "configuration")
    if len(set(seeds)) != len(seeds):
        raise ScenarioError("sweep: a seed is given twice")
    return Grid(list(zip(scenario_labels, loaded, strict=True)), checked, list(seeds), until)


def load_grid(path: Path) -> dict[str, Any]:
    """A grid file's fields (YAML or JSON): ``scenarios`` (a list of files), ``configs`` (a mapping label ->
    file, or a list of files labelled by their stem), ``seeds`` (a list, ``"1..10"`` or ``"1,2,3"``), ``until``
    and ``variants`` (a list of autoscaler/descheduler variant files); paths relative to the file. Returns keyword
    arguments for :func:`grid` (with ``base``)."""
    from kubeplane.gpu.repro import parse_seeds

    data = read_yaml(path, what="grid ")
    if not isinstance(data, Mapping):
        raise ScenarioError(f"grid {path}: expected a mapping with scenarios, configs, seeds")
    unknown = sorted(set(data) - {"scenarios", "configs", "seeds", "until", "variants"})
    if unknown:
        raise ScenarioError(f"grid {path}: unknown field(s) {', '.join(map(str, unknown))}")
    scenarios = data.get("scenarios") or []
    if not isinstance(scenarios, list) or not all(isinstance(s, str) for s in scenarios):
        raise ScenarioError(f"grid {path}: scenarios: expected a list of scenario files")
    variants = data.get("variants") or []
    if not isinstance(variants, list) or not all(isinstance(v, str) for v in variants):
        raise ScenarioError(f"grid {path}: variants: expected a list of variant files")
    raw_configs = data.get("configs") or []
    if isinstance(raw_configs, Mapping):
        configs = [(str(label), str(file)) for label, file in raw_configs.items()]
    elif isinstance(raw_configs, list) and all(isinstance(c, str) for c in raw_configs):
        configs = [config_option(c) for c in raw_configs]
    else:
        raise ScenarioError(f"grid {path}: configs: expected a mapping label: file or a list of files")
    raw_seeds = data.get("seeds")
    try:
        if raw_seeds is None:
            seeds: list[int] = []
        elif isinstance(raw_seeds, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in raw_seeds):
            seeds = list(raw_seeds)
        else:
            seeds = parse_seeds(str(raw_seeds))
    except ValueError as exc:
        raise ScenarioError(f"grid {path}: {exc}") from None
    until = data.get("until")
    return {
        "scenarios": scenarios,
        "configs": configs,
        "seeds": seeds,
        "until": None if until is None else seconds(until, "until"),
        "variants": variants,
        "base": path.parent,
    }


def config_option(text: str) -> tuple[str, str]:
    """``LABEL=FILE`` or ``FILE`` (labelled by its stem), as ``--config`` takes it."""
    label, sep, file = text.partition("=")
    if not sep:
        return Path(text).stem, text
    if not label or not file:
        raise ScenarioError(f"--config {text!r}: expected LABEL=FILE or FILE")
    return label, file


def _unique(labels: list[str], axis: str) -> list[str]:
    seen: set[str] = set()
    for label in labels:
        if label in seen:
            raise ScenarioError(f"sweep: two {axis}s are labelled {label!r}; give each a different name")
        seen.add(label)
    return labels


# --------------------------------------------------------------------------------------------------- the report


def write_sweep(results: Sequence[CellResult], out_dir: Path, *, executor: str = "") -> dict[str, Path]:
    """The combined report of a sweep in ``out_dir``:

    * what :func:`~kubeplane.sim.report.write_comparison` writes for the cells (``comparison.json``,
      ``comparison.csv``, one subdirectory per cell with its summary, time series and pods), with a report.html
      that opens with a table over seeds;
    * ``sweep.json`` (the axes and one record per cell: scenario, config, seed, subdirectory, summary) and
      ``sweep.csv`` (one row per cell: ``scenario``, ``config``, ``seed``, then the summary's figures);
    * ``aggregate.csv``: per scenario and configuration, each numeric figure's mean, min and max over the seeds;
    * ``timing.json``: the executor and each cell's wall-clock figures, the only file that varies between runs.
    """
    if not results:
        raise ValueError("write_sweep needs at least one cell")
    paths = write_comparison([r.result for r in results], out_dir)
    comparison = json.loads((out_dir / COMPARISON_JSON).read_text(encoding="utf-8"))
    labels: list[str] = comparison["labels"]
    dirs = {label: paths[f"{label}/summary"].parent.name for label in labels}
    records = [
        {
            "scenario": r.cell.scenario_label,
            "config": r.cell.config_label,
            "seed": r.cell.seed,
            "dir": dirs[label],
            "summary": comparison["summaries"][label],
        }
        for r, label in zip(results, labels, strict=True)
    ]
    doc = {
        "scenarios": list(dict.fromkeys(r.cell.scenario_label for r in results)),
        "configs": list(dict.fromkeys(r.cell.config_label for r in results)),
        "seeds": list(dict.fromkeys(r.cell.seed for r in results)),
        "until": results[0].cell.until,
        "cells": records,
    }
    sweep_json = out_dir / SWEEP_JSON
    sweep_json.write_text(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    rows = [
        {"scenario": rec["scenario"], "config": rec["config"], "seed": rec["seed"], "dir": rec["dir"]}
        | {k: v for k, v in rec["summary"].items() if k not in ("scenario", "label", "seed", "headline")}
        for rec in records
    ]
    sweep_csv = out_dir / SWEEP_CSV
    write_csv(rows, sweep_csv)
    aggregate = aggregate_rows(records)
    aggregate_csv = out_dir / AGGREGATE_CSV
    write_csv(aggregate, aggregate_csv)
    report = out_dir / REPORT_HTML
    page = render_html([r.result for r in results])
    headline = [str(n) for r in results for n in r.result.summary.get("headline") or ()]
    over_seeds = _aggregate_html(aggregate, list(dict.fromkeys(headline)))
    report.write_text(page.replace("<h2>Summary</h2>", over_seeds + "<h2>Summary</h2>", 1))
    timing = out_dir / TIMING_JSON
    timing_doc = {
        "executor": executor,
        "cells": [{"label": label, **r.wall} for r, label in zip(results, labels, strict=True)],
    }
    timing.write_text(json.dumps(timing_doc, indent=2) + "\n", encoding="utf-8")
    paths.update(sweep_json=sweep_json, sweep_csv=sweep_csv, aggregate_csv=aggregate_csv, timing=timing)
    return paths


def aggregate_rows(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per (scenario, config), in first-seen order, and per numeric summary figure: ``seeds``, ``mean``,
    ``min``, ``max`` over the cells' seeds (a figure missing or null in a cell is left out of that cell)."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for rec in records:
        groups.setdefault((rec["scenario"], rec["config"]), []).append(rec["summary"])
    rows: list[dict[str, Any]] = []
    for (scenario, config), summaries in groups.items():
        metrics = list(dict.fromkeys(k for s in summaries for k in s if k not in ("seed",)))
        for metric in metrics:
            values = [s.get(metric) for s in summaries]
            numbers = [float(v) for v in values if v is not None and _numeric(v)]
            if not numbers:
                continue
            rows.append({
                "scenario": scenario, "config": config, "metric": metric, "seeds": len(numbers),
                "mean": round(statistics.fmean(numbers), 6), "min": min(numbers), "max": max(numbers),
            })  # fmt: skip
    return rows


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _aggregate_html(rows: Sequence[Mapping[str, Any]], headline: Sequence[str] = ()) -> str:
    """The headline of a sweep: the mean (min–max) over seeds of the scenarios' headline fields and a few usual
    figures, one row per scenario and configuration."""
    import html

    wanted = (*headline, "pods_scheduled", "pods_pending_at_end", "nodes_in_use_peak", "nodes_in_use_mean",
              "cpu_allocation_mean", "gpu_alloc_pct_mean", "gpu_frag_pct_mean", "scheduling_latency_p99")  # fmt: skip
    present = [m for m in dict.fromkeys(wanted) if any(r["metric"] == m for r in rows)]
    keys = list(dict.fromkeys((r["scenario"], r["config"]) for r in rows))
    by = {(r["scenario"], r["config"], r["metric"]): r for r in rows}
    head = "".join(f"<th>{html.escape(m)}</th>" for m in present)
    out = [f"<h2>Over seeds</h2><table class=\"sweep\"><thead><tr><th>scenario</th><th>config</th>{head}</tr>"
           "</thead><tbody>"]  # fmt: skip
    for scenario, config in keys:
        cells = []
        for metric in present:
            row = by.get((scenario, config, metric))
            text = "—" if row is None else f"{row['mean']:.4g} ({row['min']:.4g}–{row['max']:.4g})"
            cells.append(f'<td class="num">{html.escape(text)}</td>')
        out.append(f"<tr><td>{html.escape(scenario)}</td><td>{html.escape(config)}</td>{''.join(cells)}</tr>")
    out.append("</tbody></table><p class=\"note\">Mean over the seeds (min–max); every figure per cell in "
               "sweep.csv, per scenario and configuration in aggregate.csv.</p>")  # fmt: skip
    return "".join(out)
