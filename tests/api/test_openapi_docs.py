"""Upstream descriptions, formats, defaults and enums in the /openapi/v3 documents.

Upstream pins: kube-openapi ``pkg/generators/openapi.go`` (``generateDescription``: ``---`` ends the text, ``+``
markers and ``TODO`` lines dropped, paragraphs kept, indented lines on their own line; ``mustEnforceDefault``;
``defaultFromComments`` with ``ref(...)``), ``pkg/generators/enum.go`` (``Possible enum values:``, sorted lines, the
constant's name dropped), ``pkg/common/common.go`` (formats), and the texts of k8s.io/api's Go comments.
The generator is tested on a fixture (no mirror needed); the committed file's content on known upstream texts; and
the file against the generator's output when the k8s.io mirrors are present at the recorded commits.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from kubeplane.api import openapi, openapi_docs
from kubeplane.api.resources import default_table
from tests.tools.loading import load_tool

ROOT = Path(__file__).resolve().parents[2]
MIRRORS = (Path("/work/.mirror/kubernetes+api/repo"), Path("/work/.mirror/kubernetes+apimachinery/repo"))


def _tool() -> ModuleType:
    sys.path.insert(0, str(ROOT / "tools"))
    return load_tool("gen_openapi_docs")


GEN = _tool()

FIXTURE = """package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Widget is a thing.
// It has two lines.
//
// A second paragraph:
//	indented example
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// ---
// Hidden after the trailer.
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Size of the widget in bytes.
	// TODO: make it a quantity
	Size int64 `json:"size"`
	// Count is optional.
	Count *int32 `json:"count,omitempty"`
	// Policy to apply.
	// +default=ref(PolicyLoose)
	Policy Policy `json:"policy,omitempty"`
	// Names, atomically.
	// +listType=atomic
	Names []string `json:"names,omitempty"`
	// Parts of it.
	Parts []Part `json:"parts,omitempty"`
	Blob []byte `json:"blob,omitempty"`
}

// Part is a part.
type Part struct {
	// Name of the part.
	Name string `json:"name"`
}

// Policy is how strict a widget is.
// +enum
type Policy string

const (
	// PolicyStrict means every rule
	// applies.
	PolicyStrict Policy = "Strict"
	// PolicyLoose means few rules apply.
	PolicyLoose Policy = "Loose"
)
"""


def _fixture_docs() -> tuple[Any, Any]:
    parsed = GEN.Parsed()
    GEN.parse_source(FIXTURE, "k8s.io/api/widgets/v1", parsed)
    return parsed, GEN.Describer(parsed)


def test_generator_type_description_follows_generate_description() -> None:
    parsed, _ = _fixture_docs()
    text = GEN.generate_description(parsed.type_docs["k8s.io/api/widgets/v1.Widget"])
    assert text == "Widget is a thing. It has two lines.\n\nA second paragraph:\n\tindented example"


def test_generator_properties_description_format_default_enum() -> None:
    _, describer = _fixture_docs()
    members = {m.key: m for m in describer.flat_members("k8s.io/api/widgets/v1.Widget")}
    size = describer.property(members["size"])
    assert size == {"description": "Size of the widget in bytes.", "format": "int64", "default": 0}
    assert describer.property(members["count"]) == {"description": "Count is optional.", "format": "int32"}
    policy = describer.property(members["policy"])
    assert policy["default"] == "Loose"  # +default=ref(PolicyLoose)
    assert policy["enum"] == ["Loose", "Strict"]
    assert policy["description"] == (
        "Policy to apply.\n\nPossible enum values:\n"
        ' - `"Loose"` means few rules apply.\n'
        ' - `"Strict"` means every rule applies.'
    )
    assert describer.property(members["names"]) == {"description": "Names, atomically.", "items_default": ""}
    parts = describer.property(members["parts"])
    assert parts == {"description": "Parts of it.", "items_default": {}, "ref": "k8s.io/api/widgets/v1.Part"}
    assert describer.property(members["blob"]) == {"format": "byte"}


def test_committed_docs_carry_known_upstream_texts() -> None:
    types = openapi_docs.load_docs()["types"]
    container = types["k8s.io/api/core/v1.Container"]
    assert container["description"] == "A single application container that you want to run within a pod."
    assert container["fields"]["name"] == {
        "default": "",
        "description": "Name of the container specified as a DNS_LABEL. Each container in a pod must have a unique "
        "name (DNS_LABEL). Cannot be updated.",
    }
    replicas = types["k8s.io/api/apps/v1.DeploymentSpec"]["fields"]["replicas"]
    assert replicas["format"] == "int32"
    assert replicas["description"].startswith("Number of desired pods. This is a pointer to distinguish")
    assert types["k8s.io/api/core/v1.PodSpec"]["fields"]["terminationGracePeriodSeconds"]["format"] == "int64"
    assert types["k8s.io/api/core/v1.ContainerPort"]["fields"]["protocol"]["default"] == "TCP"


def test_served_documents_use_upstream_names_descriptions_and_formats() -> None:
    doc = openapi.openapi_group_version(default_table(), "", "v1")
    schemas = doc["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["description"].startswith("Pod is a collection of containers that can run on a host.")
    assert pod["properties"]["spec"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    assert pod["properties"]["spec"]["default"] == {}
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["items"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}],
        "default": {},
    }
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    port = schemas["io.k8s.api.core.v1.ContainerPort"]["properties"]
    assert port["containerPort"] == {
        "type": "integer",
        "format": "int32",
        "default": 0,
        "description": "Number of port to expose on the pod's IP address. This must be a valid port number, "
        "0 < x < 65536.",
    }
    assert port["protocol"]["enum"] == ["SCTP", "TCP", "UDP"]
    assert schemas["io.k8s.api.core.v1.Secret"]["properties"]["data"]["additionalProperties"]["format"] == "byte"
    names = [n for gv in [("", "v1"), ("apps", "v1")] for n in openapi.openapi_group_version(default_table(), *gv)]
    assert names  # documents build for every group version


def _mirror_commits() -> list[str] | None:
    if not all(m.is_dir() for m in MIRRORS):
        return None
    return [
        subprocess.run(
            ["git", "-C", str(m), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        for m in MIRRORS
    ]


def test_committed_file_is_the_generators_output_at_the_recorded_commits() -> None:
    """tools/gen_openapi_docs.py --check; needs the k8s.io mirrors at the commits the file records."""
    commits = _mirror_commits()
    tag = openapi_docs.load_docs()["tag"]
    recorded = [part.split("@", 1)[1] for part in tag.split()]
    if commits != recorded:
        pytest.skip(f"k8s.io mirrors absent or not at {recorded} (content is tested above)")
    fresh = GEN.build(MIRRORS[0], MIRRORS[1], "HEAD")
    assert fresh == openapi_docs.load_docs()
