"""The node config's ``devices:`` key: the DRA devices a node group's simulated drivers publish.

A node group may list device groups; each becomes ``count`` devices of one driver on every node of the group::

    devices:
    - driver: gpu.example.com           # required: the DRA driver (a DNS subdomain)
      count: 2                          # default 1
      namePattern: "gpu-{index}"        # default "<first label of driver>-{index}"; also {node}
      startIndex: 0                     # default 0
      attributes:                       # plain values are typed by YAML: string, int, bool ...
        model: A100
        cudaCores: 6912
        mig: false
        driverVersion: {version: 1.2.3} # ... or explicitly {string|int|bool|version: value}
        uuid: "GPU-{node}-{index}"      # strings may use {node}, {name} and {index}
      capacity: {memory: 40Gi}          # quantities, or {value, requestPolicy} (see .sharing)
      allowMultipleAllocations: false   # true: each device may be shared by several claims (by capacity)
      consumesCounters:                 # partitionable devices: counters each device takes (at most 2 sets)
      - counterSet: gpu-0-counters
        counters: {memory: 20Gi}
      sharedCounters:                   # counter sets of this driver's pool on each node (at most 8)
      - name: gpu-0-counters
        counters: {memory: 40Gi}

Every device also gets the int attribute ``index`` (its index; unless ``attributes`` sets it). Names of attributes
and capacities are the driver's own (``model``) or qualified (``example.com/model``), as in a ResourceSlice.

Invariants: device names are unique per (node, driver) and valid DNS labels; every quantity parses; a version
parses as semver; counter set and counter names are DNS labels, a node's counter sets of one driver are unique
and every ``consumesCounters`` names one of them and counters it declares (upstream's API validation cannot check
this across slices; the allocator would silently never allocate such a device); errors are one line naming the
group (:class:`DeviceConfigError`, re-raised by the node config as its own error).
Parsing is pure: the slices are built from these specs by :mod:`.slices`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from kubeplane.api.quantity import QuantityError, parse_quantity

from .sharing import SharingError, parse_capacity

__all__ = ["Counters", "DeviceConfigError", "DeviceGroupSpec", "DeviceSpec", "counters_to_api", "parse_devices"]

_DNS1123_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SEMVER: Final = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
_GROUP_KEYS: Final = frozenset(
    {
        "driver",
        "count",
        "namePattern",
        "startIndex",
        "attributes",
        "capacity",
        "sharedCounters",
        "consumesCounters",
        "allowMultipleAllocations",
    }
)
MAX_COUNTER_SETS: Final = 8
"""Upstream ResourceSliceMaxCounterSets: counter sets per slice (kubeplane publishes them in one slice)."""
MAX_CONSUMPTIONS: Final = 2
"""Upstream ResourceSliceMaxDeviceCounterConsumptions: ``consumesCounters`` entries per device."""
_TYPES: Final = ("string", "int", "bool", "version")


class DeviceConfigError(ValueError):
    """A ``devices`` entry that cannot be used; the message is one line."""


Counters = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
"""Named counter lists, in config order: ((set name, ((counter, quantity), ...)), ...)."""


def counters_to_api(counters: Counters, name_key: str) -> list[dict[str, Any]]:
    """API ``CounterSet`` (``name_key`` "name") or ``DeviceCounterConsumption`` ("counterSet") lists."""
    return [{name_key: name, "counters": {k: {"value": v} for k, v in sorted(c)}} for name, c in counters]


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """One device as a ResourceSlice lists it: ``attributes`` are API ``DeviceAttribute`` values (``{"int": 0}``)
    and ``capacity`` API ``DeviceCapacity`` values (``{"value": "40Gi"}``)."""

    name: str
    attributes: Mapping[str, Mapping[str, Any]]
    capacity: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    consumes_counters: Counters = ()
    allow_multiple_allocations: bool = False

    def to_api(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.attributes:
            out["attributes"] = {k: dict(v) for k, v in sorted(self.attributes.items())}
        if self.capacity:
            out["capacity"] = {k: dict(v) for k, v in sorted(self.capacity.items())}
        if self.allow_multiple_allocations:
            out["allowMultipleAllocations"] = True
        if self.consumes_counters:
            out["consumesCounters"] = counters_to_api(self.consumes_counters, "counterSet")
        return out


@dataclass(frozen=True, slots=True)
class DeviceGroupSpec:
    """One ``devices`` entry, still per group: :meth:`devices_for` expands it for one node."""

    driver: str
    count: int
    name_pattern: str
    start_index: int
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Mapping[str, Any]]
    """API ``DeviceCapacity`` values: ``{"value": "40Gi"}``, with ``requestPolicy`` for shared devices."""
    shared_counters: Counters = ()
    consumes_counters: Counters = ()
    allow_multiple_allocations: bool = False

    def devices_for(self, node: str) -> list[DeviceSpec]:
        out = []
        for index in range(self.start_index, self.start_index + self.count):
            name = self.name_pattern.format(index=index, node=node)
            attributes = {"index": {"int": index}}
            for key, value in self.attributes.items():
                attributes[key] = _typed(value, node=node, name=name, index=index)
            capacity = {k: dict(v) for k, v in self.capacity.items()}
            out.append(DeviceSpec(name, attributes, capacity, self.consumes_counters, self.allow_multiple_allocations))
        return out


def _typed(value: Any, *, node: str, name: str, index: int) -> dict[str, Any]:
    """An API DeviceAttribute from a checked config value (see :func:`_check_attribute`)."""
    if isinstance(value, Mapping):
        [(kind, inner)] = value.items()
        if kind == "string":
            return {"string": str(inner).format(node=node, name=name, index=index)}
        return {kind: inner}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value).format(node=node, name=name, index=index)}


def _check_attribute(group: str, key: str, value: Any) -> Any:
    if isinstance(value, Mapping):
        if len(value) != 1 or next(iter(value)) not in _TYPES:
            raise DeviceConfigError(
                f"node group {group}: devices attribute {key}: give exactly one of {', '.join(_TYPES)}"
            )
        kind, inner = next(iter(value.items()))
        if kind == "version" and not _SEMVER.match(str(inner)):
            raise DeviceConfigError(f"node group {group}: devices attribute {key}: {inner!r} is not a semantic version")
        if kind == "int" and (not isinstance(inner, int) or isinstance(inner, bool)):
            raise DeviceConfigError(f"node group {group}: devices attribute {key}: {inner!r} is not an integer")
        if kind == "bool" and not isinstance(inner, bool):
            raise DeviceConfigError(f"node group {group}: devices attribute {key}: {inner!r} is not a boolean")
        return {kind: str(inner) if kind in ("string", "version") else inner}
    if value is None or isinstance(value, list | float):
        raise DeviceConfigError(
            f"node group {group}: devices attribute {key}: use a string, an integer, a boolean or {{version: ...}}"
        )
    return value


def _group(group: str, number: int, entry: Any) -> DeviceGroupSpec:
    if not isinstance(entry, Mapping):
        raise DeviceConfigError(f"node group {group}: devices entry #{number} is not a mapping")
    unknown = set(entry) - _GROUP_KEYS
    if unknown:
        raise DeviceConfigError(f"node group {group}: devices: unknown field(s) {', '.join(sorted(unknown))}")
    driver = str(entry.get("driver") or "")
    if not driver or len(driver) > 63 or not _DNS1123_SUBDOMAIN.match(driver):
        raise DeviceConfigError(f"node group {group}: devices entry #{number} needs a driver (a DNS subdomain)")
    count, start = entry.get("count", 1), entry.get("startIndex", 0)
    for what, value in (("count", count), ("startIndex", start)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DeviceConfigError(f"node group {group}: devices {what} must be a non-negative integer")
    pattern = str(entry.get("namePattern") or driver.split(".", maxsplit=1)[0] + "-{index}")
    attributes = entry.get("attributes") or {}
    capacity = entry.get("capacity") or {}
    if not isinstance(attributes, Mapping) or not isinstance(capacity, Mapping):
        raise DeviceConfigError(f"node group {group}: devices attributes and capacity must be mappings")
    checked = {str(k): _check_attribute(group, str(k), v) for k, v in attributes.items()}
    multi = entry.get("allowMultipleAllocations", False)
    if not isinstance(multi, bool):
        raise DeviceConfigError(f"node group {group}: devices allowMultipleAllocations must be true or false")
    quantities: dict[str, dict[str, Any]] = {}
    for key, qty in capacity.items():
        try:
            quantities[str(key)] = parse_capacity(f"capacity {key}", qty, multi)
        except SharingError as exc:
            raise DeviceConfigError(f"node group {group}: devices {exc}") from None
    shared = _counter_lists(group, entry, "sharedCounters", "name", MAX_COUNTER_SETS)
    consumes = _counter_lists(group, entry, "consumesCounters", "counterSet", MAX_CONSUMPTIONS)
    spec = DeviceGroupSpec(driver, count, pattern, start, checked, quantities, shared, consumes, multi)
    try:
        names = [d.name for d in spec.devices_for("node")]
    except (KeyError, IndexError, ValueError) as exc:
        raise DeviceConfigError(f"node group {group}: devices namePattern {pattern!r}: {exc}") from None
    bad = next((n for n in names if not _DNS1123_LABEL.match(n) or len(n) > 63), None)
    if bad is not None:
        raise DeviceConfigError(f"node group {group}: device name {bad!r} is not a DNS label")
    return spec


def _counter_lists(group: str, entry: Mapping[str, Any], key: str, name_key: str, limit: int) -> Counters:
    """``sharedCounters`` / ``consumesCounters`` of one entry, checked as upstream's API validation checks them."""
    value = entry.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > limit:
        raise DeviceConfigError(f"node group {group}: devices {key} must be a list of at most {limit}")
    out = []
    for item in value:
        if not isinstance(item, Mapping) or set(item) - {name_key, "counters"}:
            raise DeviceConfigError(f"node group {group}: devices {key}: each entry has {name_key} and counters")
        name, counters = str(item.get(name_key) or ""), item.get("counters")
        if not _DNS1123_LABEL.match(name) or len(name) > 63:
            raise DeviceConfigError(f"node group {group}: devices {key}: {name_key} {name!r} is not a DNS label")
        if not isinstance(counters, Mapping) or not counters or len(counters) > 32:
            raise DeviceConfigError(f"node group {group}: devices {key} {name}: give 1 to 32 counters")
        checked = []
        for counter, qty in counters.items():
            if not _DNS1123_LABEL.match(str(counter)):
                raise DeviceConfigError(f"node group {group}: devices {key} {name}: {counter!r} is not a DNS label")
            try:
                parse_quantity(str(qty))
            except QuantityError as exc:
                raise DeviceConfigError(f"node group {group}: devices {key} {name} {counter}: {exc}") from None
            checked.append((str(counter), str(qty)))
        out.append((name, tuple(checked)))
    if len({name for name, _ in out}) != len(out):
        raise DeviceConfigError(f"node group {group}: devices {key}: a {name_key} is listed twice")
    return tuple(out)


def _check_counters(group: str, specs: Sequence[DeviceGroupSpec]) -> None:
    """Per driver: counter sets unique (at most :data:`MAX_COUNTER_SETS`), consumptions naming declared ones."""
    sets: dict[str, dict[str, set[str]]] = {}
    for spec in specs:
        for name, counters in spec.shared_counters:
            declared = sets.setdefault(spec.driver, {})
            if name in declared:
                raise DeviceConfigError(f"node group {group}: counter set {name} of {spec.driver} is defined twice")
            declared[name] = {c for c, _ in counters}
    per_driver: dict[str, list[DeviceSpec]] = {}
    for spec in specs:
        per_driver.setdefault(spec.driver, []).extend(spec.devices_for("node"))
    for driver, devices in per_driver.items():
        limit = 64 if any(d.consumes_counters for d in devices) else 128  # upstream ResourceSliceMaxDevices(...)
        if len(devices) > limit:
            raise DeviceConfigError(
                f"node group {group}: at most {limit} devices of {driver} per node (one ResourceSlice), "
                f"not {len(devices)}"
            )
    for driver, declared in sets.items():
        if len(declared) > MAX_COUNTER_SETS:
            raise DeviceConfigError(f"node group {group}: {driver} has more than {MAX_COUNTER_SETS} counter sets")
    for spec in specs:
        declared = sets.get(spec.driver, {})
        for name, counters in spec.consumes_counters:
            if name not in declared:
                raise DeviceConfigError(
                    f"node group {group}: devices of {spec.driver} consume counter set {name}, which is not declared"
                )
            unknown = sorted({c for c, _ in counters} - declared[name])
            if unknown:
                raise DeviceConfigError(
                    f"node group {group}: counter set {name} of {spec.driver} has no counter {', '.join(unknown)}"
                )


def parse_devices(group: str, value: Any) -> tuple[DeviceGroupSpec, ...]:
    """The ``devices`` of one node group (a list of device groups, or one mapping); ``()`` when absent."""
    if value is None:
        return ()
    entries: Sequence[Any] = [value] if isinstance(value, Mapping) else value
    if not isinstance(entries, list):
        raise DeviceConfigError(f"node group {group}: devices must be a list of device groups")
    specs = tuple(_group(group, i, e) for i, e in enumerate(entries, 1))
    seen: set[tuple[str, str]] = set()
    for spec in specs:
        for device in spec.devices_for("node"):
            if (spec.driver, device.name) in seen:
                raise DeviceConfigError(f"node group {group}: device {device.name} of {spec.driver} is defined twice")
            seen.add((spec.driver, device.name))
    _check_counters(group, specs)
    return specs
