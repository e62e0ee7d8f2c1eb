"""Simulation outputs: summary JSON, time-series and per-pod CSV, and a self-contained HTML report with plots.

A simulation result (:class:`SimResultLike`, the shape :mod:`kubeplane.sim.runner` produces) is plain data:
a flat ``summary`` dict, ``timeseries`` rows (one per sample, ``t`` in simulated seconds) and ``pods`` rows,
optionally ``actions`` (the scenario's actions as run) and ``gpu`` rows. This module turns one result into a
directory a person can open (:func:`write_outputs`) and several results of the same scenario into one
side-by-side comparison (:func:`write_comparison`); the plots are :mod:`kubeplane.sim.plots`'.

The page, top to bottom: the run's identity, the headline (the summary's ``headline`` fields), the summary, the
autoscaling part when the runs have node groups or a descheduler (:mod:`.report_autoscaling`), the scenario's
actions (numbered as on the plots' time axes), the plots (or one sentence where a plot would show nothing) and the
pods' outcomes. Long values wrap (``overflow-wrap:anywhere``), so a comparison of several
configurations with 64-character hashes fits a 1280-px window.

Invariants:

* Deterministic bytes: the same input gives byte-identical files, so two runs of a scenario with the same
  seed can be compared with ``cmp``. Nothing in a file comes from the wall clock or the environment: no
  timestamps (unless the summary carries them), PNGs written without the ``Software`` tag, and plots drawn
  under matplotlib's default style whatever the user's ``matplotlibrc`` says.
* Self-contained report: one HTML file with inline CSS and base64-embedded PNGs, no JavaScript and no
  external resource, so it can be mailed or attached to an issue and still open anywhere.
* Every text that comes from the result (scenario, labels, column names, values, reasons) is HTML-escaped
  in the page and mathtext-escaped in the plots.
* CSV columns are the union of the rows' keys in first-seen order; ``None`` is written as an empty field.
  ``summary.json`` is strict JSON: non-finite floats are written as ``null``.
* matplotlib is imported lazily (by :mod:`kubeplane.sim.plots`, when it draws) and only its Agg canvas is used:
  ``import kubeplane.sim`` stays light, and writing a report from a notebook neither switches the notebook's
  backend nor leaks figures.
"""

from __future__ import annotations

import base64
import csv
import html
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from . import memory, outcomes
from .plots import Action, Run, actions_of, figures, time_unit, union_keys
from .report_autoscaling import autoscaling_html


class SimResultLike(Protocol):
    """The attributes of a simulation result this module reads (the runner's ``SimResult`` satisfies it)."""

    @property
    def scenario(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def seed(self) -> int: ...

    @property
    def summary(self) -> Mapping[str, Any]: ...

    @property
    def timeseries(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def pods(self) -> Sequence[Mapping[str, Any]]: ...


SUMMARY_JSON = "summary.json"
TIMESERIES_CSV = "timeseries.csv"
PODS_CSV = "pods.csv"
GPU_CSV = "gpu.csv"
ACTIONS_CSV = "actions.csv"
JOBS_CSV = "jobs.csv"
GANGS_CSV = "gangs.csv"
SCALING_CSV = "scaling.csv"
REPORT_HTML = "report.html"
COMPARISON_JSON = "comparison.json"
COMPARISON_CSV = "comparison.csv"

_MAX_REASONS = 20
_WALL_CLOCK = frozenset(
    {"wall_seconds", "sim_seconds_per_wall_second", "pods_scheduled_per_wall_second", *memory.FIELDS}
)  # what varies from run to run: wall-clock and memory figures

# --------------------------------------------------------------------------------------------------- public API


def write_outputs(result: SimResultLike, out_dir: Path) -> dict[str, Path]:
    """Write ``summary.json``, ``timeseries.csv``, ``pods.csv`` and ``report.html`` for one run into ``out_dir``.

    The directory is created if needed; existing files of these names are replaced. Returns the paths keyed
    ``summary``, ``timeseries``, ``pods`` and ``report``, and ``actions`` (actions.csv), ``gpu`` (gpu.csv),
    ``jobs`` (jobs.csv), ``gangs`` (gangs.csv) and ``scaling`` (scaling.csv: the autoscaler's events) when the
    result has such rows.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = _write_run_data(result, out_dir)
    report = out_dir / REPORT_HTML
    report.write_text(render_html([result]), encoding="utf-8")
    paths["report"] = report
    return paths


def write_comparison(results: Sequence[SimResultLike], out_dir: Path) -> dict[str, Path]:
    """Write one side-by-side report of several runs (typically one scenario and seed under several scheduler
    configurations) into ``out_dir``.

    Writes ``report.html`` (summaries side by side, overlaid plots with one line per label),
    ``comparison.json`` (``{"scenario", "labels", "seeds", "summaries": {label: summary}}`` — so
    ``pandas.DataFrame(doc["summaries"])`` has one column per label), ``comparison.csv`` (a ``metric`` column
    and one column per label) and, in one subdirectory per label, that run's ``summary.json``,
    ``timeseries.csv`` and ``pods.csv``. Repeated labels are made unique (``"x"``, ``"x #2"``) so no run is
    hidden behind another. Returns the paths keyed ``report``, ``comparison_json``, ``comparison_csv`` and
    ``<label>/summary``, ``<label>/timeseries``, ``<label>/pods`` per run.
    """
    if not results:
        raise ValueError("write_comparison needs at least one result")
    out_dir.mkdir(parents=True, exist_ok=True)
    labels = _unique_labels(results)
    paths: dict[str, Path] = {}
    used_dirs: set[str] = set()
    for result, label in zip(results, labels, strict=True):
        sub = out_dir / _dir_name(label, used_dirs)
        sub.mkdir(exist_ok=True)
        for key, path in _write_run_data(result, sub).items():
            paths[f"{label}/{key}"] = path

    summaries = {label: _summary_record(result, label) for result, label in zip(results, labels, strict=True)}
    doc = {
        "scenario": _joined(r.scenario for r in results),
        "labels": labels,
        "seeds": {label: result.seed for result, label in zip(results, labels, strict=True)},
        "summaries": summaries,
    }
    comparison_json = out_dir / COMPARISON_JSON
    comparison_json.write_text(_dump_json(doc), encoding="utf-8")

    metrics = union_keys(summaries.values())
    rows = [{"metric": metric, **{label: summaries[label].get(metric) for label in labels}} for metric in metrics]
    comparison_csv = out_dir / COMPARISON_CSV
    write_csv(rows, comparison_csv, columns=["metric", *labels])

    report = out_dir / REPORT_HTML
    report.write_text(render_html(results), encoding="utf-8")
    paths.update(report=report, comparison_json=comparison_json, comparison_csv=comparison_csv)
    return paths


def write_csv(rows: Iterable[Mapping[str, Any]], path: Path, columns: Sequence[str] | None = None) -> None:
    """Write ``rows`` as CSV; the header is ``columns`` or else the union of the rows' keys in first-seen order.

    ``None`` and missing keys become empty fields; floats are written with ``repr`` (shortest round-trip form),
    so reading a value back with ``float()`` gives the same number.
    """
    materialised = list(rows)
    header = list(columns) if columns is not None else union_keys(materialised)
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        for row in materialised:
            writer.writerow([_csv_cell(row.get(column)) for column in header])


def render_html(results: Sequence[SimResultLike]) -> str:
    """The self-contained HTML report of one run (``len(results) == 1``) or a comparison of several."""
    if not results:
        raise ValueError("render_html needs at least one result")
    labels = _unique_labels(results)
    runs = [Run(label, result) for result, label in zip(results, labels, strict=True)]
    actions = actions_of(results)
    scenario = _joined(r.scenario for r in results)
    seeds = _joined(str(r.seed) for r in results)
    comparing = len(runs) > 1
    title = f"kubeplane simulation — {scenario}" + (" — comparison" if comparing else "")

    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{_esc(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_esc(title)}</h1>",
        '<dl class="meta">',
        f"<dt>Scenario</dt><dd>{_esc(scenario)}</dd>",
        f"<dt>Seed</dt><dd>{_esc(seeds)}</dd>",
        f"<dt>{'Labels' if comparing else 'Label'}</dt><dd>{_esc(', '.join(labels))}</dd>",
        "</dl>",
        _headline_table(runs),
        "<h2>Summary</h2>",
        _summary_table(runs),
        autoscaling_html(runs, metric_table=lambda rs, ms: _metric_table(rs, ms, css="autoscaling"), fmt=_fmt),
        _actions_table(actions, runs),
    ]
    plots = figures(runs, actions)
    if plots:
        parts.append("<h2>Plots</h2>")
    key = _actions_key(actions)
    for plot in plots:
        if plot.png is None:
            parts.append(f'<p class="note">{_esc(plot.note)}</p>')
            continue
        encoded = base64.b64encode(plot.png).decode("ascii")
        caption = _esc(plot.heading)
        if key and not plot.heading.startswith("Distribution"):
            caption += f'<br><span class="actions">{_esc(key)}</span>'
        if plot.note:
            caption += f'<br><span class="zero">{_esc(plot.note)}</span>'
        parts.append(
            f'<figure><img src="data:image/png;base64,{encoded}" alt="{_esc(plot.heading)}">'
            f"<figcaption>{caption}</figcaption></figure>"
        )
    if not any(run.times for run in runs):
        parts.append('<p class="note">No time-series samples were recorded.</p>')
    parts.append(_outcomes_table(runs))
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------------- data files


def _write_run_data(result: SimResultLike, out_dir: Path) -> dict[str, Path]:
    summary = out_dir / SUMMARY_JSON
    summary.write_text(_dump_json(_summary_record(result, result.label)), encoding="utf-8")
    timeseries = out_dir / TIMESERIES_CSV
    write_csv(result.timeseries, timeseries)
    pods = out_dir / PODS_CSV
    write_csv(result.pods, pods)
    paths = {"summary": summary, "timeseries": timeseries, "pods": pods}
    action_rows: Sequence[Mapping[str, Any]] = getattr(result, "actions", None) or []
    if action_rows:  # the scenario's actions as run (kubeplane.sim.runner), only when it has some
        paths["actions"] = out_dir / ACTIONS_CSV
        write_csv(action_rows, paths["actions"])
    gpu_rows: Sequence[Mapping[str, Any]] = getattr(result, "gpu", None) or []
    if gpu_rows:  # one row per pod arrival (kubeplane.sim.gpu), only when the scenario has GPU pods
        paths["gpu"] = out_dir / GPU_CSV
        write_csv(gpu_rows, paths["gpu"])
    for key, filename in (("jobs", JOBS_CSV), ("gangs", GANGS_CSV), ("scaling", SCALING_CSV)):
        rows: Sequence[Mapping[str, Any]] = getattr(result, key, None) or []
        if rows:  # the Jobs and gangs the run saw (sim.workloads), the autoscaler's events (sim.scaling)
            paths[key] = out_dir / filename
            write_csv(rows, paths[key])
    return paths


def _summary_record(result: SimResultLike, label: str) -> dict[str, Any]:
    """scenario/label/seed first, then the summary in its own order (a summary key of the same name wins
    nothing: the identity of the run is what the result says it is)."""
    record: dict[str, Any] = {"scenario": result.scenario, "label": label, "seed": result.seed}
    for key, value in result.summary.items():
        if key not in record:
            record[key] = value
    return record


def _dump_json(doc: Any) -> str:
    return json.dumps(_json_safe(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(_json_safe(value), ensure_ascii=False, separators=(",", ":"))
    return value


def _unique_labels(results: Sequence[SimResultLike]) -> list[str]:
    labels: list[str] = []
    counts: Counter[str] = Counter()
    for result in results:
        base = str(result.label) or "run"
        counts[base] += 1
        label = base if counts[base] == 1 else f"{base} #{counts[base]}"
        while label in labels:  # "x #2" may itself be a given label
            counts[base] += 1
            label = f"{base} #{counts[base]}"
        labels.append(label)
    return labels


def _dir_name(label: str, used: set[str]) -> str:
    """A safe, unique subdirectory name for ``label`` (no separators, no dot-only names)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("._") or "run"
    candidate, n = name, 1
    while candidate.lower() in used:  # case-insensitive file systems
        n += 1
        candidate = f"{name}_{n}"
    used.add(candidate.lower())
    return candidate


def _joined(values: Iterable[str]) -> str:
    return ", ".join(dict.fromkeys(values))


# --------------------------------------------------------------------------------------------------- HTML parts

_CSS = (
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2em auto;max-width:1100px;"
    "padding:0 1em;color:#222}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}"
    "dl.meta{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}dl.meta dt{font-weight:600}"
    "dl.meta dd{margin:0}"
    "table{border-collapse:collapse;font-size:.92em}th,td{border:1px solid #ddd;padding:.25em .6em}"
    "th{background:#f4f4f4;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "td.key{font-family:ui-monospace,monospace}"
    "figure{margin:1.2em 0}figure img{max-width:100%;height:auto}figcaption{color:#555;font-size:.9em}"
    "p.note{color:#555}figcaption span.zero,figcaption span.actions{color:#777}"
    # Long values (hashes, labels, configuration names) wrap instead of widening the page: overflow-wrap:anywhere
    # also lowers a cell's min-content width, so an auto-layout table shrinks to the page (1280-px windows).
    "body,th,td,dd,figcaption{overflow-wrap:anywhere;word-break:break-word}table{max-width:100%}"
    "dl.meta{grid-template-columns:max-content minmax(0,1fr)}"
    "table.headline td.num{font-weight:600}tr.wall td{color:#777}"
)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _fmt(value: Any) -> str:
    """A value as a person reads it in the table (the JSON keeps full precision)."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        if abs(value) >= 1e4:
            return f"{value:,.1f}"
        return f"{value:.4g}"
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(_json_safe(value), ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _headline_table(runs: Sequence[Run[SimResultLike]]) -> str:
    """The scenario's headline fields (its summary's ``headline`` list), before everything else."""
    names = list(dict.fromkeys(n for run in runs for n in run.result.summary.get("headline") or ()))
    if not names:
        return ""
    return "<h2>Headline</h2>" + _metric_table(runs, [str(n) for n in names], css="headline")


def _summary_table(runs: Sequence[Run[SimResultLike]]) -> str:
    records = [_summary_record(run.result, run.label) for run in runs]
    metrics = [m for m in union_keys(records) if m not in ("label", "headline")]
    table = _metric_table(runs, metrics, css="summary")
    if any(m in _WALL_CLOCK for m in metrics):
        table += '<p class="note">Grey rows are wall-clock and memory figures: they vary from run to run.</p>'
    return table


def _metric_table(runs: Sequence[Run[SimResultLike]], metrics: Sequence[str], *, css: str) -> str:
    records = [_summary_record(run.result, run.label) for run in runs]
    header = "".join(f"<th>{_esc(run.label)}</th>" for run in runs)
    rows = [f'<table class="{css}"><thead><tr><th>metric</th>{header}</tr></thead><tbody>']
    for metric in metrics:
        cells = []
        for record in records:
            value = record.get(metric)
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            css = ' class="num"' if numeric else ""
            cells.append(f"<td{css}>{_esc(_fmt(value))}</td>")
        wall = ' class="wall"' if metric in _WALL_CLOCK else ""
        rows.append(f'<tr{wall}><td class="key">{_esc(metric)}</td>{"".join(cells)}</tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _actions_key(actions: Sequence[Action]) -> str:
    """The caption line that explains the numbered dashed lines."""
    if not actions:
        return ""
    return "Dashed lines: the scenario's actions — " + "; ".join(f"{a.number} {a.label}" for a in actions) + "."


def _actions_table(actions: Sequence[Action], runs: Sequence[Run[SimResultLike]]) -> str:
    if not actions:
        return ""
    unit, scale = time_unit(runs)
    rows = ['<h2>Scenario actions</h2><table class="actions"><thead><tr><th>#</th><th>simulated time</th>'
            "<th>action</th></tr></thead><tbody>"]  # fmt: skip
    for action in actions:
        when = f"{action.t:g} s" if unit == "s" else f"{action.t:g} s ({action.t / scale:.4g} {unit})"
        rows.append(f'<tr><td class="num">{action.number}</td><td class="num">{_esc(when)}</td>'
                    f'<td class="key">{_esc(action.label)}</td></tr>')  # fmt: skip
    rows.append("</tbody></table>")
    return "".join(rows)


def _outcomes_table(runs: Sequence[Run[SimResultLike]]) -> str:
    """Pods by end (pods.csv's ``end``: completed, evicted, ...), by final phase and, for pods that did not
    succeed, by reason: where a run's pods ended up."""
    keys: dict[str, None] = {}
    counts: list[Counter[str]] = []
    for run in runs:
        counter: Counter[str] = Counter()
        for pod in run.result.pods:
            if pod.get("end"):
                counter[f"end {pod['end']}"] += 1
            phase = str(pod.get("phase") or "Unknown")
            counter[f"phase {phase}"] += 1
            reason = pod.get("reason")
            if reason and phase != "Succeeded":
                counter[f"{phase}: {reason}"] += 1
        counts.append(counter)
    if not any(counts):
        return ""
    totals: Counter[str] = Counter()
    for counter in counts:
        totals.update(counter)
    ends = [f"end {end}" for end in outcomes.ENDS if f"end {end}" in totals]
    phases = sorted(k for k in totals if k.startswith("phase "))
    reasons = sorted((k for k in totals if not k.startswith(("phase ", "end "))), key=lambda k: (-totals[k], k))
    for key in [*ends, *phases, *reasons[:_MAX_REASONS]]:
        keys.setdefault(key, None)
    header = "".join(f"<th>{_esc(run.label)}</th>" for run in runs)
    rows = [f'<h2>Pod outcomes</h2><table class="outcomes"><thead><tr><th>pods</th>{header}</tr></thead><tbody>']
    for key in keys:
        cells = "".join(f'<td class="num">{counter.get(key, 0):,}</td>' for counter in counts)
        rows.append(f'<tr><td class="key">{_esc(key)}</td>{cells}</tr>')
    rows.append("</tbody></table>")
    if len(reasons) > _MAX_REASONS:
        rows.append(f'<p class="note">{len(reasons) - _MAX_REASONS} rarer reasons not shown (see pods.csv).</p>')
    return "".join(rows)
