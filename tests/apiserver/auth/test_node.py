"""The Node authorizer against an in-memory registry.

Translates upstream v1.37 ``plugin/pkg/auth/authorizer/node/node_authorizer_test.go`` ``TestAuthorizer`` (the
graph relations, verbs and reasons: each case names the upstream case it pins), ``TestNodeAuthorizer*Selectors``
behaviour of AuthorizeNodeWithSelectors (GA in v1.37: nodes and pods by name/field selector, resourceslices by
``nodeName``), ``nodeidentifier`` (``TestDefaultNodeIdentifier_NodeIdentity``), and kubeplane's read-your-writes
invariant (a decision follows every write that completed before it, also after the cache's ring wrapped).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.apiserver.auth.authorizer import Attributes, Decision, Selector
from kubeplane.apiserver.auth.node import NodeAuthorizer, node_identity
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.client.local import LocalClient

NODE0 = UserInfo("system:node:node0", groups=("system:nodes", "system:authenticated"))
NO_REL = "no relationship found between node 'node0' and this object"


def attrs(verb: str, resource: str, name: str = "", namespace: str = "", **kw: Any) -> Attributes:
    group = kw.pop("api_group", "")
    return Attributes(
        user=kw.pop("user", NODE0),
        verb=verb,
        namespace=namespace,
        api_group=group,
        resource=resource,
        name=name,
        **kw,
    )


def pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}], **spec}}


@pytest.fixture
async def env() -> AsyncIterator[tuple[LocalClient, NodeAuthorizer]]:
    client = await LocalClient.in_memory(rng=random.Random(1))
    await client.create(client.resource("namespaces"), {"metadata": {"name": "ns0"}})
    yield client, NodeAuthorizer(client.registry)
    await client.close()


async def _populate(c: LocalClient) -> None:
    """Upstream's generated graph in miniature: pod0 on node0 and pod1 on node1, each with its configmap,
    secret, PVC (bound to a PV with a kubelet-visible secret), service account and resource claim; shared
    objects referenced from both nodes."""
    pods = c.resource("pods")
    for i in (0, 1):
        await c.create(
            pods,
            pod(
                f"pod{i}-node{i}",
                f"node{i}",
                serviceAccountName=f"svcacct{i}-node{i}",
                volumes=[
                    {"name": "cm", "configMap": {"name": f"configmap{i}-pod{i}-node{i}"}},
                    {"name": "sec", "secret": {"secretName": f"secret{i}-pod{i}-node{i}"}},
                    {"name": "pvc", "persistentVolumeClaim": {"claimName": f"pvc{i}-pod{i}-node{i}"}},
                    {"name": "shared", "secret": {"secretName": "secret0-shared"}},
                ],
                resourceClaims=[{"name": "c", "resourceClaimName": f"claim{i}-pod{i}-node{i}"}],
            ),
            namespace="ns0",
        )
        await c.create(
            c.resource("persistentvolumes"),
            {
                "metadata": {"name": f"pv{i}-pvc{i}-pod{i}-node{i}"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "claimRef": {"namespace": "ns0", "name": f"pvc{i}-pod{i}-node{i}"},
                    "csi": {
                        "driver": "d",
                        "volumeHandle": "h",
                        "nodePublishSecretRef": {"namespace": "ns0", "name": f"secret-pv{i}-pvc{i}-pod{i}-node{i}"},
                        "controllerPublishSecretRef": {"namespace": "ns0", "name": "controller-only"},
                    },
                },
            },
        )
        await c.create(
            c.resource("volumeattachments"),
            {
                "metadata": {"name": f"attachment{i}-node{i}"},
                "spec": {"attacher": "a", "nodeName": f"node{i}", "source": {"persistentVolumeName": "pv"}},
            },
        )


@pytest.mark.parametrize(
    ("name", "a", "expected", "reason"),
    [
        ("allowed configmap", attrs("get", "configmaps", "configmap0-pod0-node0", "ns0"), Decision.ALLOW, ""),
        ("allowed secret via pod", attrs("get", "secrets", "secret0-pod0-node0", "ns0"), Decision.ALLOW, ""),
        ("list allowed secret via pod", attrs("list", "secrets", "secret0-pod0-node0", "ns0"), Decision.ALLOW, ""),
        ("watch allowed secret via pod", attrs("watch", "secrets", "secret0-pod0-node0", "ns0"), Decision.ALLOW, ""),
        (
            "disallowed list many secrets",
            attrs("list", "secrets", "", "ns0"),
            Decision.NO_OPINION,
            "No Object name found",
        ),
        (
            "disallowed list secrets from all namespaces",
            attrs("list", "secrets", "secret0-pod0-node0", ""),
            Decision.NO_OPINION,
            "can only read namespaced object of this type",
        ),
        (
            "disallowed write secret",
            attrs("update", "secrets", "secret0-pod0-node0", "ns0"),
            Decision.NO_OPINION,
            "can only read resources of this type",
        ),
        ("allowed shared secret via pod", attrs("get", "secrets", "secret0-shared", "ns0"), Decision.ALLOW, ""),
        (
            "allowed shared secret via pvc",
            attrs("get", "secrets", "secret-pv0-pvc0-pod0-node0", "ns0"),
            Decision.ALLOW,
            "",
        ),
        (
            "disallowed controller-only PV secret (not kubeletVisible)",
            attrs("get", "secrets", "controller-only", "ns0"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        ("allowed pvc", attrs("get", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0"), Decision.ALLOW, ""),
        ("allowed pv", attrs("get", "persistentvolumes", "pv0-pvc0-pod0-node0"), Decision.ALLOW, ""),
        (
            "disallowed configmap",
            attrs("get", "configmaps", "configmap1-pod1-node1", "ns0"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        (
            "disallowed secret via pod",
            attrs("get", "secrets", "secret1-pod1-node1", "ns0"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        (
            "disallowed shared secret via pvc",
            attrs("get", "secrets", "secret-pv1-pvc1-pod1-node1", "ns0"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        (
            "disallowed pvc",
            attrs("get", "persistentvolumeclaims", "pvc1-pod1-node1", "ns0"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        ("disallowed pv", attrs("get", "persistentvolumes", "pv1-pvc1-pod1-node1"), Decision.NO_OPINION, NO_REL),
        (
            "disallowed list pvcs",
            attrs("list", "persistentvolumeclaims", "", "ns0"),
            Decision.NO_OPINION,
            "can only get individual resources of this type",
        ),
        (
            "disallowed get pvc subresource",
            attrs("get", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0", subresource="foo"),
            Decision.NO_OPINION,
            "cannot get subresource",
        ),
        (
            "allowed pvc status update",
            attrs("update", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0", subresource="status"),
            Decision.ALLOW,
            "",
        ),
        (
            "disallowed get pvc status",
            attrs("get", "persistentvolumeclaims", "pvc0-pod0-node0", "ns0", subresource="status"),
            Decision.NO_OPINION,
            "can only get/update/patch this type",
        ),
        (
            "allowed attachment",
            attrs("get", "volumeattachments", "attachment0-node0", api_group="storage.k8s.io"),
            Decision.ALLOW,
            "",
        ),
        (
            "disallowed attachment - no relationship",
            attrs("get", "volumeattachments", "attachment1-node1", api_group="storage.k8s.io"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        (
            "allowed svcacct token create",
            attrs("create", "serviceaccounts", "svcacct0-node0", "ns0", subresource="token"),
            Decision.ALLOW,
            "",
        ),
        (
            "disallowed svcacct token create - serviceaccount not attached to node",
            attrs("create", "serviceaccounts", "svcacct1-node1", "ns0", subresource="token"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        (
            "disallowed svcacct token create - no subresource",
            attrs("create", "serviceaccounts", "svcacct0-node0", "ns0"),
            Decision.NO_OPINION,
            "can only create token subresource of serviceaccount",
        ),
        (
            "disallowed svcacct token create - non create",
            attrs("update", "serviceaccounts", "svcacct0-node0", "ns0", subresource="token"),
            Decision.NO_OPINION,
            "can only create tokens for individual service accounts",
        ),
        (
            "allowed get related service account",
            attrs("get", "serviceaccounts", "svcacct0-node0", "ns0"),
            Decision.ALLOW,
            "",
        ),
        (
            "disallowed get unrelated service account",
            attrs("get", "serviceaccounts", "svcacct1-node1", "ns0"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        (
            "allowed resourceclaim",
            attrs("get", "resourceclaims", "claim0-pod0-node0", "ns0", api_group="resource.k8s.io"),
            Decision.ALLOW,
            "",
        ),
        (
            "disallowed resourceclaim, other node",
            attrs("get", "resourceclaims", "claim1-pod1-node1", "ns0", api_group="resource.k8s.io"),
            Decision.NO_OPINION,
            NO_REL,
        ),
        ("get own pod", attrs("get", "pods", "pod0-node0", "ns0"), Decision.ALLOW, ""),
        ("get other node's pod", attrs("get", "pods", "pod1-node1", "ns0"), Decision.NO_OPINION, NO_REL),
        ("list pods by name (related)", attrs("list", "pods", "pod0-node0", "ns0"), Decision.ALLOW, ""),
        (
            "list pods with own spec.nodeName selector",
            attrs("list", "pods", field_selector=(Selector("spec.nodeName", "=", ("node0",)),)),
            Decision.ALLOW,
            "",
        ),
        (
            "watch pods with other spec.nodeName selector",
            attrs("watch", "pods", field_selector=(Selector("spec.nodeName", "=", ("node1",)),)),
            Decision.NO_OPINION,
            "can only list/watch pods with spec.nodeName field selector",
        ),
        (
            "list pods without selector",
            attrs("list", "pods"),
            Decision.NO_OPINION,
            "can only list/watch pods with spec.nodeName field selector",
        ),
        ("create mirror pod (NodeRestriction decides)", attrs("create", "pods", "", "ns0"), Decision.ALLOW, ""),
        ("update pod status", attrs("patch", "pods", "pod1-node1", "ns0", subresource="status"), Decision.ALLOW, ""),
        ("evict pod", attrs("create", "pods", "pod1-node1", "ns0", subresource="eviction"), Decision.ALLOW, ""),
        ("update pod: no opinion", attrs("update", "pods", "pod0-node0", "ns0"), Decision.NO_OPINION, ""),
        (
            "pod exec: no opinion",
            attrs("create", "pods", "pod0-node0", "ns0", subresource="exec"),
            Decision.NO_OPINION,
            "",
        ),
        ("get self node", attrs("get", "nodes", "node0"), Decision.ALLOW, ""),
        (
            "get other node",
            attrs("get", "nodes", "node1"),
            Decision.NO_OPINION,
            "node 'node0' cannot read 'node1', only its own Node object",
        ),
        (
            "list nodes",
            attrs("list", "nodes"),
            Decision.NO_OPINION,
            "node 'node0' cannot read all nodes, only its own Node object",
        ),
        ("update node status", attrs("patch", "nodes", "node1", subresource="status"), Decision.ALLOW, ""),
        ("delete node: no opinion", attrs("delete", "nodes", "node0"), Decision.NO_OPINION, ""),
    ],
)
async def test_authorizer(
    env: tuple[LocalClient, NodeAuthorizer], name: str, a: Attributes, expected: Decision, reason: str
) -> None:
    """``TestAuthorizer`` (and the selector cases of v1.37): each case names the upstream case it pins."""
    client, authorizer = env
    await _populate(client)
    assert authorizer.authorize(a) == (expected, reason), name


LEASE = {"api_group": "coordination.k8s.io"}
CSI = {"api_group": "storage.k8s.io"}
SLICE = {"api_group": "resource.k8s.io"}


@pytest.mark.parametrize(
    ("a", "expected", "reason"),
    [
        # TestAuthorizer's lease cases
        (
            attrs("get", "leases", "node0", "foo", **LEASE),
            Decision.NO_OPINION,
            'can only access leases in the "kube-node-lease" system namespace',
        ),
        (attrs("get", "leases", "node0", "kube-node-lease", **LEASE), Decision.ALLOW, ""),
        (attrs("create", "leases", "", "kube-node-lease", **LEASE), Decision.ALLOW, ""),
        (attrs("update", "leases", "node0", "kube-node-lease", **LEASE), Decision.ALLOW, ""),
        (attrs("patch", "leases", "node0", "kube-node-lease", **LEASE), Decision.ALLOW, ""),
        (attrs("delete", "leases", "node0", "kube-node-lease", **LEASE), Decision.ALLOW, ""),
        (
            attrs("update", "leases", "node1", "kube-node-lease", **LEASE),
            Decision.NO_OPINION,
            "can only access node lease with the same name as the requesting node",
        ),
        (
            attrs("list", "leases", "", "kube-node-lease", **LEASE),
            Decision.NO_OPINION,
            "can only get, create, update, patch, or delete a node lease",
        ),
        (
            attrs("deletecollection", "leases", "", "kube-node-lease", **LEASE),
            Decision.NO_OPINION,
            "can only get, create, update, patch, or delete a node lease",
        ),
        # TestAuthorizer's CSINode cases
        (attrs("get", "csinodes", "node0", **CSI), Decision.ALLOW, ""),
        (attrs("create", "csinodes", "", **CSI), Decision.ALLOW, ""),
        (
            attrs("get", "csinodes", "node1", **CSI),
            Decision.NO_OPINION,
            "can only access CSINode with the same name as the requesting node",
        ),
        (
            attrs("get", "csinodes", "node0", subresource="csiDrivers", **CSI),
            Decision.NO_OPINION,
            "cannot authorize CSINode subresources",
        ),
        (
            attrs("list", "csinodes", "", **CSI),
            Decision.NO_OPINION,
            "can only get, create, update, patch, or delete a CSINode",
        ),
        # resourceslices (TestAuthorizer "allowed ... resourceslice" + AuthorizeNodeWithSelectors)
        (attrs("create", "resourceslices", "", **SLICE), Decision.ALLOW, ""),
        (attrs("get", "resourceslices", "slice0-node0", **SLICE), Decision.ALLOW, ""),
        (attrs("delete", "resourceslices", "slice1-node1", **SLICE), Decision.NO_OPINION, NO_REL),
        (
            attrs("list", "resourceslices", field_selector=(Selector("nodeName", "=", ("node0",)),), **SLICE),
            Decision.ALLOW,
            "",
        ),
        (
            attrs("deletecollection", "resourceslices", **SLICE),
            Decision.NO_OPINION,
            "can only list/watch/deletecollection resourceslices with nodeName field selector",
        ),
        (
            attrs("get", "resourceslices", "slice0-node0", subresource="status", **SLICE),
            Decision.NO_OPINION,
            "cannot authorize ResourceSlice subresources",
        ),
        (
            attrs("escalate", "resourceslices", "slice0-node0", **SLICE),
            Decision.NO_OPINION,
            "only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, patch, "
            "delete, deletecollection",
        ),
        # static NodeRules (TestAuthorizer "allowed ... via node rules")
        (attrs("create", "events", "", "ns0"), Decision.ALLOW, ""),
        (attrs("list", "services", "", "ns0"), Decision.ALLOW, ""),
        (attrs("create", "tokenreviews", api_group="authentication.k8s.io"), Decision.ALLOW, ""),
        (attrs("list", "deployments", "", "ns0", api_group="apps"), Decision.NO_OPINION, ""),
        (attrs("get", "clusterroles", "admin", api_group="rbac.authorization.k8s.io"), Decision.NO_OPINION, ""),
    ],
)
async def test_leases_csinodes_slices_rules(
    env: tuple[LocalClient, NodeAuthorizer], a: Attributes, expected: Decision, reason: str
) -> None:
    client, authorizer = env
    slices = client.resource("resourceslices")
    for i in (0, 1):
        await client.create(
            slices,
            {
                "metadata": {"name": f"slice{i}-node{i}"},
                "spec": {
                    "driver": "d.example.com",
                    "nodeName": f"node{i}",
                    "pool": {"name": "p", "resourceSliceCount": 1},
                },
            },
        )
    assert authorizer.authorize(a) == (expected, reason)


async def test_non_nodes_and_unknown_nodes(env: tuple[LocalClient, NodeAuthorizer]) -> None:
    """``TestDefaultNodeIdentifier_NodeIdentity`` and ``Authorize``'s first two steps."""
    _, authorizer = env
    assert node_identity(UserInfo("system:node:foo", groups=("system:nodes",))) == ("foo", True)
    assert node_identity(UserInfo("system:node:foo", groups=("system:authenticated",))) == ("", False)
    assert node_identity(UserInfo("foo", groups=("system:nodes",))) == ("", False)
    assert node_identity(UserInfo("system:node:", groups=("system:nodes",))) == ("", True)
    assert node_identity(None) == ("", False)
    alice = UserInfo("alice", groups=("system:nodes",))
    assert authorizer.authorize(attrs("get", "secrets", "s", "ns0", user=alice)) == (Decision.NO_OPINION, "")
    nameless = UserInfo("system:node:", groups=("system:nodes",))
    assert authorizer.authorize(attrs("get", "secrets", "s", "ns0", user=nameless)) == (
        Decision.NO_OPINION,
        'unknown node for user "system:node:"',
    )
    assert authorizer.rules_for(NODE0, "ns0") == (
        [],
        [],
        True,
        "node authorizer does not support user rule resolution",
    )
    assert authorizer.rules_for(UserInfo("alice"), "ns0") == ([], [], False, "")


async def test_mirror_pods_grant_nothing(env: tuple[LocalClient, NodeAuthorizer]) -> None:
    """``Graph.AddPod``: a mirror pod gets its pod -> node edge only (defense in depth behind NodeRestriction)."""
    client, authorizer = env
    mirror = pod("static-node0", "node0", volumes=[{"name": "s", "secret": {"secretName": "stolen"}}])
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    await client.create(client.resource("pods"), mirror, namespace="ns0")
    assert authorizer.authorize(attrs("get", "pods", "static-node0", "ns0")) == (Decision.ALLOW, "")
    assert authorizer.authorize(attrs("get", "secrets", "stolen", "ns0")) == (Decision.NO_OPINION, NO_REL)


async def test_generated_claims_from_status(env: tuple[LocalClient, NodeAuthorizer]) -> None:
    """``resourceclaim.Name`` in ``AddPod``: a template's claim is related once ``status.resourceClaimStatuses``
    names it (upstream's populator re-adds the pod when the statuses change), and the DRA extended-resource
    claim of ``status.extendedResourceClaimStatus``."""
    client, authorizer = env
    pods = client.resource("pods")
    created = await client.create(
        pods,
        pod("p", "node0", resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "tmpl"}]),
        namespace="ns0",
    )
    claim = attrs("get", "resourceclaims", "p-gpu-abcde", "ns0", api_group="resource.k8s.io")
    assert authorizer.authorize(claim) == (Decision.NO_OPINION, NO_REL)
    created.setdefault("status", {})["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "p-gpu-abcde"}]
    updated = await client.update(pods, created, namespace="ns0", subresource="status")
    assert authorizer.authorize(claim) == (Decision.ALLOW, "")
    updated["status"]["extendedResourceClaimStatus"] = {
        "resourceClaimName": "p-extended-resources-xyz",
        "requestMappings": [
            {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
        ],
    }
    await client.update(pods, updated, namespace="ns0", subresource="status")
    extended = attrs("get", "resourceclaims", "p-extended-resources-xyz", "ns0", api_group="resource.k8s.io")
    assert authorizer.authorize(extended) == (Decision.ALLOW, "")


async def test_read_your_writes(env: tuple[LocalClient, NodeAuthorizer]) -> None:
    """kubeplane's invariant: a decision follows every completed write (bind, delete, PV rebind) with no wait,
    and stays right after the pods cache's ring wrapped around (the kind is rebuilt from the cache)."""
    client, authorizer = env
    pods = client.resource("pods")
    secret = attrs("get", "secrets", "s1", "ns0")
    assert authorizer.authorize(secret) == (Decision.NO_OPINION, NO_REL)
    await client.create(
        pods, pod("p1", "node0", volumes=[{"name": "s", "secret": {"secretName": "s1"}}]), namespace="ns0"
    )
    assert authorizer.authorize(secret) == (Decision.ALLOW, "")
    # a second pod on the node holding the same secret keeps it related after the first is deleted
    await client.create(
        pods, pod("p2", "node0", volumes=[{"name": "s", "secret": {"secretName": "s1"}}]), namespace="ns0"
    )
    await client.delete(pods, "p1", namespace="ns0", grace_period_seconds=0)
    assert authorizer.authorize(secret) == (Decision.ALLOW, "")
    assert authorizer.authorize(attrs("get", "pods", "p1", "ns0")) == (Decision.NO_OPINION, NO_REL)
    await client.delete(pods, "p2", namespace="ns0", grace_period_seconds=0)
    assert authorizer.authorize(secret) == (Decision.NO_OPINION, NO_REL)
    # an unbound pod relates nothing until it is bound
    await client.create(
        pods,
        {
            **pod("p3", ""),
            "spec": {
                "containers": [{"name": "c", "image": "i"}],
                "volumes": [{"name": "s", "secret": {"secretName": "s1"}}],
            },
        },
        namespace="ns0",
    )
    assert authorizer.authorize(secret) == (Decision.NO_OPINION, NO_REL)
    await client.create(
        pods,
        {"metadata": {"name": "p3"}, "target": {"kind": "Node", "name": "node0"}},
        namespace="ns0",
        subresource="binding",
        name="p3",
    )
    assert authorizer.authorize(secret) == (Decision.ALLOW, "")
    # wrap the ring: events the graph has not applied are gone, so it rebuilds pods from the cache
    cache = client.registry.cache(pods)
    rebuilds = authorizer.graph.rebuilds
    cache.ring_size = 2
    for i in range(50):  # each write drops one event off the ring until two are left
        if len(cache.ring) <= 2:
            break
        await client.create(pods, pod(f"filler{i}", "node1"), namespace="ns0")
    await client.delete(pods, "p3", namespace="ns0", grace_period_seconds=0)
    assert authorizer.authorize(secret) == (Decision.NO_OPINION, NO_REL)
    assert authorizer.graph.rebuilds == rebuilds + 1
