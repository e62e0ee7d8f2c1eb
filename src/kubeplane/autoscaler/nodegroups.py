"""Node groups from YAML: a scenario's ``cluster.nodeGroups`` or ``kubeplane up --node-groups FILE``.

The format (docs/autoscaler.md, "Node groups") is a list (or ``{nodeGroups: [...]}``) of::

    - name: cpu-small               # a DNS label: nodes are named cpu-small-0, cpu-small-1, ...
      minSize: 0
      maxSize: 10
      initialSize: 1                # nodes at start (default minSize)
      pricePerHour: 0.10            # cost of one node for an hour (any currency)
      provisioningDelay: 2m         # NotReady from the scale-up until Ready (Go duration or seconds)
      deletionDelay: 30s            # from the scale-down until the Node object is gone
      priority: 10                  # read by the priority expander (kept in NodeGroupSpec.extra)
      template:                     # a kubelet node-config group without name/count/namePattern/startIndex
        capacity: {cpu: "4", memory: 16Gi}
        labels: {pool: small}
        taints: [{key: dedicated, value: batch, effect: NoSchedule}]
        zone: zone-a

Size rules follow cluster-autoscaler's node-group spec validation (``config/dynamic/node_group_spec.go``, with
scale to zero allowed): ``min size must be >= 0``, ``max size must be greater or equal to min size``, ``name must
not be blank``. The template is parsed by :func:`kubeplane.kubelet.config.parse_node_config` -- the same code, so a
group's node is exactly the NodeSpec a node-config group with that content would give, plus the label
:data:`~.provider.NODE_GROUP_LABEL`.

Invariants: errors are :class:`NodeGroupConfigError` with one line naming the group and the field; group names are
unique; a parsed template is known to expand (it was tried once at parse time).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubeplane.api.durations import duration_seconds
from kubeplane.api.validation.names import is_dns1123_label
from kubeplane.kubelet.config import (
    NodeConfigError,
    NodeSpec,
    default_address,
    default_pod_cidr,
    parse_node_config,
    read_yaml_file,
)
from kubeplane.kubelet.csi.config import DEFAULT_DRIVER, CSIDriverSpec

from .provider import NODE_GROUP_LABEL, NodeGroupSpec

__all__ = [
    "NodeGroupConfigError",
    "group_node_spec",
    "load_node_groups",
    "node_name",
    "parse_node_groups",
    "template_node_name",
]

_KEYS = frozenset(
    {"name", "minSize", "maxSize", "initialSize", "pricePerHour", "provisioningDelay", "deletionDelay", "template",
     "priority"}
)  # fmt: skip
_NAMING_KEYS = ("name", "count", "namePattern", "startIndex")
"""Node-config group fields a template may not have: the provider names its nodes."""


class NodeGroupConfigError(ValueError):
    """A node-group list that cannot be used; the message is one line naming the group and the field."""


def node_name(group: str, index: int) -> str:
    """The ``index``-th node of ``group`` (``<group>-<n>``, n from 0, never reused within a run)."""
    return f"{group}-{index}"


def template_node_name(group: str) -> str:
    """The name of the Node object scale-up simulates for ``group`` (cluster-autoscaler's ``template-node-for-``)."""
    return f"template-node-for-{group}"


def group_node_spec(
    group: NodeGroupSpec,
    index: int,
    *,
    position: int,
    csi_drivers: tuple[CSIDriverSpec, ...] = (DEFAULT_DRIVER,),
    name: str | None = None,
) -> NodeSpec:
    """The NodeSpec of node ``index`` of ``group``: the template expanded as a one-node node-config group named
    ``<group>-<index>`` (``{index}`` in label values and ``podCIDR`` is ``index``), labelled with the group.
    ``position`` is the node's place in its fleet, for the default podCIDR and address (a template's own
    ``podCIDR``/``address`` win). ``name`` overrides the node name (the template node)."""
    template = dict(group.template)
    template["labels"] = {**(template.get("labels") or {}), NODE_GROUP_LABEL: group.name}
    if name is None:
        entry = {**template, "count": 1, "namePattern": f"{group.name}-{{index}}", "startIndex": index}
    else:
        entry = {**template, "name": name}
    try:
        (spec,) = parse_node_config([entry], csi_drivers=csi_drivers)
    except NodeConfigError as exc:
        detail = re.sub(r"^node (?:group|config)[^:]*: ", "", str(exc))  # the group is named once, as here
        raise NodeGroupConfigError(f"node group {group.name}: template: {detail}") from None
    return dataclasses.replace(
        spec,
        pod_cidr=spec.pod_cidr if "podCIDR" in template else default_pod_cidr(position),
        address=spec.address if "address" in template else default_address(position),
    )


def _size(group: str, data: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise NodeGroupConfigError(f"node group {group}: {key}: expected an integer, got {value!r}")
    return value


def _seconds(group: str, data: Mapping[str, Any], key: str) -> float:
    try:
        return duration_seconds(data.get(key, 0))
    except ValueError as exc:
        raise NodeGroupConfigError(f"node group {group}: {key}: {exc}") from None


def _group(data: Any, where: str) -> NodeGroupSpec:
    if not isinstance(data, Mapping):
        raise NodeGroupConfigError(f"{where}: expected a mapping")
    name = str(data.get("name") or "").strip()
    if not name:
        raise NodeGroupConfigError(f"{where}: name must not be blank")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise NodeGroupConfigError(f"node group {name}: unknown field(s) {', '.join(unknown)}")
    problems = is_dns1123_label(name)
    if problems:
        raise NodeGroupConfigError(f"node group {name}: name: {problems[0]}")
    if "minSize" not in data or "maxSize" not in data:
        raise NodeGroupConfigError(f"node group {name}: minSize and maxSize are required")
    min_size, max_size = _size(name, data, "minSize"), _size(name, data, "maxSize")
    if min_size < 0:
        raise NodeGroupConfigError(f"node group {name}: minSize: min size must be >= 0")
    if max_size < min_size:
        raise NodeGroupConfigError(f"node group {name}: maxSize: max size must be greater or equal to min size")
    initial = _size(name, data, "initialSize", min_size)
    if not min_size <= initial <= max_size:
        raise NodeGroupConfigError(f"node group {name}: initialSize: must be within [minSize, maxSize]")
    price = data.get("pricePerHour", 0)
    if not isinstance(price, int | float) or isinstance(price, bool) or price < 0:
        raise NodeGroupConfigError(f"node group {name}: pricePerHour: expected a non-negative number")
    template = data.get("template")
    if template is None:
        template = {}
    if not isinstance(template, Mapping):
        raise NodeGroupConfigError(f"node group {name}: template: expected a mapping (a node-config group)")
    naming = [k for k in _NAMING_KEYS if k in template]
    if naming:
        raise NodeGroupConfigError(f"node group {name}: template: {naming[0]} is not allowed (nodes are <group>-<n>)")
    extra: dict[str, Any] = {}
    if "priority" in data:
        extra["priority"] = _size(name, data, "priority")
    spec = NodeGroupSpec(
        name=name,
        min_size=min_size,
        max_size=max_size,
        template=dict(template),
        price_per_hour=float(price),
        provisioning_delay=_seconds(name, data, "provisioningDelay"),
        deletion_delay=_seconds(name, data, "deletionDelay"),
        initial_size=initial,
        extra=extra,
    )
    group_node_spec(spec, 0, position=0)  # the template expands, or the error names the group now
    return spec


def parse_node_groups(data: Any, *, where: str = "nodeGroups") -> list[NodeGroupSpec]:
    """Node groups from parsed YAML: a list of groups, or ``{nodeGroups: [...]}``; declaration order kept."""
    if isinstance(data, Mapping) and "nodeGroups" in data:
        unknown = sorted(set(data) - {"nodeGroups", "apiVersion", "kind"})
        if unknown:
            raise NodeGroupConfigError(f"node groups: unknown field(s) {', '.join(unknown)}")
        data = data["nodeGroups"]
    if not isinstance(data, list) or not data:
        raise NodeGroupConfigError(f"{where}: expected a non-empty list of node groups")
    groups: list[NodeGroupSpec] = []
    seen: set[str] = set()
    for i, entry in enumerate(data):
        group = _group(entry, f"{where}[{i}]")
        if group.name in seen:
            raise NodeGroupConfigError(f"node group {group.name}: defined twice")
        seen.add(group.name)
        groups.append(group)
    return groups


def load_node_groups(path: str | Path) -> list[NodeGroupSpec]:
    """Read and parse a node-groups file (``kubeplane up --node-groups``); errors are one line."""
    return parse_node_groups(read_yaml_file(path, what="node groups", error=NodeGroupConfigError))
