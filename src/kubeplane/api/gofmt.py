"""Go's ``fmt`` ``%v`` / ``%+v`` of decoded JSON values, for messages that quote them as upstream does.

kube-apiserver quotes a strategic merge patch it could not apply as ``fmt.Sprintf("%+v", patchMap)``
(handlers/patch.go), e.g. ``map[spec:map[containers:[map[name:c]] schedulerName:5]]``: maps print with their keys
sorted (fmt sorts map keys since Go 1.12), slices as ``[a b]``, strings bare, nil as ``<nil>``, integers in
decimal and floats in ``%g``'s shortest form (``1.5``, ``1e+08``). ``%+v`` and ``%v`` agree on these types.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

__all__ = ["format_float", "sprint_v"]


def format_float(value: float) -> str:
    """``strconv.FormatFloat(f, 'g', -1, 64)``, which fmt's ``%v`` prints: shortest digits, exponent form when the
    decimal exponent is below -4 or at least 6 (strconv's rule for the shortest precision): ``1e+06``."""
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    exp = len(text) + exponent - 1  # the decimal exponent of the first digit
    prefix = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exponent >= 0:
        return prefix + text + "0" * exponent
    point = len(text) + exponent
    if point > 0:
        return f"{prefix}{text[:point]}.{text[point:]}"
    return f"{prefix}0.{'0' * -point}{text}"


def sprint_v(value: Any) -> str:
    """``fmt.Sprintf("%+v", value)`` of a value decoded from JSON (dicts, lists, strings, numbers, bools, None).

    Iterative (an explicit stack), so a deeply nested patch cannot exhaust Python's recursion limit."""
    out: list[str] = []
    stack: list[Any] = [value]
    closing = object()
    while stack:
        item = stack.pop()
        if isinstance(item, tuple) and item and item[0] is closing:
            out.append(item[1])
            continue
        if isinstance(item, dict):
            out.append("map[")
            parts: list[Any] = []
            for i, key in enumerate(sorted(item)):
                parts.append((closing, (" " if i else "") + f"{key}:"))
                parts.append(item[key])
            stack.append((closing, "]"))
            stack.extend(reversed(parts))
        elif isinstance(item, list):
            out.append("[")
            parts = []
            for i, element in enumerate(item):
                if i:
                    parts.append((closing, " "))
                parts.append(element)
            stack.append((closing, "]"))
            stack.extend(reversed(parts))
        elif item is None:
            out.append("<nil>")
        elif isinstance(item, bool):
            out.append("true" if item else "false")
        elif isinstance(item, float):
            out.append(format_float(item))
        else:
            out.append(str(item))
    return "".join(out)
