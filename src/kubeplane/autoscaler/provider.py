"""Node groups and the cloud-provider contract between the autoscaler's core and whatever creates nodes.

Upstream's ``cloudprovider.NodeGroup`` (kubernetes/autoscaler cluster-autoscaler/cloudprovider/cloud_provider.go)
reduced to what the core uses. Invariants every implementation keeps:

* A group's nodes carry the label :data:`NODE_GROUP_LABEL` = the group's name and are named ``<group>-<n>``
  (``n`` counts up from 0 within a run and is never reused), so the same run names the same nodes.
* :meth:`CloudProvider.increase_size` raises the target at once; each new node registers **at once, NotReady**
  (tainted ``node.kubernetes.io/not-ready``, as a booting kubelet's node) and becomes Ready
  ``provisioning_delay`` seconds later on the injected clock. Until Ready it counts as *upcoming*.
* :meth:`CloudProvider.delete_nodes` lowers the target at once; each node's kubelet stops and the Node object is
  deleted ``deletion_delay`` seconds later. The core taints and drains before calling it (upstream's order).
* Sizes never leave ``[min_size, max_size]``: a call that would is refused with :class:`NodeGroupError` and
  changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

NODE_GROUP_LABEL = "autoscaling.kubeplane.io/node-group"
"""Label naming the node group of each node a :class:`CloudProvider` created."""


class NodeGroupError(ValueError):
    """A size change a node group refuses (beyond its bounds, unknown group or node); nothing changed."""


@dataclass(frozen=True, slots=True)
class NodeGroupSpec:
    """One node group as a scenario's ``cluster.nodeGroups`` entry or ``--node-groups FILE`` declares it.

    ``template`` is a kubelet node-config group (docs/kubelet.md: capacity, allocatable, labels, taints, zone,
    devices, ...) without ``name``/``count``/``namePattern``: what each new node of the group looks like.
    """

    name: str
    min_size: int
    max_size: int
    template: Mapping[str, Any]
    price_per_hour: float = 0.0
    provisioning_delay: float = 0.0
    """Seconds from :meth:`CloudProvider.increase_size` until the new node is Ready."""
    deletion_delay: float = 0.0
    """Seconds from :meth:`CloudProvider.delete_nodes` until the Node object is gone."""
    initial_size: int | None = None
    """Nodes at start (default ``min_size``)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Fields the core reads and the provider ignores (e.g. the priority expander's priority)."""


class CloudProvider(Protocol):
    """What the autoscaler's core may ask of the cloud (all names are node-group names)."""

    def node_groups(self) -> Sequence[NodeGroupSpec]:
        """Every group, in declaration order (the order expanders break ties by)."""
        ...

    def node_group_for(self, node_name: str) -> str | None:
        """The group a node belongs to; None for nodes no group owns (they are never scaled down)."""
        ...

    def target_size(self, group: str) -> int:
        """Nodes the group has or is bringing up (registered, upcoming), minus those being deleted."""
        ...

    def nodes(self, group: str) -> list[str]:
        """Names of the group's nodes that exist or are upcoming, in creation order."""
        ...

    def upcoming(self, group: str) -> int:
        """Nodes asked for and not yet Ready."""
        ...

    def template_node(self, group: str) -> dict[str, Any]:
        """A Node object as the group's next node would register once Ready (allocatable, labels including
        :data:`NODE_GROUP_LABEL` and ``kubernetes.io/hostname``, taints of the template only), named
        ``template-node-for-<group>``: what scale-up's estimator schedules pods onto."""
        ...

    async def increase_size(self, group: str, delta: int) -> None:
        """Ask for ``delta`` > 0 more nodes; :class:`NodeGroupError` beyond ``max_size``."""
        ...

    async def delete_nodes(self, group: str, names: Sequence[str]) -> None:
        """Remove these nodes of the group; :class:`NodeGroupError` below ``min_size`` or for a foreign node."""
        ...
