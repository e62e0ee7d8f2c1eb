"""The report's plots: PNGs of a run's (or several runs') time series and distributions, with the scenario's
actions marked on every time axis, and a sentence instead of a plot for what has nothing to show.

Invariants (the report's, :mod:`kubeplane.sim.report`):

* Deterministic bytes: the same input gives byte-identical PNGs (no ``Software`` tag, no dates, matplotlib's
  default style whatever the user's ``matplotlibrc`` says).
* Every time axis carries the scenario's actions as dashed vertical lines numbered in time order (1, 2, ...); the
  numbers are those of the report's action table and figure captions, the same in every figure of a report. In a
  comparison the actions of all runs are merged (they share the scenario, so normally they are the same).
* A series that is zero at every sample of every run is not drawn: the figure's caption says which were left out,
  and a figure left with nothing to draw becomes one sentence (:attr:`Plot.png` is None). The scheduling latency
  CDF is replaced likewise when every pod was bound in the simulated instant it was created: on the virtual clock
  a scheduling cycle and an API call take no simulated time, so that plot would show a single step at zero.
* matplotlib is imported lazily and only its Agg canvas is used, through :class:`~matplotlib.figure.Figure` objects
  never registered with pyplot.
"""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from kubeplane.sim.columns import (
    ALLOCATION_COLUMNS,
    COUNTER_COLUMNS,
    ENDED_COLUMNS,
    GPU_COUNT_COLUMNS,
    GPU_PCT_COLUMNS,
    NODE_COLUMNS,
    NODE_GROUP_PREFIX,
    PHASE_COLUMNS,
    RAW_COLUMNS,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


class RunLike(Protocol):
    """The attributes of a result the plots read."""

    @property
    def timeseries(self) -> Sequence[Mapping[str, Any]]: ...

    @property
    def pods(self) -> Sequence[Mapping[str, Any]]: ...


# Time-series columns drawn by a dedicated plot (kubeplane.sim.columns); everything else numeric lands in the
# "extra" plots.
KNOWN_COLUMNS = frozenset(
    ("t", *PHASE_COLUMNS, *ALLOCATION_COLUMNS, *NODE_COLUMNS, *COUNTER_COLUMNS, *ENDED_COLUMNS, *RAW_COLUMNS,
     *GPU_PCT_COLUMNS, *GPU_COUNT_COLUMNS)
)  # fmt: skip
_DISTRIBUTION_COLUMNS = (("scheduling_latency", "scheduling latency"), ("pending_time", "pending time"))
_MAX_EXTRA_PANELS = 12

_PNG_DPI = 100
_PANEL_SIZE = (5.2, 3.2)  # inches per subplot
_SINGLE_SIZE = (10.0, 4.0)  # inches for a one-axes figure
_MARGIN_IN = {"left": 0.8, "right": 0.25, "bottom": 0.6, "top": 0.55}
_ACTION_LABEL_GAP = 0.025  # action numbers closer than this share of the axis width share one label


@dataclass(frozen=True)
class Plot:
    """One item of the report's plot section: a PNG with its heading and an optional note for the caption, or
    (``png`` None) a sentence standing where a plot had nothing to show."""

    heading: str
    png: bytes | None
    note: str = ""


@dataclass(frozen=True)
class Action:
    """A scenario action as marked on the time axes: its number (1-based, in time order), time and label."""

    number: int
    t: float
    label: str


R = TypeVar("R", bound=RunLike)


@dataclass
class Run(Generic[R]):
    """One run's data as the plots read it, under its (unique) label."""

    label: str
    result: R

    def __post_init__(self) -> None:
        self.times = [number(row.get("t")) for row in self.result.timeseries]

    def column(self, name: str) -> list[float]:
        return [number(row.get(name)) for row in self.result.timeseries]

    def has(self, name: str) -> bool:
        return any(not math.isnan(number(row.get(name))) for row in self.result.timeseries)

    def zero(self, name: str) -> bool:
        """Every recorded value of ``name`` is 0 (a column this run lacks counts as zero)."""
        return all(v == 0 for v in self.column(name) if not math.isnan(v))

    def pod_values(self, name: str) -> list[float]:
        values = (number(pod.get(name)) for pod in self.result.pods)
        return sorted(v for v in values if not math.isnan(v))


def number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def actions_of(results: Iterable[Any]) -> list[Action]:
    """The actions of ``results`` (each result's optional ``actions`` rows: ``t``, ``label``), merged and
    numbered in time order; an action at the same time with the same label in several runs is one action."""
    seen: dict[tuple[float, str], None] = {}
    for result in results:
        for row in getattr(result, "actions", None) or ():
            t = number(row.get("t"))
            if math.isfinite(t):
                seen.setdefault((t, str(row.get("label") or row.get("action") or "action")), None)
    ordered = sorted(seen, key=lambda key: key[0])  # stable: same-time actions keep their order
    return [Action(i + 1, t, label) for i, (t, label) in enumerate(ordered)]


def time_unit(runs: Sequence[Run[Any]]) -> tuple[str, float]:
    """Minutes or hours for long runs, so the axis reads "45 min" rather than "2700 s"."""
    finite = [t for run in runs for t in run.times if math.isfinite(t)]
    longest = max(finite, default=0.0)
    if longest > 3 * 3600:
        return "h", 3600.0
    if longest > 600:
        return "min", 60.0
    return "s", 1.0


def mpl_text(text: str) -> str:
    """Text safe for matplotlib: ``$`` would start mathtext, and a legend drops labels beginning with ``_``."""
    text = text.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def _names(columns: Sequence[str]) -> str:
    return ", ".join(columns)


@dataclass(frozen=True)
class _Spec:
    heading: str
    columns: Sequence[str]
    combine: bool  # one axes with a line per column (single runs) instead of one axes per column
    ylim: tuple[float, float] | None = None
    integer: bool = False  # counts: integer ticks


def figures(runs: Sequence[Run[Any]], actions: Sequence[Action]) -> list[Plot]:
    """Every plot the data supports, in a fixed order, each all-zero series left out and said so."""
    from matplotlib import style

    comparing = len(runs) > 1
    present = union_keys(row for run in runs for row in run.result.timeseries)
    extra_alloc = [c for c in present if c.endswith("_allocation") and c not in KNOWN_COLUMNS]
    groups = [c for c in present if c.startswith(NODE_GROUP_PREFIX)]  # kubeplane.sim.autoscaling
    numeric_extra = [
        c
        for c in present
        if c not in KNOWN_COLUMNS and c not in extra_alloc and c not in groups and any(run.has(c) for run in runs)
    ]
    single = not comparing
    # the runner's ended_* columns; evictions alone (an older result) stays with the counters only
    ended = ENDED_COLUMNS if any(c.startswith("ended_") for c in present) else ()
    specs = [
        _Spec("Pods by phase over time", PHASE_COLUMNS, single, integer=True),
        _Spec("CPU and memory allocation (requested / allocatable)", ALLOCATION_COLUMNS, single, (0, 1.05)),
        _Spec("Nodes: total, Ready, and in use (with a non-terminal pod bound)", NODE_COLUMNS, single, integer=True),
        _Spec("Cumulative scheduling attempts, preemptions and evictions", COUNTER_COLUMNS, False, integer=True),
        _Spec("Nodes per node group (registered, not yet deleted)", groups, single, integer=True),
        _Spec("Pods ended, cumulative, by how they ended", ended, single, integer=True),
        _Spec("Extended resource allocation", extra_alloc, single, (0, 1.05)),
        _Spec(
            "GPU allocation and fragmentation (% of GPU capacity; frag ratio: % of idle GPU)", GPU_PCT_COLUMNS, single
        ),
        _Spec("Unallocated GPUs", GPU_COUNT_COLUMNS, False),
        _Spec("Other time series", numeric_extra[:_MAX_EXTRA_PANELS], False),
    ]
    unit, scale = time_unit(runs)
    every = " in every run" if comparing else ""
    out: list[Plot] = []
    with style.context("default"), warnings.catch_warnings():
        # Labels come from user data; a glyph the bundled font lacks is drawn as a box, not an error.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from font", category=UserWarning)
        for spec in specs:
            columns = [c for c in spec.columns if any(run.has(c) for run in runs)]
            if not columns:
                continue
            zero = [c for c in columns if all(run.zero(c) for run in runs)]
            drawn = [c for c in columns if c not in zero]
            if not drawn:
                verb = "is" if len(zero) == 1 else "are"
                sentence = f"{spec.heading}: {_names(zero)} {verb} zero throughout{every}, so there is nothing to plot."
                out.append(Plot(spec.heading, None, sentence))
                continue
            fig = _time_figure(runs, spec, drawn, actions, unit, scale)
            note = f"Zero throughout{every}, not drawn: {_names(zero)}." if zero else ""
            out.append(Plot(spec.heading, _png(fig), note))
        out += _distributions(runs)
    return out


def _distributions(runs: Sequence[Run[Any]]) -> list[Plot]:
    dist = [(col, name) for col, name in _DISTRIBUTION_COLUMNS if any(run.pod_values(col) for run in runs)]
    out: list[Plot] = []
    latency = [v for run in runs for v in run.pod_values("scheduling_latency")]
    if latency and all(v == 0 for v in latency):
        dist = [d for d in dist if d[0] != "scheduling_latency"]
        out.append(
            Plot(
                "Scheduling latency",
                None,
                f"Scheduling latency is 0 s for all {len(latency):,} scheduled pods: on the virtual clock a scheduling "
                "cycle and the API calls take no simulated time, so this measure shows only queueing and back-off, "
                "and no pod waited.",
            )
        )
    if dist:
        heading = "Distribution of " + " and ".join(name for _, name in dist) + " (CDF)"
        out.insert(0, Plot(heading, _png(_cdf_figure(runs, heading, dist))))
    return out


def union_keys(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every key of ``rows``, in first-seen order (a table's columns when rows differ)."""
    seen: dict[str, None] = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


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
    runs: Sequence[Run[Any]],
    spec: _Spec,
    columns: Sequence[str],
    actions: Sequence[Action],
    unit: str,
    scale: float,
) -> Figure:
    """Lines over simulated time: one axes with a line per column (``combine``, single runs) or one axes per
    column with a line per run (comparisons, and counters whose scales differ too much to share an axis)."""
    from matplotlib.ticker import MaxNLocator

    fig, axes = _new_figure(1 if spec.combine else len(columns))
    fig.suptitle(mpl_text(spec.heading))
    for index, column in enumerate(columns):
        ax = axes[0] if spec.combine else axes[index]
        for run_index, run in enumerate(runs):
            if not run.has(column):
                continue
            times = [t / scale for t in run.times]
            name = column if spec.combine else run.label if len(runs) > 1 else "_nolegend_"
            color = f"C{index % 10}" if spec.combine else f"C{run_index % 10}"
            label = name if name == "_nolegend_" else mpl_text(name)
            ax.plot(times, run.column(column), label=label, color=color, linewidth=1.4)
        if not spec.combine:
            ax.set_title(mpl_text(column), fontsize="medium")
    for ax in axes:
        ax.set_xlabel(f"simulated time ({unit})")
        ax.grid(visible=True, alpha=0.3)
        if spec.ylim is not None:
            ax.set_ylim(*spec.ylim)
        if spec.integer:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        _mark_actions(ax, actions, scale)
        if spec.combine or len(runs) > 1 or actions:
            ax.legend(fontsize="small", loc="best")
    return fig


def _mark_actions(ax: Axes, actions: Sequence[Action], scale: float) -> None:
    """Dashed vertical lines at the actions' times, numbered at the top of the axes (numbers of actions too close
    to tell apart share one label: "2,3"); one legend entry "scenario actions"."""
    if not actions:
        return
    low, high = ax.get_xlim()
    span = (high - low) or 1.0
    groups: list[list[Action]] = []
    for action in actions:
        x = action.t / scale
        ax.axvline(x, color="0.35", linestyle="--", linewidth=0.9, zorder=1.5,
                   label="scenario actions (numbered)" if action.number == 1 else "_nolegend_")  # fmt: skip
        if groups and (x - groups[-1][0].t / scale) / span < _ACTION_LABEL_GAP:
            groups[-1].append(action)
        else:
            groups.append([action])
    transform = ax.get_xaxis_transform()
    for group in groups:
        numbers = [a.number for a in group]
        text = str(numbers[0]) if len(numbers) == 1 else f"{numbers[0]}–{numbers[-1]}"
        ax.text(group[0].t / scale, 0.985, text, transform=transform, ha="center", va="top", fontsize="small",
                color="0.2", bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "0.6",
                                   "linewidth": 0.5})  # fmt: skip
    ax.set_xlim(low, high)


def _cdf_figure(runs: Sequence[Run[Any]], heading: str, columns: Sequence[tuple[str, str]]) -> Figure:
    """Empirical CDFs, one panel per measure and one step line per run; the legend carries n, p50 and p99."""
    fig, axes = _new_figure(len(columns))
    fig.suptitle(mpl_text(heading))
    for ax, (column, name) in zip(axes, columns, strict=True):
        for run_index, run in enumerate(runs):
            values = run.pod_values(column)
            if not values:
                continue
            n = len(values)
            fractions = [(i + 1) / n for i in range(n)]
            legend = f"{run.label} (n={n:,}, p50={_quantile(values, 0.5):.3g}s, p99={_quantile(values, 0.99):.3g}s)"
            ax.step(values, fractions, where="post", label=mpl_text(legend), color=f"C{run_index % 10}")
        ax.set_title(mpl_text(name), fontsize="medium")
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
