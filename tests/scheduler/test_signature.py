"""A profile's signer (upstream framework.go ``computeBatchablePlugins`` and ``SignPod``; framework_test.go's
signature cases with the ``nosign`` plugin that does not implement SignPlugin and the ``emptysign`` one whose
SignPod returns Unschedulable), and the Scheduler's wiring of the ``OpportunisticBatching`` gate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubeplane.client.local import LocalClient
from kubeplane.scheduler.config import default_config, parse_config, parse_feature_gates
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import CycleState, Status
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.plugins.registry import new_in_tree_registry
from kubeplane.scheduler.plugins.signers import Fragments
from kubeplane.scheduler.profile import build_profiles
from kubeplane.scheduler.scheduler import Scheduler
from kubeplane.scheduler.signature import PodSigner

POD = PodInfo({"metadata": {"name": "p", "namespace": "d", "uid": "p"}, "spec": {"containers": [{"name": "c"}]}})


class NoSign:
    """A Filter plugin that does not implement SignPlugin (upstream ``testPluginNoSign``)."""

    def __init__(self, args: Mapping[str, Any], handle: Handle) -> None:
        pass

    def name(self) -> str:
        return "NoSign"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class EmptySign(NoSign):
    """SignPod returns Unschedulable (upstream ``testPluginEmptySign``)."""

    def name(self) -> str:
        return "EmptySign"

    def sign_pod(self, pod: PodInfo) -> tuple[Fragments, Status | None]:
        return [], Status.unschedulable()


class OwnSign(NoSign):
    """An out-of-tree plugin that signs by what it reads: the pod's priority."""

    def name(self) -> str:
        return "OwnSign"

    def sign_pod(self, pod: PodInfo) -> tuple[Fragments, Status | None]:
        return [("example.com/priority", pod.priority)], None


def _signer(plugin: str, gates: Mapping[str, bool] | None = None) -> PodSigner:
    registry = new_in_tree_registry()
    for cls in (NoSign, EmptySign, OwnSign):
        registry.register(cls.__name__, cls)
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "plugins": {"filter": {"enabled": [{"name": plugin}]}},
                    "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
                }
            ],
        }
    )
    fwk = build_profiles(config, Handle(), registry)["default-scheduler"]
    return PodSigner(fwk, gates)


def test_a_plugin_without_signer_disables_signatures_for_the_profile() -> None:
    signer = _signer("NoSign", {"DRAExtendedResource": False})
    assert not signer.enabled
    assert signer.unsupported == ["NoSign"]
    assert signer.sign(POD) is None


def test_a_plugin_refusing_to_sign_makes_the_pod_unsignable() -> None:
    signer = _signer("EmptySign", {"DRAExtendedResource": False})
    assert signer.enabled
    assert signer.sign(POD) is None


def test_an_out_of_tree_plugin_signs_with_its_own_fragments() -> None:
    signer = _signer("OwnSign", {"DRAExtendedResource": False})
    sig = signer.sign(POD)
    assert sig is not None
    assert '"example.com/priority":0' in sig
    other = PodInfo({**POD.pod, "spec": {"containers": [{"name": "c"}], "priority": 5}})
    assert signer.sign(other) != sig


def test_v1_37_defaults_sign_no_pod() -> None:
    """DRAExtendedResource is GA and locked on in v1.37, so NodeResourcesFit refuses every pod ("signature
    disabled when dra extended resources enabled"); the default profile's System topology spread defaults would
    refuse it too."""
    fwk = build_profiles(default_config(), Handle())["default-scheduler"]
    assert PodSigner(fwk, None).sign(POD) is None
    assert _signer("OwnSign").sign(POD) is None  # List defaulting, but DRAExtendedResource at its default


async def test_the_gate_wires_one_batch_per_profile_and_off_removes_them() -> None:
    """``--feature-gates OpportunisticBatching=false`` restores the cycle without GetNodeHint/StoreScheduleResults."""
    client = await LocalClient.in_memory()
    on = Scheduler(client, config=default_config())
    assert set(on.cycle.batches) == {"default-scheduler"}
    off = Scheduler(client, config=default_config(feature_gates=parse_feature_gates("OpportunisticBatching=false")))
    assert dict(off.cycle.batches) == {}
