"""YAML <-> JSON for the object editor, server-side (the browser has no YAML library and loads none).

``to_json`` parses a YAML stream as kubectl does before sending (safe_load, one object per document); a syntax
error is reported with its 1-based line and column so the editor can point at it. ``to_yaml`` renders objects
as kubectl's ``-o yaml`` does: block style, keys in the object's order.
"""

from __future__ import annotations

from typing import Any

import yaml

from kubeplane.api import yamlio


class YAMLTextError(Exception):
    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def to_json(text: str) -> list[dict[str, Any]]:
    try:
        docs = [d for d in yamlio.load_all(text) if d is not None]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        raise YAMLTextError(f"error converting YAML to JSON: {exc.problem or exc}", line) from None
    except yaml.YAMLError as exc:
        raise YAMLTextError(f"error converting YAML to JSON: {exc}", None) from None
    for doc in docs:
        if not isinstance(doc, dict):
            raise YAMLTextError(f"expected a Kubernetes object, found {type(doc).__name__}", None)
    return docs


def to_yaml(obj: Any) -> str:
    return str(yaml.safe_dump(obj, sort_keys=False, default_flow_style=False, allow_unicode=True))
