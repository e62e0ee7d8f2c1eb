"""The functions and packages of the Kubernetes CEL environment for CRD rules, as cel-python sees them.

Upstream: k8s.io/apiserver pkg/cel/environment/base.go at the CRD's compatibility version (v1.37 serves rules
with the environment of its minimum compatibility version, 1.36): the URLs, Regex and Lists libraries,
``CrossTypeNumericComparisons``, ``OptionalTypes``, Quantity, strings v2, sets, IP and CIDR, Format and semver
v1. One function name serves every library declaring it (``indexOf`` on strings and lists, ``compareTo`` on
quantities and semvers, ``contains`` on strings and ``sets.``); each implementation tells its overload by its
arguments and raises ``TypeError`` (cel-python's ``no such overload``) for any other. Two-variable
comprehensions are evaluated by :mod:`.cel_comprehensions`. Not provided: the Authz library (no authorizer in
CRD rules), the image library, the ``.?``/``[?]`` optional syntax, string ``format``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError, base_functions

from . import cel_format, cel_net, cel_optional, cel_quantity, cel_semver, cel_strings, cel_url
from .cel_types import Package

__all__ = ["FUNCTIONS", "PACKAGES"]


def _numeric(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool | celtypes.BoolType)


def _cross(op: str) -> Callable[[Any, Any], Any]:
    """``CrossTypeNumericComparisons`` and heterogeneous equality: int, uint and double compare by value."""
    base = base_functions[op]

    def compare(a: Any, b: Any) -> Any:
        if isinstance(a, CELEvalError):
            return a
        if isinstance(b, CELEvalError):
            return b
        if _numeric(a) and _numeric(b) and type(a) is not type(b):
            floats = isinstance(a, float) or isinstance(b, float)
            x, y = (float(a), float(b)) if floats else (int(a), int(b))
            result = {
                "_<_": x < y,
                "_<=_": x <= y,
                "_>_": x > y,
                "_>=_": x >= y,
                "_==_": x == y,
                "_!=_": x != y,
            }[op]
            return celtypes.BoolType(result)
        if op in ("_==_", "_!=_") and type(a) is not type(b) and not _numeric(a) and not _numeric(b):
            same = _same_kind(a, b)
            if not same:
                return celtypes.BoolType(op == "_!=_")
        return base(a, b)

    return compare


def _same_kind(a: Any, b: Any) -> bool:
    """Whether cel-python's own equality applies; values of different CEL types are simply unequal."""
    if a is None or b is None:
        return a is None and b is None
    kinds = (str, bytes, list, dict, celtypes.BoolType)
    return any(isinstance(a, k) and isinstance(b, k) for k in kinds) or type(a) is type(b)


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    **cel_strings.FUNCTIONS,
    **cel_optional.FUNCTIONS,
    **cel_quantity.FUNCTIONS,
    **cel_semver.FUNCTIONS,
    **cel_net.FUNCTIONS,
    **cel_url.FUNCTIONS,
    **cel_format.FUNCTIONS,
    **{op: _cross(op) for op in ("_<_", "_<=_", "_>_", "_>=_", "_==_", "_!=_")},
}

PACKAGES: Mapping[str, Package] = {name: Package(name) for name in ("optional", "sets", "format", "strings", "ip")}
"""Names bound as variables so that ``sets.contains(...)`` reaches ``contains(<sets>, ...)``."""
