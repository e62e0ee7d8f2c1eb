"""DeschedulerPolicy v1alpha2 loading, translated from upstream's ``TestV1alpha2ToV1alpha2``,
``TestValidateDeschedulerConfiguration`` and ``TestDecodeVersionedPolicy`` (pkg/descheduler/policyconfig_test.go,
v0.36) and the plugins' defaults tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubeplane.descheduler.args import PriorityThreshold
from kubeplane.descheduler.evictor import DefaultEvictorArgs
from kubeplane.descheduler.policy import PolicyError, load_policy, parse_policy

HEAD = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy"}


def _profile(name: str, configs: list[dict[str, Any]], **points: list[str]) -> dict[str, Any]:
    return {"name": name, "pluginConfig": configs, "plugins": {p: {"enabled": e} for p, e in points.items()}}


def test_default_evictor_is_added_first_to_filter_and_pre_eviction_filter() -> None:
    """Upstream setDefaultEvictor: a default DefaultEvictor config and its two extension points."""
    policy = parse_policy({**HEAD, "profiles": [_profile("p", [{"name": "RemoveFailedPods"}],
                                                        deschedule=["RemoveFailedPods"])]})  # fmt: skip
    [profile] = policy.profiles
    assert [c.name for c in profile.plugin_configs] == ["DefaultEvictor", "RemoveFailedPods"]
    assert profile.args_of("DefaultEvictor") == DefaultEvictorArgs()
    assert profile.enabled["filter"] == ("DefaultEvictor",)
    assert profile.enabled["preEvictionFilter"] == ("DefaultEvictor",)
    assert profile.args_of("RemoveFailedPods").min_pod_lifetime_seconds == 3600  # SetDefaults_RemoveFailedPodsArgs


def test_limits_selector_and_evictor_args_are_decoded() -> None:
    policy = parse_policy({
        **HEAD, "nodeSelector": "pool=a", "maxNoOfPodsToEvictPerNode": 5, "maxNoOfPodsToEvictPerNamespace": 6,
        "maxNoOfPodsToEvictTotal": 7, "gracePeriodSeconds": 0,
        "profiles": [_profile("p", [{"name": "DefaultEvictor", "args": {
            "nodeFit": True, "priorityThreshold": {"value": 100}, "minPodAge": "5m"}}])],
    })  # fmt: skip
    assert (policy.node_selector, policy.max_per_node, policy.max_per_namespace, policy.max_total) == (
        "pool=a",
        5,
        6,
        7,
    )
    assert policy.grace_period_seconds == 0
    args = policy.profiles[0].args_of("DefaultEvictor")
    assert (args.node_fit, args.priority_threshold, args.min_pod_age) == (True, PriorityThreshold(100), 300.0)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({**HEAD, "apiVersion": "descheduler/v1alpha1"},
         'failed decoding descheduler\'s policy config "": no kind "DeschedulerPolicy" is registered for version '
         '"descheduler/v1alpha1"'),
        ({"apiVersion": "descheduler/v1alpha2"},
         "failed decoding descheduler's policy config \"\": Object 'Kind' is missing"),
        ({**HEAD, "maxNoOfPodsToEvictPerNode": -1},
         "failed decoding descheduler's policy config \"\": json: cannot unmarshal number -1 into Go struct field "
         "DeschedulerPolicy.maxNoOfPodsToEvictPerNode of type uint"),
        ({**HEAD, "profiles": {"name": "p"}},
         "failed decoding descheduler's policy config \"\": json: cannot unmarshal object into Go struct field "
         "DeschedulerPolicy.profiles of type []v1alpha2.DeschedulerProfile"),
        ({**HEAD, "profiles": [_profile("p", [{"name": "RemoveFailedPods", "args": {"minPodLifeTimeSeconds": 1}}])]},
         'failed decoding descheduler\'s policy config "": '
         'strict decoding error: unknown field "minPodLifeTimeSeconds"'),
        ({**HEAD, "profiles": [
            _profile("RemoveFailedPods", [{"name": "RemoveFailedPods", "args": {
                "namespaces": {"include": ["test1"], "exclude": ["test1"]}}}]),
            _profile("RemovePodsViolatingTopologySpreadConstraint", [{
                "name": "RemovePodsViolatingTopologySpreadConstraint", "args": {
                    "namespaces": {"include": ["test1"], "exclude": ["test1"]}}}])]},
         "[in profile RemoveFailedPods: only one of Include/Exclude namespaces can be set, in profile "
         "RemovePodsViolatingTopologySpreadConstraint: only one of Include/Exclude namespaces can be set]"),
        ({**HEAD, "profiles": [_profile("p", [{"name": "Bogus"}])]},
         "in profile p: plugin Bogus in pluginConfig not registered"),
        ({**HEAD, "profiles": [_profile("p", [{"name": "Bogus"}, {"name": "Bogus"}, {"name": "Other"}])]},
         "[in profile p: plugin Bogus in pluginConfig not registered, "
         "in profile p: plugin Other in pluginConfig not registered]"),
        ({**HEAD, "profiles": [_profile("p", [{"name": "Bogus"}]), _profile("p", [{"name": "Bogus"}])]},
         "in profile p: plugin Bogus in pluginConfig not registered"),
        ({**HEAD, "profiles": [_profile("ProfileName", [{"name": "DefaultEvictor", "args": {
            "priorityThreshold": {"value": 2000000001}}}], deschedule=["RemovePodsHavingTooManyRestarts"])]},
         "priority threshold can't be greater than 2000000000"),
        ({**HEAD, "profiles": [_profile("ProfileName", [{"name": "DefaultEvictor", "args": {
            "evictLocalStoragePods": True, "podProtections": {"defaultDisabled": ["PodsWithLocalStorage"]}}}])]},
         "in profile ProfileName: cannot use Deprecated fields alongside PodProtections.ExtraEnabled or "
         "PodProtections.DefaultDisabled"),
        ({**HEAD, "profiles": [_profile("ProfileName", [{"name": "DefaultEvictor", "args": {
            "podProtections": {"defaultDisabled": ["PodsWithPVC"]}}}])]},
         'in profile ProfileName: invalid pod protection policy in DefaultDisabled: "PodsWithPVC". Valid options '
         "are: [PodsWithLocalStorage SystemCriticalPods FailedBarePods DaemonSetPods]"),
        ({**HEAD, "profiles": [_profile("ProfileName", [{"name": "DefaultEvictor", "args": {
            "podProtections": {"extraEnabled": ["DaemonSetPods"]}}}])]},
         'in profile ProfileName: invalid pod protection policy in ExtraEnabled: "DaemonSetPods". Valid options '
         "are: [PodsWithPVC PodsWithoutPDB PodsWithResourceClaims]"),
        ({**HEAD, "profiles": [_profile("p", [{"name": "DefaultEvictor", "args": {
            "priorityThreshold": {"value": 1, "name": "x"}}}])]},
         "in profile p: priority threshold misconfigured, only one of priorityThreshold fields can be set"),
        ({**HEAD, "profiles": [_profile("p", [], deschedule=["PodLifeTime"])]},
         'unable to find "PodLifeTime" plugin config'),
        ({**HEAD, "profiles": [_profile("p", [{"name": "LowNodeUtilization", "args": {
            "thresholds": {"cpu": 10}, "targetThresholds": {"cpu": 20}}}], deschedule=["LowNodeUtilization"])]},
         'profile "p" configures deschedule extension point of non-existing plugins: map[LowNodeUtilization:{}]'),
        ({**HEAD, "profiles": [_profile("p", [{"name": "PodLifeTime"}])]},
         "in profile p: at least one filtering criterion must be specified (maxPodLifeTimeSeconds, states, "
         "conditions, or exitCodes)"),
    ],
    ids=["unregistered-version", "missing-kind", "negative-uint", "profiles-not-a-list", "strict-plugin-args",
         "errors-of-all-profiles-aggregated", "unregistered-plugin",
         "aggregate-drops-a-repeated-message", "aggregate-of-one-repeated-message-has-no-brackets",
         "priority-threshold-above-maximum",
         "deprecated-fields-with-pod-protections", "default-disabled-not-a-default", "extra-enabled-not-an-extra",
         "priority-threshold-value-and-name", "enabled-without-config", "balance-plugin-at-deschedule",
         "podlifetime-needs-a-criterion"],
)  # fmt: skip
def test_bad_policies_fail_with_upstreams_message(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(doc)
    assert str(info.value) == message


def test_pre_eviction_filter_accepts_upstreams_json_name_and_the_docs_spelling() -> None:
    for key in ("preevictionfilter", "preEvictionFilter"):
        profile = {"name": "p", "pluginConfig": [], "plugins": {key: {"enabled": ["DefaultEvictor"]}}}
        assert parse_policy({**HEAD, "profiles": [profile]}).profiles[0].enabled["preEvictionFilter"] == (
            "DefaultEvictor",
        )


def test_load_policy_from_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: []\n")
    assert load_policy(path).profiles == ()
    with pytest.raises(PolicyError, match=r'failed to read policy config file ".*missing\.yaml"'):
        load_policy(tmp_path / "missing.yaml")


def test_a_timestamp_in_a_policy_file_is_a_json_string(tmp_path: Path) -> None:
    """sigs.k8s.io/yaml over go-yaml v2 turns an unquoted date into a JSON string, so encoding/json's error names
    ``string`` (api/yamlio.py), not a Python date."""
    path = tmp_path / "policy.yaml"
    path.write_text("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: 2024-01-01\n")
    with pytest.raises(PolicyError, match="cannot unmarshal string into Go"):
        load_policy(path)
