"""NodeRestriction admission through the in-process client, the requester set with ``acting_as`` (the fixture
client's identity for the block: a LocalClient runs its calls as its own user).

Translates the cases of upstream v1.37 ``plugin/pkg/admission/noderestriction/admission_test.go`` that apply to
what kubeplane serves (``Test_nodePlugin_Admit``: mirror pods, pod delete/status/eviction, nodes and their labels
and taints, PVC status, serviceaccounts/token, leases, CSINodes; ``TestAdmitResourceSlice``): each names the
upstream case it pins. Messages are upstream's (``admission.NewForbidden``: ``<resource> "<name>" is forbidden:
<reason>``) and a refused write changes nothing.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.errors import ForbiddenError, NotFoundError
from kubeplane.client.local import LocalClient

MYNODE = UserInfo("system:node:mynode", groups=("system:nodes", "system:authenticated"))
BOB = UserInfo("bob", groups=("system:authenticated",))
MIRROR = {"kubernetes.io/config.mirror": "hash"}
_CLIENTS: list[LocalClient] = []


@contextmanager
def acting_as(user: UserInfo) -> Iterator[None]:
    """The fixture client calls as ``user`` in the block (the registry authorizes nothing: AlwaysAllow)."""
    client = _CLIENTS[-1]
    before, client.user = client.user, user
    try:
        yield
    finally:
        client.user = before


@pytest.fixture
async def c() -> AsyncIterator[LocalClient]:
    client = await LocalClient.in_memory(rng=random.Random(2))
    _CLIENTS.append(client)
    await client.create(client.resource("namespaces"), {"metadata": {"name": "ns"}})
    for node in ("mynode", "othernode"):
        await client.create(client.resource("nodes"), {"metadata": {"name": node, "labels": {"a": "b"}}})
    for i, node in enumerate(("mynode", "othernode")):
        await client.create(client.resource("pods"), _pod(f"pod{i}", node, serviceAccountName="sa"), namespace="ns")
    yield client
    _CLIENTS.remove(client)
    await client.close()


def _pod(name: str, node: str, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **extra},
    }


async def _mirror(c: LocalClient, name: str = "mirror", node: str = "mynode", **extra: Any) -> dict[str, Any]:
    uid = (await c.get(c.resource("nodes"), node))["metadata"]["uid"]
    pod = _pod(name, node, **extra)
    pod["metadata"]["annotations"] = dict(MIRROR)
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid, "controller": True}
    ]
    return pod


async def _refused(call: Any, message: str) -> None:
    with pytest.raises(ForbiddenError) as info, acting_as(MYNODE):
        await call
    assert info.value.message == message


# -- pods ----------------------------------------------------------------------------------------------------------


async def test_mirror_pod_create(c: LocalClient) -> None:
    """``Test_nodePlugin_Admit``: "allow creating a mirror pod bound to self", "forbid creating a mirror pod bound
    to another", "forbid creating a non-mirror pod", owner reference cases, "forbid pods with secrets /
    configmaps / service account / pvc", "forbid pods with clustertrustbundles"."""
    pods = c.resource("pods")
    with acting_as(MYNODE):
        created = await c.create(pods, await _mirror(c), namespace="ns")
    assert created["metadata"]["name"] == "mirror"
    await _refused(
        c.create(pods, _pod("plain", "mynode"), namespace="ns"),
        'pods "plain" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "mynode" can '
        "only create mirror pods",
    )
    other = await _mirror(c, "m2", "othernode")
    await _refused(
        c.create(pods, other, namespace="ns"),
        'pods "m2" is forbidden: node "mynode" can only create pods with spec.nodeName set to itself',
    )
    no_owner = await _mirror(c, "m3")
    no_owner["metadata"]["ownerReferences"] = []
    await _refused(
        c.create(pods, no_owner, namespace="ns"),
        'pods "m3" is forbidden: node "mynode" can only create pods with an owner reference set to itself',
    )
    two = await _mirror(c, "m4")
    two["metadata"]["ownerReferences"] *= 2
    await _refused(
        c.create(pods, two, namespace="ns"),
        'pods "m4" is forbidden: node "mynode" can only create pods with a single owner reference set to itself',
    )
    not_controller = await _mirror(c, "m5")
    not_controller["metadata"]["ownerReferences"][0]["controller"] = False
    await _refused(
        c.create(pods, not_controller, namespace="ns"),
        'pods "m5" is forbidden: node "mynode" can only create pods with a controller owner reference set to itself',
    )
    blocking = await _mirror(c, "m6")
    blocking["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = True
    await _refused(
        c.create(pods, blocking, namespace="ns"),
        'pods "m6" is forbidden: node "mynode" must not set blockOwnerDeletion on an owner reference',
    )
    wrong_uid = await _mirror(c, "m7")
    wrong_uid["metadata"]["ownerReferences"][0]["uid"] = "bogus"
    uid = (await c.get(c.resource("nodes"), "mynode"))["metadata"]["uid"]
    await _refused(
        c.create(pods, wrong_uid, namespace="ns"),
        f'pods "m7" is forbidden: node mynode UID mismatch: expected bogus got {uid}',
    )
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("sa", {"serviceAccountName": "foo"}, "a service account"),
        ("sec", {"volumes": [{"name": "v", "secret": {"secretName": "foo"}}]}, "secrets"),
        ("pull", {"imagePullSecrets": [{"name": "foo"}]}, "secrets"),
        ("cm", {"volumes": [{"name": "v", "configMap": {"name": "foo"}}]}, "configmaps"),
        (
            "ctb",
            {
                "volumes": [
                    {"name": "v", "projected": {"sources": [{"clusterTrustBundle": {"name": "x", "path": "p"}}]}}
                ]
            },
            "clustertrustbundles",
        ),
        ("pvc", {"volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "foo"}}]}, "persistentvolumeclaims"),
    ]
    for name, extra, what in cases:
        await _refused(
            c.create(pods, await _mirror(c, name, **extra), namespace="ns"),
            f'pods "{name}" is forbidden: node "mynode" can not create pods that reference {what}',
        )
    names = sorted(p["metadata"]["name"] for p in (await c.list(pods, namespace="ns"))["items"])
    assert names == ["mirror", "pod0", "pod1"]  # nothing refused was stored


async def test_pod_delete_update_and_subresources(c: LocalClient) -> None:
    """ "allow delete of pod bound to self", "forbid delete of pod bound to another", "forbid delete of unknown pod"
    (the lister's 404), "forbid update of pod" ("unexpected operation"), "forbid pods/binding" (an unexpected
    subresource)."""
    pods = c.resource("pods")
    await _refused(
        c.delete(pods, "pod1", namespace="ns"),
        'pods "pod1" is forbidden: node "mynode" can only delete pods with spec.nodeName set to itself',
    )
    mine = await c.get(pods, "pod0", namespace="ns")
    mine["metadata"]["labels"] = {"x": "y"}
    await _refused(
        c.update(pods, mine, namespace="ns"),
        'pods "pod0" is forbidden: unexpected operation "UPDATE", node "mynode" can only create and delete mirror pods',
    )
    await c.create(
        pods, {"metadata": {"name": "unbound"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}, namespace="ns"
    )
    await _refused(
        c.create(
            pods,
            {"metadata": {"name": "unbound"}, "target": {"kind": "Node", "name": "mynode"}},
            namespace="ns",
            subresource="binding",
            name="unbound",
        ),
        'pods "unbound" is forbidden: unexpected pod subresource "binding", '
        "only 'status' and 'eviction' are allowed",
    )
    with acting_as(MYNODE):
        await c.delete(pods, "pod0", namespace="ns", grace_period_seconds=0)
        with pytest.raises(NotFoundError):
            await c.delete(pods, "pod0", namespace="ns")
    with acting_as(BOB):  # not a node: NodeRestriction has nothing to say
        await c.delete(pods, "pod1", namespace="ns", grace_period_seconds=0)


async def test_pod_status(c: LocalClient) -> None:
    """ "allow update of pod status bound to self", "forbid update of pod status bound to another", "forbid
    update of labels through status", "forbid update of resource claim statuses"."""
    pods = c.resource("pods")
    mine = await c.get(pods, "pod0", namespace="ns")
    mine.setdefault("status", {})["phase"] = "Running"
    with acting_as(MYNODE):
        updated = await c.update(pods, mine, namespace="ns", subresource="status")
    assert updated["status"]["phase"] == "Running"
    theirs = await c.get(pods, "pod1", namespace="ns")
    theirs.setdefault("status", {})["phase"] = "Running"
    await _refused(
        c.update(pods, theirs, namespace="ns", subresource="status"),
        'pods "pod1" is forbidden: node "mynode" can only update pod status for pods with spec.nodeName set to itself',
    )
    updated["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "stolen"}]
    await _refused(
        c.update(pods, updated, namespace="ns", subresource="status"),
        'pods "pod0" is forbidden: node "mynode" cannot update resource claim statues',
    )
    assert "resourceClaimStatuses" not in (await c.get(pods, "pod0", namespace="ns"))["status"]


async def test_pod_eviction(c: LocalClient) -> None:
    """ "allow create of eviction for pod bound to self", "forbid create of eviction for pod bound to another",
    "forbid create of eviction for unknown pod" (404)."""
    pods = c.resource("pods")
    await _refused(
        c.create(pods, {"metadata": {"name": "pod1"}}, namespace="ns", subresource="eviction", name="pod1"),
        'pods "pod1" is forbidden: node mynode can only evict pods with spec.nodeName set to itself',
    )
    with acting_as(MYNODE), pytest.raises(NotFoundError):
        await c.create(pods, {"metadata": {"name": "nope"}}, namespace="ns", subresource="eviction", name="nope")
    with acting_as(MYNODE):
        await c.create(pods, {"metadata": {"name": "pod0"}}, namespace="ns", subresource="eviction", name="pod0")
    assert (await c.get(pods, "pod1", namespace="ns"))["metadata"]["name"] == "pod1"


# -- nodes ---------------------------------------------------------------------------------------------------------


async def test_nodes(c: LocalClient) -> None:
    """ "allow create of my node", "forbid create of other node", "forbid create of my node with forbidden labels"
    (node-restriction.kubernetes.io and unknown kubernetes.io/k8s.io labels; the kubelet's well-known labels
    allowed), "forbid update of my node: taints", "forbid update of my node: forbidden labels", "forbid update
    of other node", "forbid delete of other node"."""
    nodes = c.resource("nodes")
    await c.delete(nodes, "mynode")
    await _refused(
        c.create(nodes, {"metadata": {"name": "othernode2"}}),
        'nodes "othernode2" is forbidden: node "mynode" is not allowed to modify node "othernode2"',
    )
    labels = {
        "node-restriction.kubernetes.io/foo": "x",
        "foo.node-restriction.kubernetes.io/bar": "x",
        "other.kubernetes.io/foo": "x",
        "other.k8s.io/foo": "x",
        "kubernetes.io/hostname": "mynode",
        "node.kubernetes.io/instance-type": "big",
        "kubelet.kubernetes.io/x": "y",
        "example.com/free": "yes",
    }
    await _refused(
        c.create(nodes, {"metadata": {"name": "mynode", "labels": labels}}),
        'nodes "mynode" is forbidden: node "mynode" is not allowed to set the following labels: '
        "foo.node-restriction.kubernetes.io/bar, node-restriction.kubernetes.io/foo, other.k8s.io/foo, "
        "other.kubernetes.io/foo",
    )
    allowed = {k: v for k, v in labels.items() if "restriction" not in k and not k.startswith("other.")}
    with acting_as(MYNODE):
        mine = await c.create(nodes, {"metadata": {"name": "mynode", "labels": allowed}})
    tainted = {**mine, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}
    await _refused(
        c.update(nodes, tainted, namespace=None),
        'nodes "mynode" is forbidden: node "mynode" is not allowed to modify taints',
    )
    relabeled = {**mine, "metadata": {**mine["metadata"], "labels": {**allowed, "other.k8s.io/foo": "x"}}}
    await _refused(
        c.update(nodes, relabeled, namespace=None),
        'nodes "mynode" is forbidden: is not allowed to modify labels: other.k8s.io/foo',
    )
    other = await c.get(nodes, "othernode")
    other["metadata"]["labels"] = {"c": "d"}
    await _refused(
        c.update(nodes, other, namespace=None),
        'nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"',
    )
    await _refused(
        c.delete(nodes, "othernode"),
        'nodes "othernode" is forbidden: node "mynode" is not allowed to modify node "othernode"',
    )
    with acting_as(MYNODE):
        ok = {**mine, "metadata": {**mine["metadata"], "labels": {**allowed, "example.com/free": "no"}}}
        assert (await c.update(nodes, ok))["metadata"]["labels"]["example.com/free"] == "no"


# -- other kinds ---------------------------------------------------------------------------------------------------


async def test_pvc_status(c: LocalClient) -> None:
    """ "forbid create of pvc" / "forbid update of pvc" ("may only update PVC status"), "allow update of pvc status
    capacity/conditions", "forbid update of other pvc status fields"."""
    pvcs = c.resource("persistentvolumeclaims")
    pvc = {
        "metadata": {"name": "claim"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    await _refused(
        c.create(pvcs, pvc, namespace="ns"), 'persistentvolumeclaims "claim" is forbidden: may only update PVC status'
    )
    created = await c.create(pvcs, pvc, namespace="ns")
    created["status"] = {"phase": "Bound", "capacity": {"storage": "2Gi"}}
    bound = await c.update(pvcs, created, namespace="ns", subresource="status")
    bound["status"]["capacity"] = {"storage": "3Gi"}
    bound["status"]["conditions"] = [{"type": "Resizing", "status": "True"}]
    with acting_as(MYNODE):
        bound = await c.update(pvcs, bound, namespace="ns", subresource="status")
    bound["status"]["phase"] = "Lost"
    await _refused(
        c.update(pvcs, bound, namespace="ns", subresource="status"),
        'persistentvolumeclaims "claim" is forbidden: node "mynode" is not allowed to update fields other than '
        "status.quantity and status.conditions: status",
    )


async def test_service_account_token(c: LocalClient) -> None:
    """ "forbid create of unbound token", "forbid create of token bound to nonexistant pod" (404), "forbid create
    of token bound to pod without uid", "forbid create of token bound to pod with wrong uid", "forbid create of
    token bound to pod scheduled on another node", "allow create of token bound to pod scheduled on self"."""
    sas = c.resource("serviceaccounts")
    await c.create(sas, {"metadata": {"name": "sa"}}, namespace="ns")
    pods = c.resource("pods")
    uid0 = (await c.get(pods, "pod0", namespace="ns"))["metadata"]["uid"]
    uid1 = (await c.get(pods, "pod1", namespace="ns"))["metadata"]["uid"]

    def request(ref: dict[str, Any] | None) -> dict[str, Any]:
        return {"spec": {"audiences": ["api"], "boundObjectRef": ref}}

    def token(ref: dict[str, Any] | None) -> Any:
        return c.create(sas, request(ref), namespace="ns", subresource="token", name="sa")

    prefix = 'serviceaccounts "sa" is forbidden: '
    await _refused(token(None), prefix + "node requested token not bound to a pod")
    await _refused(
        token({"apiVersion": "v1", "kind": "Secret", "name": "s"}), prefix + "node requested token not bound to a pod"
    )
    await _refused(
        token({"apiVersion": "v1", "kind": "Pod", "name": "pod0"}),
        prefix + "node requested token with a pod binding without a uid",
    )
    await _refused(
        token({"apiVersion": "v1", "kind": "Pod", "name": "pod0", "uid": "wrong"}),
        prefix + "the UID in the bound object reference (wrong) does not match the UID in record. The object might "
        "have been deleted and then recreated",
    )
    await _refused(
        token({"apiVersion": "v1", "kind": "Pod", "name": "pod1", "uid": uid1}),
        prefix + "node requested token bound to a pod scheduled on a different node",
    )
    with acting_as(MYNODE):
        with pytest.raises(NotFoundError):
            await token({"apiVersion": "v1", "kind": "Pod", "name": "gone", "uid": "x"})
        issued = await token({"apiVersion": "v1", "kind": "Pod", "name": "pod0", "uid": uid0})
    assert issued["status"]["token"]


async def test_leases_and_csinodes(c: LocalClient) -> None:
    """ "forbid create of lease in namespace other than kube-node-lease", "forbid create/update/delete of lease
    with another name", "allow create of my lease"; the same for CSINodes."""
    leases = c.resource("leases")
    await _refused(
        c.create(leases, {"metadata": {"name": "mynode"}, "spec": {}}, namespace="ns"),
        'leases.coordination.k8s.io "mynode" is forbidden: can only access leases in the "kube-node-lease" system '
        "namespace",
    )
    await _refused(
        c.create(leases, {"metadata": {"name": "othernode"}, "spec": {}}, namespace="kube-node-lease"),
        'leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name as the '
        "requesting node",
    )
    await c.create(leases, {"metadata": {"name": "othernode"}, "spec": {}}, namespace="kube-node-lease")
    await _refused(
        c.delete(leases, "othernode", namespace="kube-node-lease"),
        'leases.coordination.k8s.io "othernode" is forbidden: can only access node lease with the same name as the '
        "requesting node",
    )
    with acting_as(MYNODE):
        await c.create(leases, {"metadata": {"name": "mynode"}, "spec": {}}, namespace="kube-node-lease")
    csinodes = c.resource("csinodes")
    await _refused(
        c.create(csinodes, {"metadata": {"name": "othernode"}, "spec": {"drivers": []}}),
        'csinodes.storage.k8s.io "othernode" is forbidden: can only access CSINode with the same name as the '
        "requesting node",
    )
    with acting_as(MYNODE):
        await c.create(csinodes, {"metadata": {"name": "mynode"}, "spec": {"drivers": []}})


async def test_resource_slices(c: LocalClient) -> None:
    """``TestAdmitResourceSlice``: create and delete only of slices whose spec.nodeName is the node."""
    slices = c.resource("resourceslices")

    def slice_(name: str, node: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name},
            "spec": {"driver": "d.example.com", "nodeName": node, "pool": {"name": "p", "resourceSliceCount": 1}},
        }

    await _refused(
        c.create(slices, slice_("other", "othernode")),
        'resourceslices.resource.k8s.io "other" is forbidden: can only create ResourceSlice with the same NodeName '
        "as the requesting node",
    )
    await c.create(slices, slice_("other", "othernode"))
    await _refused(
        c.delete(slices, "other"),
        'resourceslices.resource.k8s.io "other" is forbidden: can only delete ResourceSlice with the same NodeName '
        "as the requesting node",
    )
    with acting_as(MYNODE):
        await c.create(slices, slice_("mine", "mynode"))
        await c.delete(slices, "mine")


async def test_unidentifiable_node(c: LocalClient) -> None:
    """ "forbid requests from a node user without a node name" (``could not determine node from user``)."""
    nameless = UserInfo("system:node:", groups=("system:nodes",))
    with pytest.raises(ForbiddenError) as info, acting_as(nameless):
        await c.create(c.resource("configmaps"), {"metadata": {"name": "x"}}, namespace="ns")
    assert info.value.message == 'configmaps "x" is forbidden: could not determine node from user "system:node:"'
