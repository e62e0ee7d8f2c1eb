"""Typed decoding end to end: a body field of the wrong JSON type is refused before anything runs, nothing is
stored, and everything stored decodes into the Go types and parses with the official client.

Pins kube-apiserver v1.37: handlers/create.go and update.go decode with sigs.k8s.io/json and answer a decoding
error through rest.go ``transformDecodeError`` (400 ``<Kind> in version "<v>" cannot be handled as a <Kind>:
<error>``); handlers/patch.go decodes the patched object and answers ``NewInvalid(GroupKind{}, "", patch: Invalid
value: ...)`` (422), quoting the patched JSON (JSON and merge patches) or ``%+v`` of the patch (strategic merge,
whose conversion is runtime/converter.go's). Every cause here was a 500 or a stored invalid object (issue 22).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client

from kubeplane.api import typed

from .conftest import Server
from .test_bad_input import request

PODS = "/api/v1/namespaces/default/pods"
CONTAINER = {"name": "c", "image": "nginx"}
QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [CONTAINER], **spec}}


def _cannot_handle(kind: str, error: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: {error}'


@pytest.fixture(scope="module", autouse=True)
def seeded(server: Server) -> None:
    for path, body in [
        (PODS, _pod("typed")),
        ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "typed-cm"}, "data": {"k": "v"}}),
        ("/api/v1/nodes", {"metadata": {"name": "typed-node"}, "status": {"capacity": {"cpu": "4"}}}),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            {
                "metadata": {"name": "typed-deploy"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "t"}},
                    "template": {"metadata": {"labels": {"app": "t"}}, "spec": {"containers": [CONTAINER]}},
                },
            },
        ),
    ]:
        status, doc = request(server, "POST", path, json.dumps(body).encode())
        assert status == 201, doc


@pytest.mark.parametrize(
    ("path", "body", "message"),
    [
        pytest.param(
            PODS,
            _pod("sched", schedulerName=5),
            _cannot_handle(
                "Pod", "json: cannot unmarshal number into Go struct field PodSpec.spec.schedulerName of type string"
            ),
            id="schedulerName-number",
        ),
        pytest.param(
            PODS,
            {"metadata": {"name": "args"}, "spec": {"containers": [{**CONTAINER, "args": {"a": 1}}]}},
            _cannot_handle(
                "Pod",
                "json: cannot unmarshal object into Go struct field Container.spec.containers.args of type []string",
            ),
            id="args-object",
        ),
        pytest.param(
            PODS,
            {"metadata": {"name": "fin", "finalizers": [1]}, "spec": {"containers": [CONTAINER]}},
            _cannot_handle(
                "Pod",
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.finalizers of type string",
            ),
            id="finalizers-number",
        ),
        pytest.param(
            PODS,
            {
                "metadata": {"name": "cpu"},
                "spec": {"containers": [{**CONTAINER, "resources": {"requests": {"cpu": "abc"}}}]},
            },
            _cannot_handle("Pod", QUANTITY_FORMAT),
            id="quantity-before-qos",  # was a 500: the QoS class was computed from the quantity before validation
        ),
        pytest.param(
            PODS,
            {"metadata": {"name": "bool"}, "spec": {"containers": True}},
            _cannot_handle(
                "Pod",
                "json: cannot unmarshal bool into Go struct field PodSpec.spec.containers of type []v1.Container",
            ),
            id="containers-bool",
        ),
        pytest.param(
            "/api/v1/namespaces",
            {"metadata": {"name": "spec-string"}, "spec": "x"},
            _cannot_handle(
                "Namespace",
                "json: cannot unmarshal string into Go struct field Namespace.spec of type v1.NamespaceSpec",
            ),
            id="namespace-spec-string",  # was a 500 (AttributeError)
        ),
        pytest.param(
            "/api/v1/namespaces/default/configmaps",
            {"metadata": {"name": "cm", "labels": {"a": 1}}, "data": {"k": "v"}},
            _cannot_handle(
                "ConfigMap",
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
            ),
            id="label-value-number",
        ),
    ],
)
def test_a_create_with_a_wrongly_typed_field_is_a_400_and_stores_nothing(
    server: Server, path: str, body: dict[str, Any], message: str
) -> None:
    status, doc = request(server, "POST", path, json.dumps(body).encode())
    assert (status, doc.get("reason"), doc.get("message")) == (400, "BadRequest", message), doc
    missing, _ = request(server, "GET", f"{path}/{body['metadata']['name']}")
    assert missing == 404


def test_type_errors_trump_strict_field_errors(server: Server) -> None:
    """serializer/json Decode returns the decoding error before the strict (unknown field) ones."""
    body = _pod("both", schedulerName=5)
    body["spec"]["bogus"] = 1
    status, doc = request(server, "POST", f"{PODS}?fieldValidation=Strict", json.dumps(body).encode())
    assert (status, doc["message"]) == (
        400,
        _cannot_handle(
            "Pod", "json: cannot unmarshal number into Go struct field PodSpec.spec.schedulerName of type string"
        ),
    )


def test_a_malformed_node_status_is_refused_and_the_node_stays_updatable(server: Server) -> None:
    """A Node whose status was stored malformed used to refuse every later update."""
    _, before = request(server, "GET", "/api/v1/nodes/typed-node")
    bad = {"metadata": {"name": "typed-node"}, "status": {"capacity": {"cpu": []}, "conditions": "x"}}
    status, doc = request(server, "PUT", "/api/v1/nodes/typed-node/status", json.dumps(bad).encode())
    assert (status, doc["message"]) == (400, _cannot_handle("Node", QUANTITY_FORMAT)), doc
    _, after = request(server, "GET", "/api/v1/nodes/typed-node")
    assert after == before
    good = {**after, "metadata": {**after["metadata"], "labels": {"ok": "yes"}}}
    status, doc = request(server, "PUT", "/api/v1/nodes/typed-node", json.dumps(good).encode())
    assert status == 200, doc


@pytest.mark.parametrize(
    ("content_type", "patch", "message_end"),
    [
        pytest.param(
            "application/merge-patch+json",
            {"spec": {"schedulerName": 5}},
            "json: cannot unmarshal number into Go struct field PodSpec.spec.schedulerName of type string",
            id="merge",
        ),
        pytest.param(
            "application/json-patch+json",
            [{"op": "replace", "path": "/spec/schedulerName", "value": ["x"]}],
            "json: cannot unmarshal array into Go struct field PodSpec.spec.schedulerName of type string",
            id="json",
        ),
        pytest.param(
            "application/strategic-merge-patch+json",
            {"spec": {"schedulerName": 5}},
            'patch: Invalid value: "map[spec:map[schedulerName:5]]": cannot convert int64 to string',
            id="strategic",
        ),
        pytest.param(
            "application/strategic-merge-patch+json",
            {"spec": {"activeDeadlineSeconds": "10"}},
            'patch: Invalid value: "map[spec:map[activeDeadlineSeconds:10]]": unrecognized type: int64',
            id="strategic-string-to-int",
        ),
    ],
)
def test_a_patch_that_makes_a_field_the_wrong_type_is_a_422_and_changes_nothing(
    server: Server, content_type: str, patch: Any, message_end: str
) -> None:
    _, before = request(server, "GET", f"{PODS}/typed")
    status, doc = request(server, "PATCH", f"{PODS}/typed", json.dumps(patch).encode(), content_type=content_type)
    assert (status, doc.get("reason")) == (422, "Invalid"), doc
    assert doc["message"].startswith(' "" is invalid: patch: Invalid value: ')
    assert doc["message"].endswith(message_end)
    assert doc["details"]["causes"][0]["field"] == "patch"
    _, after = request(server, "GET", f"{PODS}/typed")
    assert after == before


def test_a_scale_merge_patch_of_the_wrong_type_is_a_422(server: Server) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments/typed-deploy"
    _, before = request(server, "GET", path)
    body = json.dumps({"spec": {"replicas": "3"}}).encode()
    status, doc = request(server, "PATCH", f"{path}/scale", body, content_type="application/merge-patch+json")
    assert (status, doc.get("reason")) == (422, "Invalid"), doc
    assert doc["message"].endswith(
        "json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"
    )
    _, after = request(server, "GET", path)
    assert after == before


def test_an_eviction_body_of_the_wrong_type_is_a_400(server: Server) -> None:
    body = {"metadata": {"name": "typed"}, "deleteOptions": {"gracePeriodSeconds": "0"}}
    status, doc = request(server, "POST", f"{PODS}/typed/eviction", json.dumps(body).encode())
    assert (status, doc["message"]) == (
        400,
        _cannot_handle(
            "Eviction",
            "json: cannot unmarshal string into Go struct field DeleteOptions.deleteOptions.gracePeriodSeconds of "
            "type int64",
        ),
    ), doc
    still, _ = request(server, "GET", f"{PODS}/typed")
    assert still == 200


def test_nulls_and_unknown_fields_are_not_stored(server: Server) -> None:
    body = _pod("nulls", nodeSelector={"a": None}, hostname=None)
    body["metadata"]["annotations"] = None
    body["spec"]["containers"] = [{**CONTAINER, "bogus": 1}]
    status, doc = request(server, "POST", PODS, json.dumps(body).encode())
    assert status == 201, doc
    assert doc["spec"]["nodeSelector"] == {"a": ""}
    assert "hostname" not in doc["spec"]
    assert "annotations" not in doc["metadata"]
    assert "bogus" not in doc["spec"]["containers"][0]


def _official(data: dict[str, Any], model: str) -> Any:
    api = client.ApiClient()
    return api._ApiClient__deserialize(data, model)


@pytest.mark.parametrize(
    ("path", "model", "kind"),
    [
        (PODS, "V1PodList", "Pod"),
        ("/api/v1/nodes", "V1NodeList", "Node"),
        ("/api/v1/namespaces", "V1NamespaceList", "Namespace"),
        ("/api/v1/namespaces/default/configmaps", "V1ConfigMapList", "ConfigMap"),
    ],
)
def test_everything_stored_decodes_into_the_go_types_and_the_official_models(
    server: Server, path: str, model: str, kind: str
) -> None:
    status, doc = request(server, "GET", path)
    assert status == 200, doc
    assert doc["items"]
    for item in doc["items"]:
        assert typed.decode(item, group="", version="v1", kind=kind) is not None
    parsed = _official(doc, model)
    assert len(parsed.items) == len(doc["items"])


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (
            b'{"metadata":{"name":"dup"},"spec":{"containers":[{"name":"c","image":"nginx"}],'
            b'"nodeName":"a","nodeName":"b"}}',
            'duplicate field "spec.nodeName"',
        ),
        (b'{"metadata":{"name":"unk"},"spec":{"containers":[{"name":"c","image":"nginx","x":1}]}}', "x"),
    ],
    ids=["duplicate", "unknown"],
)
def test_compact_bodies_still_get_strict_field_validation(server: Server, raw: bytes, problem: str) -> None:
    """Strict field validation skips its walk for compact bodies without unknown keys (what client-go sends); a
    compact body with a duplicate (orjson keeps the last, so it cannot write the body back) or an unknown field
    still gets upstream's strict-decoding error."""
    status, doc = request(server, "POST", f"{PODS}?fieldValidation=Strict", raw)
    if problem == "x":
        problem = 'unknown field "spec.containers[0].x"'
    assert (status, doc["message"]) == (
        400,
        _cannot_handle("Pod", f"strict decoding error: {problem}"),
    ), doc


def test_a_status_update_validates_metadata(server: Server) -> None:
    """ValidatePodStatusUpdate starts with ValidateObjectMetaUpdate: a status write with an invalid label key is a
    422 (kubeplane validated only the status half, so the fuzz run stored such labels)."""
    _, pod = request(server, "GET", f"{PODS}/typed")
    pod["metadata"]["labels"] = {"bad key!": "v"}
    status, doc = request(server, "PUT", f"{PODS}/typed/status", json.dumps(pod).encode())
    assert (status, doc.get("reason")) == (422, "Invalid"), doc
    assert "metadata.labels" in doc["message"]
    _, after = request(server, "GET", f"{PODS}/typed")
    assert "bad key!" not in after["metadata"].get("labels", {})
