"""The Alibaba openb GPU trace (:data:`DATA_DIR`, ``src/kubeplane/gpu/data/openb``): node and pod lists as CSV,
turned into node specs, Pod manifests and the FGD paper's arrival sequence.

The trace ships inside the package (about 2 MB), so ``kubeplane sim fgd-repro``, the openb scenarios of
``examples/sim`` and the tests run from a fresh clone and from an installed wheel alike, with nothing beside them.

Files (README beside the data): the node lists have ``sn, cpu_milli, memory_mib, gpu, model`` (``model`` empty on
CPU-only nodes); the pod lists have ``name, cpu_milli, memory_mib, num_gpu, gpu_milli`` and, except
``multigpu30``, ``gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time``. Columns are found by
header name, so either layout loads; ``qos``, ``pod_phase`` and ``scheduled_time`` are not used (nor by the
paper's artifact).

Normalisation, as the artifact's ``pod_csv_to_yaml.py`` does (FGD-EXPERIMENT.md §1.1):

* ``gpu_milli`` is clipped: a value in (0, 1000] is kept, one above 1000 becomes 1000, anything else (0 or
  negative) becomes 0.
* A pod with ``num_gpu == 0`` has ``gpu_milli`` 0 whatever the file says (it asks for no GPU).
* A pod with ``num_gpu > 0`` whose clipped ``gpu_milli`` is 0 keeps its ``num_gpu`` but asks for no GPU: the
  artifact's GPU filter only looks at pods with ``gpu_milli > 0``, and its demand ``num_gpu * gpu_milli`` is 0, so
  it behaves as a CPU-only pod (:meth:`TracePod.gpu_total_milli` is 0 and :func:`pod_manifest` adds no GPU
  request). The published lists hold no such pod, no ``num_gpu == 0`` pod with a ``gpu_milli``, no value above
  1000, and every multi-GPU pod has ``gpu_milli == 1000``; the rules only matter for other files.

Invariants: loading is pure (no I/O beyond reading the CSV); every problem is a :class:`TraceError` with one line
naming the file and line; the loaders keep the file's order; :func:`paper_sequence` consumes the caller's RNG
exactly as documented there, so a caller that goes on using it (node order, the Random policy) stays in step.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from kubeplane.api.validation.names import is_dns1123_subdomain
from kubeplane.kubelet.config import NodeConfigError, NodeSpec, parse_node_config

from .model import GPU_MILLI_ANNOTATION, GPU_MODEL_LABEL, GPU_RESOURCE, MILLI_PER_GPU

__all__ = [
    "DATA_DIR",
    "NODE_PODS",
    "POD_IMAGE",
    "TraceError",
    "TraceNode",
    "TracePod",
    "gpu_capacity_milli",
    "load_nodes",
    "load_pods",
    "node_groups",
    "node_specs",
    "paper_sequence",
    "pod_manifest",
]

DATA_DIR: Final = Path(__file__).resolve().parent / "data" / "openb"
"""The packaged openb trace: node lists, the default pod list and its variants, the FGD artifact's reference
medians (``fgd_reference_default.csv``), the experiment's notes (``FGD-EXPERIMENT.md``), README and citation."""

NODE_PODS: Final = "1001"
"""Every node's pod capacity, as the artifact's node YAML has it."""
POD_IMAGE: Final = "registry.k8s.io/pause:3.10"


class TraceError(ValueError):
    """A trace file that cannot be used; the message is one line naming the file (and line)."""


@dataclass(frozen=True, slots=True)
class TraceNode:
    """One node of a node list; ``model`` is ``""`` for a CPU-only node (``gpus == 0``)."""

    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: str


@dataclass(frozen=True, slots=True)
class TracePod:
    """One pod of a pod list, normalised (module docstring). ``gpu_milli`` is per GPU; ``gpu_spec`` the
    acceptable GPU models (empty: any); times are trace seconds, None when the column is absent or empty."""

    name: str
    cpu_milli: int
    memory_mib: int
    num_gpu: int
    gpu_milli: int
    gpu_spec: tuple[str, ...] = ()
    creation_time: int | None = None
    deletion_time: int | None = None

    @property
    def gpu_total_milli(self) -> int:
        return self.num_gpu * self.gpu_milli


def clip_gpu_milli(num_gpu: int, gpu_milli: int) -> int:
    """The artifact's clipping: (0, 1000] kept, > 1000 → 1000, else 0; and 0 for a pod without GPUs."""
    if num_gpu <= 0 or gpu_milli <= 0:
        return 0
    return min(gpu_milli, MILLI_PER_GPU)


class _Rows:
    """The rows of one CSV as (line number, row) with typed field access raising one-line errors."""

    def __init__(self, path: Path, required: Sequence[str]) -> None:
        self.path = path
        try:
            self.text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise TraceError(f"cannot read {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise TraceError(f"{path.name}: not a UTF-8 text file") from None
        reader = csv.reader(self.text.splitlines())
        header = next(reader, None)
        if not header:
            raise TraceError(f"{path.name}: empty file (expected a header line)")
        self.columns = {name.strip(): i for i, name in enumerate(header)}
        missing = [c for c in required if c not in self.columns]
        if missing:
            raise TraceError(f"{path.name} line 1: missing column(s) {', '.join(missing)}")
        self.rows = [(number, row) for number, row in enumerate(reader, 2) if any(cell.strip() for cell in row)]
        self.line = 0
        self.row: list[str] = []

    def __iter__(self) -> Iterator[_Rows]:
        for line, row in self.rows:
            self.line, self.row = line, row
            if len(self.row) > len(self.columns):
                raise TraceError(f"{self.path.name} line {self.line}: {len(self.row)} fields, the header has "
                                 f"{len(self.columns)}")  # fmt: skip
            yield self

    def text_of(self, column: str) -> str:
        index = self.columns.get(column)
        return "" if index is None or index >= len(self.row) else self.row[index].strip()

    def error(self, column: str, message: str) -> TraceError:
        return TraceError(f"{self.path.name} line {self.line}: {column}: {message}")

    def integer(self, column: str, *, optional: bool = False) -> int | None:
        text = self.text_of(column)
        if not text:
            if optional:
                return None
            raise self.error(column, "missing value")
        try:
            value = int(text)
        except ValueError:
            raise self.error(column, f"{text!r} is not an integer") from None
        if value < 0 and column != "gpu_milli":  # gpu_milli below 0 is clipped to 0, as the artifact does
            raise self.error(column, f"{value} must not be negative")
        return value

    def required_integer(self, column: str) -> int:
        value = self.integer(column)
        assert value is not None
        return value

    def name(self, column: str) -> str:
        text = self.text_of(column)
        if not text:
            raise self.error(column, "missing value")
        problems = is_dns1123_subdomain(text)
        if problems:
            raise self.error(column, f"{text!r} is not a valid object name: {problems[0]}")
        return text


def _unique(items: Iterable[tuple[int, str]], path: Path) -> None:
    seen: set[str] = set()
    for line, name in items:
        if name in seen:
            raise TraceError(f"{path.name} line {line}: {name} appears twice")
        seen.add(name)


def load_nodes(path: str | Path) -> list[TraceNode]:
    """The nodes of an openb node list, in file order (``sn`` is the name)."""
    rows = _Rows(Path(path), ("sn", "cpu_milli", "memory_mib", "gpu"))
    nodes: list[TraceNode] = []
    lines: list[tuple[int, str]] = []
    for row in rows:
        gpus = row.required_integer("gpu")
        model = row.text_of("model")
        if gpus and not model:
            raise row.error("model", f"empty on a node with {gpus} GPUs")
        nodes.append(
            TraceNode(
                name=row.name("sn"),
                cpu_milli=row.required_integer("cpu_milli"),
                memory_mib=row.required_integer("memory_mib"),
                gpus=gpus,
                model=model if gpus else "",
            )
        )
        lines.append((row.line, nodes[-1].name))
    _unique(lines, rows.path)
    return nodes


def load_pods(path: str | Path) -> list[TracePod]:
    """The pods of an openb pod list, in file order, normalised as the module docstring says."""
    rows = _Rows(Path(path), ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"))
    pods: list[TracePod] = []
    lines: list[tuple[int, str]] = []
    for row in rows:
        name = row.name("name")
        num_gpu = row.required_integer("num_gpu")
        created = row.integer("creation_time", optional=True)
        deleted = row.integer("deletion_time", optional=True)
        if created is not None and deleted is not None and deleted < created:
            raise row.error("deletion_time", f"{deleted} is before creation_time {created}")
        spec = tuple(part.strip() for part in row.text_of("gpu_spec").split("|") if part.strip())
        pods.append(
            TracePod(
                name=name,
                cpu_milli=row.required_integer("cpu_milli"),
                memory_mib=row.required_integer("memory_mib"),
                num_gpu=num_gpu,
                gpu_milli=clip_gpu_milli(num_gpu, row.required_integer("gpu_milli")),
                gpu_spec=spec,
                creation_time=created,
                deletion_time=deleted,
            )
        )
        lines.append((row.line, name))
    _unique(lines, rows.path)
    return pods


def gpu_capacity_milli(nodes: Iterable[TraceNode]) -> int:
    return sum(node.gpus for node in nodes) * MILLI_PER_GPU


def paper_sequence(
    pods: Sequence[TracePod], rng: random.Random, *, ratio: float = 1.3, capacity_milli: int
) -> list[TracePod]:
    """The FGD paper's arrival sequence (FGD-EXPERIMENT.md §1.2, §1.3, §6.1), drawing only from ``rng``:

    1. sort by name, then ``rng.shuffle`` (the artifact's ``SortClusterPods``);
    2. with ``target = ratio * capacity_milli`` and ``total`` the pods' summed GPU demand: if ``total < target``,
       **tune up**: repeatedly draw ``rng.randrange(len(pods))`` over the *name-sorted originals*; stop when
       ``total + clone.gpu_milli > target`` — the per-GPU milli, not the pod's total, as the artifact's
       ``tuneUpPods`` does, so a multi-GPU clone can overshoot the target by up to ``num_gpu - 1`` GPUs — else
       append it as ``<name>-tuned-<i>`` (``i`` = 0, 1, ... counting appended clones) after the shuffled pods and
       add its ``num_gpu * gpu_milli``. The draw that stops the loop is consumed too;
    3. if ``total > target``, **tune down**: remove the pod at ``rng.randrange(len(current))`` of the shuffled
       list until ``total <= target``;
    4. ``total == target`` or ``ratio <= 0``: the shuffled list as it is.

    Same pods, ratio, capacity and RNG state → the same list. Raises :class:`TraceError` when tuning up cannot end
    (no pod asks for a GPU) or ``capacity_milli`` is not positive.
    """
    if capacity_milli <= 0:
        raise TraceError(f"paper sequence: the cluster has no GPU capacity ({capacity_milli} milli)")
    by_name = sorted(pods, key=lambda p: p.name)
    shuffled = list(by_name)
    rng.shuffle(shuffled)
    target = ratio * capacity_milli
    total = sum(p.gpu_total_milli for p in by_name)
    if ratio <= 0 or total == target:
        return shuffled
    if total > target:
        while total > target:
            removed = shuffled.pop(rng.randrange(len(shuffled)))
            total -= removed.gpu_total_milli
        return shuffled
    if not any(p.gpu_milli for p in by_name):
        raise TraceError("paper sequence: no pod asks for a GPU, tuning up would never end")
    clones = 0
    while True:
        source = by_name[rng.randrange(len(by_name))]
        if total + source.gpu_milli > target:
            return shuffled
        shuffled.append(replace(source, name=f"{source.name}-tuned-{clones}"))
        total += source.gpu_total_milli
        clones += 1


def _milli(value: int) -> str:
    return f"{value}m"


def _mib(value: int) -> str:
    return f"{value}Mi"


def node_groups(nodes: Iterable[TraceNode]) -> list[dict[str, Any]]:
    """The nodes as node-config groups (docs/kubelet.md), one per node: capacity (allocatable defaults to it)
    ``cpu: <milli>m``, ``memory: <mib>Mi``, ``pods: "1001"`` (the artifact's), and on a GPU node
    ``nvidia.com/gpu: "<n>"`` and the label ``nvidia.com/gpu.product: <model>``."""
    groups: list[dict[str, Any]] = []
    for node in nodes:
        capacity = {"cpu": _milli(node.cpu_milli), "memory": _mib(node.memory_mib), "pods": NODE_PODS}
        group: dict[str, Any] = {"name": node.name, "capacity": capacity}
        if node.gpus:
            capacity[GPU_RESOURCE] = str(node.gpus)
            group["labels"] = {GPU_MODEL_LABEL: node.model}
        groups.append(group)
    return groups


def node_specs(nodes: Iterable[TraceNode]) -> list[NodeSpec]:
    """Node specs through the node-config parser (so labels, podCIDRs and addresses are those of any fleet) from
    :func:`node_groups`: capacity = allocatable."""
    groups = node_groups(nodes)
    if not groups:
        return []
    try:
        return parse_node_config(groups)
    except NodeConfigError as exc:
        raise TraceError(f"node list: {exc}") from None


def pod_manifest(pod: TracePod, *, namespace: str = "default", scheduler_name: str | None = None) -> dict[str, Any]:
    """A bare Pod for one trace pod (the GPU model of :mod:`kubeplane.gpu.model`): one container ``main`` with
    requests = limits for CPU and memory; whole GPUs (``gpu_milli == 1000``) as ``nvidia.com/gpu: n`` in requests
    and limits; a share of one GPU as the annotation ``gpu.kubeplane.io/milli``; ``gpu_spec`` as a required node
    affinity ``nvidia.com/gpu.product In [...]``. ``restartPolicy: Always`` and no duration: it runs until the trace
    deletes it (a Never/OnFailure pod would finish after the simulated kubelet's batch run time).
    The trace name is the pod name (trace names are lowercase RFC 1123 already; the loader checks it)."""
    resources: dict[str, Any] = {"cpu": _milli(pod.cpu_milli), "memory": _mib(pod.memory_mib)}
    annotations: dict[str, str] = {}
    if pod.gpu_milli >= MILLI_PER_GPU and pod.num_gpu > 0:
        resources[GPU_RESOURCE] = str(pod.num_gpu)
    elif pod.gpu_milli > 0:
        if pod.num_gpu != 1:  # a share spans one device: the loader never builds this, a hand-made pod might
            raise TraceError(
                f"pod {pod.name}: a share of a GPU ({pod.gpu_milli} milli) needs num_gpu 1, not {pod.num_gpu}"
            )
        annotations[GPU_MILLI_ANNOTATION] = str(pod.gpu_milli)
    spec: dict[str, Any] = {
        "restartPolicy": "Always",
        "containers": [
            {"name": "main", "image": POD_IMAGE, "resources": {"requests": dict(resources), "limits": dict(resources)}}
        ],
    }
    if scheduler_name:
        spec["schedulerName"] = scheduler_name
    if pod.gpu_spec:
        term = {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": list(pod.gpu_spec)}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    metadata: dict[str, Any] = {"name": pod.name, "namespace": namespace}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
