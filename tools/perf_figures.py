"""Measure issue 29's figures with the bench commands and print them as one markdown table (docs/performance.md).

Each row of the table is one figure: a benchmark (a name), the exact bench command, the metric (and stat) read
from the bench's JSON lines, and its target. The targets are issue 29's table; the other scheduler_perf workloads
of ``bench/scheduler_perf.py`` get 5x upstream's CI floor, the ``threshold`` of the ``performance`` case of the
size our bench runs in kubernetes/kubernetes v1.37 ``test/integration/scheduler_perf/*/performance-config.yaml``
(``FLOORS``: each with the file and case it comes from). Upstream compares a threshold with SchedulingThroughput
Average (scheduler_perf.go: the default thresholdMetricSelector), so those rows read that figure.

Every command runs once per invocation, as a subprocess ``sys.executable bench/X.py ARGS`` in a checkout with
``PYTHONPATH=<checkout>/src``; rows of one command (a sim run's wall time and peak RSS) share that run. With
``--base DIR`` each command also runs in another checkout (``git archive REV | tar -x -C DIR``), back to back
with this one, base first, and the table gets before | after columns; "met?" judges the after figure. A
``--quick`` run (every bench at its smoke sizes) is not judged: its sizes are not the targets'.

Usage::

    .venv/bin/python tools/perf_figures.py                      # every row at full size (the 5k sim: ~11 min, 14 GB)
    .venv/bin/python tools/perf_figures.py --quick              # smoke run: --quick passed to every bench
    .venv/bin/python tools/perf_figures.py --only SchedulingBasic --only TopologySpreading
    .venv/bin/python tools/perf_figures.py --skip sim-5k --base /tmp/base   # before | after
    .venv/bin/python tools/perf_figures.py --quick --write      # rewrite docs/performance.md's table block
    .venv/bin/python tools/perf_figures.py --json               # one JSON object per row
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- perf-figures -->", "<!-- /perf-figures -->"
BLOCK = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
UPSTREAM = "kubernetes/kubernetes v1.37 test/integration/scheduler_perf/"
PYTHON = ".venv/bin/python"  # how the docs spell the interpreter in a pasteable command


@dataclass(frozen=True, slots=True)
class Floor:
    """Upstream's CI floor of a workload: the ``threshold`` (pods/s, SchedulingThroughput Average) of ``case``."""

    threshold: float
    file: str  # under test/integration/scheduler_perf/
    case: str  # the workloads[].name whose params are the sizes bench/scheduler_perf.py runs

    @property
    def source(self) -> str:
        return f"{UPSTREAM}{self.file} {self.case}"


FLOORS: dict[str, Floor] = {
    "SchedulingBasic": Floor(680, "misc/performance-config.yaml", "5000Nodes_10000Pods"),
    "SchedulingNodeAffinity": Floor(220, "affinity/performance-config.yaml", "5000Nodes_10000Pods"),
    "SchedulingPodAntiAffinity": Floor(60, "affinity/performance-config.yaml", "5000Nodes_2000Pods"),
    "SchedulingPodAffinity": Floor(35, "affinity/performance-config.yaml", "5000Nodes_5000Pods"),
    "SchedulingPreferredPodAffinity": Floor(90, "affinity/performance-config.yaml", "5000Nodes_5000Pods"),
    "SchedulingPreferredPodAntiAffinity": Floor(90, "affinity/performance-config.yaml", "5000Nodes_5000Pods"),
    "MixedSchedulingBasePod": Floor(140, "affinity/performance-config.yaml", "5000Nodes_5000Pods"),
    "TopologySpreading": Floor(460, "topology_spreading/performance-config.yaml", "5000Nodes_5000Pods"),
    "PreferredTopologySpreading": Floor(340, "topology_spreading/performance-config.yaml", "5000Nodes_5000Pods"),
}
"""PreemptionBasic has none: its 1000Nodes cases in default_preemption/performance-config.yaml carry no threshold."""
FLOOR_FACTOR = 5


@dataclass(frozen=True, slots=True)
class Row:
    """One figure: ``metric`` (with ``stat`` where the bench prints several) of ``bench`` run with ``args``.

    ``target`` is in the metric's unit; ``at_most`` says the figure must not exceed it (times, memory) rather than
    reach it (throughputs). ``target=None``: reported, not judged. ``why`` says where the target comes from."""

    name: str
    bench: str
    args: tuple[str, ...]
    metric: str
    unit: str
    target: float | None
    why: str
    stat: str | None = None
    at_most: bool = False
    floor: Floor | None = None

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        """The command's identity: rows with the same key share one run."""
        return self.bench, self.args

    def command(self, *, quick: bool = False) -> str:
        return " ".join([PYTHON, f"bench/{self.bench}", *self.args, *(["--quick"] if quick else [])])

    @property
    def figure_name(self) -> str:
        return f"{self.metric} {self.stat}" if self.stat else self.metric

    def pick(self, records: Iterable[Mapping[str, Any]]) -> float | None:
        """The first record of this metric (and stat); None if the bench printed none."""
        for rec in records:
            if rec.get("metric") == self.metric and (self.stat is None or rec.get("stat") == self.stat):
                return float(rec["value"])
        return None

    def met(self, value: float | None) -> bool | None:
        if value is None or self.target is None:
            return None
        return value <= self.target if self.at_most else value >= self.target


def _sched(name: str, *extra: str, target: float | None = None, why: str = "", metric: str = "SchedulingThroughput",
           stat: str | None = "Average", workload: str | None = None) -> Row:  # fmt: skip
    """A scheduler_perf row; without ``target``, 5x the workload's upstream CI floor."""
    workload = workload or name
    floor = FLOORS.get(workload)
    if target is None and floor is not None:
        target, why = FLOOR_FACTOR * floor.threshold, f"{FLOOR_FACTOR}x upstream's CI floor {floor.threshold:g}"
    return Row(name, "scheduler_perf.py", ("--workload", workload, *extra), metric, "pods/s", target, why or "none",
               stat=stat, floor=floor)  # fmt: skip


def _sim(name: str, args: tuple[str, ...], metric: str, unit: str, target: float | None, why: str) -> Row:
    return Row(name, "sim_bench.py", args, metric, unit, target, why, at_most=True)


ISSUE = "issue 29"
SIM_5K: tuple[str, ...] = ()  # the default scenario: examples/sim/scale-out.yaml, 5,000 nodes, 50,000 pods, 1 h
SIM_IDLE = ("--nodes", "1000", "--pods", "0", "--until", "300")
SIM_1K = ("--nodes", "1000", "--pods", "10000", "--until", "900")
ROWS: tuple[Row, ...] = (
    # issue 29's table, in its order
    _sched("SchedulingBasic", target=5000, why=f"{ISSUE}; 5x upstream's CI floor would be {5 * 680:,}"),
    _sched("SchedulingBasic-http", "--transport", "http", target=2000, why=ISSUE, workload="SchedulingBasic"),
    _sched("TopologySpreading"),
    _sched("PreferredTopologySpreading"),
    _sched("PreemptionBasic", target=300, why=ISSUE, metric="EndToEndThroughput", stat=None),
    _sim("sim-5k", SIM_5K, "wall_seconds", "s", 180, ISSUE),
    _sim("sim-5k", SIM_5K, "peak_rss", "MB", 4096, f"{ISSUE}: 4 GB"),
    _sim("sim-idle-1k", SIM_IDLE, "steady_wall_ms_per_sim_second", "ms", 2, ISSUE),
    _sim("sim-idle-1k", SIM_IDLE, "steady_cpu_ms_per_sim_second", "ms", 2, ISSUE),
    _sim("sim-1k-10k", SIM_1K, "wall_seconds", "s", 10, ISSUE),
    _sim("sim-1k-10k", SIM_1K, "peak_rss", "MB", None, f"none in {ISSUE}"),
    # every other scheduler_perf workload: 5x upstream's CI floor
    _sched("SchedulingNodeAffinity"),
    _sched("SchedulingPodAntiAffinity"),
    _sched("SchedulingPodAffinity"),
    _sched("SchedulingPreferredPodAffinity"),
    _sched("SchedulingPreferredPodAntiAffinity"),
    _sched("MixedSchedulingBasePod"),
    _sched("PreemptionBasic", why="none upstream: its 1000Nodes cases have no threshold"),
)
NAMES = tuple(dict.fromkeys(r.name for r in ROWS))


@dataclass(frozen=True, slots=True)
class Run:
    """What one command printed: its JSON records, or why it gave none."""

    records: tuple[Mapping[str, Any], ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Figure:
    row: Row
    after: Run
    before: Run | None = None
    values: dict[str, float | None] = field(default_factory=dict)

    @classmethod
    def of(cls, row: Row, after: Run, before: Run | None = None) -> Figure:
        values = {"after": row.pick(after.records)}
        if before is not None:
            values["before"] = row.pick(before.records)
        return cls(row, after, before, values)


def parse_lines(text: str) -> tuple[dict[str, Any], ...]:
    """The JSON objects a bench printed, one a line; other lines (a bench's notes) are skipped."""
    out: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "metric" in obj and isinstance(obj.get("value"), int | float):
            out.append(obj)
    return tuple(out)


def run_bench(checkout: Path, row: Row, *, quick: bool) -> Run:
    """Run ``row``'s command in ``checkout`` (its bench/ and src/) with this interpreter; stderr is kept for errors."""
    argv = [sys.executable, str(checkout / "bench" / row.bench), *row.args, *(["--quick"] if quick else [])]
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    print(f"# {checkout}: {row.command(quick=quick)}", file=sys.stderr, flush=True)
    proc = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, check=False)
    records = parse_lines(proc.stdout)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return Run(records, f"exit {proc.returncode}: {tail}")
    return Run(records)


Runner = Callable[[Path, Row, bool], Run]


def measure(rows: Sequence[Row], *, quick: bool, checkout: Path = ROOT, base: Path | None = None,
            runner: Runner | None = None) -> list[Figure]:  # fmt: skip
    """Each distinct command once (base first, then this checkout, back to back), then every row's figures."""

    def default(path: Path, row: Row, q: bool) -> Run:
        return run_bench(path, row, quick=q)

    run = runner or default
    after: dict[tuple[str, tuple[str, ...]], Run] = {}
    before: dict[tuple[str, tuple[str, ...]], Run] = {}
    for row in rows:
        if row.key in after:
            continue
        if base is not None:
            before[row.key] = run(base, row, quick)
        after[row.key] = run(checkout, row, quick)
    return [Figure.of(r, after[r.key], before.get(r.key) if base is not None else None) for r in rows]


def select(only: Sequence[str], skip: Sequence[str]) -> list[Row]:
    unknown = sorted({*only, *skip} - set(NAMES))
    if unknown:
        raise SystemExit(f"error: unknown benchmark {', '.join(unknown)} (known: {', '.join(NAMES)})")
    return [r for r in ROWS if (not only or r.name in only) and r.name not in skip]


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}"


def fmt_target(row: Row) -> str:
    if row.target is None:
        return f"— ({row.why})"
    sign = "≤" if row.at_most else "≥"
    number = f"{row.target:,.0f} {row.unit}" if row.target == int(row.target) else fmt_value(row.target, row.unit)
    return f"{sign} {number} ({row.why})"


def _cell(fig: Figure, which: str) -> str:
    run = fig.after if which == "after" else fig.before
    value = fig.values.get(which)
    if value is None and run is not None and run.error:
        return f"error ({run.error[:80]})"
    return fmt_value(value, fig.row.unit)


def render(figures: Sequence[Figure], *, quick: bool) -> str:
    """The markdown table: benchmark | command | figure | target | met? (before | after with a base)."""
    with_base = any(f.before is not None for f in figures)
    head = ["benchmark", "command", "metric", *(["before", "after"] if with_base else ["figure"]), "target", "met?"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for fig in figures:
        row = fig.row
        met = row.met(fig.values.get("after"))
        cells = [
            row.name,
            f"`{row.command(quick=quick)}`",
            row.figure_name,
            *([_cell(fig, "before"), _cell(fig, "after")] if with_base else [_cell(fig, "after")]),
            fmt_target(row),
            "— (--quick)" if quick else "—" if met is None else ("yes" if met else "no"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def as_json(figures: Sequence[Figure], *, quick: bool) -> str:
    out = []
    for fig in figures:
        row = fig.row
        obj: dict[str, Any] = {
            "name": row.name,
            "command": row.command(quick=quick),
            "metric": row.metric,
            "stat": row.stat,
            "unit": row.unit,
            "value": fig.values.get("after"),
            "target": row.target,
            "at_most": row.at_most,
            "target_source": row.why,
            "met": row.met(fig.values.get("after")),
            "quick": quick,
        }
        if fig.before is not None:
            obj["base_value"] = fig.values.get("before")
        if row.floor is not None:
            obj["floor"] = {"threshold": row.floor.threshold, "source": row.floor.source}
        errors = {k: r.error for k, r in (("after", fig.after), ("before", fig.before)) if r is not None and r.error}
        if errors:
            obj["errors"] = errors
        out.append(json.dumps(obj))
    return "\n".join(out) + "\n"


def provenance(argv: Sequence[str], *, now: datetime.datetime | None = None) -> str:
    """The line under the table saying which run produced it, when, and on what."""
    when = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%d %H:%M UTC")
    cmd = " ".join([PYTHON, "tools/perf_figures.py", *argv])
    line = f"Produced by `{cmd}` on {when} ({os.cpu_count()} CPUs, Python {platform.python_version()})."
    if "--quick" in argv:
        line += " A `--quick` run: every bench at its smoke sizes, not the sizes the targets are for."
    return line


def replace_block(doc: str, body: str) -> str:
    """``doc`` with the text between the perf-figures markers replaced by ``body``; the rest untouched."""
    if len(BLOCK.findall(doc)) != 1:
        raise SystemExit(f"error: {DOC.relative_to(ROOT)} needs exactly one {BEGIN} ... {END} block")
    return BLOCK.sub(lambda _: f"{BEGIN}\n{body.rstrip()}\n{END}", doc)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help=f"one of {', '.join(NAMES)}")
    parser.add_argument("--skip", action="append", default=[], metavar="NAME")
    parser.add_argument("--quick", action="store_true", help="pass --quick to every bench (a smoke run)")
    parser.add_argument("--base", type=Path, metavar="DIR", help="also run each command in this checkout (before)")
    parser.add_argument("--write", action="store_true", help=f"rewrite the table block of {DOC.relative_to(ROOT)}")
    parser.add_argument("--json", action="store_true", help="one JSON object per row instead of the table")
    args = parser.parse_args(argv)
    rows = select(args.only, args.skip)
    if args.base is not None and not (args.base / "bench").is_dir():
        raise SystemExit(f"error: {args.base} is not a kubeplane checkout (no bench/)")
    figures = measure(rows, quick=args.quick, base=args.base)
    if args.json:
        sys.stdout.write(as_json(figures, quick=args.quick))
    else:
        sys.stdout.write(render(figures, quick=args.quick))
    if args.write:
        shown = sys.argv[1:] if argv is None else argv
        body = render(figures, quick=args.quick) + "\n" + provenance(shown) + "\n"
        DOC.write_text(replace_block(DOC.read_text(encoding="utf-8"), body), encoding="utf-8")


if __name__ == "__main__":
    main()
