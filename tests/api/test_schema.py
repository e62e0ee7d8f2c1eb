"""Strict field validation against the built-in schemas.

Upstream pins: test/integration/apiserver/field_validation_test.go (kubernetes v1.37) for message wording, paths
and order; sigs.k8s.io/json's strict decoder for "an unknown duplicated field is only unknown", deduplication
and the 100-error cap.
"""

from __future__ import annotations

import copy
import importlib.resources
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubeplane.api import schema
from kubeplane.api.resources import default_table

# invalidBodyJSON of field_validation_test.go, with metadata.name duplicated and metadata.unknownMeta added.
UPSTREAM_INVALID_DEPLOYMENT = b"""{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "a", "name": "b", "unknownMeta": "x", "labels": {"app": "nginx"}},
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:latest",
          "unknownNested": "val1",
          "imagePullPolicy": "Always",
          "imagePullPolicy": "Never"
        }]
      }
    }
  }
}"""

UPSTREAM_STRICT_ERROR = (
    'strict decoding error: duplicate field "metadata.name", unknown field "metadata.unknownMeta", '
    'unknown field "spec.unknown1", unknown field "spec.unknownDupe", duplicate field "spec.paused", '
    'unknown field "spec.template.spec.containers[0].unknownNested", '
    'duplicate field "spec.template.spec.containers[0].imagePullPolicy"'
)


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app.kubernetes.io/name": "web"},
            "annotations": {"example.com/anything": "goes"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u"}],
            "managedFields": [{"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {".": {}}}}],
        },
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"requests": {"cpu": 1, "memory": "64Mi"}, "limits": {"cpu": "500m"}},
                    "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
                },
                {"name": "sidecar", "image": "busybox", "env": [{"name": "A", "value": "1"}]},
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                }
            },
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            "overhead": {"cpu": "10m"},
            "nodeSelector": {"kubernetes.io/os": "linux"},
        },
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False"}]},
    }


def _deployment() -> dict[str, Any]:
    pod = _pod()
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod["spec"]},
        },
    }


def _with(obj: dict[str, Any], path: tuple[str | int, ...], key: str, value: object) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node: Any = out
    for step in path:
        node = node[step]
    node[key] = value
    return out


GVK_POD = ("", "v1", "Pod")
GVK_DEPLOY = ("apps", "v1", "Deployment")

UNKNOWN_CASES = [
    pytest.param(GVK_POD, _pod(), [], id="valid-pod-is-clean"),
    pytest.param(GVK_DEPLOY, _deployment(), [], id="valid-deployment-is-clean"),
    pytest.param(GVK_POD, _with(_pod(), (), "spex", {}), ['unknown field "spex"'], id="top-level"),
    pytest.param(
        GVK_POD,
        _with(_pod(), ("spec", "containers", 0), "imagePullPolicyy", "Always"),
        ['unknown field "spec.containers[0].imagePullPolicyy"'],
        id="list-element-first",
    ),
    pytest.param(
        GVK_POD,
        _with(_pod(), ("spec", "containers", 1, "env", 0), "valu", "x"),
        ['unknown field "spec.containers[1].env[0].valu"'],
        id="list-in-list-element",
    ),
    pytest.param(
        GVK_POD,
        _with(_pod(), ("metadata",), "labelz", {}),
        ['unknown field "metadata.labelz"'],
        id="objectmeta-is-checked",
    ),
    pytest.param(
        GVK_POD,
        _with(_pod(), ("metadata", "labels"), "any.example/key", "v"),
        [],
        id="map-keys-are-free",
    ),
    pytest.param(
        GVK_POD,
        _with(_pod(), ("spec", "containers", 0, "resources"), "requestz", {}),
        ['unknown field "spec.containers[0].resources.requestz"'],
        id="quantity-maps-accept-numbers-but-not-unknown-siblings",
    ),
    pytest.param(
        GVK_POD,
        _with(_pod(), ("metadata", "managedFields", 0, "fieldsV1"), "f:anything", {"x": 1}),
        [],
        id="free-form-fieldsV1",
    ),
    pytest.param(
        GVK_DEPLOY,
        _with(
            _deployment(),
            (
                "spec",
                "template",
                "spec",
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
                0,
                "matchExpressions",
                0,
            ),
            "keyy",
            "zone",
        ),
        [
            'unknown field "spec.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution'
            '.nodeSelectorTerms[0].matchExpressions[0].keyy"'
        ],
        id="deep-nesting",
    ),
    pytest.param(
        GVK_DEPLOY,
        _with(_deployment(), ("spec", "template"), "apiVersion", "v1"),
        ['unknown field "spec.template.apiVersion"'],
        id="type-meta-only-at-the-top",
    ),
    pytest.param(
        GVK_DEPLOY,
        _with(_deployment(), ("spec",), "replicas", {"not": "an int"}),
        [],
        id="type-mismatch-is-not-a-strict-error",
    ),
    pytest.param(
        ("autoscaling", "v1", "Scale"),
        {"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicass": 2}},
        ['unknown field "spec.replicass"'],
        id="scale-subresource-kind",
    ),
    pytest.param(
        ("apps", "v1", "DeleteOptions"),
        {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground", "grace": 1},
        ['unknown field "grace"'],
        id="delete-options-in-any-group",
    ),
    pytest.param(
        ("example.com", "v1", "Widget"),
        {"spec": {"anything": True}},
        [],
        id="kind-without-schema-is-not-checked",
    ),
    pytest.param(
        GVK_POD,
        _with(_pod(), ("metadata",), 'we"ird\n', 1),
        ['unknown field "metadata.we\\"ird\\n"'],
        id="paths-are-go-quoted",
    ),
]


@pytest.mark.parametrize(("gvk", "obj", "expected"), UNKNOWN_CASES)
def test_unknown_fields(gvk: tuple[str, str, str], obj: dict[str, Any], expected: list[str]) -> None:
    group, version, kind = gvk
    assert schema.unknown_fields(obj, group=group, version=version, kind=kind) == expected


def test_upstream_strict_error_is_reproduced_exactly() -> None:
    """field_validation_test.go "post-strict-validation": order, dedupe, unknown-duplicates only unknown."""
    errors = schema.strict_field_errors(UPSTREAM_INVALID_DEPLOYMENT, group="apps", version="v1", kind="Deployment")
    assert schema.strict_decoding_error(errors) == UPSTREAM_STRICT_ERROR


def test_unknown_fields_of_decoded_body_keep_document_order() -> None:
    obj = orjson.loads(UPSTREAM_INVALID_DEPLOYMENT)
    assert schema.unknown_fields(obj, group="apps", version="v1", kind="Deployment") == [
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
    ]


DUPLICATE_CASES = [
    pytest.param(b'{"a": 1, "b": 2}', [], id="none"),
    pytest.param(b'{"spec": {"replicas": 1, "replicas": 2}}', ['duplicate field "spec.replicas"'], id="nested"),
    pytest.param(b'{"items": [{"x": 1}, {"x": 1, "x": 2}]}', ['duplicate field "items[1].x"'], id="in-a-list-element"),
    pytest.param(
        b'{"metadata": {"labels": {"app": "a", "app": "b"}}}',
        ['duplicate field "metadata.labels.app"'],
        id="map-key",
    ),
    pytest.param(b'[{"a": 1, "a": 1}]', ['duplicate field "[0].a"'], id="top-level-array"),
    pytest.param(b'{"a": 1, "a": 2, "a": 3}', ['duplicate field "a"'], id="deduplicated-like-saveStrictError"),
]


@pytest.mark.parametrize(("raw", "expected"), DUPLICATE_CASES)
def test_duplicate_fields(raw: bytes, expected: list[str]) -> None:
    assert schema.duplicate_fields(raw) == expected


def test_duplicates_in_typed_map_and_free_form_values() -> None:
    raw = (
        b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"annotations": {"k": "1", "k": "2"},'
        b' "managedFields": [{"fieldsV1": {"f:a": {}, "f:a": {}}}]}}'
    )
    assert schema.strict_field_errors(raw, group="", version="v1", kind="Pod") == [
        'duplicate field "metadata.annotations.k"',
        'duplicate field "metadata.managedFields[0].fieldsV1.f:a"',
    ]


def test_kind_without_schema_still_gets_duplicate_checks() -> None:
    raw = b'{"spec": {"x": 1, "x": 2, "unknown": 1}}'
    got = schema.strict_field_errors(raw, group="example.com", version="v1", kind="Widget")
    assert got == ['duplicate field "spec.x"']


def test_errors_are_capped_at_100() -> None:
    obj = {"apiVersion": "v1", "kind": "Pod", **{f"u{i}": i for i in range(150)}}
    raw = orjson.dumps(obj)
    errors = schema.strict_field_errors(raw, group="", version="v1", kind="Pod")
    assert len(errors) == schema.MAX_STRICT_ERRORS
    assert errors[0] == 'unknown field "u0"'


def test_deep_free_form_values_do_not_hit_the_recursion_limit() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["f:x"] = {}
        node = node["f:x"]
    pod = _with(_pod(), ("metadata", "managedFields", 0), "fieldsV1", deep)
    assert schema.unknown_fields(pod, group="", version="v1", kind="Pod") == []


def test_invalid_json_raises_value_error() -> None:
    with pytest.raises(ValueError, match="Expecting"):
        schema.duplicate_fields(b'{"a": ')


def test_schemas_are_loaded_once() -> None:
    assert schema.load_schemas() is schema.load_schemas()


def test_schemas_json_is_packaged() -> None:
    assert importlib.resources.files("kubeplane.api").joinpath("schemas.json").is_file()


def test_every_served_kind_and_subresource_body_has_a_schema() -> None:
    for r in default_table():
        assert schema.has_schema(group=r.group, version=r.version, kind=r.kind), r.group_resource
        for sub in r.subresources:
            if not sub.kind.endswith("Options"):  # connect subresources take query parameters
                assert schema.has_schema(group=sub.group, version=sub.version, kind=sub.kind), sub


def test_every_ref_in_schemas_json_resolves() -> None:
    s = schema.load_schemas()
    for type_name, fields in s.types.items():
        for field, ref in fields.items():
            base = ref
            while base.startswith(("[]", "{}")):
                base = base[2:]
            assert base in schema.PRIMITIVES or base in s.types, (type_name, field, ref)
    assert set(s.roots.values()) <= set(s.types)


def test_quantities_and_int_or_string_are_primitives() -> None:
    types = schema.load_schemas().types
    assert types["V1ResourceRequirements"]["requests"] == "{}quantity"
    assert types["V1EmptyDirVolumeSource"]["sizeLimit"] == "quantity"
    assert types["V1RollingUpdateDeployment"]["maxSurge"] == "int-or-string"
    assert types["V1ServicePort"]["targetPort"] == "int-or-string"


def test_schemas_json_is_up_to_date_with_the_client() -> None:
    """tools/gen_schemas.py --check: the committed file is what the pinned client generates."""
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, str(root / "tools" / "gen_schemas.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


def test_prune_unknown_drops_undeclared_fields_at_every_depth() -> None:
    """What decoding into Go types does to unknown fields in the Warn and Ignore modes."""
    from kubeplane.api.schema import prune_unknown

    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "bogus": 1,
        "metadata": {"name": "p", "labels": {"any": "key"}, "nope": True},
        "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicyy": "Always"}], "extra": {}},
    }
    assert prune_unknown(pod, group="", version="v1", kind="Pod") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"any": "key"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    assert pod["spec"]["containers"][0]["imagePullPolicyy"] == "Always", "the input is not changed"
