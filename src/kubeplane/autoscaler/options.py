"""cluster-autoscaler's flags, as one frozen record (kubernetes/autoscaler cluster-autoscaler/config/flags/flags.go).

Every field is named after its flag (``scan-interval`` -> ``scan_interval``) and defaults to upstream's default;
durations are seconds. :meth:`AutoscalerOptions.from_flags` takes ``{flag name: value}`` (a scenario's mapping,
durations as Go duration strings) and :meth:`AutoscalerOptions.from_args` the command line
(``--flag=value``, ``--flag value``, a bare ``--bool-flag``); both raise :class:`OptionsError` with the one line
Go's ``flag`` package prints (``invalid value "x" for flag -scan-interval: parse error``,
``flag provided but not defined: -foo``).

Two defaults differ from older cluster-autoscaler releases and follow today's flags.go: ``expander`` is
``least-waste`` and ``scale-down-delay-after-delete`` is 0 (the next loop, one scan-interval later).
``max-empty-bulk-delete`` is accepted as the older name of the empty-node batch limit; the effective batch is the
smaller of it and ``max-scale-down-parallelism``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.durations import parse_duration

__all__ = ["EXPANDERS", "AutoscalerOptions", "OptionsError"]

EXPANDERS = ("random", "most-pods", "least-waste", "price", "priority")
"""Expander names this core implements (upstream's ``grpc`` is not)."""


class OptionsError(ValueError):
    """A flag value or name the autoscaler refuses; the message is one line."""


@dataclass(frozen=True, slots=True)
class AutoscalerOptions:
    """The supported flags with upstream's defaults (durations in seconds)."""

    scan_interval: float = 10.0
    expander: str = "least-waste"
    max_nodes_total: int = 0
    balance_similar_node_groups: bool = False
    scale_down_enabled: bool = True
    scale_down_delay_after_add: float = 600.0
    scale_down_delay_after_delete: float = 0.0
    scale_down_delay_after_failure: float = 180.0
    scale_down_unneeded_time: float = 600.0
    scale_down_unready_time: float = 1200.0
    scale_down_unready_enabled: bool = True
    scale_down_utilization_threshold: float = 0.5
    scale_down_gpu_utilization_threshold: float = 0.5
    max_empty_bulk_delete: int = 10
    max_scale_down_parallelism: int = 10
    max_drain_parallelism: int = 1
    scale_down_non_empty_candidates_count: int = 30
    max_graceful_termination_sec: int = 600
    max_pod_eviction_time: float = 120.0
    skip_nodes_with_system_pods: bool = True
    skip_nodes_with_local_storage: bool = True
    skip_nodes_with_custom_controller_pods: bool = True
    new_pod_scale_up_delay: float = 0.0
    max_node_provision_time: float = 900.0
    expendable_pods_priority_cutoff: int = -10
    ignore_daemonsets_utilization: bool = False
    ignore_mirror_pods_utilization: bool = False
    write_status_configmap: bool = True
    status_config_map_name: str = "cluster-autoscaler-status"
    namespace: str = "kube-system"
    max_nodes_per_scaleup: int = 1000
    memory_difference_ratio: float = 0.015
    max_free_difference_ratio: float = 0.05
    max_allocatable_difference_ratio: float = 0.05

    def expanders(self) -> tuple[str, ...]:
        """The ``expander`` chain, in order (upstream: comma-separated, run in succession)."""
        return tuple(name.strip() for name in self.expander.split(","))

    def empty_bulk_limit(self) -> int:
        """Empty nodes deleted in one loop at most."""
        return max(0, min(self.max_empty_bulk_delete, self.max_scale_down_parallelism))

    @classmethod
    def from_flags(cls, flags: Mapping[str, Any]) -> AutoscalerOptions:
        """Options from ``{flag name: value}`` (names without leading dashes; durations as strings such as
        ``"10m"`` or as numbers of seconds)."""
        changes: dict[str, Any] = {}
        for name, value in flags.items():
            field = _FIELDS.get(str(name).lstrip("-"))
            if field is None:
                raise OptionsError(f"flag provided but not defined: -{str(name).lstrip('-')}")
            changes[field.name] = _convert(str(name).lstrip("-"), field, value)
        options = dataclasses.replace(cls(), **changes)
        options.validate()
        return options

    @classmethod
    def from_args(cls, args: Sequence[str]) -> AutoscalerOptions:
        """Options from command-line arguments (``--scan-interval=20s``, ``--expander random``,
        ``--balance-similar-node-groups``)."""
        flags: dict[str, Any] = {}
        i = 0
        while i < len(args):
            arg = args[i]
            if not arg.startswith("-") or arg in ("-", "--"):
                raise OptionsError(f"unexpected argument {arg!r}")
            name, eq, value = arg.lstrip("-").partition("=")
            field = _FIELDS.get(name)
            if field is None:
                raise OptionsError(f"flag provided but not defined: -{name}")
            if not eq:
                if field.type == "bool":
                    value = "true"
                elif i + 1 < len(args):
                    i += 1
                    value = args[i]
                else:
                    raise OptionsError(f"flag needs an argument: -{name}")
            flags[name] = value
            i += 1
        return cls.from_flags(flags)

    def validate(self) -> None:
        """Refuse values upstream refuses or this core cannot run (one line each)."""
        for name in self.expanders():
            if name not in EXPANDERS:
                raise OptionsError(f"Expander {name} not supported, available values: {', '.join(EXPANDERS)}")
        if self.scan_interval <= 0:
            raise OptionsError("invalid value for flag -scan-interval: must be positive")
        for flag in ("scale-down-utilization-threshold", "scale-down-gpu-utilization-threshold"):
            value = getattr(self, flag.replace("-", "_"))
            if not 0 <= value <= 1:
                raise OptionsError(f"invalid value {value} for flag -{flag}: must be between 0 and 1")
        if self.max_nodes_total < 0:
            raise OptionsError("invalid value for flag -max-nodes-total: must not be negative")


_FIELDS: dict[str, dataclasses.Field[Any]] = {
    f.name.replace("_", "-"): f for f in dataclasses.fields(AutoscalerOptions)
}
_DURATIONS = frozenset(
    name
    for name in _FIELDS
    if name.endswith(("-interval", "-time", "-delay", "-add", "-delete", "-failure"))
    and name != "max-empty-bulk-delete"
)


def _convert(name: str, field: dataclasses.Field[Any], value: Any) -> Any:
    bad = OptionsError(f"invalid value {_go_quote(value)} for flag -{name}: parse error")
    if name in _DURATIONS:
        if isinstance(value, bool):
            raise bad
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return parse_duration(str(value)) / 1e9
        except ValueError:
            raise bad from None
    if field.type == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in ("1", "t", "true"):
            return True
        if text in ("0", "f", "false"):
            return False
        raise bad
    if field.type == "int":
        if isinstance(value, bool):
            raise bad
        try:
            return int(str(value), 10)
        except ValueError:
            raise bad from None
    if field.type == "float":
        if isinstance(value, bool):
            raise bad
        try:
            return float(value)
        except ValueError:
            raise bad from None
    return str(value)


def _go_quote(value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
