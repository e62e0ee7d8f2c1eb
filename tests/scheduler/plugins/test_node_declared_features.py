"""NodeDeclaredFeatures against upstream's nodedeclaredfeatures_test.go (v1.37: TestPreFilter, TestFilter,
TestEnqueueExtensionsNodeUpdate, TestIsSchedulableAfterTargetPodUpdate, TestEventsToRegister) with mock features
in place of ndftesting.MockFeature, and the real registry's inference (component-helpers' feature tests)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kubeplane.api.nodedeclaredfeatures import (
    DEFAULT_FRAMEWORK,
    Feature,
    Framework,
    NodeConfiguration,
    kubelet_declared_features,
)
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import (
    ActionType,
    Code,
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    PreFilterPlugin,
    QueueingHint,
)
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import node_declared_features
from kubeplane.scheduler.plugins.node_declared_features import (
    ERR_REASON_UNSATISFIED_REQUIREMENTS,
    PRE_FILTER_STATE_KEY,
    NodeDeclaredFeatures,
)

V135 = (1, 35, 0)


def mock(name: str, infer: bool | Callable[[Mapping[str, Any]], bool], max_version: str = "") -> Feature:
    """``createMockFeature``: a feature that infers ``infer`` for every pod."""
    fn = infer if callable(infer) else (lambda _spec, value=infer: value)
    parsed = tuple(int(p) for p in max_version.split(".")) if max_version else None
    return Feature(name, name, fn, max_version=parsed)  # type: ignore[arg-type]


def pod(name: str = "test-pod", uid: str = "123", **spec: Any) -> PodInfo:
    return PodInfo({"metadata": {"name": name, "namespace": "default", "uid": uid}, "spec": {"containers": [], **spec}})


def node(name: str = "node-1", declared: list[str] | None = None) -> dict[str, Any]:
    status = {} if declared is None else {"declaredFeatures": declared}
    return {"metadata": {"name": name}, "status": status}


@pytest.mark.parametrize(
    ("case", "enabled", "features", "version", "code", "reqs"),
    [
        ("plugin disabled", False, [mock("TestFeature1", True), mock("TestFeature2", False)], V135, Code.SKIP, None),
        (
            "Pod with feature requirements",
            True,
            [mock("TestFeature1", True), mock("TestFeature2", False)],
            V135,
            None,
            ["TestFeature1"],
        ),
        (
            "Pod with multiple feature requirements",
            True,
            [mock("TestFeature1", True, "1.38.0"), mock("TestFeature2", True, "1.38.0")],
            V135,
            None,
            ["TestFeature1", "TestFeature2"],
        ),
        (
            "Pod with no requirements",
            True,
            [mock("TestFeature1", False), mock("TestFeature2", False)],
            V135,
            Code.SKIP,
            None,
        ),
        (
            "Feature not required, version > MaxVersion",
            True,
            [mock("TestFeature1", True, "1.33.0"), mock("TestFeature2", False)],
            (1, 34, 0),
            Code.SKIP,
            None,
        ),
    ],
)
def test_pre_filter(
    case: str,
    enabled: bool,
    features: list[Feature],
    version: tuple[int, int, int],
    code: Code | None,
    reqs: list[str] | None,
) -> None:
    """TestPreFilter."""
    framework = Framework(features)
    plugin = NodeDeclaredFeatures(framework=framework, version=version, enabled=enabled)
    state = CycleState()
    result, status = plugin.pre_filter(state, pod(), [])
    assert result is None
    assert (status.code if status is not None else None) == code, case
    stored = state.get(PRE_FILTER_STATE_KEY)
    if reqs is None:
        assert stored is None
    else:
        assert framework.unmap(stored.reqs) == reqs


FILTER_FRAMEWORK = Framework([mock("FeatureA", False), mock("FeatureB", False), mock("FeatureC", False)])


@pytest.mark.parametrize(
    ("case", "enabled", "declared", "reqs", "code"),
    [
        ("plugin disabled", False, ["FeatureA", "FeatureB"], None, None),
        ("Node matches requirements", True, ["FeatureA", "FeatureB"], ["FeatureA"], None),
        ("Node does not match requirements", True, ["FeatureB"], ["FeatureA"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        (
            "Node with multiple features, pod requires subset",
            True,
            ["FeatureA", "FeatureB", "FeatureC"],
            ["FeatureA", "FeatureC"],
            None,
        ),
        ("Node has no declared features", True, None, ["FeatureA"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        (
            "Node with some but not all required features",
            True,
            ["FeatureA"],
            ["FeatureA", "FeatureB"],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ),
        ("Error getting pre-filter state", True, None, None, Code.ERROR),
    ],
)
def test_filter(
    case: str, enabled: bool, declared: list[str] | None, reqs: list[str] | None, code: Code | None
) -> None:
    """TestFilter (upstream's "subset" case leaves pluginEnabled false: its expectation, success, holds either way;
    here it runs enabled so the subset check is exercised)."""
    plugin = NodeDeclaredFeatures(framework=FILTER_FRAMEWORK, version=V135, enabled=enabled)
    state = CycleState()
    if reqs is not None:
        state.write(PRE_FILTER_STATE_KEY, node_declared_features._PreFilterState(FILTER_FRAMEWORK.try_map(reqs)))
    status = plugin.filter(state, pod(), NodeInfo(node(declared=declared)))
    assert (status.code if status is not None else None) == code, case
    if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        assert status is not None
        assert status.reasons == (ERR_REASON_UNSATISFIED_REQUIREMENTS,)
    if code is Code.ERROR:
        assert status is not None
        assert status.reasons == (f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found',)


@pytest.mark.parametrize(
    ("case", "old", "new", "hint"),
    [
        ("Node Add with feature", None, node(declared=["FeatureA"]), QueueingHint.QUEUE),
        ("Node Update (Features Added)", node(), node(declared=["FeatureA"]), QueueingHint.QUEUE),
        (
            "Node Update (Features Unchanged)",
            node(declared=["FeatureA"]),
            node(declared=["FeatureA"]),
            QueueingHint.QUEUE_SKIP,
        ),
    ],
)
def test_enqueue_extensions_node_update(case: str, old: Any, new: Any, hint: QueueingHint) -> None:
    """TestEnqueueExtensionsNodeUpdate."""
    plugin = NodeDeclaredFeatures(framework=Framework([]), version=V135)
    assert plugin.is_schedulable_after_node_change(pod(), old, new) is hint, case


def _flipping(values: list[bool]) -> Callable[[Mapping[str, Any]], bool]:
    """upstream's setupMock: successive InferForScheduling calls answer ``values`` in turn."""
    answers = iter(values)
    return lambda _spec: next(answers)


@pytest.mark.parametrize(
    ("case", "infer", "version", "hint"),
    [
        ("Pod Update adds requirement", [False, True], V135, QueueingHint.QUEUE),
        ("Pod Update removes requirement", [True, False], V135, QueueingHint.QUEUE),
        ("Pod Update with no change in requirements", [False, False], V135, QueueingHint.QUEUE_SKIP),
        ("Infer returns error", [True, True], None, QueueingHint.QUEUE),
    ],
)
def test_is_schedulable_after_target_pod_update(
    case: str, infer: list[bool], version: tuple[int, int, int] | None, hint: QueueingHint
) -> None:
    """TestIsSchedulableAfterTargetPodUpdate (the version-nil case: "target version cannot be nil" -> Queue)."""
    plugin = NodeDeclaredFeatures(framework=Framework([mock("TestFeature", _flipping(infer))]), version=version)
    old, new = pod().pod, {**pod().pod, "metadata": {**pod().pod["metadata"], "labels": {"foo": "bar"}}}
    assert plugin.is_schedulable_after_pod_update(pod(), old, new) is hint, case
    with pytest.raises(ValueError, match="target version cannot be nil"):
        Framework([]).infer_for_pod_scheduling({}, None)


def test_other_pods_updates_are_skipped() -> None:
    """TargetPod: only the pod's own update can change its requirements."""
    plugin = NodeDeclaredFeatures()
    assert (
        plugin.is_schedulable_after_pod_update(pod(), pod(uid="other").pod, pod(uid="other").pod)
        is QueueingHint.QUEUE_SKIP
    )


@pytest.mark.parametrize(("enabled", "count"), [(False, 0), (True, 2)])
def test_events_to_register(enabled: bool, count: int) -> None:
    """TestEventsToRegister, plus the registered events themselves."""
    events = NodeDeclaredFeatures(enabled=enabled).events_to_register()
    assert len(events) == count
    if enabled:
        assert events[0].event.resource == "Node"
        assert events[0].event.action_type == ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURES


def test_deferred_resize_is_skipped() -> None:
    """TestNodeDeclaredFeatures_DeferredResizeSkipped: with InPlacePodVerticalScalingSchedulerPreemption on."""
    plugin = NodeDeclaredFeatures(skip_deferred_resize=True)
    deferred = PodInfo(
        {
            "metadata": {"name": "p", "uid": "p"},
            "spec": {"containers": [{"name": "c", "restartPolicyRules": [{"action": "RestartAllContainers"}]}]},
            "status": {"conditions": [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}]},
        }
    )
    _, status = plugin.pre_filter(CycleState(), deferred, [])
    assert status is not None
    assert status.code is Code.SKIP


def test_registered_plugin_and_real_inference() -> None:
    """The factory (default gates: enabled) and component-helpers' inference: restartallcontainers,
    usernamespaceshostnetwork, volumebindmountoptions; the v1.37 kubelet's declared features."""
    plugin = node_declared_features.new({}, Handle())
    assert isinstance(plugin, PreFilterPlugin)
    assert isinstance(plugin, FilterPlugin)
    assert isinstance(plugin, EnqueueExtensions)
    restart = pod(containers=[{"name": "c", "restartPolicyRules": [{"action": "RestartAllContainers"}]}])
    userns = pod(hostNetwork=True, hostUsers=False)
    bind = pod(
        initContainers=[{"name": "i", "volumeMounts": [{"name": "v", "mountPath": "/v", "bindMountOptions": ["ro"]}]}]
    )
    for info, name in (
        (restart, "RestartAllContainersOnContainerExits"),
        (userns, "UserNamespacesHostNetworkSupport"),
        (bind, "VolumeBindMountOptions"),
    ):
        state = CycleState()
        _, status = plugin.pre_filter(state, info, [])
        assert status is None
        assert DEFAULT_FRAMEWORK.unmap(state.read(PRE_FILTER_STATE_KEY).reqs) == [name]
    _, status = plugin.pre_filter(CycleState(), pod(hostNetwork=True), [])
    assert status is not None
    assert status.code is Code.SKIP
    declared = kubelet_declared_features()
    assert declared == [
        "ExtendWebSocketsToKubelet",
        "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingInitContainers",
        "RestartAllContainersOnContainerExits",
    ]
    state = CycleState()
    plugin.pre_filter(state, restart, [])
    assert plugin.filter(state, restart, NodeInfo(node(declared=declared))) is None
    state = CycleState()
    plugin.pre_filter(state, userns, [])
    blocked = plugin.filter(state, userns, NodeInfo(node(declared=declared)))
    assert blocked is not None
    assert blocked.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    runtime = NodeConfiguration({"UserNamespacesHostNetworkSupport": True}, user_namespaces_host_network=True)
    assert DEFAULT_FRAMEWORK.discover_node_features(runtime) == ["UserNamespacesHostNetworkSupport"]
    assert DEFAULT_FRAMEWORK.discover_node_features(NodeConfiguration({"UserNamespacesHostNetworkSupport": True})) == []
