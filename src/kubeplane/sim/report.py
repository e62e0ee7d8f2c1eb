"""Simulation outputs: summary JSON, time-series and per-pod CSV, and a self-contained HTML report with plots.

A simulation result (:class:`SimResultLike`, the shape :mod:`kubeplane.sim.runner` produces) is plain data:
a flat ``summary`` dict, ``timeseries`` rows (one per sample, ``t`` in simulated seconds) and ``pods`` rows.
This module turns one result into a directory a person can open (:func:`write_outputs`) and several results of
the same scenario into one side-by-side comparison (:func:`write_comparison`).

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
* matplotlib is imported lazily and only its Agg canvas is used, through :class:`~matplotlib.figure.Figure`
  objects that are never registered with pyplot: ``import kubeplane.sim`` stays light, and writing a report
  from a notebook neither switches the notebook's backend nor leaks figures.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


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
REPORT_HTML = "report.html"
COMPARISON_JSON = "comparison.json"
COMPARISON_CSV = "comparison.csv"

# Time-series columns drawn by a dedicated plot; everything else numeric lands in the "extra" plots.
_PHASE_COLUMNS = ("pods_pending", "pods_running", "pods_succeeded", "pods_failed")
_ALLOCATION_COLUMNS = ("cpu_allocation", "memory_allocation")
_NODE_COLUMNS = ("nodes_ready", "nodes_total")
_COUNTER_COLUMNS = ("scheduling_attempts", "preemptions", "evictions")
# Raw amounts behind cpu_allocation / memory_allocation: the fraction plot already shows them.
_RAW_COLUMNS = ("cpu_requested_m", "cpu_allocatable_m", "memory_requested_bytes", "memory_allocatable_bytes")
# GPU pods in the scenario (kubeplane.sim.gpu): the FGD paper's measures over time.
_GPU_PCT_COLUMNS = ("gpu_alloc_pct", "gpu_frag_pct", "gpu_frag_ratio_pct")
_GPU_COUNT_COLUMNS = ("gpu_unallocated",)
_KNOWN_COLUMNS = frozenset(
    (
        "t",
        *_PHASE_COLUMNS,
        *_ALLOCATION_COLUMNS,
        *_NODE_COLUMNS,
        *_COUNTER_COLUMNS,
        *_RAW_COLUMNS,
        *_GPU_PCT_COLUMNS,
        *_GPU_COUNT_COLUMNS,
    )
)
_DISTRIBUTION_COLUMNS = (("scheduling_latency", "scheduling latency"), ("pending_time", "pending time"))
_MAX_EXTRA_PANELS = 12
_MAX_REASONS = 20

_PNG_DPI = 100
_PANEL_SIZE = (5.2, 3.2)  # inches per subplot
_SINGLE_SIZE = (10.0, 4.0)  # inches for a one-axes figure
_MARGIN_IN = {"left": 0.8, "right": 0.25, "bottom": 0.6, "top": 0.55}


# --------------------------------------------------------------------------------------------------- public API


def write_outputs(result: SimResultLike, out_dir: Path) -> dict[str, Path]:
    """Write ``summary.json``, ``timeseries.csv``, ``pods.csv`` and ``report.html`` for one run into ``out_dir``.

    The directory is created if needed; existing files of these names are replaced. Returns the paths keyed
    ``summary``, ``timeseries``, ``pods`` and ``report``.
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

    metrics = _union_keys(summaries.values())
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
    header = list(columns) if columns is not None else _union_keys(materialised)
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
    runs = [_Run(label, result) for result, label in zip(results, labels, strict=True)]
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
        "<h2>Summary</h2>",
        _summary_table(runs),
    ]
    figures = _figures(runs)
    if figures:
        parts.append("<h2>Plots</h2>")
    for heading, png in figures:
        encoded = base64.b64encode(png).decode("ascii")
        parts.append(
            f'<figure><img src="data:image/png;base64,{encoded}" alt="{_esc(heading)}">'
            f"<figcaption>{_esc(heading)}</figcaption></figure>"
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
    gpu_rows: Sequence[Mapping[str, Any]] = getattr(result, "gpu", None) or []
    if gpu_rows:  # one row per pod arrival (kubeplane.sim.gpu), only when the scenario has GPU pods
        paths["gpu"] = out_dir / GPU_CSV
        write_csv(gpu_rows, paths["gpu"])
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


def _union_keys(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


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
    "p.note{color:#555}"
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


def _summary_table(runs: Sequence[_Run]) -> str:
    records = [_summary_record(run.result, run.label) for run in runs]
    metrics = [m for m in _union_keys(records) if m != "label"]
    header = "".join(f"<th>{_esc(run.label)}</th>" for run in runs)
    rows = [f'<table class="summary"><thead><tr><th>metric</th>{header}</tr></thead><tbody>']
    for metric in metrics:
        cells = []
        for record in records:
            value = record.get(metric)
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            css = ' class="num"' if numeric else ""
            cells.append(f"<td{css}>{_esc(_fmt(value))}</td>")
        rows.append(f'<tr><td class="key">{_esc(metric)}</td>{"".join(cells)}</tr>')
    rows.append("</tbody></table>")
    return "".join(rows)


def _outcomes_table(runs: Sequence[_Run]) -> str:
    """Pods by final phase and, for pods that did not succeed, by reason: where a run's pods ended up."""
    keys: dict[str, None] = {}
    counts: list[Counter[str]] = []
    for run in runs:
        counter: Counter[str] = Counter()
        for pod in run.result.pods:
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
    phases = sorted(k for k in totals if k.startswith("phase "))
    reasons = sorted((k for k in totals if not k.startswith("phase ")), key=lambda k: (-totals[k], k))
    for key in [*phases, *reasons[:_MAX_REASONS]]:
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


# --------------------------------------------------------------------------------------------------- plots


@dataclass
class _Run:
    label: str
    result: SimResultLike

    def __post_init__(self) -> None:
        self.times = [_number(row.get("t")) for row in self.result.timeseries]

    def column(self, name: str) -> list[float]:
        return [_number(row.get(name)) for row in self.result.timeseries]

    def has(self, name: str) -> bool:
        return any(not math.isnan(_number(row.get(name))) for row in self.result.timeseries)

    def pod_values(self, name: str) -> list[float]:
        values = (_number(pod.get(name)) for pod in self.result.pods)
        return sorted(v for v in values if not math.isnan(v))


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def _time_unit(runs: Sequence[_Run]) -> tuple[str, float]:
    """Minutes or hours for long runs, so the axis reads "45 min" rather than "2700 s"."""
    finite = [t for run in runs for t in run.times if math.isfinite(t)]
    longest = max(finite, default=0.0)
    if longest > 3 * 3600:
        return "h", 3600.0
    if longest > 600:
        return "min", 60.0
    return "s", 1.0


def _mpl_text(text: str) -> str:
    """Text safe for matplotlib: ``$`` would start mathtext, and a legend drops labels beginning with ``_``."""
    text = text.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def _figures(runs: Sequence[_Run]) -> list[tuple[str, bytes]]:
    """(heading, PNG) for every plot the data supports, in a fixed order."""
    from matplotlib import style

    comparing = len(runs) > 1
    present = _union_keys(row for run in runs for row in run.result.timeseries)
    extra_alloc = [c for c in present if c.endswith("_allocation") and c not in _KNOWN_COLUMNS]
    numeric_extra = [
        c for c in present if c not in _KNOWN_COLUMNS and c not in extra_alloc and any(run.has(c) for run in runs)
    ]
    unit, scale = _time_unit(runs)

    specs: list[tuple[str, list[str], bool, tuple[float, float] | None]] = [
        ("Pods by phase over time", list(_PHASE_COLUMNS), not comparing, None),
        ("CPU and memory allocation (requested / allocatable)", list(_ALLOCATION_COLUMNS), not comparing, (0, 1.05)),
        ("Nodes", list(_NODE_COLUMNS), not comparing, None),
        ("Cumulative scheduling attempts, preemptions and evictions", list(_COUNTER_COLUMNS), False, None),
        ("Extended resource allocation", extra_alloc, not comparing, (0, 1.05)),
        (
            "GPU allocation and fragmentation (% of GPU capacity; frag ratio: % of idle GPU)",
            list(_GPU_PCT_COLUMNS),
            not comparing,
            None,
        ),
        ("Unallocated GPUs", list(_GPU_COUNT_COLUMNS), False, None),
        ("Other time series", numeric_extra[:_MAX_EXTRA_PANELS], False, None),
    ]
    out: list[tuple[str, bytes]] = []
    with style.context("default"), warnings.catch_warnings():
        # Labels come from user data; a glyph the bundled font lacks is drawn as a box, not an error.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font", category=UserWarning)
        for heading, wanted, combine, ylim in specs:
            columns = [c for c in wanted if any(run.has(c) for run in runs)]
            if not columns:
                continue
            fig = _time_figure(runs, heading, columns, combine, ylim, unit, scale)
            out.append((heading, _png(fig)))
        dist = [(col, name) for col, name in _DISTRIBUTION_COLUMNS if any(run.pod_values(col) for run in runs)]
        if dist:
            heading = "Distribution of " + " and ".join(name for _, name in dist) + " (CDF)"
            out.append((heading, _png(_cdf_figure(runs, heading, dist))))
    return out


def _new_figure(panels: int) -> tuple[Figure, list[Axes]]:
    """A figure of ``panels`` axes (two columns when more than one) with fixed margins.

    Margins are set in inches rather than by a layout engine: a layout engine costs a second full draw per
    PNG, and these figures have known sizes, titles and short tick labels.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ncols = 1 if panels == 1 else 2
    nrows = math.ceil(panels / ncols)
    width, height = _SINGLE_SIZE if panels == 1 else (_PANEL_SIZE[0] * ncols, _PANEL_SIZE[1] * nrows)
    fig = Figure(figsize=(width, height), dpi=_PNG_DPI)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(
        left=_MARGIN_IN["left"] / width,
        right=1 - _MARGIN_IN["right"] / width,
        bottom=_MARGIN_IN["bottom"] / height,
        top=1 - _MARGIN_IN["top"] / height,
        wspace=0.22,
        hspace=0.45,
    )
    grid = fig.subplots(nrows, ncols, squeeze=False)
    axes = [ax for row in grid for ax in row]
    for ax in axes[panels:]:
        ax.set_visible(False)
    return fig, axes[:panels]


def _time_figure(
    runs: Sequence[_Run],
    heading: str,
    columns: Sequence[str],
    combine: bool,
    ylim: tuple[float, float] | None,
    unit: str,
    scale: float,
) -> Figure:
    """Lines over simulated time: one axes with a line per column (``combine``, single runs) or one axes per
    column with a line per run (comparisons, and counters whose scales differ too much to share an axis)."""
    fig, axes = _new_figure(1 if combine else len(columns))
    fig.suptitle(_mpl_text(heading))
    for index, column in enumerate(columns):
        ax = axes[0] if combine else axes[index]
        for run_index, run in enumerate(runs):
            if not run.has(column):
                continue
            times = [t / scale for t in run.times]
            name = column if combine else run.label
            color = f"C{index % 10}" if combine else f"C{run_index % 10}"
            ax.plot(times, run.column(column), label=_mpl_text(name), color=color, linewidth=1.4)
        if not combine:
            ax.set_title(_mpl_text(column), fontsize="medium")
    for ax in axes:
        ax.set_xlabel(f"simulated time ({unit})")
        ax.grid(visible=True, alpha=0.3)
        if ylim is not None:
            ax.set_ylim(*ylim)
        if combine or len(runs) > 1:
            ax.legend(fontsize="small", loc="best")
    return fig


def _cdf_figure(runs: Sequence[_Run], heading: str, columns: Sequence[tuple[str, str]]) -> Figure:
    """Empirical CDFs, one panel per measure and one step line per run; the legend carries n, p50 and p99."""
    fig, axes = _new_figure(len(columns))
    fig.suptitle(_mpl_text(heading))
    for ax, (column, name) in zip(axes, columns, strict=True):
        for run_index, run in enumerate(runs):
            values = run.pod_values(column)
            if not values:
                continue
            n = len(values)
            fractions = [(i + 1) / n for i in range(n)]
            legend = f"{run.label} (n={n:,}, p50={_quantile(values, 0.5):.3g}s, p99={_quantile(values, 0.99):.3g}s)"
            ax.step(values, fractions, where="post", label=_mpl_text(legend), color=f"C{run_index % 10}")
        ax.set_title(_mpl_text(name), fontsize="medium")
        ax.set_xlabel("seconds (simulated)")
        ax.set_ylabel("fraction of pods")
        ax.set_ylim(0, 1.02)
        ax.grid(visible=True, alpha=0.3)
        ax.legend(fontsize="small", loc="lower right")
    return fig


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile of sorted, non-empty values (the sample itself, never an interpolation)."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    # No Software tag (it names the matplotlib version) and no dates: identical inputs, identical bytes.
    fig.savefig(buffer, format="png", dpi=_PNG_DPI, metadata={"Software": None})
    return buffer.getvalue()
