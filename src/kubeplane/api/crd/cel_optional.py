"""cel-go's optional library (``cel.OptionalTypes``) for cel-python: the functions, as :mod:`.cel_types`
describes them. Used by ``optionalOldSelf`` rules (``oldSelf`` is ``optional.none()`` on create)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .cel_types import EMPTY, Optional, error, is_package, zero_value

__all__ = ["FUNCTIONS"]


def _none(package: Any) -> Any:
    if not is_package(package, "optional"):
        raise TypeError("none")
    return EMPTY


def _of(package: Any, value: Any) -> Any:
    if not is_package(package, "optional"):
        raise TypeError("of")
    return Optional(value, present=True)


def _of_non_zero_value(package: Any, value: Any) -> Any:
    if not is_package(package, "optional"):
        raise TypeError("ofNonZeroValue")
    return EMPTY if zero_value(value) else Optional(value, present=True)


def _has_value(opt: Optional) -> Any:
    from celpy import celtypes

    if not isinstance(opt, Optional):
        raise TypeError("hasValue")
    return celtypes.BoolType(opt.present)


def _value(opt: Optional) -> Any:
    if not isinstance(opt, Optional):
        raise TypeError("value")
    return opt.get() if opt.present else error("optional.none() dereference")


def _or_value(opt: Optional, other: Any) -> Any:
    if not isinstance(opt, Optional):
        raise TypeError("orValue")
    return opt.get() if opt.present else other


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "none": _none,
    "of": _of,
    "ofNonZeroValue": _of_non_zero_value,
    "hasValue": _has_value,
    "value": _value,
    "orValue": _or_value,
}
