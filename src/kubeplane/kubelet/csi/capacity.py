"""A simulated driver's storage pools: one per topology segment, with a total and what its volumes use.

A *segment* is one value of the driver's topology key: a node name (node topology) or a zone (zone topology).
The totals come from the node config (``csiCapacity``, per node; a zone's is the sum over its nodes); ``None``
means unlimited (a driver no group gives a capacity). What is used is the sum of the sizes of the volumes the
driver has provisioned there and not yet deleted, keyed by PV name so a volume is counted once whatever happens
(a restart recounts it from the PVs; :meth:`Pools.consume` of a known volume changes nothing).

Invariants: ``used(segment) == sum of the segment's volume sizes``; ``free = max(total - used, 0)``; a segment
exists for every node (or zone) the driver runs on; pure (no I/O), so the provisioner and the capacity
publisher read one truth.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubeplane.api.quantity import parse_quantity
from kubeplane.kubelet.config import NodeSpec

from .config import CSIDriverSpec

__all__ = ["Pools", "Segment", "node_segment"]


@dataclass(slots=True)
class Segment:
    """One topology segment: its key's value, total bytes (None: unlimited), the labels every node of it shares
    (for ``allowedTopologies``), its nodes."""

    value: str
    total: int | None
    labels: dict[str, str]
    nodes: set[str] = field(default_factory=set)
    volumes: dict[str, int] = field(default_factory=dict)  # PV name -> bytes

    @property
    def used(self) -> int:
        return sum(self.volumes.values())

    @property
    def free(self) -> int | None:
        return None if self.total is None else max(self.total - self.used, 0)

    def fits(self, size: int) -> bool:
        free = self.free
        return free is None or size <= free


def node_segment(driver: CSIDriverSpec, spec: NodeSpec) -> str | None:
    """The segment ``spec``'s node belongs to for ``driver``; None when the driver does not run there (a zonal
    driver on a node without a zone label)."""
    if driver.topology == "node":
        return spec.name
    return spec.labels.get(driver.topology_key)


class Pools:
    """The segments of one driver, built from node specs (:meth:`add_nodes` for a scale-out)."""

    def __init__(self, driver: CSIDriverSpec, nodes: Iterable[NodeSpec] = ()) -> None:
        self.driver = driver
        self.tracked = False
        self.segments: dict[str, Segment] = {}
        self._node_segment: dict[str, str] = {}  # node -> segment value
        self._volume_segment: dict[str, str] = {}  # PV name -> segment value
        self.add_nodes(nodes)

    def add_nodes(self, nodes: Iterable[NodeSpec]) -> list[str]:
        """Add the nodes' capacity to their segments; the segments that changed, in order."""
        nodes = list(nodes)
        if any(self.driver.name in spec.csi_capacity for spec in nodes) and not self.tracked:
            self.tracked = True
            for seg in self.segments.values():  # unconfigured nodes have none once the driver is tracked
                seg.total = 0
        changed: list[str] = []
        for spec in nodes:
            value = node_segment(self.driver, spec)
            if value is None:
                continue
            amount = _bytes(spec.csi_capacity.get(self.driver.name)) if self.tracked else None
            found = self.segments.get(value)
            if found is None:
                seg = self.segments[value] = Segment(value, amount, dict(spec.labels))
            else:
                seg = found
                seg.labels = {k: v for k, v in seg.labels.items() if spec.labels.get(k) == v}
                if seg.total is not None and amount is not None:
                    seg.total += amount
            seg.nodes.add(spec.name)
            self._node_segment[spec.name] = value
            if value not in changed:
                changed.append(value)
        return changed

    def segment_of_node(self, node: str) -> Segment | None:
        value = self._node_segment.get(node)
        return None if value is None else self.segments[value]

    def consume(self, segment: str, volume: str, size: int) -> bool:
        """Count ``volume`` in ``segment``; False (nothing changes) when it is counted already."""
        seg = self.segments.get(segment)
        if seg is None or volume in self._volume_segment:
            return False
        seg.volumes[volume] = size
        self._volume_segment[volume] = segment
        return True

    def release(self, volume: str) -> str | None:
        """Stop counting ``volume``; the segment it was in, or None."""
        value = self._volume_segment.pop(volume, None)
        if value is not None:
            del self.segments[value].volumes[volume]
        return value

    def holds(self, volume: str) -> bool:
        return volume in self._volume_segment

    @property
    def used(self) -> int:
        return sum(seg.used for seg in self.segments.values())

    @property
    def total(self) -> int | None:
        """Bytes over every segment; None when unlimited."""
        if not self.tracked:
            return None
        return sum(seg.total or 0 for seg in self.segments.values())

    def volume_count(self) -> int:
        return len(self._volume_segment)


def _bytes(quantity: str | None) -> int:
    return 0 if quantity is None else parse_quantity(quantity).value()


def as_mapping(pools: Pools) -> Mapping[str, tuple[int | None, int]]:
    """segment -> (total, used) (reports, tests)."""
    return {value: (seg.total, seg.used) for value, seg in sorted(pools.segments.items())}
