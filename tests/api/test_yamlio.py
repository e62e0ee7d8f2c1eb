"""api/yamlio.py: YAML decoded as sigs.k8s.io/yaml over go-yaml v2 decodes it into untyped values."""

from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import yamlio


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # go-yaml v2 decode.go: a !!timestamp decoded into interface{} is set "as a string" (backward compatibility)
        ("d: 2024-01-01", {"d": "2024-01-01"}),
        ("t: 2001-12-14t21:59:43.10-05:00", {"t": "2001-12-14t21:59:43.10-05:00"}),
        ("t: 2001-12-14 21:59:43.10 -5", {"t": "2001-12-14 21:59:43.10 -5"}),
        ("t: !!timestamp 2001-12-14", {"t": "2001-12-14"}),
        # the rest is YAML 1.1 in both: booleans, ints, floats, null
        ("b: yes\nc: off", {"b": True, "c": False}),
        ("n: 12\nf: 2.5\nz: ~", {"n": 12, "f": 2.5, "z": None}),
        ("q: '2024-01-01'", {"q": "2024-01-01"}),
        ("", None),
    ],
    ids=["date", "iso-timestamp", "spaced-timestamp", "explicit-tag", "yaml11-bools", "scalars", "quoted", "empty"],
)
def test_load_keeps_timestamps_as_text(text: str, expected: Any) -> None:
    assert yamlio.load(text) == expected


def test_load_all_reads_every_document_lazily() -> None:
    docs = yamlio.load_all("a: 1\n---\nb: 2024-01-01\n---\n")
    assert [d for d in docs if d is not None] == [{"a": 1}, {"b": "2024-01-01"}]


def test_errors_are_pyyaml_errors() -> None:
    with pytest.raises(yamlio.YAMLError):
        yamlio.load("a: [1,")


def test_the_loader_constructs_no_python_objects() -> None:
    """Still a safe loader: a python/object tag is refused, as go-yaml knows no such tag."""
    with pytest.raises(yamlio.YAMLError):
        yamlio.load("!!python/object/apply:os.system ['true']")
