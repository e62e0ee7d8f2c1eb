"""Real kubectl v1.37 against a kubeplane apiserver for resource.k8s.io/v1: the issue's acceptance objects
(ResourceSlices for node01 with two "A100" devices and node02 with one "T4", a DeviceClass, a
ResourceClaimTemplate selecting model == "A100") created from YAML, ``kubectl get`` columns, defaults, and an
invalid CEL selector refused with upstream's message.

Pins: pkg/printers/internalversion/printers.go (deviceClass/resourceClaim/resourceClaimTemplate/resourceSlice
column definitions, printResourceClaim/resourceClaimState, printResourceSlice), pkg/apis/resource/v1/defaults.go
(SetDefaults_ExactDeviceRequest), pkg/apis/resource/validation/validation.go (validateCELExpression,
convertCELErrorToValidationError, validateResourceSliceSpec's exactly-one node fields).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .conftest import start_server
from .test_kubectl import KUBECTL, Kubectl

SELECTOR = 'device.attributes["gpu.example.com"].model == "A100"'


def _slice(node: str, models: list[str]) -> str:
    devices = "".join(
        f"""
  - name: gpu-{i}
    attributes:
      model: {{string: {model}}}
      index: {{int: {i}}}
    capacity:
      memory: {{value: 80Gi}}"""
        for i, model in enumerate(models)
    )
    return f"""
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: {node}-gpu.example.com
spec:
  driver: gpu.example.com
  nodeName: {node}
  pool:
    name: {node}
    generation: 1
    resourceSliceCount: 1
  devices:{devices}
"""


OBJECTS = (
    _slice("node01", ["A100", "A100"])
    + "---"
    + _slice("node02", ["T4"])
    + """---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: a100
  namespace: default
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
          selectors:
          - cel:
              expression: 'device.attributes["gpu.example.com"].model == "A100"'
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim-1
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
"""
)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    root = tmp_path_factory.mktemp("kubectl-dra")
    server = start_server(root / "data", tls=True)
    k = Kubectl(server, root / "cache")
    k("apply", "-f", "-", stdin=OBJECTS)
    yield k
    server.stop()


def _table(k: Kubectl, *args: str) -> list[list[str]]:
    return [line.split() for line in k("get", *args).stdout.splitlines()]


def test_get_columns_of_every_dra_kind(kubectl: Kubectl) -> None:
    slices = _table(kubectl, "resourceslices")
    assert slices[0] == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert [row[:4] for row in slices[1:]] == [
        ["node01-gpu.example.com", "node01", "gpu.example.com", "node01"],
        ["node02-gpu.example.com", "node02", "gpu.example.com", "node02"],
    ]
    classes = _table(kubectl, "deviceclasses")
    assert classes[0] == ["NAME", "AGE"]
    assert classes[1][0] == "gpu.example.com"
    templates = _table(kubectl, "resourceclaimtemplates")
    assert templates[0] == ["NAME", "AGE"]
    assert templates[1][0] == "a100"
    claims = _table(kubectl, "resourceclaims")
    assert claims[0] == ["NAME", "STATE", "AGE"]
    assert claims[1][:2] == ["claim-1", "pending"]


def test_request_defaults_and_stored_selector(kubectl: Kubectl) -> None:
    """SetDefaults_ExactDeviceRequest: allocationMode ExactCount, count 1; the selector is stored as sent."""
    template = kubectl.json("get", "resourceclaimtemplate", "a100")
    exactly = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert (exactly["allocationMode"], exactly["count"]) == ("ExactCount", 1)
    assert exactly["selectors"] == [{"cel": {"expression": SELECTOR}}]
    devices = kubectl.json("get", "resourceslice", "node01-gpu.example.com")["spec"]["devices"]
    assert [d["attributes"]["model"] for d in devices] == [{"string": "A100"}, {"string": "A100"}]


def test_invalid_cel_selector_is_refused_with_upstreams_message(kubectl: Kubectl) -> None:
    """convertCELErrorToValidationError: Invalid value with cel-go's ``compilation failed`` detail."""
    bad = (
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: bad.example.com}\n"
        "spec:\n  selectors:\n  - cel: {expression: 'device.attributes[\"gpu.example.com\"].model == A100'}\n"
    )
    out = kubectl("create", "-f", "-", stdin=bad, check=False)
    assert out.returncode == 1
    assert (
        'The DeviceClass "bad.example.com" is invalid: spec.selectors[0].cel.expression: Invalid value: '
        '"device.attributes[\\"gpu.example.com\\"].model == A100": compilation failed: ERROR: <input>:1:47: '
        "undeclared reference to 'A100' (in container '')"
    ) in out.stderr
    assert kubectl("get", "deviceclass", "bad.example.com", check=False).returncode == 1


def test_claim_spec_is_immutable_and_slice_needs_one_node_field(kubectl: Kubectl) -> None:
    out = kubectl(
        "patch", "resourceclaim", "claim-1", "--type=json",
        "-p", '[{"op": "replace", "path": "/spec/devices/requests/0/name", "value": "other"}]', check=False,
    )  # fmt: skip
    assert out.returncode == 1
    assert 'The ResourceClaim "claim-1" is invalid: spec: Invalid value: ' in out.stderr
    assert "field is immutable" in out.stderr
    bad_slice = _slice("node03", ["T4"]).replace("  nodeName: node03\n", "")
    out = kubectl("create", "-f", "-", stdin=bad_slice, check=False)
    assert (
        "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` "
        "is required"
    ) in out.stderr
