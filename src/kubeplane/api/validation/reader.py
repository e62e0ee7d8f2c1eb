"""The typed JSON reader every kind validator of this package reads its object through.

Objects reach validation as plain JSON dicts (decoded and defaulted by the registry), so any member may hold the
wrong JSON type. Upstream's decoder refuses such a body before validation runs; here a wrong type must still
come back as a field error (part of a 422), never as an exception (a 500). :class:`Reader` reads one member
with the type the schema gives it, reports a mismatch once, at that member's path, as a ``TypeInvalid`` error
(``must be of type array``), and hands back Go's zero value, so every rule is written as if the object were well
typed.

Invariants
    * A wrongly typed member reads as absent: ``""``, the caller's default integer, ``[]``, an empty object.
    * Every reader derived from another (:meth:`Reader.child`, :meth:`Reader.items`, ...) shares its ``errs``
      list, so type errors land in reading order among the rule errors the validators append.
    * Maps are visited in sorted key order (Go's JSON order; upstream iterates Go maps at random, ours is
      stable).
    * :func:`finish`, which the core/v1 validators end with, lets a type error supersede every other error at
      or below its path (the ``Required value`` its absence caused), so a bad type yields one error, not several.

Dialects
    The validators were written in two families that report a bad type differently, and both reports are
    pinned by tests and seen by clients, so the difference is data (a :class:`Dialect`), not a second reader:

    * :data:`CORE_V1` (core/v1 kinds and every pod spec, including a workload's template): the bad value is
      shown as its JSON type name (``spec.containers: Invalid value: "string": must be of type array``) and
      integers are not range-checked.
    * :data:`NAMED_GROUPS` (apps, policy, rbac, ... kinds): the bad value is shown as sent
      (``spec.replicas: Invalid value: "3": must be of type integer``) and integers must fit an ``int32``
      unless a read says ``bits=64`` (``must be of type int32``).

Lists of objects are read in one of two ways, chosen by the rule: :meth:`Reader.items` (the objects of a list,
non-objects reported and left out, for rules that count or cross-check elements) or :meth:`Reader.each` (every
element in turn as Go decodes it, ``null`` being the zero value). The core/v1 rules use the first, the
named-group rules the second, and both behaviours are kept (a ``null`` container is a type error, a ``null``
rule of a Role is a rule without verbs).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kubeplane.api import meta
from kubeplane.api.quantity import Quantity, QuantityError
from kubeplane.api.validation import field
from kubeplane.api.validation.field import Error, ErrorList, ErrorType, Path

__all__ = [
    "CORE_V1",
    "NAMED_GROUPS",
    "Dialect",
    "Reader",
    "finish",
    "json_type",
    "parse_quantity",
    "type_error",
]


@dataclass(frozen=True, slots=True)
class Dialect:
    """How a family of validators reports a wrongly typed value (see the module docstring)."""

    shows_json_type: bool
    """A ``TypeInvalid`` error shows the bad value's JSON type name (``"string"``) instead of the value."""
    int_bits: int | None
    """Integer members must fit a signed integer of this many bits unless a read overrides it; None: unchecked."""

    def root(self, obj: object, errs: ErrorList) -> Reader:
        """The object itself, its members at root paths (``spec``, ``provisioner``).

        The registry always passes a JSON object; anything else reads as an empty one (there is no field path
        to report it at).
        """
        return Reader(obj if isinstance(obj, Mapping) else {}, None, errs, self)


CORE_V1: Final = Dialect(shows_json_type=True, int_bits=None)
NAMED_GROUPS: Final = Dialect(shows_json_type=False, int_bits=32)


def json_type(value: object) -> str:
    """The JSON type name of a decoded value, as kube-openapi's ``schemaInfoForType`` and apimachinery's
    validation messages name it (``integer``, ``number``, ``object``...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object" if isinstance(value, Mapping) else type(value).__name__


def type_error(path: Path | None, value: object, expected: str, *, dialect: Dialect) -> Error:
    """``Invalid value: <value or its JSON type>: must be of type <expected>`` (a TypeInvalid error)."""
    shown = json_type(value) if dialect.shows_json_type else value
    return field.type_invalid(path, shown, detail=f"must be of type {expected}")


def parse_quantity(raw: object) -> Quantity | None:
    """``raw`` as a quantity, or None when it is not one (nothing reported)."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return None
    try:
        return Quantity.parse(raw)
    except QuantityError:
        return None


@dataclass(frozen=True, slots=True)
class Reader:
    """A JSON object under validation: its members, its path (None at the object's root), the shared error
    sink and the :class:`Dialect` its type errors are reported in."""

    data: Mapping[str, Any]
    path: Path | None
    errs: ErrorList
    dialect: Dialect

    def at(self, key: str) -> Path:
        """The path of member ``key``."""
        return field.new_path(key) if self.path is None else self.path.child(key)

    def has(self, key: str) -> bool:
        """``key`` is present and not null (Go: a non-nil pointer, slice or map)."""
        return self.data.get(key) is not None

    def raw(self, key: str) -> Any:
        """Member ``key`` unchecked (None when absent)."""
        return self.data.get(key)

    def with_errs(self, errs: ErrorList) -> Reader:
        """The same object reporting into ``errs`` (a separate list, or ``[]`` to read quietly)."""
        return dataclasses.replace(self, errs=errs)

    def report(self, path: Path | None, value: object, expected: str) -> None:
        """Append the type error for ``value`` found at ``path`` where ``expected`` belongs."""
        self.errs.append(type_error(path, value, expected, dialect=self.dialect))

    def _get(self, key: str, types: type | tuple[type, ...], expected: str) -> Any:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) is not (types is bool) or not isinstance(value, types):
            self.report(self.at(key), value, expected)
            return None
        return value

    # --- scalars ---------------------------------------------------------------------------------------------

    def string(self, key: str) -> str:
        """A string member; ``""`` when absent (Go's zero value)."""
        value: str | None = self._get(key, str, "string")
        return value or ""

    def opt_string(self, key: str) -> str | None:
        """A ``*string`` member: None when absent."""
        value: str | None = self._get(key, str, "string")
        return value

    def integer(self, key: str, default: int | None = 0, *, bits: int | None = None) -> int | None:
        """An integer member; ``default`` when absent, None when of the wrong type or size (reported).

        ``bits`` overrides the dialect's width (an ``int64`` field of a named group says ``bits=64``).
        """
        if self.data.get(key) is None:
            return default
        value: int | None = self._get(key, int, "integer")
        width = bits if bits is not None else self.dialect.int_bits
        if value is not None and width is not None and not -(2 ** (width - 1)) <= value < 2 ** (width - 1):
            self.report(self.at(key), value, f"int{width}")
            return None
        return value

    def boolean(self, key: str) -> bool | None:
        """A ``*bool`` member: None when absent."""
        value: bool | None = self._get(key, bool, "boolean")
        return value

    def int_or_string(self, key: str) -> int | str | None:
        """An ``intstr.IntOrString`` member (an integer or a string), None when absent or of another type."""
        value = self.data.get(key)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return self.integer(key, None)
        self.report(self.at(key), value, "integer or string")
        return None

    def time(self, key: str, *, micro: bool = False) -> datetime | None:
        """A ``metav1.Time`` (or ``MicroTime``) member; None (Go's zero time) when absent or unparsable."""
        value = self.opt_string(key)
        if not value:
            return None
        try:
            return meta.parse_micro_time(value) if micro else meta.parse_time(value)
        except ValueError as exc:
            self.errs.append(field.type_invalid(self.at(key), value, detail=str(exc)))
            return None

    def quantity(self, key: str) -> Quantity | None:
        """A ``resource.Quantity`` member, None when absent or unparsable (reported)."""
        return None if self.data.get(key) is None else self._quantity(self.data[key], self.at(key))

    def _quantity(self, raw: object, path: Path) -> Quantity | None:
        if isinstance(raw, bool) or not isinstance(raw, str | int | float):
            self.report(path, raw, "string")
            return None
        try:
            return Quantity.parse(raw)
        except QuantityError as exc:
            # QuantityError reads "invalid quantity '<text>': <reason>"; the reason is upstream's decoder text.
            self.errs.append(field.invalid(path, raw, detail=str(exc).rsplit(": ", 1)[-1]))
            return None

    # --- objects and collections ----------------------------------------------------------------------------

    def mapping(self, key: str) -> Reader | None:
        """A nested object, or None when absent or of the wrong type."""
        value: Mapping[str, Any] | None = self._get(key, Mapping, "object")
        return None if value is None else Reader(value, self.at(key), self.errs, self.dialect)

    def child(self, key: str) -> Reader:
        """A nested object, empty when absent or of the wrong type (so rules see Go's zero value)."""
        sub = self.mapping(key)
        return sub if sub is not None else Reader({}, self.at(key), self.errs, self.dialect)

    def array(self, key: str) -> list[Any]:
        """A list member, empty when absent."""
        value: list[Any] | None = self._get(key, list, "array")
        return value or []

    def items(self, key: str) -> list[Reader]:
        """The objects of a list, read up front: every element that is not an object (null too) is reported and
        left out, so rules that count, index or cross-check elements see only objects."""
        out: list[Reader] = []
        path = self.at(key)
        for i, item in enumerate(self.array(key)):
            if isinstance(item, Mapping):
                out.append(Reader(item, path.index(i), self.errs, self.dialect))
            else:
                self.report(path.index(i), item, "object")
        return out

    def each(self, key: str) -> Iterator[Reader]:
        """Every element of a list in turn, as Go decodes it: null is the zero value (an empty object), any
        other non-object is reported when reached and reads as empty."""
        path = self.at(key)
        for i, item in enumerate(self.array(key)):
            if item is not None and not isinstance(item, Mapping):
                self.report(path.index(i), item, "object")
            data = item if isinstance(item, Mapping) else {}
            yield Reader(data, path.index(i), self.errs, self.dialect)

    def strings(self, key: str) -> list[str]:
        """A list of strings; other elements are reported and left out."""
        out: list[str] = []
        for i, item in enumerate(self.array(key)):
            if isinstance(item, str):
                out.append(item)
            else:
                self.report(self.at(key).index(i), item, "string")
        return out

    def opt_string_map(self, key: str) -> dict[str, str] | None:
        """A ``map[string]string`` in sorted key order, None when absent (a nil map) or of the wrong type;
        entries with a non-string value are reported and left out."""
        value: Mapping[str, Any] | None = self._get(key, Mapping, "object")
        if value is None:
            return None
        out: dict[str, str] = {}
        for k in sorted(value):
            if isinstance(value[k], str):
                out[k] = value[k]
            else:
                self.report(self.at(key).key(k), value[k], "string")
        return out

    def string_map(self, key: str) -> dict[str, str]:
        """As :meth:`opt_string_map`, empty when absent."""
        return self.opt_string_map(key) or {}

    def quantities(self, key: str) -> dict[str, Quantity]:
        """A ``ResourceList``: resource name to quantity, unparsable entries reported and left out."""
        value: Mapping[str, Any] | None = self._get(key, Mapping, "object")
        out: dict[str, Quantity] = {}
        for k in sorted(value or ()):
            q = self._quantity(value[k] if value is not None else None, self.at(key).key(k))
            if q is not None:
                out[k] = q
        return out


def finish(errs: ErrorList) -> ErrorList:
    """Deduplicate, and let a type error supersede every other error at or below its path."""
    typed = {e.field for e in errs if e.type is ErrorType.TYPE_INVALID}
    if not typed:
        return field.dedupe(errs)
    return [e for e in field.dedupe(errs) if e.type is ErrorType.TYPE_INVALID or not _under(e.field, typed)]


def _under(path: str, prefixes: set[str]) -> bool:
    """``path`` is one of ``prefixes`` or a field below one (``a.b`` and ``a[0]`` are below ``a``)."""
    if path in prefixes:
        return True
    return any(ch in ".[" and path[:i] in prefixes for i, ch in enumerate(path))
