"""Profiles: one Framework per schedulerName, built from the configuration and the plugin registry.

Upstream ``profile.NewMap``: every profile is a framework; all profiles must share the queueSort plugin
(the configuration package enforces that rule), because there is one queue.

The registry is :func:`~kubeplane.scheduler.plugins.registry.registry_for` the configuration: the in-tree plugins,
the ``kubeplane.scheduler.plugins`` entry points and the file's ``outOfTreeRegistry`` when no registry is given.
Before any plugin is constructed, the ``pluginConfig`` args of every plugin that declares an args dataclass are
decoded against it (:mod:`kubeplane.scheduler.framework.plugin_args`), so a bad value is a :class:`ConfigError`
line with its field path (``profiles[0].pluginConfig[1].args.podCountLimit: ...``), as for in-tree plugins.
"""

from __future__ import annotations

from collections.abc import Collection

from kubeplane.api.validation import field as fielderr
from kubeplane.scheduler.config import (
    ConfigError,
    KubeSchedulerConfiguration,
    Profile,
    resolve_plugins,
    validate_queue_sort_shared,
)
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.plugin_args import decode_args
from kubeplane.scheduler.framework.registry import Registry
from kubeplane.scheduler.framework.runtime import Framework
from kubeplane.scheduler.plugins.registry import registry_for

__all__ = ["build_profiles", "check_typed_args"]


def build_profiles(
    config: KubeSchedulerConfiguration, handle: Handle, registry: Registry | None = None
) -> dict[str, Framework]:
    """schedulerName -> Framework. ``registry`` defaults to :func:`registry_for` ``config``; a given registry
    gets the file's ``outOfTreeRegistry`` added (in a copy). Raises ConfigError."""
    registry = registry_for(config, registry)
    handle.extra["feature_gates"] = config.feature_gates
    available = registry.available()
    resolved_all = [resolve_plugins(p, available, profile_index=i) for i, p in enumerate(config.profiles)]
    validate_queue_sort_shared(resolved_all, plugin_configs=[p.plugin_config for p in config.profiles])
    errors: list[str] = []
    for i, (profile, resolved) in enumerate(zip(config.profiles, resolved_all, strict=True)):
        enabled = {name for entries in resolved.points().values() for name, _ in entries}
        errors.extend(check_typed_args(profile, registry, enabled, profile_index=i))
    if errors:
        raise ConfigError(errors)
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


def check_typed_args(
    profile: Profile, registry: Registry, enabled: Collection[str], *, profile_index: int = 0
) -> list[str]:
    """The problems of the profile's args for plugins that declare an args dataclass, one line each.

    Every ``pluginConfig`` entry of such a plugin is decoded, enabled or not (a typo in a disabled plugin's args
    is still a typo). Its path index is its position in ``profile.plugin_config``, which is the file's index:
    the file's entries come first in file order (repeated names are refused by validation) and defaulted args
    only ever follow for in-tree plugins, which declare no dataclass here. An enabled plugin without an entry
    is decoded from empty args, and a required field then gets one ``pluginConfig: Required value`` line.
    """
    errors: list[str] = []
    base = fielderr.new_path("profiles").index(profile_index).child("pluginConfig")
    for j, (name, args) in enumerate(profile.plugin_config.items()):
        entry = registry.entry(name)
        if entry is not None and entry.args_type is not None:
            errors.extend(decode_args(entry.args_type, args, base.index(j).child("args"))[1])
    for name in sorted(enabled):
        entry = registry.entry(name)
        if entry is None or entry.args_type is None or name in profile.plugin_config:
            continue
        problems = decode_args(entry.args_type, {}, fielderr.new_path("args"))[1]
        if problems:
            detail = (
                f"plugin {fielderr.go_quote(name)} is enabled and its args are not valid without an entry "
                f"({'; '.join(problems)})"
            )
            errors.append(str(fielderr.required(base, detail)))
    return errors
