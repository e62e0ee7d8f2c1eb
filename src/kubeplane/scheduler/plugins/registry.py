"""The in-tree plugins kubeplane implements, by upstream name (upstream ``plugins/registry.go``)."""

from __future__ import annotations

from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.plugins import (
    default_binder,
    default_preemption,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_balanced_allocation,
    node_resources_fit,
    node_unschedulable,
    pod_topology_spread,
    priority_sort,
    scheduling_gates,
    taint_toleration,
)

__all__ = ["new_in_tree_registry"]

_MODULES = (
    scheduling_gates,
    priority_sort,
    node_unschedulable,
    node_name,
    taint_toleration,
    node_affinity,
    node_ports,
    node_resources_fit,
    pod_topology_spread,
    inter_pod_affinity,
    node_resources_balanced_allocation,
    image_locality,
    default_preemption,
    default_binder,
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


def _named(cls: type, name: str) -> bool:
    return cls.__name__ == name and cls.__module__.startswith("kubeplane.scheduler.plugins.")
