"""VolumeBinding the plugin: upstream ``scorer_test.go`` ``TestScore`` (case tables verbatim), PreFilter's
``podHasPVCs`` messages, PreScore with and without StorageCapacityScoring, Reserve/Unreserve/PreBind state
handling (``volume_binding.go``), the v1 default shape, and registration in the default profile.

The TestVolumeBinding table itself is replayed through ``kubeplane explain`` by tests/scheduler/test_conformance.py.
"""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

import pytest

from kubeplane.scheduler.config.args import default_args
from kubeplane.scheduler.config.features import DEFAULT_GATES, FeatureGates
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins import volume_binding
from kubeplane.scheduler.plugins.registry import new_in_tree_registry
from kubeplane.scheduler.plugins.resource_allocation import ShapePoint
from kubeplane.scheduler.plugins.volume_binding_scorer import StorageResource, build_scorer_function

HDD, SSD = "hdd", "ssd"
DEFAULT_SHAPE = [ShapePoint(0, 0), ShapePoint(100, 100)]  # the test's defaultShapePoint, scaled by 10
CUSTOM_SHAPE = [ShapePoint(50, 0), ShapePoint(80, 30), ShapePoint(100, 50)]


def res(*pairs: tuple[str, int]) -> dict[str, StorageResource]:
    return {cls: StorageResource(requested, 100) for cls, requested in pairs}


@pytest.mark.parametrize(
    ("name", "shape", "cases"),
    [
        ("default shape, single class", DEFAULT_SHAPE, [((0,), 0), ((30,), 30), ((50,), 50), ((100,), 100)]),
        (
            "default shape, multiple classes",
            DEFAULT_SHAPE,
            [((0, 0), 0), ((0, 30), 15), ((30, 30), 30), ((30, 60), 45), ((50, 50), 50), ((50, 100), 75),
             ((100, 100), 100)],
        ),
        (
            "custom shape, multiple classes",
            CUSTOM_SHAPE,
            [((0, 0), 0), ((0, 30), 0), ((30, 30), 0), ((30, 60), 5), ((50, 100), 25), ((90, 90), 40),
             ((100, 100), 50)],
        ),
    ],
)  # fmt: skip
def test_score(name: str, shape: list[ShapePoint], cases: list[tuple[tuple[int, ...], int]]) -> None:
    """Upstream ``TestScore``: class utilisations through the broken-linear shape, averaged (Go math.Round)."""
    scorer = build_scorer_function(shape)
    for requested, want in cases:
        classes = res(*zip((HDD, SSD), requested, strict=False))
        assert scorer(classes) == want, (name, requested)


def test_scorer_full_or_zero_capacity_is_max_utilization() -> None:
    """``buildScorerFunction``: capacity 0 or a request above it scores as utilisation 100."""
    scorer = build_scorer_function(DEFAULT_SHAPE)
    assert scorer({HDD: StorageResource(5, 0)}) == 100
    assert scorer({HDD: StorageResource(200, 100)}) == 100
    assert scorer({}) == 0


def objects(*objs: dict[str, Any]) -> Any:
    plural = {"PersistentVolumeClaim": "persistentvolumeclaims", "StorageClass": "storageclasses"}

    def list_objects(resource: str, namespace: str) -> list[dict[str, Any]]:
        return [
            o
            for o in objs
            if plural.get(o["kind"]) == resource and (not namespace or o["metadata"].get("namespace") == namespace)
        ]

    return list_objects


def claim(name: str, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "1"},
        "spec": {"storageClassName": "wait", "resources": {"requests": {"storage": "1Gi"}}},
    }
    for key, value in extra.items():
        obj.setdefault(key, {}).update(value)
    return obj


WAIT_CLASS = {"kind": "StorageClass", "metadata": {"name": "wait"}, "volumeBindingMode": "WaitForFirstConsumer"}


def pod(*volumes: dict[str, Any]) -> PodInfo:
    return PodInfo(
        {"metadata": {"name": "pod-a", "namespace": "default", "uid": "pod-a"}, "spec": {"volumes": list(volumes)}}
    )


def plugin(*objs: dict[str, Any], gates: FeatureGates = DEFAULT_GATES) -> volume_binding.VolumeBinding:
    handle = Handle(list_objects=objects(*objs), extra={"feature_gates": gates})
    return volume_binding.new(default_args("VolumeBinding"), handle)


PVC_VOL = {"name": "data", "persistentVolumeClaim": {"claimName": "pvc-a"}}
EPH_VOL = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}


@pytest.mark.parametrize(
    ("name", "objs", "volume", "reason"),
    [
        ("PVC does not exist", [], PVC_VOL, 'persistentvolumeclaim "pvc-a" not found'),
        (
            "generic ephemeral volume's PVC not created yet",
            [],
            EPH_VOL,
            'waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-scratch"',
        ),
        (
            "pv not found claim lost",
            [claim("pvc-a", spec={"volumeName": "pv-a"}, status={"phase": "Lost"})],
            PVC_VOL,
            'persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',
        ),
        (
            "claim being deleted",
            [claim("pvc-a", metadata={"deletionTimestamp": "2026-01-01T00:00:00Z"})],
            PVC_VOL,
            'persistentvolumeclaim "pvc-a" is being deleted',
        ),
        (
            "ephemeral claim not owned by the pod",
            [claim("pod-a-scratch")],
            EPH_VOL,
            "PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)",
        ),
    ],
)
def test_pre_filter_rejects_unusable_claims(name: str, objs: list[Any], volume: Any, reason: str) -> None:
    """Upstream ``podHasPVCs``: UnschedulableAndUnresolvable with the error's message."""
    _, status = plugin(WAIT_CLASS, *objs).pre_filter(CycleState(), pod(volume), [])
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE, name
    assert status.reasons == (reason,)


def test_pre_filter_skip_and_pre_score_with_and_without_capacity_scoring() -> None:
    """Upstream: PreFilter skips a pod without PVCs; PreScore runs with StorageCapacityScoring (even without
    static bindings) and skips without it (no scorer)."""
    state = CycleState()
    _, status = plugin().pre_filter(state, pod({"name": "e", "emptyDir": {}}), [])
    assert status is not None
    assert status.code == Code.SKIP
    assert plugin().pre_score(state, pod(), []) is None
    off = FeatureGates(MappingProxyType({**DEFAULT_GATES, "StorageCapacityScoring": False}))
    status = plugin(gates=off).pre_score(state, pod(), [])
    assert status is not None
    assert status.code == Code.SKIP


def test_filter_reserve_unreserve_and_pre_bind_state() -> None:
    """Filter records the node's PodVolumes; Reserve assumes the selected-node on the PVC and Unreserve reverts
    it; PreBind without volumes for the node is upstream's "no pod volumes found for node" error, and with every
    claim bound it does nothing."""
    storage = {**WAIT_CLASS, "provisioner": "csi.example.com"}
    pvc = claim("pvc-a")
    pl = plugin(storage, pvc)
    state = CycleState()
    _, status = pl.pre_filter(state, pod(PVC_VOL), [])
    assert status is None
    node = NodeInfo({"metadata": {"name": "node-a", "labels": {}}})
    assert pl.filter(state, pod(PVC_VOL), node) is None
    data = state.read(volume_binding.STATE_KEY)
    assert [p.pvc for p in data.pod_volumes_by_node["node-a"].dynamic_provisions] == [pvc]
    assert pl.reserve(state, pod(PVC_VOL), "node-a") is None
    assumed = pl.binder.pvc_cache.get("default/pvc-a")
    assert assumed["metadata"]["annotations"] == {"volume.kubernetes.io/selected-node": "node-a"}
    pl.unreserve(state, pod(PVC_VOL), "node-a")
    assert pl.binder.pvc_cache.get("default/pvc-a") is pvc
    assert state.read(volume_binding.STATE_KEY).clone() is data  # shared by every copy of the state


async def test_pre_bind_errors_and_all_bound() -> None:
    pl = plugin()
    state = CycleState()
    state.write(volume_binding.STATE_KEY, volume_binding.StateData())
    status = await pl.pre_bind(state, pod(), "node-a")
    assert status is not None
    assert status.code == Code.ERROR
    assert status.reasons == ('no pod volumes found for node "node-a"',)
    state.write(volume_binding.STATE_KEY, volume_binding.StateData(all_bound=True))
    assert await pl.pre_bind(state, pod(), "node-a") is None
    status = await pl.pre_bind(CycleState(), pod(), "node-a")
    assert status is not None
    assert status.code == Code.ERROR


def test_default_args_shape_prefers_free_capacity() -> None:
    """v1 ``SetDefaults_VolumeBindingArgs`` with StorageCapacityScoring on: bindTimeoutSeconds 600 and the shape
    [{0, 10}, {100, 0}] (scaled to 100 .. 0): an empty class scores 100, a full one 0."""
    args = default_args("VolumeBinding")
    assert args == {
        "bindTimeoutSeconds": 600,
        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
    }
    pl = plugin()
    assert pl._scorer is not None
    assert pl._scorer({HDD: StorageResource(0, 100)}) == 100
    assert pl._scorer({HDD: StorageResource(100, 100)}) == 0
    assert pl.binder.bind_timeout == 600


def test_registered_in_tree() -> None:
    """One registry row puts VolumeBinding into the default profile (which already names it)."""
    assert "VolumeBinding" in new_in_tree_registry()
    copy.deepcopy(default_args("VolumeBinding"))


def test_score_vector_agrees_with_score() -> None:
    """The vector path (DESIGN decision 6) returns what Score returns per node: zeros for a pod without
    PodVolumes, the capacity score where Filter recorded dynamic provisions with a CSIStorageCapacity."""
    import numpy as np

    from kubeplane.scheduler.backend.node_table import NodeTable
    from kubeplane.scheduler.plugins.volume_binding_binder import DynamicProvision, PodVolumes

    pl = plugin()
    nodes = [NodeInfo({"metadata": {"name": n, "labels": {}}}) for n in ("node-a", "node-b", "node-c")]
    table = NodeTable(nodes)
    rows = np.arange(3, dtype=np.int64)
    state = CycleState()
    state.write(volume_binding.STATE_KEY, volume_binding.StateData())
    assert pl.score_vector(state, pod(), table, rows).tolist() == [0, 0, 0]
    pvc = claim("pvc-a")
    data = volume_binding.StateData(
        pod_volumes_by_node={
            "node-a": PodVolumes([], [DynamicProvision(pvc, {"capacity": "10Gi"})]),
            "node-b": PodVolumes([], [DynamicProvision(pvc, {"capacity": "2Gi"})]),
        }
    )
    state.write(volume_binding.STATE_KEY, data)
    per_node = [pl.score(state, pod(PVC_VOL), n)[0] for n in nodes]
    assert per_node == [90, 50, 0]  # default shape: 10% and 50% used; node-c has no PodVolumes
    assert pl.score_vector(state, pod(PVC_VOL), table, rows).tolist() == per_node


def test_feature_gates_reach_the_plugin_through_the_configuration() -> None:
    """kube-scheduler's ``--feature-gates`` (``default_config(feature_gates=...)``) reach VolumeBinding through
    ``Handle.extra`` (upstream's ``feature.Features`` handed to every factory): StorageCapacityScoring off, the
    built plugin has no capacity scoring and PreScore skips."""
    from kubeplane.scheduler.config import default_config, parse_feature_gates
    from kubeplane.scheduler.profile import build_profiles

    for value, scoring in (("StorageCapacityScoring=false", False), ("", True)):
        handle = Handle()
        config = default_config(feature_gates=parse_feature_gates(value or None))
        fwk = build_profiles(config, handle)["default-scheduler"]
        vb = fwk.plugins["VolumeBinding"]
        assert isinstance(vb, volume_binding.VolumeBinding)
        assert vb._capacity_scoring is scoring
        status = vb.pre_score(CycleState(), pod(), [])
        assert (status is not None and status.code == Code.SKIP) is not scoring


def test_pre_bind_pre_flight_skips_when_all_bound_and_succeeds_with_volumes_to_bind() -> None:
    """Upstream ``PreBindPreFlight``: Skip once Reserve found every claim bound (or no PVC), the PodVolumes' node
    missing is the "no pod volumes found" error, else Success (PreBind has work: the scheduler nominates)."""
    storage = {**WAIT_CLASS, "provisioner": "csi.example.com"}
    pl = plugin(storage, claim("pvc-a"))
    state = CycleState()
    assert pl.pre_filter(state, pod(PVC_VOL), [])[1] is None
    assert pl.filter(state, pod(PVC_VOL), NodeInfo({"metadata": {"name": "node-a", "labels": {}}})) is None
    assert pl.reserve(state, pod(PVC_VOL), "node-a") is None
    assert pl.pre_bind_pre_flight(state, pod(PVC_VOL), "node-a") is None
    status = pl.pre_bind_pre_flight(state, pod(PVC_VOL), "node-b")
    assert status is not None
    assert (status.code, status.reasons) == (Code.ERROR, ('no pod volumes found for node "node-b"',))

    no_pvc = CycleState()
    assert pl.pre_filter(no_pvc, pod(), [])[1].code == Code.SKIP  # type: ignore[union-attr]
    assert pl.reserve(no_pvc, pod(), "node-a") is None
    skipped = pl.pre_bind_pre_flight(no_pvc, pod(), "node-a")
    assert skipped is not None
    assert skipped.code == Code.SKIP
    missing = pl.pre_bind_pre_flight(CycleState(), pod(), "node-a")
    assert missing is not None
    assert missing.code == Code.ERROR
