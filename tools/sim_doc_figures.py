"""Regenerate the figures docs/sim.md quotes from the simulation examples, instead of typing them by hand.

Each figure is a block of docs/sim.md between two marker comments::

    <!-- sim-doc-figures: NAME -->
    ...generated text (a console session, a code block, a paragraph)...
    <!-- /sim-doc-figures: NAME -->

This tool runs the examples each block quotes (through ``kubeplane.sim.run``, the code ``kubeplane sim run`` and
``compare`` call, and the CLI's own summary lines) and rewrites the blocks. Runs are deterministic (same scenario
and seed, same figures), except the wall-clock figures of a CLI summary (``in 6.6 s (546.8x)``), which are
whatever this machine measured; ``--check`` compares with those masked.

Blocks are *quick* (seconds: the seeds' story, the preemption example; checked by the test suite,
tests/examples/test_sim_doc_figures.py) or *slow* (the bin-packing comparison, about half a minute; the openb FGD
comparison, several minutes on two cores): ``--quick`` regenerates only the quick ones.

Usage::

    .venv/bin/python tools/sim_doc_figures.py            # rewrite every block of docs/sim.md
    .venv/bin/python tools/sim_doc_figures.py --quick    # only the quick blocks
    .venv/bin/python tools/sim_doc_figures.py --check    # exit 1 if a block differs (wall-clock figures masked)
    .venv/bin/python tools/sim_doc_figures.py --only seeds-story-run
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "sim.md"
SIM = ROOT / "examples" / "sim"
MARKER = re.compile(
    r"<!-- sim-doc-figures: (?P<name>[\w-]+) -->\n(?P<body>.*?)<!-- /sim-doc-figures: (?P=name) -->", re.S
)
_WALL = re.compile(r"in [\d.]+ s \([\d.]+x\)")


@dataclass(frozen=True)
class Block:
    name: str
    quick: bool
    render: Callable[[Runs], str]


class Runs:
    """Simulation results by (scenario, seed, until, configuration), each run once per invocation."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, int | None, float | None, str | None], Any] = {}

    def get(self, scenario: str, *, seed: int | None = None, until: float | None = None, config: str | None = None,
            label: str = "run") -> Any:  # fmt: skip
        import kubeplane.sim

        key = (scenario, seed, until, config)
        if key not in self._results:
            sched = None if config is None else yaml.safe_load((SIM / config).read_text())
            self._results[key] = kubeplane.sim.run(
                SIM / scenario, seed=seed, until=until, scheduler_config=sched, label=label
            )
        return self._results[key]


def _summary(result: Any) -> list[str]:
    from kubeplane.cli.sim import _summary_lines

    return _summary_lines(result)


def _paragraph(text: str) -> str:
    """Prose wrapped as the doc's own (lines of at most 115 characters)."""
    return textwrap.fill(text.strip(), width=115, break_long_words=False, break_on_hyphens=False) + "\n"


def _console(*lines: str) -> str:
    return "```console\n" + "\n".join(lines) + "\n```\n"


# --- the blocks ---------------------------------------------------------------------------------------------------


def _determinism(runs: Runs) -> str:
    first = runs.get("seeds-story.yaml").summary["event_log_hash"]
    other = runs.get("seeds-story.yaml", seed=1, until=2400).summary["event_log_hash"]
    return _console(
        "$ kubeplane sim run examples/sim/seeds-story.yaml --out /tmp/a | grep hash",
        f"  event log hash {first}",
        "$ kubeplane sim run examples/sim/seeds-story.yaml --out /tmp/b | grep hash",
        f"  event log hash {first}",
        "$ kubeplane sim run examples/sim/seeds-story.yaml --out /tmp/c --seed 1 --until 40m | grep hash",
        f"  event log hash {other}",
    )


def _story_run(runs: Runs) -> str:
    result = runs.get("seeds-story.yaml")
    return _console(
        "$ kubeplane sim run examples/sim/seeds-story.yaml --out /tmp/seeds-story",
        *_summary(result),
        "  report: /tmp/seeds-story/report.html",
    )


def _story_figures(runs: Runs) -> str:
    """The story's timings, read off pods.csv and timeseries.csv of the seed-42 run."""
    result = runs.get("seeds-story.yaml")
    pods, series = result.pods, result.timeseries
    services = [p for p in pods if p["name"].startswith(("myapp-deploy-", "web-"))]
    tainted = [p for p in services if p["node"] == "node02" and p["created"] < 600 and p["end"] == "evicted"]
    at_taint = sorted({p["finished"] for p in tainted})
    replaced = [p for p in services if 600 <= p["created"] < 1200]
    unready = min(row["t"] for row in series if row["t"] >= 1800 and row["nodes_ready"] < 3)
    failed = [p for p in services if p["node"] == "node01" and p["created"] < 1800 and p["end"] == "evicted"]
    later = [p for p in services if p["created"] > 1800]
    marked = min(p["created"] for p in later)
    gone = sorted({p["finished"] for p in failed})
    return _paragraph(
        f"What it shows (seed {result.seed}): at 600 s the taint eviction controller evicts node02's "
        f"{len(tainted)} Deployment pods (gone at {_times(at_taint)} s, after their 2 s shutdown) and the "
        f"Deployments' {len(replaced)} replacements are bound to {_nodes(replaced)} in the same simulated second "
        "(master only takes pods that tolerate its control-plane taint). node01 fails at 1800 s; the node is "
        f"counted not Ready from the {unready:g} s sample, and at {marked:g} s — 300 s after the unreachable "
        f"taint — its {len(failed)} Deployment pods are marked for deletion and their {len(later)} replacements "
        f"bound to {_nodes(later)}. The pods on node01 only go away (`finished` = {_times(gone)} in `pods.csv`) "
        "when its kubelet comes back at 45m, as on a real cluster where nobody force-deletes them. `pods.csv` "
        f"calls these {len(tainted) + len(failed)} pods `evicted` (its `end` column; with the jobs the taint "
        f"caught, the summary's `pods_evicted` is {result.summary['pods_evicted']}), and nodes in use peak at "
        f"{result.summary['nodes_in_use_peak']}: node01 and node02."
    )


def _times(values: Sequence[float]) -> str:
    return "–".join(f"{v:g}" for v in (values[0], values[-1])) if values[0] != values[-1] else f"{values[0]:g}"


def _nodes(pods: Iterable[dict[str, Any]]) -> str:
    return ", ".join(sorted({p["node"] for p in pods}))


def _python_api(runs: Runs) -> str:
    result = runs.get("seeds-story.yaml", seed=1, until=2400)
    counts: dict[str, int] = {}
    for pod in result.pods:
        if pod["node"]:
            counts[pod["node"]] = counts.get(pod["node"], 0) + 1
    window = [row for row in result.timeseries if 1840 <= row["t"] <= 1880]
    unknown = min(row["t"] for row in result.timeseries if row["t"] >= 1800 and row["nodes_ready"] < 3)
    by_node = ", ".join(f"{node} {n}" for node, n in sorted(counts.items()))
    ready = ", ".join(str(row["nodes_ready"]) for row in window)
    return (
        "```python\n"
        "import pandas\n\n"
        "import kubeplane.sim\n\n"
        'result = kubeplane.sim.run("examples/sim/seeds-story.yaml", seed=1, until=2400)\n'
        "pods = pandas.DataFrame(result.pods)\n"
        'series = pandas.DataFrame(result.timeseries).set_index("t")\n'
        f'print(pods.groupby("node")["name"].count())   # {by_node}\n'
        f'print(pods["end"].value_counts())             # {_ends(result.pods)}\n'
        f'print(series["nodes_ready"].loc[1840:1880])    # {ready}: node01 is Unknown from {unknown:g} s\n'
        'result.write("out/seeds-story")\n'
        "```\n"
    )


def _ends(pods: Iterable[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for pod in pods:
        counts[pod["end"]] = counts.get(pod["end"], 0) + 1
    return ", ".join(f"{end} {n}" for end, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _preemption_run(runs: Runs) -> str:
    result = runs.get("preemption.yaml")
    return _console(
        "$ kubeplane sim run examples/sim/preemption.yaml --out /tmp/preemption",
        *_summary(result),
        "  report: /tmp/preemption/report.html",
    )


def _compare(runs: Runs, scenario: str, configs: Sequence[str], out: str) -> tuple[str, list[Any]]:
    results = [runs.get(scenario, config=c, label=Path(c).stem) for c in configs]
    flags = " \\\n    ".join(f"--config examples/sim/{c}" for c in configs)
    lines = [f"$ kubeplane sim compare examples/sim/{scenario} {flags} --out {out}"]
    for result in results:
        lines += _summary(result)
    lines.append(f"report: {out}/report.html")
    return _console(*lines), results


def _bin_packing(runs: Runs) -> str:
    text, (least, most) = _compare(runs, "bin-packing.yaml", ["least-allocated.yaml", "most-allocated.yaml"],
                                   "/tmp/bin-packing")  # fmt: skip
    return (
        text
        + "\n"
        + _paragraph(
            "Under the two strategies the bin-packing workload (seed 7) has pods on at most "
            f"{least.summary['nodes_in_use_peak']} of the 20 workers at once with LeastAllocated (on average "
            f"{least.summary['nodes_in_use_mean']:.1f}) and at most {most.summary['nodes_in_use_peak']} with "
            f"MostAllocated (on average {most.summary['nodes_in_use_mean']:.1f}): the example's headline, "
            "`nodes_in_use_peak` and `nodes_in_use_mean`."
        )
    )


def _openb_fgd(runs: Runs) -> str:
    _, (default, fgd) = _compare(runs, "openb-fgd.yaml", ["default.yaml", "fgd.yaml"], "/tmp/openb-fgd")
    rows = ["| configuration | GPU allocation peak | mean | fragmentation mean | pods rejected by the kubelet |",
            "|---|---|---|---|---|"]  # fmt: skip
    for result in (default, fgd):
        s = result.summary
        rows.append(f"| {result.label} | {s['gpu_alloc_pct_peak']:.1f} % | {s['gpu_alloc_pct_mean']:.1f} % | "
                    f"{s['gpu_frag_pct_mean']:.1f} % | {s['pods_rejected']:,} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def _autoscaling(runs: Runs) -> str:
    """The expanders compared on the autoscaling example (``sim compare --autoscaler``): the CLI's lines, cost
    per group and each run's autoscaler events (the report's tables)."""
    import kubeplane.sim
    from kubeplane.sim.variants import apply_variant, load_variant

    variants = ["expander-least-waste.yaml", "expander-price.yaml"]
    scenario = kubeplane.sim.Scenario.load(SIM / "autoscaling.yaml")
    results = []
    for name in variants:
        variant = load_variant(SIM / name, "autoscaler")
        results.append(kubeplane.sim.run(apply_variant(scenario, variant), label=variant.label))
    flags = " \\\n    ".join(f"--autoscaler examples/sim/{v}" for v in variants)
    lines = [f"$ kubeplane sim compare examples/sim/autoscaling.yaml {flags} --out /tmp/autoscaling-compare"]
    for result in results:
        lines += _summary(result)
    lines.append("report: /tmp/autoscaling-compare/report.html")
    rows = ["| expander | group | nodes added | removed | node-hours | cost |", "|---|---|---|---|---|---|"]
    for result in results:
        for group, g in result.summary["node_groups"].items():
            rows.append(f"| {result.label} | {group} | {g['nodes_added']} | {g['nodes_removed']} | "
                        f"{g['node_hours']:.2f} | {g['cost']:.3f} |")  # fmt: skip
    events = ["| expander | time | group | delta | reason | detail |", "|---|---|---|---|---|---|"]
    for result in results:
        for e in result.scaling:
            events.append(f"| {result.label} | {_clock(e['t'])} | {e['group'] or '—'} | {e['delta']:+d} | "
                          f"{e['reason']} | {e['detail']} |")  # fmt: skip
    return _console(*lines) + "\n" + "\n".join(rows) + "\n\n" + "\n".join(events) + "\n"


def _clock(t: float) -> str:
    hours, rest = divmod(int(t), 3600)
    return f"{hours}h{rest // 60:02d}m{rest % 60:02d}s"


BLOCKS: tuple[Block, ...] = (
    Block("determinism", True, _determinism),
    Block("seeds-story-run", True, _story_run),
    Block("seeds-story-figures", True, _story_figures),
    Block("python-api", True, _python_api),
    Block("preemption-run", True, _preemption_run),
    Block("bin-packing-compare", False, _bin_packing),
    Block("openb-fgd", False, _openb_fgd),
    Block("autoscaling-compare", False, _autoscaling),
)


# --- the document ---------------------------------------------------------------------------------------------------


def blocks_in(text: str) -> dict[str, str]:
    """The doc's blocks: name -> the text between its markers."""
    return {m["name"]: m["body"] for m in MARKER.finditer(text)}


def render(names: Iterable[str], runs: Runs | None = None) -> dict[str, str]:
    runs = runs or Runs()
    by_name = {b.name: b for b in BLOCKS}
    return {name: by_name[name].render(runs) for name in names}


def rewrite(text: str, rendered: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match["name"]
        body = rendered.get(name, match["body"])
        return f"<!-- sim-doc-figures: {name} -->\n{body}<!-- /sim-doc-figures: {name} -->"

    return MARKER.sub(replace, text)


def mask_wall_clock(text: str) -> str:
    """The text with the wall-clock figures of CLI summaries masked (``in … s (…x)``)."""
    return _WALL.sub("in … s (…x)", text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="only the quick blocks")
    parser.add_argument("--only", action="append", default=[], help="only this block (repeatable)")
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if a block differs")
    parser.add_argument("--doc", type=Path, default=DOC)
    args = parser.parse_args(argv)
    text = args.doc.read_text(encoding="utf-8")
    present = blocks_in(text)
    known = {b.name for b in BLOCKS}
    missing = sorted(known - set(present))
    if missing:
        print(f"error: {args.doc} lacks the markers of {', '.join(missing)}", file=sys.stderr)
        return 1
    names = args.only or [b.name for b in BLOCKS if b.quick or not args.quick]
    unknown = sorted(set(names) - known)
    if unknown:
        print(f"error: unknown block(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})", file=sys.stderr)
        return 1
    rendered = render(names)
    if args.check:
        stale = [n for n in names if mask_wall_clock(rendered[n]) != mask_wall_clock(present[n])]
        for name in stale:
            print(f"{args.doc}: block {name} is stale; run tools/sim_doc_figures.py --only {name}", file=sys.stderr)
        return 1 if stale else 0
    fresh = args.doc.read_text(encoding="utf-8")  # edited meanwhile (a slow run takes minutes): keep the edits
    args.doc.write_text(rewrite(fresh, rendered), encoding="utf-8")
    print(f"rewrote {len(rendered)} block(s) of {args.doc}: {', '.join(rendered)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
