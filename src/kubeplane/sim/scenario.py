"""Scenario files: the cluster, the scheduler configuration, the workload and timed actions of a simulation.

YAML (docs/sim.md has the full schema and examples)::

    name: seeds-story
    seed: 42                      # default of --seed
    duration: 1h                  # default of --until (Go durations, or seconds)
    sampleInterval: 10s           # time-series resolution
    cluster:                      # the kubelet node-config format (docs/kubelet.md), or {preset: demo} /
      nodes: [...]                #   {preset: uniform, workers: N} / {trace: {format: openb, nodes: F.csv}}
      nodeGroups: [...]           # node groups of the simulated cloud (docs/autoscaler.md), beside or instead
    autoscaler: {expander: least-waste, scale-down-unneeded-time: 10m}   # cluster-autoscaler's flags, or false
    kubelet: {pullDelay: 1s, shutdownDelay: 2s}
    scheduler: {config: {...KubeSchedulerConfiguration...}} | {configFile: sched.yaml}
    descheduler: {policy: {...DeschedulerPolicy...} | policyFile: p.yaml, interval: 5m, dryRun: false}
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
    - trace:                      # a pod-list trace (openb): by creation time with deletions, or the FGD paper's
        format: openb             #   shuffled and inflated sequence (docs/sim.md, "Trace workloads")
        pods: ../data/openb_pod_list_default.csv
        order: times              # or paper
        timeScale: 0.001
    actions:
    - {at: 10m, taint: {node: node02, key: check, value: mycheck, effect: NoExecute}}
    - {at: 20m, untaint: {node: node02, key: check}}
    - {at: 30m, nodeFailure: {node: node01}}        # its kubelet stops heartbeating
    - {at: 40m, nodeRecovery: {node: node01}}
    - {at: 5m, scale: {kind: Deployment, name: web, replicas: 10}}
    - {at: 6m, rollout: {kind: Deployment, name: web, image: "nginx:1.28"}}
    - {at: 7m, cordon: {node: node01}}  /  uncordon  /  drain (cordon + evict every non-DaemonSet pod)
    - {at: 8m, addNodes: {...one node group...}}  /  {removeNode: {node: node03}}
    - {at: 8m, scaleNodeGroup: {group: small, delta: 2}}  # -2: delete the group's two newest nodes
    - {at: 9m, schedulerConfig: {config: {...}}}  /  {schedulerConfig: {configFile: most-allocated.yaml}}
                                  # kube-scheduler restarted with another configuration

Invariants: every time is a number of simulated seconds from the start; errors are one line naming the place
(:class:`ScenarioError`); loading never touches a cluster; a :class:`Scenario` is a value: what depends on the
run's seed (a trace in the paper's order) is kept as a recipe (:class:`PaperTrace`) that the runner resolves with
that seed, so ``sim run --seed`` changes it and the same seed gives the same pods.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubeplane.api import yamlio
from kubeplane.api.durations import duration_seconds
from kubeplane.api.quantity import QuantityError, parse_quantity
from kubeplane.api.views import section
from kubeplane.autoscaler.nodegroups import NodeGroupConfigError, parse_node_groups
from kubeplane.autoscaler.provider import NodeGroupSpec
from kubeplane.gpu import openb
from kubeplane.gpu.model import GPU_RESOURCE, MILLI_PER_GPU
from kubeplane.kubelet.config import NodeConfigError, NodeSpec, demo_cluster, parse_node_config, uniform_cluster

from .descheduling import DeschedulerSpec, parse_descheduler

ACTIONS = (
    "taint",
    "untaint",
    "label",
    "unlabel",
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
    "scaleNodeGroup",
)


class ScenarioError(ValueError):
    """A scenario that cannot run; the message is one line."""


def seconds(value: Any, where: str) -> float:
    """A Go duration (``"10m"``, ``"1h30m"``) or a number of seconds."""
    try:
        return duration_seconds(value)
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class Arrival:
    """Objects created at simulated time ``at``."""

    at: float
    objects: Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Deletion:
    """The object ``kind`` ``namespace/name`` deleted at simulated time ``at`` (grace period 0; gone already is
    fine)."""

    at: float
    kind: str
    namespace: str
    name: str


@dataclass(frozen=True)
class PaperTrace:
    """A trace workload in the FGD paper's order (:func:`kubeplane.gpu.openb.paper_sequence`), resolved by the
    runner with ``seed``, or the run's seed when None: pod *i* of the sequence arrives at ``start + i *
    interval`` and is never deleted. ``capacity_milli`` is the scenario's GPU capacity (the inflation target's
    base)."""

    pods: Sequence[openb.TracePod]
    start: float
    interval: float
    ratio: float
    capacity_milli: int
    seed: int | None = None
    limit: int | None = None
    namespace: str = "default"
    scheduler_name: str | None = None

    def sequence(self, run_seed: int) -> list[openb.TracePod]:
        rng = random.Random(run_seed if self.seed is None else self.seed)
        pods = openb.paper_sequence(self.pods, rng, ratio=self.ratio, capacity_milli=self.capacity_milli)
        return pods if self.limit is None else pods[: self.limit]

    def arrivals(self, run_seed: int) -> list[Arrival]:
        return [
            Arrival(
                round(self.start + i * self.interval, 6),
                [openb.pod_manifest(pod, namespace=self.namespace, scheduler_name=self.scheduler_name)],
            )
            for i, pod in enumerate(self.sequence(run_seed))
        ]


GENERATOR_KINDS = ("Pod", "Job", "CronJob", "StatefulSet", "Deployment", "PodGroup")
"""What a generator's template may be (``kind``, Pod when absent)."""


@dataclass(frozen=True)
class Generator:
    """``count`` objects of ``template`` (``count`` gangs with ``gang``: each a PodGroup of ``minCount`` and
    ``size`` pods naming it in ``spec.schedulingGroup``), named ``<namePrefix><i>``; ``duration`` goes on every
    pod (template) they make."""

    count: int
    start: float
    template: Mapping[str, Any]
    rate: float | None = None
    interval: float | None = None
    name_prefix: str = "pod-"
    duration: tuple[float, float] | None = None
    kind: str = "Pod"
    gang: tuple[int, int] | None = None
    """(size, minCount) of each gang, for a Pod template."""

    @property
    def pods(self) -> int:
        """How many pods it creates directly (workload kinds' pods come from their controllers)."""
        if self.kind != "Pod":
            return 0
        return self.count * (self.gang[0] if self.gang is not None else 1)


@dataclass(frozen=True)
class Action:
    at: float
    kind: str
    args: Mapping[str, Any]

    @property
    def label(self) -> str:
        """A short text naming the action and its target, for the report's time axes
        (``taint node02 check:NoExecute``, ``scale myapp-deploy to 5``, ``addNodes 3``)."""
        args = self.args
        if self.kind in ("taint", "untaint"):
            effect = f":{args.get('effect', 'NoSchedule')}" if self.kind == "taint" else ""
            return f"{self.kind} {args.get('node')} {args.get('key')}{effect}"
        if self.kind == "label":
            return f"label {args.get('node')} {args.get('key')}={args.get('value', '')}"
        if self.kind == "unlabel":
            return f"unlabel {args.get('node')} {args.get('key')}"
        if "node" in args:
            return f"{self.kind} {args['node']}"
        if self.kind == "scale":
            return f"scale {args.get('name')} to {args.get('replicas')}"
        if self.kind == "rollout":
            return f"rollout {args.get('name')} {args.get('image')}"
        if self.kind == "scaleNodeGroup":
            return f"scaleNodeGroup {args.get('group')} {int(args.get('delta', 0)):+d}"
        if self.kind == "addNodes":
            count = args.get("count", 1)
            return f"addNodes {args.get('name') or args.get('namePattern') or ''} ×{count}".replace("  ", " ")
        return self.kind


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
    deletions: Sequence[Deletion] = ()
    paper_traces: Sequence[PaperTrace] = ()
    generators: Sequence[Generator] = ()
    actions: Sequence[Action] = ()
    headline: Sequence[str] = ()
    """Summary fields the scenario is about (``nodes_in_use_peak``, ``gpu_alloc_pct_peak``...): listed first in
    summary.json and the report, and printed by the CLI."""
    source: Path | None = field(default=None, compare=False)
    descheduler: DeschedulerSpec | None = None
    """The ``descheduler`` section (:mod:`kubeplane.sim.descheduling`); None: no descheduler runs."""
    node_groups: Sequence[NodeGroupSpec] = ()
    """``cluster.nodeGroups``: the simulated cloud's groups (:mod:`kubeplane.sim.autoscaling`)."""
    autoscaler: Mapping[str, Any] | None = None
    """``autoscaler``: cluster-autoscaler's flags by name, for ``AutoscalerOptions.from_flags``."""
    autoscaler_enabled: bool = True
    """False for ``autoscaler: false``: the node groups run without the autoscaler (resized by actions only)."""

    @classmethod
    def load(cls, path: str | Path) -> Scenario:
        path = Path(path)
        try:
            data = yamlio.load(path.read_text())
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
                 "actions", "apiVersion", "kind", "description", "headline", "descheduler",
                 "autoscaler"}  # fmt: skip
        unknown = sorted(set(data) - known)
        if unknown:
            raise ScenarioError(f"scenario: unknown field(s) {', '.join(unknown)}")
        base = base or Path.cwd()
        kubelet = data.get("kubelet") or {}
        nodes, groups = _cluster_and_groups(data.get("cluster"), base)
        autoscaler = data.get("autoscaler")
        enabled = autoscaler is not False  # `autoscaler: false`: node groups resized by actions alone
        if autoscaler is False:
            autoscaler = None
        if autoscaler is not None and not isinstance(autoscaler, Mapping):
            raise ScenarioError("autoscaler: expected a mapping of cluster-autoscaler flags (or false)")
        actions = _actions(data.get("actions") or [], base)
        names = {g.name for g in groups}
        for action in actions:
            if action.kind == "scaleNodeGroup" and str(action.args["group"]) not in names:
                raise ScenarioError(f"actions: scaleNodeGroup at {action.at:g}s: no node group {action.args['group']}")
        workload = _workload(data.get("workload") or [], base, nodes)
        shutdown = kubelet.get("shutdownDelay")
        return cls(
            name=str(data.get("name") or default_name),
            nodes=nodes,
            seed=int(data.get("seed", 0)),
            duration=seconds(data.get("duration", 3600), "duration"),
            sample_interval=max(seconds(data.get("sampleInterval", 10), "sampleInterval"), 1.0),
            scheduler_config=_scheduler(data.get("scheduler"), base),
            pull_delay=seconds(kubelet.get("pullDelay", 1.0), "kubelet.pullDelay"),
            shutdown_delay=None if shutdown is None else seconds(shutdown, "kubelet.shutdownDelay"),
            arrivals=workload.arrivals,
            deletions=workload.deletions,
            paper_traces=workload.paper_traces,
            generators=workload.generators,
            actions=actions,
            headline=_headline(data.get("headline")),
            source=source,
            descheduler=parse_descheduler(data.get("descheduler"), base, seconds=seconds, error=ScenarioError),
            node_groups=groups,
            autoscaler=None if autoscaler is None else dict(autoscaler),
            autoscaler_enabled=enabled,
        )


def _cluster_and_groups(value: Any, base: Path) -> tuple[list[NodeSpec], list[NodeGroupSpec]]:
    """The cluster's nodes and its ``nodeGroups`` (a cluster may have only node groups)."""
    if not isinstance(value, Mapping) or "nodeGroups" not in value:
        return _cluster(value, base), []
    try:
        groups = parse_node_groups(value["nodeGroups"], where="nodeGroups")
    except NodeGroupConfigError as exc:
        raise ScenarioError(f"cluster: {exc}") from None
    rest = {k: v for k, v in value.items() if k != "nodeGroups"}
    nodes = _cluster(rest, base) if rest else []
    for spec in nodes:
        group, _, index = spec.name.rpartition("-")
        if index.isdigit() and any(g.name == group for g in groups):
            raise ScenarioError(f"cluster: node {spec.name} has a name of node group {group}'s nodes")
    return nodes, groups


def _cluster(value: Any, base: Path) -> list[NodeSpec]:
    if value is None:
        return demo_cluster()
    if isinstance(value, Mapping) and "preset" in value:
        preset = value["preset"]
        if preset == "demo":
            return demo_cluster()
        if preset == "uniform":
            return uniform_cluster(int(value.get("workers", 3)))
        raise ScenarioError(f"cluster.preset: unknown preset {preset!r} (demo or uniform)")
    if isinstance(value, Mapping) and "trace" in value:
        if len(value) != 1:
            raise ScenarioError("cluster: give trace alone (or list it among the node groups)")
        value = [value]
    if isinstance(value, Mapping) and isinstance(value.get("nodes"), list):
        value = {**value, "nodes": _trace_groups(value["nodes"], base, "cluster.nodes")}
    elif isinstance(value, list):
        value = _trace_groups(value, base, "cluster")
    try:
        return parse_node_config(value)
    except NodeConfigError as exc:
        raise ScenarioError(f"cluster: {exc}") from None


def _trace_groups(groups: list[Any], base: Path, where: str) -> list[Any]:
    """The node groups with every ``{trace: {format, nodes, limit}}`` element replaced by one group per trace
    node (so defaults, positions, podCIDRs and addresses work as for any group)."""
    out: list[Any] = []
    for i, group in enumerate(groups):
        if not (isinstance(group, Mapping) and "trace" in group):
            out.append(group)
            continue
        place = f"{where}[{i}].trace" if where != "cluster" or len(groups) > 1 else "cluster.trace"
        trace = group["trace"]
        if len(group) != 1 or not isinstance(trace, Mapping):
            raise ScenarioError(f"{place}: expected {{trace: {{format: openb, nodes: FILE.csv, limit: N}}}}")
        _known(trace, {"format", "nodes", "limit"}, place)
        _format(trace, place)
        if not trace.get("nodes"):
            raise ScenarioError(f"{place}.nodes: needs the node list (a CSV file, relative to the scenario)")
        try:
            nodes = openb.load_nodes(base / str(trace["nodes"]))
        except openb.TraceError as exc:
            raise ScenarioError(f"{place}.nodes: {exc}") from None
        limit = _count(trace.get("limit"), f"{place}.limit")
        out.extend(openb.node_groups(nodes if limit is None else nodes[:limit]))
    return out


def _known(value: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(value) - known)
    if unknown:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(map(str, unknown))}")


def _format(value: Mapping[str, Any], where: str) -> None:
    fmt = value.get("format", "openb")
    if fmt != "openb":
        raise ScenarioError(f"{where}.format: unknown trace format {fmt!r} (openb)")


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScenarioError(f"{where}: expected a non-negative integer")
    return value


def _number(value: Any, where: str, *, positive: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{where}: expected a number, not {value!r}")
    if positive and value <= 0:
        raise ScenarioError(f"{where}: must be positive")
    return float(value)


def gpu_capacity_milli(nodes: Sequence[NodeSpec]) -> int:
    """The nodes' whole GPUs (``nvidia.com/gpu`` capacity) in milli-GPU: the base of the paper order's
    inflation target."""
    total = 0
    for spec in nodes:
        value = spec.capacity.get(GPU_RESOURCE)
        if value is not None:
            try:
                total += parse_quantity(str(value)).value()
            except QuantityError:
                continue
    return total * MILLI_PER_GPU


def read_yaml(path: Path, *, where: str = "", what: str = "") -> Any:
    """The YAML (or JSON) document of ``path``; a file that cannot be read or parsed is a one-line ScenarioError
    (a YAML error by its first line), prefixed by ``where`` and naming the file as ``what`` (e.g. "grid ")."""
    try:
        return yamlio.load(path.read_text())
    except OSError as exc:
        raise ScenarioError(f"{where}cannot read {what}{path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{where}{what}{path}: {str(exc).splitlines()[0]}") from None


def load_scheduler_config(path: Path, *, where: str = "") -> dict[str, Any]:
    """A KubeSchedulerConfiguration file as a mapping (parsed later by the scheduler's config loader); errors are
    one line (a YAML error by its first line)."""
    data = read_yaml(path, where=where)
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
        docs = [d for d in yamlio.load_all(path.read_text()) if d]
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


@dataclass
class _Workload:
    arrivals: list[Arrival] = field(default_factory=list)
    deletions: list[Deletion] = field(default_factory=list)
    paper_traces: list[PaperTrace] = field(default_factory=list)
    generators: list[Generator] = field(default_factory=list)


def _workload(entries: Any, base: Path, nodes: Sequence[NodeSpec]) -> _Workload:
    if not isinstance(entries, list):
        raise ScenarioError("workload: expected a list")
    out = _Workload()
    for i, entry in enumerate(entries):
        where = f"workload[{i}]"
        if not isinstance(entry, Mapping):
            raise ScenarioError(f"{where}: expected a mapping")
        if "generator" in entry:
            out.generators.append(_generator(entry["generator"], f"{where}.generator"))
            continue
        if "trace" in entry:
            _trace(entry["trace"], f"{where}.trace", base, nodes, out)
            continue
        at = seconds(entry.get("at", 0), f"{where}.at")
        if "manifest" in entry:
            manifest = entry["manifest"]
            if not isinstance(manifest, Mapping) or not manifest.get("kind"):
                raise ScenarioError(f"{where}.manifest: expected an object with a kind")
            out.arrivals.append(Arrival(at, [manifest]))
        elif "file" in entry:
            out.arrivals.append(Arrival(at, _documents(base / str(entry["file"]), f"{where}.file")))
        else:
            raise ScenarioError(f"{where}: expected manifest, file, generator or trace")
    out.arrivals.sort(key=lambda a: a.at)
    out.deletions.sort(key=lambda d: d.at)
    return out


_TRACE_FIELDS = {"format", "pods", "order", "namespace", "schedulerName", "start", "limit"}
_TIMES_FIELDS = {"deletions", "origin", "timeScale"}
_PAPER_FIELDS = {"interval", "ratio", "seed"}


def _trace(value: Any, where: str, base: Path, nodes: Sequence[NodeSpec], out: _Workload) -> None:
    """A trace workload entry (docs/sim.md, "Trace workloads"): ``order: times`` becomes arrivals (one per
    distinct simulated time) and deletions now; ``order: paper`` a :class:`PaperTrace` resolved by the runner."""
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a mapping")
    _known(value, _TRACE_FIELDS | _TIMES_FIELDS | _PAPER_FIELDS, where)
    _format(value, where)
    order = value.get("order", "times")
    if order not in ("times", "paper"):
        raise ScenarioError(f"{where}.order: expected times or paper, not {order!r}")
    for name in sorted(_PAPER_FIELDS if order == "times" else _TIMES_FIELDS):
        if name in value:
            raise ScenarioError(f"{where}.{name}: only with order: {'paper' if order == 'times' else 'times'}")
    if not value.get("pods"):
        raise ScenarioError(f"{where}.pods: needs the pod list (a CSV file, relative to the scenario)")
    try:
        pods = openb.load_pods(base / str(value["pods"]))
    except openb.TraceError as exc:
        raise ScenarioError(f"{where}.pods: {exc}") from None
    namespace = str(value.get("namespace") or "default")
    scheduler = value.get("schedulerName")
    scheduler_name = None if scheduler is None else str(scheduler)
    start = seconds(value.get("start", 0), f"{where}.start")
    limit = _count(value.get("limit"), f"{where}.limit")
    try:
        for pod in pods:  # every pod must make a manifest (a share of a GPU on several devices cannot)
            openb.pod_manifest(pod)
    except openb.TraceError as exc:
        raise ScenarioError(f"{where}.pods: {exc}") from None
    if order == "paper":
        capacity = gpu_capacity_milli(nodes)
        if capacity <= 0:
            raise ScenarioError(f"{where}.order: paper inflates to a share of the cluster's GPUs, and it has none")
        seed = value.get("seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            raise ScenarioError(f"{where}.seed: expected an integer")
        out.paper_traces.append(
            PaperTrace(
                pods=pods,
                start=start,
                interval=seconds(value.get("interval", 1), f"{where}.interval"),
                ratio=_number(value.get("ratio", 1.3), f"{where}.ratio"),
                capacity_milli=capacity,
                seed=seed,
                limit=limit,
                namespace=namespace,
                scheduler_name=scheduler_name,
            )
        )
        return
    missing = next((p for p in pods if p.creation_time is None), None)
    if missing is not None:
        raise ScenarioError(f"{where}.pods: pod {missing.name} has no creation_time (order: times needs one)")
    timed = sorted(pods, key=lambda p: (p.creation_time, p.name))  # the artifact's order without shuffling
    if limit is not None:
        timed = timed[:limit]
    if not timed:
        return
    origin_value = value.get("origin")
    origin = (
        min(p.creation_time or 0 for p in timed)
        if origin_value is None
        else _number(origin_value, f"{where}.origin", positive=False)
    )
    scale = _number(value.get("timeScale", 1), f"{where}.timeScale")
    deletions = value.get("deletions", True)
    if not isinstance(deletions, bool):
        raise ScenarioError(f"{where}.deletions: expected true or false")

    def at(trace_time: int) -> float:  # times before the origin are clamped to start
        return round(start + max(trace_time - origin, 0) * scale, 6)

    groups: dict[float, list[Mapping[str, Any]]] = {}
    for pod in timed:
        if deletions and pod.deletion_time is not None and pod.deletion_time < origin:
            continue  # gone before the window opens: it never exists in the run
        groups.setdefault(at(pod.creation_time or 0), []).append(
            openb.pod_manifest(pod, namespace=namespace, scheduler_name=scheduler_name)
        )
        if deletions and pod.deletion_time is not None:
            out.deletions.append(Deletion(at(pod.deletion_time), "Pod", namespace, pod.name))
    out.arrivals.extend(Arrival(t, objects) for t, objects in groups.items())


def _generator(value: Any, where: str) -> Generator:
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected a mapping")
    template = value.get("template")
    if not isinstance(template, Mapping):
        raise ScenarioError(f"{where}.template: expected a manifest")
    kind = str(template.get("kind") or "Pod")
    if kind not in GENERATOR_KINDS:
        raise ScenarioError(f"{where}.template: kind {kind} not supported (one of {', '.join(GENERATOR_KINDS)})")
    if kind == "Pod" and not section(template, "spec").get("containers"):
        raise ScenarioError(f"{where}.template: expected a Pod manifest with spec.containers")
    gang = _gang(value.get("gang"), kind, f"{where}.gang")
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
        name_prefix=str(value.get("namePrefix", "pod-" if kind == "Pod" else kind.lower() + "-")),
        duration=bounds,
        kind=kind,
        gang=gang,
    )


def _gang(value: Any, kind: str, where: str) -> tuple[int, int] | None:
    """``gang: {size: N, minCount: M}`` (M defaults to N, at most N) for a Pod template."""
    if value is None:
        return None
    if kind != "Pod" or not isinstance(value, Mapping):
        raise ScenarioError(f"{where}: expected {{size, minCount}} with a Pod template")
    _known(value, {"size", "minCount"}, where)
    size = value.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ScenarioError(f"{where}.size: expected a positive integer")
    min_count = value.get("minCount", size)
    if not isinstance(min_count, int) or isinstance(min_count, bool) or not 1 <= min_count <= size:
        raise ScenarioError(f"{where}.minCount: expected an integer from 1 to size")
    return size, min_count


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
        if kinds[0] in ("taint", "untaint", "label", "unlabel", "nodeFailure", "nodeRecovery", "cordon", "uncordon",
                        "drain", "removeNode") and not args.get("node"):  # fmt: skip
            raise ScenarioError(f"{where}.{kinds[0]}: needs node")
        if kinds[0] in ("label", "unlabel") and not args.get("key"):
            raise ScenarioError(f"{where}.{kinds[0]}: needs key")
        if kinds[0] in ("scale", "rollout") and not args.get("name"):
            raise ScenarioError(f"{where}.{kinds[0]}: needs name")
        if kinds[0] == "scaleNodeGroup":
            delta = args.get("delta")
            if not args.get("group") or not isinstance(delta, int) or isinstance(delta, bool) or delta == 0:
                raise ScenarioError(f"{where}.scaleNodeGroup: needs group and a non-zero integer delta")
        if kinds[0] == "schedulerConfig":
            args = {"config": _scheduler(args, base) or {}}
        out.append(Action(seconds(entry.get("at", 0), f"{where}.at"), kinds[0], dict(args)))
    out.sort(key=lambda a: a.at)
    return out


def _headline(value: Any) -> list[str]:
    """The ``headline`` field: summary field names (a name or a list), each one a summary has
    (:data:`kubeplane.sim.summary.FIELDS`)."""
    from .summary import FIELDS

    if value is None:
        return []
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ScenarioError("headline: expected a summary field name or a list of them")
    unknown = [n for n in names if n not in FIELDS]
    if unknown:
        raise ScenarioError(f"headline: unknown summary field(s) {', '.join(unknown)} (docs/sim.md lists them)")
    return list(names)
