"""Shape of the /openapi/v3 documents.

Upstream pins: kube-openapi handler3 (root ``paths`` -> ``serverRelativeURL`` with ``?hash=`` the upper-case hex
SHA-512 of the served JSON); cli-runtime query_param_verifier_v3.go (kubectl finds a PATCH operation by its
``x-kubernetes-group-version-kind`` and looks for an inline ``fieldValidation`` parameter); the operation ids of
kube-apiserver's spec (``listCoreV1NamespacedPod``, ``patchAppsV1NamespacedDeploymentScale``, ...).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kubeplane.api import openapi
from kubeplane.api.resources import ResourceInfo, default_table

TABLE = default_table()
GROUP_VERSIONS = list(dict.fromkeys((r.group, r.version) for r in TABLE))
PATCHABLE = [r for r in TABLE if "patch" in r.verbs]
CREATE_ONLY = [r for r in TABLE if r.verbs == ("create",)]
DOCS = {gv: openapi.openapi_group_version(TABLE, *gv) for gv in GROUP_VERSIONS}


def _ops(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method in ("get", "put", "post", "patch", "delete"):
            if method in item:
                yield path, method, item[method]


def _supports_query_param_v3(doc: dict[str, Any], gvk: dict[str, str], param: str) -> bool:
    """cli-runtime's supportsQueryParamV3, checked for every matching PATCH (Go iterates paths in random order)."""
    matching = [op for _, m, op in _ops(doc) if m == "patch" and op.get("x-kubernetes-group-version-kind") == gvk]
    return bool(matching) and all(any(p.get("name") == param for p in op["parameters"]) for op in matching)


def _resource_id(r: ResourceInfo) -> str:
    return f"{r.group or 'core'}/{r.version}/{r.plural}"


def test_root_lists_every_group_version_with_its_content_hash() -> None:
    root = openapi.openapi_root(TABLE)
    assert set(root) == {"paths"}
    assert list(root["paths"]) == [openapi.group_version_path(*gv) for gv in GROUP_VERSIONS]
    assert "api/v1" in root["paths"]
    assert "apis/apps/v1" in root["paths"]
    for gv in GROUP_VERSIONS:
        gv_path = openapi.group_version_path(*gv)
        url = root["paths"][gv_path]["serverRelativeURL"]
        match = re.fullmatch(rf"/openapi/v3/{re.escape(gv_path)}\?hash=([0-9A-F]{{128}})", url)
        assert match, url
        data = openapi.document_bytes(DOCS[gv])
        assert match.group(1) == hashlib.sha512(data).hexdigest().upper() == openapi.document_hash(data)


def test_documents_are_deterministic() -> None:
    again = default_table()
    for gv in GROUP_VERSIONS:
        assert openapi.document_bytes(openapi.openapi_group_version(again, *gv)) == openapi.document_bytes(DOCS[gv])
    assert openapi.openapi_root(again) == openapi.openapi_root(TABLE)


@pytest.mark.parametrize("resource", CREATE_ONLY, ids=_resource_id)
def test_create_only_kinds_have_a_post_and_nothing_else(resource: ResourceInfo) -> None:
    """TokenReview, SelfSubjectReview (upstream: rest.Creater only, pkg/registry/authentication/...): the spec has
    one POST on the collection, with fieldValidation, and no GET, PATCH, PUT or DELETE."""
    doc = DOCS[(resource.group, resource.version)]
    gvk = {"group": resource.group, "kind": resource.kind, "version": resource.version}
    ops = [(m, op) for _, m, op in _ops(doc) if op.get("x-kubernetes-group-version-kind") == gvk]
    assert [m for m, _ in ops] == ["post"]
    assert any(p["name"] == "fieldValidation" for p in ops[0][1]["parameters"])


def test_create_only_kinds_are_served() -> None:
    assert {r.kind for r in CREATE_ONLY} >= {"TokenReview", "SelfSubjectReview"}


def test_unknown_group_version_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="apis/batch/v1beta1"):
        openapi.openapi_group_version(TABLE, "batch", "v1beta1")


@pytest.mark.parametrize("resource", PATCHABLE, ids=_resource_id)
def test_kubectl_sees_server_side_field_validation(resource: ResourceInfo) -> None:
    doc = DOCS[(resource.group, resource.version)]
    gvk = {"group": resource.group, "kind": resource.kind, "version": resource.version}
    assert _supports_query_param_v3(doc, gvk, "fieldValidation")


@pytest.mark.parametrize("resource", list(TABLE), ids=_resource_id)
def test_resource_paths_follow_the_verbs(resource: ResourceInfo) -> None:
    doc = DOCS[(resource.group, resource.version)]
    prefix = "/" + openapi.group_version_path(resource.group, resource.version)
    ns = "/namespaces/{namespace}" if resource.namespaced else ""
    collection = doc["paths"][f"{prefix}{ns}/{resource.plural}"]
    item = doc["paths"][f"{prefix}{ns}/{resource.plural}/{{name}}"]
    verbs = set(resource.verbs)
    assert ("get" in collection) == ("list" in verbs)
    assert ("post" in collection) == ("create" in verbs)
    assert ("delete" in collection) == ("deletecollection" in verbs)
    assert {m for m in ("get", "put", "patch", "delete") if m in item} == {
        m for m, v in (("get", "get"), ("put", "update"), ("patch", "patch"), ("delete", "delete")) if v in verbs
    }
    if "patch" not in verbs:  # create-only kinds (TokenReview, SelfSubjectReview): checked above, nothing more
        return
    patch = item["patch"]
    assert patch["x-kubernetes-action"] == "patch"
    assert list(patch["requestBody"]["content"]) == list(openapi.PATCH_CONTENT_TYPES)
    assert [p["name"] for p in patch["parameters"]] == ["dryRun", "fieldManager", "fieldValidation", "force"]
    assert all(p["in"] == "query" for p in patch["parameters"])
    if resource.namespaced:
        assert f"{prefix}/{resource.plural}" in doc["paths"]  # list across namespaces
    for sub in resource.subresources:
        assert f"{prefix}{ns}/{resource.plural}/{{name}}/{sub.name}" in doc["paths"]


OPERATION_CASES: list[tuple[tuple[str, str], str, str, str, tuple[str, str, str]]] = [
    (("", "v1"), "/api/v1/namespaces/{namespace}/pods", "get", "listCoreV1NamespacedPod", ("", "v1", "Pod")),
    (("", "v1"), "/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", ("", "v1", "Pod")),
    (("", "v1"), "/api/v1/nodes/{name}", "get", "readCoreV1Node", ("", "v1", "Node")),
    (
        ("", "v1"),
        "/api/v1/namespaces/{namespace}/pods/{name}/binding",
        "post",
        "createCoreV1NamespacedPodBinding",
        ("", "v1", "Binding"),
    ),
    (
        ("", "v1"),
        "/api/v1/namespaces/{namespace}/pods/{name}/eviction",
        "post",
        "createCoreV1NamespacedPodEviction",
        ("policy", "v1", "Eviction"),
    ),
    (
        ("", "v1"),
        "/api/v1/namespaces/{namespace}/pods/{name}/status",
        "patch",
        "patchCoreV1NamespacedPodStatus",
        ("", "v1", "Pod"),
    ),
    (
        ("apps", "v1"),
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale",
        "patch",
        "patchAppsV1NamespacedDeploymentScale",
        ("autoscaling", "v1", "Scale"),
    ),
    (
        ("rbac.authorization.k8s.io", "v1"),
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "delete",
        "deleteRbacAuthorizationV1CollectionClusterRole",
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ),
]


@pytest.mark.parametrize(
    ("gv", "path", "method", "operation_id", "gvk"), OPERATION_CASES, ids=[c[3] for c in OPERATION_CASES]
)
def test_upstream_operation_ids_and_gvks(
    gv: tuple[str, str], path: str, method: str, operation_id: str, gvk: tuple[str, str, str]
) -> None:
    op = DOCS[gv]["paths"][path][method]
    assert op["operationId"] == operation_id
    assert op["x-kubernetes-group-version-kind"] == dict(zip(("group", "version", "kind"), gvk, strict=True))


def test_namespace_has_no_deletecollection() -> None:
    assert "delete" not in DOCS[("", "v1")]["paths"]["/api/v1/namespaces"]


@pytest.mark.parametrize("gv", GROUP_VERSIONS, ids=lambda gv: openapi.group_version_path(*gv))
def test_document_is_openapi_3_with_resolvable_refs(gv: tuple[str, str]) -> None:
    doc = DOCS[gv]
    assert doc["openapi"] == "3.0.0"
    assert doc["info"]["title"] == "Kubernetes"
    schemas = doc["components"]["schemas"]
    refs = set(re.findall(rb'"\$ref":"#/components/schemas/([^"]+)"', orjson.dumps(doc)))
    assert refs
    assert {r.decode() for r in refs} <= set(schemas)
    op_ids = [op["operationId"] for _, _, op in _ops(doc)]
    assert len(op_ids) == len(set(op_ids))


@pytest.mark.parametrize("resource", list(TABLE), ids=_resource_id)
def test_root_schemas_carry_their_gvk(resource: ResourceInfo) -> None:
    schemas = DOCS[(resource.group, resource.version)]["components"]["schemas"]
    gvk = {"group": resource.group, "kind": resource.kind, "version": resource.version}
    rooted = [s for s in schemas.values() if gvk in s.get("x-kubernetes-group-version-kind", [])]
    assert len(rooted) == 1
    assert rooted[0]["type"] == "object"
    assert {"apiVersion", "kind", "metadata"} <= set(rooted[0]["properties"])


def test_quantities_and_int_or_string_accept_strings_and_numbers() -> None:
    schemas = DOCS[("", "v1")]["components"]["schemas"]
    requests = schemas["io.k8s.api.core.v1.ResourceRequirements"]["properties"]["requests"]
    quantity_ref = requests["additionalProperties"]["$ref"].rsplit("/", 1)[1]
    assert schemas[quantity_ref]["oneOf"] == [{"type": "string"}, {"type": "number"}]
    target_port = schemas["io.k8s.api.core.v1.ServicePort"]["properties"]["targetPort"]["allOf"][0]["$ref"]
    target_port = target_port.rsplit("/", 1)[1]
    assert schemas[target_port]["oneOf"] == [{"type": "integer"}, {"type": "string"}]


def test_delete_options_are_registered_in_every_group_version() -> None:
    schemas = DOCS[("apps", "v1")]["components"]["schemas"]
    gvks = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"]["x-kubernetes-group-version-kind"]
    assert {"group": "apps", "kind": "DeleteOptions", "version": "v1"} in gvks
    assert {"group": "", "kind": "DeleteOptions", "version": "v1"} in gvks
