"""Node groups in a simulation: the simulated cloud (:class:`~kubeplane.autoscaler.fleet_provider.FleetProvider`)
on the run's fleet, the cluster-autoscaler, and what a run reports of them.

A scenario declares node groups in ``cluster.nodeGroups`` (docs/sim.md) and the autoscaler's flags in
``autoscaler:`` (cluster-autoscaler's flag names, parsed by ``AutoscalerOptions.from_flags``). Only such a run
gets :class:`Autoscaling`: other scenarios start exactly what they always did (their event logs do not change).

* Start: each group's initial nodes register Ready right after the fleet starts (before the scheduler and the
  controllers), then the autoscaler (``kubeplane.autoscaler.loop.Autoscaler``) starts with its own RNG stream
  (``autoscaler-<seed>``), so the other components draw what they always drew. ``autoscaler: false`` in the
  scenario leaves it out: the groups then change only by actions.
* The action ``scaleNodeGroup: {group, delta}``: ``delta > 0`` asks the group for more nodes, ``delta < 0``
  deletes its newest ``-delta`` nodes (as an operator resizing the group by hand).
* Time series: ``nodes_group_<name>`` per group, the group's registered, not yet deleted nodes.
* Summary: ``nodes_added`` (scale-ups' nodes), ``nodes_removed`` (deletions begun), ``node_hours`` (each node from
  registration until its Node object is deleted, or the run's end), ``cost`` (node-hours x ``pricePerHour``), and
  the same per group in ``node_groups``.

Invariants: figures are read from the provider's history, never from the API; nothing here changes a run
without node groups.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from kubeplane.autoscaler.fleet_provider import FleetProvider
from kubeplane.autoscaler.provider import NodeGroupError, NodeGroupSpec
from kubeplane.client.clock import Clock
from kubeplane.client.interface import Client
from kubeplane.kubelet.fleet import Fleet

from .columns import NODE_GROUP_PREFIX

if TYPE_CHECKING:
    from kubeplane.autoscaler.loop import Autoscaler
    from kubeplane.autoscaler.options import AutoscalerOptions
    from kubeplane.scheduler.config.types import KubeSchedulerConfiguration

__all__ = ["NODE_GROUP_FIELDS", "Autoscaling", "load_autoscaler"]


NODE_GROUP_FIELDS: Final = ("nodes_added", "nodes_removed", "node_hours", "cost", "node_groups")
"""The summary fields of a run with node groups."""


def load_autoscaler() -> tuple[type[Autoscaler], type[AutoscalerOptions]]:
    """``(Autoscaler, AutoscalerOptions)``: the classes a run builds its autoscaler from, imported only by runs
    with node groups (the seam tests replace with fakes of the same shape)."""
    from kubeplane.autoscaler.loop import Autoscaler
    from kubeplane.autoscaler.options import AutoscalerOptions

    return Autoscaler, AutoscalerOptions


class Autoscaling:
    """A run's node groups: the provider on ``fleet`` and, unless the scenario says ``autoscaler: false``, the
    autoscaler (see the module
    docstring). ``start`` after the fleet, ``stop`` before it."""

    def __init__(
        self,
        groups: Sequence[NodeGroupSpec],
        *,
        client: Client,
        fleet: Fleet,
        clock: Clock,
        seed: int,
        flags: Mapping[str, Any] | None,
        scheduler_config: KubeSchedulerConfiguration | None,
        enabled: bool = True,
    ) -> None:
        self.groups = list(groups)
        self.client, self.clock, self.seed, self.flags = client, clock, seed, dict(flags or {})
        self.scheduler_config = scheduler_config
        self.enabled = enabled
        self.provider = FleetProvider(fleet, self.groups, clock=clock)
        self.autoscaler: Autoscaler | None = None

    async def start_nodes(self) -> None:
        """The groups' initial nodes (Ready at once)."""
        await self.provider.start()

    async def start_autoscaler(self) -> Autoscaler | None:
        """Start the autoscaler unless the scenario says ``autoscaler: false``; returns what ``run()`` should run,
        or None."""
        if not self.enabled:
            return None
        autoscaler_class, options_class = load_autoscaler()
        self.autoscaler = autoscaler_class(
            self.client,
            provider=self.provider,
            options=options_class.from_flags(self.flags),
            clock=self.clock,
            rng=random.Random(f"autoscaler-{self.seed}"),
            scheduler_config=self.scheduler_config,
        )
        await self.autoscaler.start()
        return self.autoscaler

    async def stop(self) -> None:
        if self.autoscaler is not None:
            await self.autoscaler.stop()
        await self.provider.stop()

    async def scale(self, args: Mapping[str, Any]) -> None:
        """The ``scaleNodeGroup`` action; :class:`NodeGroupError` when the group refuses."""
        group, delta = str(args["group"]), int(args["delta"])
        if delta > 0:
            await self.provider.increase_size(group, delta)
            return
        nodes = self.provider.nodes(group)
        if -delta > len(nodes):
            raise NodeGroupError("min size reached, nodes will not be deleted")
        await self.provider.delete_nodes(group, nodes[len(nodes) + delta :])

    def row(self) -> dict[str, int]:
        """The time-series columns: registered, undeleted nodes per group."""
        return {f"{NODE_GROUP_PREFIX}{g.name}": self.provider.registered(g.name) for g in self.groups}

    def group_of(self) -> dict[str, str]:
        """Every node the groups ever had, by name: its group (for :func:`.scaling.scaling_rows`)."""
        return {c.node: c.group for c in self.provider.history}

    def summary(self) -> dict[str, Any]:
        per_group: dict[str, dict[str, Any]] = {}
        for group in self.groups:
            hours = self.provider.node_seconds(group.name) / 3600
            sizes = [c.size for c in self.provider.history if c.group == group.name]
            per_group[group.name] = {
                "nodes_added": self.provider.added(group.name),
                "nodes_removed": self.provider.removed(group.name),
                "node_hours": round(hours, 6),
                "cost": round(hours * group.price_per_hour, 6),
                "nodes_at_end": self.provider.registered(group.name),
                "nodes_peak": max(sizes, default=0),
            }
        return {
            "nodes_added": sum(g["nodes_added"] for g in per_group.values()),
            "nodes_removed": sum(g["nodes_removed"] for g in per_group.values()),
            "node_hours": round(sum(g["node_hours"] for g in per_group.values()), 6),
            "cost": round(sum(g["cost"] for g in per_group.values()), 6),
            "node_groups": per_group,
        }
