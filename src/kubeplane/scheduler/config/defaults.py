"""The decoded (not yet defaulted) configuration and upstream v1's defaulting of it.

Decoding (:mod:`kubeplane.scheduler.config.loading`) yields a :class:`RawConfig`: every value exactly as the
file gave it, None where the file gave none. :func:`apply_defaults` turns it into a
:class:`~kubeplane.scheduler.config.types.KubeSchedulerConfiguration` as ``pkg/scheduler/apis/config/v1``'s
``SetDefaults_KubeSchedulerConfiguration`` does. Validation then reads both: the raw form keeps what defaulting
erases (the file's own plugin lists and indexes, repeated ``pluginConfig`` entries).

Upstream defaults kept (zero or empty counts as unset where upstream's checks are ``== 0`` / ``len == 0``):
    * parallelism 16, podInitialBackoffSeconds 1, podMaxBackoffSeconds 10; percentageOfNodesToScore stays
      None (upstream's 0: adaptive);
    * no profiles: one; a single profile without a name: ``default-scheduler``;
    * each profile's plugins merged (:func:`~.plugins.merge_plugins`) into the default set of the feature
      gates (:func:`~.plugins.default_plugins`), then default args
      appended, in name order, for every enabled in-tree plugin with an args type and no ``pluginConfig`` entry;
    * clientConnection: contentType ``application/vnd.kubernetes.protobuf``, qps 50, burst 100;
    * leaderElection: leaderElect true, leaseDuration 15s, renewDeadline 10s, retryPeriod 2s, resourceLock
      ``leases``, resourceName ``kube-scheduler``, resourceNamespace ``kube-system``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from kubeplane.scheduler.config.args import ARGS_PLUGINS, default_args
from kubeplane.scheduler.config.features import DEFAULT_GATES, FeatureGates
from kubeplane.scheduler.config.plugins import default_plugins, merge_plugins
from kubeplane.scheduler.config.types import (
    EXTENSION_POINTS,
    MULTI_POINT,
    ClientConnection,
    KubeSchedulerConfiguration,
    LeaderElection,
    Plugins,
    Profile,
)

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "RawConfig",
    "RawPluginConfig",
    "RawProfile",
    "apply_defaults",
    "default_plugin_config",
]

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
_NS: Final = 1_000_000_000


@dataclass(slots=True)
class RawPluginConfig:
    """One ``pluginConfig`` entry: ``args`` decoded and defaulted when ``typed`` (an in-tree args type),
    otherwise a copy of what the file gave (out-of-tree and args-less plugins)."""

    name: str
    args: dict[str, Any]
    typed: bool


@dataclass(slots=True)
class RawProfile:
    """One profile as decoded: ``plugins`` are the file's own sets, not merged yet."""

    scheduler_name: str | None = None
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins = field(default_factory=Plugins)
    plugin_config: list[RawPluginConfig] = field(default_factory=list)


@dataclass(slots=True)
class RawConfig:
    """The whole file as decoded. ``client_connection``/``leader_election`` hold the members the file gave,
    under their v1 names (durations in nanoseconds). ``unsupported`` holds errors for fields kubeplane
    refuses (extenders, workload scheduling), reported with the validation errors."""

    parallelism: int | None = None
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int | None = None
    pod_max_backoff_seconds: int | None = None
    profiles: list[RawProfile] = field(default_factory=list)
    client_connection: dict[str, Any] = field(default_factory=dict)
    leader_election: dict[str, Any] = field(default_factory=dict)
    delay_cache_until_active: bool = False
    unsupported: list[str] = field(default_factory=list)
    out_of_tree_registry: dict[str, str] = field(default_factory=dict)


def _enabled_names(plugins: Plugins) -> list[str]:
    """Upstream ``pluginsNames``: every name enabled at any point or ``multiPoint``, sorted, once."""
    names = {p.name for point in (MULTI_POINT, *EXTENSION_POINTS) for p in plugins.get(point).enabled}
    return sorted(names)


def default_plugin_config(plugins: Plugins, explicit: list[RawPluginConfig]) -> Mapping[str, Mapping[str, Any]]:
    """The profile's ``plugin_config``: the file's entries (the first of a repeated name), then default args
    for each enabled plugin of :data:`~.args.ARGS_PLUGINS` without an entry, in name order."""
    config: dict[str, Mapping[str, Any]] = {}
    for entry in explicit:
        config.setdefault(entry.name, entry.args)
    for name in _enabled_names(plugins):
        if name in ARGS_PLUGINS and name not in config:
            config[name] = default_args(name)
    return MappingProxyType(config)


def _profiles(raw: RawConfig, gates: FeatureGates) -> tuple[Profile, ...]:
    raws = raw.profiles or [RawProfile()]
    out: list[Profile] = []
    for rp in raws:
        name = rp.scheduler_name
        if name is None:
            name = DEFAULT_SCHEDULER_NAME if len(raws) == 1 else ""
        plugins = merge_plugins(default_plugins(gates), rp.plugins)
        out.append(
            Profile(
                scheduler_name=name,
                percentage_of_nodes_to_score=rp.percentage_of_nodes_to_score,
                plugins=plugins,
                plugin_config=default_plugin_config(plugins, rp.plugin_config),
            )
        )
    return tuple(out)


def _seconds(ns: int | None, default: float) -> float:
    return default if not ns else ns / _NS


def _client_connection(given: Mapping[str, Any]) -> ClientConnection:
    d = ClientConnection()
    return ClientConnection(
        kubeconfig=given.get("kubeconfig") or "",
        accept_content_types=given.get("acceptContentTypes") or "",
        content_type=given.get("contentType") or d.content_type,
        qps=given.get("qps") or d.qps,
        burst=given.get("burst") or d.burst,
    )


def _leader_election(given: Mapping[str, Any]) -> LeaderElection:
    d = LeaderElection()
    elect = given.get("leaderElect")
    return LeaderElection(
        leader_elect=d.leader_elect if elect is None else elect,
        lease_duration=_seconds(given.get("leaseDuration"), d.lease_duration),
        renew_deadline=_seconds(given.get("renewDeadline"), d.renew_deadline),
        retry_period=_seconds(given.get("retryPeriod"), d.retry_period),
        resource_lock=given.get("resourceLock") or d.resource_lock,
        resource_name=given.get("resourceName") or d.resource_name,
        resource_namespace=given.get("resourceNamespace") or d.resource_namespace,
    )


def apply_defaults(raw: RawConfig, gates: FeatureGates = DEFAULT_GATES) -> KubeSchedulerConfiguration:
    """Upstream v1 defaulting of a decoded configuration (see the module docstring); does not validate.

    ``gates`` decide the default plugin set (upstream ``applyFeatureGates``); v1.37's defaults unless given.
    """
    return KubeSchedulerConfiguration(
        parallelism=16 if raw.parallelism is None else raw.parallelism,
        percentage_of_nodes_to_score=raw.percentage_of_nodes_to_score,
        pod_initial_backoff_seconds=1 if raw.pod_initial_backoff_seconds is None else raw.pod_initial_backoff_seconds,
        pod_max_backoff_seconds=10 if raw.pod_max_backoff_seconds is None else raw.pod_max_backoff_seconds,
        profiles=_profiles(raw, gates),
        client_connection=_client_connection(raw.client_connection),
        leader_election=_leader_election(raw.leader_election),
        delay_cache_until_active=raw.delay_cache_until_active,
        extenders=(),
        out_of_tree_registry=MappingProxyType(dict(raw.out_of_tree_registry)),
        feature_gates=gates,
    )
