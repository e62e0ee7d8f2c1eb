"""The simple JSONPath subset CRDs use in ``additionalPrinterColumns`` and the scale subresource's paths
(client-go util/jsonpath, keys allowed missing): ``.a.b``, ``.a[0]``, ``.a['k.with.dots']``, ``.a\\.b`` and
filters ``[?(@.type=="Ready")]``. A path it cannot parse finds nothing (upstream refuses it when the CRD is
created for scale paths; columns then print empty)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

__all__ = ["find", "parse", "set_path"]

Step = Callable[[Any], list[Any]]
_FILTER = re.compile(r"""^\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*(?:"([^"]*)"|'([^']*)'|(-?\d+))\)$""")


def _key(name: str) -> Step:
    def step(value: Any) -> list[Any]:
        return [value[name]] if isinstance(value, Mapping) and name in value else []

    return step


def _index(i: int) -> Step:
    def step(value: Any) -> list[Any]:
        if isinstance(value, list) and -len(value) <= i < len(value):
            return [value[i]]
        return []

    return step


def _filter(key: str, wanted: object) -> Step:
    keys = key.split(".")

    def step(value: Any) -> list[Any]:
        out = []
        for item in value if isinstance(value, list) else ():
            cur: Any = item
            for k in keys:
                cur = cur.get(k) if isinstance(cur, Mapping) else None
            if cur == wanted:
                out.append(item)
        return out

    return step


def _all(value: Any) -> list[Any]:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, Mapping):
        return list(value.values())
    return []


@lru_cache(maxsize=512)
def parse(path: str) -> tuple[Step, ...] | None:
    """The steps of ``path`` (with or without ``{}``), or None if it is not in the subset."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[Step] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == ".":
            j = i + 1
            name = []
            while j < len(text) and text[j] not in ".[":
                if text[j] == "\\" and j + 1 < len(text):
                    j += 1
                name.append(text[j])
                j += 1
            if name:
                steps.append(_key("".join(name)))
            i = j
        elif c == "[":
            end = text.find("]", i)
            if end < 0:
                return None
            inner = text[i + 1 : end]
            if inner == "*":
                steps.append(_all)
            elif inner.lstrip("-").isdigit():
                steps.append(_index(int(inner)))
            elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                steps.append(_key(inner[1:-1]))
            elif (m := _FILTER.match(inner)) is not None:
                wanted: object = m.group(2) if m.group(2) is not None else m.group(3)
                if wanted is None:
                    wanted = int(m.group(4))
                steps.append(_filter(m.group(1), wanted))
            else:
                return None
            i = end + 1
        else:
            return None
    return tuple(steps)


def find(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` reaches in ``obj`` (empty when a key is missing)."""
    steps = parse(path)
    if steps is None:
        return []
    values = [obj]
    for step in steps:
        values = [found for value in values for found in step(value)]
    return values


def set_path(obj: dict[str, Any], path: str, value: Any) -> bool:
    """Set a plain ``.a.b.c`` path, creating objects on the way (the scale subresource writing
    ``specReplicasPath``); False if the path is not plain keys or crosses a non-object."""
    parts = path.strip().lstrip(".").split(".")
    if not all(parts):
        return False
    cur: Any = obj
    for part in parts[:-1]:
        nxt = cur.get(part)
        if nxt is None:
            nxt = cur[part] = {}
        if not isinstance(nxt, dict):
            return False
        cur = nxt
    cur[parts[-1]] = value
    return True
