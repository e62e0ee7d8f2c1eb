"""The in-tree plugins kubeplane implements, by upstream name (upstream ``plugins/registry.go``), and the
registry a configuration runs with: those plus the out-of-tree plugins (:mod:`.out_of_tree`)."""

from __future__ import annotations

from kubeplane.scheduler.config import UPSTREAM_IN_TREE_PLUGINS, ConfigError, KubeSchedulerConfiguration
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.plugins import (
    default_binder,
    default_preemption,
    dynamic_resources,
    gang_scheduling,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_declared_features,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    priority_sort,
    scheduling_gates,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from kubeplane.scheduler.plugins.out_of_tree import load_entry_points, load_import_paths

__all__ = ["new_in_tree_registry", "registry_for"]

_MODULES = (
    scheduling_gates,
    priority_sort,
    node_unschedulable,
    node_name,
    taint_toleration,
    node_affinity,
    node_ports,
    node_resources_fit,
    volume_restrictions,
    node_volume_limits,
    volume_binding,
    volume_zone,
    pod_topology_spread,
    inter_pod_affinity,
    node_resources_balanced_allocation,
    image_locality,
    dynamic_resources,
    default_preemption,
    default_binder,
    gang_scheduling,
    node_declared_features,
)


def new_in_tree_registry() -> Registry:
    """A fresh registry of every in-tree plugin (callers may merge out-of-tree plugins into it)."""
    registry = Registry()
    for module in _MODULES:
        name: str = module.NAME
        cls = next(
            v for v in vars(module).values() if isinstance(v, type) and getattr(v, "name", None) and _named(v, name)
        )
        registry.register(name, cls, module.new)
    return registry


def registry_for(config: KubeSchedulerConfiguration, base: Registry | None = None) -> Registry:
    """The registry ``config`` runs with: ``base`` plus the plugins of ``config.out_of_tree_registry``.

    Without ``base``: the in-tree plugins, then every plugin of the ``kubeplane.scheduler.plugins`` entry points,
    then the configuration's ``outOfTreeRegistry``, the way ``kubeplane scheduler`` and ``kubeplane explain`` load
    plugins. A given ``base`` is used as is (its owner chose the plugins; entry points are not scanned) and is
    never modified. No out-of-tree plugin may take the name of an in-tree plugin, kubeplane's or upstream's (a
    configuration must mean the same to kube-scheduler), nor a name registered already. Raises
    :class:`ConfigError` with one line per problem.
    """
    if base is not None and not config.out_of_tree_registry:
        return base
    registry = Registry()
    errors: list[str] = []
    if base is None:
        registry.merge(new_in_tree_registry())
        load_entry_points(registry, UPSTREAM_IN_TREE_PLUGINS, errors)
    else:
        registry.merge(base)
    load_import_paths(registry, config.out_of_tree_registry, UPSTREAM_IN_TREE_PLUGINS, errors)
    if errors:
        raise ConfigError(errors)
    return registry


def _named(cls: type, name: str) -> bool:
    return cls.__name__ == name and cls.__module__.startswith("kubeplane.scheduler.plugins.")
