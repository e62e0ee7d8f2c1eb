"""Each simulated kubelet writes as its own node; the fleet's shared informers read as the fleet.

Pins upstream's identity model: every kubelet has its own credentials, ``system:node:<nodeName>`` in
``system:nodes`` (``pkg/kubelet/certificate`` / bootstrap: the user the Node authorizer,
``plugin/pkg/auth/authorizer/node``, and NodeRestriction, ``plugin/pkg/admission/noderestriction``, judge), so a
node's registration, status, Lease, pod status, mirror pods, Events, CSINode and ResourceSlices are written as that
node. On the old fleet every write used the one shared client: the routing assertions below fail there.
"""

from __future__ import annotations

import random
from pathlib import Path

from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.clock import FakeClock
from kubeplane.client.interface import Client
from kubeplane.client.local import LocalClient
from kubeplane.kubelet.config import parse_node_config
from kubeplane.kubelet.fleet import FLEET_USER, Fleet, FleetOptions, node_groups, node_user_name
from kubeplane.kubelet.node import kubelet_may_set_label
from tests.kubelet.harness import Env
from tests.kubelet.identity_recording import WRITES, Call, RecordingClient, record_requesters

STATIC = (
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\n"
    "spec:\n  containers:\n  - name: etcd\n    image: registry.k8s.io/etcd:3.5.21-0\n"
)


async def test_every_node_write_goes_through_its_own_node_client(tmp_path: Path) -> None:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "etcd.yaml").write_text(STATIC)
    clock = FakeClock()
    base = await LocalClient.in_memory(now=clock.now)
    arrived = record_requesters(base.registry)
    log: list[Call] = []
    asked: list[str] = []

    def node_client(name: str) -> Client:
        asked.append(name)
        user = UserInfo(node_user_name(name), groups=node_groups())
        return RecordingClient(base.as_user(user), name, log)

    fleet_user = UserInfo(FLEET_USER, groups=("system:authenticated",))
    specs = parse_node_config(
        [
            {
                "name": "cp",
                "staticPodPath": str(manifests),
                "labels": {"node-role.kubernetes.io/control-plane": "", "disk": "ssd"},
            },
            {"name": "w1", "devices": [{"driver": "gpu.example.com", "count": 1}]},
        ]
    )
    fleet = Fleet(
        RecordingClient(base.as_user(fleet_user), "fleet", log),
        specs,
        clock=clock,
        rng=random.Random(3),
        options=FleetOptions(status_workers=1),
        node_client=node_client,
    )
    await fleet.start()
    env = Env(base, clock, fleet)
    try:
        await env.create_pod("web", node="w1")
        await env.until(lambda: env.is_phase("web", "Running"), "web Running", step=0.5)

        async def mirror_running() -> bool:
            pods = (await base.list(base.resource("pods"), namespace="kube-system"))["items"]
            return any(p["metadata"]["name"] == "etcd-cp" and p["status"].get("phase") == "Running" for p in pods)

        await env.until(mirror_running, "the mirror pod Running", step=0.5)
        await clock.advance(11)  # a Lease renewal round
        await fleet.flush_events()
    finally:
        await fleet.stop()

    assert sorted(asked) == ["cp", "w1"], "node_client is asked once per node"
    writes = {(label, verb, plural, sub) for label, verb, plural, sub in log if verb in WRITES}
    # the fleet's own client writes only what the simulated CSI driver's controller side and install write
    # (external-provisioner, its capacity publisher, the external-attacher, the CSIDriver/StorageClass objects)
    driver_side = {"csidrivers", "storageclasses", "csistoragecapacities", "persistentvolumes", "volumeattachments"}
    fleet_writes = {w[2] for w in writes if w[0] == "fleet"}
    assert fleet_writes, log
    assert fleet_writes <= {*driver_side, "nodes"}, fleet_writes  # nodes: the admin labels, below
    assert ("cp", "create", "csinodes", "") in writes
    assert ("w1", "create", "csinodes", "") in writes
    for node in ("cp", "w1"):
        assert (node, "create", "nodes", "") in writes
        assert (node, "patch", "nodes", "status") in writes or (node, "create", "leases", "") in writes
        assert (node, "create", "leases", "") in writes or (node, "update", "leases", "") in writes
        assert (node, "create", "events", "") in writes or (node, "patch", "events", "") in writes
    assert ("w1", "patch", "pods", "status") in writes  # the pod's status by the node it runs on
    assert ("cp", "create", "pods", "") in writes  # the mirror pod by its node
    assert ("w1", "create", "resourceslices", "") in writes  # DRA slices by their node
    assert not any(label == "cp" and plural == "resourceslices" for label, _v, plural, _s in log)
    # a label NodeRestriction keeps from kubelets is set by the fleet afterwards (kubeadm's mark-control-plane)
    assert ("fleet", "patch", "nodes", "") in writes
    cp = await base.get(base.resource("nodes"), "cp")
    assert cp["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] == ""
    assert cp["metadata"]["labels"]["disk"] == "ssd"
    assert not any(label == "fleet" and plural == "nodes" and verb != "patch" for label, verb, plural, _s in writes)
    # the shared informers read as the fleet, never as a node
    reads = {(label, verb, plural) for label, verb, plural, _s in log if verb in ("list", "watch")}
    assert ("fleet", "watch", "pods") in reads
    assert ("fleet", "watch", "nodes") in reads
    assert not any(label != "fleet" and verb == "watch" for label, verb, _p in reads)

    # what the server saw: each node's objects arrived as system:node:<name>
    users = {(plural, sub, user) for plural, sub, user in arrived}
    assert ("nodes", "", "system:node:cp") in users
    assert ("nodes", "", "system:node:w1") in users
    assert ("leases", "", "system:node:w1") in users
    assert ("pods", "status", "system:node:w1") in users
    assert ("pods", "", "system:node:cp") in users
    assert ("resourceslices", "", "system:node:w1") in users
    assert {plural for plural, _s, user in arrived if user == FLEET_USER} <= {*driver_side, "nodes"}
    assert {(p, sub) for p, sub, user in arrived if user is None} == {("pods", "")}  # only the test's own create
    await base.close()


async def test_without_node_client_every_node_writes_with_the_fleet_client() -> None:
    """The default (tests, clusters without authorization): ``node_client`` is the shared client."""
    clock = FakeClock()
    base = await LocalClient.in_memory(now=clock.now)
    fleet = Fleet(base, parse_node_config([{"name": "a"}]), clock=clock, rng=random.Random(1))
    assert fleet.node_client("a") is base
    await base.close()


def test_labels_a_kubelet_may_set_on_its_node() -> None:
    """Upstream ``IsKubeletLabel`` (``pkg/kubelet/apis/well_known_labels.go``) as NodeRestriction applies it."""
    for allowed in ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "node.kubernetes.io/instance-type",
                    "kubelet.kubernetes.io/x", "a.node.kubernetes.io/y", "disk", "example.com/gpu"):  # fmt: skip
        assert kubelet_may_set_label(allowed), allowed
    for refused in ("node-role.kubernetes.io/control-plane", "node-restriction.kubernetes.io/pool",
                    "k8s.io/x", "foo.k8s.io/y", "kubernetes.io/role"):  # fmt: skip
        assert not kubelet_may_set_label(refused), refused
