"""``kubectl explain`` against kubeplane reads as against kube-apiserver: upstream's descriptions and type names.

Upstream pins: kubectl's explain v2 templates (``staging/src/k8s.io/kubectl/pkg/explain/v2/templates/plaintext.tmpl``:
``FIELD: name <Type>``, the description, ``-required-``, ``ENUM:``) read from kube-apiserver's ``/openapi/v3``,
whose descriptions are openapi-gen's rendering of the Go comments of k8s.io/api (core/v1/types.go ``Container``,
``PodSpec.Containers``; apps/v1/types.go ``DeploymentSpec``). The expected texts are the Go comments' text.
Real kubectl (the project's), its own kubeconfig and cache dir, against a TLS test server.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import start_server
from .test_kubectl import KUBECTL, Kubectl


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.is_file(), f"the project's kubectl is missing at {KUBECTL}"
    root: Path = tmp_path_factory.mktemp("explain")
    server = start_server(root / "data", tls=True)
    yield Kubectl(server, root / "cache")
    server.stop()


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_explain_pod_spec_containers(kubectl: Kubectl) -> None:
    out = kubectl("explain", "pod.spec.containers").stdout
    assert "FIELD: containers <[]Container>" in out
    assert "<empty>" not in out
    flat = _flat(out)
    # core/v1 PodSpec.Containers, then the Container type's comment
    assert (
        "List of containers belonging to the pod. Containers cannot currently be added or removed. There must be at "
        "least one container in a Pod. Cannot be updated. A single application container that you want to run "
        "within a pod."
    ) in flat
    assert "name <string> -required- Name of the container specified as a DNS_LABEL." in flat
    assert "imagePullPolicy <string> enum: Always, IfNotPresent, Never Image pull policy." in flat
    assert '- `"Always"` means that kubelet always attempts to pull the latest image.' in flat


def test_explain_deployment_spec_recursive(kubectl: Kubectl) -> None:
    out = kubectl("explain", "deployment.spec", "--recursive").stdout
    assert "FIELD: spec <DeploymentSpec>" in out
    flat = _flat(out)
    assert (
        "Specification of the desired behavior of the Deployment. DeploymentSpec is the specification of the " in flat
    )
    assert re.search(r"^  replicas\t<integer>$", out, re.M)
    assert re.search(r"^  selector\t<LabelSelector> -required-$", out, re.M)
    assert re.search(r"^  template\t<PodTemplateSpec> -required-$", out, re.M)
    assert re.search(r"^      containers\t<\[\]Container> -required-$", out, re.M)


def test_explain_field_with_format_and_enum(kubectl: Kubectl) -> None:
    out = kubectl("explain", "pod.spec.containers.ports.protocol").stdout
    assert "ENUM:\n    SCTP\n    TCP\n    UDP" in out
    assert 'Protocol for port. Must be UDP, TCP, or SCTP. Defaults to "TCP".' in out
