"""CustomResourceDefinitions and their custom resources, with real kubectl v1.37 and the official Python client
against a kubeplane apiserver (TLS, the test's own kubeconfig and kubectl cache dir).

Upstream behaviour pinned, by file (k8s.io/apiextensions-apiserver unless noted):
* pkg/controller/status/naming_controller.go, pkg/controller/establish: NamesAccepted and Established;
  ``kubectl wait --for condition=established``; a name conflict (``KindConflict``).
* pkg/apiserver/customresource_handler.go: CRs served at every served version, each with its own schema,
  strict field validation from pruning (``unknown field "spec.foo"``), defaulting (on read too), kube-openapi
  validation messages (validation.go), deprecated versions' warnings.
* pkg/registry/customresource/tableconvertor: additionalPrinterColumns in kubectl get.
* pkg/controller/openapi/builder: ``kubectl explain`` shows the schema's descriptions.
* pkg/registry/customresource/etcd.go: status and scale subresources.
* pkg/controller/finalizer: deleting a CRD deletes its CRs (finalizer customresourcecleanup.apiextensions.k8s.io).
* pkg/apis/apiextensions/validation/validation.go: CRD validation messages.
* k8s.io/kube-aggregator pkg/apis/apiregistration/validation: APIService.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Server, start_server
from .test_kubectl import KUBECTL, Kubectl

CRD = r"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: A CronTab runs an image on a schedule.
        properties:
          spec:
            type: object
            description: The desired schedule and image of the CronTab.
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                description: The cron schedule, in cron format.
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image: {type: string, description: The container image to run.}
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
          status:
            type: object
            properties:
              replicas: {type: integer}
"""


def cron(name: str, spec: str, api_version: str = "stable.example.com/v1") -> str:
    return (
        f"apiVersion: {api_version}\nkind: CronTab\nmetadata:\n  name: {name}\n  labels: {{app: {name}}}\nspec:\n{spec}"
    )


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file()
    root = tmp_path_factory.mktemp("crds")
    server = start_server(root / "data", tls=True)
    k = Kubectl(server, root / "cache")
    k("apply", "-f", "-", stdin=CRD)
    k("wait", "--for", "condition=established", "--timeout=30s", "crd/crontabs.stable.example.com")
    yield k
    server.stop()


def test_established_names_and_discovery(kubectl: Kubectl) -> None:
    crd = kubectl.json("get", "crd", "crontabs.stable.example.com")
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in crd["status"]["conditions"]}
    assert conditions == {
        "NamesAccepted": ("True", "NoConflicts", "no conflicts found"),
        "Established": ("True", "InitialNamesAccepted", "the initial names have been accepted"),
    }
    assert crd["status"]["acceptedNames"]["shortNames"] == ["ct"]
    assert crd["status"]["storedVersions"] == ["v1"]
    resources = kubectl("api-resources", "--api-group=stable.example.com", "-o", "name").stdout.split()
    assert resources == ["crontabs.stable.example.com"]
    group = json.loads(kubectl("get", "--raw", "/apis/stable.example.com").stdout)
    assert group["preferredVersion"]["version"] == "v1"  # GA before beta (CompareKubeAwareVersionStrings)


def test_valid_crs_print_their_columns_and_get_defaults(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=cron("first", '  cronSpec: "* * * * */5"\n  image: img\n'))
    kubectl("apply", "-f", "-", stdin=cron("second", '  cronSpec: "*/2 * * * *"\n  replicas: 4\n'))
    lines = kubectl("get", "crontabs").stdout.splitlines()
    assert lines[0].split() == ["NAME", "SPEC", "REPLICAS", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["first"][1:7] == ["*", "*", "*", "*", "*/5", "1"]  # replicas defaulted from the schema
    assert rows["second"][-2] == "4"
    assert kubectl.json("get", "ct", "first")["spec"] == {"cronSpec": "* * * * */5", "image": "img", "replicas": 1}


def test_invalid_cr_gets_upstreams_messages(kubectl: Kubectl) -> None:
    bad = cron("bad", '  cronSpec: "bogus"\n  replicas: "string"\n  foo: bar\n')
    strict = kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert strict.returncode != 0
    assert (
        'CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.foo"'
        in strict.stderr
    )
    meta = kubectl("apply", "-f", "-", stdin=bad.replace("  labels:", "  colour: red\n  labels:"), check=False)
    assert 'strict decoding error: unknown field "metadata.colour", unknown field "spec.foo"' in meta.stderr
    invalid = kubectl("apply", "--validate=false", "-f", "-", stdin=bad, check=False)
    assert 'The CronTab "bad" is invalid:' in invalid.stderr
    assert (
        '* spec.cronSpec: Invalid value: "bogus": spec.cronSpec in body should match '
        "'^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'"
    ) in invalid.stderr
    assert '* spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"' in (
        invalid.stderr
    )
    missing = kubectl("apply", "-f", "-", stdin=cron("empty", "  image: x\n"), check=False)
    assert 'The CronTab "empty" is invalid: spec.cronSpec: Required value' in missing.stderr
    too_many = kubectl("apply", "-f", "-", stdin=cron("many", '  cronSpec: "* * * * *"\n  replicas: 11\n'), check=False)
    assert "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10" in (
        too_many.stderr
    )
    assert "bad" not in kubectl("get", "ct", "-o", "name").stdout


def test_explain_shows_the_schemas_descriptions(kubectl: Kubectl) -> None:
    out = kubectl("explain", "crontabs.spec").stdout
    assert "The desired schedule and image of the CronTab." in out
    assert "The cron schedule, in cron format." in out
    assert "cronSpec\t<string> -required-" in out
    assert "A CronTab runs an image on a schedule." in kubectl("explain", "crontabs").stdout


def test_status_and_scale_subresources(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=cron("scaled", '  cronSpec: "* * * * *"\n'))
    assert kubectl("scale", "ct", "scaled", "--replicas=3").returncode == 0
    scale = json.loads(
        kubectl("get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs/scaled/scale").stdout
    )
    assert (scale["kind"], scale["spec"], scale["status"]) == ("Scale", {"replicas": 3}, {"replicas": 0})
    kubectl("patch", "ct", "scaled", "--subresource=status", "--type=merge", "-p", '{"status":{"replicas":2}}')
    obj = kubectl.json("get", "ct", "scaled")
    assert obj["status"] == {"replicas": 2}
    assert obj["metadata"]["generation"] == 2  # the scale changed spec; the status write did not count
    kubectl("patch", "ct", "scaled", "--type=merge", "-p", '{"status":{"replicas":9}}')  # main resource: ignored
    assert kubectl.json("get", "ct", "scaled")["status"] == {"replicas": 2}


def test_selectors_and_versions(kubectl: Kubectl) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        stdin=cron("beta", '  cronSpec: "* * * * *"\n  anything: goes\n', "stable.example.com/v1beta1"),
    )
    assert kubectl("get", "ct", "-l", "app=beta", "-o", "name").stdout.split() == ["crontab.stable.example.com/beta"]
    names = kubectl("get", "ct", "--field-selector", "metadata.name=beta", "-o", "name").stdout.split()
    assert names == ["crontab.stable.example.com/beta"]
    as_v1 = kubectl.json("get", "crontabs.v1.stable.example.com", "beta")
    as_beta = kubectl.json("get", "crontabs.v1beta1.stable.example.com", "beta")
    assert (as_v1["apiVersion"], as_beta["apiVersion"]) == ("stable.example.com/v1", "stable.example.com/v1beta1")
    refused = kubectl("get", "ct", "--field-selector", "spec.image=x", check=False)
    assert '"spec.image" is not a known field selector: only "metadata.name", "metadata.namespace"' in refused.stderr


def test_official_client_custom_objects_api(kubectl: Kubectl) -> None:
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(kubectl.server.kubeconfig))
    try:
        objects = client.CustomObjectsApi(api)
        body = {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "py"}}
        body["spec"] = {"cronSpec": "0 * * * *"}
        created = objects.create_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs", body)
        assert created["spec"]["replicas"] == 1
        got = objects.get_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs", "py")
        assert got["metadata"]["uid"] == created["metadata"]["uid"]
        patched = objects.patch_namespaced_custom_object(
            "stable.example.com", "v1", "default", "crontabs", "py", {"spec": {"image": "new"}}
        )
        assert patched["spec"]["image"] == "new"
        listed = objects.list_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs")
        assert "py" in [item["metadata"]["name"] for item in listed["items"]]
        objects.delete_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs", "py")
        with pytest.raises(client.ApiException) as refused:
            objects.get_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs", "py")
        assert refused.value.status == 404
    finally:
        api.close()


def test_crd_validation_errors(kubectl: Kubectl) -> None:
    bad = CRD.replace("name: crontabs.stable.example.com", "name: crons.stable.example.com")
    out = kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert (
        'The CustomResourceDefinition "crons.stable.example.com" is invalid: metadata.name: Invalid value: '
        '"crons.stable.example.com": must be spec.names.plural+"."+spec.group'
    ) in out.stderr
    two = CRD.replace("storage: false", "storage: true")
    out = kubectl(
        "apply",
        "-f",
        "-",
        stdin=two.replace("crontabs", "twos").replace("CronTab", "Two").replace("[ct]", "[]"),
        check=False,
    )
    assert "must have exactly one version marked as storage version" in out.stderr


def test_name_conflict_is_not_accepted(kubectl: Kubectl) -> None:
    other = (
        CRD.replace("crontabs", "crontabz").replace("singular: crontab,", "singular: crontabz,").replace("[ct]", "[]")
    )
    kubectl("apply", "-f", "-", stdin=other)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        status = kubectl.json("get", "crd", "crontabz.stable.example.com").get("status", {})
        names = {c["type"]: c for c in status.get("conditions", [])}
        if "NamesAccepted" in names:
            break
        time.sleep(0.1)
    assert (names["NamesAccepted"]["status"], names["NamesAccepted"]["reason"]) == ("False", "KindConflict")
    assert names["NamesAccepted"]["message"] == '"CronTab" is already in use'
    assert names["Established"]["status"] == "False"
    kubectl("delete", "crd", "crontabz.stable.example.com")


def test_apiservice_is_a_stored_kind(kubectl: Kubectl) -> None:
    local = "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1.example.io\nspec:\n"
    local += "  group: example.io\n  version: v1\n  groupPriorityMinimum: 100\n  versionPriority: 10\n"
    kubectl("apply", "-f", "-", stdin=local)
    got = kubectl.json("get", "apiservice", "v1.example.io")
    assert got["status"]["conditions"][0]["reason"] == "Local"
    table = kubectl("get", "apiservice", "v1.example.io").stdout.splitlines()  # kube-aggregator's ConvertToTable
    assert table[0].split() == ["NAME", "SERVICE", "AVAILABLE", "AGE"]
    assert table[1].split()[:3] == ["v1.example.io", "Local", "True"]
    wrong = local.replace("v1.example.io", "v2.example.io").replace("versionPriority: 10", "versionPriority: 0")
    out = kubectl("apply", "-f", "-", stdin=wrong, check=False)
    assert (
        'The APIService "v2.example.io" is invalid: \n* metadata.name: Invalid value: "v2.example.io": must be '
        '`spec.version+"."+spec.group`: "v1.example.io"\n* spec.versionPriority: Invalid value: 0: must be positive '
        "and less than 1000"
    ) in out.stderr


def test_official_client_typed_models_parse_crds_and_apiservices(kubectl: Kubectl) -> None:
    """ApiextensionsV1Api and ApiregistrationV1Api deserialize into their typed models (required fields present)."""
    from kubernetes import client, config

    local = "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata:\n  name: v1.typed.io\nspec:\n"
    kubectl(
        "apply",
        "-f",
        "-",
        stdin=local + "  group: typed.io\n  version: v1\n  groupPriorityMinimum: 1\n  versionPriority: 1\n",
    )
    api = config.new_client_from_config(config_file=str(kubectl.server.kubeconfig))
    try:
        crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        crontabs = next(c for c in crds if c.metadata.name == "crontabs.stable.example.com")
        assert crontabs.status.accepted_names.kind == "CronTab"
        assert [v.name for v in crontabs.spec.versions] == ["v1beta1", "v1"]
        services = client.ApiregistrationV1Api(api).list_api_service().items
        assert "v1.typed.io" in [s.metadata.name for s in services]
    finally:
        api.close()


def test_watch_sees_custom_resources(kubectl: Kubectl) -> None:
    from kubernetes import client, config, watch

    api = config.new_client_from_config(config_file=str(kubectl.server.kubeconfig))
    try:
        objects = client.CustomObjectsApi(api)
        listed = objects.list_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs")
        kubectl("apply", "-f", "-", stdin=cron("watched", '  cronSpec: "* * * * *"\n'))
        stream = watch.Watch().stream(  # through v1beta1: the stored v1 objects presented in v1beta1
            objects.list_namespaced_custom_object,
            "stable.example.com",
            "v1beta1",
            "default",
            "crontabs",
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=5,
        )
        events = [(e["type"], e["object"]["metadata"]["name"], e["object"]["apiVersion"]) for e in stream]
        assert ("ADDED", "watched", "stable.example.com/v1beta1") in events
    finally:
        api.close()


def test_updating_the_schema_is_served_at_once(kubectl: Kubectl) -> None:
    """The CRD handler rebuilds a version's serving info on every CRD change (customresource_handler.go
    ``getOrCreateServingInfoFor`` keyed by the CRD's UID and resourceVersion)."""
    wider = CRD.replace("maximum: 10", "maximum: 20").replace(
        "The container image to run.", "The container image the CronTab runs."
    )
    kubectl("apply", "-f", "-", stdin=wider)
    kubectl("apply", "-f", "-", stdin=cron("wide", '  cronSpec: "* * * * *"\n  replicas: 15\n'))
    assert kubectl.json("get", "ct", "wide")["spec"]["replicas"] == 15
    assert "The container image the CronTab runs." in kubectl("explain", "crontabs.spec.image").stdout
    kubectl("apply", "-f", "-", stdin=CRD)


def test_zz_deleting_the_crd_deletes_its_crs(kubectl: Kubectl) -> None:
    assert kubectl("get", "ct", "-o", "name").stdout.split()
    kubectl("delete", "crd", "crontabs.stable.example.com", "--timeout=30s")
    assert kubectl("get", "crd", "-o", "name").stdout.split() == []
    raw = kubectl("get", "--raw", "/apis/stable.example.com/v1/crontabs", check=False)
    assert raw.returncode != 0
    assert "NotFound" in raw.stderr
    kubectl("apply", "-f", "-", stdin=CRD)  # recreated: empty, nothing left behind in storage
    kubectl("wait", "--for", "condition=established", "--timeout=30s", "crd/crontabs.stable.example.com")
    assert json.loads(kubectl("get", "--raw", "/apis/stable.example.com/v1/crontabs").stdout)["items"] == []


def test_restart_serves_stored_crds(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server: Server = start_server(data, tls=True)
    try:
        k = Kubectl(server, tmp_path / "cache")
        k("apply", "-f", "-", stdin=CRD)
        k("wait", "--for", "condition=established", "--timeout=30s", "crd/crontabs.stable.example.com")
        k("apply", "-f", "-", stdin=cron("kept", '  cronSpec: "* * * * *"\n'))
    finally:
        server.stop()
    server = start_server(data, tls=True)
    try:
        k = Kubectl(server, tmp_path / "cache2")
        got: dict[str, Any] = k.json("get", "ct", "kept")
        assert got["spec"]["replicas"] == 1
    finally:
        server.stop()


GIZMOS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.multi.example.com
spec:
  group: multi.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string, enum: [small, large]}
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Size, type: string, jsonPath: .spec.size}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string}
              replicas: {type: integer, default: 2}
"""


def test_versions_with_their_own_schemas_and_deprecation(kubectl: Kubectl) -> None:
    """customresource_handler.go: a deprecated version's requests carry ``defaultDeprecationWarning`` (kubectl
    prints it as ``Warning: ...``); a CR created at v1alpha1 is validated with v1alpha1's schema (its enum) and
    read at v1 carries ``apiVersion`` v1 and v1's default (nopConverter, unstructuredDefaulter)."""
    kubectl("apply", "-f", "-", stdin=GIZMOS)
    kubectl("wait", "--for", "condition=established", "--timeout=30s", "crd/gizmos.multi.example.com")
    alpha = "apiVersion: multi.example.com/v1alpha1\nkind: Gizmo\nmetadata:\n  name: g\nspec:\n  size: {size}\n"
    bad = kubectl("apply", "-f", "-", stdin=alpha.format(size="mid"), check=False)
    assert 'spec.size: Unsupported value: "mid": supported values: "small", "large"' in bad.stderr
    made = kubectl("apply", "-f", "-", stdin=alpha.format(size="small"))
    assert "Warning: multi.example.com/v1alpha1 Gizmo is deprecated; use multi.example.com/v1 Gizmo" in made.stderr
    as_v1 = kubectl.json("get", "gizmos.v1.multi.example.com", "g")
    assert (as_v1["apiVersion"], as_v1["spec"]) == ("multi.example.com/v1", {"size": "small", "replicas": 2})
    rows = kubectl("get", "gizmos.v1.multi.example.com").stdout.split("\n")
    assert rows[0].split() == ["NAME", "SIZE", "REPLICAS"]
    assert rows[1].split() == ["g", "small", "2"]
    kubectl("delete", "crd", "gizmos.multi.example.com", "--timeout=30s")


WIDGETS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.cel.example.com
spec:
  group: cel.example.com
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
            x-kubernetes-validations:
            - {rule: "self.replicas <= self.maxReplicas", message: "replicas must be smaller than maxReplicas"}
            properties:
              replicas:
                type: integer
                x-kubernetes-validations: [{rule: "self >= oldSelf", message: "replicas may not decrease"}]
              maxReplicas: {type: integer}
"""


def widget(replicas: int, max_replicas: int) -> str:
    return (
        "apiVersion: cel.example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"
        f"spec:\n  replicas: {replicas}\n  maxReplicas: {max_replicas}\n"
    )


def test_cel_validation_rules(kubectl: Kubectl) -> None:
    """apiextensions-apiserver schema/cel/validation.go: a failed rule is 422 with the rule's message at the node's
    path and the schema type as value; a transition rule (``oldSelf``) is skipped on create and refuses a decrease
    on update; a rule that does not compile makes the CRD invalid (apiextensions validation.go)."""
    kubectl("apply", "-f", "-", stdin=WIDGETS)
    kubectl("wait", "--for", "condition=established", "--timeout=30s", "crd/widgets.cel.example.com")
    out = kubectl("apply", "-f", "-", stdin=widget(3, 2), check=False)
    assert out.returncode != 0
    assert (
        'The Widget "w" is invalid: spec: Invalid value: "object": replicas must be smaller than maxReplicas'
    ) in out.stderr
    kubectl("apply", "-f", "-", stdin=widget(3, 5))
    down = kubectl("patch", "widget", "w", "--type=merge", "-p", '{"spec":{"replicas":2}}', check=False)
    assert 'The Widget "w" is invalid: spec.replicas: Invalid value: "integer": replicas may not decrease' in (
        down.stderr
    )
    assert kubectl.json("get", "widget", "w")["spec"]["replicas"] == 3
    kubectl("patch", "widget", "w", "--type=merge", "-p", '{"spec":{"replicas":4}}')
    broken = WIDGETS.replace("widgets", "gadgets").replace("Widget", "Gadget").replace("widget,", "gadget,")
    broken = broken.replace('"self >= oldSelf"', '"self >= "')
    bad = kubectl("apply", "-f", "-", stdin=broken, check=False)
    assert bad.returncode != 0
    assert (
        'The CustomResourceDefinition "gadgets.cel.example.com" is invalid: spec.versions[0].schema.openAPIV3Schema'
        ".properties[spec].properties[replicas].x-kubernetes-validations[0].rule: Invalid value: "
        'apiextensions.ValidationRule{Rule:"self >= ", Message:"replicas may not decrease"'
    ) in bad.stderr
    assert "compilation failed: ERROR: <input>:1:" in bad.stderr
    assert "gadgets" not in kubectl("get", "crd", "-o", "name").stdout
