"""A CRD with several versions, in-process (registry on a memory store): each version's own schema, the None
conversion, defaulting on read, deprecation warnings.

Upstream behaviour pinned (k8s.io/apiextensions-apiserver unless noted):
* pkg/apiserver/customresource_handler.go ``getOrCreateServingInfoFor``: a strategy per version built with that
  version's structural schema (``customresource.NewStrategy(..., structuralSchemas[v.Name] ...)``), so a write is
  pruned, defaulted and validated with its own version's schema;
* ``crdConversionRESTOptionsGetter``: the storage codec encodes in the storage version; decoding prunes and
  defaults with the stored version's schema (``schemaCoercingDecoder``, ``unstructuredDefaulter``), converts with
  ``nopConverter`` (only ``apiVersion`` changes) and prunes with the read version's (``schemaCoercingConverter``);
* ``defaultDeprecationWarning``: ``<group>/<version> <Kind> is deprecated; use <group>/<v> <Kind>``.
"""

from __future__ import annotations

import copy
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.api.crd.resource import CustomResourceInfo, deprecation_warning
from kubeplane.apiserver.crds import controller_of
from kubeplane.apiserver.errors import APIError
from kubeplane.apiserver.registry import Registry
from kubeplane.store.memory import MemoryStore

Obj = dict[str, Any]

CRD: Obj = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.multi.example.com"},
    "spec": {
        "group": "multi.example.com",
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": False,
                "deprecated": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "string", "enum": ["small", "large"]},
                                    "legacy": {"type": "string"},
                                    "color": {"type": "string", "default": "red"},
                                },
                            }
                        },
                    }
                },
            },
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "string", "maxLength": 3},
                                    "color": {"type": "string"},
                                    "replicas": {"type": "integer", "default": 1},
                                },
                            }
                        },
                    }
                },
            },
        ],
    },
}


@pytest.fixture
async def registry() -> AsyncIterator[Registry]:
    reg = Registry(store=MemoryStore(), now=lambda: 1_800_000_000.0, rng=random.Random(3))
    await reg.start()
    yield reg
    await reg.stop()


async def install(reg: Registry, crd: Obj) -> dict[str, CustomResourceInfo]:
    crds = reg.resource("apiextensions.k8s.io", "customresourcedefinitions")
    name = crd["metadata"]["name"]
    if reg.get_cached(crds, None, name) is None:
        await reg.create(crds, None, copy.deepcopy(crd))
    else:
        current = await reg.get(crds, None, name)
        await reg.update(crds, None, name, {**copy.deepcopy(crd), "metadata": current["metadata"]})
    await controller_of(reg).sync(name)
    infos = {}
    for version in ("v1beta1", "v1"):
        info = reg.table.get("multi.example.com", version, "gizmos")
        assert isinstance(info, CustomResourceInfo)
        infos[version] = info
    return infos


def gizmo(version: str, spec: Obj, name: str = "g") -> Obj:
    return {"apiVersion": f"multi.example.com/{version}", "kind": "Gizmo", "metadata": {"name": name}, "spec": spec}


async def test_each_version_validates_with_its_own_schema(registry: Registry) -> None:
    """NewStrategy per version: ``large`` passes v1beta1's enum but not v1's maxLength, and the reverse."""
    infos = await install(registry, CRD)
    await registry.create(infos["v1beta1"], "default", gizmo("v1beta1", {"size": "large"}, "a"))
    with pytest.raises(APIError) as too_long:
        await registry.create(infos["v1"], "default", gizmo("v1", {"size": "large"}, "b"))
    assert too_long.value.status["message"] == (
        'Gizmo.multi.example.com "b" is invalid: spec.size: Too long: may not be more than 3 bytes'
    )
    with pytest.raises(APIError) as enum:
        await registry.create(infos["v1beta1"], "default", gizmo("v1beta1", {"size": "mid"}, "c"))
    assert 'spec.size: Unsupported value: "mid": supported values: "small", "large"' in enum.value.status["message"]
    await registry.create(infos["v1"], "default", gizmo("v1", {"size": "mid"}, "c"))


async def test_created_at_beta_read_at_v1(registry: Registry) -> None:
    """Pruned and defaulted at the request's version (v1beta1 defaults ``color``), converted to v1 and pruned by
    v1's schema on encode (``legacy`` is not stored), stored in v1; the answer and every read come back through
    decoding: v1's default ``replicas`` (unstructuredDefaulter), then the read version's pruning (at v1beta1
    ``replicas`` goes); read at v1: ``apiVersion`` v1 (nopConverter) and ``replicas: 1``."""
    infos = await install(registry, CRD)
    created = await registry.create(infos["v1beta1"], "default", gizmo("v1beta1", {"legacy": "x", "bogus": 1}))
    assert created["apiVersion"] == "multi.example.com/v1beta1"
    assert created["spec"] == {"color": "red"}
    stored = registry.get_cached(infos["v1"], "default", "g")
    assert stored is not None
    assert stored["apiVersion"] == "multi.example.com/v1"
    assert stored["spec"] == {"color": "red"}
    as_v1 = await registry.get(infos["v1"], "default", "g")
    assert as_v1["apiVersion"] == "multi.example.com/v1"
    assert as_v1["spec"] == {"color": "red", "replicas": 1}
    as_beta = await registry.get(infos["v1beta1"], "default", "g")
    assert as_beta["apiVersion"] == "multi.example.com/v1beta1"
    assert as_beta["spec"] == {"color": "red"}


async def test_update_at_a_version_uses_its_schema_and_stores_the_storage_version(registry: Registry) -> None:
    infos = await install(registry, CRD)
    await registry.create(infos["v1"], "default", gizmo("v1", {"size": "abc"}))
    current = await registry.get(infos["v1beta1"], "default", "g")
    with pytest.raises(APIError) as enum:  # v1beta1's enum applies to a write at v1beta1
        await registry.update(infos["v1beta1"], "default", "g", current)
    assert 'spec.size: Unsupported value: "abc"' in enum.value.status["message"]
    current["spec"]["size"] = "small"
    updated = await registry.update(infos["v1beta1"], "default", "g", current)
    assert updated["apiVersion"] == "multi.example.com/v1beta1"
    stored = registry.get_cached(infos["v1"], "default", "g")
    assert stored is not None
    assert stored["apiVersion"] == "multi.example.com/v1"
    assert stored["spec"]["size"] == "small"


async def test_a_default_added_later_shows_on_read(registry: Registry) -> None:
    """unstructuredDefaulter in the storage codec: defaults apply when reading, not only on writes."""
    infos = await install(registry, CRD)
    await registry.create(infos["v1"], "default", gizmo("v1", {"size": "abc"}))
    later = copy.deepcopy(CRD)
    later["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"] = {
        "type": "string",
        "default": "blue",
    }
    infos = await install(registry, later)
    assert (await registry.get(infos["v1"], "default", "g"))["spec"] == {"size": "abc", "color": "blue", "replicas": 1}
    stored = registry.get_cached(infos["v1"], "default", "g")
    assert stored is not None
    assert "color" not in stored["spec"]  # nothing was written
    listed = [o["spec"].get("color") for o in (await registry_list(registry, infos["v1"]))]
    assert listed == ["blue"]


async def registry_list(reg: Registry, info: CustomResourceInfo) -> list[Obj]:
    from kubeplane.apiserver.listing import ListOptions, list_objects

    result = await list_objects(reg, info, "default", ListOptions())
    items: list[Obj] = result["items"]
    return items


def test_default_deprecation_warning() -> None:
    """customresource_handler.go defaultDeprecationWarning: the newest served non-deprecated version named."""
    beta = CRD["spec"]["versions"][0]
    assert deprecation_warning(CRD, beta) == (
        "multi.example.com/v1beta1 Gizmo is deprecated; use multi.example.com/v1 Gizmo"
    )
    alone = copy.deepcopy(CRD)
    alone["spec"]["versions"][1]["deprecated"] = True
    assert deprecation_warning(alone, beta) == "multi.example.com/v1beta1 Gizmo is deprecated"
    assert deprecation_warning(CRD, {**beta, "deprecationWarning": "gone soon"}) == "gone soon"
    assert deprecation_warning(CRD, CRD["spec"]["versions"][1]) == ""


async def _http_get(
    reg: Registry, path: str, accept: str = "application/json"
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """One GET through the ASGI app in process: status, headers, body."""
    import random as _random

    from prometheus_client import CollectorRegistry

    from kubeplane.apiserver.http.app import APIServerApp

    app = APIServerApp(reg, metrics_registry=CollectorRegistry(), rng=_random.Random(0))
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"accept", accept.encode())],
    }
    await app(scope, receive, send)
    body = b"".join(bytes(m.get("body", b"")) for m in sent[1:])
    return int(sent[0]["status"]), list(sent[0]["headers"]), body


async def test_deprecated_version_answers_with_a_warning(registry: Registry) -> None:
    """crdHandler.ServeHTTP adds the version's deprecation warning to every request to it (JSON, Table and
    errors); the non-deprecated version gets none."""
    infos = await install(registry, CRD)
    await registry.create(infos["v1"], "default", gizmo("v1", {}))
    text = b'299 - "multi.example.com/v1beta1 Gizmo is deprecated; use multi.example.com/v1 Gizmo"'
    for accept in ("application/json", "application/json;as=Table;v=v1;g=meta.k8s.io"):
        path = "/apis/multi.example.com/v1beta1/namespaces/default/gizmos/g"
        code, headers, _ = await _http_get(registry, path, accept)
        assert code == 200
        assert (b"warning", text) in headers
    code, headers, _ = await _http_get(registry, "/apis/multi.example.com/v1/namespaces/default/gizmos/g")
    assert code == 200
    assert not [h for h in headers if h[0] == b"warning"]
    code, headers, _ = await _http_get(registry, "/apis/multi.example.com/v1beta1/namespaces/default/gizmos/none")
    assert code == 404  # the warning goes out with an error answer too (filters/warning.go writes it first)
    assert (b"warning", text) in headers


async def test_cel_rules_run_with_the_request_versions_schema(registry: Registry) -> None:
    """The strategy's CEL validator is built from the version's schema (NewStrategy per version): a rule only
    v1beta1 has applies to writes at v1beta1 alone; its ``optionalOldSelf`` rule runs on create."""
    crd = copy.deepcopy(CRD)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"] = [
        {
            "rule": "!has(self.legacy) || quantity(self.legacy).isLessThan(quantity('1Gi'))",
            "message": "legacy must be under 1Gi",
        },
        {"rule": "!oldSelf.hasValue()", "message": "create only", "optionalOldSelf": True},
    ]
    infos = await install(registry, crd)
    with pytest.raises(APIError) as big:
        await registry.create(infos["v1beta1"], "default", gizmo("v1beta1", {"legacy": "2Gi"}, "a"))
    assert (
        big.value.status["message"]
        == 'Gizmo.multi.example.com "a" is invalid: spec: Invalid value: "object": legacy must be under 1Gi'
    )
    await registry.create(infos["v1beta1"], "default", gizmo("v1beta1", {"legacy": "1Mi"}, "b"))
    current = await registry.get(infos["v1beta1"], "default", "b")
    current["spec"]["size"] = "small"
    with pytest.raises(APIError) as again:
        await registry.update(infos["v1beta1"], "default", "b", current)
    assert 'spec: Invalid value: "object": create only' in again.value.status["message"]
    at_v1 = await registry.get(infos["v1"], "default", "b")
    at_v1["spec"]["size"] = "abc"
    await registry.update(infos["v1"], "default", "b", at_v1)  # v1 has neither rule


def _with_columns_and_status() -> Obj:
    crd = copy.deepcopy(CRD)
    beta, v1 = crd["spec"]["versions"]
    beta["additionalPrinterColumns"] = [{"name": "Size", "type": "string", "jsonPath": ".spec.size"}]
    v1["additionalPrinterColumns"] = [{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}]
    v1["subresources"] = {"status": {}}
    for version in (beta, v1):
        props = version["schema"]["openAPIV3Schema"]["properties"]
        props["status"] = {"type": "object", "properties": {"ready": {"type": "boolean"}}}
    return crd


async def test_printer_columns_are_per_version(registry: Registry) -> None:
    """getColumnsForVersion / tableconvertor.New per version: each version's Table has its own columns."""
    import orjson

    await install(registry, _with_columns_and_status())
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    names = {}
    for version in ("v1beta1", "v1"):
        code, _, sent = await _http_get(registry, f"/apis/multi.example.com/{version}/namespaces/default/gizmos", table)
        assert code == 200
        names[version] = [c["name"] for c in orjson.loads(sent)["columnDefinitions"]]
    assert names == {"v1beta1": ["Name", "Size"], "v1": ["Name", "Replicas"]}


async def test_status_subresource_is_per_version(registry: Registry) -> None:
    """customresource strategy per version (``status`` from the version's subresources): v1 has the status
    subresource, so its main resource ignores status; v1beta1 has none, so its writes set status."""
    infos = await install(registry, _with_columns_and_status())
    assert infos["v1"].subresource("status") is not None
    assert infos["v1beta1"].subresource("status") is None
    created = await registry.create(infos["v1"], "default", {**gizmo("v1", {}), "status": {"ready": True}})
    assert "status" not in created
    at_beta = await registry.get(infos["v1beta1"], "default", "g")
    updated = await registry.update(infos["v1beta1"], "default", "g", {**at_beta, "status": {"ready": True}})
    assert updated["status"] == {"ready": True}
    at_v1 = await registry.get(infos["v1"], "default", "g")
    again = await registry.update(infos["v1"], "default", "g", {**at_v1, "status": {"ready": False}})
    assert again["status"] == {"ready": True}


async def test_objects_stored_in_a_former_storage_version_read_with_its_schema(registry: Registry) -> None:
    """unstructuredDefaulter defaults with the schema of the object's own (stored) version, then the converter
    prunes with the read version's: an object written while v1beta1 was the storage version gets v1beta1's
    ``color`` default, not v1's ``replicas``, when read at v1 after the storage version moved to v1."""
    beta_storage = copy.deepcopy(CRD)
    beta_storage["spec"]["versions"][0]["storage"] = True
    beta_storage["spec"]["versions"][1]["storage"] = False
    infos = await install(registry, beta_storage)
    await registry.create(infos["v1beta1"], "default", gizmo("v1beta1", {"size": "small"}))
    stored = registry.get_cached(infos["v1"], "default", "g")
    assert stored is not None
    assert stored["apiVersion"] == "multi.example.com/v1beta1"
    assert "color" in stored["spec"]  # written with v1beta1's default
    del stored  # the cache's object is not to be changed
    later = copy.deepcopy(beta_storage)
    color = later["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"]
    color["default"] = "green"
    later["spec"]["versions"][0]["storage"] = False
    later["spec"]["versions"][1]["storage"] = True
    infos = await install(registry, later)
    await registry.create(infos["v1beta1"], "default", gizmo("v1beta1", {"size": "small"}, "h"))
    as_v1 = await registry.get(infos["v1"], "default", "g")
    assert as_v1["apiVersion"] == "multi.example.com/v1"
    assert as_v1["spec"] == {"size": "small", "color": "red"}  # stored in v1beta1: v1's replicas default not applied
    fresh = await registry.get(infos["v1"], "default", "h")
    assert fresh["spec"] == {"size": "small", "color": "green", "replicas": 1}  # stored in v1 now
