"""VolumeBinding's binder, pinned to upstream ``volumebinding/binder_test.go``:
``TestFindPodVolumesWithoutProvisioning`` and ``TestFindPodVolumesWithProvisioning`` (scenario names verbatim,
each under the three CSIDriver variants:
none, with and without capacity tracking), ``TestAssumePodVolumes``, ``TestRevertAssumedPodVolumes``,
``TestBindPodVolumes`` (API updates, then polling until the PV controller binds; timeout and
provisioning-failure errors) and the assume cache's ``TestAssumeUpdatePVCache``/``TestRestorePVCache`` semantics.

The fixtures are upstream's ``makeTestPVC``/``makeTestPV`` objects (node label ``nodeKey``; classes waitClass,
immediateClass, waitClassWithProvisioner, topoMismatchClass), as v1 dicts. ``list_objects`` reads a dict that plays
the informers; the test moves it, as upstream's tests move their informer caches.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from kubeplane.client.clock import FakeClock
from kubeplane.scheduler.framework.handle import Handle
from kubeplane.scheduler.plugins.volume_binding_assume_cache import AssumeCacheError
from kubeplane.scheduler.plugins.volume_binding_binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BinderError,
    BindingInfo,
    DynamicProvision,
    PodVolumes,
    VolumeBinder,
)

PROVISIONER = "test-provisioner"
NODE_KEY, NODE1 = "nodeKey", "node1"
WAIT, IMMEDIATE, WAIT_PROV, TOPO = "waitClass", "immediateClass", "waitClassWithProvisioner", "topoMismatchClass"


def sc(name: str, mode: str, provisioner: str = "", topology: list[str] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": "StorageClass", "metadata": {"name": name}, "volumeBindingMode": mode}
    if provisioner:
        obj["provisioner"] = provisioner
    if topology is not None:
        obj["allowedTopologies"] = [{"matchLabelExpressions": [{"key": NODE_KEY, "values": topology}]}]
    return obj


CLASSES = [
    sc(WAIT_PROV, "WaitForFirstConsumer", PROVISIONER, [NODE1, "reference-value"]),
    sc(IMMEDIATE, "Immediate"),
    sc(WAIT, "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
    sc(TOPO, "WaitForFirstConsumer", PROVISIONER, ["reference-value"]),
]


def pvc(name: str, size: str, state: str, volume: str, rv: str, cls: str, node: str = "") -> dict[str, Any]:
    """Upstream ``makeTestPVC``: state "bound" (volumeName + bind-completed), "prebound" (volumeName only),
    "selected" (selected-node annotation), "unbound"."""
    meta: dict[str, Any] = {"name": name, "namespace": "testns", "uid": f"pvc-uid-{name}", "resourceVersion": rv}
    spec: dict[str, Any] = {"resources": {"requests": {"storage": size}}, "storageClassName": cls}
    if state in ("bound", "prebound"):
        spec["volumeName"] = volume
    if state == "bound":
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
    if state == "selected":
        meta["annotations"] = {"volume.kubernetes.io/selected-node": node}
    return {"kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def pv(name: str, node: str, size: str, rv: str, bound_to: dict[str, Any] | None, cls: str) -> dict[str, Any]:
    """Upstream ``makeTestPV``: node affinity ``nodeKey In [node]``; Available, or Bound with a claimRef."""
    spec: dict[str, Any] = {"capacity": {"storage": size}, "storageClassName": cls}
    if node:
        terms = [{"matchExpressions": [{"key": NODE_KEY, "operator": "In", "values": [node]}]}]
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": terms}}
    phase = "Available"
    if bound_to is not None:
        m = bound_to["metadata"]
        spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "name": m["name"]}
        spec["claimRef"].update(namespace=m["namespace"], uid=m["uid"])
        phase = "Bound"
    return {"kind": "PersistentVolume", "metadata": {"name": name, "resourceVersion": rv}, "spec": spec,
            "status": {"phase": phase}}  # fmt: skip


UNBOUND = pvc("unbound-pvc", "1G", "unbound", "", "1", WAIT)
UNBOUND2 = pvc("unbound-pvc2", "5G", "unbound", "", "1", WAIT)
PREBOUND = pvc("prebound-pvc", "1G", "prebound", "pv-node1a", "1", WAIT)
BOUND = pvc("bound-pvc", "1G", "bound", "pv-bound", "1", WAIT)
IMM_UNBOUND = pvc("immediate-unbound-pvc", "1G", "unbound", "", "1", IMMEDIATE)
IMM_BOUND = pvc("immediate-bound-pvc", "1G", "bound", "pv-bound-immediate", "1", IMMEDIATE)
PROVISIONED = pvc("provisioned-pvc", "1Gi", "unbound", "", "1", WAIT_PROV)
NO_PROVISIONER = pvc("no-provisioner-pvc", "1Gi", "unbound", "", "1", WAIT)
TOPO_MISMATCH = pvc("topo-mismatch-pvc", "1Gi", "unbound", "", "1", TOPO)
SELECTED = pvc("provisioned-pvc", "1Gi", "selected", "", "1", WAIT_PROV, node=NODE1)

PV_NODE1A = pv("pv-node1a", "node1", "5G", "1", None, WAIT)
PV_NODE1B = pv("pv-node1b", "node1", "10G", "1", None, WAIT)
PV_NODE2 = pv("pv-node2", "node2", "1G", "1", None, WAIT)
PV_BOUND = pv("pv-bound", "node1", "1G", "1", BOUND, WAIT)
PV_NODE1A_BOUND = pv("pv-node1a", "node1", "5G", "1", UNBOUND, WAIT)
PV_BOUND_IMM = pv("pv-bound-immediate", "node1", "1G", "1", IMM_BOUND, IMMEDIATE)
PV_BOUND_IMM_NODE2 = pv("pv-bound-immediate", "node2", "1G", "1", IMM_BOUND, IMMEDIATE)

RESOURCES = {
    "StorageClass": "storageclasses",
    "PersistentVolume": "persistentvolumes",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "CSIDriver": "csidrivers",
    "CSIStorageCapacity": "csistoragecapacities",
}


class Store:
    """The informers: objects by plural, listed as ``Handle.list_objects`` does."""

    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self.objs: dict[str, dict[str, dict[str, Any]]] = {p: {} for p in RESOURCES.values()}
        for o in objs:
            self.put(o)

    def put(self, obj: dict[str, Any]) -> None:
        m = obj["metadata"]
        self.objs[RESOURCES[obj["kind"]]][f"{m.get('namespace', '')}/{m['name']}"] = obj

    def list(self, resource: str, namespace: str) -> list[dict[str, Any]]:
        return [o for o in self.objs[resource].values() if not namespace or o["metadata"].get("namespace") == namespace]


def make_pod(claims: list[dict[str, Any]]) -> dict[str, Any]:
    vols = [
        {"name": c["metadata"]["name"], "persistentVolumeClaim": {"claimName": c["metadata"]["name"]}} for c in claims
    ]
    return {"metadata": {"name": "test-pod", "namespace": "testns", "uid": "pod-uid"}, "spec": {"volumes": vols}}


def binder_for(objs: list[dict[str, Any]], **handle: Any) -> tuple[VolumeBinder, Store]:
    store = Store(CLASSES + objs)
    return VolumeBinder(Handle(list_objects=store.list, **handle), 10.0), store


def find(binder: VolumeBinder, pod: dict[str, Any]) -> tuple[PodVolumes, list[str]]:
    """Upstream's ``findPodVolumes`` test helper: GetPodVolumeClaims, unbound Immediate claims are an error."""
    claims = binder.get_pod_volume_claims(pod)
    if claims.unbound_claims_immediate:
        raise BinderError("pod has unbound immediate claims")
    return binder.find_pod_volumes(pod, claims, NODE1, {NODE_KEY: NODE1})


def driver(storage_capacity: bool) -> dict[str, Any]:
    return {"kind": "CSIDriver", "metadata": {"name": PROVISIONER}, "spec": {"storageCapacity": storage_capacity}}


DRIVERS = {"no CSIDriver": None, "CSIDriver with capacity tracking": True, "CSIDriver without capacity tracking": False}

# name: (pod PVCs, PVs, expected bindings [(pvc, pv)], reasons, should fail)
WITHOUT_PROVISIONING: dict[str, tuple[list[Any], list[Any], list[tuple[Any, Any]], list[str], bool]] = {
    "bound-pvc": ([BOUND], [PV_BOUND], [], [], False),
    "bound-pvc,pv-not-exists": ([BOUND], [], [], [ERR_REASON_PV_NOT_EXIST], False),
    "prebound-pvc": ([PREBOUND], [PV_NODE1A_BOUND], [], [], True),
    "unbound-pvc,pv-same-node": ([UNBOUND], [PV_NODE2, PV_NODE1A, PV_NODE1B], [(UNBOUND, PV_NODE1A)], [], False),
    "unbound-pvc,pv-different-node": ([UNBOUND], [PV_NODE2], [], [ERR_REASON_BIND_CONFLICT], False),
    "two-unbound-pvcs": (
        [UNBOUND, UNBOUND2], [PV_NODE1A, PV_NODE1B], [(UNBOUND, PV_NODE1A), (UNBOUND2, PV_NODE1B)], [], False
    ),
    "two-unbound-pvcs,order-by-size": (
        [UNBOUND2, UNBOUND], [PV_NODE1A, PV_NODE1B], [(UNBOUND, PV_NODE1A), (UNBOUND2, PV_NODE1B)], [], False
    ),
    "two-unbound-pvcs,partial-match": (
        [UNBOUND, UNBOUND2], [PV_NODE1A], [(UNBOUND, PV_NODE1A)], [ERR_REASON_BIND_CONFLICT], False
    ),
    "one-bound,one-unbound": ([UNBOUND, BOUND], [PV_BOUND, PV_NODE1A], [(UNBOUND, PV_NODE1A)], [], False),
    "one-bound,one-unbound,no-match": ([UNBOUND, BOUND], [PV_BOUND, PV_NODE2], [], [ERR_REASON_BIND_CONFLICT], False),
    "one-prebound,one-unbound": ([UNBOUND, PREBOUND], [PV_NODE1A, PV_NODE1B], [], [], True),
    "immediate-bound-pvc": ([IMM_BOUND], [PV_BOUND_IMM], [], [], False),
    "immediate-bound-pvc-wrong-node": ([IMM_BOUND], [PV_BOUND_IMM_NODE2], [], [ERR_REASON_NODE_CONFLICT], False),
    "immediate-unbound-pvc": ([IMM_UNBOUND], [], [], [], True),
    "immediate-unbound-pvc,delayed-mode-bound": ([IMM_UNBOUND, BOUND], [PV_BOUND], [], [], True),
    "immediate-unbound-pvc,delayed-mode-unbound": ([IMM_UNBOUND, UNBOUND], [], [], [], True),
}  # fmt: skip


@pytest.mark.parametrize("driver_variant", list(DRIVERS))
@pytest.mark.parametrize("name", list(WITHOUT_PROVISIONING))
def test_find_pod_volumes_without_provisioning(name: str, driver_variant: str) -> None:
    claims, pvs, bindings, reasons, should_fail = WITHOUT_PROVISIONING[name]
    capacity = DRIVERS[driver_variant]
    objs = [*claims, *pvs] + ([] if capacity is None else [driver(capacity)])
    binder, _ = binder_for(objs)
    if should_fail:
        with pytest.raises(BinderError):
            find(binder, make_pod(claims))
        return
    volumes, got_reasons = find(binder, make_pod(claims))
    assert got_reasons == reasons
    assert [(b.pvc, b.pv) for b in volumes.static_bindings] == bindings
    assert volumes.dynamic_provisions == []


def test_find_pod_volumes_pvc_not_found_and_generic_ephemeral() -> None:
    """Upstream "pvc-not-found" and "generic-ephemeral,no-pvc"/"...,wrong-pvc"/"...,with-pvc"."""
    binder, store = binder_for([PV_BOUND])
    with pytest.raises(
        BinderError, match=r'error getting PVC "testns/bound-pvc": could not find v1\.PersistentVolumeClaim'
    ):
        find(binder, make_pod([BOUND]))
    pod = {"metadata": {"name": "test-pod", "namespace": "testns", "uid": "pod-uid"},
           "spec": {"volumes": [{"name": "test-volume", "ephemeral": {}}]}}  # fmt: skip
    with pytest.raises(BinderError):
        find(binder, pod)  # no PVC test-pod-test-volume
    generic = pvc("test-pod-test-volume", "1G", "bound", "pv-bound", "1", WAIT)
    store.put(generic)  # not owned by the pod
    with pytest.raises(BinderError, match=r"PVC testns/test-pod-test-volume was not created for pod testns/test-pod"):
        find(binder, pod)
    owned = copy.deepcopy(generic)
    owned["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "test-pod", "uid": "pod-uid", "controller": True}]
    store.put(owned)
    store.put(pv("pv-bound", "node1", "1G", "1", owned, WAIT))
    assert find(binder, pod)[1] == []


# name: (pod PVCs, PVs, bindings, provisions, reasons, needs capacity)
WITH_PROVISIONING: dict[str, tuple[list[Any], list[Any], list[Any], list[Any], list[str], bool]] = {
    "one-provisioned": ([PROVISIONED], [], [], [PROVISIONED], [], True),
    "two-unbound-pvcs,one-matched,one-provisioned": (
        [UNBOUND, PROVISIONED], [PV_NODE1A], [(UNBOUND, PV_NODE1A)], [PROVISIONED], [], True
    ),
    "one-bound,one-provisioned": ([BOUND, PROVISIONED], [PV_BOUND], [], [PROVISIONED], [], True),
    "one-binding,one-selected-node": ([BOUND, SELECTED], [PV_BOUND], [], [SELECTED], [], True),
    "one-immediate-bound,one-provisioned": ([IMM_BOUND, PROVISIONED], [PV_BOUND_IMM], [], [PROVISIONED], [], True),
    "invalid-provisioner": ([NO_PROVISIONER], [], [], [], [ERR_REASON_BIND_CONFLICT], False),
    "volume-topology-unsatisfied": ([TOPO_MISMATCH], [], [], [], [ERR_REASON_BIND_CONFLICT], False),
}  # fmt: skip


@pytest.mark.parametrize("driver_variant", list(DRIVERS))
@pytest.mark.parametrize("name", list(WITH_PROVISIONING))
def test_find_pod_volumes_with_provisioning(name: str, driver_variant: str) -> None:
    claims, pvs, bindings, provisions, reasons, needs_capacity = WITH_PROVISIONING[name]
    capacity = DRIVERS[driver_variant]
    binder, _ = binder_for([*claims, *pvs] + ([] if capacity is None else [driver(capacity)]))
    volumes, got = find(binder, make_pod(claims))
    if needs_capacity and capacity:  # "Without CSIStorageCapacity objects, provisioning is blocked."
        reasons, provisions = [*reasons, ERR_REASON_NOT_ENOUGH_SPACE], []
    assert got == reasons
    assert [(b.pvc, b.pv) for b in volumes.static_bindings] == bindings
    assert [p.pvc for p in volumes.dynamic_provisions] == provisions


def capacity_obj(name: str, node: str | None, size: str, maximum: str = "") -> dict[str, Any]:
    """Upstream ``makeCapacity`` (nodeTopology matchLabels nodeKey=<node>; none: network-attached)."""
    obj: dict[str, Any] = {"kind": "CSIStorageCapacity", "metadata": {"name": name, "namespace": "kube-system"},
                           "storageClassName": WAIT_PROV, "capacity": size}  # fmt: skip
    if node is not None:
        obj["nodeTopology"] = {"matchLabels": {NODE_KEY: node}}
    if maximum:
        obj["maximumVolumeSize"] = maximum
    return obj


@pytest.mark.parametrize(
    ("name", "capacities", "reasons"),
    [
        ("empty", [], [ERR_REASON_NOT_ENOUGH_SPACE]),
        ("one", [capacity_obj("net", NODE1, "1Gi")], []),
        ("insufficient", [capacity_obj("net", NODE1, "1Mi")], [ERR_REASON_NOT_ENOUGH_SPACE]),
        ("insufficient-volume-size", [capacity_obj("net", NODE1, "1Gi", "1Mi")], [ERR_REASON_NOT_ENOUGH_SPACE]),
        ("zero", [capacity_obj("net", NODE1, "0")], [ERR_REASON_NOT_ENOUGH_SPACE]),
        ("wrong-node", [capacity_obj("net", "node2", "1Gi")], [ERR_REASON_NOT_ENOUGH_SPACE]),
        ("network-attached", [capacity_obj("net", None, "1Gi")], [ERR_REASON_NOT_ENOUGH_SPACE]),
    ],
)
def test_capacity(name: str, capacities: list[dict[str, Any]], reasons: list[str]) -> None:
    """Upstream ``TestCapacity`` (CSIDriver with capacity tracking): a CSIStorageCapacity for the class that the
    node reaches and whose maximumVolumeSize (else capacity) fits the 1Gi claim; a nil nodeTopology reaches no
    node."""
    binder, _ = binder_for([PROVISIONED, driver(True), *capacities])
    volumes, got = find(binder, make_pod([PROVISIONED]))
    assert got == reasons, name
    if not reasons:
        assert [p.node_capacity for p in volumes.dynamic_provisions] == capacities


def test_assume_pod_volumes_all_bound_one_binding_two_bindings() -> None:
    """Upstream ``TestAssumePodVolumes`` "all-bound", "one-binding", "two-bindings", and the provisioning
    scenario: assumed PVs carry the claimRef and bound-by-controller, assumed PVCs the selected-node."""
    binder, _ = binder_for([BOUND, PV_BOUND])
    assert binder.assume_pod_volumes(make_pod([BOUND]), NODE1, PodVolumes()) is True
    binder, _ = binder_for([UNBOUND, UNBOUND2, PROVISIONED, PV_NODE1A, PV_NODE1B])
    volumes = PodVolumes(
        [BindingInfo(UNBOUND, PV_NODE1A), BindingInfo(UNBOUND2, PV_NODE1B)], [DynamicProvision(PROVISIONED)]
    )
    assert binder.assume_pod_volumes(make_pod([UNBOUND, UNBOUND2, PROVISIONED]), NODE1, volumes) is False
    for binding, claim in zip(volumes.static_bindings, (UNBOUND, UNBOUND2), strict=True):
        cached = binder.pv_cache.get(binding.pv["metadata"]["name"])
        assert cached["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                              "namespace": "testns", "name": claim["metadata"]["name"],
                                              "uid": claim["metadata"]["uid"], "resourceVersion": "1"}  # fmt: skip
        assert cached["metadata"]["annotations"] == {"pv.kubernetes.io/bound-by-controller": "yes"}
        assert binder.pv_cache.get_api_obj(binding.pv["metadata"]["name"])["spec"].get("claimRef") is None
    assumed = binder.pvc_cache.get("testns/provisioned-pvc")
    assert assumed["metadata"]["annotations"] == {"volume.kubernetes.io/selected-node": NODE1}
    assert "annotations" not in PROVISIONED["metadata"]  # the informer's object is never modified
    binder.revert_assumed_pod_volumes(volumes)  # upstream TestRevertAssumedPodVolumes
    assert binder.pv_cache.get("pv-node1a") is PV_NODE1A
    assert binder.pvc_cache.get("testns/provisioned-pvc") is PROVISIONED


def test_assume_pv_already_bound_is_not_dirty() -> None:
    """Upstream "pv-already-bound": a PV already bound to the claim is not assumed again."""
    binder, _ = binder_for([UNBOUND, PV_NODE1A_BOUND])
    volumes = PodVolumes([BindingInfo(UNBOUND, PV_NODE1A_BOUND)])
    assert binder.assume_pod_volumes(make_pod([UNBOUND]), NODE1, volumes) is False
    assert not binder.pv_cache.is_assumed("pv-node1a")
    assert volumes.static_bindings[0].pv == PV_NODE1A_BOUND


def test_assume_cache_version_rules() -> None:
    """Upstream ``assume_cache_test.go`` ``TestAssumeUpdatePVCache``/``TestRestorePVCache``: an older assumed
    version is refused; the informer's newer object replaces the assumed one; restore brings back the informer's."""
    binder, store = binder_for([PV_NODE1A])
    cache = binder.pv_cache
    newer = copy.deepcopy(PV_NODE1A)
    newer["metadata"]["resourceVersion"] = "5"
    cache.assume(newer)
    assert cache.get("pv-node1a") is newer
    older = copy.deepcopy(PV_NODE1A)
    older["metadata"]["resourceVersion"] = "4"
    with pytest.raises(
        AssumeCacheError, match=r'v1.PersistentVolume "pv-node1a" is out of sync \(stored: 5, assume: 4\)'
    ):
        cache.assume(older)
    informer = copy.deepcopy(PV_NODE1A)
    informer["metadata"]["resourceVersion"] = "6"
    store.put(informer)
    assert cache.get("pv-node1a") is informer
    assert not cache.is_assumed("pv-node1a")
    with pytest.raises(AssumeCacheError, match=r'could not find v1\.PersistentVolume "pv-x"'):
        cache.assume({"metadata": {"name": "pv-x", "resourceVersion": "1"}})


class FakeClient:
    """Records updates and returns them with the next resourceVersion (upstream's fake clientset reactor)."""

    def __init__(self, fail: str = "") -> None:
        self.updates: list[dict[str, Any]] = []
        self.fail = fail

    def resource(self, name: str) -> str:
        return name

    async def update(self, resource: str, obj: dict[str, Any], *, namespace: str | None = None) -> dict[str, Any]:
        if self.fail and obj["metadata"]["name"] == self.fail:
            from kubeplane.client.errors import ConflictError

            raise ConflictError({"code": 409, "reason": "Conflict", "message": "the object has been modified"})
        out = copy.deepcopy(obj)
        out["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        self.updates.append(out)
        return out


async def _advance(clock: FakeClock, task: asyncio.Task[None], seconds: int) -> None:
    for _ in range(seconds):
        if task.done():
            return
        await clock.advance(1.0)


async def test_bind_pod_volumes_waits_for_the_pv_controller() -> None:
    """Upstream ``TestBindPodVolumes``: the PV claimRef and PVC selected-node are written, then the binder waits
    until the informers show the claims fully bound ("all-bound" after the controller acts)."""
    clock, client = FakeClock(), FakeClient()
    node = {"metadata": {"name": NODE1, "labels": {NODE_KEY: NODE1}}}
    from kubeplane.scheduler.framework.types import NodeInfo

    class Lister:
        def get(self, name: str) -> NodeInfo | None:
            return NodeInfo(node) if name == NODE1 else None

    binder, store = binder_for([UNBOUND, PROVISIONED, PV_NODE1A], clock=clock, client=client)
    binder._handle.snapshot_lister = Lister()  # type: ignore[assignment]
    pod = make_pod([UNBOUND, PROVISIONED])
    volumes = PodVolumes([BindingInfo(UNBOUND, PV_NODE1A)], [DynamicProvision(PROVISIONED)])
    binder.assume_pod_volumes(pod, NODE1, volumes)
    task = asyncio.ensure_future(binder.bind_pod_volumes(pod, NODE1, volumes))
    await _advance(clock, task, 3)
    assert [u["metadata"]["name"] for u in client.updates] == ["pv-node1a", "provisioned-pvc"]
    assert client.updates[1]["metadata"]["annotations"] == {"volume.kubernetes.io/selected-node": NODE1}
    assert not task.done()  # the informers still show unbound claims
    # The PV controller binds: PV and PVCs are updated in the informers.
    for update in client.updates:
        store.put(update)
    for claim, volume in ((UNBOUND, "pv-node1a"), (PROVISIONED, "pv-provisioned")):
        bound = copy.deepcopy(claim)
        bound["spec"]["volumeName"] = volume
        bound["metadata"]["annotations"] = {"pv.kubernetes.io/bind-completed": "yes",
                                            "volume.kubernetes.io/selected-node": NODE1}  # fmt: skip
        bound["metadata"]["resourceVersion"] = "9"
        store.put(bound)
    store.put(pv("pv-provisioned", NODE1, "1Gi", "3", PROVISIONED, WAIT_PROV))
    await _advance(clock, task, 2)
    assert task.done()
    assert task.result() is None


async def test_bind_pod_volumes_times_out_and_reports_provisioning_failure() -> None:
    """Upstream ``TestBindPodVolumes`` "binding-times-out"-like and "provisioning-pvc-selected-node-dropped": the
    wait ends after bindTimeoutSeconds with ``binding volumes: context deadline exceeded``; a PVC whose
    selected-node the provisioner removed is ``provisioning failed for PVC``."""
    clock, client = FakeClock(), FakeClient()
    node = {"metadata": {"name": NODE1, "labels": {NODE_KEY: NODE1}}}
    from kubeplane.scheduler.framework.types import NodeInfo

    class Lister:
        def get(self, name: str) -> NodeInfo | None:
            return NodeInfo(node)

    binder, store = binder_for([PROVISIONED], clock=clock, client=client)
    binder._handle.snapshot_lister = Lister()  # type: ignore[assignment]
    pod = make_pod([PROVISIONED])
    volumes = PodVolumes([], [DynamicProvision(PROVISIONED)])
    binder.assume_pod_volumes(pod, NODE1, volumes)
    task = asyncio.ensure_future(binder.bind_pod_volumes(pod, NODE1, volumes))
    await _advance(clock, task, 12)
    with pytest.raises(BinderError, match=r"^binding volumes: context deadline exceeded$"):
        task.result()
    binder.assume_pod_volumes(pod, NODE1, volumes := PodVolumes([], [DynamicProvision(PROVISIONED)]))
    task = asyncio.ensure_future(binder.bind_pod_volumes(pod, NODE1, volumes))
    await _advance(clock, task, 1)
    dropped = copy.deepcopy(client.updates[-1])
    dropped["metadata"]["annotations"] = {}
    dropped["metadata"]["resourceVersion"] = "7"
    store.put(dropped)
    await _advance(clock, task, 2)
    with pytest.raises(BinderError, match=r'^binding volumes: provisioning failed for PVC "provisioned-pvc"$'):
        task.result()


async def test_bind_api_update_failure_reverts_what_was_not_written() -> None:
    """Upstream ``TestBindAPIUpdate`` "api-error": the API error is returned and the assumed objects not
    written are restored in the caches."""
    client = FakeClient(fail="provisioned-pvc")
    binder, _ = binder_for([UNBOUND, PROVISIONED, PV_NODE1A], client=client)
    pod = make_pod([UNBOUND, PROVISIONED])
    volumes = PodVolumes([BindingInfo(UNBOUND, PV_NODE1A)], [DynamicProvision(PROVISIONED)])
    binder.assume_pod_volumes(pod, NODE1, volumes)
    with pytest.raises(BinderError, match=r"^the object has been modified$"):
        await binder.bind_pod_volumes(pod, NODE1, volumes)
    assert not binder.pvc_cache.is_assumed("testns/provisioned-pvc")
    assert binder.pv_cache.is_assumed("pv-node1a")  # written: it stays assumed until the informer catches up


def test_capacity_lookup_keeps_upstream_list_order() -> None:
    """``hasEnoughCapacity`` returns the first fitting CSIStorageCapacity in list order; the by-label index must
    not change which one (a matchExpressions capacity listed first wins over a matchLabels one, and vice versa)."""
    by_expr = capacity_obj("expr", None, "1Gi")
    by_expr["nodeTopology"] = {"matchExpressions": [{"key": NODE_KEY, "operator": "In", "values": [NODE1]}]}
    by_label = capacity_obj("label", NODE1, "1Gi")
    too_small = capacity_obj("small", NODE1, "1Mi")
    for order in ([too_small, by_expr, by_label], [too_small, by_label, by_expr]):
        binder, _ = binder_for([PROVISIONED, driver(True), *order])
        volumes, reasons = find(binder, make_pod([PROVISIONED]))
        assert reasons == []
        assert volumes.dynamic_provisions[0].node_capacity is order[1]
