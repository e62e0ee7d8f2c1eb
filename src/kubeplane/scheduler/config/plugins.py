"""Plugin sets: upstream's default set, the v1 merge of a profile into it, and the per-point expansion.

Three steps turn a profile's ``plugins`` into the ordered plugin lists the framework runs:

1. **Merge** (:func:`merge_plugins`, upstream ``pkg/scheduler/apis/config/v1/default_plugins.go``
   ``mergePlugins``), done while defaulting: for each point, the default plugins not disabled (``"*"`` disables
   them all) keep their order, a default the user lists again is replaced in place by the user's entry (its
   weight wins), and the user's other entries follow in the user's order. Upstream's defaults only fill
   ``multiPoint``, so for the other points the merged set is the user's.
2. **Expansion** (:func:`resolve_plugins`, upstream ``framework/runtime/framework.go`` ``NewFramework`` +
   ``expandMultiPointPlugins``): each point first gets its own ``enabled`` entries (a plugin must implement the
   point and appear once). Unless the point disables ``"*"``, every ``multiPoint`` plugin that implements the
   point and is not disabled there is added; when the point also lists it, the point's entry wins ("explicit
   override"). Order: overridden plugins in the point's order, then the ``multiPoint`` plugins, then the
   point's remaining plugins. A plugin enabled twice through ``multiPoint`` is an error.
3. **Weights**: a score plugin's weight is the one of its first entry among ``score.enabled`` then
   ``multiPoint.enabled`` (so the per-point weight wins), 1 when that entry gives none (upstream
   ``getScoreWeights``); the total must not overflow ``int64`` (upstream's check, kept although weights are
   bounded).

The default set depends on the feature gates (:func:`apply_feature_gates`, upstream ``applyFeatureGates``):
:func:`default_plugins` takes them, v1.37's defaults (:data:`~.features.DEFAULT_GATES`) unless given.

kubeplane's exception to upstream: a plugin of :data:`UPSTREAM_DEFAULT_PLUGINS` that the caller's ``available``
map lacks (not implemented yet: VolumeBinding, InterPodAffinity, ...) is silently left out wherever it is
enabled, so the default configuration and configurations written for real kube-scheduler load before every
in-tree plugin exists; disabling any upstream in-tree plugin (:data:`UPSTREAM_IN_TREE_PLUGINS`) is accepted for
the same reason. Any other unknown name, enabled or disabled, is an error listing the available plugins.
Upstream accepts disabling unknown names; kubeplane reports them, as they are typos as often as not.

Error paths index the merged sets held by ``Profile.plugins``; for every point but ``multiPoint`` those are
the file's own indexes (upstream's defaults only fill ``multiPoint``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.validation import field as fielderr
from kubeplane.scheduler.config import features
from kubeplane.scheduler.config.features import DEFAULT_GATES, FeatureGates
from kubeplane.scheduler.config.types import (
    EXTENSION_POINTS,
    MULTI_POINT,
    ConfigError,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
)

__all__ = [
    "UPSTREAM_DEFAULT_PLUGINS",
    "UPSTREAM_IN_TREE_PLUGINS",
    "ResolvedPlugins",
    "apply_feature_gates",
    "default_plugins",
    "merge_plugin_set",
    "merge_plugins",
    "resolve_plugins",
    "validate_queue_sort_shared",
]

_BASE_PLUGINS: Final[tuple[PluginRef, ...]] = (
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
)
"""v1.37's ``getDefaultPlugins`` list before ``applyFeatureGates``."""

_GATED_PLUGINS: Final[frozenset[str]] = frozenset(
    {
        "DynamicResources",
        "NodeDeclaredFeatures",
        "DeferredPodScheduling",
        "GangScheduling",
        "TopologyPlacementGenerator",
        "PodGroupPodsCount",
    }
)
"""The plugins :func:`apply_feature_gates` may add to the default list."""


def apply_feature_gates(enabled: tuple[PluginRef, ...], gates: FeatureGates) -> tuple[PluginRef, ...]:
    """Upstream ``applyFeatureGates``: the default ``multiPoint`` list as the gates change it.

    * NodeDeclaredFeatures (GA, locked on): NodeDeclaredFeatures appended;
    * DynamicResourceAllocation (GA, locked on): DynamicResources (weight 2) inserted before DefaultPreemption,
      so an idle ResourceClaim is deallocated before a pod is evicted;
    * InPlacePodVerticalScalingSchedulerPreemption (alpha): DeferredPodScheduling appended;
    * GenericWorkload and GangScheduling (beta, off): GangScheduling appended;
    * TopologyAwareWorkloadScheduling (alpha): TopologyPlacementGenerator and PodGroupPodsCount (weight 1)
      appended.

    Appended plugins follow the order above (upstream's order for DeferredPodScheduling among them is not in
    the sources read; kubeplane has not implemented it). Of these plugins kubeplane implements GangScheduling
    only; the others drop out silently like every unimplemented upstream default (module docstring).
    """
    out = list(enabled)
    if gates.enabled(features.NODE_DECLARED_FEATURES):
        out.append(PluginRef("NodeDeclaredFeatures"))
    if gates.enabled(features.DYNAMIC_RESOURCE_ALLOCATION):
        names = [p.name for p in out]
        if "DefaultPreemption" in names:
            out.insert(names.index("DefaultPreemption"), PluginRef("DynamicResources", 2))
    if gates.enabled(features.IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION):
        out.append(PluginRef("DeferredPodScheduling"))
    if gates.enabled(features.GENERIC_WORKLOAD) and gates.enabled(features.GANG_SCHEDULING):
        out.append(PluginRef("GangScheduling"))
    if gates.enabled(features.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        out += [PluginRef("TopologyPlacementGenerator"), PluginRef("PodGroupPodsCount", 1)]
    return tuple(out)


UPSTREAM_DEFAULT_PLUGINS: Final[tuple[PluginRef, ...]] = apply_feature_gates(_BASE_PLUGINS, DEFAULT_GATES)
"""v1.37's default ``multiPoint`` list with v1.37's default gates (``getDefaultPlugins`` + ``applyFeatureGates``).

DynamicResources (weight 2) sits before DefaultPreemption so an idle ResourceClaim is deallocated before a pod
is evicted; NodeDeclaredFeatures is appended by its gate (GA, locked on in v1.37). Plugins of gates that are
off by default in v1.37 are absent: DeferredPodScheduling (InPlacePodVerticalScalingSchedulerPreemption,
alpha), GangScheduling (GenericWorkload and GangScheduling, beta off), TopologyPlacementGenerator and
PodGroupPodsCount (TopologyAwareWorkloadScheduling, alpha); :func:`default_plugins` adds them when the gates
are on.
"""

UPSTREAM_IN_TREE_PLUGINS: Final[frozenset[str]] = frozenset(p.name for p in UPSTREAM_DEFAULT_PLUGINS) | {
    "DeferredPodScheduling",
    "GangScheduling",
    "PlacementBinPacking",
    "PodGroupPodsCount",
    "TopologyPlacementGenerator",
}
"""Every in-tree plugin name of v1.37's registry (``pkg/scheduler/framework/plugins/names``)."""

_DEFAULT_NAMES: Final = frozenset(p.name for p in _BASE_PLUGINS) | _GATED_PLUGINS
"""Names excused when enabled but not available: every plugin some gate setting puts in the default list."""

_INTERFACES: Final[Mapping[str, str]] = {
    "preEnqueue": "PreEnqueuePlugin",
    "queueSort": "QueueSortPlugin",
    "preFilter": "PreFilterPlugin",
    "filter": "FilterPlugin",
    "postFilter": "PostFilterPlugin",
    "preScore": "PreScorePlugin",
    "score": "ScorePlugin",
    "reserve": "ReservePlugin",
    "permit": "PermitPlugin",
    "preBind": "PreBindPlugin",
    "bind": "BindPlugin",
    "postBind": "PostBindPlugin",
}
"""Upstream's Go interface per point, as its framework errors name them."""

_UPSTREAM_ORDER: Final = (
    "preFilter",
    "filter",
    "postFilter",
    "reserve",
    "preScore",
    "score",
    "preBind",
    "bind",
    "postBind",
    "permit",
    "preEnqueue",
    "queueSort",
)
"""The order upstream's ``getExtensionPoints`` visits the points in, which decides which error comes first."""

_MAX_NODE_SCORE: Final = 100
_MAX_TOTAL_SCORE: Final = 2**63 - 1


def default_plugins(gates: FeatureGates = DEFAULT_GATES) -> Plugins:
    """Upstream's default :class:`Plugins` under ``gates`` (v1.37's defaults unless given): all in ``multiPoint``."""
    return Plugins(multi_point=PluginSet(enabled=apply_feature_gates(_BASE_PLUGINS, gates)))


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream ``mergePluginSet``: ``custom`` applied over ``default`` (see the module docstring).

    The result's ``disabled`` is the custom then the default disabled entries (names only), which the
    expansion reads. Duplicated custom entries are kept: the expansion reports them.
    """
    disabled = tuple(PluginRef(p.name) for p in (*custom.disabled, *default.disabled))
    disabled_names = {p.name for p in disabled}
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}  # the last entry of a name wins
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled_names:
        for plugin in default.enabled:
            if plugin.name in disabled_names:
                continue
            i = custom_index.get(plugin.name)
            if i is not None:  # re-configured default: the user's entry, in the default's place
                replaced.add(i)
            enabled.append(plugin if i is None else custom.enabled[i])
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(tuple(enabled), disabled)


def merge_plugins(default: Plugins, custom: Plugins | None) -> Plugins:
    """Upstream ``mergePlugins``: :func:`merge_plugin_set` for every point and ``multiPoint``."""
    if custom is None:
        return default
    return Plugins.from_points(
        {p: merge_plugin_set(default.get(p), custom.get(p)) for p in (MULTI_POINT, *EXTENSION_POINTS)}
    )


@dataclass(frozen=True, slots=True)
class ResolvedPlugins:
    """The plugins a profile runs, per extension point, as ``(name, weight)`` pairs in execution order.

    ``weight`` is the score weight for ``score`` and 0 elsewhere (as upstream's ``ListPlugins``).
    """

    pre_enqueue: tuple[tuple[str, int], ...] = ()
    queue_sort: tuple[tuple[str, int], ...] = ()
    pre_filter: tuple[tuple[str, int], ...] = ()
    filter: tuple[tuple[str, int], ...] = ()
    post_filter: tuple[tuple[str, int], ...] = ()
    pre_score: tuple[tuple[str, int], ...] = ()
    score: tuple[tuple[str, int], ...] = ()
    reserve: tuple[tuple[str, int], ...] = ()
    permit: tuple[tuple[str, int], ...] = ()
    pre_bind: tuple[tuple[str, int], ...] = ()
    bind: tuple[tuple[str, int], ...] = ()
    post_bind: tuple[tuple[str, int], ...] = ()

    def points(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """Point name (``"preFilter"``, ...) -> its plugins, every point present, in scheduling order."""
        return {p: getattr(self, _attr(p)) for p in EXTENSION_POINTS}

    def names(self, point: str) -> tuple[str, ...]:
        """The plugin names of ``point`` (v1 spelling), in order."""
        entries: tuple[tuple[str, int], ...] = getattr(self, _attr(point))
        return tuple(name for name, _ in entries)


def _attr(point: str) -> str:
    if point not in _INTERFACES:
        raise ValueError(f"unknown extension point {point!r}")
    return "".join("_" + c.lower() if c.isupper() else c for c in point)


class _Expansion:
    """The state of one :func:`resolve_plugins` call: the profile, what exists, and the errors found."""

    def __init__(self, profile: Profile, available: Mapping[str, frozenset[str]], index: int) -> None:
        self.plugins = profile.plugins
        self.available = available
        self.path = fielderr.new_path("profiles").index(index).child("plugins")
        self.errors: list[str] = []
        self.listing = ", ".join(sorted(available))

    def kept(self, name: str) -> bool:
        """``name`` takes part in the expansion: it exists (unavailable upstream defaults drop out silently)."""
        return name in self.available

    def check_names(self) -> None:
        """Report every enabled or disabled name that neither exists nor is excused (module docstring)."""
        for point in (MULTI_POINT, *EXTENSION_POINTS):
            ps = self.plugins.get(point)
            for kind, entries, excused in (
                ("enabled", ps.enabled, _DEFAULT_NAMES),
                ("disabled", ps.disabled, UPSTREAM_IN_TREE_PLUGINS | {"*"}),
            ):
                for i, ref in enumerate(entries):
                    if ref.name not in self.available and ref.name not in excused:
                        self.errors.append(
                            f"{self.path.child(point, kind).index(i)}: plugin {fielderr.go_quote(ref.name)} "
                            f"does not exist; available plugins: {self.listing}"
                        )

    def specific(self, point: str) -> list[str]:
        """Upstream ``updatePluginList``: the point's own enabled plugins, each implementing it, once."""
        names: list[str] = []
        for i, ref in enumerate(self.plugins.get(point).enabled):
            if not self.kept(ref.name):
                continue
            at = self.path.child(point, "enabled").index(i)
            quoted = fielderr.go_quote(ref.name)
            if point not in self.available[ref.name]:
                self.errors.append(f"{at}: plugin {quoted} does not extend {_INTERFACES[point]} plugin")
            elif ref.name in names:
                self.errors.append(
                    f"{at}: plugin {quoted} already registered as {fielderr.go_quote(_INTERFACES[point])}"
                )
            else:
                names.append(ref.name)
        return names

    def expand(self, point: str, reported: set[int]) -> list[str]:
        """The point's plugins after ``multiPoint`` expansion, in upstream's order."""
        own = self.specific(point)
        ps = self.plugins.get(point)
        disabled = ps.disabled_names()
        if "*" in disabled:
            return own
        overrides: set[str] = set()
        multi: list[str] = []
        for i, ref in enumerate(self.plugins.multi_point.enabled):
            name = ref.name
            if not self.kept(name) or point not in self.available[name] or name in disabled:
                continue
            if name in own:
                overrides.add(name)
            elif name in multi:
                if i not in reported:  # one error per entry, not one per point it implements
                    reported.add(i)
                    at = self.path.child(MULTI_POINT, "enabled").index(i)
                    self.errors.append(
                        f"{at}: plugin {fielderr.go_quote(name)} already registered as "
                        f"{fielderr.go_quote(_INTERFACES[point])}"
                    )
            else:
                multi.append(name)
        first = [n for n in own if n in overrides]
        rest = [n for n in own if n not in overrides]
        return first + multi + rest

    def score_weights(self) -> dict[str, int]:
        """Upstream ``getScoreWeights``: first entry among score then multiPoint wins; absent weight is 1."""
        weights: dict[str, int] = {}
        total = 0
        for ref in (*self.plugins.score.enabled, *self.plugins.multi_point.enabled):
            if not self.kept(ref.name) or "score" not in self.available[ref.name] or ref.name in weights:
                continue
            weight = ref.weight or 1
            weights[ref.name] = weight
            if weight * _MAX_NODE_SCORE > _MAX_TOTAL_SCORE - total:
                self.errors.append(f"{self.path.child('score')}: total score of Score plugins could overflow")
                break
            total += weight * _MAX_NODE_SCORE
        return weights


def resolve_plugins(
    profile: Profile, available: Mapping[str, frozenset[str]], *, profile_index: int = 0
) -> ResolvedPlugins:
    """Expand ``profile.plugins`` into per-point ``(name, weight)`` lists, as upstream's ``NewFramework``.

    ``available`` maps each registered plugin to the points it implements, spelled as :data:`EXTENSION_POINTS`.
    ``profile_index`` is the profile's position in the configuration, used in error paths. Raises
    :class:`ConfigError` with every problem found: unknown names, a point entry for a plugin that does not
    implement it, duplicates, not exactly one queueSort plugin, no bind plugin.
    """
    for name, points in available.items():
        unknown = set(points) - set(EXTENSION_POINTS)
        if unknown:
            raise ValueError(f"plugin {name!r} declares unknown extension points {sorted(unknown)}")
    exp = _Expansion(profile, available, profile_index)
    exp.check_names()
    reported: set[int] = set()
    expanded = {point: exp.expand(point, reported) for point in _UPSTREAM_ORDER}  # upstream's error order
    lists = {point: expanded[point] for point in EXTENSION_POINTS}
    weights = exp.score_weights()
    quoted_name = fielderr.go_quote(profile.scheduler_name)
    if len(lists["queueSort"]) != 1:
        exp.errors.append(
            str(
                fielderr.invalid(
                    exp.path.child("queueSort"),
                    len(lists["queueSort"]),
                    detail=f"only one queue sort plugin required for profile with scheduler name {quoted_name}",
                )
            )
        )
    if not lists["bind"]:
        exp.errors.append(
            str(
                fielderr.required(
                    exp.path.child("bind"),
                    f"at least one bind plugin is needed for profile with scheduler name {quoted_name}",
                )
            )
        )
    if exp.errors:
        raise ConfigError(dict.fromkeys(exp.errors))
    return ResolvedPlugins(
        **{
            _attr(point): tuple((n, weights.get(n, 1) if point == "score" else 0) for n in names)
            for point, names in lists.items()
        }
    )


def validate_queue_sort_shared(
    resolved: Sequence[ResolvedPlugins],
    *,
    plugin_configs: Sequence[Mapping[str, Mapping[str, Any]]] | None = None,
) -> None:
    """All profiles must sort the one scheduling queue alike (upstream ``validateCommonQueueSort``).

    Checked on the resolved lists, so a queue sort enabled through ``multiPoint`` counts too. With
    ``plugin_configs`` (each profile's ``plugin_config``, aligned with ``resolved``) the queue sort plugin's
    args must be equal as well. Raises :class:`ConfigError`.
    """
    if not resolved:
        return
    errors: list[str] = []
    canon = resolved[0].names("queueSort")
    profiles = fielderr.new_path("profiles")
    for i in range(1, len(resolved)):
        names = resolved[i].names("queueSort")
        if names != canon:
            errors.append(
                str(
                    fielderr.invalid(
                        profiles.index(i).child("plugins", "queueSort"),
                        list(names),
                        detail="must be the same for all profiles",
                    )
                )
            )
    if plugin_configs is not None and canon:
        name = canon[0]
        base = plugin_configs[0].get(name) if plugin_configs else None
        for i in range(1, min(len(plugin_configs), len(resolved))):
            args = plugin_configs[i].get(name)
            if args is not None and dict(args) != (dict(base) if base is not None else None):
                errors.append(
                    str(
                        fielderr.invalid(
                            profiles.index(i).child("pluginConfig", "args"),
                            dict(args),
                            detail="queueSort must be the same for all profiles",
                        )
                    )
                )
    if errors:
        raise ConfigError(errors)
