"""The ``device`` variable of a DRA CEL selector, as upstream's structured/cel environment declares it.

Upstream: staging/src/k8s.io/dynamic-resource-allocation/cel/compile.go (``kubernetes.DRADevice`` with
``driver``, ``attributes``, ``capacity`` and, with DRAConsumableCapacity (beta, on in v1.37),
``allowMultipleAllocations``; ``domainToAttributes``/``nameToAttributes``/``domainToCapacity``; ``parseQualifiedName``;
``getAttributeValue``). Invariants:

* an attribute or capacity name without a ``/`` belongs to the device's driver domain, so
  ``device.attributes["gpu.example.com"].model`` reaches a slice's ``model`` attribute when the driver is
  ``gpu.example.com``;
* looking up a domain the device has no attribute in gives an empty map (never ``no such key``): ``"x" in
  device.attributes`` is false, ``device.attributes["x"].y`` fails with ``no such key: y``;
* attribute values are CEL ``bool``, ``int``, ``string`` or a semver (``version``), capacities quantities;
* a device's CEL value is built once per :class:`DeviceView` (cached on it), and each selector's verdict on it is
  memoised there too: one device is matched against many selectors, and the same selector again and again (every
  pod, every scheduling cycle), while cel-python interprets a selector in about 250 us.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from celpy import celtypes

from kubeplane.api.crd.cel_quantity import Quantity, parse_quantity
from kubeplane.api.crd.cel_semver import Semver, parse_semver

__all__ = ["DeviceAttributeError", "DeviceView", "attribute_value", "split_qualified_name"]

AttributeValue = bool | int | str | Semver | Sequence[Any] | Mapping[str, Any]

_SCALARS = (("int", int), ("bool", bool), ("string", str), ("version", str))
_LISTS = (("ints", int), ("bools", bool), ("strings", str), ("versions", str))


class DeviceAttributeError(ValueError):
    """An attribute whose value cannot be given to CEL (upstream ``getAttributeValue``'s errors)."""


class DefaultingMap(celtypes.MapType):
    """``newStringInterfaceMapWithDefault``: a domain the device lacks maps to an empty map."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """``parseQualifiedName``: (domain, id); a name without ``/`` is in ``default_domain``."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (default_domain, name)


def _scalar(kind: str, value: Any) -> Any:
    if kind == "int":
        return celtypes.IntType(int(value))
    if kind == "bool":
        return celtypes.BoolType(bool(value))
    if kind == "string":
        return celtypes.StringType(str(value))
    try:
        return parse_semver(str(value))
    except ValueError as exc:
        raise DeviceAttributeError(f"parse semantic version: {exc}") from exc


def attribute_value(value: AttributeValue) -> Any:
    """An attribute as CEL sees it. ``value`` is the API's DeviceAttribute (``{"int": 1}``, ``{"version":
    "1.0.0"}``, ``{"strings": [...]}``) or a plain Python bool, int, str (a string), Semver, or list of them."""
    if isinstance(value, Mapping):
        for key, _ in _SCALARS:
            if value.get(key) is not None:
                return _scalar(key, value[key])
        for key, _ in _LISTS:
            if value.get(key) is not None:
                return celtypes.ListType([_scalar(key[:-1], v) for v in value[key]])
        raise DeviceAttributeError("unsupported attribute value")
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    if isinstance(value, Semver):
        return value
    if isinstance(value, Sequence):
        return celtypes.ListType([attribute_value(v) for v in value])
    raise DeviceAttributeError("unsupported attribute value")


def _quantity(value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, Mapping):  # the API's DeviceCapacity
        value = value.get("value")
    return parse_quantity(str(value))


@dataclass(frozen=True)
class DeviceView:
    """One device as a selector sees it.

    ``attributes`` and ``capacity`` are keyed by qualified name (``domain/name``, or a bare name in the driver's
    domain); attribute values as :func:`attribute_value` takes them, capacities as quantity strings (or the
    API's ``{"value": "40Gi"}``)."""

    driver: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    capacity: Mapping[str, Any] = field(default_factory=dict)
    allow_multiple_allocations: bool = False
    _cel: list[Any] = field(default_factory=list, init=False, repr=False, compare=False, hash=False)
    memo: dict[tuple[str, int], bool | str] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False
    )
    """Selector results on this device (by expression and cost limit; a str is a runtime error's message): a
    view is immutable, so a selector's verdict on it never changes."""

    @classmethod
    def from_api(cls, driver: str, device: Mapping[str, Any]) -> DeviceView:
        """From a ResourceSlice's ``spec.devices[]`` item (its ``attributes``, ``capacity``,
        ``allowMultipleAllocations``) and the slice's ``spec.driver``."""
        return cls(
            driver=driver,
            attributes=dict(device.get("attributes") or {}),
            capacity=dict(device.get("capacity") or {}),
            allow_multiple_allocations=bool(device.get("allowMultipleAllocations")),
        )

    def cel_value(self) -> celtypes.MapType:
        """The ``device`` variable (built once; raises :class:`DeviceAttributeError` for an unusable attribute)."""
        if not self._cel:
            self._cel.append(self._build())
        value: celtypes.MapType = self._cel[0]
        return value

    def _build(self) -> celtypes.MapType:
        attributes: dict[Any, dict[Any, Any]] = {}
        for name, attr in self.attributes.items():
            try:
                value = attribute_value(attr)
            except DeviceAttributeError as exc:
                raise DeviceAttributeError(f"attribute {name}: {exc}") from exc
            domain, ident = split_qualified_name(str(name), self.driver)
            attributes.setdefault(celtypes.StringType(domain), {})[celtypes.StringType(ident)] = value
        capacity: dict[Any, dict[Any, Any]] = {}
        for name, cap in self.capacity.items():
            domain, ident = split_qualified_name(str(name), self.driver)
            capacity.setdefault(celtypes.StringType(domain), {})[celtypes.StringType(ident)] = _quantity(cap)
        return celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(self.driver),
                celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(self.allow_multiple_allocations),
                celtypes.StringType("attributes"): DefaultingMap(
                    {k: celtypes.MapType(v) for k, v in attributes.items()}
                ),
                celtypes.StringType("capacity"): DefaultingMap({k: celtypes.MapType(v) for k, v in capacity.items()}),
            }
        )
