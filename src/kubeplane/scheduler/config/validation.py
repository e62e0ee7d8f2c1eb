"""Validation of a defaulted configuration, as ``pkg/scheduler/apis/config/validation/validation.go``.

Every problem is collected, never only the first; each message is upstream's ``field.Error`` text
(``path: Invalid value: X: detail``), in upstream's order: clientConnection, leaderElection, parallelism, each
profile (name, percentage, plugins, pluginConfig, repeated name), the common queue sort, the global
percentage, the backoffs, then the fields kubeplane refuses.

kubeplane's rules beyond upstream's, and where a message differs:
    * an explicitly given plugin weight must be in [1, 100] (``...enabled[1].weight: Invalid value: 0: must be
      in the range [1, 100]``); upstream silently turns 0 into 1 and lets negative weights through;
    * a ``pluginConfig`` entry needs a name;
    * extenders are refused (``extenders: Forbidden: ...``): kubeplane has no HTTP extender client, and a
      scheduler that silently skipped them would place pods the extender would have refused;
    * a repeated profile name shows the first profile's path (``Duplicate value: profiles[0].schedulerName``),
      which is what upstream means to print (its ``*field.Path`` bad value renders as ``{}``); as upstream, the
      path is that of the latest earlier profile with the name;
    * removed plugins (EBSLimits, ...) are reported in ``multiPoint`` too, and at the file's own indexes;
    * the kubeplane extension ``outOfTreeRegistry`` must map plugin names to ``package.module:Attribute``.
Checks that need the plugin registry (unknown names, one queueSort, a bind plugin, all profiles resolving to
the same queue sort) belong to :func:`~.plugins.resolve_plugins` and :func:`~.plugins.validate_queue_sort_shared`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.validation import field as fielderr
from kubeplane.api.validation.field import OMIT_VALUE, Path
from kubeplane.scheduler.config.args import validate_args
from kubeplane.scheduler.config.defaults import RawConfig, RawProfile
from kubeplane.scheduler.config.types import (
    API_VERSION,
    EXTENSION_POINTS,
    MULTI_POINT,
    KubeSchedulerConfiguration,
    PluginSet,
    Profile,
    format_duration,
    seconds_to_ns,
)

__all__ = ["REMOVED_PLUGINS", "validate"]

REMOVED_PLUGINS: Final = ("AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits")
"""Plugins removed before v1 (upstream ``invalidPluginsByVersion``)."""

_REMOVED_DETAIL: Final = (
    f'was invalid in version "{API_VERSION}" (KubeSchedulerConfiguration is version "{API_VERSION}")'
)
_MIN_WEIGHT: Final = 1
_MAX_WEIGHT: Final = 100


def _invalid(path: Path, value: object, detail: str) -> str:
    return str(fielderr.invalid(path, value, detail=detail))


def _percentage(path: Path, value: int | None) -> list[str]:
    """Upstream ``validatePercentageOfNodesToScore``."""
    if value is not None and not 0 <= value <= 100:
        return [_invalid(path, value, "not in valid range [0-100]")]
    return []


def _leader_election(cfg: KubeSchedulerConfiguration) -> list[str]:
    """component-base ``ValidateLeaderElectionConfiguration`` plus the scheduler's leases-only rule."""
    le, path = cfg.leader_election, fielderr.new_path("leaderElection")
    errs: list[str] = []
    if le.leader_elect:
        durations = {
            "leaseDuration": seconds_to_ns(le.lease_duration),
            "renewDeadline": seconds_to_ns(le.renew_deadline),
            "retryPeriod": seconds_to_ns(le.retry_period),
        }
        # A metav1.Duration bad value prints through String(), unquoted: hence OMIT_VALUE + detail.
        for name, ns in durations.items():
            if ns <= 0:
                errs.append(_invalid(path.child(name), OMIT_VALUE, f"{format_duration(ns)}: must be greater than zero"))
        if durations["leaseDuration"] <= durations["renewDeadline"]:
            shown = format_duration(durations["renewDeadline"])
            errs.append(
                _invalid(path.child("leaseDuration"), OMIT_VALUE, f"{shown}: must be greater than `RenewDeadline`")
            )
        for name, value in (
            ("resourceLock", le.resource_lock),
            ("resourceNamespace", le.resource_namespace),
            ("resourceName", le.resource_name),
        ):
            if not value:
                errs.append(str(fielderr.required(path.child(name))))
        if le.resource_lock != "leases":
            errs.append(_invalid(path.child("resourceLock"), le.resource_lock, 'resourceLock value must be "leases"'))
    return errs


def _weights(path: Path, raw: RawProfile) -> list[str]:
    """kubeplane's rule: a weight the file gives must be in [1, 100]."""
    errs: list[str] = []
    for point in (MULTI_POINT, *EXTENSION_POINTS):
        for i, ref in enumerate(raw.plugins.get(point).enabled):
            if ref.weight is not None and not _MIN_WEIGHT <= ref.weight <= _MAX_WEIGHT:
                at = path.child("plugins", point, "enabled").index(i).child("weight")
                errs.append(_invalid(at, ref.weight, f"must be in the range [{_MIN_WEIGHT}, {_MAX_WEIGHT}]"))
    return errs


def _removed(path: Path, name: str) -> list[str]:
    if name in REMOVED_PLUGINS:
        return [_invalid(path, name, _REMOVED_DETAIL)]
    return []


def _profile(path: Path, profile: Profile, raw: RawProfile) -> list[str]:
    """Upstream ``validateKubeSchedulerProfile`` + ``validatePluginConfig``, plus the weight rule."""
    errs: list[str] = []
    if not profile.scheduler_name:
        errs.append(str(fielderr.required(path.child("schedulerName"))))
    errs.extend(_percentage(path.child("percentageOfNodesToScore"), profile.percentage_of_nodes_to_score))
    errs.extend(_weights(path, raw))
    for point in (MULTI_POINT, *EXTENSION_POINTS):
        for i, ref in enumerate(raw.plugins.get(point).enabled):
            errs.extend(_removed(path.child("plugins", point, "enabled").index(i), ref.name))
    seen: set[str] = set()
    for i, entry in enumerate(raw.plugin_config):
        at = path.child("pluginConfig").index(i)
        if not entry.name:
            errs.append(str(fielderr.required(at.child("name"))))
        if entry.name in seen:
            errs.append(str(fielderr.duplicate(at, entry.name)))
        seen.add(entry.name)
        removed = _removed(at, entry.name)
        errs.extend(removed)
        if not removed and entry.typed:
            errs.extend(validate_args(entry.name, entry.args, at.child("args")))
    return errs


def _go_plugin_set(ps: PluginSet) -> dict[str, Any]:
    """The internal ``config.PluginSet`` as Go's ``json.Marshal`` prints it (no JSON tags, nil as null)."""

    def refs(entries: tuple[Any, ...]) -> list[dict[str, Any]] | None:
        return [{"Name": p.name, "Weight": p.weight or 0} for p in entries] or None

    return {"Enabled": refs(ps.enabled), "Disabled": refs(ps.disabled)}


def _same_set(a: PluginSet, b: PluginSet) -> bool:
    """``apiequality.Semantic.DeepEqual`` of two internal plugin sets (an unset weight is 0)."""
    return _go_plugin_set(a) == _go_plugin_set(b)


def _common_queue_sort(cfg: KubeSchedulerConfiguration) -> list[str]:
    """Upstream ``validateCommonQueueSort`` on the merged sets: the queueSort sets and their args must agree."""
    profiles, path = cfg.profiles, fielderr.new_path("profiles")
    errs: list[str] = []
    canon = profiles[0].plugins.queue_sort
    name = canon.enabled[0].name if canon.enabled else ""
    if len(canon.enabled) > 1:
        at = path.index(0).child("plugins", "queueSort", "Enabled")
        errs.append(_invalid(at, len(canon.enabled), "only one queue sort plugin can be enabled"))
    base: Mapping[str, Any] | None = profiles[0].plugin_config.get(name) if name else None
    for i in range(1, len(profiles)):
        curr = profiles[i].plugins.queue_sort
        if not _same_set(canon, curr):
            at = path.index(i).child("plugins", "queueSort")
            errs.append(_invalid(at, _go_plugin_set(curr), "must be the same for all profiles"))
        args = profiles[i].plugin_config.get(name) if name else None
        if args is not None and (base is None or dict(args) != dict(base)):
            at = path.index(i).child("pluginConfig", "args")
            errs.append(_invalid(at, dict(args), "queueSort must be the same for all profiles"))
    return errs


def validate(raw: RawConfig, cfg: KubeSchedulerConfiguration) -> list[str]:
    """Every problem of the defaulted ``cfg`` (decoded as ``raw``), one message each, in upstream's order."""
    errs: list[str] = []
    if cfg.client_connection.burst < 0:
        burst = cfg.client_connection.burst
        errs.append(_invalid(fielderr.new_path("clientConnection", "burst"), burst, "must be non-negative"))
    errs.extend(_leader_election(cfg))
    if cfg.parallelism <= 0:
        errs.append(
            _invalid(fielderr.new_path("parallelism"), cfg.parallelism, "should be an integer value greater than zero")
        )
    profiles_path = fielderr.new_path("profiles")
    if not cfg.profiles:
        errs.append(str(fielderr.required(profiles_path)))
    else:
        seen_at: dict[str, int] = {}
        for i, profile in enumerate(cfg.profiles):
            path = profiles_path.index(i)
            raw_profile = raw.profiles[i] if i < len(raw.profiles) else RawProfile()
            errs.extend(_profile(path, profile, raw_profile))
            if profile.scheduler_name in seen_at:
                first = profiles_path.index(seen_at[profile.scheduler_name]).child("schedulerName")
                name_at = str(path.child("schedulerName"))
                errs.append(str(fielderr.Error(fielderr.ErrorType.DUPLICATE, name_at, OMIT_VALUE, str(first))))
            seen_at[profile.scheduler_name] = i  # upstream remembers the latest index
        errs.extend(_common_queue_sort(cfg))
    errs.extend(_percentage(fielderr.new_path("percentageOfNodesToScore"), cfg.percentage_of_nodes_to_score))
    if cfg.pod_initial_backoff_seconds <= 0:
        at = fielderr.new_path("podInitialBackoffSeconds")
        errs.append(_invalid(at, cfg.pod_initial_backoff_seconds, "must be greater than 0"))
    if cfg.pod_max_backoff_seconds < cfg.pod_initial_backoff_seconds:
        at = fielderr.new_path("podMaxBackoffSeconds")
        errs.append(
            _invalid(at, cfg.pod_max_backoff_seconds, "must be greater than or equal to PodInitialBackoffSeconds")
        )
    errs.extend(_out_of_tree_registry(raw))
    errs.extend(raw.unsupported)
    return list(dict.fromkeys(errs))


_IDENT: Final = r"[A-Za-z_][A-Za-z0-9_]*"
_IMPORT_PATH: Final = re.compile(rf"{_IDENT}(\.{_IDENT})*:{_IDENT}(\.{_IDENT})*")


def _out_of_tree_registry(raw: RawConfig) -> list[str]:
    """kubeplane's ``outOfTreeRegistry``: non-empty plugin names, each mapped to ``package.module:Attribute``.

    Only the form is checked here; importing happens when profiles are built, so a configuration can be
    validated without running plugin code.
    """
    errs: list[str] = []
    base = fielderr.new_path("outOfTreeRegistry")
    for name, spec in raw.out_of_tree_registry.items():
        at = base.child(name) if name else base
        if not name.strip():
            errs.append(_invalid(at, name, "plugin name must not be empty"))
        if not _IMPORT_PATH.fullmatch(spec):
            errs.append(_invalid(at, spec, 'must be an import path "package.module:Attribute"'))
    return errs
