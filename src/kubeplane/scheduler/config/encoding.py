"""A :class:`KubeSchedulerConfiguration` back as the v1 document it means (what kube-scheduler's ``/configz``
and its "Using configuration" log line show): every default written out, so the document is the configuration
the scheduler runs, and :func:`~.loading.parse_config` of it gives the same configuration back (tests pin the
round trip). The web UI's scheduler view shows it and offers it for editing.

Typed args of in-tree plugins carry their ``kind`` (``<Plugin>Args``) and ``apiVersion``, as upstream's encoder
writes them; an out-of-tree plugin's args are written as given. ``percentageOfNodesToScore`` is left out where it
is adaptive (kubeplane's None, upstream's unset).
"""

from __future__ import annotations

import copy
from typing import Any

from kubeplane.api.durations import format_duration
from kubeplane.scheduler.config.args import ARGS_PLUGINS
from kubeplane.scheduler.config.types import (
    API_VERSION,
    EXTENSION_POINTS,
    KIND,
    MULTI_POINT,
    KubeSchedulerConfiguration,
    PluginRef,
    PluginSet,
    Profile,
    seconds_to_ns,
)

__all__ = ["to_v1"]


def _refs(refs: tuple[PluginRef, ...]) -> list[dict[str, Any]]:
    return [{"name": r.name, **({"weight": r.weight} if r.weight is not None else {})} for r in refs]


def _plugin_set(plugins: PluginSet) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if plugins.enabled:
        out["enabled"] = _refs(plugins.enabled)
    if plugins.disabled:
        out["disabled"] = _refs(plugins.disabled)
    return out or None


def _profile(profile: Profile) -> dict[str, Any]:
    out: dict[str, Any] = {"schedulerName": profile.scheduler_name}
    if profile.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    plugins: dict[str, Any] = {}
    for point in (*EXTENSION_POINTS, MULTI_POINT):
        entry = _plugin_set(profile.plugins.get(point))
        if entry is not None:
            plugins[point] = entry
    out["plugins"] = plugins
    config = []
    for name, args in profile.plugin_config.items():
        body = copy.deepcopy(dict(args))
        if name in ARGS_PLUGINS:
            body = {"apiVersion": API_VERSION, "kind": f"{name}Args", **body}
        config.append({"name": name, "args": body})
    out["pluginConfig"] = config
    return out


def to_v1(config: KubeSchedulerConfiguration) -> dict[str, Any]:
    """The v1 document of ``config`` (JSON-ready: durations as Go duration strings)."""
    le = config.leader_election
    cc = config.client_connection
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "parallelism": config.parallelism,
        "podInitialBackoffSeconds": config.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": config.pod_max_backoff_seconds,
        "delayCacheUntilActive": config.delay_cache_until_active,
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": cc.qps,
            "burst": cc.burst,
        },
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(seconds_to_ns(le.lease_duration)),
            "renewDeadline": format_duration(seconds_to_ns(le.renew_deadline)),
            "retryPeriod": format_duration(seconds_to_ns(le.retry_period)),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "profiles": [_profile(p) for p in config.profiles],
    }
    if config.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = config.percentage_of_nodes_to_score
    if config.out_of_tree_registry:
        out["outOfTreeRegistry"] = dict(config.out_of_tree_registry)
    return out
