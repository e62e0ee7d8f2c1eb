"""Discovery documents, built once from the resource table: the legacy lists (/api, /apis, /api/v1,
/apis/G/V) and the aggregated discovery v2 (``Accept: application/json;g=apidiscovery.k8s.io;v=v2;
as=APIGroupDiscoveryList``) that kubectl and client-go prefer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import orjson

from kubeplane.api.resources import ResourceInfo, ResourceTable

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
Doc = dict[str, Any]

OPENAPI_V2 = "/openapi/v2"
OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
"""What kube-openapi's handler answers protobuf with (``subTypeProtobuf``): clients ask with the deprecated
``...spec.v2@v1.0+protobuf`` too, which Go's mime parser refuses as a response type."""


def _pb_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (every field below is a string or a message, all shorter than 128)."""
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def openapi_v2(accept: str, git_version: str) -> tuple[bytes, str]:
    """``/openapi/v2`` as a Swagger 2.0 document that defines no model: ``(body, content type)``.

    kubeplane describes its kinds in ``/openapi/v3`` only. A v2 answer is still needed: kubectl's client-side
    schema validation (kubectl/pkg/validation/schema.go ``schemaValidation.validateResource``, reached for any
    kind the v3 documents do not have) fails on any error fetching v2 ("failed to download openapi" for a 406,
    "the server could not find the requested resource" for a 404), whereas a document without the kind skips
    validation, so an unknown kind gets kubectl's usual "no matches for kind". Protobuf (gnostic
    ``openapi_v2.Document``: swagger=1, info=2 {title=1, version=2}, paths=8, definitions=9) when asked for, as
    client-go's ``OpenAPISchema`` does; JSON otherwise."""
    if "protobuf" in accept and "application/json" not in accept:
        info = _pb_field(1, b"Kubernetes") + _pb_field(2, git_version.encode())
        doc = _pb_field(1, b"2.0") + _pb_field(2, info) + _pb_field(8, b"") + _pb_field(9, b"")
        return doc, OPENAPI_V2_PROTOBUF
    body = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": git_version}, "paths": {}, "definitions": {}}
    return orjson.dumps(body) + b"\n", "application/json"


def wants_aggregated(accept: str) -> bool:
    """True when the client lists aggregated discovery v2 among acceptable types (it lists it first when so)."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")}
        if {"g=apidiscovery.k8s.io", "v=v2", "as=APIGroupDiscoveryList"} <= params:
            return True
    return False


class Discovery:
    def __init__(self, table: ResourceTable, *, extra: Iterable[ResourceInfo] = ()) -> None:
        """``extra``: resources served outside the table (``metrics.k8s.io``), listed as the table's are."""
        by_gv: dict[tuple[str, str], list[ResourceInfo]] = defaultdict(list)
        for info in [*table, *extra]:
            by_gv[(info.group, info.version)].append(info)
        self._by_gv = dict(by_gv)
        self.groups = sorted({g for g, _ in by_gv if g})
        self.versions: dict[str, list[str]] = defaultdict(list)
        for group, version in by_gv:
            self.versions[group].append(version)

    def api_versions(self) -> Doc:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
        }

    def _group(self, group: str) -> Doc:
        versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in self.versions[group]]
        return {"name": group, "versions": versions, "preferredVersion": versions[0]}

    def api_group_list(self) -> Doc:
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [self._group(g) for g in self.groups]}

    def api_group(self, group: str) -> Doc | None:
        if group not in self.groups:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **self._group(group)}

    def resource_list(self, group: str, version: str) -> Doc | None:
        infos = self._by_gv.get((group, version))
        if infos is None:
            return None
        resources: list[Doc] = []
        for info in sorted(infos, key=lambda i: i.plural):
            entry: Doc = {
                "name": info.plural,
                "singularName": info.singular,
                "namespaced": info.namespaced,
                "kind": info.kind,
                "verbs": list(info.verbs),
            }
            if info.short_names:
                entry["shortNames"] = list(info.short_names)
            if info.categories:
                entry["categories"] = list(info.categories)
            resources.append(entry)
            for sub in info.subresources:
                sub_entry: Doc = {
                    "name": f"{info.plural}/{sub.name}",
                    "singularName": "",
                    "namespaced": info.namespaced,
                    "kind": sub.kind,
                    "verbs": list(sub.verbs),
                }
                if sub.group:
                    sub_entry["group"], sub_entry["version"] = sub.group, sub.version
                resources.append(sub_entry)
        group_version = f"{group}/{version}" if group else version
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}

    def aggregated(self, *, core: bool) -> Doc:
        groups = [""] if core else self.groups
        items = []
        for group in groups:
            versions = []
            for version in self.versions[group]:
                resources = []
                for info in sorted(self._by_gv[(group, version)], key=lambda i: i.plural):
                    entry: Doc = {
                        "resource": info.plural,
                        "responseKind": {"group": group, "version": version, "kind": info.kind},
                        "scope": "Namespaced" if info.namespaced else "Cluster",
                        "singularResource": info.singular,
                        "verbs": list(info.verbs),
                    }
                    if info.short_names:
                        entry["shortNames"] = list(info.short_names)
                    if info.categories:
                        entry["categories"] = list(info.categories)
                    if info.subresources:
                        entry["subresources"] = [
                            {
                                "subresource": s.name,
                                "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
                                "verbs": list(s.verbs),
                            }
                            for s in info.subresources
                        ]
                    resources.append(entry)
                versions.append({"version": version, "resources": resources, "freshness": "Current"})
            items.append({"metadata": {"name": group, "creationTimestamp": None}, "versions": versions})
        return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}
