"""Bad input gets the right Status, the server keeps serving, and stored data is unchanged.

Raw HTTP (http.client) so every malformed request reaches the server exactly as written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import Server

POD = {"metadata": {"name": "ok"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def request(
    server: Server,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    content_type: str = "application/json",
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    conn = server.connection(timeout=30)
    all_headers = {"Authorization": f"Bearer {server.token if token is None else token}", **(headers or {})}
    if body is not None:
        all_headers["Content-Type"] = content_type
    conn.request(method, path, body=body, headers=all_headers)
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw) if raw[:1] == b"{" else {"raw": raw.decode()}


@pytest.fixture(scope="module", autouse=True)
def seeded(server: Server) -> None:
    status, _ = request(server, "POST", "/api/v1/namespaces/default/pods", json.dumps(POD).encode())
    assert status == 201


PODS = "/api/v1/namespaces/default/pods"
BIG = b'{"metadata":{"name":"big"},"data":{"k":"' + b"x" * (3 * 1024 * 1024) + b'"}}'

# CVE-2019-1002100: copies that double the pod each time; upstream stops them at JSONPatchMaxCopyBytes (3 MiB).
COPY_BOMB = json.dumps(
    [{"op": "add", "path": "/metadata/annotations", "value": {"a": "x" * 1000}}]
    + [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/k{i}"} for i in range(20)]
).encode()

# (id, method, path, body, content type, expected code, expected reason, message fragment)
CASES: list[tuple[str, str, str, bytes | None, str, int, str, str]] = [
    (
        "json-patch-copy-bomb",
        "PATCH",
        f"{PODS}/ok",
        COPY_BOMB,
        "application/json-patch+json",
        422,
        "Invalid",
        "Unable to complete the copy, the accumulated size increase of copy is",
    ),
    ("malformed-json", "POST", PODS, b'{"metadata": {', "application/json", 400, "BadRequest", "not valid JSON"),
    ("empty-body", "POST", PODS, b"", "application/json", 400, "BadRequest", "empty"),
    ("body-not-object", "POST", PODS, b"[1, 2]", "application/json", 400, "BadRequest", "not a Pod"),
    (
        "wrong-kind",
        "POST",
        PODS,
        json.dumps({**POD, "kind": "Service", "metadata": {"name": "k"}}).encode(),
        "application/json",
        400,
        "BadRequest",
        "does not match the expected kind",
    ),
    (
        "wrong-namespace",
        "POST",
        PODS,
        json.dumps({**POD, "metadata": {"name": "n", "namespace": "kube-system"}}).encode(),
        "application/json",
        400,
        "BadRequest",
        "does not match the namespace",
    ),
    (
        "invalid-name",
        "POST",
        PODS,
        json.dumps({**POD, "metadata": {"name": "Not_Valid"}}).encode(),
        "application/json",
        422,
        "Invalid",
        'metadata.name: Invalid value: "Not_Valid"',
    ),
    (
        "missing-name",
        "POST",
        PODS,
        json.dumps({**POD, "metadata": {}}).encode(),
        "application/json",
        422,
        "Invalid",
        "name or generateName is required",
    ),
    (
        "invalid-label",
        "POST",
        PODS,
        json.dumps({**POD, "metadata": {"name": "l", "labels": {"bad key!": "v"}}}).encode(),
        "application/json",
        422,
        "Invalid",
        "metadata.labels",
    ),
    (
        # typed decoding first (handlers/rest.go transformDecodeError over encoding/json's UnmarshalTypeError)
        "labels-wrong-type",
        "POST",
        PODS,
        json.dumps({**POD, "metadata": {"name": "l", "labels": ["a"]}}).encode(),
        "application/json",
        400,
        "BadRequest",
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal array into Go struct field '
        "ObjectMeta.metadata.labels of type map[string]string",
    ),
    (
        "oversized-body",
        "POST",
        "/api/v1/namespaces/default/configmaps",
        BIG,
        "application/json",
        413,
        "RequestEntityTooLarge",
        "limit is 3145728",
    ),
    ("wrong-content-type", "POST", PODS, json.dumps(POD).encode(), "text/csv", 415, "UnsupportedMediaType", "text/csv"),
    (
        "unsupported-patch-type",
        "PATCH",
        f"{PODS}/ok",
        b"{}",
        "application/apply-patch+cbor",  # CBOR is behind an alpha feature gate upstream: 415 (yaml is served)
        415,
        "UnsupportedMediaType",
        "apply-patch+cbor",
    ),
    ("unknown-resource", "GET", "/api/v1/namespaces/default/widgets", None, "", 404, "NotFound", "could not find"),
    ("unknown-group", "GET", "/apis/example.com/v1/widgets", None, "", 404, "NotFound", "could not find"),
    ("unknown-subresource", "GET", f"{PODS}/ok/nonsense", None, "", 404, "NotFound", "could not find"),
    ("missing-object", "GET", f"{PODS}/nope", None, "", 404, "NotFound", 'pods "nope" not found'),
    (
        "missing-namespace",
        "POST",
        "/api/v1/namespaces/nope/pods",
        json.dumps(POD).encode(),
        "application/json",
        404,
        "NotFound",
        'namespaces "nope" not found',
    ),
    ("path-traversal", "GET", f"{PODS}/..%2F..%2Fsecrets", None, "", 400, "BadRequest", "invalid path segment"),
    ("dot-dot-name", "GET", f"{PODS}/..", None, "", 400, "BadRequest", "invalid path segment"),
    (
        "duplicate",
        "POST",
        PODS,
        json.dumps(POD).encode(),
        "application/json",
        409,
        "AlreadyExists",
        'pods "ok" already exists',
    ),
    (
        "stale-update",
        "PUT",
        f"{PODS}/ok",
        json.dumps({**POD, "metadata": {"name": "ok", "resourceVersion": "1"}}).encode(),
        "application/json",
        409,
        "Conflict",
        "the object has been modified",
    ),
    (
        "name-mismatch",
        "PUT",
        f"{PODS}/ok",
        json.dumps({**POD, "metadata": {"name": "other"}}).encode(),
        "application/json",
        400,
        "BadRequest",
        "does not match the name on the URL",
    ),
    (
        "bad-label-selector",
        "GET",
        f"{PODS}?labelSelector=a%20in%20b",
        None,
        "",
        400,
        "BadRequest",
        "unable to parse requirement",
    ),
    ("bad-limit", "GET", f"{PODS}?limit=many", None, "", 400, "BadRequest", 'strconv.ParseInt: parsing "many"'),
    (
        "bad-continue",
        "GET",
        f"{PODS}?limit=1&continue=garbage!",
        None,
        "",
        400,
        "BadRequest",
        "continue key is not valid",
    ),
    (
        # upstream decodes JSON patches leniently and fails unknown ops while applying them: 422
        "bad-json-patch",
        "PATCH",
        f"{PODS}/ok",
        b'[{"op": "explode", "path": "/x"}]',
        "application/json-patch+json",
        422,
        "Invalid",
        "explode",
    ),
    (
        "json-patch-not-a-list",
        "PATCH",
        f"{PODS}/ok",
        b'{"op": "add"}',
        "application/json-patch+json",
        400,
        "BadRequest",
        "",
    ),
    (
        "wrong-method",
        "PUT",
        PODS,
        json.dumps(POD).encode(),
        "application/json",
        405,
        "MethodNotAllowed",
        "does not allow",
    ),
]


@pytest.mark.parametrize(
    ("method", "path", "body", "content_type", "code", "reason", "fragment"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_bad_input_gets_a_status_and_changes_nothing(
    server: Server, method: str, path: str, body: bytes | None, content_type: str, code: int, reason: str, fragment: str
) -> None:
    _, before = request(server, "GET", f"{PODS}/ok")
    status, doc = request(server, method, path, body, content_type=content_type)
    assert (status, doc.get("kind"), doc.get("reason"), doc.get("code")) == (code, "Status", reason, code), doc
    assert fragment in doc["message"]
    _, after = request(server, "GET", f"{PODS}/ok")
    assert after == before, "a rejected request changed stored data"
    health, _ = request(server, "GET", "/healthz")
    assert health == 200


def test_invalid_object_lists_field_causes(server: Server) -> None:
    body = {"metadata": {"name": "Bad_Name", "labels": {"-x": "y"}}, "data": {}}
    status, doc = request(server, "POST", "/api/v1/namespaces/default/configmaps", json.dumps(body).encode())
    assert status == 422
    assert doc["details"]["kind"] == "ConfigMap"
    fields = [cause["field"] for cause in doc["details"]["causes"]]
    assert fields == ["metadata.name", "metadata.labels"]
    assert all(cause["reason"] == "FieldValueInvalid" for cause in doc["details"]["causes"])


@pytest.mark.parametrize(
    ("token", "code", "reason"),
    [("", 403, "Forbidden"), ("wrong-token", 401, "Unauthorized")],
    ids=["no-token", "wrong-token"],
)
def test_authentication_required_except_health(server: Server, token: str, code: int, reason: str) -> None:
    """A bad token is 401; no credentials is system:anonymous, refused (403) all but system:public-info-viewer's
    paths (upstream's anonymous authenticator and bootstrap policy)."""
    conn = server.connection(timeout=10)
    try:
        conn.request("GET", PODS, headers={"Authorization": f"Bearer {token}"} if token else {})
        response = conn.getresponse()
        doc = json.loads(response.read())
        assert (response.status, doc["reason"]) == (code, reason)
        for open_path in ("/healthz", "/livez", "/readyz", "/version"):
            conn.request("GET", open_path)
            reply = conn.getresponse()
            reply.read()
            assert reply.status == 200
    finally:
        conn.close()


def test_protobuf_only_accept_is_406(server: Server) -> None:
    status, doc = request(server, "GET", PODS, headers={"Accept": "application/vnd.kubernetes.protobuf"})
    assert (status, doc["reason"]) == (406, "NotAcceptable")


def test_discovery_documents(server: Server) -> None:
    status, core = request(server, "GET", "/api/v1")
    assert status == 200
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert (pods["kind"], pods["namespaced"], pods["shortNames"]) == ("Pod", True, ["po"])
    assert {"pods/status", "pods/binding", "pods/eviction"} <= {r["name"] for r in core["resources"]}
    _, groups = request(server, "GET", "/apis")
    assert {
        "apps",
        "coordination.k8s.io",
        "policy",
        "scheduling.k8s.io",
        "storage.k8s.io",
        "rbac.authorization.k8s.io",
        "events.k8s.io",
    } <= {g["name"] for g in groups["groups"]}
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    _, aggregated = request(server, "GET", "/apis", headers={"Accept": accept})
    assert aggregated["kind"] == "APIGroupDiscoveryList"
    apps = next(i for i in aggregated["items"] if i["metadata"]["name"] == "apps")
    deployments = next(r for r in apps["versions"][0]["resources"] if r["resource"] == "deployments")
    assert {"scale", "status"} <= {s["subresource"] for s in deployments["subresources"]}


@pytest.mark.parametrize(
    ("mode", "warned"), [("Warn", True), ("Ignore", False), ("", True)], ids=["warn", "ignore", "default-is-warn"]
)
def test_field_validation_warn_and_ignore_store_no_unknown_field(server: Server, mode: str, warned: bool) -> None:
    """fieldValidation Warn (the default) answers with a Warning header per problem, Ignore says nothing;
    either way the unknown field is dropped, as decoding into typed objects does upstream."""
    name = f"fv-{mode.lower() or 'default'}"
    body = {"metadata": {"name": name}, "data": {"k": "v"}, "bogus": 1}
    conn = server.connection()
    query = f"?fieldValidation={mode}" if mode else ""
    conn.request(
        "POST",
        f"/api/v1/namespaces/default/configmaps{query}",
        body=json.dumps(body),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    created = json.loads(response.read())
    warning = response.getheader("Warning")
    conn.close()
    assert response.status == 201
    assert "bogus" not in created
    assert (warning == '299 - "unknown field \\"bogus\\""') is warned
    assert (warning is None) is not warned
    _, stored = request(server, "GET", f"/api/v1/namespaces/default/configmaps/{name}")
    assert "bogus" not in stored


def test_aggregated_core_discovery_lists_pod_subresources(server: Server) -> None:
    accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
    _, core = request(server, "GET", "/api", headers={"Accept": accept})
    pods = next(r for r in core["items"][0]["versions"][0]["resources"] if r["resource"] == "pods")
    subs = {s["subresource"]: s for s in pods["subresources"]}
    assert {"eviction", "binding", "status"} <= set(subs)
    assert subs["eviction"]["responseKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}


CM = "/api/v1/namespaces/default/configmaps"


@pytest.mark.parametrize(
    ("method", "path", "query", "body", "kind", "message"),
    [
        pytest.param(
            "POST",
            CM,
            "dryRun=all",
            {"metadata": {"name": "dry-a"}},
            "CreateOptions",
            'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["all"]: supported values: "All"',
            id="create-lowercase",
        ),
        pytest.param(
            "POST",
            CM,
            "dryRun=Bogus",
            {"metadata": {"name": "dry-b"}},
            "CreateOptions",
            'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"',
            id="create-bogus",
        ),
        pytest.param(
            "POST",
            CM,
            "dryRun=All&dryRun=All",
            {"metadata": {"name": "dry-c"}},
            "CreateOptions",
            'CreateOptions.meta.k8s.io "" is invalid: dryRun: Invalid value: ["All","All"]: '
            "multiple dryRun values are not supported",
            id="create-repeated",
        ),
        pytest.param(
            "PATCH",
            f"{CM}/dry-target",
            "dryRun=",
            {"data": {"k": "changed"}},
            "PatchOptions",
            'PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: [""]: supported values: "All"',
            id="patch-empty",
        ),
        pytest.param(
            "DELETE",
            f"{CM}/dry-target",
            "dryRun=all",
            None,
            "DeleteOptions",
            'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["all"]: supported values: "All"',
            id="delete-lowercase",
        ),
        pytest.param(
            "DELETE",
            f"{CM}/dry-target",
            "",
            {"dryRun": ["all"]},
            "DeleteOptions",
            'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["all"]: supported values: "All"',
            id="delete-body",
        ),
    ],
)
def test_a_dry_run_upstream_does_not_recognise_is_refused_and_writes_nothing(
    server: Server, method: str, path: str, query: str, body: Any, kind: str, message: str
) -> None:
    """Upstream ValidateDryRun (apimachinery meta/v1/validation): only exactly ``All``, once; anything else is a
    422 on the options kind before the write runs. kubeplane used to write for real on ``dryRun=all``."""
    target = {"metadata": {"name": "dry-target"}, "data": {"k": "v"}}
    request(server, "POST", CM, json.dumps(target).encode())
    _, before = request(server, "GET", f"{CM}/dry-target")
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    encoded = json.dumps(body).encode() if body is not None else None
    status, doc = request(server, method, f"{path}?{query}", encoded, content_type=content_type)
    assert (status, doc.get("reason"), doc["details"]["kind"], doc["details"]["group"]) == (
        422,
        "Invalid",
        kind,
        "meta.k8s.io",
    ), doc
    assert doc["message"] == message
    _, after = request(server, "GET", f"{CM}/dry-target")
    assert after == before
    if method == "POST":
        created = body["metadata"]["name"]
        missing, _ = request(server, "GET", f"{CM}/{created}")
        assert missing == 404


def test_dry_run_all_writes_nothing_and_answers_as_a_write(server: Server) -> None:
    status, doc = request(server, "POST", f"{CM}?dryRun=All", json.dumps({"metadata": {"name": "dry-ok"}}).encode())
    assert status == 201, doc
    assert doc["metadata"]["name"] == "dry-ok"
    missing, _ = request(server, "GET", f"{CM}/dry-ok")
    assert missing == 404


@pytest.mark.parametrize("preconditions", [[], "", 5], ids=["array", "string", "number"])
def test_malformed_delete_preconditions_are_refused_and_delete_nothing(server: Server, preconditions: Any) -> None:
    """Upstream decodes DeleteOptions into its Go struct: a precondition of the wrong JSON type is a 400
    (``json: cannot unmarshal array into Go struct field DeleteOptions.preconditions``), never "no precondition"
    (kubeplane used to read ``[]`` as none and delete)."""
    request(server, "POST", CM, json.dumps({"metadata": {"name": "guarded"}}).encode())
    body = json.dumps({"preconditions": preconditions}).encode()
    status, doc = request(server, "DELETE", f"{CM}/guarded", body)
    assert (status, doc.get("reason")) == (400, "BadRequest"), doc
    assert "into Go struct field DeleteOptions.preconditions of type v1.Preconditions" in doc["message"]
    still, _ = request(server, "GET", f"{CM}/guarded")
    assert still == 200


def _bound_pod(server: Server, name: str) -> None:
    pod = {"metadata": {"name": name}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}}
    status, doc = request(server, "POST", PODS, json.dumps(pod).encode())
    assert status == 201, doc


@pytest.mark.parametrize("how", ["delete", "eviction"])
def test_a_grace_period_past_year_9999_saturates_instead_of_failing(server: Server, how: str) -> None:
    """gracePeriodSeconds is an int64 upstream; a value whose deadline RFC 3339 cannot write (after 9999) used to
    be a 500 (Python's datetime overflow). The deadline saturates at 9999-12-31T23:59:59Z; the pod is deleting."""
    name = f"graceful-{how}"
    _bound_pod(server, name)
    grace = 10**12
    if how == "delete":
        status, doc = request(server, "DELETE", f"{PODS}/{name}?gracePeriodSeconds={grace}")
    else:
        eviction = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"},
            "deleteOptions": {"gracePeriodSeconds": grace},
        }
        status, doc = request(server, "POST", f"{PODS}/{name}/eviction", json.dumps(eviction).encode())
    assert status in (200, 201), doc
    _, pod = request(server, "GET", f"{PODS}/{name}")
    assert pod["metadata"]["deletionTimestamp"] == "9999-12-31T23:59:59Z"
    assert pod["metadata"]["deletionGracePeriodSeconds"] == grace


def test_a_grace_period_beyond_int64_is_a_bad_request(server: Server) -> None:
    _bound_pod(server, "graceful-huge")
    status, doc = request(server, "DELETE", f"{PODS}/graceful-huge?gracePeriodSeconds={10**20}")
    assert (status, doc.get("reason")) == (400, "BadRequest"), doc
    # a query parameter goes through upstream's parameter codec (strconv.ParseInt), a body through encoding/json
    assert doc["message"] == 'strconv.ParseInt: parsing "100000000000000000000": value out of range'
    body = json.dumps({"gracePeriodSeconds": 10**20}).encode()
    status, doc = request(server, "DELETE", f"{PODS}/graceful-huge", body)
    assert (status, doc.get("reason")) == (400, "BadRequest"), doc
    assert "DeleteOptions.gracePeriodSeconds of type int64" in doc["message"]
    still, pod = request(server, "GET", f"{PODS}/graceful-huge")
    assert still == 200
    assert "deletionTimestamp" not in pod["metadata"]


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize(
    ("path", "message"),
    [
        pytest.param(f"{PODS}/a%25b", """Name parameter invalid: "a%b": may not contain '%'""", id="escaped-percent"),
        pytest.param(f"{PODS}/a%zz", """Name parameter invalid: "a%zz": may not contain '%'""", id="bad-escape"),
        pytest.param(
            "/api/v1/namespaces/a%25b/pods/p",
            """Namespace parameter invalid: "a%b": may not contain '%'""",
            id="namespace",
        ),
    ],
)
def test_a_name_no_key_can_hold_is_a_bad_request(server: Server, method: str, path: str, message: str) -> None:
    """Upstream's NamespaceKeyFunc refuses a name that is not a valid path segment with a 400 ("Name parameter
    invalid: %q: ..."); a '%' in a URL's name was a 500 here (an uncaught InvalidKeyError)."""
    body = b"{}" if method in ("PUT", "PATCH") else None
    content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
    status, doc = request(server, method, path, body, content_type=content_type)
    assert (status, doc.get("reason"), doc.get("message")) == (400, "BadRequest", message), doc


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "scaled"},
    "spec": {
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
    },
}


@pytest.mark.parametrize(
    ("case", "method", "path", "body", "message"),
    [
        pytest.param(
            "binding",
            "POST",
            f"{PODS}/unbound/binding",
            {"metadata": "x", "target": {"kind": "Node", "name": "n1"}},
            'Binding in version "v1" cannot be handled as a Binding: '
            "json: cannot unmarshal string into Go struct field Binding.metadata of type v1.ObjectMeta",
            id="binding-metadata",
        ),
        pytest.param(
            "binding",
            "POST",
            f"{PODS}/unbound/binding",
            {"metadata": {"name": "unbound", "annotations": "x"}, "target": {"kind": "Node", "name": "n1"}},
            'Binding in version "v1" cannot be handled as a Binding: '
            "json: cannot unmarshal string into Go struct field ObjectMeta.metadata.annotations of type "
            "map[string]string",
            id="binding-annotations",
        ),
        pytest.param(
            "scale",
            "PUT",
            "/apis/apps/v1/namespaces/default/deployments/scaled/scale",
            {"metadata": "x", "spec": {"replicas": 2}},
            'Scale in version "v1" cannot be handled as a Scale: '
            "json: cannot unmarshal string into Go struct field Scale.metadata of type v1.ObjectMeta",
            id="scale-metadata",
        ),
        pytest.param(
            "finalize",
            "PUT",
            "/api/v1/namespaces/fin/finalize",
            {"metadata": {"name": "fin"}, "spec": "x"},
            'Namespace in version "v1" cannot be handled as a Namespace: '
            "json: cannot unmarshal string into Go struct field Namespace.spec of type v1.NamespaceSpec",
            id="finalize-spec",
        ),
        pytest.param(
            "finalize",
            "PUT",
            "/api/v1/namespaces/fin/finalize",
            {"metadata": {"name": "fin"}, "spec": {"finalizers": [1]}},
            'Namespace in version "v1" cannot be handled as a Namespace: '
            "json: cannot unmarshal number into Go struct field NamespaceSpec.spec.finalizers of type v1.FinalizerName",
            id="finalize-finalizer",
        ),
    ],
)
def test_a_subresource_body_of_the_wrong_type_is_refused_and_changes_nothing(
    server: Server, case: str, method: str, path: str, body: Any, message: str
) -> None:
    """Upstream decodes a subresource's body into its Go struct first: a field of the wrong JSON type is a 400
    with encoding/json's message and nothing is written (these were 500s; read leniently, a finalize with a
    malformed spec would have dropped the namespace's finalizers)."""
    if case == "binding":
        pod = {"metadata": {"name": "unbound"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
        request(server, "POST", PODS, json.dumps(pod).encode())
        target = f"{PODS}/unbound"
    elif case == "scale":
        request(server, "POST", "/apis/apps/v1/namespaces/default/deployments", json.dumps(DEPLOYMENT).encode())
        target = "/apis/apps/v1/namespaces/default/deployments/scaled"
    else:
        request(server, "POST", "/api/v1/namespaces", json.dumps({"metadata": {"name": "fin"}}).encode())
        target = "/api/v1/namespaces/fin"
    _, before = request(server, "GET", target)
    status, doc = request(server, method, path, json.dumps(body).encode())
    assert (status, doc.get("reason"), doc.get("message")) == (400, "BadRequest", message), doc
    _, after = request(server, "GET", target)
    assert after == before
