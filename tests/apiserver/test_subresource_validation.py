"""Every subresource validates before it writes, and a refused write changes nothing (issue 22).

End to end against an API server process (raw HTTP, so each body reaches the server as written): each case names
the upstream behaviour it pins, compares the exact code and message, and compares the stored objects (the pod,
the namespace, the workload, the PodDisruptionBudget) before and after. One in-process test reaches what HTTP
cannot provoke deterministically: a delete that fails after the eviction spent the budget.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.apiserver import deletion, subresources
from kubeplane.apiserver.errors import APIError
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore

from .conftest import Server
from .test_bad_input import request

NS = "subres"
PODS = f"/api/v1/namespaces/{NS}/pods"
PDBS = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
MERGE = "application/merge-patch+json"
DNS1123_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def _post(server: Server, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    return request(server, "POST", path, json.dumps(body).encode())


@pytest.fixture(scope="module", autouse=True)
def namespace(server: Server) -> None:
    status, doc = _post(server, "/api/v1/namespaces", {"metadata": {"name": NS}})
    assert status == 201, doc


def _pod(server: Server, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    pod = {"metadata": {"name": name, "labels": labels or {}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    status, doc = _post(server, PODS, pod)
    assert status == 201, doc
    return doc


def _get(server: Server, path: str) -> dict[str, Any]:
    status, doc = request(server, "GET", path)
    assert status == 200, doc
    return doc


# -- pods/binding --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "metadata", "code", "message"),
    [
        pytest.param(
            {"kind": "Node", "name": "../X"},
            None,
            422,
            f'Binding "{{pod}}" is invalid: target.name: Invalid value: "../X": {DNS1123_SUBDOMAIN}',
            id="path-traversal-name",
        ),
        pytest.param(
            {"kind": "Pod", "name": "n1"},
            None,
            422,
            'Binding "{pod}" is invalid: target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"',
            id="kind-not-node",
        ),
        pytest.param(
            {"kind": "Node"}, None, 422, 'Binding "{pod}" is invalid: target.name: Required value', id="no-name"
        ),
        pytest.param(
            {"name": "n1"},
            {"name": "someone-else"},
            400,
            "name in URL does not match name in Binding object",
            id="name-mismatch",
        ),
        pytest.param(
            {"name": "n1"},
            {"uid": "not-the-pods-uid"},
            409,
            'Operation cannot be fulfilled on pods "{pod}": Precondition failed: UID in precondition: '
            "not-the-pods-uid, UID in object meta: {uid}",
            id="uid-precondition",
        ),
    ],
)
def test_a_binding_upstream_refuses_binds_nothing(
    server: Server, target: dict[str, Any], metadata: dict[str, Any] | None, code: int, message: str
) -> None:
    """Upstream BindingREST.Create (pkg/registry/core/pod/storage/storage.go): the name on the URL (400),
    validation.ValidatePodBinding (target.kind, target.name), setPodNodeAndMetadata's uid precondition (409).
    The target's name must also be a node name (ValidateNodeName): it becomes spec.nodeName, which ValidatePodSpec
    checks on every later update (kubeplane stored "../X" and the pod then refused every update)."""
    pod = f"bind-{len(json.dumps(target))}-{code}-{len(json.dumps(metadata))}"
    created = _pod(server, pod)
    before = _get(server, f"{PODS}/{pod}")
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "Binding", "target": target}
    if metadata is not None:
        body["metadata"] = metadata
    status, doc = _post(server, f"{PODS}/{pod}/binding", body)
    expected = message.format(pod=pod, uid=created["metadata"]["uid"])
    assert (status, doc.get("message")) == (code, expected), doc
    assert _get(server, f"{PODS}/{pod}") == before


def test_the_legacy_bindings_collection_validates_the_target_too(server: Server) -> None:
    """POST namespaces/NS/bindings (upstream's LegacyBindingREST) is the same BindingREST.Create."""
    _pod(server, "legacy")
    before = _get(server, f"{PODS}/legacy")
    body = {"metadata": {"name": "legacy"}, "target": {"name": "Not_A_Node"}}
    status, doc = _post(server, f"/api/v1/namespaces/{NS}/bindings", body)
    assert (status, doc.get("reason")) == (422, "Invalid"), doc
    assert (
        doc["message"] == f'Binding "legacy" is invalid: target.name: Invalid value: "Not_A_Node": {DNS1123_SUBDOMAIN}'
    )
    assert _get(server, f"{PODS}/legacy") == before


def test_binding_annotations_are_validated_as_the_pods_would_be(server: Server) -> None:
    """The binding's annotations are merged into the pod's (setPodNodeAndMetadata); a key ValidateAnnotations
    refuses would make a pod that fails its own validation, so the binding is refused (422) and binds nothing."""
    _pod(server, "annotated")
    before = _get(server, f"{PODS}/annotated")
    body = {"metadata": {"name": "annotated", "annotations": {"bad key!": "v"}}, "target": {"name": "n1"}}
    status, doc = _post(server, f"{PODS}/annotated/binding", body)
    assert (status, doc.get("reason")) == (422, "Invalid"), doc
    assert doc["message"].startswith('Binding "annotated" is invalid: metadata.annotations: Invalid value: "bad key!"')
    assert _get(server, f"{PODS}/annotated") == before


def test_binding_annotations_too_large_together_with_the_pods_are_refused_as_the_pod(server: Server) -> None:
    """Each half fits ValidateAnnotations' 256 KiB but the merged map does not: the bound pod would fail the Pod's
    validation on every later update, so the binding is a 422 for the Pod (the one check of the bound pod
    kubeplane repeats at bind time: the rest of the pod is what was stored) and binds nothing."""
    half = "x" * (150 * 1024)
    pod = {
        "metadata": {"name": "big", "annotations": {"a": half}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    assert _post(server, PODS, pod)[0] == 201
    before = _get(server, f"{PODS}/big")
    body = {"metadata": {"name": "big", "annotations": {"b": half}}, "target": {"name": "n1"}}
    status, doc = _post(server, f"{PODS}/big/binding", body)
    assert (status, doc.get("reason")) == (422, "Invalid"), doc
    assert doc["message"] == 'Pod "big" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes'
    assert _get(server, f"{PODS}/big") == before


def test_a_dry_run_binding_answers_success_and_binds_nothing(server: Server) -> None:
    """CreateOptions.dryRun reaches BindingREST.Create (GuaranteedUpdate with dryRun): kubeplane bound for real."""
    _pod(server, "dry-bound")
    before = _get(server, f"{PODS}/dry-bound")
    body = {"metadata": {"name": "dry-bound"}, "target": {"name": "n1"}}
    status, doc = request(server, "POST", f"{PODS}/dry-bound/binding?dryRun=All", json.dumps(body).encode())
    assert (status, doc.get("status")) == (201, "Success"), doc
    assert _get(server, f"{PODS}/dry-bound") == before
    status, doc = _post(server, f"{PODS}/dry-bound/binding", body)
    assert status == 201, doc
    assert _get(server, f"{PODS}/dry-bound")["spec"]["nodeName"] == "n1"


# -- namespaces/finalize -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("finalizers", "message"),
    [
        pytest.param(
            ["kubernetes", "custom"],
            'Namespace "{ns}" is invalid: spec.finalizers[1]: Invalid value: "custom": name is neither a standard '
            "finalizer name nor is it fully qualified",
            id="unqualified",
        ),
        pytest.param(
            ["example.com/a b"],
            'Namespace "{ns}" is invalid: spec.finalizers[0]: Invalid value: "example.com/a b": name part must '
            "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            id="not-a-qualified-name",
        ),
    ],
)
def test_finalize_validates_the_finalizers_and_changes_nothing(
    server: Server, finalizers: list[str], message: str
) -> None:
    """Upstream namespaceFinalizeStrategy.ValidateUpdate = ValidateNamespaceFinalizeUpdate: each finalizer at its
    index must be a qualified name, and unprefixed only a standard one (kubeplane wrote any string)."""
    ns = f"fin-{len(finalizers)}-{len(message)}"
    _post(server, "/api/v1/namespaces", {"metadata": {"name": ns}})
    before = _get(server, f"/api/v1/namespaces/{ns}")
    body = {"metadata": {"name": ns}, "spec": {"finalizers": finalizers}}
    status, doc = request(server, "PUT", f"/api/v1/namespaces/{ns}/finalize", json.dumps(body).encode())
    assert (status, doc.get("reason"), doc.get("message")) == (422, "Invalid", message.format(ns=ns)), doc
    assert _get(server, f"/api/v1/namespaces/{ns}") == before


def test_finalize_takes_the_standard_finalizers_honours_dry_run_and_the_url_name(server: Server) -> None:
    """helper.IsStandardFinalizerName: kubernetes, orphan and foregroundDeletion need no prefix. UpdateOptions.dryRun
    writes nothing (kubeplane wrote); a body naming another namespace is upstream's checkName 400."""
    _post(server, "/api/v1/namespaces", {"metadata": {"name": "fin-std"}})
    before = _get(server, "/api/v1/namespaces/fin-std")
    path = "/api/v1/namespaces/fin-std/finalize"
    body = {"metadata": {"name": "fin-std"}, "spec": {"finalizers": ["orphan", "foregroundDeletion"]}}
    status, doc = request(server, "PUT", f"{path}?dryRun=All", json.dumps(body).encode())
    assert status == 200, doc
    assert doc["spec"]["finalizers"] == ["orphan", "foregroundDeletion"]
    assert _get(server, "/api/v1/namespaces/fin-std") == before
    other = {"metadata": {"name": "other"}, "spec": {"finalizers": []}}
    status, doc = request(server, "PUT", path, json.dumps(other).encode())
    assert (status, doc.get("message")) == (
        400,
        "the name of the object (other) does not match the name on the URL (fin-std)",
    ), doc
    assert _get(server, "/api/v1/namespaces/fin-std") == before
    status, doc = request(server, "PUT", path, json.dumps(body).encode())
    assert status == 200, doc
    assert _get(server, "/api/v1/namespaces/fin-std")["spec"]["finalizers"] == ["orphan", "foregroundDeletion"]


# -- status ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("addresses", "code", "message"),
    [
        pytest.param(
            [{"type": "InternalIP", "address": 5}],
            400,
            "json: cannot unmarshal number into Go struct field NodeAddress.status.addresses.address of type string",
            id="mistyped",
        ),
        pytest.param(
            [{"type": "Hostname", "address": "a"}, {"type": "Hostname", "address": "a"}],
            422,
            "status.addresses[1]: Duplicate value:",
            id="duplicate",
        ),
    ],
)
def test_a_node_whose_status_its_updates_would_refuse_is_not_created(
    server: Server, addresses: list[Any], code: int, message: str
) -> None:
    """A node keeps its status on create (kubelets register with it), and upstream's ValidateNode does not look at
    the addresses that ValidateNodeUpdate refuses (duplicates; kubeplane's create did not even read their types,
    now typed decoding's 400): such a node was stored and then refused every update. Now the create is refused
    and nothing is stored."""
    name = f"bad-addresses-{len(addresses)}"
    status, doc = _post(server, "/api/v1/nodes", {"metadata": {"name": name}, "status": {"addresses": addresses}})
    assert status == code, doc
    assert message in doc["message"]
    missing, _ = request(server, "GET", f"/api/v1/nodes/{name}")
    assert missing == 404


def test_a_status_update_that_fails_validation_changes_nothing(server: Server) -> None:
    """ValidateNodeUpdate on nodes/status (duplicate addresses) and a Deployment's ValidateDeploymentStatusUpdate:
    422 on the kind, the stored object as it was."""
    node = {"metadata": {"name": "status-node"}, "status": {"addresses": [{"type": "Hostname", "address": "a"}]}}
    assert _post(server, "/api/v1/nodes", node)[0] == 201
    before = _get(server, "/api/v1/nodes/status-node")
    twice = {"status": {"addresses": [{"type": "Hostname", "address": "a"}, {"type": "Hostname", "address": "a"}]}}
    status, doc = request(
        server, "PATCH", "/api/v1/nodes/status-node/status", json.dumps(twice).encode(), content_type=MERGE
    )
    assert (status, doc.get("reason")) == (422, "Invalid"), doc
    assert doc["message"].startswith('Node "status-node" is invalid: status.addresses[1]: Duplicate value:')
    assert _get(server, "/api/v1/nodes/status-node") == before


# -- scale -----------------------------------------------------------------------------------------------------

DEPLOYMENT = {
    "metadata": {"name": "scaled"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
    },
}


@pytest.mark.parametrize(
    ("query", "spec", "metadata", "code", "message"),
    [
        pytest.param(
            "",
            {"replicas": -1},
            {},
            422,
            'Scale.autoscaling "scaled" is invalid: spec.replicas: Invalid value: -1: '
            "must be greater than or equal to 0",
            id="negative",
        ),
        pytest.param(
            "",
            {"replicas": 2**31},
            {},
            400,
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal number 2147483648 into Go '
            "struct field ScaleSpec.spec.replicas of type int32",
            id="beyond-int32",
        ),
        pytest.param(
            "",
            {"replicas": 3},
            {"name": "other"},
            400,
            "the name of the object (other) does not match the name on the URL (scaled)",
            id="name-mismatch",
        ),
        pytest.param("?dryRun=All", {"replicas": 5}, {}, 200, None, id="dry-run"),
    ],
)
def test_a_scale_write_that_is_refused_or_dry_changes_nothing(
    server: Server, query: str, spec: dict[str, Any], metadata: dict[str, Any], code: int, message: str | None
) -> None:
    """Upstream ValidateScale (replicas >= 0), ScaleSpec.replicas an int32 (encoding/json), the update handler's
    checkName, and UpdateOptions.dryRun (kubeplane scaled for real on a dry run)."""
    if request(server, "GET", f"{DEPLOYMENTS}/scaled")[0] == 404:
        assert _post(server, DEPLOYMENTS, DEPLOYMENT)[0] == 201
    before = _get(server, f"{DEPLOYMENTS}/scaled")
    body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": metadata, "spec": spec}
    status, doc = request(server, "PUT", f"{DEPLOYMENTS}/scaled/scale{query}", json.dumps(body).encode())
    assert status == code, doc
    if message is not None:
        assert doc["message"] == message
    else:
        assert doc["spec"]["replicas"] == spec["replicas"]
    assert _get(server, f"{DEPLOYMENTS}/scaled") == before


# -- pods/eviction ---------------------------------------------------------------------------------------------


def _guarded_pod(server: Server, name: str) -> None:
    """A running, bound pod selected by a budget that allows one disruption."""
    _pod(server, name, {"guard": name})
    assert _post(server, f"{PODS}/{name}/binding", {"metadata": {"name": name}, "target": {"name": "n1"}})[0] == 201
    running = json.dumps({"status": {"phase": "Running"}}).encode()
    assert request(server, "PATCH", f"{PODS}/{name}/status", running, content_type=MERGE)[0] == 200
    pdb = {"metadata": {"name": name}, "spec": {"minAvailable": 0, "selector": {"matchLabels": {"guard": name}}}}
    assert _post(server, PDBS, pdb)[0] == 201
    budget = {"status": {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1}}
    status, doc = request(server, "PATCH", f"{PDBS}/{name}/status", json.dumps(budget).encode(), content_type=MERGE)
    assert status == 200, doc


@pytest.mark.parametrize(
    ("query", "delete_options", "metadata", "code", "message"),
    [
        pytest.param(
            "",
            {"preconditions": {"uid": "someone-else"}},
            None,
            409,
            'Operation cannot be fulfilled on pods "{pod}": Precondition failed: UID in precondition: someone-else, '
            "UID in object meta: {uid}",
            id="uid-precondition",
        ),
        pytest.param(
            "",
            {"preconditions": {"resourceVersion": "1"}},
            None,
            409,
            'Operation cannot be fulfilled on pods "{pod}": Precondition failed: ResourceVersion in precondition: 1, '
            "ResourceVersion in object meta: {rv}",
            id="resource-version-precondition",
        ),
        pytest.param(
            "",
            {"propagationPolicy": "Bogus"},
            None,
            422,
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Bogus": supported '
            'values: "Foreground", "Background", "Orphan", "nil"',
            id="propagation-policy",
        ),
        pytest.param(
            "",
            None,
            {"name": "someone-else"},
            400,
            "name in URL does not match name in Eviction object",
            id="name-mismatch",
        ),
        pytest.param("?dryRun=All", None, None, 201, None, id="dry-run"),
    ],
)
def test_an_eviction_that_fails_or_is_dry_leaves_the_pod_and_the_budget_as_they_were(
    server: Server,
    query: str,
    delete_options: dict[str, Any] | None,
    metadata: dict[str, Any] | None,
    code: int,
    message: str | None,
) -> None:
    """Upstream EvictionREST.Create (pkg/registry/core/pod/storage/eviction.go): the name on the URL,
    propagateDryRun (a dry run checks the budget and writes nothing: checkAndDecrement returns before UpdateStatus),
    then checkAndDecrement, then the delete. kubeplane checked the delete's preconditions only after it had
    decremented the budget, so a 409 left disruptionsAllowed spent; and a dry-run eviction evicted for real."""
    pod = f"evict-{len(json.dumps(delete_options))}-{code}-{len(query)}"
    _guarded_pod(server, pod)
    pod_before, pdb_before = _get(server, f"{PODS}/{pod}"), _get(server, f"{PDBS}/{pod}")
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": metadata or {"name": pod}}
    if delete_options is not None:
        body["deleteOptions"] = delete_options
    status, doc = request(server, "POST", f"{PODS}/{pod}/eviction{query}", json.dumps(body).encode())
    assert status == code, doc
    if message is not None:
        meta = pod_before["metadata"]
        assert doc["message"] == message.format(pod=pod, uid=meta["uid"], rv=meta["resourceVersion"])
    assert _get(server, f"{PODS}/{pod}") == pod_before
    assert _get(server, f"{PDBS}/{pod}") == pdb_before
    # and the same eviction without the fault goes through, spending the budget
    status, doc = _post(server, f"{PODS}/{pod}/eviction", {"metadata": {"name": pod}})
    assert status == 201, doc
    assert _get(server, f"{PDBS}/{pod}")["status"]["disruptionsAllowed"] == 0


@pytest.fixture
async def registry() -> AsyncIterator[Registry]:
    reg = Registry(store=MemoryStore(), rng=random.Random(3))
    await reg.start()
    yield reg
    await reg.stop()


async def test_a_delete_that_fails_after_the_budget_was_spent_gives_the_disruption_back(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upstream decrements the budget (UpdateStatus), then deletes; a delete that fails leaves it spent until the
    disruption controller drops the disruptedPods entry. kubeplane gives the disruption back at once, so a failed
    eviction changes nothing. (The pod changing between the two steps is what makes the delete fail; here the
    delete is made to fail, which HTTP cannot provoke deterministically.)"""
    pods, pdbs = registry.resource("", "pods"), registry.resource("policy", "poddisruptionbudgets")
    pod = {"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    await registry.create(pods, "default", pod)
    await subresources.bind(registry, "default", "p", {"target": {"name": "n1"}})
    await registry.guaranteed_update(
        pods, "default", "p", lambda o: {**o, "status": {**o["status"], "phase": "Running"}}, subresource="status"
    )
    await registry.create(
        pdbs, "default", {"metadata": {"name": "b"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}}
    )
    budget = {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 0, "expectedPods": 1}
    await registry.guaranteed_update(pdbs, "default", "b", lambda o: {**o, "status": budget}, subresource="status")
    pdb_before = await registry.get_live(pdbs, "default", "b")

    async def conflicting_delete(*_args: Any, **_kwargs: Any) -> Any:
        spent = await registry.get_live(pdbs, "default", "b")
        assert spent is not None
        assert spent["status"]["disruptionsAllowed"] == 0
        raise APIError(code=409, reason="Conflict", message="the pod changed")

    monkeypatch.setattr(subresources, "delete_object", conflicting_delete)
    with pytest.raises(APIError) as refused:
        await subresources.evict(registry, "default", "p", {"metadata": {"name": "p"}})
    assert refused.value.code == 409
    restored = await registry.get_live(pdbs, "default", "b")
    assert restored is not None
    assert pdb_before is not None
    assert restored["status"] == pdb_before["status"]
    monkeypatch.setattr(subresources, "delete_object", deletion.delete_object)
    await subresources.evict(registry, "default", "p", {"metadata": {"name": "p"}})
    spent = await registry.get_live(pdbs, "default", "b")
    assert spent is not None
    assert spent["status"]["disruptionsAllowed"] == 0
    assert list(spent["status"]["disruptedPods"]) == ["p"]


def test_ephemeral_containers_are_not_served(server: Server) -> None:
    """pods/ephemeralcontainers is listed in discovery but has no route (405), so nothing can be written through
    it; ValidatePodEphemeralContainersUpdate has nothing to guard yet."""
    _pod(server, "eph")
    body = json.dumps({"spec": {"ephemeralContainers": [{"name": "d", "image": "busybox"}]}}).encode()
    status, doc = request(server, "PATCH", f"{PODS}/eph/ephemeralcontainers", body, content_type=MERGE)
    assert (status, doc.get("reason")) == (405, "MethodNotAllowed"), doc
    assert "ephemeralContainers" not in _get(server, f"{PODS}/eph")["spec"]
