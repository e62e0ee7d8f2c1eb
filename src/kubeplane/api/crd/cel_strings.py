"""cel-go's strings extension (``ext.Strings`` at version 2, the Kubernetes base environment's since 1.29), the
Kubernetes ``lists`` and ``regex`` libraries and cel-go's ``sets`` extension, for cel-python.

Upstream: cel-go ext/strings.go, ext/sets.go; k8s.io/apiserver pkg/cel/library/lists.go, regex.go. Strings are
indexed by code point, as cel-go's by rune. Errors carry upstream's text (``index out of range: 5``,
``invalid substring range. start: 3, end: 1``, ``min called on empty list``). ``strings.quote`` quotes as
cel-go's ``quoteString`` does for printable text; string ``format`` (strings v1) and ``reverse`` (v3, not in
the base environment) are not provided.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from celpy import celtypes
from celpy.evaluation import base_functions

from .cel_types import error, is_package

__all__ = ["FUNCTIONS"]

S = celtypes.StringType
I = celtypes.IntType  # noqa: E741


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("string expected")
    return value


def _char_at(s: Any, index: Any) -> Any:
    text, i = _string(s), int(index)
    if i < 0 or i > len(text):
        return error(f"index out of range: {i}")
    return S(text[i : i + 1])


def _index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, list):
        return I(next((i for i, v in enumerate(target) if v == item), -1))
    text, sub = _string(target), _string(item)
    if offset is None:
        return I(text.find(sub))
    start = int(offset)
    if sub == "":
        return I(start)
    if start < 0 or start >= len(text):
        return error(f"index out of range: {start}")
    return I(text.find(sub, start))


def _last_index_of(target: Any, item: Any, offset: Any = None) -> Any:
    if isinstance(target, list):
        return I(next((i for i in range(len(target) - 1, -1, -1) if target[i] == item), -1))
    text, sub = _string(target), _string(item)
    if offset is None:
        return I(text.rfind(sub))
    end = int(offset)
    if sub == "":
        return I(end)
    if end < 0 or end >= len(text):
        return error(f"index out of range: {end}")
    return I(text.rfind(sub, 0, end + len(sub)))


def _lower_ascii(s: Any) -> Any:
    return S("".join(c.lower() if c.isascii() else c for c in _string(s)))


def _upper_ascii(s: Any) -> Any:
    return S("".join(c.upper() if c.isascii() else c for c in _string(s)))


def _replace(s: Any, old: Any, new: Any, n: Any = None) -> Any:
    count = -1 if n is None else int(n)
    text, before, after = _string(s), _string(old), _string(new)
    if count < 0:
        return S(text.replace(before, after)) if before else S(_go_replace_empty(text, after, -1))
    return S(text.replace(before, after, count)) if before else S(_go_replace_empty(text, after, count))


def _go_replace_empty(text: str, new: str, count: int) -> str:
    """Go's ``strings.Replace`` with an empty old string: ``new`` before each code point and at the end."""
    slots = len(text) + 1 if count < 0 else min(count, len(text) + 1)
    out = []
    for i in range(len(text) + 1):
        if i < slots:
            out.append(new)
        if i < len(text):
            out.append(text[i])
    return "".join(out)


def _split(s: Any, sep: Any, n: Any = None) -> Any:
    text, separator = _string(s), _string(sep)
    limit = -1 if n is None else int(n)
    if limit == 0:
        return celtypes.ListType([])
    if separator == "":
        parts = list(text)
        if limit > 0 and len(parts) > limit:
            parts = [*parts[: limit - 1], "".join(parts[limit - 1 :])]
    else:
        parts = text.split(separator) if limit < 0 else text.split(separator, limit - 1)
    return celtypes.ListType([S(p) for p in parts])


def _substring(s: Any, start: Any, end: Any = None) -> Any:
    """cel-go ``substr``/``substrRange``: a reversed range is reported before either bound."""
    text = _string(s)
    first = int(start)
    if end is None:
        if first < 0 or first > len(text):
            return error(f"index out of range: {first}")
        return S(text[first:])
    last = int(end)
    if first > last:
        return error(f"invalid substring range. start: {first}, end: {last}")
    for bound in (first, last):
        if bound < 0 or bound > len(text):
            return error(f"index out of range: {bound}")
    return S(text[first:last])


_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
_GO_SPACE += "\u2028\u2029\u202f\u205f\u3000"


def _trim(s: Any) -> Any:
    return S(_string(s).strip(_GO_SPACE))


def _join(items: Any, sep: Any = None) -> Any:
    if not isinstance(items, list):
        raise TypeError("join")
    return S(("" if sep is None else _string(sep)).join(_string(i) for i in items))


def _quote(package: Any, s: Any) -> Any:
    if not is_package(package, "strings"):
        raise TypeError("quote")
    escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    escapes |= {"\\": "\\\\", '"': '\\"'}
    return S('"' + "".join(escapes.get(c, c) for c in _string(s)) + '"')


# -- lists (k8s library/lists.go) --------------------------------------------------------------------------------


def _is_sorted(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("isSorted")
    return celtypes.BoolType(all(items[i] <= items[i + 1] for i in range(len(items) - 1)))


def _sum(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("sum")
    total: Any = I(0) if not items else items[0]
    for v in items[1:]:
        total = total + v
    return total


def _min(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("min")
    return min(items) if items else error("min called on empty list")


def _max(items: Any) -> Any:
    if not isinstance(items, list):
        raise TypeError("max")
    return max(items) if items else error("max called on empty list")


# -- regex (k8s library/regex.go) --------------------------------------------------------------------------------


def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _find(s: Any, pattern: Any) -> Any:
    compiled = _compiled(_string(pattern))
    if compiled is None:
        return error(f"Illegal regex: error parsing regexp: {pattern}")
    m = compiled.search(_string(s))
    return S(m.group(0) if m else "")


def _find_all(s: Any, pattern: Any, limit: Any = None) -> Any:
    compiled = _compiled(_string(pattern))
    if compiled is None:
        return error(f"Illegal regex: error parsing regexp: {pattern}")
    n = -1 if limit is None else int(limit)
    if n == 0:
        return celtypes.ListType([])
    found = [S(m.group(0)) for m in compiled.finditer(_string(s))]
    return celtypes.ListType(found if n < 0 else found[:n])


# -- sets (cel-go ext/sets.go) -----------------------------------------------------------------------------------


def _contains(target: Any, *args: Any) -> Any:
    """``sets.contains(list, sublist)``: every element of ``sublist`` is in ``list``; otherwise the base
    string ``contains``."""
    if is_package(target, "sets"):
        items, sub = args
        if not isinstance(items, list) or not isinstance(sub, list):
            raise TypeError("sets.contains")
        return celtypes.BoolType(all(any(_equal(x, y) for y in items) for x in sub))
    return base_functions["contains"](target, *args)


def _equivalent(package: Any, a: Any, b: Any) -> Any:
    if not is_package(package, "sets") or not isinstance(a, list) or not isinstance(b, list):
        raise TypeError("sets.equivalent")
    both = all(any(_equal(x, y) for y in b) for x in a) and all(any(_equal(x, y) for y in a) for x in b)
    return celtypes.BoolType(both)


def _intersects(package: Any, a: Any, b: Any) -> Any:
    if not is_package(package, "sets") or not isinstance(a, list) or not isinstance(b, list):
        raise TypeError("sets.intersects")
    return celtypes.BoolType(any(any(_equal(x, y) for y in b) for x in a))


def _equal(a: Any, b: Any) -> bool:
    """CEL equality across numeric types (sets compare ``1`` and ``1.0`` as equal)."""
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool | celtypes.BoolType):
        return float(a) == float(b)
    try:
        return bool(a == b)
    except TypeError:
        return False


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": _trim,
    "join": _join,
    "quote": _quote,
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _min,
    "max": _max,
    "find": _find,
    "findAll": _find_all,
    "contains": _contains,
    "equivalent": _equivalent,
    "intersects": _intersects,
}
