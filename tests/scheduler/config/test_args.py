"""In-tree plugin args: v1 defaults (upstream ``defaults_test.go`` ``TestPluginArgsDefaults``), strict decoding,
and validation with exact messages and paths (upstream ``validation_pluginargs_test.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.scheduler.config import ConfigError, parse_config
from kubeplane.scheduler.config.args import ARGS_PLUGINS, default_args

A = "profiles[0].pluginConfig[0].args"
SS = f"{A}.scoringStrategy"
RTC = f"{SS}.requestedToCapacityRatio"
DC = f"{A}.defaultConstraints"
REQUIRED = f"{A}.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = f"{A}.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"
STRATEGIES = 'supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"'
ACTIONS = 'supported values: "DoNotSchedule", "ScheduleAnyway"'
OPERATORS = 'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'
NOT_BOTH_ZERO = "cannot be zero at the same time as"
CPU_MEM = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
LABEL_NAME_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _doc(name: str, args: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"pluginConfig": [{"name": name, "args": args}]}],
    }


def _args(name: str, args: Any) -> dict[str, Any]:
    cfg = parse_config(_doc(name, args))
    return dict(cfg.profiles[0].plugin_config[name])


def _errors(name: str, args: Any) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(_doc(name, args))
    return info.value.errors


DEFAULTS: list[tuple[str, dict[str, Any]]] = [
    ("DefaultPreemption", {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}),
    ("DynamicResources", {"filterTimeout": "10s", "bindingTimeout": "10m0s"}),
    ("InterPodAffinity", {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False}),
    ("NodeAffinity", {}),
    ("NodeResourcesBalancedAllocation", {"resources": CPU_MEM}),
    (
        "NodeResourcesFit",
        {
            "scoringStrategy": {"type": "LeastAllocated", "resources": CPU_MEM},
            "ignoredResources": [],
            "ignoredResourceGroups": [],
        },
    ),
    ("PodTopologySpread", {"defaultConstraints": [], "defaultingType": "System"}),
    (
        "VolumeBinding",
        {"bindTimeoutSeconds": 600, "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
    ),
]


@pytest.mark.parametrize(("name", "expected"), DEFAULTS, ids=[f"SetDefaults_{n}Args" for n, _ in DEFAULTS])
def test_defaults(name: str, expected: dict[str, Any]) -> None:
    assert default_args(name) == expected
    assert _args(name, None) == expected  # an entry without args is defaulted the same way
    assert _args(name, {}) == expected


def test_every_args_plugin_has_a_default_case() -> None:
    assert {n for n, _ in DEFAULTS} == ARGS_PLUGINS


DECODED: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    (
        "NodeResourcesFit: a strategy without resources gets cpu/memory; weight 0 means 1",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "MostAllocated"}, "ignoredResources": ["example.com/foo"]},
        {
            "scoringStrategy": {"type": "MostAllocated", "resources": CPU_MEM},
            "ignoredResources": ["example.com/foo"],
            "ignoredResourceGroups": [],
        },
    ),
    (
        "NodeResourcesFit: RequestedToCapacityRatio keeps its shape, zero weights become 1",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 0}, {"name": "nvidia.com/gpu", "weight": 5}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            }
        },
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 5}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            },
            "ignoredResources": [],
            "ignoredResourceGroups": [],
        },
    ),
    (
        "NodeResourcesBalancedAllocation: an unset weight is 1",
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu"}, {"name": "nvidia.com/gpu", "weight": 1}]},
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]},
    ),
    (
        "PodTopologySpread: List defaulting with constraints",
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
        },
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
            ],
        },
    ),
    (
        "DynamicResources: durations re-encoded as Go prints them",
        "DynamicResources",
        {"filterTimeout": "90s", "bindingTimeout": "1h"},
        {"filterTimeout": "1m30s", "bindingTimeout": "1h0m0s"},
    ),
    (
        "DynamicResources: a zero filterTimeout disables the timeout and is kept",
        "DynamicResources",
        {"filterTimeout": "0s"},
        {"filterTimeout": "0s", "bindingTimeout": "10m0s"},
    ),
    (
        "VolumeBinding: bindTimeoutSeconds 0 (no waiting) is kept; a given shape replaces the default",
        "VolumeBinding",
        {"bindTimeoutSeconds": 0, "shape": [{"utilization": 50, "score": 5}]},
        {"bindTimeoutSeconds": 0, "shape": [{"utilization": 50, "score": 5}]},
    ),
    (
        "InterPodAffinity: apiVersion and kind inside args are accepted and dropped",
        "InterPodAffinity",
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "InterPodAffinityArgs", "hardPodAffinityWeight": 0},
        {"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": False},
    ),
    (
        "NodeAffinity: addedAffinity kept as given",
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                }
            }
        },
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                }
            }
        },
    ),
]


@pytest.mark.parametrize(("name", "given", "expected"), [c[1:] for c in DECODED], ids=[c[0] for c in DECODED])
def test_decoding_and_defaulting(name: str, given: dict[str, Any], expected: dict[str, Any]) -> None:
    assert _args(name, given) == expected


def test_out_of_tree_args_pass_through_unchanged() -> None:
    given = {"limitRatio": {"cpu": 0.7}, "anything": [1, "two"]}
    assert _args("MyPlugin", given) == given


def test_args_for_in_tree_plugin_without_args_type_pass_through() -> None:
    # upstream: PrioritySortArgs is not registered, so the args stay a runtime.Unknown and are not checked
    assert _args("PrioritySort", {"whatever": True}) == {"whatever": True}


INVALID: list[tuple[str, str, Any, list[str]]] = [
    (
        "DefaultPreemption: minCandidateNodesPercentage above 100",
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 101},
        [f"{A}.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]"],
    ),
    (
        "DefaultPreemption: negative minCandidateNodesAbsolute",
        "DefaultPreemption",
        {"minCandidateNodesAbsolute": -1},
        [f"{A}.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)"],
    ),
    (
        "DefaultPreemption: both zero",
        "DefaultPreemption",
        {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
        [
            f"{A}.minCandidateNodesPercentage: Invalid value: 0: {NOT_BOTH_ZERO} minCandidateNodesAbsolute",
            f"{A}.minCandidateNodesAbsolute: Invalid value: 0: {NOT_BOTH_ZERO} minCandidateNodesPercentage",
        ],
    ),
    (
        "InterPodAffinity: hardPodAffinityWeight outside [0, 100]",
        "InterPodAffinity",
        {"hardPodAffinityWeight": -1},
        [f"{A}.hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"],
    ),
    (
        "PodTopologySpread: System defaulting with constraints",
        "PodTopologySpread",
        {"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
        [f'{A}.defaultingType: Invalid value: "System": when .defaultConstraints are not empty'],
    ),
    (
        "PodTopologySpread: unsupported defaultingType",
        "PodTopologySpread",
        {"defaultingType": "Custom"},
        [f'{A}.defaultingType: Unsupported value: "Custom": supported values: "System", "List"'],
    ),
    (
        "PodTopologySpread: bad constraints (maxSkew, key, action, selector, repeat)",
        "PodTopologySpread",
        {
            "defaultingType": "List",
            "defaultConstraints": [
                {"maxSkew": 0, "topologyKey": "", "whenUnsatisfiable": ""},
                {"maxSkew": 1, "topologyKey": "-zone", "whenUnsatisfiable": "Sometimes"},
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}},
                {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
            ],
        },
        [
            f"{DC}[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
            f"{DC}[0].topologyKey: Required value: can not be empty",
            f"{DC}[0].whenUnsatisfiable: Required value: can not be empty",
            f'{DC}[1].topologyKey: Invalid value: "-zone": {LABEL_NAME_ERROR}',
            f'{DC}[1].whenUnsatisfiable: Unsupported value: "Sometimes": {ACTIONS}',
            f"{DC}[2].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod",
            f'{DC}[3]: Duplicate value: "{{zone, DoNotSchedule}}"',
        ],
    ),
    (
        "NodeResourcesBalancedAllocation: repeated resource and weight other than 1",
        "NodeResourcesBalancedAllocation",
        {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 2}]},
        [
            f'{A}.resources[1].name: Duplicate value: "cpu"',
            f"{A}.resources[1].weight: Invalid value: 2: must be 1",
        ],
    ),
    (
        "NodeAffinity: bad required and preferred terms (nodeaffinity.NewNodeSelector paths)",
        "NodeAffinity",
        {
            "addedAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Foo"}]}]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]
                        },
                    }
                ],
            }
        },
        [
            f'{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Foo": {OPERATORS}',
            f'{PREFERRED}[0].matchFields[0].values: Invalid value: ["a","b"]: must have one element',
        ],
    ),
    (
        "VolumeBinding: negative bindTimeoutSeconds",
        "VolumeBinding",
        {"bindTimeoutSeconds": -10},
        [f"{A}.bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value"],
    ),
    (
        "VolumeBinding: shape unsorted and out of range (validateFunctionShape)",
        "VolumeBinding",
        {
            "shape": [
                {"utilization": 50, "score": 11},
                {"utilization": 50, "score": 1},
                {"utilization": 101, "score": -1},
            ]
        },
        [
            f"{A}.shape[1].utilization: Invalid value: 50: values must be sorted in increasing order",
            f"{A}.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
            f"{A}.shape[2].utilization: Invalid value: 101: not in valid range [0, 100]",
            f"{A}.shape[2].score: Invalid value: -1: not in valid range [0, 10]",
        ],
    ),
    (
        "NodeResourcesFit: ignored resources and groups",
        "NodeResourcesFit",
        {"ignoredResources": ["-bad"], "ignoredResourceGroups": ["example.com/foo"]},
        [
            f'{A}.ignoredResources[0]: Invalid value: "-bad": {LABEL_NAME_ERROR}',
            f"{A}.ignoredResourceGroups[0]: Invalid value: \"example.com/foo\": resource group name can't contain '/'",
        ],
    ),
    (
        "NodeResourcesFit: unsupported strategy type and weight out of (0, 100]",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "Balanced",
                "resources": [{"name": "cpu", "weight": 101}, {"name": "memory", "weight": -1}],
            }
        },
        [
            f'{SS}.type: Unsupported value: "Balanced": {STRATEGIES}',
            f"{SS}.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
            f"{SS}.resources[1].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]",
        ],
    ),
    (
        "NodeResourcesFit: a strategy without a type",
        "NodeResourcesFit",
        {"scoringStrategy": {"resources": [{"name": "cpu", "weight": 1}]}},
        [f'{SS}.type: Unsupported value: "": {STRATEGIES}'],
    ),
    (
        "NodeResourcesFit: RequestedToCapacityRatio without its parameters",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
        [f"{RTC}: Required value: must be specified when type is RequestedToCapacityRatio"],
    ),
    (
        "NodeResourcesFit: RequestedToCapacityRatio with an empty shape",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}},
        [f"{RTC}.shape: Required value: at least one point must be specified"],
    ),
    (
        "NodeResourcesFit: requestedToCapacityRatio with another type",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "requestedToCapacityRatio": {"shape": [{"utilization": 1, "score": 1}]},
            }
        },
        [f"{RTC}: Forbidden: must be nil when type is not RequestedToCapacityRatio"],
    ),
    (
        "DynamicResources: negative filterTimeout, bindingTimeout under a second",
        "DynamicResources",
        {"filterTimeout": "-1s", "bindingTimeout": "500ms"},
        [
            f"{A}.filterTimeout: Invalid value: -1s: must be zero or positive",
            f"{A}.bindingTimeout: Invalid value: 500ms: must be at least 1 second",
        ],
    ),
    (
        "strict decoding: unknown field in args",
        "NodeResourcesFit",
        {"scoringStrategy": {"type": "LeastAllocated", "resourcez": []}, "foo": 1},
        [
            f'strict decoding error: unknown field "{A}.scoringStrategy.resourcez"',
            f'strict decoding error: unknown field "{A}.foo"',
        ],
    ),
    (
        "decode: args of the wrong types",
        "DynamicResources",
        {"filterTimeout": 10, "bindingTimeout": "ten minutes"},
        [
            f"{A}.filterTimeout: Invalid value: 10: must be of type duration string",
            f'{A}.bindingTimeout: Invalid value: "ten minutes": time: invalid duration "ten minutes"',
        ],
    ),
    (
        "decode: args kind must be <Plugin>Args",
        "VolumeBinding",
        {"kind": "NodeResourcesFitArgs"},
        [f'{A}.kind: Unsupported value: "NodeResourcesFitArgs": supported values: "VolumeBindingArgs"'],
    ),
    (
        "decode: in-tree args that are not an object",
        "InterPodAffinity",
        "weight: 3",
        [f'{A}: Invalid value: "weight: 3": must be of type object'],
    ),
]


@pytest.mark.parametrize(("name", "given", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_args(name: str, given: Any, expected: list[str]) -> None:
    assert _errors(name, given) == expected


def test_defaulted_args_of_a_disabled_plugin_are_not_added() -> None:
    cfg = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"plugins": {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}, {"name": "VolumeBinding"}]}}}
            ],
        }
    )
    assert "DefaultPreemption" not in cfg.profiles[0].plugin_config
    assert "VolumeBinding" not in cfg.profiles[0].plugin_config
    assert "NodeResourcesFit" in cfg.profiles[0].plugin_config


def test_plugin_config_is_read_only() -> None:
    cfg = parse_config(_doc("NodeAffinity", {}))
    with pytest.raises(TypeError):
        cfg.profiles[0].plugin_config["NodeAffinity"] = {}  # type: ignore[index]
