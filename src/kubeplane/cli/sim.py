"""``kubeplane sim run | compare | sweep | snapshot | fgd-repro``: simulations on a virtual clock (docs/sim.md).

``run`` replays one scenario with one seed and writes summary.json, timeseries.csv, pods.csv and report.html to
``--out``; ``compare`` runs the same scenario and seed under several scheduler configurations, one process per
configuration (at most one per core), and writes one report with the runs side by side; ``sweep`` runs a grid of
scenarios × configurations × seeds on a process pool or a Ray cluster (kubeplane.sim.sweep). A progress bar shows
simulated time, pods scheduled and pods pending on a terminal.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from kubeplane.sim.runner import Progress, SimResult

sim_app = typer.Typer(
    name="sim",
    help="Simulate the control plane on a virtual clock: run a scenario, compare scheduler configurations.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ScenarioArg = Annotated[Path, typer.Argument(help="Scenario file (YAML; docs/sim.md).")]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Seed of every random choice (default: the scenario's).")]
UntilOpt = Annotated[
    str | None, typer.Option("--until", help="Simulated time to stop at, e.g. 2h (default: the scenario's duration).")
]


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _until(text: str | None) -> float | None:
    from kubeplane.sim.scenario import ScenarioError, seconds

    if text is None:
        return None
    try:
        return seconds(text, "--until")
    except ScenarioError as exc:
        _fail(str(exc))
        raise  # unreachable: _fail exits


@contextlib.contextmanager
def _progress(label: str) -> Iterator[Any]:
    """A rich progress bar of simulated time (nothing when stderr is not a terminal)."""
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[info]}"), TimeElapsedColumn())
    with Bar(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=1.0, info="")

        def update(p: Progress) -> None:
            bar.update(task, total=p.until or 1.0, completed=p.t,
                       info=f"t={p.t:.0f}s scheduled={p.pods_scheduled} pending={p.pods_pending}")  # fmt: skip

        yield update


def _summary_lines(result: SimResult) -> list[str]:
    """The printed summary: the same figures as summary.json (the pod ends are pods.csv's ``end`` column counted),
    the scenario's headline fields first."""
    s = result.summary
    lines = [
        f"{result.scenario} [{result.label}] seed {result.seed}: {s['sim_seconds']:.0f} simulated seconds in "
        f"{s['wall_seconds']:.1f} s ({s['sim_seconds_per_wall_second']}x)"
    ]
    if s.get("headline"):
        lines.append("  headline: " + ", ".join(f"{name} {_figure(s.get(name))}" for name in s["headline"]))
    lines += [
        f"  pods created {s['pods_created']}, scheduled {s['pods_scheduled']}; at the end running "
        f"{s['pods_running_at_end']}, pending {s['pods_pending_at_end']}",
        f"  pods ended: completed {s['pods_completed']}, evicted {s['pods_evicted']}, preempted "
        f"{s['pods_preempted']}, deleted {s['pods_deleted']}, rejected {s['pods_rejected']}",
        f"  nodes {s['nodes']}, in use {s['nodes_in_use']} at the end, peak {s['nodes_in_use_peak']}, mean "
        f"{_figure(s['nodes_in_use_mean'])}; cpu allocation mean {s['cpu_allocation_mean']}",
    ]
    if "gpu_alloc_pct_peak" in s:
        lines.append(
            f"  GPUs {s['gpu_capacity']}: allocation peak {_figure(s['gpu_alloc_pct_peak'])} %, mean "
            f"{_figure(s['gpu_alloc_pct_mean'])} %; fragmentation mean {_figure(s['gpu_frag_pct_mean'])} % of "
            "capacity"
        )
    if "node_groups" in s:  # kubeplane.sim.autoscaling
        lines.append(
            f"  node groups: {s['nodes_added']} node(s) added, {s['nodes_removed']} removed; "
            f"{_figure(s['node_hours'])} node-hours, cost {_figure(s['cost'])}"
        )
    lines += [
        f"  scheduling attempts {s['scheduling_attempts']}, preemption attempts {s['preemptions']}; "
        f"scheduling latency p50/p99 {s['scheduling_latency_p50']}/{s['scheduling_latency_p99']} s",
        f"  event log hash {s['event_log_hash']}",
    ]
    return lines


def _figure(value: Any) -> str:
    """A summary value as printed: floats to 4 significant digits, None as n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


@sim_app.command("run")
def run(
    scenario: ScenarioArg,
    seed: SeedOpt = None,
    out: Annotated[Path, typer.Option("--out", help="Output directory (created).")] = Path("sim-out"),
    until: UntilOpt = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="KubeSchedulerConfiguration (overrides the scenario's).")
    ] = None,
    from_cluster: Annotated[
        bool, typer.Option("--from-cluster", help="Start from the live cluster of --kubeconfig (read-only).")
    ] = False,
    kubeconfig: Annotated[str | None, typer.Option("--kubeconfig", help="With --from-cluster.")] = None,
    from_data_dir: Annotated[
        Path | None, typer.Option("--from-data-dir", help="Start from a kubeplane data dir's store.")
    ] = None,
) -> None:
    """Run a scenario on the virtual clock and write its report."""
    from kubeplane.sim.runner import run as run_scenario
    from kubeplane.sim.scenario import Scenario, ScenarioError

    try:
        loaded = Scenario.load(scenario)
        if from_cluster or from_data_dir is not None:
            loaded = _with_snapshot(loaded, kubeconfig if from_cluster else None, from_data_dir)
        override = _config(config)
        with _progress(loaded.name) as progress:
            result = run_scenario(loaded, seed=seed, until=_until(until), scheduler_config=override, progress=progress)
    except ScenarioError as exc:
        _fail(str(exc))
        return
    paths = result.write(out)
    for line in _summary_lines(result):
        typer.echo(line)
    typer.echo(f"  report: {paths['report']}")


def _snapshot(kubeconfig: str | None, data_dir: Path | None) -> dict[str, Any]:
    """The snapshot's objects, every failure a user can cause as a ScenarioError (one line)."""
    from kubeplane.client.errors import ClientError
    from kubeplane.sim.scenario import ScenarioError
    from kubeplane.sim.snapshot import snapshot_from_data_dir, snapshot_from_kubeconfig
    from kubeplane.store.interface import StoreError

    try:
        if data_dir is not None:
            return snapshot_from_data_dir(data_dir)
        return snapshot_from_kubeconfig(kubeconfig)
    except (ClientError, StoreError) as exc:
        raise ScenarioError(f"cannot read the cluster: {exc}") from None


def _with_snapshot(scenario: Any, kubeconfig: str | None, data_dir: Path | None) -> Any:
    """``scenario`` starting from a snapshot: its nodes, then its objects at t=0 before the scenario's own."""
    import dataclasses

    from kubeplane.sim.scenario import Scenario
    from kubeplane.sim.snapshot import to_scenario

    base = Scenario.parse(to_scenario(_snapshot(kubeconfig, data_dir)))
    return dataclasses.replace(
        scenario,
        nodes=base.nodes,
        arrivals=[*base.arrivals, *scenario.arrivals],
    )


@sim_app.command("snapshot")
def snapshot(
    out: Annotated[Path, typer.Option("--out", help="The scenario file to write.")] = Path("snapshot.yaml"),
    kubeconfig: Annotated[str | None, typer.Option("--kubeconfig", help="The cluster (default: the lookup).")] = None,
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Read a kubeplane data dir's store instead of a cluster.")
    ] = None,
    name: Annotated[str, typer.Option("--name", help="Scenario name.")] = "snapshot",
) -> None:
    """Write a scenario that starts from a cluster's current state (nodes, workloads, pods; read-only)."""
    import yaml

    from kubeplane.sim.scenario import ScenarioError
    from kubeplane.sim.snapshot import to_scenario

    try:
        data = to_scenario(_snapshot(kubeconfig, data_dir), name=name)
    except ScenarioError as exc:
        _fail(str(exc))
        return
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    nodes = len(data.get("cluster", {}).get("nodes", []))
    typer.echo(f"wrote {out}: {nodes} node(s), {len(data['workload'])} object(s) at t=0")


def _config(path: Path | None) -> dict[str, Any] | None:
    from kubeplane.sim.scenario import load_scheduler_config

    return None if path is None else load_scheduler_config(path)


def _run_one(
    scenario: str, seed: int | None, until: float | None, config: str | None, label: str, variant: Any = None
) -> SimResult:
    """One comparison run, in a worker process (must be importable: ProcessPoolExecutor pickles it): under a
    scheduler configuration file, or with a variant's section (kubeplane.sim.variants) in place of the scenario's."""
    from kubeplane.sim.runner import run as run_scenario
    from kubeplane.sim.scenario import Scenario
    from kubeplane.sim.variants import apply_variant

    loaded = Scenario.load(scenario)
    if variant is not None:
        loaded = apply_variant(loaded, variant)
    scheduler_config = None if config is None else _config(Path(config))
    return run_scenario(loaded, seed=seed, until=until, scheduler_config=scheduler_config, label=label)


@sim_app.command("compare")
def compare(
    scenario: ScenarioArg,
    configs: Annotated[
        list[Path] | None, typer.Option("--config", help="A KubeSchedulerConfiguration; repeat for each to compare.")
    ] = None,
    autoscalers: Annotated[
        list[Path] | None,
        typer.Option("--autoscaler", help="A file with an autoscaler: section (its flags); repeat for each."),
    ] = None,
    deschedulers: Annotated[
        list[Path] | None,
        typer.Option("--descheduler", help="A file with a descheduler: section; repeat for each."),
    ] = None,
    seed: SeedOpt = None,
    out: Annotated[Path, typer.Option("--out", help="Output directory (created).")] = Path("sim-compare"),
    until: UntilOpt = None,
) -> None:
    """Run the same scenario and seed under each scheduler configuration (or autoscaler or descheduler variant)
    and write one side-by-side report."""
    from kubeplane.sim.report import write_comparison
    from kubeplane.sim.scenario import Scenario, ScenarioError
    from kubeplane.sim.variants import apply_variant, load_variant

    given = [(kind, paths) for kind, paths in (("config", configs), ("autoscaler", autoscalers),
                                               ("descheduler", deschedulers)) if paths]  # fmt: skip
    if len(given) != 1:
        _fail("give the variants to compare of one kind: --config, --autoscaler or --descheduler files")
    kind, files = given[0]
    if len(files) < 2:
        _fail(f"give at least two --{kind} files to compare")
    labels = [c.stem for c in files]
    if len(set(labels)) != len(labels):
        labels = [f"{i + 1}-{c.stem}" for i, c in enumerate(files)]
    variants: list[Any] = [None] * len(files)
    try:
        loaded = Scenario.load(scenario)  # fail early, with one line, before starting processes
        if kind == "config":
            from kubeplane.sim.runner import scheduler_configuration

            for path in files:
                scheduler_configuration(_config(path))
        else:
            variants = [load_variant(path, kind) for path in files]
            for variant in variants:
                apply_variant(loaded, variant)
    except ScenarioError as exc:
        _fail(str(exc))
    limit = _until(until)
    workers = max(1, min(len(files), os.cpu_count() or 1))
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(_run_one, str(scenario), seed, limit, str(path) if kind == "config" else None, label, variant)
            for path, label, variant in zip(files, labels, variants, strict=True)
        ]
        results = [f.result() for f in futures]
    paths = write_comparison(results, out)
    for result in results:
        for line in _summary_lines(result):
            typer.echo(line)
    typer.echo(f"report: {paths['report']}")


@sim_app.command("fgd-repro")
def fgd_repro(
    seeds: Annotated[str, typer.Option("--seeds", help="Seeds: a range 42..51, a list 42,43 or one seed.")] = "42..51",
    policies: Annotated[
        str | None,
        typer.Option("--policies", help="Comma-separated policies (default: all six: FGD,BestFit,GpuPacking,...)."),
    ] = None,
    trace: Annotated[
        str, typer.Option("--trace", help="Pod list: default, gpushare40, multigpu30 or cpu050.")
    ] = "default",
    ratio: Annotated[float, typer.Option("--ratio", help="Inflate the workload to this share of GPU capacity.")] = 1.3,
    data: Annotated[
        Path | None, typer.Option("--data", help="The openb directory (default: the trace packaged with kubeplane).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write per-run CSVs, binned tables and checks here.")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", help="Processes (default: the number of cores).")] = 0,
) -> None:
    """Reproduce the FGD paper's openb experiment (ATC'23) and check it against the reference (docs/gpu.md).

    Prints the GPU allocation table beside the artifact's medians and each check of FGD-EXPERIMENT.md §6.2 with
    PASS/FAIL; exits 1 when a check fails.
    """
    from kubeplane.gpu import repro

    try:
        seed_list = repro.parse_seeds(seeds)
        names = repro.policies_or_default([p.strip() for p in policies.split(",")] if policies else None)
        directory = repro.find_data_dir(data)
        repro.check_trace(trace)  # before any process starts
        if ratio <= 0:
            raise ValueError(f"ratio must be positive, not {ratio}")
    except (ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    workers = jobs if jobs > 0 else (os.cpu_count() or 1)
    result = repro.experiment(directory, trace=trace, policies=names, seeds=seed_list, ratio=ratio, jobs=workers)
    typer.echo(repro.render(result))
    if out is not None:
        repro.write_outputs(result, out)
        typer.echo(f"written to {out}")
    if not result.passed:
        raise typer.Exit(1)


@sim_app.command("sweep")
def sweep(
    grid_file: Annotated[
        Path | None,
        typer.Argument(help="Grid file (YAML/JSON: scenarios, configs, seeds, until); flags given replace its fields."),
    ] = None,
    scenarios: Annotated[
        list[Path] | None, typer.Option("--scenario", help="A scenario file; repeat for each scenario.")
    ] = None,
    configs: Annotated[
        list[str] | None,
        typer.Option(
            "--config", help="LABEL=FILE (or FILE, labelled by its stem): a KubeSchedulerConfiguration; repeat."
        ),
    ] = None,
    seeds: Annotated[
        str | None, typer.Option("--seeds", help="Seeds: a list 1,2,3, a range 1..10 (default: each scenario's).")
    ] = None,
    variants: Annotated[
        list[Path] | None,
        typer.Option("--variant", help="A file with an autoscaler: or descheduler: section; each scenario under each."),
    ] = None,
    until: UntilOpt = None,
    out: Annotated[Path, typer.Option("--out", help="Output directory (created).")] = Path("sim-sweep"),
    workers: Annotated[
        int | None, typer.Option("--workers", help="Processes of the local pool (default: one per core).")
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address", help="Run on this Ray cluster: HOST:PORT, ray://HOST:10001 or auto (the ray extra)."
        ),
    ] = None,
) -> None:
    """Run a grid of scenarios × scheduler configurations × seeds on a process pool or a Ray cluster; one report.

    The results are the same whichever executor runs them: only timing.json (wall-clock figures) differs.
    """
    import time

    from kubeplane.gpu.repro import parse_seeds
    from kubeplane.sim import sweep as sweeping
    from kubeplane.sim.executors import ExecutorError, executor
    from kubeplane.sim.scenario import ScenarioError

    if workers is not None and ray_address is not None:
        _fail("--workers sizes the local process pool; with --ray-address the Ray cluster decides")
    if workers is not None and workers < 1:
        _fail(f"--workers must be at least 1, not {workers}")
    try:
        fields: dict[str, Any] = sweeping.load_grid(grid_file) if grid_file is not None else {}
        if scenarios:
            fields["scenarios"] = [str(s) for s in scenarios]
        if configs:
            fields["configs"] = [sweeping.config_option(c) for c in configs]
        if variants:
            fields["variants"] = [str(v) for v in variants]
        if seeds is not None:
            fields["seeds"] = parse_seeds(seeds)
        if until is not None:
            fields["until"] = _until(until)
        if not fields.get("scenarios"):
            raise ScenarioError("give at least one --scenario (or a grid file with scenarios)")
        base = fields.pop("base", None)
        grid = sweeping.grid(**fields, base=base)
    except (ScenarioError, ValueError) as exc:
        _fail(str(exc))
        return
    cells = grid.cells()
    runner = executor(workers=workers, ray_address=ray_address)
    typer.echo(f"sweep: {len(cells)} cell(s) on {runner.name}", err=True)
    started = time.perf_counter()
    try:
        results = sweeping.sweep(grid, runner)
    except ExecutorError as exc:
        _fail(str(exc))
        return
    paths = sweeping.write_sweep(results, out, executor=runner.name)
    for result in results:
        s = result.result.summary
        typer.echo(
            f"{result.cell.label}: scheduled {s['pods_scheduled']}, pending at the end {s['pods_pending_at_end']}, "
            f"event log hash {s['event_log_hash'][:16]}"
        )
    typer.echo(f"{len(cells)} cell(s) in {time.perf_counter() - started:.1f} s on {runner.name}")
    typer.echo(f"report: {paths['report']}")
