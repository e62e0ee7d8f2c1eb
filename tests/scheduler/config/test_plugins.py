"""Plugin sets: upstream's v1.37 default list, ``mergePluginSet`` (``default_plugins_test.go`` ``TestMergePlugins``)
and the framework's expansion (``framework_test.go`` ``TestNewFrameworkMultiPointExpansion``,
``TestNewFrameworkErrors``-style failures), with kubeplane's handling of not-yet-implemented default plugins."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.scheduler.config import (
    EXTENSION_POINTS,
    UPSTREAM_DEFAULT_PLUGINS,
    ConfigError,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    ResolvedPlugins,
    default_config,
    parse_config,
    resolve_plugins,
    validate_queue_sort_shared,
)
from kubeplane.scheduler.config.plugins import merge_plugin_set


def _refs(*entries: str | tuple[str, int]) -> tuple[PluginRef, ...]:
    return tuple(PluginRef(e) if isinstance(e, str) else PluginRef(*e) for e in entries)


def _set(enabled: tuple[Any, ...] = (), disabled: tuple[str, ...] = ()) -> PluginSet:
    return PluginSet(_refs(*enabled), _refs(*disabled))


def test_upstream_default_plugins_v1_37() -> None:
    """getDefaultPlugins + applyFeatureGates with v1.37's default gates (DRA and NodeDeclaredFeatures GA)."""
    assert [(p.name, p.weight) for p in UPSTREAM_DEFAULT_PLUGINS] == [
        ("SchedulingGates", None),
        ("PrioritySort", None),
        ("NodeUnschedulable", None),
        ("NodeName", None),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", None),
        ("NodeResourcesFit", 1),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("DefaultBinder", None),
        ("NodeDeclaredFeatures", None),
    ]


MERGE: list[tuple[str, PluginSet, PluginSet, PluginSet]] = [
    (
        "AppendCustomPlugin",
        _set(("DefaultPlugin1", "DefaultPlugin2")),
        _set(("CustomPlugin",)),
        _set(("DefaultPlugin1", "DefaultPlugin2", "CustomPlugin")),
    ),
    (
        "InsertAfterDefaultPlugins2",
        _set(("DefaultPlugin1", "DefaultPlugin2")),
        _set(("CustomPlugin", "DefaultPlugin2"), ("DefaultPlugin2",)),
        _set(("DefaultPlugin1", "CustomPlugin", "DefaultPlugin2"), ("DefaultPlugin2",)),
    ),
    (
        "InsertBeforeAllPlugins",
        _set(("DefaultPlugin1", "DefaultPlugin2")),
        _set(("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"), ("*",)),
        _set(("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"), ("*",)),
    ),
    (
        "ReorderDefaultPlugins",
        _set(("DefaultPlugin1", "DefaultPlugin2")),
        _set(("DefaultPlugin2", "DefaultPlugin1"), ("*",)),
        _set(("DefaultPlugin2", "DefaultPlugin1"), ("*",)),
    ),
    (
        "CustomPluginOverrideDefaultPlugin",
        _set(("Plugin1", "Plugin2", "Plugin3")),
        _set((("Plugin1", 2), ("Plugin3", 3))),
        _set((("Plugin1", 2), "Plugin2", ("Plugin3", 3))),
    ),
    (
        "OrderPreserveAfterOverride",
        _set(("Plugin1", "Plugin2", "Plugin3")),
        _set((("Plugin2", 2), ("Plugin1", 1))),
        _set((("Plugin1", 1), ("Plugin2", 2), "Plugin3")),
    ),
    (
        "RepeatedCustomPlugin",
        _set(("Plugin1", "Plugin2", "Plugin3")),
        _set(("Plugin1", ("Plugin2", 2), "Plugin3", ("Plugin2", 4))),
        _set(("Plugin1", ("Plugin2", 4), "Plugin3", ("Plugin2", 2))),
    ),
    (
        "disabled MultiPoint plugin in default set",
        _set(("DefaultPlugin",), ("DefaultPlugin2",)),
        _set(("CustomPlugin",)),
        _set(("DefaultPlugin", "CustomPlugin"), ("DefaultPlugin2",)),
    ),
    (
        "multipoint with only disabled gets merged",
        _set(("DefaultPlugin",)),
        _set((), ("DefaultPlugin",)),
        _set((), ("DefaultPlugin",)),
    ),
]


@pytest.mark.parametrize(("default", "custom", "expected"), [c[1:] for c in MERGE], ids=[c[0] for c in MERGE])
def test_merge_plugin_set(default: PluginSet, custom: PluginSet, expected: PluginSet) -> None:
    assert merge_plugin_set(default, custom) == expected


def test_profile_plugins_are_merged_into_the_default_set() -> None:
    """A re-configured default keeps its place with the user's weight; disabled defaults go; customs follow."""
    cfg = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "MyPlugin", "weight": 7}, {"name": "ImageLocality", "weight": 5}],
                            "disabled": [{"name": "TaintToleration"}],
                        }
                    }
                }
            ],
        }
    )
    merged = cfg.profiles[0].plugins.multi_point
    names = [p.name for p in merged.enabled]
    assert "TaintToleration" not in names
    assert names[-1] == "MyPlugin"
    assert names.index("ImageLocality") == names.index("NodeResourcesBalancedAllocation") + 1
    assert PluginRef("ImageLocality", 5) in merged.enabled
    assert merged.disabled == (PluginRef("TaintToleration"),)


# --- expansion ---------------------------------------------------------------------------------------------

ALL = frozenset(EXTENSION_POINTS)
AVAILABLE: dict[str, frozenset[str]] = {
    "TestPlugin": frozenset(
        {
            "preEnqueue",
            "preFilter",
            "filter",
            "postFilter",
            "preScore",
            "score",
            "reserve",
            "permit",
            "preBind",
            "postBind",
        }
    ),
    "ScorePlugin": frozenset({"score"}),
    "FilterPlugin": frozenset({"preFilter", "filter"}),
    "Sort": frozenset({"queueSort"}),
    "Bind": frozenset({"bind"}),
}
BASE = {"queueSort": _set(("Sort",)), "bind": _set(("Bind",))}


def _profile(**sets: PluginSet) -> Profile:
    return Profile("p", plugins=Plugins.from_points({**BASE, **sets}))


def _lists(r: ResolvedPlugins, *points: str) -> dict[str, list[tuple[str, int]]]:
    return {p: list(r.points()[p]) for p in points}


EXPANSION: list[tuple[str, dict[str, PluginSet], dict[str, list[tuple[str, int]]]]] = [
    (
        "plugin expansion",
        {"multiPoint": _set((("TestPlugin", 5),))},
        {
            "preEnqueue": [("TestPlugin", 0)],
            "preFilter": [("TestPlugin", 0)],
            "filter": [("TestPlugin", 0)],
            "score": [("TestPlugin", 5)],
            "reserve": [("TestPlugin", 0)],
            "postBind": [("TestPlugin", 0)],
        },
    ),
    (
        "disable MultiPoint plugin at some extension points",
        {
            "multiPoint": _set(("TestPlugin",)),
            "preScore": _set((), ("TestPlugin",)),
            "score": _set((), ("TestPlugin",)),
        },
        {"preScore": [], "score": [], "filter": [("TestPlugin", 0)]},
    ),
    (
        "Multiple MultiPoint plugins",
        {"multiPoint": _set(("TestPlugin", ("ScorePlugin", 5)))},
        {"score": [("TestPlugin", 1), ("ScorePlugin", 5)], "filter": [("TestPlugin", 0)]},
    ),
    (
        'disable MultiPoint extension ("*" at one point)',
        {"multiPoint": _set(("TestPlugin", ("ScorePlugin", 5))), "preScore": _set((), ("*",))},
        {"preScore": [], "score": [("TestPlugin", 1), ("ScorePlugin", 5)]},
    ),
    (
        "Reorder MultiPoint plugins (specific extension takes precedence)",
        {"multiPoint": _set((("ScorePlugin", 5), "TestPlugin")), "score": _set(("TestPlugin",))},
        {"score": [("TestPlugin", 1), ("ScorePlugin", 5)]},
    ),
    (
        "Reorder MultiPoint plugins (specific extension only takes precedence when it exists in MultiPoint)",
        {"multiPoint": _set(("TestPlugin",)), "score": _set(("ScorePlugin",))},
        {"score": [("TestPlugin", 1), ("ScorePlugin", 1)]},
    ),
    (
        "Override MultiPoint plugins weights",
        {"multiPoint": _set((("TestPlugin", 5), ("ScorePlugin", 5))), "score": _set((("TestPlugin", 3),))},
        {"score": [("TestPlugin", 3), ("ScorePlugin", 5)]},
    ),
    (
        "disable and enable MultiPoint plugin while disabling all",
        {"multiPoint": _set(("TestPlugin",)), "score": _set((("TestPlugin", 3),), ("*",))},
        {"score": [("TestPlugin", 3)], "filter": [("TestPlugin", 0)]},
    ),
    (
        "a point's own entries keep their order after the MultiPoint ones",
        {"multiPoint": _set(("FilterPlugin",)), "filter": _set(("TestPlugin",))},
        {"preFilter": [("FilterPlugin", 0)], "filter": [("FilterPlugin", 0), ("TestPlugin", 0)]},
    ),
    (
        "a point's own entries ignore its disabled list (updatePluginList reads only Enabled)",
        {"filter": _set(("FilterPlugin",), ("FilterPlugin",))},
        {"filter": [("FilterPlugin", 0)], "preFilter": []},
    ),
]


@pytest.mark.parametrize(("sets", "expected"), [c[1:] for c in EXPANSION], ids=[c[0] for c in EXPANSION])
def test_multi_point_expansion(sets: dict[str, PluginSet], expected: dict[str, list[tuple[str, int]]]) -> None:
    resolved = resolve_plugins(_profile(**sets), AVAILABLE)
    assert _lists(resolved, *expected) == expected
    assert resolved.queue_sort == (("Sort", 0),)
    assert resolved.bind == (("Bind", 0),)


LISTING = "Bind, FilterPlugin, ScorePlugin, Sort, TestPlugin"
ONE_SORT = "only one queue sort plugin required for profile with scheduler name"
ONE_BIND = "at least one bind plugin is needed for profile with scheduler name"

WITH_OTHER_SORT = dict(AVAILABLE, Other=frozenset({"queueSort"}))

FAILURES: list[tuple[str, Profile, dict[str, frozenset[str]], list[str]]] = [
    (
        "Reject duplicate MultiPoint plugins (one error per entry)",
        _profile(multiPoint=_set(("TestPlugin", "TestPlugin"))),
        AVAILABLE,
        ['profiles[0].plugins.multiPoint.enabled[1]: plugin "TestPlugin" already registered as "PreFilterPlugin"'],
    ),
    (
        "Reject duplicate plugins at one point",
        _profile(filter=_set(("FilterPlugin", "FilterPlugin"))),
        AVAILABLE,
        ['profiles[0].plugins.filter.enabled[1]: plugin "FilterPlugin" already registered as "FilterPlugin"'],
    ),
    (
        "Reject a plugin at a point it does not implement",
        _profile(score=_set(("FilterPlugin",))),
        AVAILABLE,
        ['profiles[0].plugins.score.enabled[0]: plugin "FilterPlugin" does not extend ScorePlugin plugin'],
    ),
    (
        "unknown plugins, enabled and disabled, each with the available names",
        _profile(filter=_set(("Foo",)), multiPoint=_set(("Bar",)), postFilter=_set((), ("Baz",))),
        AVAILABLE,
        [
            f'profiles[0].plugins.multiPoint.enabled[0]: plugin "Bar" does not exist; available plugins: {LISTING}',
            f'profiles[0].plugins.filter.enabled[0]: plugin "Foo" does not exist; available plugins: {LISTING}',
            f'profiles[0].plugins.postFilter.disabled[0]: plugin "Baz" does not exist; available plugins: {LISTING}',
        ],
    ),
    (
        "no queue sort plugin and no bind plugin",
        Profile("nothing", plugins=Plugins(filter=_set(("FilterPlugin",)))),
        AVAILABLE,
        [
            f'profiles[0].plugins.queueSort: Invalid value: 0: {ONE_SORT} "nothing"',
            f'profiles[0].plugins.bind: Required value: {ONE_BIND} "nothing"',
        ],
    ),
    (
        "two queue sort plugins",
        Profile("two", plugins=Plugins(queue_sort=_set(("Sort",)), bind=_set(("Bind",)), multi_point=_set(("Other",)))),
        WITH_OTHER_SORT,
        [f'profiles[0].plugins.queueSort: Invalid value: 2: {ONE_SORT} "two"'],
    ),
]


@pytest.mark.parametrize(("profile", "available", "expected"), [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES])
def test_expansion_failures(profile: Profile, available: dict[str, frozenset[str]], expected: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_plugins(profile, available)
    assert info.value.errors == expected


def test_profile_index_appears_in_paths() -> None:
    with pytest.raises(ConfigError, match=r"^profiles\[3\]\.plugins\.filter\.enabled\[0\]: plugin \"Foo\""):
        resolve_plugins(_profile(filter=_set(("Foo",))), AVAILABLE, profile_index=3)


# v1.37's in-tree plugins with the points they implement (pkg/scheduler/framework/plugins/*).
IN_TREE: dict[str, frozenset[str]] = {
    "SchedulingGates": frozenset({"preEnqueue"}),
    "PrioritySort": frozenset({"queueSort"}),
    "NodeUnschedulable": frozenset({"filter"}),
    "NodeName": frozenset({"filter"}),
    "TaintToleration": frozenset({"filter", "preScore", "score"}),
    "NodeAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "NodePorts": frozenset({"preFilter", "filter"}),
    "NodeResourcesFit": frozenset({"preFilter", "filter", "preScore", "score"}),
    "VolumeRestrictions": frozenset({"preFilter", "filter"}),
    "NodeVolumeLimits": frozenset({"preFilter", "filter"}),
    "VolumeBinding": frozenset({"preFilter", "filter", "reserve", "preBind", "preScore", "score"}),
    "VolumeZone": frozenset({"preFilter", "filter"}),
    "PodTopologySpread": frozenset({"preFilter", "filter", "preScore", "score"}),
    "InterPodAffinity": frozenset({"preFilter", "filter", "preScore", "score"}),
    "DynamicResources": frozenset(
        {"preEnqueue", "preFilter", "filter", "postFilter", "preScore", "score", "reserve", "preBind"}
    ),
    "DefaultPreemption": frozenset({"postFilter"}),
    "NodeResourcesBalancedAllocation": frozenset({"preScore", "score"}),
    "ImageLocality": frozenset({"score"}),
    "DefaultBinder": frozenset({"bind"}),
    "NodeDeclaredFeatures": frozenset({"preFilter", "filter"}),
}


def test_default_profile_expands_like_upstream_expanded_plugins() -> None:
    """The shape of upstream's testing/defaults ExpandedPluginsV1, with v1.37's list."""
    resolved = resolve_plugins(default_config().profiles[0], IN_TREE)
    assert resolved.names("preEnqueue") == ("SchedulingGates", "DynamicResources")
    assert resolved.queue_sort == (("PrioritySort", 0),)
    assert resolved.names("postFilter") == ("DynamicResources", "DefaultPreemption")
    assert resolved.score == (
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("VolumeBinding", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    )
    assert resolved.names("filter")[-1] == "NodeDeclaredFeatures"
    assert resolved.bind == (("DefaultBinder", 0),)


def test_unimplemented_default_plugins_drop_out() -> None:
    available = {
        k: IN_TREE[k] for k in ("PrioritySort", "NodeName", "TaintToleration", "NodeResourcesFit", "DefaultBinder")
    }
    resolved = resolve_plugins(default_config().profiles[0], available)
    assert resolved.names("filter") == ("NodeName", "TaintToleration", "NodeResourcesFit")
    assert resolved.score == (("TaintToleration", 3), ("NodeResourcesFit", 1))
    assert resolved.post_filter == ()


SEED = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [
        {
            "schedulerName": "my-scheduler",
            "plugins": {
                "postFilter": {"disabled": [{"name": "DefaultPreemption"}]},
                "filter": {"enabled": [{"name": "CheckPodCountLimit"}, {"name": "CheckPodLimitResources"}]},
            },
            "pluginConfig": [
                {"name": "CheckPodCountLimit", "args": {"podCountLimit": 2}},
                {"name": "CheckPodLimitResources", "args": {"limitRatio": {"cpu": 0.7, "memory": 0.7}}},
            ],
        }
    ],
}


def test_seed_example_resolves() -> None:
    available = dict(
        IN_TREE, CheckPodCountLimit=frozenset({"filter"}), CheckPodLimitResources=frozenset({"preFilter", "filter"})
    )
    resolved = resolve_plugins(parse_config(SEED).profiles[0], available)
    assert resolved.names("filter")[-2:] == ("CheckPodCountLimit", "CheckPodLimitResources")
    assert "CheckPodLimitResources" not in resolved.names("preFilter")  # enabled for filter only, not multiPoint
    assert resolved.names("postFilter") == ("DynamicResources",)  # DefaultPreemption disabled at postFilter


def test_disabling_an_upstream_plugin_kubeplane_lacks_is_accepted() -> None:
    available = {k: IN_TREE[k] for k in ("PrioritySort", "DefaultBinder")}
    disabled = _set((), ("DefaultPreemption", "GangScheduling", "*"))
    profile = Profile("p", plugins=Plugins(post_filter=disabled, multi_point=_set(("PrioritySort", "DefaultBinder"))))
    resolved = resolve_plugins(profile, available)
    assert resolved.names("queueSort") == ("PrioritySort",)
    assert resolved.names("postFilter") == ()


def test_resolved_points_cover_every_extension_point() -> None:
    resolved = resolve_plugins(_profile(), AVAILABLE)
    assert list(resolved.points()) == list(EXTENSION_POINTS)


def test_unknown_point_in_available_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="normalizeScore"):
        resolve_plugins(_profile(), {"X": frozenset({"normalizeScore"})})


# --- queue sort shared by all profiles ---------------------------------------------------------------------

SORT = ResolvedPlugins(queue_sort=(("PrioritySort", 0),), bind=(("DefaultBinder", 0),))
OTHER = ResolvedPlugins(queue_sort=(("OtherSort", 0),), bind=(("DefaultBinder", 0),))

QUEUE_SORT: list[tuple[str, list[ResolvedPlugins], list[dict[str, Any]] | None, list[str]]] = [
    ("same plugin everywhere", [SORT, SORT, SORT], None, []),
    (
        "queueSort must be the same for all profiles",
        [SORT, OTHER],
        None,
        ['profiles[1].plugins.queueSort: Invalid value: ["OtherSort"]: must be the same for all profiles'],
    ),
    (
        "queue sort args must be the same for all profiles",
        [SORT, SORT],
        [{"PrioritySort": {"a": 1}}, {"PrioritySort": {"a": 2}}],
        ['profiles[1].pluginConfig.args: Invalid value: {"a":2}: queueSort must be the same for all profiles'],
    ),
    ("equal args", [SORT, SORT], [{"PrioritySort": {"a": 1}}, {"PrioritySort": {"a": 1}}], []),
]


@pytest.mark.parametrize(
    ("resolved", "configs", "expected"), [c[1:] for c in QUEUE_SORT], ids=[c[0] for c in QUEUE_SORT]
)
def test_validate_queue_sort_shared(
    resolved: list[ResolvedPlugins], configs: list[dict[str, Any]] | None, expected: list[str]
) -> None:
    if not expected:
        validate_queue_sort_shared(resolved, plugin_configs=configs)
        return
    with pytest.raises(ConfigError) as info:
        validate_queue_sort_shared(resolved, plugin_configs=configs)
    assert info.value.errors == expected
