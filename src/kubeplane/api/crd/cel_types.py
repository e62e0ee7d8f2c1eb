"""Values the Kubernetes CEL libraries add to cel-python, and how their functions report errors.

* :class:`Optional`: cel-go's optional type (``cel.OptionalTypes``, in the Kubernetes base environment since
  1.28): ``optional.none()``, ``optional.of(x)``, ``optional.ofNonZeroValue(x)``, ``.hasValue()``, ``.value()``
  (``optional.none() dereference`` when empty), ``.orValue(x)``. The ``.?field`` and ``[?key]`` syntax is not
  parsed by cel-python.
* :class:`Package`: what a namespaced function's prefix (``optional.``, ``sets.``, ``format.``, ``strings.``,
  ``ip.``, ``cidr.``) evaluates to: cel-python calls ``sets.contains(a, b)`` as ``contains(<sets>, a, b)``, so a
  function checks its first argument to tell the package form from the member form.
* :func:`error`: a runtime error with upstream's exact text (cel-go ``types.NewErr``); the rule's error detail
  is this text followed by `` evaluating rule: <rule>`` (:mod:`.cel`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

__all__ = ["EMPTY", "LibraryError", "Optional", "Package", "error", "is_package", "zero_value"]


class LibraryError(Exception):
    """Marks a :class:`CELEvalError` whose first argument is upstream's message, verbatim."""


def error(message: str) -> CELEvalError:
    """A CEL runtime error carrying ``message`` as cel-go's ``types.NewErr`` would."""
    return CELEvalError(message, LibraryError, ())


@dataclass(frozen=True, slots=True)
class Package:
    """A function package's name bound as a variable (``optional``, ``sets``, ``format`` ...)."""

    name: str


def is_package(value: Any, name: str) -> bool:
    return isinstance(value, Package) and value.name == name


class Optional:
    """cel-go's ``optional_type``: a value or none. Equal when both are empty or both hold equal values."""

    __slots__ = ("_value", "present")

    def __init__(self, value: Any = None, *, present: bool = False) -> None:
        self._value = value
        self.present = present

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Optional):
            return NotImplemented
        return self.present == other.present and (not self.present or bool(self._value == other._value))

    def __hash__(self) -> int:
        return hash(self.present)

    def __repr__(self) -> str:
        return f"optional.of({self._value!r})" if self.present else "optional.none()"

    def get(self) -> Any:
        return self._value


EMPTY = Optional()


def zero_value(value: Any) -> bool:
    """cel-go's ``IsZeroValue`` for ``optional.ofNonZeroValue``: false, 0, "", b"", empty list or map, null."""
    if value is None:
        return True
    if isinstance(value, celtypes.BoolType | bool):
        return not bool(value)
    if isinstance(value, int | float | str | bytes | list | dict):
        return not value
    return False
