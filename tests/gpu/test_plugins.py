"""The GPU scheduler plugins: GpuShare's filter reasons, device reservation of assumed pods, the policies' device
choices (BestFit packs shares, FGD takes the device the pure function picks), the typed args, and a full
Scheduler run over the in-process API server that annotates pods with distinct devices."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from kubeplane.api.validation.field import new_path
from kubeplane.client.local import LocalClient
from kubeplane.gpu.frag import PodType
from kubeplane.gpu.model import GPU_DEVICES_ANNOTATION, GPU_MILLI_ANNOTATION, GPU_MODEL_LABEL
from kubeplane.gpu.plugins import (
    DEVICES_STATE_KEY,
    FGD,
    BestFit,
    FGDArgs,
    GpuModelPreference,
    GpuModelPreferenceArgs,
    GpuShare,
    RandomFit,
    TargetPodTypeArgs,
    tracker_of,
)
from kubeplane.gpu.policies import Fgd, PodDemand, devices_best
from kubeplane.scheduler.config import parse_config
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState, NodeScore, Status
from kubeplane.scheduler.framework.plugin_args import decode_args
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo
from kubeplane.scheduler.scheduler import Scheduler

Obj = dict[str, Any]
ARGS = new_path("args")


def node(name: str, gpus: int = 0, model: str = "A100", cpu: str = "64") -> Obj:
    allocatable = {"cpu": cpu, "memory": "256Gi", "pods": "110"}
    labels = {"kubernetes.io/hostname": name}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
        labels[GPU_MODEL_LABEL] = model
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": allocatable, "allocatable": allocatable},
    }


def pod(
    name: str,
    *,
    milli: int | None = None,
    whole: int = 0,
    devices: str | None = None,
    node_name: str = "",
    cpu: str = "1",
    models: Sequence[str] | None = None,
    bad_milli: str | None = None,
) -> Obj:
    annotations: dict[str, str] = {}
    if milli is not None:
        annotations[GPU_MILLI_ANNOTATION] = str(milli)
    if bad_milli is not None:
        annotations[GPU_MILLI_ANNOTATION] = bad_milli
    if devices is not None:
        annotations[GPU_DEVICES_ANNOTATION] = devices
    resources: Obj = {"requests": {"cpu": cpu}}
    if whole:
        resources["limits"] = {"nvidia.com/gpu": str(whole)}
        resources["requests"]["nvidia.com/gpu"] = str(whole)  # the API server defaults requests from limits
    spec: Obj = {"containers": [{"name": "c", "image": "x", "resources": resources}]}
    if node_name:
        spec["nodeName"] = node_name
    if models is not None:
        term = {"matchExpressions": [{"key": GPU_MODEL_LABEL, "operator": "In", "values": list(models)}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "annotations": annotations},
        "spec": spec,
    }


class Lister:
    """A snapshot lister over NodeInfos (what the scheduler's Snapshot gives the handle)."""

    def __init__(self, *nodes: NodeInfo) -> None:
        self.nodes = {ni.name: ni for ni in nodes}

    def list(self) -> Sequence[NodeInfo]:
        return list(self.nodes.values())

    def get(self, name: str) -> NodeInfo | None:
        return self.nodes.get(name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return ()

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return ()


def info(n: Obj, *pods: Obj) -> NodeInfo:
    return NodeInfo(n, [PodInfo(p) for p in pods])


def handle_for(*nodes: NodeInfo) -> Handle:
    return Handle(snapshot_lister=Lister(*nodes), rng=random.Random(7))


def filter_status(plugin: GpuShare, p: Obj, ni: NodeInfo) -> Status | None:
    state = CycleState()
    _, status = plugin.pre_filter(state, PodInfo(p), [ni])
    assert status is None
    return plugin.filter(state, PodInfo(p), ni)


# --- PreFilter / Filter ---------------------------------------------------------------------------------------


def test_pre_filter_skips_gpu_less_pods_and_rejects_malformed_requests() -> None:
    plugin = GpuShare({}, Handle())
    _, status = plugin.pre_filter(CycleState(), PodInfo(pod("cpu")), [])
    assert status is not None
    assert status.code == Code.SKIP
    _, status = plugin.pre_filter(CycleState(), PodInfo(pod("bad", bad_milli="1200")), [])
    assert status is not None
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.reasons == ("annotation gpu.kubeplane.io/milli: 1200 must be between 1 and 999",)


def test_filter_reasons() -> None:
    plugin = GpuShare({}, Handle())
    cpu_node = info(node("cpu"))
    busy = info(node("busy", gpus=2), pod("a", milli=700, devices="0"), pod("b", milli=600, devices="1"))
    v100 = info(node("v100", gpus=1, model="V100M32"))

    status = filter_status(plugin, pod("p", milli=460), cpu_node)
    assert status == Status.unresolvable("node(s) had no GPU")
    status = filter_status(plugin, pod("p", milli=460, models=["A100", "H100"]), v100)
    assert status == Status.unresolvable("node(s) had no GPU of model A100 or H100")
    status = filter_status(plugin, pod("p", milli=460), busy)
    assert status == Status.unschedulable("node(s) had no GPU with 460 milli free")
    assert filter_status(plugin, pod("p", milli=400), busy) is None
    status = filter_status(plugin, pod("p", whole=1), busy)
    assert status == Status.unschedulable("node(s) had no free GPU")
    status = filter_status(plugin, pod("p", whole=2), info(node("one", gpus=2), pod("a", milli=10, devices="1")))
    assert status == Status.unschedulable("node(s) had fewer than 2 free GPUs")
    status = filter_status(plugin, pod("p", whole=4), busy)
    assert status == Status.unresolvable("node(s) had fewer than 4 GPUs")
    assert filter_status(plugin, pod("p", whole=1, models=["V100M32"]), v100) is None


def test_pods_without_devices_are_placed_first_fit_in_pod_order() -> None:
    plugin = GpuShare({}, Handle())
    ni = info(node("n", gpus=2), pod("a", milli=600), pod("b", milli=600), pod("c", milli=300))
    assert plugin.tracker.node_state(ni).idle == (100, 400)


def test_state_is_cached_per_generation_and_follows_pod_changes() -> None:
    plugin = GpuShare({}, Handle())
    ni = info(node("n", gpus=1))
    first = plugin.tracker.node_state(ni)
    assert plugin.tracker.node_state(ni) is first
    ni.add_pod(PodInfo(pod("a", milli=600, devices="0")))
    assert plugin.tracker.node_state(ni).idle == (400,)
    ni.remove_pod(PodInfo(pod("a")))
    assert plugin.tracker.node_state(ni).idle == (1000,)


# --- Reserve / Unreserve / PreBind --------------------------------------------------------------------------------


def test_reserved_devices_hold_for_the_assumed_pod_until_unreserve() -> None:
    ni = info(node("n", gpus=2), pod("a", milli=300, devices="1"))
    handle = handle_for(ni)
    plugin = GpuShare({}, handle)
    incoming = pod("p", milli=600)
    state = CycleState()
    plugin.pre_filter(state, PodInfo(incoming), [ni])
    assert plugin.reserve(state, PodInfo(incoming), "n") is None
    # best fit: device 1 (700 free) is tighter than device 0 (1000 free)
    assert plugin.tracker.reserved("uid-p") == ("n", (1,))
    # The next cycle's snapshot holds the assumed pod without its annotation: it uses the reserved device, not
    # first fit (which would be device 0).
    assumed = PodInfo(incoming).with_node_name("n")
    ni.add_pod(assumed)
    assert plugin.tracker.node_state(ni).idle == (1000, 100)
    plugin.unreserve(state, assumed, "n")
    plugin.unreserve(state, assumed, "n")  # idempotent
    assert plugin.tracker.reserved("uid-p") is None
    assert plugin.tracker.node_state(ni).idle == (400, 700)


def test_reserve_fails_when_nothing_fits_and_ignores_gpu_less_pods() -> None:
    ni = info(node("n", gpus=1), pod("a", milli=800, devices="0"))
    plugin = GpuShare({}, handle_for(ni))
    status = plugin.reserve(CycleState(), PodInfo(pod("p", milli=300)), "n")
    assert status == Status.unschedulable("node(s) had no GPU with 300 milli free")
    assert plugin.reserve(CycleState(), PodInfo(pod("cpu")), "n") is None
    assert plugin.tracker.reservations == {}


def test_reservations_go_once_the_snapshot_shows_the_annotation() -> None:
    ni = info(node("n", gpus=2))
    handle = handle_for(ni)
    plugin = GpuShare({}, handle)
    incoming = pod("p", milli=600)
    plugin.pre_filter(CycleState(), PodInfo(incoming), [ni])
    plugin.reserve(CycleState(), PodInfo(incoming), "n")
    assumed = PodInfo(incoming).with_node_name("n")
    ni.add_pod(assumed)
    plugin.pre_filter(CycleState(), PodInfo(pod("q", milli=1)), [ni])
    assert plugin.tracker.reserved("uid-p") is not None  # still unannotated in the snapshot
    ni.remove_pod(assumed)
    bound = pod("p", milli=600, devices="0", node_name="n")
    ni.add_pod(PodInfo(bound))
    plugin.pre_filter(CycleState(), PodInfo(pod("q", milli=1)), [ni])
    assert plugin.tracker.reserved("uid-p") is None
    assert plugin.tracker.node_state(ni).idle == (400, 1000)


def test_the_tracker_is_shared_by_the_profiles_of_one_scheduler() -> None:
    handle = Handle()
    assert tracker_of(handle) is tracker_of(Handle(extra=handle.extra))
    assert tracker_of(handle) is not tracker_of(Handle())


class FakeClient:
    def __init__(self) -> None:
        self.patches: list[tuple[str, str | None, Any]] = []

    def resource(self, name: str) -> str:
        return name

    async def patch(
        self,
        resource: str,
        name: str,
        patch: Any,
        *,
        patch_type: Any = None,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Obj:
        assert subresource == "status"  # system:kube-scheduler may patch pods/status, not the pod itself
        self.patches.append((name, namespace, patch))
        return {}


async def test_pre_bind_patches_the_annotation_once() -> None:
    ni = info(node("n", gpus=4))
    client = FakeClient()
    handle = Handle(client=client, snapshot_lister=Lister(ni))  # type: ignore[arg-type]
    plugin = GpuShare({}, handle)
    incoming = pod("p", whole=2)
    state = CycleState()
    plugin.pre_filter(state, PodInfo(incoming), [ni])
    assert plugin.reserve(state, PodInfo(incoming), "n") is None
    assert await plugin.pre_bind(state, PodInfo(incoming), "n") is None
    assert client.patches == [("p", "default", {"metadata": {"annotations": {GPU_DEVICES_ANNOTATION: "0,1"}}})]
    annotated = pod("p", whole=2, devices="0,1")
    assert await plugin.pre_bind(state, PodInfo(annotated), "n") is None
    assert await plugin.pre_bind(state, PodInfo(pod("cpu")), "n") is None
    assert len(client.patches) == 1


def test_pre_bind_pre_flight_succeeds_only_with_an_annotation_to_write() -> None:
    """PreBindPreFlight (NominatedNodeNameForExpectation): Success while the reserved devices are not on the pod
    yet, Skip once they are, for a GPU-less pod and on another node -- so PreBind runs exactly when it writes."""
    ni = info(node("n", gpus=4))
    plugin = GpuShare({}, Handle(client=FakeClient(), snapshot_lister=Lister(ni)))  # type: ignore[arg-type]
    incoming = pod("p", whole=2)
    state = CycleState()
    plugin.pre_filter(state, PodInfo(incoming), [ni])
    assert plugin.reserve(state, PodInfo(incoming), "n") is None
    assert plugin.pre_bind_pre_flight(state, PodInfo(incoming), "n") is None
    for other, on in ((pod("p", whole=2, devices="0,1"), "n"), (incoming, "m"), (pod("cpu"), "n")):
        status = plugin.pre_bind_pre_flight(state, PodInfo(other), on)
        assert status is not None
        assert status.is_skip()


# --- policies ---------------------------------------------------------------------------------------------------


def run_policy(plugin: Any, p: Obj, nodes: Sequence[NodeInfo]) -> tuple[CycleState, list[NodeScore]]:
    state = CycleState()
    assert plugin.pre_score(state, PodInfo(p), nodes) is None
    scores = [NodeScore(ni.name, plugin.score(state, PodInfo(p), ni)[0]) for ni in nodes]
    ext = plugin.score_extensions()
    if ext is not None:
        ext.normalize_score(state, PodInfo(p), scores)
    return state, scores


def test_best_fit_packs_shares_onto_one_device() -> None:
    n1 = info(node("n1", gpus=2), pod("a", milli=500, devices="0"))
    n2 = info(node("n2", gpus=2))
    handle = handle_for(n1, n2)
    share, best = GpuShare({}, handle), BestFit({}, handle)
    incoming = pod("p", milli=400)
    state, scores = run_policy(best, incoming, [n1, n2])
    assert [s.score for s in scores] == [100, 0]  # min-max normalised: the fuller node wins
    assert share.reserve(state, PodInfo(incoming), "n1") is None
    assert share.tracker.reserved("uid-p") == ("n1", (0,))  # onto the shared device, not the free one


def test_fgd_takes_the_device_the_pure_function_picks() -> None:
    workload = (
        TargetPodTypeArgs(cpu="1", weight=1, gpu_milli=500, gpu_count=1),
        TargetPodTypeArgs(cpu="1000m", weight=1, gpu_milli=1000, gpu_count=1),
    )
    args = FGDArgs(list(workload))
    ni = info(node("n", gpus=3), pod("a", milli=300, devices="1"), pod("b", milli=500, devices="2"))
    handle = handle_for(ni)
    share, fgd = GpuShare({}, handle), FGD(args, handle)
    incoming = pod("p", milli=200)
    state, scores = run_policy(fgd, incoming, [ni])
    view = share.tracker.node_state(ni).view(ni)
    demand = PodDemand(1000, 0, 1, 200, None)
    expected_score, expected_devices = Fgd(args.workload() or ()).evaluate(view, demand)
    assert expected_devices == (1,)
    assert devices_best(view.idle, demand) == (2,)  # FGD differs from best fit here
    assert scores[0].score == expected_score
    assert state.read(DEVICES_STATE_KEY)["n"] == (1,)
    assert share.reserve(state, PodInfo(incoming), "n") is None
    assert share.tracker.reserved("uid-p") == ("n", (1,))


def test_fgd_derives_the_target_workload_from_the_snapshot_pods() -> None:
    ni = info(node("n", gpus=2), pod("a", milli=500, devices="0", cpu="1"), pod("b", milli=500, devices="1", cpu="1"))
    handle = handle_for(ni)
    fgd = FGD(FGDArgs(), handle)
    policy = fgd.policy([ni])
    assert isinstance(policy, Fgd)
    assert policy.frag.workload == ((PodType(1000, 500, 1, None), 1.0),)
    assert fgd.policy([ni]) is policy  # cached while the pods do not change
    ni.add_pod(PodInfo(pod("c", cpu="2", node_name="n")))
    assert fgd.policy([ni]) is not policy


def test_random_fit_draws_one_feasible_node_with_the_handle_rng() -> None:
    nodes = [info(node(f"n{i}", gpus=1)) for i in range(5)]
    handle = handle_for(*nodes)
    _, scores = run_policy(RandomFit({}, handle), pod("p", milli=100), nodes)
    chosen = random.Random(7).randrange(5)
    assert [s.score for s in scores] == [100 if i == chosen else 0 for i in range(5)]


def test_gpu_model_preference() -> None:
    args, errors = decode_args(GpuModelPreferenceArgs, {"models": ["H100", "A100", "V100M32"]}, ARGS)
    assert not errors
    plugin = GpuModelPreference(args, Handle())
    nodes = [
        info(node("h", gpus=1, model="H100")),
        info(node("a", gpus=1, model="A100")),
        info(node("v", gpus=1, model="V100M32")),
        info(node("t", gpus=1, model="T4")),
        info(node("c")),
    ]
    _, scores = run_policy(plugin, pod("p", whole=1), nodes)
    assert [s.score for s in scores] == [100, 50, 0, 0, 0]
    state = CycleState()
    status = plugin.pre_score(state, PodInfo(pod("cpu")), nodes)
    assert status is not None
    assert status.code == Code.SKIP
    _, errors = decode_args(GpuModelPreferenceArgs, {"models": []}, ARGS)
    assert errors == ["args.models: Invalid value: []: must name at least one GPU model"]


def test_fgd_args_decode_and_check() -> None:
    raw = {"targetWorkload": [{"cpu": "3152m", "gpuMilli": 810, "gpuCount": 1, "models": ["A100"], "weight": 3}]}
    args, errors = decode_args(FGDArgs, raw, ARGS)
    assert not errors
    assert args.workload() == ((PodType(3152, 810, 1, frozenset({"A100"})), 1.0),)
    _, errors = decode_args(
        FGDArgs, {"targetWorkload": [{"cpu": "1", "gpuMilli": 500, "gpuCount": 2, "weight": 1}]}, ARGS
    )
    assert errors == [
        "args.targetWorkload[0].gpuCount: Invalid value: 2: must be 1 for a share of a GPU (gpuMilli below 1000)"
    ]


# --- a full Scheduler run -----------------------------------------------------------------------------------------

HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def gpu_config(policy: str) -> Obj:
    return {
        **HEADER,
        "percentageOfNodesToScore": 100,
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "GpuShare"}, {"name": policy}]},
                    "score": {"disabled": [{"name": "*"}], "enabled": [{"name": policy}]},
                },
            }
        ],
    }


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[LocalClient, list[Scheduler]]]:
    client = await LocalClient.in_memory()
    started: list[Scheduler] = []
    yield client, started
    for scheduler in started:
        await scheduler.stop()
    await client.close()


async def _annotated(client: LocalClient, name: str) -> Obj:
    for _ in range(1000):
        got = await client.get(client.resource("pods"), name, namespace="default")
        if got["spec"].get("nodeName") and GPU_DEVICES_ANNOTATION in got["metadata"].get("annotations", {}):
            return got
        await asyncio.sleep(0.01)
    raise AssertionError(f"pod {name} was not bound with its devices")


@pytest.mark.parametrize("policy", ["BestFit", "FGD"])
async def test_scheduler_annotates_distinct_devices_for_pods_that_must_not_share(
    cluster: tuple[LocalClient, list[Scheduler]], policy: str
) -> None:
    client, started = cluster
    await client.create(client.resource("nodes"), node("gpu", gpus=2))
    await client.create(client.resource("nodes"), node("cpu"))
    bound = pod("x", milli=300, devices="1", node_name="gpu")
    del bound["metadata"]["uid"]
    await client.create(client.resource("pods"), bound, namespace="default")
    scheduler = Scheduler(client, config=parse_config(gpu_config(policy)), rng=random.Random(1))
    started.append(scheduler)
    task = asyncio.ensure_future(scheduler.run())
    try:
        # Created together: the second is scheduled while the snapshot holds the first as assumed, without its
        # annotation; first fit would put it on device 0 while it got device 1 (the tighter), so only the
        # reservation keeps the two apart.
        for name in ("a", "b"):
            body = pod(name, milli=600)
            del body["metadata"]["uid"]
            await client.create(client.resource("pods"), body, namespace="default")
        a, b = await _annotated(client, "a"), await _annotated(client, "b")
        assert a["spec"]["nodeName"] == b["spec"]["nodeName"] == "gpu"
        devices = {
            a["metadata"]["annotations"][GPU_DEVICES_ANNOTATION],
            b["metadata"]["annotations"][GPU_DEVICES_ANNOTATION],
        }
        assert devices == {"0", "1"}
        body = pod("c", milli=600)
        del body["metadata"]["uid"]
        await client.create(client.resource("pods"), body, namespace="default")
        for _ in range(100):
            got = await client.get(client.resource("pods"), "c", namespace="default")
            if any(c.get("reason") == "Unschedulable" for c in got.get("status", {}).get("conditions", [])):
                break
            await asyncio.sleep(0.01)
        conditions = got.get("status", {}).get("conditions", [])
        assert not got["spec"].get("nodeName")
        assert [c["message"] for c in conditions if c.get("reason") == "Unschedulable"] == [
            "0/2 nodes are available: 1 node(s) had no GPU, 1 node(s) had no GPU with 600 milli free. "
            "no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for "
            "incoming pod, "
            "1 Preemption is not helpful for scheduling.."
        ]
    finally:
        await scheduler.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
