"""The decoded, defaulted ``KubeSchedulerConfiguration`` (``kubescheduler.config.k8s.io/v1``) and its parts.

Every public type is a frozen, slotted dataclass: a configuration is built once by :func:`parse_config` and then
shared by every scheduler profile and the framework runtime, so nothing may change it afterwards. Field names
are the snake_case forms of the v1 JSON names; units are upstream's (seconds for backoffs, float seconds for
the leader-election durations that v1 spells as Go duration strings).

Invariants
    * A :class:`KubeSchedulerConfiguration` returned by :func:`parse_config` is defaulted and valid: every
      profile has a unique non-empty name, ``Profile.plugins`` is the user's plugin sets merged into upstream's
      default set (v1 ``mergePlugins``), and ``Profile.plugin_config`` holds the defaulted args of every in-tree
      plugin with an args type that the profile enables.
    * ``Profile.plugin_config`` is a read-only mapping (plugin name -> v1 camelCase args dict). The args dicts
      are the configuration's own copies; treat them as read-only too.

The module also holds the decoding primitives shared by the loader and the per-plugin args decoders: a strict
object reader (:class:`Fields`, upstream's strict decoding: unknown members are errors naming their path) and
Go's ``time.Duration`` text form (``15s``, ``1m30s``), which v1 uses for every duration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from kubeplane.api.durations import format_duration, parse_duration
from kubeplane.api.validation import field as fielderr
from kubeplane.api.validation.field import Path

from .features import DEFAULT_GATES, FeatureGates

__all__ = [
    "API_VERSION",
    "EXTENSION_POINTS",
    "KIND",
    "MULTI_POINT",
    "ClientConnection",
    "ConfigError",
    "Fields",
    "KubeSchedulerConfiguration",
    "LeaderElection",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "Profile",
    "child",
    "format_duration",
    "parse_duration",
]

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"

EXTENSION_POINTS: Final[tuple[str, ...]] = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)
"""The extension points a plugin can implement, in scheduling order, spelled as the v1 ``plugins`` keys."""

MULTI_POINT: Final = "multiPoint"

_SNAKE: Final[Mapping[str, str]] = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "queue_sort",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "preBind": "pre_bind",
    "bind": "bind",
    "postBind": "post_bind",
    MULTI_POINT: "multi_point",
}


class ConfigError(Exception):
    """A configuration that cannot be used; ``errors`` holds one line per problem, each naming its field path.

    ``str(error)`` is the lines joined by newlines, so a CLI can print it as is.
    """

    def __init__(self, errors: Iterable[str]) -> None:
        self.errors: list[str] = list(errors)
        super().__init__("\n".join(self.errors))

    def __str__(self) -> str:
        return "\n".join(self.errors)


@dataclass(frozen=True, slots=True)
class PluginRef:
    """One ``{name, weight}`` entry of a plugin set; ``weight`` is None when the file gives none."""

    name: str
    weight: int | None = None


@dataclass(frozen=True, slots=True)
class PluginSet:
    """The enabled and disabled plugins of one extension point (``"*"`` in ``disabled`` disables all defaults)."""

    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()

    def enabled_names(self) -> tuple[str, ...]:
        """The enabled plugin names, in order."""
        return tuple(p.name for p in self.enabled)

    def disabled_names(self) -> frozenset[str]:
        """The disabled plugin names."""
        return frozenset(p.name for p in self.disabled)


_EMPTY_SET: Final = PluginSet()


@dataclass(frozen=True, slots=True)
class Plugins:
    """One :class:`PluginSet` per extension point plus ``multi_point`` (v1 ``Plugins``)."""

    pre_enqueue: PluginSet = _EMPTY_SET
    queue_sort: PluginSet = _EMPTY_SET
    pre_filter: PluginSet = _EMPTY_SET
    filter: PluginSet = _EMPTY_SET
    post_filter: PluginSet = _EMPTY_SET
    pre_score: PluginSet = _EMPTY_SET
    score: PluginSet = _EMPTY_SET
    reserve: PluginSet = _EMPTY_SET
    permit: PluginSet = _EMPTY_SET
    pre_bind: PluginSet = _EMPTY_SET
    bind: PluginSet = _EMPTY_SET
    post_bind: PluginSet = _EMPTY_SET
    multi_point: PluginSet = _EMPTY_SET

    def get(self, point: str) -> PluginSet:
        """The set of ``point``, named as in v1 (``"preFilter"``, ``"multiPoint"``)."""
        try:
            attr = _SNAKE[point]
        except KeyError:
            raise ValueError(f"unknown extension point {point!r}") from None
        result: PluginSet = getattr(self, attr)
        return result

    @classmethod
    def from_points(cls, sets: Mapping[str, PluginSet]) -> Plugins:
        """Build from v1-named sets (``{"filter": PluginSet(...), "multiPoint": ...}``); absent points are empty."""
        unknown = set(sets) - set(_SNAKE)
        if unknown:
            raise ValueError(f"unknown extension points {sorted(unknown)}")
        return cls(**{_SNAKE[name]: value for name, value in sets.items()})


@dataclass(frozen=True, slots=True)
class Profile:
    """A scheduling profile: the pods whose ``spec.schedulerName`` is ``scheduler_name`` use these plugins.

    ``percentage_of_nodes_to_score`` None means "use the configuration-wide value".
    """

    scheduler_name: str
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins = field(default_factory=Plugins)
    plugin_config: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}), hash=False)


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """How the scheduler talks to the API server (component-base ``ClientConnectionConfiguration``)."""

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/vnd.kubernetes.protobuf"
    qps: float = 50.0
    burst: int = 100


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """Leader election of the scheduler instances; durations in seconds (component-base, scheduler defaults)."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "kube-scheduler"
    resource_namespace: str = "kube-system"


@dataclass(frozen=True, slots=True)
class KubeSchedulerConfiguration:
    """The whole scheduler configuration (v1 ``KubeSchedulerConfiguration``), defaulted and validated.

    ``percentage_of_nodes_to_score`` None means adaptive (upstream's 0). ``extenders`` is always empty:
    kubeplane rejects extenders (see :mod:`kubeplane.scheduler.config.validation`). ``out_of_tree_registry`` is
    the kubeplane extension ``outOfTreeRegistry``: plugin name -> ``"package.module:Attribute"`` import path,
    loaded when profiles are built (:func:`kubeplane.scheduler.plugins.registry.registry_for`).
    """

    parallelism: int
    percentage_of_nodes_to_score: int | None
    pod_initial_backoff_seconds: int
    pod_max_backoff_seconds: int
    profiles: tuple[Profile, ...]
    client_connection: ClientConnection
    leader_election: LeaderElection
    delay_cache_until_active: bool = False
    extenders: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    out_of_tree_registry: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    feature_gates: FeatureGates = field(default=DEFAULT_GATES, hash=False, compare=False)
    """kube-scheduler's ``--feature-gates`` the configuration was defaulted under; plugins whose behaviour a
    gate changes read them from ``Handle.extra["feature_gates"]`` (set by ``build_profiles``)."""

    def profile(self, scheduler_name: str) -> Profile | None:
        """The profile named ``scheduler_name``, or None."""
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None


# --- Go durations (kubeplane.api.durations) ------------------------------------------------------------


def seconds_to_ns(seconds: float) -> int:
    """Float seconds back to Go nanoseconds (for rendering a :class:`LeaderElection` duration)."""
    return round(seconds * 1_000_000_000)


# --- strict decoding -----------------------------------------------------------------------------------------


def child(path: Path | None, name: str) -> Path:
    """``path.name``, or the root path ``name``."""
    return fielderr.new_path(name) if path is None else path.child(name)


def _index(path: Path, i: int) -> Path:
    return path.index(i)


_INT_TYPES: Final = {32: "int32", 64: "int64"}


@dataclass(slots=True)
class Fields:
    """One JSON object being decoded into a Go struct with strict field checking.

    Every read marks its member as known; :meth:`finish` reports the members never read as upstream's strict
    decoder does (``strict decoding error: unknown field "profiles[0].foo"``). A member of the wrong JSON type
    is reported once (``parallelism: Invalid value: "x": must be of type int32``) and reads as absent, so
    decoding goes on and every problem of the file is found in one pass. ``null`` reads as absent (a nil Go
    pointer, slice or map).
    """

    data: Mapping[str, Any]
    path: Path | None
    errs: list[str]
    seen: set[str] = field(default_factory=set)

    def at(self, key: str) -> Path:
        """The path of member ``key``."""
        return child(self.path, key)

    def _value(self, key: str) -> Any:
        self.seen.add(key)
        return self.data.get(key)

    def _bad(self, key: str, value: object, expected: str) -> None:
        self.errs.append(str(fielderr.type_invalid(self.at(key), value, detail=f"must be of type {expected}")))

    def has(self, key: str) -> bool:
        """``key`` is present and not null."""
        return self.data.get(key) is not None

    def raw(self, key: str) -> Any:
        """Member ``key`` as decoded from YAML/JSON, unchecked (None when absent)."""
        return self._value(key)

    def string(self, key: str) -> str | None:
        """A string member, None when absent or not a string."""
        value = self._value(key)
        if value is None or isinstance(value, str):
            return value
        self._bad(key, value, "string")
        return None

    def boolean(self, key: str) -> bool | None:
        """A boolean member, None when absent or not a boolean."""
        value = self._value(key)
        if value is None or isinstance(value, bool):
            return value
        self._bad(key, value, "boolean")
        return None

    def integer(self, key: str, *, bits: int = 32) -> int | None:
        """A Go ``int32``/``int64`` member, None when absent, not an integer or out of range."""
        value = self._value(key)
        if value is None:
            return None
        expected = _INT_TYPES[bits]
        if isinstance(value, bool) or not isinstance(value, int) or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
            self._bad(key, value, expected)
            return None
        return value

    def number(self, key: str) -> float | None:
        """A Go ``float32``/``float64`` member (an integer is accepted), None when absent or not a number."""
        value = self._value(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self._bad(key, value, "number")
            return None
        return float(value)

    def duration(self, key: str) -> int | None:
        """A ``metav1.Duration`` member (a Go duration string) in nanoseconds, None when absent or invalid."""
        value = self._value(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self._bad(key, value, "duration string")
            return None
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.errs.append(str(fielderr.invalid(self.at(key), value, detail=str(exc))))
            return None

    def string_list(self, key: str) -> list[str] | None:
        """A ``[]string`` member; None when absent; wrongly typed elements are reported and left out."""
        value = self._value(key)
        if value is None:
            return None
        if not isinstance(value, list):
            self._bad(key, value, "array")
            return None
        out: list[str] = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                out.append(item)
            else:
                self.errs.append(
                    str(fielderr.type_invalid(_index(self.at(key), i), item, detail="must be of type string"))
                )
        return out

    def obj(self, key: str) -> Fields | None:
        """A nested object member, None when absent or not an object."""
        value = self._value(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self._bad(key, value, "object")
            return None
        return Fields(value, self.at(key), self.errs)

    def objects(self, key: str) -> list[Fields] | None:
        """A list-of-objects member; None when absent; non-object elements are reported and left out."""
        value = self._value(key)
        if value is None:
            return None
        if not isinstance(value, list):
            self._bad(key, value, "array")
            return None
        out: list[Fields] = []
        for i, item in enumerate(value):
            p = _index(self.at(key), i)
            if isinstance(item, Mapping):
                out.append(Fields(item, p, self.errs))
            elif item is not None:
                self.errs.append(str(fielderr.type_invalid(p, item, detail="must be of type object")))
            else:
                out.append(Fields({}, p, self.errs))
        return out

    def finish(self) -> None:
        """Report every member that no read asked for (upstream's strict decoding)."""
        for key in self.data:
            if key not in self.seen:
                self.errs.append(f"strict decoding error: unknown field {fielderr.go_quote(str(self.at(str(key))))}")
