"""Limits on what one request may carry, against a real server process: nesting depth of bodies, patches and
patched objects, JSON patch operation counts, and huge lists. Each refusal is a 4xx with upstream's message (or
its form, where kubeplane's limit is lower than upstream's), the server keeps answering, nothing stored changes.

Upstream sources pinned here:

* Go ``encoding/json`` / ``sigs.k8s.io/json`` (``internal/golang/encoding/json/scanner.go``): ``maxNestingDepth``
  10000, ``SyntaxError`` "invalid character '{' exceeded max depth". kubeplane's limit is
  ``jsondepth.MAX_DEPTH`` (250: orjson, which stores and serves objects, encodes 254 levels, and the deepest
  envelope, a Table watch event, takes 4); see docs/apiserver.md.
* ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go``/``update.go`` and ``rest.go``
  (``transformDecodeError``, ``summarizeData``), with ``apimachinery/pkg/runtime/serializer/json/meta.go``
  (``SimpleMetaFactory.Interpret``: "couldn't get version/kind; json parse error: ..."): a body too deep.
* ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go``: DeleteOptions that do not decode (the
  serializer's error as is; upstream answers 500, kubeplane 400).
* ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go``: ``applyJSPatch`` (``kjson.UnmarshalStrict``:
  "error decoding patch: ..."; under fieldValidation=Ignore evanphx's ``DecodePatch`` error, or ``MergePatch``'s
  ``ErrBadJSONPatch`` "Invalid JSON Patch"), ``strategicPatchObject`` (the decoder's error as is),
  ``jsonPatcher.applyPatchToCurrentObject`` (patched JSON that does not decode: 422 on field ``patch``),
  ``maxJSONPatchOperations`` (413).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubeplane.api.jsondepth import MAX_DEPTH

from .conftest import Server
from .test_bad_input import request

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PROTOBUF = "application/vnd.kubernetes.protobuf"
MERGE, JSON_PATCH, STRATEGIC = (
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
)
TOO_DEEP = "invalid character '{' exceeded max depth"


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def nest(levels: int) -> dict[str, Any]:
    """``{"f:a": {"f:a": ... {}}}``: exactly ``levels`` objects deep (built without recursion)."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"f:a": value}
    return value


def nest_text(levels: int, opener: str = "{") -> bytes:
    """JSON text ``levels`` containers deep, too deep for Python's own encoder to write."""
    if opener == "[":
        return b"[" * levels + b"]" * levels
    return b'{"a":' * (levels - 1) + b"{}" + b"}" * (levels - 1)


def pod(name: str, depth: int = 0) -> dict[str, Any]:
    """A valid pod; with ``depth``, nested exactly ``depth`` deep through a managedFields entry's fieldsV1 (the
    one free-form field of a Pod: pod 1, metadata 2, managedFields 3, the entry 4, fieldsV1 from 5 on)."""
    meta: dict[str, Any] = {"name": name}
    if depth:
        meta["managedFields"] = [
            {
                "manager": "m",
                "operation": "Update",
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": nest(depth - 4),
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }


def object_message(kind: str, body: bytes, bracket: str = "{") -> str:
    """create.go/update.go ``transformDecodeError`` with no kind known (``summarizeData(body, 30)``)."""
    summary = body[:30].decode() if body[:1] == b"{" else body[:30].hex()
    summary += " ..." if len(body) > 30 else ""
    return (
        f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; "
        f"json parse error: invalid character '{bracket}' exceeded max depth ({summary})"
    )


@pytest.fixture(scope="module", autouse=True)
def seeded(server: Server) -> None:
    status, _ = request(server, "POST", PODS, compact(pod("ok")))
    assert status == 201
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "scaled"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
        },
    }
    status, _ = request(server, "POST", DEPLOYMENTS, compact(deployment))
    assert status == 201


def stored(server: Server) -> list[Any]:
    """Everything a refused request could have changed: the seeded objects and the pod list."""
    return [
        request(server, "GET", f"{PODS}/ok")[1],
        request(server, "GET", f"{DEPLOYMENTS}/scaled")[1],
        sorted(item["metadata"]["name"] for item in request(server, "GET", PODS)[1]["items"]),
    ]


def refused(
    server: Server, method: str, path: str, body: bytes, content_type: str, code: int, message: str
) -> dict[str, Any]:
    before = stored(server)
    status, doc = request(server, method, path, body, content_type=content_type)
    reason = {400: "BadRequest", 413: "RequestEntityTooLarge", 422: "Invalid"}[code]
    assert (status, doc.get("kind"), doc.get("reason"), doc.get("code")) == (code, "Status", reason, code), doc
    assert doc["message"] == message
    assert request(server, "GET", "/healthz")[0] == 200
    assert stored(server) == before, "a refused request changed stored data"
    return doc


# --- bodies -----------------------------------------------------------------------------------------------------

DEEP_POD = compact(pod("deep", MAX_DEPTH + 1))
DEEP_PUT = compact(pod("ok", MAX_DEPTH + 1))
ORJSON_DEEP = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep"},"x":' + nest_text(1100) + b"}"
UPSTREAM_DEEP = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep"},"x":' + nest_text(10001) + b"}"
DEEP_ARRAY = nest_text(MAX_DEPTH + 1, "[")
DEEP_BINDING = compact({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "ok"}, "target": nest(MAX_DEPTH)})
DEEP_EVICTION = compact(
    {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "ok"}, "x": nest(MAX_DEPTH)}
)
DEEP_SCALE = compact(
    {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "scaled"}, "spec": nest(MAX_DEPTH)}
)


@pytest.mark.parametrize(
    ("method", "path", "body", "kind", "bracket"),
    [
        pytest.param("POST", PODS, DEEP_POD, "Pod", "{", id="create-one-past-the-limit"),
        pytest.param("POST", PODS, ORJSON_DEEP, "Pod", "{", id="create-past-orjsons-1024"),
        pytest.param("POST", PODS, UPSTREAM_DEEP, "Pod", "{", id="create-past-upstreams-10000"),
        pytest.param("POST", PODS, DEEP_ARRAY, "Pod", "[", id="create-array-summarized-as-hex"),
        pytest.param("PUT", f"{PODS}/ok", DEEP_PUT, "Pod", "{", id="update"),
        pytest.param("PUT", f"{PODS}/ok/status", DEEP_PUT, "Pod", "{", id="update-status"),
        pytest.param("POST", f"{PODS}/ok/binding", DEEP_BINDING, "Binding", "{", id="binding"),
        pytest.param("POST", "/api/v1/namespaces/default/bindings", DEEP_BINDING, "Binding", "{", id="legacy-binding"),
        pytest.param("POST", f"{PODS}/ok/eviction", DEEP_EVICTION, "Eviction", "{", id="eviction"),
        pytest.param("PUT", f"{DEPLOYMENTS}/scaled/scale", DEEP_SCALE, "Scale", "{", id="scale"),
    ],
)
def test_a_body_nested_past_the_limit_is_a_bad_request(
    server: Server, method: str, path: str, body: bytes, kind: str, bracket: str
) -> None:
    """create.go/update.go: the JSON serializer's ``Interpret`` fails on the scanner's depth error before any
    kind is known, so ``transformDecodeError`` names the endpoint's type and summarizes the body. (These were
    500s: orjson could not store 252 levels, the schema walk overflowed Python's stack at about 1,000.)"""
    refused(server, method, path, body, "application/json", 400, object_message(kind, body, bracket))


def _protobuf_pod(name: str, fields_v1: bytes) -> bytes:
    """A Kubernetes protobuf Pod whose one managedFields entry carries ``fields_v1`` as its raw JSON."""

    def varint(value: int) -> bytes:
        out = bytearray()
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                return bytes(out)

    def ld(number: int, payload: bytes) -> bytes:
        return varint(number << 3 | 2) + varint(len(payload)) + payload

    entry = ld(1, b"m") + ld(2, b"Update") + ld(3, b"v1") + ld(6, b"FieldsV1") + ld(7, ld(1, fields_v1))
    meta = ld(1, name.encode()) + ld(17, entry)
    spec = ld(2, ld(1, b"c") + ld(2, b"nginx"))
    raw = ld(1, meta) + ld(2, spec)
    return b"k8s\x00" + ld(1, ld(1, b"v1") + ld(2, b"Pod")) + ld(2, raw)


@pytest.mark.parametrize(
    "fields_v1",
    [
        pytest.param(compact(nest(MAX_DEPTH - 3)), id="one-past-the-limit"),  # the fieldsV1 object is level 5
        pytest.param(nest_text(2000), id="past-orjsons-1024"),
    ],
)
def test_a_protobuf_body_nested_past_the_limit_is_a_bad_request(server: Server, fields_v1: bytes) -> None:
    """The protobuf serializer knows the kind from the envelope, so ``transformDecodeError`` says "Pod in version
    "v1" cannot be handled as a Pod". (Upstream keeps FieldsV1 as raw bytes; kubeplane parses it into the object
    it stores, so it refuses what it could not store, in the JSON scanner's words.)"""
    body = _protobuf_pod("deep", fields_v1)
    refused(server, "POST", PODS, body, PROTOBUF, 400, f'Pod in version "v1" cannot be handled as a Pod: {TOO_DEEP}')


def test_an_object_at_the_limit_is_stored_served_and_patched(server: Server) -> None:
    """The limit is exact: an object ``MAX_DEPTH`` deep is created, read, listed, served as a Table with the
    object inside (the deepest envelope) on list and watch, patched by every patch type, and deleted."""
    body = pod("edge", MAX_DEPTH)
    status, created = request(server, "POST", PODS, compact(body))
    assert status == 201, created
    # the sent entry is kept (fieldmanager.go decodeLiveOrNew) before the creator's own (sorted: no time first)
    assert created["metadata"]["managedFields"][:1] == body["metadata"]["managedFields"]
    status, got = request(server, "GET", f"{PODS}/edge")
    assert (status, got) == (200, created)
    status, listed = request(server, "GET", f"{PODS}?fieldSelector=metadata.name%3Dedge")
    assert (status, listed["items"]) == (200, [created])
    table = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
    conn = server.connection()
    for query in ("includeObject=Object", "includeObject=Object&watch=true&resourceVersion=0&timeoutSeconds=1"):
        conn.request(
            "GET",
            f"{PODS}?fieldSelector=metadata.name%3Dedge&{query}",
            headers={"Authorization": f"Bearer {server.token}", **table},
        )
        response = conn.getresponse()
        lines = response.read().splitlines()
        assert response.status == 200
        doc = json.loads(lines[0])
        rows = doc["rows"] if "rows" in doc else doc["object"]["rows"]
        assert rows[0]["object"]["metadata"]["managedFields"][:1] == body["metadata"]["managedFields"]
    conn.close()
    for content_type, patch in [
        (MERGE, {"metadata": {"labels": {"merge": "yes"}}}),
        (STRATEGIC, {"metadata": {"labels": {"smp": "yes"}, "managedFields": body["metadata"]["managedFields"]}}),
        (
            JSON_PATCH,
            [{"op": "test", "path": "/metadata/managedFields/0", "value": body["metadata"]["managedFields"][0]}],
        ),
    ]:
        status, patched = request(server, "PATCH", f"{PODS}/edge", compact(patch), content_type=content_type)
        assert status == 200, patched
    assert patched["metadata"]["labels"] == {"merge": "yes", "smp": "yes"}
    assert request(server, "DELETE", f"{PODS}/edge?gracePeriodSeconds=0")[0] == 200


@pytest.mark.parametrize(
    ("path", "body"),
    [
        pytest.param(f"{PODS}/ok", compact({"propagationPolicy": nest(MAX_DEPTH)}), id="delete-one-past-the-limit"),
        pytest.param(f"{PODS}/ok", b'{"gracePeriodSeconds":' + nest_text(1000) + b"}", id="delete-1000-deep"),
        pytest.param(PODS, b'{"dryRun":[' + nest_text(1000) + b"]}", id="deletecollection-1000-deep"),
        pytest.param(PODS, b'{"preconditions":' + nest_text(1100) + b"}", id="deletecollection-past-orjson"),
    ],
)
def test_delete_options_nested_past_the_limit_are_a_bad_request(server: Server, path: str, body: bytes) -> None:
    """delete.go hands the JSON serializer's error to ``scope.err`` as is (upstream: a 500 with this message);
    a 400 here. These were 500s: the options' messages quote their values, overflowing Python's stack."""
    message = f"couldn't get version/kind; json parse error: {TOO_DEEP}"
    refused(server, "DELETE", path, body, "application/json", 400, message)


# --- patches ----------------------------------------------------------------------------------------------------

DEEP_MERGE = compact({"metadata": {"labels": nest(MAX_DEPTH - 1)}})
DEEP_JSON_PATCH = compact([{"op": "add", "path": "/metadata/labels", "value": nest(MAX_DEPTH - 1)}])
SMP_500 = compact({"metadata": {"x": nest(500)}})  # the fuzz run's case: Python's recursion limit, a 500


@pytest.mark.parametrize(
    ("content_type", "body", "validation", "message"),
    [
        pytest.param(MERGE, DEEP_MERGE, "", f"error decoding patch: {TOO_DEEP}", id="merge-warn"),
        pytest.param(MERGE, DEEP_MERGE, "Strict", f"error decoding patch: {TOO_DEEP}", id="merge-strict"),
        pytest.param(MERGE, DEEP_MERGE, "Ignore", "Invalid JSON Patch", id="merge-ignore"),
        pytest.param(JSON_PATCH, DEEP_JSON_PATCH, "", f"error decoding patch: {TOO_DEEP}", id="json-patch-warn"),
        pytest.param(JSON_PATCH, DEEP_JSON_PATCH, "Ignore", TOO_DEEP, id="json-patch-ignore"),
        pytest.param(STRATEGIC, SMP_500, "", TOO_DEEP, id="strategic-500-levels"),
        pytest.param(STRATEGIC, SMP_500, "Ignore", TOO_DEEP, id="strategic-ignore"),
        pytest.param(STRATEGIC, b'{"metadata":{"x":' + nest_text(5000) + b"}}", "", TOO_DEEP, id="strategic-5000"),
    ],
)
def test_a_patch_nested_past_the_limit_is_a_bad_request(
    server: Server, content_type: str, body: bytes, validation: str, message: str
) -> None:
    """patch.go: ``applyJSPatch`` decodes JSON and merge patches with ``kjson.UnmarshalStrict`` under Warn (the
    default) and Strict, evanphx's decoders under Ignore; ``strategicPatchObject`` returns the decoder's error
    as is. All 400."""
    query = f"?fieldValidation={validation}" if validation else ""
    refused(server, "PATCH", f"{PODS}/ok{query}", body, content_type, 400, message)


def _deepening_json_patch(copies: int) -> bytes:
    """Adds a 200-deep fieldsV1, then copies it into its own innermost object ``copies`` times: each operation
    is small and within the limit, the patched document doubles in depth with each copy."""
    ops: list[dict[str, Any]] = [
        {
            "op": "add",
            "path": "/metadata/managedFields",
            "value": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": nest(200)}],
        }
    ]
    innermost = "/f:a" * 199  # where, inside fieldsV1, its innermost object is
    for _ in range(copies):
        target = "/metadata/managedFields/0/fieldsV1" + innermost + "/f:b"
        ops.append({"op": "copy", "from": "/metadata/managedFields/0/fieldsV1", "path": target})
        innermost += "/f:b" + innermost
    return compact(ops)


@pytest.mark.parametrize("copies", [1, 7], ids=["one-copy-400-deep", "seven-copies-25600-deep"])
def test_a_json_patch_whose_result_is_too_deep_is_invalid(server: Server, copies: int) -> None:
    """patch.go ``jsonPatcher.applyPatchToCurrentObject``: patched JSON the codec cannot decode is a 422 on the
    field ``patch``; the value is the patched JSON (Go: compact, keys sorted), here cut as ``summarizeData``
    cuts a body. Seven copies nest the document 25,600 deep: the patch must still get its answer (the copy
    and the size count of each copy run without recursion)."""
    value = '"{\\"apiVersion\\":\\"v1\\",\\"kind\\":\\"Pod ..."'
    detail = f"couldn't get version/kind; json parse error: {TOO_DEEP}"
    doc = refused(
        server,
        "PATCH",
        f"{PODS}/ok",
        _deepening_json_patch(copies),
        JSON_PATCH,
        422,
        f' "" is invalid: patch: Invalid value: {value}: {detail}',
    )
    assert doc["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": f"Invalid value: {value}: {detail}", "field": "patch"}
    ]


def test_a_failed_json_patch_test_on_a_deepened_document_is_invalid(server: Server) -> None:
    """evanphx ``test`` failing is a 422 (patch.go ``applyJSPatch``); the message quotes the value found, which a
    patch had nested past the limit: it is shown by its first characters instead of overflowing the stack."""
    ops = json.loads(_deepening_json_patch(2))
    ops.append({"op": "test", "path": "/metadata/managedFields/0/fieldsV1", "value": "x"})
    shown = ('{"f:a":' * 16)[:77] + "..."
    message = (
        f'jsonpatch test operation does not apply: value at "/metadata/managedFields/0/fieldsV1" is {shown}, '
        'not "x" (operation 3)'
    )
    refused(server, "PATCH", f"{PODS}/ok", compact(ops), JSON_PATCH, 422, message)


def test_a_json_patch_of_more_than_10000_operations_is_too_large(server: Server) -> None:
    """patch.go ``maxJSONPatchOperations``: 413 "The allowed maximum operations in a JSON patch is 10000, got N"."""
    ops = [{"op": "test", "path": "/kind", "value": "Pod"}] * 10001
    message = "The allowed maximum operations in a JSON patch is 10000, got 10001"
    refused(server, "PATCH", f"{PODS}/ok", compact(ops), JSON_PATCH, 413, message)


# --- huge lists -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "field", "items"),
    [
        pytest.param("many-args", ("spec", "containers", 0, "args"), ["a"] * 100_000, id="args"),
        pytest.param("many-finalizers", ("metadata", "finalizers"), [f"x.io/f{i}" for i in range(100_000)], id="fin"),
        pytest.param(
            "many-gates", ("spec", "schedulingGates"), [{"name": f"g{i}"} for i in range(100_000)], id="gates"
        ),
    ],
)
def test_a_list_of_100000_items_gets_an_answer(
    server: Server, name: str, field: tuple[Any, ...], items: list[Any]
) -> None:
    """Lists validation does not bound (upstream has no limit on these either) are stored and read back whole;
    nothing walks them recursively. (Lists validation bounds, e.g. annotations' 256 KiB, are validation's 422.)"""
    body = pod(name)
    parent: Any = body
    for step in field[:-1]:
        parent = parent[step]
    parent[field[-1]] = items
    status, created = request(server, "POST", PODS, compact(body))
    assert status == 201, created
    status, got = request(server, "GET", f"{PODS}/{name}")
    value: Any = got
    for step in field:
        value = value[step]
    assert (status, len(value)) == (200, 100_000)
    patch = [{"op": "add", "path": "/metadata/labels", "value": {"patched": "yes"}}]
    status, patched = request(server, "PATCH", f"{PODS}/{name}", compact(patch), content_type=JSON_PATCH)
    assert (status, patched["metadata"]["labels"]) == (200, {"patched": "yes"})
    if name == "many-finalizers":
        patch = [{"op": "remove", "path": "/metadata/finalizers"}]
        assert request(server, "PATCH", f"{PODS}/{name}", compact(patch), content_type=JSON_PATCH)[0] == 200
    assert request(server, "DELETE", f"{PODS}/{name}?gracePeriodSeconds=0")[0] == 200
