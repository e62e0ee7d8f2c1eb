"""Claim constraints (upstream ``matchAttributeConstraint`` / ``distinctAttributeConstraint``). Constraints are
monotonic: once a device is refused, adding more cannot help, so the search backtracks at once.

An attribute is looked up by its fully qualified name, or by its short name when the domain is the device's driver
(upstream ``lookupAttribute``). Values compare by type (string, int, bool, version); a missing attribute fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Constraint", "DistinctAttribute", "MatchAttribute", "lookup_attribute"]

_KINDS = ("string", "int", "bool", "version")


def lookup_attribute(device: Mapping[str, Any], driver: str, name: str) -> Mapping[str, Any] | None:
    attributes = device.get("attributes") or {}
    if name in attributes:
        return attributes[name]  # type: ignore[no-any-return]
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    value = attributes.get(ident)
    return value if isinstance(value, Mapping) else None


def _value(attr: Mapping[str, Any]) -> tuple[str, Any] | None:
    for kind in _KINDS:
        if attr.get(kind) is not None:
            return kind, attr[kind]
    return None


@dataclass(slots=True)
class _Base:
    requests: frozenset[str]
    attribute: str

    def applies(self, request: str, sub_request: str) -> bool:
        if not self.requests:
            return True
        if not sub_request:
            return request in self.requests
        return request in self.requests or f"{request}/{sub_request}" in self.requests


@dataclass(slots=True)
class MatchAttribute(_Base):
    value: tuple[str, Any] | None = None
    count: int = 0

    def add(self, request: str, sub_request: str, device: Mapping[str, Any], driver: str) -> bool:
        if not self.applies(request, sub_request):
            return True
        attr = lookup_attribute(device, driver, self.attribute)
        if attr is None:
            return False
        value = _value(attr)
        if self.count == 0:
            self.value, self.count = value, 1
            return True
        if value is None or value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, sub_request: str, device: Mapping[str, Any], driver: str) -> None:
        if self.applies(request, sub_request):
            self.count -= 1


@dataclass(slots=True)
class DistinctAttribute(_Base):
    seen: list[tuple[str, Any]] = field(default_factory=list)

    def add(self, request: str, sub_request: str, device: Mapping[str, Any], driver: str) -> bool:
        if not self.applies(request, sub_request):
            return True
        attr = lookup_attribute(device, driver, self.attribute)
        value = _value(attr) if attr is not None else None
        if value is None or value in self.seen:
            return False
        self.seen.append(value)
        return True

    def remove(self, request: str, sub_request: str, device: Mapping[str, Any], driver: str) -> None:
        if not self.applies(request, sub_request):
            return
        attr = lookup_attribute(device, driver, self.attribute)
        value = _value(attr) if attr is not None else None
        if value in self.seen:
            self.seen.remove(value)


Constraint = MatchAttribute | DistinctAttribute
