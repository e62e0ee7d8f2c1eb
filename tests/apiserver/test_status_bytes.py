"""Response bodies byte for byte as kube-apiserver v1.37 writes them.

Pinned upstream behaviour:
- apimachinery pkg/apis/meta/v1/types.go: ``Status`` fields in the order kind, apiVersion, metadata, status,
  message, reason, details, code; ``StatusDetails`` name, group, kind, uid, causes, retryAfterSeconds;
  ``StatusCause`` reason, message, field; every one ``omitempty`` except ``metadata`` (a struct, always ``{}``).
- apimachinery pkg/runtime/serializer/json/json.go ``doEncode``: ``json.NewEncoder(w).Encode(obj)``, so every
  JSON body (errors, objects, lists) ends with a newline and ``<``, ``>``, ``&`` are written ``\\u003c``,
  ``\\u003e``, ``\\u0026`` (encoding/json's default HTML escaping).
- apiserver pkg/registry/generic/registry/store.go ``finalizeDelete``: the Status Success of a delete whose kind
  does not return the object carries ``details: {name, group, kind: <resource>, uid}`` and no code.

The expected bytes are written out here by hand, not produced by kubeplane's code.
"""

from __future__ import annotations

import json
from typing import Any

from .conftest import Server

NS = "default"


def request(server: Server, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    return server.send(method, path, body, accept="application/json")


def test_not_found_is_upstreams_bytes(server: Server) -> None:
    status, raw = request(server, "GET", f"/api/v1/namespaces/{NS}/configmaps/missing")
    assert status == 404
    assert raw == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"configmaps \\"missing\\" not found","reason":"NotFound",'
        b'"details":{"name":"missing","kind":"configmaps"},"code":404}\n'
    )


def test_already_exists_is_upstreams_bytes(server: Server) -> None:
    path = f"/api/v1/namespaces/{NS}/configmaps"
    assert request(server, "POST", path, {"metadata": {"name": "dup"}})[0] == 201
    status, raw = request(server, "POST", path, {"metadata": {"name": "dup"}})
    assert status == 409
    assert raw == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"configmaps \\"dup\\" already exists","reason":"AlreadyExists",'
        b'"details":{"name":"dup","kind":"configmaps"},"code":409}\n'
    )


def test_invalid_with_group_and_causes_is_upstreams_bytes(server: Server) -> None:
    body = {
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "c"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
        },
    }
    status, raw = request(server, "POST", f"/apis/apps/v1/namespaces/{NS}/deployments", body)
    assert status == 422
    why = b'Invalid value: {\\"a\\":\\"c\\"}: `selector` does not match template `labels`'
    assert raw == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"Deployment.apps \\"d\\" is invalid: spec.template.metadata.labels: ' + why + b'",'
        b'"reason":"Invalid","details":{"name":"d","group":"apps","kind":"Deployment","causes":['
        b'{"reason":"FieldValueInvalid","message":"' + why + b'","field":"spec.template.metadata.labels"}]},'
        b'"code":422}\n'
    )


def test_html_characters_are_escaped_as_go_does(server: Server) -> None:
    status, raw = request(
        server, "POST", f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": "amp", "labels": {"x": "a&b"}}}
    )
    assert status == 422
    assert b"&" not in raw
    assert b'Invalid value: \\"a\\u0026b\\": a valid label must be an empty string' in raw
    status, raw = request(
        server, "POST", f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": "tags"}, "data": {"k": "<a&b>"}}
    )
    assert status == 201
    assert b'"data":{"k":"\\u003ca\\u0026b\\u003e"}' in raw
    assert json.loads(raw)["data"] == {"k": "<a&b>"}


def test_objects_lists_and_discovery_end_with_a_newline(server: Server) -> None:
    for path in (f"/api/v1/namespaces/{NS}", f"/api/v1/namespaces/{NS}/configmaps", "/api/v1", "/version"):
        status, raw = request(server, "GET", path)
        assert status == 200, path
        assert raw.endswith(b"}\n"), path


def test_delete_success_status_is_upstreams_bytes(server: Server) -> None:
    path = f"/api/v1/namespaces/{NS}/configmaps"
    status, raw = request(server, "POST", path, {"metadata": {"name": "gone"}})
    assert status == 201
    uid = json.loads(raw)["metadata"]["uid"]
    status, raw = request(server, "DELETE", f"{path}/gone")
    assert status == 200
    assert raw == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
        b'"details":{"name":"gone","kind":"configmaps","uid":"' + uid.encode() + b'"}}\n'
    )
    roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
    status, raw = request(server, "POST", roles, {"metadata": {"name": "r"}})
    assert status == 201
    uid = json.loads(raw)["metadata"]["uid"]
    status, raw = request(server, "DELETE", f"{roles}/r")
    assert raw == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
        b'"details":{"name":"r","group":"rbac.authorization.k8s.io","kind":"clusterroles","uid":"'
        + uid.encode()
        + b'"}}\n'
    )


def test_internal_error_shape_has_the_cause() -> None:
    """apimachinery pkg/api/errors NewInternalError: the error's text is also the one cause."""
    from kubeplane.apiserver import errors

    assert errors.internal("boom").status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Internal error occurred: boom",
        "reason": "InternalError",
        "details": {"causes": [{"message": "boom"}]},
        "code": 500,
    }
    assert list(errors.too_many_requests("slow", retry_after=3).status) == [
        "kind",
        "apiVersion",
        "metadata",
        "status",
        "message",
        "reason",
        "details",
        "code",
    ]


def test_go_escaping_of_line_separators_and_other_text() -> None:
    """encoding/json appendString: U+2028/U+2029 escaped (HTML-safe mode), other non-ASCII text left as UTF-8."""
    from kubeplane.apiserver.http import gojson

    assert gojson.encode({"a": "<x>&\u2028\u2029\u2014é"}) == (
        b'{"a":"\\u003cx\\u003e\\u0026\\u2028\\u2029' + "\u2014é".encode() + b'"}\n'
    )


def test_too_large_resource_version_carries_its_cause(server: Server) -> None:
    """etcd3 store.go GetList on ErrFutureRev: storage.NewTooLargeResourceVersionError(withRev, current, 0), an
    apierrors.NewTimeoutError ("Timeout: ...") with the ResourceVersionTooLarge cause client-go's reflector reads."""
    status, raw = request(
        server, "GET", f"/api/v1/namespaces/{NS}/configmaps?resourceVersion=99999999&resourceVersionMatch=Exact"
    )
    assert status == 504
    body = json.loads(raw)
    current = body["message"].rsplit(" ", 1)[1]
    assert raw == (
        b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        b'"message":"Timeout: Too large resource version: 99999999, current: ' + current.encode() + b'",'
        b'"reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge",'
        b'"message":"Too large resource version"}]},"code":504}\n'
    )
