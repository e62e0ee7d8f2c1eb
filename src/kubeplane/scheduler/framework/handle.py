"""What the framework hands to plugin factories (upstream ``framework.Handle``), reduced to what we use.

A plugin factory is ``new(args, handle) -> plugin`` where ``args`` is the plugin's pluginConfig args as a
v1 dict with upstream's defaults applied (``{}`` for plugins without args).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kubeplane.client.clock import Clock, SystemClock

if TYPE_CHECKING:
    from kubeplane.client.event_series import SeriesEventRecorder
    from kubeplane.client.informer import SharedInformerFactory
    from kubeplane.client.interface import Client
    from kubeplane.scheduler.framework.interface import Plugin
    from kubeplane.scheduler.framework.pod_groups import PodGroupManager
    from kubeplane.scheduler.framework.runtime import Framework
    from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

__all__ = ["Handle", "NodeInfoLister", "ObjectLister", "PluginFactory", "PodNominator"]


class PodNominator(Protocol):
    """Pods that preemption nominated to nodes (upstream ``framework.PodNominator``), read side."""

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def nominated_node_names(self) -> Collection[str]:
        """The nodes with at least one nominated pod (the cycle re-checks only those with them)."""
        ...


class _NoNominations:
    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return []

    def nominated_node_names(self) -> Collection[str]:
        return ()


def _no_activation(pods: Iterable[PodInfo]) -> None:
    return None


class NodeInfoLister(Protocol):
    """The cycle's immutable snapshot as plugins see it (upstream ``SharedLister.NodeInfos()``)."""

    def list(self) -> Sequence[NodeInfo]: ...

    def get(self, name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]: ...


class _EmptyLister:
    def list(self) -> Sequence[NodeInfo]:
        return ()

    def get(self, name: str) -> NodeInfo | None:
        return None

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return ()

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return ()


def _no_objects(resource: str, namespace: str) -> Sequence[Mapping[str, Any]]:
    return ()


ObjectLister = Callable[[str, str], Sequence[Mapping[str, Any]]]
"""``(resource plural, namespace) -> objects``; namespace "" lists cluster-scoped objects (e.g. namespaces)."""


@dataclass
class Handle:
    """Services shared by a profile's plugins. ``client`` is None offline (explain on files).

    ``list_objects`` reads other API objects the plugins need from the scheduler's informers (live) or the
    cluster file (explain): ``namespaces`` (for namespaceSelector), ``services``, ``replicasets``,
    ``statefulsets``, ``replicationcontrollers`` (for default topology spreading), ``poddisruptionbudgets`` (for
    preemption). The scheduler starts informers for exactly those resources; a plugin must not ask for others.
    """

    client: Client | None = None
    clock: Clock = field(default_factory=SystemClock)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    informer_factory: SharedInformerFactory | None = None
    event_recorder: SeriesEventRecorder | None = None
    parallelism: int = 16
    snapshot_lister: NodeInfoLister = field(default_factory=_EmptyLister)
    list_objects: ObjectLister = _no_objects
    extra: dict[str, Any] = field(default_factory=dict)
    framework: Framework | None = None
    """The profile's framework (each Framework hands its plugins a copy of the handle naming itself): what
    preemption runs Filter and the PreFilter extensions through (upstream's Handle embeds the framework)."""
    nominator: PodNominator = field(default_factory=_NoNominations)
    """The scheduling queue's nominations (set by the Scheduler once the queue exists; none offline)."""
    activate: Callable[[Iterable[PodInfo]], None] = _no_activation
    """Move pods waiting in the queue to activeQ at once (upstream ``PodActivator``)."""
    pod_groups: PodGroupManager | None = None
    """PodGroups and their pods' states (upstream ``PodGroupManager``): set by the Scheduler, and by explain
    from its cluster file; None offline without one (GangScheduling then sees no groups)."""

    def snapshot(self) -> NodeInfoLister:
        return self.snapshot_lister


PluginFactory = Callable[[Mapping[str, Any], Handle], "Plugin"]
