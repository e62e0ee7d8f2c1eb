"""The in-tree plugins by name (upstream ``pluginregistry.Register`` calls in ``pkg/descheduler/setupplugins.go``):
how to decode and validate each one's args and build it, and which extension points it implements.

Invariant: the registry is a value built on request (no module-level mutable state); names are upstream's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import evictor
from .args import ArgsError
from .framework import Handle
from .plugins import anti_affinity, duplicates, node_affinity, node_taints, node_utilization, pod_state, topology_spread

__all__ = ["PluginSpec", "registry"]


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """One plugin: ``decode(raw) -> args`` (raises :class:`ArgsError`), ``validate(args) -> errors``,
    ``new(args, handle) -> plugin`` (None for the DefaultEvictor, which the loop builds itself) and its
    extension points (``deschedule``, ``balance``, ``filter``, ``preEvictionFilter``)."""

    name: str
    decode: Callable[[Any], Any]
    validate: Callable[[Any], list[str]]
    new: Callable[[Any, Handle], Any] | None
    points: frozenset[str]


def _spec(name: str, decode: Callable[[Any], Any], validate: Callable[[Any], list[str]],
          new: Callable[[Any, Handle], Any] | None, *points: str) -> PluginSpec:  # fmt: skip
    return PluginSpec(name, decode, validate, new, frozenset(points))


def registry() -> Mapping[str, PluginSpec]:
    """Every plugin kubeplane implements, by upstream name."""
    specs = [
        _spec(evictor.PLUGIN_NAME, evictor.parse_args, evictor.validate_args, None, "filter", "preEvictionFilter"),
        _spec(node_taints.NAME, node_taints.parse_args, node_taints.validate,
              node_taints.RemovePodsViolatingNodeTaints, "deschedule"),
        _spec(node_affinity.NAME, node_affinity.parse_args, node_affinity.validate,
              node_affinity.RemovePodsViolatingNodeAffinity, "deschedule"),
        _spec(anti_affinity.NAME, anti_affinity.parse_args, anti_affinity.validate,
              anti_affinity.RemovePodsViolatingInterPodAntiAffinity, "deschedule"),
        _spec(pod_state.LIFETIME, pod_state.parse_lifetime_args, pod_state.validate_lifetime,
              pod_state.PodLifeTime, "deschedule"),
        _spec(pod_state.FAILED, pod_state.parse_failed_args, pod_state.validate_failed,
              pod_state.RemoveFailedPods, "deschedule"),
        _spec(pod_state.RESTARTS, pod_state.parse_restarts_args, pod_state.validate_restarts,
              pod_state.RemovePodsHavingTooManyRestarts, "deschedule"),
        _spec(duplicates.NAME, duplicates.parse_args, duplicates.validate, duplicates.RemoveDuplicates, "balance"),
        _spec(node_utilization.LOW, node_utilization.parse_low_args, node_utilization.validate_low,
              node_utilization.LowNodeUtilization, "balance"),
        _spec(node_utilization.HIGH, node_utilization.parse_high_args, node_utilization.validate_high,
              node_utilization.HighNodeUtilization, "balance"),
        _spec(topology_spread.NAME, topology_spread.parse_args, topology_spread.validate,
              topology_spread.RemovePodsViolatingTopologySpreadConstraint, "balance"),
    ]  # fmt: skip
    return {s.name: s for s in specs}


def decode_args(spec: PluginSpec, raw: Any) -> Any:
    """Decode ``raw`` with the plugin's decoder and apply its validation; raises :class:`ArgsError`."""
    args = spec.decode(raw)
    errors = spec.validate(args)
    if errors:
        raise ArgsError(errors)
    return args
