"""CRD validation messages (apiextensions-apiserver pkg/apis/apiextensions/validation/validation.go with the v1
options; pkg/apiserver/schema/validation.go for structural schemas) and v1 defaults (v1/defaults.go)."""

from __future__ import annotations

import copy
from typing import Any

from kubeplane.api.crd.definition import default_crd, validate_crd, validate_crd_update
from kubeplane.api.crd.resource import kube_version_key, resources_for

CRD: dict[str, Any] = {
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [
            {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
        ],
    },
}


def crd(**spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(CRD)
    out["spec"].update(spec)
    default_crd(out)
    return out


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_crd(obj)]


def test_defaults() -> None:
    obj = crd()
    assert obj["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert obj["spec"]["conversion"] == {"strategy": "None"}
    assert messages(obj) == []


def test_name_group_and_scope() -> None:
    obj = crd(group="example", scope="Global")
    assert messages(obj) == [
        'metadata.name: Invalid value: "widgets.example.com": must be spec.names.plural+"."+spec.group',
        'spec.group: Invalid value: "example": should be a domain with at least one dot',
        'spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"',
    ]


def test_versions_need_one_storage_and_a_schema() -> None:
    two = [
        {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": True, "storage": True},
    ]
    found = messages(crd(versions=two))
    assert found[0] == "spec.versions[1].schema.openAPIV3Schema: Required value: schemas are required"
    assert found[1].startswith("spec.versions: Invalid value: [")
    assert found[1].endswith(": must have exactly one version marked as storage version")


def test_structural_schema_rules() -> None:
    schema = {"properties": {"spec": {"properties": {"a": {"type": "string"}}}}}
    versions = [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]
    assert messages(crd(versions=versions)) == [
        "spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root",
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: "
        "must not be empty for specified object fields",
    ]


def test_names_are_dns_labels() -> None:
    obj = crd(names={"plural": "Widgets", "kind": "Wid get", "listKind": "Wid get"})
    obj["metadata"]["name"] = "Widgets.example.com"
    found = messages(obj)
    assert (
        'spec.names.plural: Invalid value: "Widgets": a DNS-1035 label must consist of lower case '
        "alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric "
        "character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    ) in found
    assert 'spec.names.listKind: Invalid value: "Wid get": kind and listKind may not be the same' in found
    assert any(
        m.startswith('spec.names.kind: Invalid value: "Wid get": may have mixed case, but should') for m in found
    )


def test_update_keeps_group_and_plural() -> None:
    old = crd()
    old["status"] = {"storedVersions": ["v1"]}
    new = copy.deepcopy(old)
    new["spec"]["group"] = "other.com"
    assert 'spec.group: Invalid value: "other.com": field is immutable' in [
        str(e) for e in validate_crd_update(new, old)
    ]


def test_versions_in_kube_aware_order() -> None:
    names = ["v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "foo"]
    assert sorted(names, key=kube_version_key) == ["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
    versions = [
        {"name": "v1beta1", "served": True, "storage": False},
        {"name": "v1", "served": True, "storage": True},
        {"name": "v1alpha1", "served": False, "storage": False},
    ]
    infos = resources_for(crd(versions=versions))
    assert [(i.version, i.converts) for i in infos] == [("v1", False), ("v1beta1", True)]
