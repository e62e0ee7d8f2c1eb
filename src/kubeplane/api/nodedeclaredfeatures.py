"""Node declared features: ``k8s.io/component-helpers/nodedeclaredfeatures`` (the v1.37 line of the snapshot),
shared by the kubelet (what it declares in ``node.status.declaredFeatures``) and the scheduler's
NodeDeclaredFeatures plugin (what a pod needs).

A :class:`Feature` is a name, how a node *discovers* it (feature gates on, runtime support), and how a pod's spec
makes it *required* for scheduling (``InferForScheduling``). The registry is upstream's ``features.AllFeatures``;
:class:`Framework` keeps it sorted by name, as upstream's ``New`` does, so a feature set is a bitmask over that
order and ``DiscoverNodeFeatures`` returns names sorted.

Invariants: unknown names on a node are ignored (``TryMap``); a feature whose ``max_version`` is below the
component's version is neither declared nor required; inference reads the pod spec only (the status is not known
at scheduling time).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "ALL_FEATURES",
    "DEFAULT_FRAMEWORK",
    "KUBELET_FEATURE_GATES",
    "Feature",
    "Framework",
    "NodeConfiguration",
    "kubelet_declared_features",
]

Infer = Callable[[Mapping[str, Any]], bool]


def _never(_spec: Mapping[str, Any]) -> bool:
    return False


def _containers(spec: Mapping[str, Any], *keys: str) -> Iterable[Mapping[str, Any]]:
    for key in keys:
        for c in spec.get(key) or ():
            if isinstance(c, Mapping):
                yield c


def _restart_all_containers(spec: Mapping[str, Any]) -> bool:
    """``restartallcontainers``: a container or init container has a ``RestartAllContainers`` restart rule."""
    return any(
        isinstance(rule, Mapping) and rule.get("action") == "RestartAllContainers"
        for c in _containers(spec, "containers", "initContainers")
        for rule in c.get("restartPolicyRules") or ()
    )


def _user_namespaces_host_network(spec: Mapping[str, Any]) -> bool:
    """``usernamespaceshostnetwork``: host network with ``hostUsers: false``."""
    return bool(spec.get("hostNetwork")) and spec.get("hostUsers") is False


def _bind_mount_options(spec: Mapping[str, Any]) -> bool:
    """``volumebindmountoptions``: any volume mount of any container kind sets ``bindMountOptions``."""
    return any(
        isinstance(m, Mapping) and bool(m.get("bindMountOptions"))
        for c in _containers(spec, "containers", "initContainers", "ephemeralContainers")
        for m in c.get("volumeMounts") or ()
    )


@dataclass(frozen=True, slots=True)
class NodeConfiguration:
    """``types.NodeConfiguration``: the node's feature gates, version and runtime support."""

    feature_gates: Mapping[str, bool]
    version: tuple[int, int, int] | None = None
    user_namespaces_host_network: bool = False
    mount_options: bool = False


@dataclass(frozen=True, slots=True)
class Feature:
    """One declared feature (``types.Feature``). ``gate``: the feature gate ``Discover`` needs; ``runtime``: the
    runtime support it also needs (a :class:`NodeConfiguration` attribute), if any."""

    name: str
    gate: str
    infer_for_scheduling: Infer = _never
    runtime: str = ""
    max_version: tuple[int, int, int] | None = None

    def discover(self, cfg: NodeConfiguration) -> bool:
        if not cfg.feature_gates.get(self.gate, False):
            return False
        return not self.runtime or bool(getattr(cfg, self.runtime))


ALL_FEATURES: Final[tuple[Feature, ...]] = (
    Feature("RestartAllContainersOnContainerExits", "RestartAllContainersOnContainerExits", _restart_all_containers),
    Feature("InPlacePodLevelResourcesVerticalScaling", "InPlacePodLevelResourcesVerticalScaling"),
    Feature("ExtendWebSocketsToKubelet", "ExtendWebSocketsToKubelet"),
    Feature("InPlacePodVerticalScalingInitContainers", "InPlacePodVerticalScalingInitContainers"),
    Feature("InPlacePodVerticalScalingMemoryBackedVolumes", "InPlacePodVerticalScalingMemoryBackedVolumes"),
    Feature(
        "UserNamespacesHostNetworkSupport",
        "UserNamespacesHostNetworkSupport",
        _user_namespaces_host_network,
        runtime="user_namespaces_host_network",
    ),
    Feature("DRANodeAllocatableResources", "DRANodeAllocatableResources"),
    Feature("VolumeBindMountOptions", "VolumeBindMountOptions", _bind_mount_options, runtime="mount_options"),
    Feature("DRAOptionalNodeOperations", "DRAOptionalNodeOperations"),
)
"""Upstream ``features.AllFeatures``, in its order (the framework sorts by name)."""


class Framework:
    """``nodedeclaredfeatures.Framework`` with ``FeatureSet`` as an int bitmask over the name-sorted registry."""

    def __init__(self, registry: Sequence[Feature]) -> None:
        self.registry: tuple[Feature, ...] = tuple(sorted(registry, key=lambda f: f.name))
        self._index = {f.name: i for i, f in enumerate(self.registry)}

    def discover_node_features(self, cfg: NodeConfiguration) -> list[str]:
        """``DiscoverNodeFeatures``: the names a node with ``cfg`` declares, sorted."""
        return [
            f.name
            for f in self.registry
            if f.discover(cfg) and not (cfg.version and f.max_version and cfg.version > f.max_version)
        ]

    def infer_for_pod_scheduling(self, spec: Mapping[str, Any], version: tuple[int, int, int] | None) -> int:
        """``InferForPodScheduling``: the features the pod needs (a bitmask); ValueError without a version."""
        if version is None:
            raise ValueError("target version cannot be nil")
        reqs = 0
        for i, f in enumerate(self.registry):
            if f.max_version is not None and version > f.max_version:
                continue
            if f.infer_for_scheduling(spec):
                reqs |= 1 << i
        return reqs

    def try_map(self, names: Iterable[str]) -> int:
        """``TryMap``: the node's declared names as a bitmask, unknown names ignored."""
        out = 0
        for name in names:
            i = self._index.get(name)
            if i is not None:
                out |= 1 << i
        return out

    def unmap(self, features: int) -> list[str]:
        """``Unmap``: the names of a bitmask, in registry (sorted) order."""
        return [f.name for i, f in enumerate(self.registry) if features >> i & 1]


DEFAULT_FRAMEWORK: Final = Framework(ALL_FEATURES)

KUBELET_FEATURE_GATES: Final[Mapping[str, bool]] = {
    "ExtendWebSocketsToKubelet": True,  # beta, on by default since 1.36
    "InPlacePodLevelResourcesVerticalScaling": True,  # beta, on by default since 1.36
    "InPlacePodVerticalScalingInitContainers": True,  # beta, on by default
    "RestartAllContainersOnContainerExits": True,  # beta, on by default since 1.36
    "InPlacePodVerticalScalingMemoryBackedVolumes": False,  # alpha
    "UserNamespacesHostNetworkSupport": False,  # alpha
    "DRANodeAllocatableResources": False,  # alpha (1.36)
    "VolumeBindMountOptions": False,  # alpha
    "DRAOptionalNodeOperations": False,  # alpha (1.37)
}
"""The v1.37 kubelet's defaults for the gates the registry's features name."""


def kubelet_declared_features(version: tuple[int, int, int] | None = (1, 37, 0)) -> list[str]:
    """What a v1.37 kubelet with default feature gates declares in ``node.status.declaredFeatures`` (the simulated
    runtime supports neither user namespaces with host network nor bind mount options)."""
    return DEFAULT_FRAMEWORK.discover_node_features(NodeConfiguration(KUBELET_FEATURE_GATES, version))
