"""kube-scheduler's ``--feature-gates`` and the default plugins they decide.

Pins component-base ``featuregate`` (``feature_gate.go`` ``Set`` / ``unsafeSetFromMap``, ``TestFeatureGateFlag``
and ``TestFeatureGateSetFromMap`` cases: unknown key, bad bool, locked gate, AllAlpha/AllBeta, dependencies),
the v1.37 scheduler gate table (``TestSchedulerFeatureGateDependencies``: CompositePodGroup needs
GenericWorkload and TopologyAwareWorkloadScheduling), kube_features.go's ``GangScheduling: {GenericWorkload}``,
and ``pkg/scheduler/apis/config/v1/default_plugins.go`` ``applyFeatureGates`` (``TestApplyFeatureGates``-style:
the default multiPoint list per gate setting).
"""

from __future__ import annotations

import pytest

from kubeplane.scheduler.config import (
    DEFAULT_GATES,
    UPSTREAM_DEFAULT_PLUGINS,
    FeatureGateError,
    default_config,
    parse_config,
    parse_feature_gates,
)
from kubeplane.scheduler.config.plugins import default_plugins, resolve_plugins
from kubeplane.scheduler.plugins.registry import registry_for

GANG_ON = "GenericWorkload=true,GangScheduling=true"


def _names(gates: str) -> list[tuple[str, int | None]]:
    return [(p.name, p.weight) for p in default_plugins(parse_feature_gates(gates)).multi_point.enabled]


def test_v1_37_defaults() -> None:
    assert dict(DEFAULT_GATES) == {
        "CompositePodGroup": False,
        "DRAExtendedResource": True,
        "DynamicResourceAllocation": True,
        "GangScheduling": False,
        "GenericWorkload": False,
        "InPlacePodVerticalScalingSchedulerPreemption": False,
        "NodeDeclaredFeatures": True,
        "NominatedNodeNameForExpectation": True,
        "OpportunisticBatching": True,
        "SchedulerPopFromBackoffQ": True,
        "StorageCapacityScoring": True,
        "TopologyAwareWorkloadScheduling": False,
    }
    assert parse_feature_gates(None) is DEFAULT_GATES
    assert parse_feature_gates("") is DEFAULT_GATES


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        pytest.param("Foo=true", "unrecognized feature gate: Foo", id="unknown"),
        pytest.param("GenericWorkload=true,Foo=false", "unrecognized feature gate: Foo", id="unknown-after-known"),
        pytest.param(
            "GangScheduling=maybe",
            'invalid value of GangScheduling=maybe, err: strconv.ParseBool: parsing "maybe": invalid syntax',
            id="bad-bool",
        ),
        pytest.param(
            "GangScheduling=yes",
            'invalid value of GangScheduling=yes, err: strconv.ParseBool: parsing "yes": invalid syntax',
            id="yes-is-not-a-go-bool",
        ),
        pytest.param("GangScheduling", "missing bool value for GangScheduling", id="missing-value"),
        pytest.param(
            "DynamicResourceAllocation=false",
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
            id="locked-dra",
        ),
        pytest.param(
            "DRAExtendedResource=false",
            "cannot set feature gate DRAExtendedResource to false, feature is locked to true",
            id="locked-dra-extended-resource",  # kube_features.go: GA in 1.37, LockToDefault: true
        ),
        pytest.param(
            "NodeDeclaredFeatures=false",
            "cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true",
            id="locked-node-declared-features",
        ),
        pytest.param(
            "NodeDeclaredFeatures=false,DynamicResourceAllocation=false",
            "[cannot set feature gate NodeDeclaredFeatures to false, feature is locked to true, "
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true]",
            id="aggregate",
        ),
        pytest.param(
            "GangScheduling=true",
            "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
            id="gang-needs-generic-workload",
        ),
        pytest.param(
            "CompositePodGroup=true",
            "CompositePodGroup is enabled, but depends on features that are disabled: "
            "[GenericWorkload TopologyAwareWorkloadScheduling]",
            id="composite-needs-both",
        ),
        pytest.param(
            "AllBeta=true,GenericWorkload=false",
            "GangScheduling is enabled, but depends on features that are disabled: [GenericWorkload]",
            id="explicit-beats-allbeta",
        ),
    ],
)
def test_refused_flags_use_component_base_messages(flag: str, message: str) -> None:
    with pytest.raises(FeatureGateError) as err:
        parse_feature_gates(flag)
    assert str(err.value) == message


def test_accepted_spellings_blanks_and_special_gates() -> None:
    gates = parse_feature_gates(" GenericWorkload = T ,GangScheduling=1,,DynamicResourceAllocation=true")
    assert gates.enabled("GangScheduling")
    assert gates.enabled("GenericWorkload")
    assert gates.flag() == "DynamicResourceAllocation=true,GangScheduling=true,GenericWorkload=true"
    all_beta = parse_feature_gates("AllBeta=true")
    assert all_beta.enabled("GenericWorkload")
    assert all_beta.enabled("GangScheduling")
    assert not all_beta.enabled("TopologyAwareWorkloadScheduling")  # alpha
    all_alpha = parse_feature_gates("AllAlpha=true,AllBeta=true,CompositePodGroup=false")
    assert all_alpha.enabled("TopologyAwareWorkloadScheduling")
    assert not all_alpha.enabled("CompositePodGroup")
    assert parse_feature_gates("GenericWorkload=false").enabled("GenericWorkload") is False


def test_default_gates_keep_the_v1_37_list() -> None:
    assert default_plugins().multi_point.enabled == UPSTREAM_DEFAULT_PLUGINS
    assert default_plugins(DEFAULT_GATES).multi_point.enabled == UPSTREAM_DEFAULT_PLUGINS
    # GenericWorkload alone (the API) adds no plugin: GangScheduling needs its own gate.
    assert default_plugins(parse_feature_gates("GenericWorkload=true")).multi_point.enabled == UPSTREAM_DEFAULT_PLUGINS


def test_gang_gates_append_gang_scheduling_after_node_declared_features() -> None:
    assert _names(GANG_ON) == [(p.name, p.weight) for p in UPSTREAM_DEFAULT_PLUGINS] + [("GangScheduling", None)]
    assert _names(GANG_ON)[-4:] == [
        ("ImageLocality", 1),
        ("DefaultBinder", None),
        ("NodeDeclaredFeatures", None),
        ("GangScheduling", None),
    ]


def test_alpha_gates_add_their_plugins_in_apply_feature_gates_order() -> None:
    names = _names("InPlacePodVerticalScalingSchedulerPreemption=true,TopologyAwareWorkloadScheduling=true," + GANG_ON)
    assert names[-5:] == [
        ("NodeDeclaredFeatures", None),
        ("DeferredPodScheduling", None),
        ("GangScheduling", None),
        ("TopologyPlacementGenerator", None),
        ("PodGroupPodsCount", 1),
    ]


def test_parse_config_threads_the_gates_into_every_profile() -> None:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {"schedulerName": "a"},
            {"schedulerName": "b", "plugins": {"multiPoint": {"disabled": [{"name": "GangScheduling"}]}}},
        ],
    }
    gates = parse_feature_gates(GANG_ON)
    cfg = parse_config(doc, feature_gates=gates)
    assert "GangScheduling" in cfg.profiles[0].plugins.multi_point.enabled_names()
    assert "GangScheduling" not in cfg.profiles[1].plugins.multi_point.enabled_names()
    assert "GangScheduling" not in parse_config(doc).profiles[0].plugins.multi_point.enabled_names()
    on = default_config(feature_gates=gates).profiles[0]
    assert "GangScheduling" in on.plugins.multi_point.enabled_names()
    assert "GangScheduling" not in default_config().profiles[0].plugins.multi_point.enabled_names()


def test_resolved_points_of_the_gated_default_profile() -> None:
    """GangScheduling runs at PreEnqueue and Permit; gated plugins kubeplane lacks drop out without an error."""
    gates = parse_feature_gates(
        "TopologyAwareWorkloadScheduling=true,InPlacePodVerticalScalingSchedulerPreemption=true," + GANG_ON
    )
    profile = default_config(feature_gates=gates).profiles[0]
    available = registry_for(default_config()).available()
    resolved = resolve_plugins(profile, available)
    assert "GangScheduling" in resolved.names("preEnqueue")
    assert resolved.names("permit")[-1] == "GangScheduling"
    off = resolve_plugins(default_config().profiles[0], available)
    assert "GangScheduling" not in off.names("preEnqueue") + off.names("permit")
