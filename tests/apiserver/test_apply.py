"""Decoding of apply-patch bodies (apiserver/apply.py ``decode_yaml``).

Upstream pinned: handlers/patch.go applyPatcher decodes the body with sigs.k8s.io/yaml (go-yaml, then JSON):
malformed or over-deep YAML is a 400 BadRequest, never a 500. go-yaml refuses nesting past its flow-level limit
("yaml: exceeded max depth of 10000"); a document kubeplane can parse but not store nests past
``jsondepth.MAX_DEPTH`` and gets the JSON scanner's "exceeded max depth" as JSON bodies do.
"""

from __future__ import annotations

import pytest

from kubeplane.api import jsondepth
from kubeplane.apiserver import apply, errors


def _status(raw: bytes) -> errors.APIError:
    with pytest.raises(errors.APIError) as info:
        apply.decode_yaml(raw)
    return info.value


def test_deep_flow_sequence_is_400_not_recursion_error() -> None:
    exc = _status(b"[" * 200_000)
    assert exc.code == 400
    assert exc.message == "error decoding YAML: yaml: exceeded max depth of 10000"


def test_parseable_but_too_deep_document_is_400() -> None:
    depth = jsondepth.MAX_DEPTH + 5
    raw = ("{kind: Pod, x: " + "[" * depth + "]" * depth + "}").encode()
    exc = _status(raw)
    assert exc.code == 400
    assert exc.message == "error decoding YAML: invalid character '[' exceeded max depth"


def test_valid_document_decodes() -> None:
    assert apply.decode_yaml(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n") == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "a"},
    }
