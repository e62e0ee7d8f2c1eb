"""Profiles: one Framework per schedulerName, built from the configuration and the plugin registry.

Upstream ``profile.NewMap``: every profile is a framework; all profiles must share the queueSort plugin
(the configuration package enforces that rule), because there is one queue.
"""

from __future__ import annotations

from kubeplane.scheduler.config import KubeSchedulerConfiguration, resolve_plugins, validate_queue_sort_shared
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.plugins.registry import new_in_tree_registry

__all__ = ["build_profiles"]


def build_profiles(
    config: KubeSchedulerConfiguration, handle: Handle, registry: Registry | None = None
) -> dict[str, Framework]:
    """schedulerName -> Framework. ``registry`` defaults to the in-tree plugins; raises ConfigError."""
    registry = registry if registry is not None else new_in_tree_registry()
    available = registry.available()
    resolved_all = [resolve_plugins(p, available, profile_index=i) for i, p in enumerate(config.profiles)]
    validate_queue_sort_shared(resolved_all, plugin_configs=[p.plugin_config for p in config.profiles])
    profiles: dict[str, Framework] = {}
    for profile, resolved in zip(config.profiles, resolved_all, strict=True):
        points = resolved.points()
        profiles[profile.scheduler_name] = Framework(
            profile_name=profile.scheduler_name,
            points=points,
            plugin_args=profile.plugin_config,
            registry=registry,
            handle=handle,
            percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        )
    return profiles
