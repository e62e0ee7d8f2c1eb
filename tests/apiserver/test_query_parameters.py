"""Query parameters decoded and refused as kube-apiserver decodes and refuses them (issue 22).

Upstream decodes ``url.Values`` into ListOptions/DeleteOptions with the generated conversions of
apimachinery ``pkg/apis/meta/v1/zz_generated.conversion.go`` over ``pkg/runtime/conversion.go``: a repeated
parameter counts with its first value, booleans are false only for ``0``/``false``, integers are
``strconv.ParseInt`` (a failure is a 400 with strconv's message); continue tokens are
``storage.DecodeContinue`` (``apiserver/pkg/storage/continue.go``) behind ``storage.ValidateListOptions``.
End to end against an API server process; each malformed request must be a 400/422 with upstream's exact
message (kubeplane answered some with its own words, and silently defaulted others).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from .conftest import Server
from .test_bad_input import request

NS = "query"
CMS = f"/api/v1/namespaces/{NS}/configmaps"


@pytest.fixture(scope="module", autouse=True)
def seeded(server: Server) -> None:
    status, doc = request(server, "POST", "/api/v1/namespaces", json.dumps({"metadata": {"name": NS}}).encode())
    assert status == 201, doc
    for name in ("a", "b", "c"):
        status, doc = request(server, "POST", CMS, json.dumps({"metadata": {"name": name}}).encode())
        assert status == 201, doc


def _token(doc: Any) -> str:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _raw_get(server: Server, path: str) -> tuple[int, bytes]:
    conn = server.connection(timeout=30)
    conn.request("GET", path, headers={"Authorization": f"Bearer {server.token}"})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        # runtime.Convert_Slice_string_To_int64 -> strconv.ParseInt(s, 10, 64)
        ("limit=many", 400, 'strconv.ParseInt: parsing "many": invalid syntax'),
        ("limit=", 400, 'strconv.ParseInt: parsing "": invalid syntax'),
        ("limit=1.5", 400, 'strconv.ParseInt: parsing "1.5": invalid syntax'),
        ("limit=99999999999999999999", 400, 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
        ("limit=abc&limit=1", 400, 'strconv.ParseInt: parsing "abc": invalid syntax'),
        ("timeoutSeconds=soon", 400, 'strconv.ParseInt: parsing "soon": invalid syntax'),
        # APIObjectVersioner.ParseResourceVersion (upstream answers this one 500, kubernetes#139485; never a 5xx here)
        (
            "resourceVersion=abc",
            400,
            'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax',
        ),
        (
            "resourceVersion=-1&resourceVersionMatch=NotOlderThan",
            400,
            'resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax',
        ),
        # storage.ValidateListOptions
        (
            f"limit=1&resourceVersion=5&continue={_token({'v': 'meta.k8s.io/v1', 'rv': 5, 'start': 'a'})}",
            400,
            "specifying resource version is not allowed when using continue",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) and "=" in v and len(v) < 60 else None,
)
def test_a_malformed_list_parameter_is_refused_with_upstreams_message(
    server: Server, query: str, code: int, message: str
) -> None:
    status, doc = request(server, "GET", f"{CMS}?{query}")
    assert (status, doc.get("kind"), doc.get("message")) == (code, "Status", message), doc


@pytest.mark.parametrize(
    ("token", "why"),
    [
        pytest.param("garbage!", "illegal base64 data at input byte 7", id="not-base64"),
        pytest.param("YWJjZA=", "illegal base64 data at input byte 6", id="padded"),
        pytest.param(_token(b"x"), "invalid character 'x' looking for beginning of value", id="not-json"),
        pytest.param(_token(b"{x"), "invalid character 'x' looking for beginning of object key string", id="bad-key"),
        pytest.param(_token(b" "), "unexpected end of JSON input", id="blank"),
        pytest.param(
            _token([1]), "json: cannot unmarshal array into Go value of type storage.continueToken", id="array"
        ),
        pytest.param(
            _token({"v": "meta.k8s.io/v1", "rv": "5", "start": "a"}),
            "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
            id="rv-string",
        ),
        pytest.param(
            _token({"v": "meta.k8s.io/v1", "rv": 1.5, "start": "a"}),
            "json: cannot unmarshal number 1.5 into Go struct field continueToken.rv of type int64",
            id="rv-fraction",
        ),
        pytest.param(
            _token({"v": "meta.k8s.io/v1", "rv": 0, "start": "a"}),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            id="rv-zero",
        ),
        pytest.param(
            _token({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}),
            "encoded start key empty (version meta.k8s.io/v1)",
            id="start-empty",
        ),
        pytest.param(
            _token({"v": "meta.k8s.io/v2", "rv": 5, "start": "a"}),
            "server does not recognize this encoded version meta.k8s.io/v2",
            id="version",
        ),
        pytest.param(
            _token({"v": "meta.k8s.io/v1", "rv": 5, "start": "../secrets/x"}), "../secrets/x", id="path-traversal"
        ),
    ],
)
def test_a_malformed_continue_token_is_a_bad_request(server: Server, token: str, why: str) -> None:
    """storage.DecodeContinue behind storage.ValidateListOptions: 400 "invalid continue token: continue key is not
    valid: ...". A start key that path.Clean changes could leave the collection's prefix."""
    status, doc = request(server, "GET", f"{CMS}?limit=1&continue={token}")
    expected = f"invalid continue token: continue key is not valid: {why}"
    assert (status, doc.get("reason"), doc.get("message")) == (400, "BadRequest", expected), doc


def test_a_continue_token_with_a_negative_revision_continues_at_the_newest(server: Server) -> None:
    """DecodeContinue accepts rv < 0 (``continueRV < 0``: the request is for the latest resource version)."""
    token = _token({"v": "meta.k8s.io/v1", "rv": -1, "start": "b"})
    status, doc = request(server, "GET", f"{CMS}?limit=5&continue={token}")
    assert status == 200, doc
    assert [item["metadata"]["name"] for item in doc["items"]] == ["b", "c"]


def test_a_repeated_parameter_counts_with_its_first_value(server: Server) -> None:
    """Convert_Slice_string_To_int64 reads (*in)[0]: ``limit=1&limit=abc`` is limit 1 (kubeplane took the last
    value, here a 400)."""
    status, doc = request(server, "GET", f"{CMS}?limit=1&limit=abc")
    assert status == 200, doc
    assert len(doc["items"]) == 1
    assert doc["metadata"]["continue"]


@pytest.mark.parametrize(
    ("value", "watch"),
    [("TRUE", True), ("yes", True), ("", True), ("1", True), ("0", False), ("false", False), ("FaLsE", False)],
)
def test_watch_is_a_boolean_as_upstream_reads_booleans(server: Server, value: str, watch: bool) -> None:
    """runtime.Convert_Slice_string_To_bool: false only for "0" or a case-insensitive "false"; anything else, the
    empty value too, is true (kubeplane took only "1", "true" and "True" as a watch, and listed otherwise)."""
    status, body = _raw_get(server, f"{CMS}?watch={value}&timeoutSeconds=1")
    assert status == 200, body
    first = json.loads(body.splitlines()[0])
    if watch:
        assert first["type"] == "ADDED", first
    else:
        assert first["kind"] == "ConfigMapList", first


def test_watch_timeout_and_resource_version_are_checked(server: Server) -> None:
    """A watch decodes the whole ListOptions (timeoutSeconds and limit with strconv.ParseInt) and parses
    resourceVersion: 400, not a default timeout, an ignored limit or kubeplane's own words."""
    status, doc = request(server, "GET", f"{CMS}?watch=1&timeoutSeconds=1m")
    assert (status, doc.get("message")) == (400, 'strconv.ParseInt: parsing "1m": invalid syntax'), doc
    status, doc = request(server, "GET", f"{CMS}?watch=1&limit=ten")
    assert (status, doc.get("message")) == (400, 'strconv.ParseInt: parsing "ten": invalid syntax'), doc
    status, doc = request(server, "GET", f"{CMS}?watch=1&resourceVersion=abc")
    expected = 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax'
    assert (status, doc.get("message")) == (400, expected), doc


def test_a_get_with_a_malformed_resource_version_is_a_bad_request(server: Server) -> None:
    """GetOptions.resourceVersion goes to the storage's ParseResourceVersion before the lookup."""
    status, doc = request(server, "GET", f"{CMS}/a?resourceVersion=x1")
    expected = 'resourceVersion: Invalid value: "x1": strconv.ParseUint: parsing "x1": invalid syntax'
    assert (status, doc.get("message")) == (400, expected), doc


@pytest.mark.parametrize(
    ("query", "code", "message"),
    [
        ("gracePeriodSeconds=soon", 400, 'strconv.ParseInt: parsing "soon": invalid syntax'),
        ("gracePeriodSeconds=%205", 400, 'strconv.ParseInt: parsing " 5": invalid syntax'),
        (
            "propagationPolicy=Bogus",
            422,
            'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Bogus": supported '
            'values: "Foreground", "Background", "Orphan", "nil"',
        ),
    ],
)
def test_malformed_delete_parameters_are_refused_and_delete_nothing(
    server: Server, query: str, code: int, message: str
) -> None:
    """DeleteOptions from the query: gracePeriodSeconds through strconv.ParseInt (kubeplane took " 5" as 5),
    propagationPolicy through ValidateDeleteOptions (a 422 on DeleteOptions, kubeplane answered 400)."""
    status, doc = request(server, "DELETE", f"{CMS}/a?{query}")
    assert (status, doc.get("message")) == (code, message), doc
    assert request(server, "GET", f"{CMS}/a")[0] == 200


@pytest.mark.parametrize(
    ("preconditions", "message"),
    [
        (
            {"uid": 5},
            "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid of type types.UID",
        ),
        (
            {"resourceVersion": ["1"]},
            "json: cannot unmarshal array into Go struct field Preconditions.preconditions.resourceVersion of type "
            "string",
        ),
    ],
)
def test_a_precondition_of_the_wrong_type_is_refused(server: Server, preconditions: Any, message: str) -> None:
    """DeleteOptions.preconditions decode into Go's Preconditions{UID *types.UID, ResourceVersion *string}: a
    wrong type is encoding/json's 400 (kubeplane compared 5 with the uid and answered a 409 Conflict)."""
    body = json.dumps({"preconditions": preconditions}).encode()
    status, doc = request(server, "DELETE", f"{CMS}/a", body)
    assert (status, doc.get("message")) == (400, message), doc
    assert request(server, "GET", f"{CMS}/a")[0] == 200
