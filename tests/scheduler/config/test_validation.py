"""Invalid configurations and their exact messages (upstream ``validation_test.go``
``TestValidateKubeSchedulerConfigurationV1``, component-base's validation, strict decoding), plus kubeplane's
own rules (explicit plugin weights in [1, 100], extenders refused)."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.scheduler.config import ConfigError, parse_config

API = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


def _cfg(**members: Any) -> dict[str, Any]:
    return {"apiVersion": API, "kind": KIND, **members}


def _errors(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(doc)
    assert str(info.value) == "\n".join(info.value.errors)
    return info.value.errors


WORKLOAD = "Forbidden: workload scheduling is not supported (its feature gates are off by default in v1.37)"
EXTENDERS = "Forbidden: extenders are not supported by kubeplane; implement the extension as a scheduler plugin"
REMOVED = f'was invalid in version "{API}" (KubeSchedulerConfiguration is version "{API}")'

INVALID: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "decode: apiVersion other than v1 (only v1 is registered in upstream's scheme)",
        {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND},
        [f'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1beta3": supported values: "{API}"'],
    ),
    (
        "decode: kind missing (upstream: Object 'Kind' is missing)",
        {"apiVersion": API},
        [f'kind: Required value: must be "{KIND}"'],
    ),
    (
        "decode: apiVersion missing and kind wrong",
        {"kind": "KubeProxyConfiguration"},
        [
            f'apiVersion: Required value: must be "{API}"',
            f'kind: Unsupported value: "KubeProxyConfiguration": supported values: "{KIND}"',
        ],
    ),
    (
        "strict decoding: unknown top-level field",
        _cfg(foo=1),
        ['strict decoding error: unknown field "foo"'],
    ),
    (
        "strict decoding: v1 no longer has healthzBindAddress",
        _cfg(healthzBindAddress="0.0.0.0:10251"),
        ['strict decoding error: unknown field "healthzBindAddress"'],
    ),
    (
        "strict decoding: unknown profile field",
        _cfg(profiles=[{"schedulerName": "a", "foo": True}]),
        ['strict decoding error: unknown field "profiles[0].foo"'],
    ),
    (
        "strict decoding: unknown extension point (normalizeScore is not a v1 point)",
        _cfg(profiles=[{"plugins": {"normalizeScore": {"enabled": [{"name": "X"}]}}}]),
        ['strict decoding error: unknown field "profiles[0].plugins.normalizeScore"'],
    ),
    (
        "strict decoding: unknown field in a plugin entry",
        _cfg(profiles=[{"plugins": {"score": {"enabled": [{"name": "X", "wieght": 2}]}}}]),
        ['strict decoding error: unknown field "profiles[0].plugins.score.enabled[0].wieght"'],
    ),
    (
        "decode: wrong JSON types are reported where they are",
        _cfg(parallelism="16", profiles={"schedulerName": "a"}, leaderElection={"leaderElect": "yes"}),
        [
            'parallelism: Invalid value: "16": must be of type int32',
            'leaderElection.leaderElect: Invalid value: "yes": must be of type boolean',
            'profiles: Invalid value: {"schedulerName":"a"}: must be of type array',
        ],
    ),
    (
        "decode: a duration that Go's time.ParseDuration refuses",
        _cfg(leaderElection={"leaseDuration": "15"}),
        ['leaderElection.leaseDuration: Invalid value: "15": time: missing unit in duration "15"'],
    ),
    (
        "parallelism must be greater than zero",
        _cfg(parallelism=0),
        ["parallelism: Invalid value: 0: should be an integer value greater than zero"],
    ),
    (
        "global percentageOfNodesToScore outside [0, 100]",
        _cfg(percentageOfNodesToScore=101),
        ["percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]"],
    ),
    (
        "profile percentageOfNodesToScore outside [0, 100]",
        _cfg(profiles=[{"schedulerName": "a", "percentageOfNodesToScore": -1}]),
        ["profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]"],
    ),
    (
        "podInitialBackoffSeconds must be positive",
        _cfg(podInitialBackoffSeconds=0),
        ["podInitialBackoffSeconds: Invalid value: 0: must be greater than 0"],
    ),
    (
        "podMaxBackoffSeconds below podInitialBackoffSeconds",
        _cfg(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
        ["podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds"],
    ),
    (
        "schedulerName given empty",
        _cfg(profiles=[{"schedulerName": ""}]),
        ["profiles[0].schedulerName: Required value"],
    ),
    (
        "two profiles: no default name, so both are required and repeated",
        _cfg(profiles=[{}, {}]),
        [
            "profiles[0].schedulerName: Required value",
            "profiles[1].schedulerName: Required value",
            "profiles[1].schedulerName: Duplicate value: profiles[0].schedulerName",
        ],
    ),
    (
        "repeated scheduler name",
        _cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"}]),
        ["profiles[2].schedulerName: Duplicate value: profiles[0].schedulerName"],
    ),
    (
        "kubeplane: an explicit score weight of 0 (the product message)",
        _cfg(profiles=[{"plugins": {"score": {"enabled": [{"name": "A", "weight": 5}, {"name": "B", "weight": 0}]}}}]),
        ["profiles[0].plugins.score.enabled[1].weight: Invalid value: 0: must be in the range [1, 100]"],
    ),
    (
        "kubeplane: an explicit multiPoint weight above 100, at the file's index",
        _cfg(profiles=[{"plugins": {"multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 101}]}}}]),
        ["profiles[0].plugins.multiPoint.enabled[0].weight: Invalid value: 101: must be in the range [1, 100]"],
    ),
    (
        "repeated pluginConfig name",
        _cfg(profiles=[{"pluginConfig": [{"name": "Foo", "args": {}}, {"name": "Foo", "args": {}}]}]),
        ['profiles[0].pluginConfig[1]: Duplicate value: "Foo"'],
    ),
    (
        "kubeplane: pluginConfig entry without a name",
        _cfg(profiles=[{"pluginConfig": [{"args": {"a": 1}}]}]),
        ["profiles[0].pluginConfig[0].name: Required value"],
    ),
    (
        "pluginConfig args that are not an object",
        _cfg(profiles=[{"pluginConfig": [{"name": "Foo", "args": [1, 2]}]}]),
        ["profiles[0].pluginConfig[0].args: Invalid value: [1,2]: must be of type object"],
    ),
    (
        "removed plugin enabled (invalidPluginsByVersion)",
        _cfg(profiles=[{"plugins": {"filter": {"enabled": [{"name": "EBSLimits"}]}}}]),
        [f'profiles[0].plugins.filter.enabled[0]: Invalid value: "EBSLimits": {REMOVED}'],
    ),
    (
        "removed plugin configured",
        _cfg(profiles=[{"pluginConfig": [{"name": "GCEPDLimits", "args": {}}]}]),
        [f'profiles[0].pluginConfig[0]: Invalid value: "GCEPDLimits": {REMOVED}'],
    ),
    (
        "leader election: only the leases lock",
        _cfg(leaderElection={"resourceLock": "endpoints"}),
        ['leaderElection.resourceLock: Invalid value: "endpoints": resourceLock value must be "leases"'],
    ),
    (
        "leader election: leaseDuration not above renewDeadline (the value shown is renewDeadline)",
        _cfg(leaderElection={"leaseDuration": "5s"}),
        ["leaderElection.leaseDuration: Invalid value: 10s: must be greater than `RenewDeadline`"],
    ),
    (
        "leader election: negative retryPeriod",
        _cfg(leaderElection={"retryPeriod": "-1s"}),
        ["leaderElection.retryPeriod: Invalid value: -1s: must be greater than zero"],
    ),
    (
        "client connection: negative burst",
        _cfg(clientConnection={"burst": -1}),
        ["clientConnection.burst: Invalid value: -1: must be non-negative"],
    ),
    (
        "kubeplane: extenders are refused",
        _cfg(extenders=[{"urlPrefix": "http://127.0.0.1:8888", "filterVerb": "filter"}]),
        [f"extenders: {EXTENDERS}"],
    ),
    (
        "queueSort differs between profiles (validateCommonQueueSort, internal PluginSet as Go JSON)",
        _cfg(
            profiles=[
                {"schedulerName": "a"},
                {"schedulerName": "b", "plugins": {"queueSort": {"enabled": [{"name": "Other"}]}}},
            ]
        ),
        [
            'profiles[1].plugins.queueSort: Invalid value: {"Enabled":[{"Name":"Other","Weight":0}],"Disabled":null}: '
            "must be the same for all profiles"
        ],
    ),
    (
        "queueSort args differ between profiles",
        _cfg(
            profiles=[
                {
                    "schedulerName": "a",
                    "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}},
                    "pluginConfig": [{"name": "PrioritySort", "args": {"x": 1}}],
                },
                {
                    "schedulerName": "b",
                    "plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}},
                    "pluginConfig": [{"name": "PrioritySort", "args": {"x": 2}}],
                },
            ]
        ),
        ['profiles[1].pluginConfig.args: Invalid value: {"x":2}: queueSort must be the same for all profiles'],
    ),
    (
        "two queueSort plugins enabled in the first profile",
        _cfg(profiles=[{"plugins": {"queueSort": {"enabled": [{"name": "A"}, {"name": "B"}]}}}]),
        ["profiles[0].plugins.queueSort.Enabled: Invalid value: 2: only one queue sort plugin can be enabled"],
    ),
    (
        "workload scheduling: percentageOfPlacementsToScore is refused (gate off in v1.37)",
        _cfg(percentageOfPlacementsToScore=50),
        [f"percentageOfPlacementsToScore: {WORKLOAD}"],
    ),
    (
        "workload scheduling: placement extension points are refused",
        _cfg(profiles=[{"plugins": {"placementGenerate": {"enabled": [{"name": "TopologyPlacementGenerator"}]}}}]),
        [f"profiles[0].plugins.placementGenerate: {WORKLOAD}"],
    ),
    (
        "every problem is reported, in upstream's order",
        _cfg(
            parallelism=-1,
            percentageOfNodesToScore=200,
            podInitialBackoffSeconds=-3,
            clientConnection={"burst": -5},
            leaderElection={"resourceLock": "configmaps"},
            profiles=[
                {"schedulerName": "x", "plugins": {"score": {"enabled": [{"name": "S", "weight": -2}]}}},
                {"schedulerName": "x", "percentageOfNodesToScore": 300},
            ],
        ),
        [
            "clientConnection.burst: Invalid value: -5: must be non-negative",
            'leaderElection.resourceLock: Invalid value: "configmaps": resourceLock value must be "leases"',
            "parallelism: Invalid value: -1: should be an integer value greater than zero",
            "profiles[0].plugins.score.enabled[0].weight: Invalid value: -2: must be in the range [1, 100]",
            "profiles[1].percentageOfNodesToScore: Invalid value: 300: not in valid range [0-100]",
            "profiles[1].schedulerName: Duplicate value: profiles[0].schedulerName",
            "percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]",
            "podInitialBackoffSeconds: Invalid value: -3: must be greater than 0",
        ],
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [(d, e) for _, d, e in INVALID], ids=[i for i, _, _ in INVALID])
def test_invalid_configurations(doc: dict[str, Any], expected: list[str]) -> None:
    assert _errors(doc) == expected


def test_table_is_large_enough() -> None:
    assert len(INVALID) >= 25


VALID: list[tuple[str, dict[str, Any]]] = [
    (
        "leader election off: its durations are not checked (component-base returns early)",
        _cfg(leaderElection={"leaderElect": False, "leaseDuration": "1s", "renewDeadline": "10s"}),
    ),
    (
        "weights at the bounds of [1, 100]",
        _cfg(
            profiles=[
                {
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "TaintToleration", "weight": 100}, {"name": "X", "weight": 1}]
                        }
                    }
                }
            ]
        ),
    ),
    (
        "zero durations and counts mean unset and are defaulted",
        _cfg(leaderElection={"leaseDuration": "0s"}, clientConnection={"qps": 0, "burst": 0}),
    ),
    ("profiles sharing the default queue sort", _cfg(profiles=[{"schedulerName": "a"}, {"schedulerName": "b"}])),
    ("enableProfiling is accepted and ignored", _cfg(enableProfiling=False, enableContentionProfiling=False)),
    ("an empty extenders list", _cfg(extenders=[])),
    (
        "disabled workload points are harmless",
        _cfg(profiles=[{"plugins": {"placementScore": {"disabled": [{"name": "*"}]}}}]),
    ),
]


@pytest.mark.parametrize("doc", [d for _, d in VALID], ids=[i for i, _ in VALID])
def test_valid_configurations(doc: dict[str, Any]) -> None:
    parse_config(doc)


def test_config_error_is_a_line_per_problem() -> None:
    err = ConfigError(["a: Required value", "b: Required value"])
    assert err.errors == ["a: Required value", "b: Required value"]
    assert str(err) == "a: Required value\nb: Required value"
