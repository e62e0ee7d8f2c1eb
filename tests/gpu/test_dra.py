"""The GPU model over DRA (kubeplane.gpu.dra, dra_state): a node's GPUs from ResourceSlices, a pod's demand from its
claims or their templates, the devices an allocated claim holds; and the GPU plugins scoring a pod that asks GPUs
through a claim (issue 27: "the GPU policies can score DRA GPUs as they score extended-resource GPUs").

Shapes are resource.k8s.io/v1's (k8s.io/api resource/v1/types.go): ResourceSlice spec.{driver,nodeName,pool,devices},
DeviceRequest.exactly.{deviceClassName,allocationMode,count,selectors,capacity.requests}, firstAvailable,
AllocationResult.devices.results[].{request,driver,pool,device,consumedCapacity}; a pod's generated claim is named in
status.resourceClaimStatuses (upstream ``resourceclaim.Name``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from kubeplane.gpu.dra import (
    DraGpuSource,
    DraIndex,
    claim_usage,
    pod_claim_specs,
    pod_dra_request,
    request_of_specs,
)
from kubeplane.gpu.model import GPU_MODEL_LABEL, GpuRequest
from kubeplane.gpu.plugins import FGD, FGDArgs, GpuModelPreference, GpuModelPreferenceArgs, GpuShare, TargetPodTypeArgs
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.framework.interface import Code, CycleState
from kubeplane.scheduler.framework.types import NodeInfo, PodInfo

Obj = dict[str, Any]
DRIVER = "gpu.example.com"


def gpu_slice(node: str, count: int, model: str, memory: str = "40Gi", driver: str = DRIVER) -> Obj:
    devices = [
        {"name": f"gpu-{i}", "attributes": {"model": {"string": model}, "index": {"int": i}},
         "capacity": {"memory": {"value": memory}}}
        for i in range(count)
    ]  # fmt: skip
    return {
        "metadata": {"name": f"{node}-{driver}-abcde"},
        "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices},
    }  # fmt: skip


def gpu_class(name: str = "gpus", driver: str = DRIVER) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def claim_spec(count: int = 1, cls: str = "gpus", memory: str | None = None, model: str | None = None) -> Obj:
    exactly: Obj = {"deviceClassName": cls, "count": count}
    if memory is not None:
        exactly["capacity"] = {"requests": {"memory": memory}}
    if model is not None:
        exactly["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def claim(name: str, spec: Obj, *, results: Sequence[Obj] = (), pod_uid: str = "", ns: str = "default") -> Obj:
    out: Obj = {"metadata": {"name": name, "namespace": ns}, "spec": spec, "status": {}}
    if results:
        out["status"]["allocation"] = {"devices": {"results": list(results)}}
    if pod_uid:
        out["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": pod_uid}]
    return out


def result(node: str, device: str, **consumed: str) -> Obj:
    out: Obj = {"request": "gpu", "driver": DRIVER, "pool": node, "device": device}
    if consumed:
        out["consumedCapacity"] = dict(consumed)
    return out


def dra_pod(name: str, claim_name: str, *, node: str = "", cpu: str = "1", uid: str = "") -> Obj:
    spec: Obj = {
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one"}],
        "containers": [
            {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}, "claims": [{"name": "gpu"}]}}
        ],
    }
    if node:
        spec["nodeName"] = node
    return {
        "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}"},
        "spec": spec,
        "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim_name}]},
    }


def lookup(objects: Sequence[Obj]) -> Any:
    table = {(o["metadata"].get("namespace", "default"), o["metadata"]["name"]): o for o in objects}
    return lambda ns, name: table.get((ns, name))


# --- the model ----------------------------------------------------------------------------------------------------


def test_index_lists_each_nodes_gpus_of_the_gpu_drivers_only() -> None:
    other = gpu_slice("n1", 3, "X", driver="nic.example.com")
    index = DraIndex([gpu_slice("n2", 2, "T4", "16Gi"), gpu_slice("n1", 4, "A100"), other], [gpu_class()])
    assert (index.count("n1"), index.model("n1"), index.count("n2"), index.model("n2")) == (4, "A100", 2, "T4")
    assert index.count("n3") == 0
    assert index.position[(DRIVER, "n1", "gpu-3")] == ("n1", 3)
    assert (DRIVER, "n1", "gpu-0") in index.position
    assert ("nic.example.com", "n1", "gpu-0") not in index.position
    assert index.share_base == 40 * 2**30  # the first GPU in (driver, pool, slice) order: n1's 40Gi
    assert index.is_gpu_class("gpus")
    assert index.is_gpu_class(DRIVER)
    assert not index.is_gpu_class("nics")
    assert not DraIndex([gpu_slice("n1", 1, "A100")], [gpu_class("nics", "nic.example.com")]).is_gpu_class("nics")


def test_the_demand_of_claim_specs() -> None:
    index = DraIndex([gpu_slice("n1", 4, "A100")], [gpu_class()])
    assert request_of_specs([claim_spec(2)], index) == GpuRequest(2, 1000)
    assert request_of_specs([claim_spec(1), claim_spec(1)], index) == GpuRequest(2, 1000)
    # consumable capacity (DRAConsumableCapacity): 10Gi of a 40Gi device is a quarter of it
    assert request_of_specs([claim_spec(1, memory="10Gi")], index) == GpuRequest(1, 250)
    assert request_of_specs([claim_spec(1, model="A100")], index) == GpuRequest(1, 1000, frozenset({"A100"}))
    assert request_of_specs([claim_spec(1, cls="nics")], index) is None
    all_mode = {
        "devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpus", "allocationMode": "All"}}]}
    }
    assert request_of_specs([all_mode], index) is None
    first = {"devices": {"requests": [{"name": "g", "firstAvailable": [{"name": "a", "deviceClassName": "gpus",
                                                                          "count": 3}]}]}}  # fmt: skip
    assert request_of_specs([first], index) == GpuRequest(3, 1000)


def test_a_pods_claims_come_from_the_claim_else_its_template() -> None:
    index = DraIndex([gpu_slice("n1", 4, "A100")], [gpu_class()])
    template = {"metadata": {"name": "one", "namespace": "default"}, "spec": {"spec": claim_spec(1)}}
    p = dra_pod("p", "p-gpu-x")
    assert pod_claim_specs(p, lookup([]), lookup([template])) == [claim_spec(1)]
    assert pod_dra_request(p, index, lookup([]), lookup([template])) == GpuRequest(1, 1000)
    assert pod_dra_request(p, index, lookup([claim("p-gpu-x", claim_spec(2))])) == GpuRequest(2, 1000)
    assert pod_dra_request(p, index, lookup([])) is None
    assert pod_dra_request({"metadata": {"name": "q"}, "spec": {"containers": []}}, index, lookup([])) is None


def test_an_allocated_claim_holds_its_devices() -> None:
    index = DraIndex([gpu_slice("n1", 4, "A100")], [gpu_class()])
    whole = claim("c", claim_spec(2), results=[result("n1", "gpu-1"), result("n1", "gpu-3")])
    assert claim_usage(whole, index) == ("n1", [(GpuRequest(2, 1000), (1, 3))])
    share = claim("s", claim_spec(1, memory="10Gi"), results=[result("n1", "gpu-2", memory="10Gi")])
    assert claim_usage(share, index) == ("n1", [(GpuRequest(1, 250), (2,))])
    assert claim_usage(claim("u", claim_spec(1)), index) is None  # not allocated
    assert claim_usage(claim("o", claim_spec(1), results=[result("n9", "gpu-0")]), index) is None  # unknown device


def test_a_source_names_other_drivers_and_attributes() -> None:
    source = DraGpuSource(drivers=frozenset({"nvidia.com"}), model_attribute="productName")
    item = gpu_slice("n1", 2, "ignored", driver="nvidia.com")
    for device in item["spec"]["devices"]:
        device["attributes"]["nvidia.com/productName"] = {"string": "H100"}
    index = DraIndex([item], [], source)
    assert (index.count("n1"), index.model("n1")) == (2, "H100")
    assert index.is_gpu_class("nvidia.com")


# --- the plugins ----------------------------------------------------------------------------------------------------


class Lister:
    def __init__(self, *nodes: NodeInfo) -> None:
        self.nodes = {n.name: n for n in nodes}

    def list(self) -> Sequence[NodeInfo]:
        return list(self.nodes.values())

    def get(self, name: str) -> NodeInfo | None:
        return self.nodes.get(name)

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]:
        return ()

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]:
        return ()


def bare_node(name: str, cpu: str = "64", labels: Mapping[str, str] | None = None) -> Obj:
    allocatable = {"cpu": cpu, "memory": "256Gi", "pods": "110"}
    return {"metadata": {"name": name, "labels": dict(labels or {})},
            "status": {"capacity": allocatable, "allocatable": allocatable}}  # fmt: skip


def handle(objects: Mapping[str, Sequence[Obj]], *nodes: NodeInfo) -> Handle:
    return Handle(
        snapshot_lister=Lister(*nodes),
        rng=random.Random(7),
        list_objects=lambda resource, ns: [o for o in objects.get(resource, ()) if not ns or o["metadata"].get(
            "namespace") == ns],
    )  # fmt: skip


def one_gpu_workload() -> FGDArgs:
    return FGDArgs([TargetPodTypeArgs(cpu="1", weight=1.0, gpu_milli=1000, gpu_count=1),
                    TargetPodTypeArgs(cpu="1", weight=1.0, gpu_milli=1000, gpu_count=2)])  # fmt: skip


def test_fgd_scores_dra_gpu_nodes_from_the_claims_allocated_devices() -> None:
    """A node with 3 of 4 GPUs taken by an allocated claim vs an idle 4-GPU node, for a 1-GPU pod whose claim is not
    allocated yet: FGD prefers the node where the last GPU is otherwise a fragment for the 2-GPU type -- the same
    order as with extended resources (FGD-EXPERIMENT.md §2.2). The running pod's claim holds devices 0..2."""
    busy_pod = dra_pod("busy", "busy-gpu", node="n1", uid="u-busy")
    held = claim("busy-gpu", claim_spec(3), pod_uid="u-busy",
                 results=[result("n1", "gpu-0"), result("n1", "gpu-1"), result("n1", "gpu-2")])  # fmt: skip
    new = dra_pod("new", "new-gpu")
    objects = {
        "resourceslices": [gpu_slice("n1", 4, "A100"), gpu_slice("n2", 4, "A100")],
        "deviceclasses": [gpu_class()],
        "resourceclaims": [held, claim("new-gpu", claim_spec(1))],
    }
    n1 = NodeInfo(bare_node("n1"), [PodInfo(busy_pod)])
    n2 = NodeInfo(bare_node("n2"), [])
    h = handle(objects, n1, n2)
    fgd = FGD(one_gpu_workload(), h)
    state = CycleState()
    assert fgd.pre_score(state, PodInfo(new), [n1, n2]) is None
    view1, view2 = fgd.tracker.node_state(n1), fgd.tracker.node_state(n2)
    assert view1.idle == (0, 0, 0, 1000)
    assert view2.idle == (1000,) * 4
    assert view1.model == "A100"
    s1, _ = fgd.score(state, PodInfo(new), n1)
    s2, _ = fgd.score(state, PodInfo(new), n2)
    assert s1 > s2
    # GpuShare leaves the DRA pod to DynamicResources: PreFilter SKIP, and it fits extended-resource pods only on
    # extended-resource devices (these nodes have none).
    share = GpuShare({}, h)
    _, status = share.pre_filter(CycleState(), PodInfo(new), [n1, n2])
    assert status is not None
    assert status.code == Code.SKIP


def test_an_assumed_pod_without_allocation_takes_first_fit_and_the_allocation_moves_it() -> None:
    """Between Reserve and PreBind the pod is in the NodeInfo but its claim is not allocated: its demand is placed
    first fit; once the claim shows the allocator's devices, the tracker re-derives the node (its version bumps)."""
    objects: dict[str, list[Obj]] = {
        "resourceslices": [gpu_slice("n1", 2, "T4", "16Gi")],
        "deviceclasses": [gpu_class()],
        "resourceclaims": [claim("p-gpu", claim_spec(1))],
    }
    n1 = NodeInfo(bare_node("n1"), [PodInfo(dra_pod("p", "p-gpu", node="n1", uid="u-p"))])
    h = handle(objects, n1)
    fgd = FGD(one_gpu_workload(), h)
    fgd.pre_score(CycleState(), PodInfo(dra_pod("q", "q-gpu")), [n1])
    assert fgd.tracker.node_state(n1).idle == (0, 1000)
    objects["resourceclaims"] = [claim("p-gpu", claim_spec(1), pod_uid="u-p", results=[result("n1", "gpu-1")])]
    fgd.tracker.cycle += 1  # a new scheduling cycle
    fgd.pre_score(CycleState(), PodInfo(dra_pod("q", "q-gpu")), [n1])
    assert fgd.tracker.node_state(n1).idle == (1000, 0)


def test_a_claim_whose_pod_left_still_holds_its_devices() -> None:
    """The allocator counts every allocated claim; so does the model (a deleted pod's claim until deallocated)."""
    objects = {
        "resourceslices": [gpu_slice("n1", 2, "T4", "16Gi")],
        "deviceclasses": [gpu_class()],
        "resourceclaims": [claim("gone-gpu", claim_spec(1), pod_uid="u-gone", results=[result("n1", "gpu-0")])],
    }
    n1 = NodeInfo(bare_node("n1"), [])
    fgd = FGD(one_gpu_workload(), handle(objects, n1))
    fgd.pre_score(CycleState(), PodInfo(dra_pod("q", "q-gpu")), [n1])
    state = fgd.tracker.node_state(n1)
    assert state.idle == (0, 1000)
    assert state.pods == ()  # it holds devices but is no pod of the derived workload


def test_model_preference_reads_the_dra_model() -> None:
    objects = {
        "resourceslices": [gpu_slice("a", 1, "A100"), gpu_slice("t", 1, "T4", "16Gi")],
        "deviceclasses": [gpu_class()],
        "resourceclaims": [claim("q-gpu", claim_spec(1))],
    }
    a, t = NodeInfo(bare_node("a"), []), NodeInfo(bare_node("t", labels={GPU_MODEL_LABEL: "V100"}), [])
    none = NodeInfo(bare_node("none"), [])
    plugin = GpuModelPreference(GpuModelPreferenceArgs(["A100", "T4"]), handle(objects, a, t, none))
    state = CycleState()
    q = PodInfo(dra_pod("q", "q-gpu"))
    assert plugin.pre_score(state, q, [a, t, none]) is None
    assert plugin.score(state, q, a)[0] == 100
    assert plugin.score(state, q, t)[0] == 0  # the label wins: V100 is not listed
    assert plugin.score(state, q, none)[0] == 0


def test_the_view_is_reread_only_when_a_resource_version_changes() -> None:
    """Informer objects carry resourceVersions: an unchanged slice list keeps its index, an unchanged claim its
    parsed devices; a new version of a claim is parsed again (and its node's state re-derived)."""
    item = gpu_slice("n1", 2, "T4", "16Gi")
    item["metadata"]["resourceVersion"] = "5"
    first = claim("p-gpu", claim_spec(1), pod_uid="u-p", results=[result("n1", "gpu-0")])
    first["metadata"]["resourceVersion"] = "7"
    objects: dict[str, list[Obj]] = {"resourceslices": [item], "deviceclasses": [], "resourceclaims": [first]}
    n1 = NodeInfo(bare_node("n1"), [PodInfo(dra_pod("p", "p-gpu", node="n1", uid="u-p"))])
    fgd = FGD(one_gpu_workload(), handle(objects, n1))
    q = PodInfo(dra_pod("q", "q-gpu"))
    fgd.pre_score(CycleState(), q, [n1])
    index = fgd.tracker.dra.index
    assert fgd.tracker.node_state(n1).idle == (0, 1000)
    moved = claim("p-gpu", claim_spec(1), pod_uid="u-p", results=[result("n1", "gpu-1")])
    moved["metadata"]["resourceVersion"] = "7"  # same version: taken as unchanged
    objects["resourceclaims"] = [moved]
    fgd.tracker.cycle += 1
    fgd.pre_score(CycleState(), q, [n1])
    assert fgd.tracker.dra.index is index
    assert fgd.tracker.node_state(n1).idle == (0, 1000)
    moved["metadata"]["resourceVersion"] = "8"
    fgd.tracker.cycle += 1
    fgd.pre_score(CycleState(), q, [n1])
    assert fgd.tracker.node_state(n1).idle == (1000, 0)


def test_a_claim_shared_by_two_pods_counts_once() -> None:
    """A ResourceClaim may be reserved for several pods (upstream ``reservedFor``, up to 256): its devices count once,
    under the pod that reserved it first, and the other pod adds nothing -- not a second demand."""
    shared = claim("shared", claim_spec(2), pod_uid="u-a", results=[result("n1", "gpu-0"), result("n1", "gpu-1")])
    shared["status"]["reservedFor"].append({"resource": "pods", "name": "b", "uid": "u-b"})
    objects = {
        "resourceslices": [gpu_slice("n1", 4, "A100")],
        "deviceclasses": [gpu_class()],
        "resourceclaims": [shared],
    }
    a, b = dra_pod("a", "shared", node="n1", uid="u-a"), dra_pod("b", "shared", node="n1", uid="u-b")
    n1 = NodeInfo(bare_node("n1"), [PodInfo(a), PodInfo(b)])
    fgd = FGD(one_gpu_workload(), handle(objects, n1))
    fgd.pre_score(CycleState(), PodInfo(dra_pod("q", "q-gpu")), [n1])
    assert fgd.tracker.node_state(n1).idle == (0, 0, 1000, 1000)
    # the first pod gone, the claim still holds both devices for the second
    n1 = NodeInfo(bare_node("n1"), [PodInfo(b)])
    assert fgd.tracker.node_state(n1).idle == (0, 0, 1000, 1000)
