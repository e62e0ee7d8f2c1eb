"""The node config: which simulated nodes a fleet runs (``kubeplane kubelet --node-config`` and ``kubeplane up``).

YAML, either a list of node groups or a mapping with ``nodes:`` (that list) and an optional ``defaults:`` group
merged under every group. A group is one node (``name``) or ``count`` nodes named by ``namePattern`` (a Python
format string over ``index``, default ``node-{index}``, indices from ``startIndex``, default 1)::

    nodes:
    - name: master
      labels: {node-role.kubernetes.io/control-plane: ""}
      taints: [{key: node-role.kubernetes.io/control-plane, effect: NoSchedule}]
    - count: 100
      namePattern: "worker-{index:03d}"
      capacity: {cpu: "32", memory: 128Gi, pods: "110", nvidia.com/gpu: "8"}
      allocatable: {cpu: 31500m}          # per resource; unnamed resources default to capacity
      region: us-east-1
      zones: [us-east-1a, us-east-1b]     # round-robin over the group's nodes
      labels: {gpu.model: A100}           # values may use {name} and {index}
      images: {"nginx:1.27": 187Mi}       # or [{names: [...], sizeBytes: N}]
      podCIDR: "10.100.{index}.0/24"      # default: one /24 per node in 10.244.0.0/16 and above, by fleet order
      kubeletVersion: v1.37.0
      staticPodPath: /etc/kubeplane/manifests/{name}
      evictionHard: {memory.available: 200Mi}
      heartbeat: true                     # false: registered but never heartbeating (a failed node)
      shutdownDelay: 500ms                # a container exits this long after SIGTERM (Go duration or seconds)
      batchRunTime: 5s                    # how long a batch container without sim.kubeplane.io/duration runs
      csiCapacity: {csi.kubeplane.io: 100Gi}  # per CSI driver: per node (node topology), summed per zone (zone)
      devices:                            # DRA devices of simulated drivers, one ResourceSlice per (node, driver)
      - {driver: gpu.example.com, count: 2, attributes: {model: A100}, capacity: {memory: 40Gi}}

The mapping form also takes ``csiDrivers:``, the simulated CSI drivers the fleet runs (absent: one default driver
``csi.kubeplane.io``, node-local, unlimited capacity; ``[]``: none) - each with ``name``, ``topology`` (``node``:
key ``topology.csi.kubeplane.io/node``; ``zone``: ``topology.kubernetes.io/zone``), ``attachRequired``,
``provisionTime``, ``deleteTime``, ``maxVolumesPerNode`` and ``storageClasses`` (see
:mod:`kubeplane.kubelet.csi.config` and docs/csi.md). Every node carries the file's driver list
(``NodeSpec.csi_drivers``), so whoever builds a fleet from the specs runs the drivers; when a node-topology driver
exists every node is labelled ``topology.csi.kubeplane.io/node=<its name>`` at registration.

``devices`` (per group): the DRA devices the node's simulated DRA drivers publish and prepare -- a list of device
groups, each ``driver``, ``count``, ``namePattern`` (default ``<first label of driver>-{index}``), ``startIndex``,
``attributes`` (string / int / bool / ``{version: x.y.z}``; every device also gets an int ``index``) and
``capacity`` (quantities); see :mod:`kubeplane.kubelet.dra.config` and docs/dra-drivers.md.

Invariants: node names are unique across the file; every quantity parses; errors are one line naming the group
(:class:`NodeConfigError`). Labels always include what a real kubelet registers (``kubernetes.io/hostname``,
``kubernetes.io/os``, ``kubernetes.io/arch`` and their ``beta.`` forms), plus the topology labels when
``region``/``zone(s)`` are given.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubeplane.api import yamlio
from kubeplane.api.durations import parse_duration
from kubeplane.api.quantity import QuantityError, parse_quantity
from kubeplane.api.taints import parse_taint

from .csi.config import (
    DEFAULT_DRIVER,
    NODE_TOPOLOGY_KEY,
    CSIConfigError,
    CSIDriverSpec,
    parse_csi_capacity,
    parse_csi_drivers,
)
from .dra.config import DeviceConfigError, DeviceGroupSpec, parse_devices

DEFAULT_KUBELET_VERSION = "v1.37.0"
DEFAULT_CAPACITY: Mapping[str, str] = {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"}
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"

_GROUP_KEYS = {
    "name",
    "count",
    "namePattern",
    "startIndex",
    "capacity",
    "allocatable",
    "labels",
    "annotations",
    "taints",
    "region",
    "zone",
    "zones",
    "images",
    "podCIDR",
    "address",
    "kubeletVersion",
    "os",
    "arch",
    "staticPodPath",
    "evictionHard",
    "heartbeat",
    "shutdownDelay",
    "batchRunTime",
    "csiCapacity",
    "devices",
}


class NodeConfigError(ValueError):
    """A node config that cannot be used; the message is one line."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One simulated node, fully resolved."""

    name: str
    capacity: Mapping[str, str]
    allocatable: Mapping[str, str]
    labels: Mapping[str, str]
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, Any]] = ()
    images: Sequence[Mapping[str, Any]] = ()
    pod_cidr: str = ""
    address: str = ""
    kubelet_version: str = DEFAULT_KUBELET_VERSION
    os: str = "linux"
    arch: str = "amd64"
    static_pod_path: str = ""
    eviction_hard: Mapping[str, str] = field(default_factory=dict)
    heartbeat: bool = True
    shutdown_delay: float | None = None
    """Seconds a container of this node takes to exit after SIGTERM; None: the fleet's setting
    (:mod:`kubeplane.kubelet.termination`)."""
    batch_run_time: float | None = None
    """Seconds a container of a restartPolicy Never/OnFailure pod without ``sim.kubeplane.io/duration`` runs
    before it exits 0 on this node; None: the fleet's setting (:mod:`kubeplane.kubelet.sim_exits`)."""
    csi_capacity: Mapping[str, str] = field(default_factory=dict)
    """CSI driver name -> storage capacity quantity on this node (``csiCapacity``)."""
    csi_drivers: tuple[CSIDriverSpec, ...] = (DEFAULT_DRIVER,)
    """The node config's ``csiDrivers`` (the same tuple on every node of one file)."""
    devices: tuple[DeviceGroupSpec, ...] = ()
    """The node's DRA device groups (``devices``), published by :mod:`kubeplane.kubelet.dra`."""


def _shutdown_delay(group: str, value: Any, key: str = "shutdownDelay") -> float | None:
    """``shutdownDelay`` (or ``batchRunTime``): a Go duration (``"1.5s"``) or a number of seconds, not negative;
    None when absent."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise NodeConfigError(f"node group {group}: {key} must be a duration such as 500ms or 2s")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        try:
            seconds = parse_duration(str(value).strip()) / 1e9
        except ValueError:
            raise NodeConfigError(
                f"node group {group}: {key} {value!r} is not a duration (use e.g. 500ms, 2s or 1m)"
            ) from None
    if seconds < 0:
        raise NodeConfigError(f"node group {group}: {key} must not be negative")
    return seconds


def _quantities(group: str, what: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise NodeConfigError(f"node group {group}: {what} must be a mapping of resource to quantity")
    out: dict[str, str] = {}
    for name, qty in value.items():
        text = str(qty)
        try:
            parse_quantity(text)
        except QuantityError as exc:
            raise NodeConfigError(f"node group {group}: {what}.{name}: {exc}") from None
        out[str(name)] = text
    return out


def _images(group: str, value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    items: list[tuple[list[str], Any]] = []
    if isinstance(value, Mapping):
        items = [([str(k)], v) for k, v in value.items()]
    elif isinstance(value, list):
        for entry in value:
            if not isinstance(entry, Mapping) or not entry.get("names"):
                raise NodeConfigError(f"node group {group}: images entries need names and sizeBytes")
            items.append(([str(n) for n in entry["names"]], entry.get("sizeBytes", 0)))
    else:
        raise NodeConfigError(f"node group {group}: images must be a mapping or a list")
    out = []
    for names, size in items:
        try:
            size_bytes = parse_quantity(str(size)).value()
        except QuantityError as exc:
            raise NodeConfigError(f"node group {group}: image {names[0]} size: {exc}") from None
        out.append({"names": names, "sizeBytes": size_bytes})
    return out


def _taints(group: str, value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise NodeConfigError(f"node group {group}: taints must be a list")
    out = []
    for entry in value:
        taint = entry
        if isinstance(entry, str):  # kubectl's key[=value]:Effect
            try:
                taint = parse_taint(entry).to_dict()
            except ValueError as exc:
                raise NodeConfigError(f"node group {group}: taint {entry!r}: {exc}") from None
        if not isinstance(taint, Mapping) or not taint.get("key") or not taint.get("effect"):
            raise NodeConfigError(f"node group {group}: every taint needs a key and an effect")
        if taint["effect"] not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise NodeConfigError(f"node group {group}: taint {taint['key']}: unknown effect {taint['effect']!r}")
        out.append(dict(taint))
    return out


def default_pod_cidr(position: int) -> str:
    """The ``position``-th node's /24 (0-based): 10.244.0.0/24, 10.244.1.0/24, ... then 10.245.0.0/24 ..."""
    return f"10.{(244 + position // 256) % 256}.{position % 256}.0/24"


def default_address(position: int) -> str:
    """The ``position``-th node's InternalIP: 172.18.0.2, 172.18.0.3, ... (as kind's node network)."""
    return str(ipaddress.IPv4Address("172.18.0.2") + position)


def _format(group: str, template: str, **values: Any) -> str:
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError) as exc:
        raise NodeConfigError(f"node group {group}: bad template {template!r}: {exc}") from None


def _expand(
    group: Mapping[str, Any], number: int, start: int, drivers: tuple[CSIDriverSpec, ...] = (DEFAULT_DRIVER,)
) -> list[NodeSpec]:
    label = str(group.get("name") or group.get("namePattern") or f"#{number}")
    unknown = set(group) - _GROUP_KEYS
    if unknown:
        raise NodeConfigError(f"node group {label}: unknown field(s) {', '.join(sorted(unknown))}")
    if "name" in group and "count" in group:
        raise NodeConfigError(f"node group {label}: give either name or count, not both")
    if "name" in group:
        names = [(str(group["name"]), 0)]
    else:
        count = group.get("count")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise NodeConfigError(f"node group {label}: count must be a non-negative integer (or give a name)")
        pattern = str(group.get("namePattern", "node-{index}"))
        first = int(group.get("startIndex", 1))
        names = [(_format(label, pattern, index=i), i) for i in range(first, first + count)]
    capacity = {**DEFAULT_CAPACITY, **_quantities(label, "capacity", group.get("capacity"))}
    allocatable = {**capacity, **_quantities(label, "allocatable", group.get("allocatable"))}
    for name, value in allocatable.items():
        if name in capacity and parse_quantity(value).nanos > parse_quantity(capacity[name]).nanos:
            raise NodeConfigError(f"node group {label}: allocatable {name} exceeds capacity")
    zones = group.get("zones") or ([group["zone"]] if group.get("zone") else [])
    if not isinstance(zones, list):
        raise NodeConfigError(f"node group {label}: zones must be a list")
    taints = _taints(label, group.get("taints"))
    images = _images(label, group.get("images"))
    eviction = {str(k): str(v) for k, v in (group.get("evictionHard") or {}).items()}
    os_name, arch = str(group.get("os", "linux")), str(group.get("arch", "amd64"))
    shutdown_delay = _shutdown_delay(label, group.get("shutdownDelay"))
    batch_run_time = _shutdown_delay(label, group.get("batchRunTime"), "batchRunTime")
    try:
        csi_capacity = parse_csi_capacity(label, group.get("csiCapacity"), drivers)
    except CSIConfigError as exc:
        raise NodeConfigError(str(exc)) from None
    try:
        devices = parse_devices(label, group.get("devices"))
    except DeviceConfigError as exc:
        raise NodeConfigError(str(exc)) from None
    node_topology = any(d.topology == "node" for d in drivers)
    specs = []
    for i, (name, index) in enumerate(names):
        labels = {
            "beta.kubernetes.io/arch": arch,
            "beta.kubernetes.io/os": os_name,
            "kubernetes.io/arch": arch,
            HOSTNAME_LABEL: name,
            "kubernetes.io/os": os_name,
        }
        if node_topology:  # the node plugin's topology label (kubelet's nodeinfomanager adds it on registration)
            labels[NODE_TOPOLOGY_KEY] = name
        if group.get("region"):
            labels[REGION_LABEL] = str(group["region"])
        if zones:
            labels[ZONE_LABEL] = str(zones[i % len(zones)])
        for key, value in (group.get("labels") or {}).items():
            labels[str(key)] = _format(label, "" if value is None else str(value), name=name, index=index)
        specs.append(
            NodeSpec(
                name=name,
                capacity=capacity,
                allocatable=allocatable,
                labels=labels,
                annotations={str(k): str(v) for k, v in (group.get("annotations") or {}).items()},
                taints=taints,
                images=images,
                pod_cidr=_format(label, str(group["podCIDR"]), name=name, index=index) if group.get("podCIDR") else "",
                address=_format(label, str(group["address"]), name=name, index=index) if group.get("address") else "",
                kubelet_version=str(group.get("kubeletVersion", DEFAULT_KUBELET_VERSION)),
                os=os_name,
                arch=arch,
                static_pod_path=_format(label, str(group.get("staticPodPath") or ""), name=name, index=index),
                eviction_hard=eviction,
                heartbeat=bool(group.get("heartbeat", True)),
                shutdown_delay=shutdown_delay,
                batch_run_time=batch_run_time,
                csi_capacity=csi_capacity,
                csi_drivers=drivers,
                devices=devices,
            )
        )
    return specs


def _merge(defaults: Mapping[str, Any], group: Mapping[str, Any]) -> dict[str, Any]:
    merged = {k: v for k, v in defaults.items() if k not in ("name", "count", "namePattern", "startIndex")}
    for key, value in group.items():
        if key in ("capacity", "allocatable", "labels", "annotations", "evictionHard", "csiCapacity") and isinstance(
            merged.get(key), Mapping
        ):
            merged[key] = {**merged[key], **(value or {})}
        else:
            merged[key] = value
    return merged


def parse_node_config(data: Any, *, csi_drivers: tuple[CSIDriverSpec, ...] | None = None) -> list[NodeSpec]:
    """Node specs from parsed YAML (a list of groups, or ``{nodes: [...], defaults: {...}}``). ``csi_drivers``:
    the CSI drivers when the data has no ``csiDrivers`` (a running fleet's, for nodes added to it)."""
    defaults: Mapping[str, Any] = {}
    drivers: tuple[CSIDriverSpec, ...] = (DEFAULT_DRIVER,) if csi_drivers is None else csi_drivers
    if isinstance(data, Mapping):
        unknown = set(data) - {"nodes", "defaults", "apiVersion", "kind", "csiDrivers"}
        if unknown:
            raise NodeConfigError(f"node config: unknown field(s) {', '.join(sorted(unknown))}")
        try:
            if "csiDrivers" in data or csi_drivers is None:
                drivers = parse_csi_drivers(data.get("csiDrivers"), present="csiDrivers" in data)
        except CSIConfigError as exc:
            raise NodeConfigError(str(exc)) from None
        defaults = data.get("defaults") or {}
        data = data.get("nodes")
    if not isinstance(data, list) or not data:
        raise NodeConfigError("node config: expected a non-empty list of node groups (or nodes: [...])")
    specs: list[NodeSpec] = []
    for number, group in enumerate(data, 1):
        if not isinstance(group, Mapping):
            raise NodeConfigError(f"node config: group #{number} is not a mapping")
        specs.extend(_expand(_merge(defaults, group), number, len(specs), drivers))
    seen: set[str] = set()
    resolved = []
    for position, spec in enumerate(specs):
        if spec.name in seen:
            raise NodeConfigError(f"node config: node {spec.name} is defined twice")
        seen.add(spec.name)
        resolved.append(
            NodeSpec(
                **{
                    **{f: getattr(spec, f) for f in spec.__dataclass_fields__},
                    "pod_cidr": spec.pod_cidr or default_pod_cidr(position),
                    "address": spec.address or default_address(position),
                }
            )
        )
    return resolved


def read_yaml_file(path: str | Path, *, what: str, error: type[ValueError]) -> Any:
    """One YAML document from ``path``; an unreadable file or bad YAML raises ``error`` with one line naming
    ``what`` it is (``cannot read node config PATH: ...``, ``node config PATH: <the parser's first line>``)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        return yamlio.load(text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
        raise error(f"{what} {path}: {first}") from None


def load_node_config(path: str | Path) -> list[NodeSpec]:
    """Read and parse a node-config file; errors are :class:`NodeConfigError` with one line."""
    return parse_node_config(read_yaml_file(path, what="node config", error=NodeConfigError))


DEMO_REGION = "region-1"
DEMO_ZONES = ("zone-a", "zone-b", "zone-c")
_MASTER = {
    "name": "master",
    "labels": {CONTROL_PLANE_LABEL: ""},
    "taints": [{"key": CONTROL_PLANE_LABEL, "effect": "NoSchedule"}],
    "region": DEMO_REGION,
    "zone": DEMO_ZONES[0],
}


def demo_cluster() -> list[NodeSpec]:
    """The seeds' cluster: ``master`` (control-plane role, NoSchedule taint), ``node01``, ``node02``; 4 CPU, 8Gi,
    110 pods each, with region and zone labels."""
    return parse_node_config(
        [
            _MASTER,
            {"name": "node01", "region": DEMO_REGION, "zone": DEMO_ZONES[1]},
            {"name": "node02", "region": DEMO_REGION, "zone": DEMO_ZONES[2]},
        ]
    )


def uniform_cluster(workers: int) -> list[NodeSpec]:
    """The master plus ``workers`` nodes of the demo size named node01, node02, ..., spread over three zones."""
    groups: list[dict[str, Any]] = [_MASTER]
    if workers:
        width = max(2, len(str(workers)))
        groups.append(
            {
                "count": workers,
                "namePattern": f"node{{index:0{width}d}}",
                "region": DEMO_REGION,
                "zones": list(DEMO_ZONES),
            }
        )
    return parse_node_config(groups)
