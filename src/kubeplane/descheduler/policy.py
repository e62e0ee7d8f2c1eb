"""The DeschedulerPolicy (``apiVersion: descheduler/v1alpha2``), decoded, validated and defaulted as upstream's
``LoadPolicyConfig`` (``pkg/descheduler/policyconfig.go``) and ``profile.NewProfile`` do it.

Format (docs/descheduler.md)::

    apiVersion: descheduler/v1alpha2
    kind: DeschedulerPolicy
    nodeSelector: "pool=workers"            # label selector of the nodes to operate on
    maxNoOfPodsToEvictPerNode: 5            # limits per pass (uint)
    maxNoOfPodsToEvictPerNamespace: 10
    maxNoOfPodsToEvictTotal: 20
    evictionFailureEventNotification: false
    gracePeriodSeconds: 30
    profiles:
    - name: default
      pluginConfig:
      - name: DefaultEvictor
        args: {nodeFit: true, evictLocalStoragePods: true}
      - name: RemovePodsViolatingNodeTaints
      plugins:
        deschedule: {enabled: [RemovePodsViolatingNodeTaints]}
        balance: {enabled: []}

Steps, in upstream's order, each failing with upstream's message:

1. decode: ``apiVersion``/``kind`` (``failed decoding descheduler's policy config "F": ...``), each plugin's
   ``args`` strictly into its type (unknown fields and wrong types refused);
2. validate: every ``pluginConfig`` names a registered plugin, its args pass the plugin's validation (``in
   profile P: ...``; errors of all profiles aggregated as ``[a, b]``);
3. default: the DefaultEvictor is put first in every profile's ``filter`` and ``preEvictionFilter`` lists, with a
   default ``pluginConfig`` when the profile has none;
4. build checks: every enabled plugin has a ``pluginConfig`` (``unable to find "X" plugin config``) and implements
   the extension point it is enabled at (``profile "P" configures deschedule extension point of non-existing
   plugins: map[X:{}]``).

The plugins lists accept upstream's JSON names (``deschedule``, ``balance``, ``filter``, ``preevictionfilter``,
``presort``, ``sort``) and the camel-case ``preEvictionFilter`` the upstream docs show. Metrics-based utilization
(``metricsCollector``, ``metricsProviders``) is refused: kubeplane's plugins use requests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from kubeplane.api import yamlio
from kubeplane.api.typed import go_json_type
from kubeplane.api.validation.field import aggregate_text

from . import evictor
from .args import ArgsError, Fields
from .podutil import SYSTEM_CRITICAL_PRIORITY
from .registry import PluginSpec, decode_args, registry

API_VERSION: Final = "descheduler/v1alpha2"
KIND: Final = "DeschedulerPolicy"
EXTENSION_POINTS: Final = ("deschedule", "balance", "filter", "preEvictionFilter")

__all__ = ["API_VERSION", "DeschedulerPolicy", "PluginConfig", "PolicyError", "Profile", "load_policy", "parse_policy"]


class PolicyError(ValueError):
    """A policy that cannot be used; the message is upstream's, one line."""


@dataclass(frozen=True, slots=True)
class PluginConfig:
    name: str
    args: Any


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    plugin_configs: tuple[PluginConfig, ...]
    enabled: Mapping[str, tuple[str, ...]]
    """Enabled plugins per extension point (:data:`EXTENSION_POINTS`), in order."""

    def args_of(self, plugin: str) -> Any:
        for config in self.plugin_configs:
            if config.name == plugin:
                return config.args
        raise KeyError(plugin)


@dataclass(frozen=True, slots=True)
class DeschedulerPolicy:
    profiles: tuple[Profile, ...] = ()
    node_selector: str | None = None
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_total: int | None = None
    eviction_failure_event_notification: bool = False
    grace_period_seconds: int | None = None
    plugins: Mapping[str, PluginSpec] = field(default_factory=registry, compare=False, repr=False)


def load_policy(path: str | Path) -> DeschedulerPolicy:
    """Read and parse a policy file (``--policy-config-file``); raises :class:`PolicyError`."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise PolicyError(f'failed to read policy config file "{path}": {exc.strerror or exc}') from None
    try:
        data = yamlio.load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(
            f'failed decoding descheduler\'s policy config "{path}": {str(exc).splitlines()[0]}'
        ) from None
    return parse_policy(data, source=str(path))


def parse_policy(data: Any, *, source: str = "") -> DeschedulerPolicy:
    """Decode, validate and default a policy document (a mapping); raises :class:`PolicyError`."""
    where = f'failed decoding descheduler\'s policy config "{source}": '
    if not isinstance(data, Mapping):
        raise PolicyError(where + "couldn't get version/kind; json parse error: expected an object")
    if not data.get("kind"):
        raise PolicyError(where + "Object 'Kind' is missing")
    if data.get("apiVersion") != API_VERSION or data.get("kind") != KIND:
        raise PolicyError(
            where + f'no kind "{data.get("kind")}" is registered for version "{data.get("apiVersion") or ""}"'
        )
    plugins = registry()
    f = Fields(data, "DeschedulerPolicy")
    node_selector = f.string("nodeSelector") if f.present("nodeSelector") else None
    limits = (f.uint("maxNoOfPodsToEvictPerNode"), f.uint("maxNoOfPodsToEvictPerNamespace"),
              f.uint("maxNoOfPodsToEvictTotal"))  # fmt: skip
    notify = f.boolean("evictionFailureEventNotification")
    grace = f.integer("gracePeriodSeconds", go_type="int64")
    raw_profiles = f._get("profiles") or []
    if not isinstance(raw_profiles, list):
        f.errors.append(f"json: cannot unmarshal {go_json_type(raw_profiles)} into Go struct field "
                        "DeschedulerPolicy.profiles of type []v1alpha2.DeschedulerProfile")  # fmt: skip
        raw_profiles = []
    if f.present("metricsCollector") or f.present("metricsProviders"):
        f.errors.append("metricsCollector/metricsProviders are not supported by kubeplane (utilization by requests)")
    f.strict = False  # upstream decodes the policy itself leniently; only plugin args are strict
    try:
        f.done()
    except ArgsError as exc:
        raise PolicyError(where + aggregate_text(exc.errors)) from None
    profiles = []
    validation: list[str] = []
    for raw in raw_profiles:
        profile, errors = _profile(raw, plugins, where)
        profiles.append(profile)
        validation += errors
    if validation:
        raise PolicyError(aggregate_text(validation))
    if node_selector is not None:
        from kubeplane.api.labels import SelectorError, parse

        try:
            parse(node_selector)
        except SelectorError as exc:
            raise PolicyError(f"nodeSelector: {exc}") from None
    policy = DeschedulerPolicy(
        profiles=tuple(_with_default_evictor(p) for p in profiles),
        node_selector=node_selector,
        max_per_node=limits[0],
        max_per_namespace=limits[1],
        max_total=limits[2],
        eviction_failure_event_notification=notify,
        grace_period_seconds=grace,
        plugins=plugins,
    )
    for profile in policy.profiles:
        threshold = profile.args_of(evictor.PLUGIN_NAME).priority_threshold
        if threshold is not None and threshold.value is not None and threshold.value > SYSTEM_CRITICAL_PRIORITY:
            # upstream setDefaultEvictor resolves the threshold at load; a named class is read at start-up
            raise PolicyError(f"priority threshold can't be greater than {SYSTEM_CRITICAL_PRIORITY}")
    for profile in policy.profiles:
        _build_checks(profile, plugins)
    return policy


def _points(raw: Mapping[str, Any], name: str, where: str) -> dict[str, tuple[str, ...]]:
    enabled: dict[str, tuple[str, ...]] = {}
    plugins = raw.get("plugins") or {}
    if not isinstance(plugins, Mapping):
        raise PolicyError(where + f"profile {name}: plugins: expected an object")
    for point in EXTENSION_POINTS:
        value = plugins.get(point)
        if value is None and point == "preEvictionFilter":
            value = plugins.get("preevictionfilter")
        value = value or {}
        names = value.get("enabled") if isinstance(value, Mapping) else None
        if names is not None and (not isinstance(names, list) or not all(isinstance(n, str) for n in names)):
            raise PolicyError(where + f"profile {name}: plugins.{point}.enabled: expected a list of plugin names")
        enabled[point] = tuple(names or ())
    return enabled


def _profile(raw: Any, plugins: Mapping[str, PluginSpec], where: str) -> tuple[Profile, list[str]]:
    if not isinstance(raw, Mapping):
        raise PolicyError(where + "profiles: expected a list of objects")
    name = str(raw.get("name") or "")
    configs: list[PluginConfig] = []
    errors: list[str] = []
    for entry in raw.get("pluginConfig") or []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise PolicyError(where + f"profile {name}: pluginConfig entries need a name")
        plugin = entry["name"]
        spec = plugins.get(plugin)
        if spec is None:
            errors.append(f"in profile {name}: plugin {plugin} in pluginConfig not registered")
            continue
        try:
            args = spec.decode(entry.get("args"))
        except ArgsError as exc:
            raise PolicyError(where + aggregate_text(exc.errors)) from None
        problems = spec.validate(args)
        if problems:
            errors.append(f"in profile {name}: {aggregate_text(problems)}")
        configs.append(PluginConfig(plugin, args))
    return Profile(name, tuple(configs), _points(raw, name, where)), errors


def _with_default_evictor(profile: Profile) -> Profile:
    """Upstream ``setDefaultEvictor``."""
    enabled = dict(profile.enabled)
    for point in ("filter", "preEvictionFilter"):
        if evictor.PLUGIN_NAME not in enabled[point]:
            enabled[point] = (evictor.PLUGIN_NAME, *enabled[point])
    configs = profile.plugin_configs
    if all(c.name != evictor.PLUGIN_NAME for c in configs):
        configs = (PluginConfig(evictor.PLUGIN_NAME, evictor.DefaultEvictorArgs()), *configs)
    return Profile(profile.name, configs, enabled)


def _build_checks(profile: Profile, plugins: Mapping[str, PluginSpec]) -> None:
    """Upstream ``NewProfile``: configs of enabled plugins, then extension points they implement."""
    for point in EXTENSION_POINTS:
        for plugin in profile.enabled[point]:
            if all(c.name != plugin for c in profile.plugin_configs):
                raise PolicyError(f'unable to find "{plugin}" plugin config')
    for point in EXTENSION_POINTS:
        missing = sorted({p for p in profile.enabled[point] if p not in plugins or point not in plugins[p].points})
        if missing:
            listed = " ".join(f"{m}:{{}}" for m in missing)
            raise PolicyError(
                f'profile "{profile.name}" configures {point} extension point of non-existing plugins: map[{listed}]'
            )


def check_args(plugin: str, raw: Any) -> Any:
    """Decode and validate one plugin's args (tests, docs); raises :class:`ArgsError` or KeyError."""
    return decode_args(registry()[plugin], raw)
