"""Scenario files: the cluster, the scheduler configuration, the workload and timed actions of a simulation.

YAML (docs/sim.md has the full schema and examples)::

    name: seeds-story
    seed: 42                      # default of --seed
    duration: 1h                  # default of --until (Go durations, or seconds)
    sampleInterval: 10s           # time-series resolution
    cluster:                      # the kubelet node-config format (docs/kubelet.md), or {preset: demo} /
      nodes: [...]                #   {preset: uniform, workers: N}
    kubelet: {pullDelay: 1s, shutdownDelay: 2s}
    scheduler: {config: {...KubeSchedulerConfiguration...}} | {configFile: sched.yaml}
    workload:
    - at: 0s                      # one manifest (any kind the API serves: Pods, Deployments, PDBs, ...)
      manifest: {...}
    - at: 1m                      # every document of a file (relative to the scenario file)
      file: web.yaml
    - generator:                  # N pods of a template, at a rate, seeded
        count: 1000
        start: 0s
        rate: 5                   # pods per simulated second (exponential inter-arrival times), or
        interval: 200ms           # a fixed spacing
        namePrefix: job-
        duration: {min: 1m, max: 10m}   # each pod's sim.kubeplane.io/duration, uniform in [min, max]
        template: {...a Pod manifest...}
    actions:
    - {at: 10m, taint: {node: node02, key: check, value: mycheck, effect: NoExecute}}
    - {at: 20m, untaint: {node: node02, key: check}}
    - {at: 30m, nodeFailure: {node: node01}}        # its kubelet stops heartbeating
    - {at: 40m, nodeRecovery: {node: node01}}
    - {at: 5m, scale: {kind: Deployment, name: web, replicas: 10}}
    - {at: 6m, rollout: {kind: Deployment, name: web, image: "nginx:1.28"}}
    - {at: 7m, cordon: {node: node01}}  /  uncordon  /  drain (cordon + evict every non-DaemonSet pod)
    - {at: 8m, addNodes: {...one node group...}}  /  {removeNode: {node: node03}}
    - {at: 9m, schedulerConfig: {config: {...}}}  /  {schedulerConfig: {configFile: most-allocated.yaml}}
                                  # kube-scheduler restarted with another configuration

Invariants: every time is a number of simulated seconds from the start; errors are one line naming the place
(:class:`ScenarioError`); loading never touches a cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubeplane.api.durations import parse_duration
from kubeplane.kubelet.config import NodeConfigError, NodeSpec, demo_cluster, parse_node_config, uniform_cluster

ACTIONS = (
    "taint",
    "untaint",
    "nodeFailure",
    "nodeRecovery",
    "scale",
    "rollout",
    "cordon",
    "uncordon",
    "drain",
    "addNodes",
    "removeNode",
    "schedulerConfig",
)


class ScenarioError(ValueError):
    """A scenario that cannot run; the message is one line."""


def seconds(value: Any, where: str) -> float:
    """A Go duration (``"10m"``, ``"1h30m"``) or a number of seconds."""
    if isinstance(value, bool):
        raise ScenarioError(f"{where}: expected a duration, not {value!r}")
    if isinstance(value, int | float):
        result = float(value)
    else:
        try:
            result = parse_duration(str(value).strip()) / 1e9
        except ValueError as exc:
            raise ScenarioError(f"{where}: {exc}") from None
    if result < 0:
        raise ScenarioError(f"{where}: must not be negative")
    return result


@dataclass(frozen=True)
class Arrival:
    """Objects created at simulated time ``at``."""

    at: float
    objects: Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Generator:
    count: int
    start: float
    template: Mapping[str, Any]
    rate: float | None = None
    interval: float | None = None
    name_prefix: str = "pod-"
    duration: tuple[float, float] | None = None


@dataclass(frozen=True)
class Action:
    at: float
    kind: str
    args: Mapping[str, Any]


@dataclass(frozen=True)
class Scenario:
    name: str
    nodes: Sequence[NodeSpec]
    seed: int = 0
    duration: float = 3600.0
    sample_interval: float = 10.0
    scheduler_config: Mapping[str, Any] | None = None
    pull_delay: float = 1.0
    shutdown_delay: float | None = None
    arrivals: Sequence[Arrival] = ()
    generators: Sequence[Generator] = ()
    actions: Sequence[Action] = ()
    source: Path | None = field(default=None, compare=False)

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise ScenarioError(f"cannot read scenario {path}: {exc.strerror}") from None
        except yaml.YAMLError as exc:
            raise ScenarioError(f"scenario {path}: {str(exc).splitlines()[0]}") from None
        return cls.parse(data, base=path.parent, default_name=path.stem, source=path)

    @classmethod
    def parse(
        cls, data: Any, *, base: Path | None = None, default_name: str = "scenario", source: Path | None = None
    ) -> Scenario:
        if not isinstance(data, Mapping):
            raise ScenarioError("scenario: expected a mapping")
        known = {"name", "seed", "duration", "sampleInterval", "cluster", "kubelet", "scheduler", "workload",
                 "actions", "apiVersion", "kind", "description"}  # fmt: skip
        unknown = sorted(set(data) - known)
        if unknown:
            raise ScenarioError(f"scenario: unknown field(s) {', '.join(unknown)}")
        base = base or Path.cwd()
        kubelet = data.get("kubelet") or {}
        arrivals, generators = _workload(data.get("workload") or [], base)
        shutdown = kubelet.get("shutdownDelay")
        return cls(
            name=str(data.get("name") or default_name),
            nodes=_cluster(data.get("cluster")),
            seed=int(data.get("seed", 0)),
            duration=seconds(data.get("duration", 3600), "duration"),
            sample_interval=max(seconds(data.get("sampleInterval", 10), "sampleInterval"), 1.0),
            scheduler_config=_scheduler(data.get("scheduler"), base),
            pull_delay=seconds(kubelet.get("pullDelay", 1.0), "kubelet.pullDelay"),
            shutdown_delay=None if shutdown is None else seconds(shutdown, "kubelet.shutdownDelay"),
            arrivals=arrivals,
            generators=generators,
            actions=_actions(data.get("actions") or [], base),
            source=source,
        )


def _cluster(value: Any) -> list[NodeSpec]:
    if value is None:
        return demo_cluster()
    if isinstance(value, Mapping) and "preset" in value:
        preset = value["preset"]
        if preset == "demo":
            return demo_cluster()
        if preset == "uniform":
            return uniform_cluster(int(value.get("workers", 3)))
        raise ScenarioError(f"cluster.preset: unknown preset {preset!r} (demo or uniform)")
    try:
        return parse_node_config(value)
    except NodeConfigError as exc:
        raise ScenarioError(f"cluster: {exc}") from None


def load_scheduler_config(path: Path, *, where: str = "") -> dict[str, Any]:
    """A KubeSchedulerConfiguration file as a mapping (parsed later by the scheduler's config loader); errors are
    one line (a YAML error by its first line)."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ScenarioError(f"{where}cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{where}{path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{where}{path}: not a KubeSchedulerConfiguration")
    return data


def _scheduler(value: Any, base: Path) -> Mapping[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ScenarioError("scheduler: expected {config: {...}} or {configFile: PATH}")
    if "configFile" in value:
        return load_scheduler_config(base / str(value["configFile"]), where="scheduler.configFile ")
    config = value.get("config")
    if config is not None and not isinstance(config, Mapping):
        raise ScenarioError("scheduler.config: expected a KubeSchedulerConfiguration mapping")
    return config


def _documents(path: Path, where: str) -> list[Mapping[str, Any]]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"{where}: {path}: {str(exc).splitlines()[0]}") from None
    out: list[Mapping[str, Any]] = []
    for doc in docs:
        if isinstance(doc, Mapping) and doc.get("kind") == "List":
            out.extend(doc.get("items") or [])
        elif isinstance(doc, Mapping):
            out.append(doc)
        else:
            raise ScenarioError(f"{where}: {path}: a document is not an object")
    return out


def _workload(entries: Any, base: Path) -> tuple[list[Arrival], list[Generator]]:
    if not isinstance(entries, list):
        raise ScenarioError("workload: expected a list")
    arrivals: list[Arrival] = []
    generators: list[Generator] = []
    for i, entry in enumerate(entries):
        where = f"workload[{i}]"
        if not isinstance(entry, Mapping):
            raise ScenarioError(f"{where}: expected a mapping")
        if "generator" in entry:
            generators.append(_generator(entry["generator"], f"{where}.generator"))
            continue
        at = seconds(entry.get("at", 0), f"{where}.at")
        if "manifest" in entry:
            manifest = entry["manifest"]
            if not isinstance(manifest, Mapping) or not manifest.get("kind"):
                raise ScenarioError(f"{where}.manifest: expected an object with a kind")
            arrivals.append(Arrival(at, [manifest]))
        elif "file" in entry:
            arrivals.append(Arrival(at, _documents(base / str(entry["file"]), f"{where}.file")))
        else:
            raise ScenarioError(f"{where}: expected manifest, file or generator")
    arrivals.sort(key=lambda a: a.at)
    return arrivals, generators


def _generator(value: Any, where: str) -> Generator:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a mapping")
    template = value.get("template")
    if not isinstance(template, Mapping) or not (template.get("spec") or {}).get("containers"):
        raise ScenarioError(f"{where}.template: expected a Pod manifest with spec.containers")
    count = value.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise ScenarioError(f"{where}.count: expected a non-negative integer")
    rate = value.get("rate")
    interval = value.get("interval")
    if (rate is None) == (interval is None):
        raise ScenarioError(f"{where}: give exactly one of rate (pods per second) or interval")
    if rate is not None and (not isinstance(rate, int | float) or rate <= 0):
        raise ScenarioError(f"{where}.rate: expected a positive number of pods per simulated second")
    duration = value.get("duration")
    bounds: tuple[float, float] | None = None
    if duration is not None:
        if isinstance(duration, Mapping):
            low = seconds(duration.get("min", 0), f"{where}.duration.min")
            high = seconds(duration.get("max", low), f"{where}.duration.max")
        else:
            low = high = seconds(duration, f"{where}.duration")
        if high < low:
            raise ScenarioError(f"{where}.duration: max is below min")
        bounds = (low, high)
    return Generator(
        count=count,
        start=seconds(value.get("start", 0), f"{where}.start"),
        template=template,
        rate=float(rate) if rate is not None else None,
        interval=seconds(interval, f"{where}.interval") if interval is not None else None,
        name_prefix=str(value.get("namePrefix", "pod-")),
        duration=bounds,
    )


def _actions(entries: Any, base: Path) -> list[Action]:
    if not isinstance(entries, list):
        raise ScenarioError("actions: expected a list")
    out: list[Action] = []
    for i, entry in enumerate(entries):
        where = f"actions[{i}]"
        if not isinstance(entry, Mapping):
            raise ScenarioError(f"{where}: expected a mapping")
        kinds = [k for k in entry if k != "at"]
        if len(kinds) != 1 or kinds[0] not in ACTIONS:
            raise ScenarioError(f"{where}: expected `at` and one of {', '.join(ACTIONS)}")
        args = entry[kinds[0]]
        if not isinstance(args, Mapping):
            raise ScenarioError(f"{where}.{kinds[0]}: expected a mapping")
        if kinds[0] in ("taint", "untaint", "nodeFailure", "nodeRecovery", "cordon", "uncordon", "drain",
                        "removeNode") and not args.get("node"):  # fmt: skip
            raise ScenarioError(f"{where}.{kinds[0]}: needs node")
        if kinds[0] in ("scale", "rollout") and not args.get("name"):
            raise ScenarioError(f"{where}.{kinds[0]}: needs name")
        if kinds[0] == "schedulerConfig":
            args = {"config": _scheduler(args, base) or {}}
        out.append(Action(seconds(entry.get("at", 0), f"{where}.at"), kinds[0], dict(args)))
    out.sort(key=lambda a: a.at)
    return out
