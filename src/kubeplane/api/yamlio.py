"""YAML documents decoded as Kubernetes decodes them: sigs.k8s.io/yaml over go-yaml v2, into untyped values.

Every YAML input that stands for a Kubernetes object or a component's configuration (server-side apply bodies,
manifests, kubeconfigs, KubeSchedulerConfiguration, KubeletConfiguration, DeschedulerPolicy, scenario files) is
read through :func:`load` / :func:`load_all`, so one rule holds everywhere:

* A plain scalar that looks like a timestamp (``2024-01-01``, ``2001-12-14t21:59:43.10-05:00``) stays the
  string it was written as. go-yaml v2 resolves it as ``!!timestamp`` but, decoding into ``interface{}``, keeps
  the text "for backward compatibility reasons" (decode.go), and sigs.k8s.io/yaml then turns it into a JSON
  string: a label ``day: 2024-01-01`` is the label value "2024-01-01". PyYAML's safe loader would make a
  ``datetime.date`` of it, which no JSON encoder, validator or merge of ours expects. An explicit ``!!timestamp``
  tag is kept as its text too, as go-yaml does for that tag.
* Everything else is the safe loader's YAML 1.1 (``yes``/``no`` booleans and octal ints are YAML 1.1 in go-yaml
  v2 as well).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import yaml

__all__ = ["YAMLError", "load", "load_all"]

YAMLError = yaml.YAMLError
MarkedYAMLError = yaml.MarkedYAMLError

_TIMESTAMP: Final = "tag:yaml.org,2002:timestamp"


class _Loader(yaml.SafeLoader):
    """The safe loader with timestamps kept as their text (the module docstring says why)."""


def _timestamp_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


_Loader.add_constructor(_TIMESTAMP, _timestamp_text)


def load(text: str | bytes) -> Any:
    """One YAML document as untyped values (None for an empty one); raises :class:`YAMLError`."""
    return yaml.load(text, Loader=_Loader)


def load_all(text: str | bytes) -> Iterator[Any]:
    """Every document of a YAML stream, lazily; raises :class:`YAMLError` while iterating."""
    return yaml.load_all(text, Loader=_Loader)
