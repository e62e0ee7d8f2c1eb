"""Server-side apply and managedFields against a real API server: real kubectl v1.37, raw HTTP, the official client.

Upstream pinned: handlers/patch.go (applyPatcher: create-on-apply, 201), apimachinery
util/managedfields/internal (fieldmanager.go decodeLiveOrNew, managedfieldsupdater.go, stripmeta.go,
conflict.go NewConflictError, lastappliedmanager.go), structured-merge-diff merge/update.go (conflicts, force,
pruning of fields an applier stopped applying), apimachinery validation ValidatePatchOptions.
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import Server, start_server
from .test_kubectl import KUBECTL, Kubectl

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports: [{containerPort: 80}]
"""


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file()
    root = tmp_path_factory.mktemp("ssa")
    server = start_server(root / "data", tls=True)
    yield Kubectl(server, root / "cache")
    server.stop()


def _request(server: Server, method: str, path: str, body: str | None, content_type: str) -> tuple[int, Any]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    conn = http.client.HTTPSConnection(server.host, server.port, timeout=30, context=context)
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": content_type, "User-Agent": "curl/8"}
    conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, json.loads(data) if data else None


def _managers(obj: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(e["manager"], e["operation"], e.get("subresource", "")): e for e in obj["metadata"]["managedFields"]}


def test_apply_server_side_twice_conflict_and_force(kubectl: Kubectl) -> None:
    # patch.go applyPatcher: create on apply; the second identical apply changes nothing
    out = kubectl("apply", "--server-side", "-f", "-", stdin=DEPLOYMENT).stdout.strip()
    assert out == "deployment.apps/web serverside-applied"
    first = kubectl.json("get", "deployment", "web", "--show-managed-fields")
    entry = _managers(first)[("kubectl", "Apply", "")]
    assert entry["apiVersion"] == "apps/v1"
    assert entry["fieldsType"] == "FieldsV1"
    assert entry["fieldsV1"]["f:spec"]["f:replicas"] == {}
    assert "f:name" not in entry["fieldsV1"]["f:metadata"]  # stripmeta.go
    kubectl("apply", "--server-side", "-f", "-", stdin=DEPLOYMENT)
    again = kubectl.json("get", "deployment", "web", "--show-managed-fields")
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    # a second manager changing an owned field: 409 with upstream's message (conflict.go)
    changed = DEPLOYMENT.replace("replicas: 2", "replicas: 5")
    result = kubectl("apply", "--server-side", "--field-manager=other", "-f", "-", stdin=changed, check=False)
    assert result.returncode != 0
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in result.stderr
    # --force-conflicts takes the field over (merge/update.go force)
    kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-", stdin=changed)
    forced = kubectl.json("get", "deployment", "web", "--show-managed-fields")
    assert forced["spec"]["replicas"] == 5
    managers = _managers(forced)
    assert "f:replicas" in managers[("other", "Apply", "")]["fieldsV1"]["f:spec"]
    assert "f:replicas" not in managers[("kubectl", "Apply", "")]["fieldsV1"]["f:spec"]
    # get -o yaml --show-managed-fields shows them; without the flag kubectl hides them
    assert "managedFields:" in kubectl("get", "deployment", "web", "-o", "yaml", "--show-managed-fields").stdout
    assert "managedFields:" not in kubectl("get", "deployment", "web", "-o", "yaml").stdout


def test_kubectl_diff_server_side(kubectl: Kubectl) -> None:
    kubectl("apply", "--server-side", "-f", "-", stdin=DEPLOYMENT.replace("name: web", "name: diffed"))
    same = kubectl(
        "diff", "--server-side", "-f", "-", stdin=DEPLOYMENT.replace("name: web", "name: diffed"), check=False
    )
    assert same.returncode == 0, same.stderr
    changed = DEPLOYMENT.replace("name: web", "name: diffed").replace("nginx:1.25", "nginx:1.27")
    result = kubectl("diff", "--server-side", "-f", "-", stdin=changed, check=False)
    assert result.returncode == 1, result.stderr
    assert "+      - image: nginx:1.27" in result.stdout


def test_client_side_apply_then_server_side_upgrade(kubectl: Kubectl) -> None:
    # lastappliedmanager.go: kubectl's server-side apply takes over what the annotation covers, without conflicts
    doc = DEPLOYMENT.replace("name: web", "name: upgraded")
    kubectl("apply", "-f", "-", stdin=doc)
    before = kubectl.json("get", "deployment", "upgraded", "--show-managed-fields")
    assert ("kubectl-client-side-apply", "Update", "") in _managers(before)
    changed = doc.replace("replicas: 2", "replicas: 3")
    kubectl("apply", "--server-side", "-f", "-", stdin=changed)
    after = kubectl.json("get", "deployment", "upgraded", "--show-managed-fields")
    assert after["spec"]["replicas"] == 3
    # lastappliedupdater.go: the annotation follows the applied configuration
    last = json.loads(after["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["spec"]["replicas"] == 3


def test_update_records_manager_from_user_agent_and_query(kubectl: Kubectl) -> None:
    server = kubectl.server
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "1"}})
    code, created = _request(server, "POST", "/api/v1/namespaces/default/configmaps", body, "application/json")
    assert code == 201
    (entry,) = created["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("curl", "Update", "v1")
    assert entry["fieldsV1"] == {"f:data": {".": {}, "f:a": {}}}
    assert entry["time"].endswith("Z")
    assert len(entry["time"]) == 20
    patch = json.dumps({"data": {"b": "2"}})
    code, patched = _request(
        server,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/cm?fieldManager=mine",
        patch,
        "application/merge-patch+json",
    )
    assert code == 200
    managers = _managers(patched)
    assert managers[("mine", "Update", "")]["fieldsV1"] == {"f:data": {"f:b": {}}}
    # managedFields: [{}] resets them (fieldmanager.go isResetManagedFields); the update is then untracked
    reset = {**patched, "metadata": {**patched["metadata"], "managedFields": [{}]}}
    code, out = _request(
        server, "PUT", "/api/v1/namespaces/default/configmaps/cm", json.dumps(reset), "application/json"
    )
    assert code == 200
    assert "managedFields" not in out["metadata"]


def test_apply_requires_field_manager_and_removes_unapplied_fields(kubectl: Kubectl) -> None:
    server = kubectl.server
    path = "/api/v1/namespaces/default/configmaps/applied"
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\ndata: {a: '1', b: '2'}\n"
    code, status = _request(server, "PATCH", path, doc, "application/apply-patch+yaml")
    assert code == 422
    assert status["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    assert status["details"] == {
        "group": "meta.k8s.io",
        "kind": "PatchOptions",
        "causes": [
            {
                "reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch",
                "field": "fieldManager",
            }
        ],
    }
    code, created = _request(server, "PATCH", path + "?fieldManager=tool", doc, "application/apply-patch+yaml")
    assert code == 201
    assert created["data"] == {"a": "1", "b": "2"}
    # dryRun changes nothing
    smaller = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied}\ndata: {a: '1'}\n"
    code, dry = _request(
        server, "PATCH", path + "?fieldManager=tool&dryRun=All", smaller, "application/apply-patch+yaml"
    )
    assert code == 200
    assert dry["data"] == {"a": "1"}
    code, now = _request(server, "GET", path, None, "application/json")
    assert now["data"] == {"a": "1", "b": "2"}
    code, applied = _request(server, "PATCH", path + "?fieldManager=tool", smaller, "application/apply-patch+yaml")
    assert code == 200
    assert applied["data"] == {"a": "1"}  # merge/update.go prune
    # force on a non-apply patch is refused (ValidatePatchOptions)
    code, status = _request(server, "PATCH", path + "?force=true", "{}", "application/merge-patch+json")
    assert code == 422
    assert status["message"].endswith("force: Forbidden: may not be specified for non-apply patch")


def test_conflict_status_causes(kubectl: Kubectl) -> None:
    server = kubectl.server
    path = "/api/v1/namespaces/default/configmaps/owned"
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owned}\ndata: {a: '1'}\n"
    _request(server, "PATCH", path + "?fieldManager=one", doc, "application/apply-patch+yaml")
    code, status = _request(
        server, "PATCH", path + "?fieldManager=two", doc.replace("'1'", "'2'"), "application/apply-patch+yaml"
    )
    assert code == 409
    assert status["reason"] == "Conflict"
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "one": .data.a'
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".data.a"}
    ]


def test_official_client_dynamic_apply_and_create_from_yaml(kubectl: Kubectl, tmp_path: Any) -> None:
    from kubernetes import config, dynamic, utils

    api = config.new_client_from_config(config_file=str(kubectl.server.kubeconfig))
    try:
        client = dynamic.DynamicClient(api)
        cms = client.resources.get(api_version="v1", kind="ConfigMap")
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"k": "v"}}
        out = cms.server_side_apply(body=body, namespace="default", field_manager="dyn-client")
        assert out.data.k == "v"
        assert out.metadata.managedFields[0].manager == "dyn-client"
        manifest = tmp_path / "m.yaml"
        manifest.write_text(DEPLOYMENT.replace("name: web", "name: fromyaml"))
        utils.create_from_yaml(api, str(manifest), namespace="default")
        got = kubectl.json("get", "deployment", "fromyaml", "--show-managed-fields")
        assert got["metadata"]["managedFields"][0]["operation"] == "Update"
    finally:
        api.close()


def test_scale_and_status_apply_entries(kubectl: Kubectl) -> None:
    # scale and status writes name their subresource (buildmanagerinfo.go); apply on /status owns status only
    kubectl("apply", "--server-side", "-f", "-", stdin=DEPLOYMENT.replace("name: web", "name: scaled"))
    kubectl("scale", "deployment", "scaled", "--replicas", "4")
    path = "/apis/apps/v1/namespaces/default/deployments/scaled/status?fieldManager=ctl"
    doc = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: scaled}\nstatus: {observedGeneration: 1}\n"
    code, out = _request(kubectl.server, "PATCH", path, doc, "application/apply-patch+yaml")
    assert code == 200, out
    assert out["status"]["observedGeneration"] == 1
    managers = _managers(out)
    scale = [e for (_, op, sub), e in managers.items() if (op, sub) == ("Update", "scale")]
    assert scale[0]["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert managers[("ctl", "Apply", "status")]["fieldsV1"] == {"f:status": {"f:observedGeneration": {}}}


WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.ssa.example.com
spec:
  group: ssa.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              args: {type: array, items: {type: string}}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties: {name: {type: string}, port: {type: integer}}
"""


def _widget(ports: str, extra: str = "") -> str:
    return f"""
apiVersion: ssa.example.com/v1
kind: Widget
metadata: {{name: w1}}
spec:
  ports: [{ports}]
{extra}"""


def test_custom_resource_apply_uses_crd_schema(kubectl: Kubectl) -> None:
    # apiextensions-apiserver customresource_handler.go: the TypeConverter comes from the CRD's structural schema
    # (kube-openapi schemaconv): x-kubernetes-list-type map items are owned per key; unmarked lists are atomic
    kubectl("apply", "-f", "-", stdin=WIDGET_CRD)
    kubectl("wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.ssa.example.com")
    kubectl(
        "apply",
        "--server-side",
        "--field-manager=one",
        "-f",
        "-",
        stdin=_widget("{name: http, port: 80}", "  replicas: 1\n  args: [a, b]"),
    )
    kubectl("apply", "--server-side", "--field-manager=two", "-f", "-", stdin=_widget("{name: https, port: 443}"))
    obj = kubectl.json("get", "widget", "w1", "--show-managed-fields")
    assert obj["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    managers = _managers(obj)
    assert list(managers[("one", "Apply", "")]["fieldsV1"]["f:spec"]["f:ports"]) == ['k:{"name":"http"}']
    assert list(managers[("two", "Apply", "")]["fieldsV1"]["f:spec"]["f:ports"]) == ['k:{"name":"https"}']
    # the same applier again keeps both items; a scalar and the atomic list conflict for another manager
    kubectl(
        "apply",
        "--server-side",
        "--field-manager=one",
        "-f",
        "-",
        stdin=_widget("{name: http, port: 80}", "  replicas: 1\n  args: [a, b]"),
    )
    assert len(kubectl.json("get", "widget", "w1")["spec"]["ports"]) == 2
    result = kubectl(
        "apply",
        "--server-side",
        "--field-manager=two",
        "-f",
        "-",
        stdin=_widget("{name: https, port: 443}", "  replicas: 2\n  args: [c]"),
        check=False,
    )
    assert result.returncode != 0
    assert 'Apply failed with 2 conflicts: conflicts with "one":\n- .spec.args\n- .spec.replicas' in result.stderr


def test_field_manager_validation(kubectl: Kubectl) -> None:
    # apimachinery pkg/apis/meta/v1/validation ValidateFieldManager via ValidateCreateOptions/ValidatePatchOptions
    server = kubectl.server
    path = "/api/v1/namespaces/default/configmaps"
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fm-check"}})
    code, status = _request(server, "POST", path + "?fieldManager=" + "a" * 129, body, "application/json")
    assert code == 422
    assert status["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes'
    )
    code, status = _request(server, "POST", path + "?fieldManager=a%07b", body, "application/json")
    assert code == 422
    assert status["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value: "a\\ab": '
        "invalid character U+0007 (at position 1)"
    )
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fm-check}\n"
    code, status = _request(server, "PATCH", path + "/fm-check?fieldManager=x%09", doc, "application/apply-patch+yaml")
    assert code == 422
    assert status["message"].startswith('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Invalid value:')
    code, _ = _request(server, "POST", path + "?fieldManager=" + "a" * 128, body, "application/json")
    assert code == 201  # nothing was created by the refused requests; 128 bytes is allowed


def test_apply_keeps_unquoted_timestamps_as_the_strings_written(kubectl: Kubectl) -> None:
    """go-yaml v2 keeps a timestamp-looking plain scalar decoded into interface{} as its text (decode.go, "for
    backward compatibility reasons"), so sigs.k8s.io/yaml hands the apply a JSON string: kubectl apply
    --server-side of a label or data value ``2024-01-01`` stores "2024-01-01"."""
    server = kubectl.server
    path = "/api/v1/namespaces/default/configmaps/dated?fieldManager=tool"
    doc = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dated\n  labels: {day: 2024-01-01}\n"
        "data: {day: 2024-01-01, at: 2001-12-14t21:59:43.10-05:00}\n"
    )
    code, created = _request(server, "PATCH", path, doc, "application/apply-patch+yaml")
    assert code == 201, created
    assert created["metadata"]["labels"] == {"day": "2024-01-01"}
    assert created["data"] == {"day": "2024-01-01", "at": "2001-12-14t21:59:43.10-05:00"}
