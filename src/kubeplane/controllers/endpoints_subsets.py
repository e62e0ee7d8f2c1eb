"""core/v1 Endpoints subsets: upstream ``pkg/api/v1/endpoints.RepackSubsets`` and the Endpoints controller's
``truncateEndpoints`` (``pkg/controller/endpoint``).

:func:`repack_subsets` turns one subset per (address, port) into the canonical N-to-M form: addresses offering
exactly the same ports share one subset, an address is not-ready for a port if any of its entries for that port
is not ready, and addresses without ports are kept (a headless Service without ports). Addresses are identified
by IP and target uid. Sorting: addresses by IP then target uid, as upstream; ports and subsets upstream sort by a
hash of their Go dump, which cannot be reproduced, so here ports sort by (name, port, protocol) and subsets by
their first address -- any fixed order serves, since comparisons happen between two repacked lists.

:func:`truncate` caps an Endpoints object at :data:`MAX_CAPACITY` addresses, spreading the cut over the subsets in
proportion to their size and keeping ready addresses before not-ready ones.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["MAX_CAPACITY", "repack_subsets", "total_addresses", "truncate"]

MAX_CAPACITY: Final = 1000
"""Upstream ``maxCapacity``: addresses an Endpoints object holds before it is truncated and annotated."""

Obj = dict[str, Any]
_NO_PORT: Final = "-"  # upstream's sentinel port (Port: -1) for addresses without ports


def _address_key(address: Mapping[str, Any]) -> tuple[str, str]:
    ref = address.get("targetRef") or {}
    return str(address.get("ip") or ""), str(ref.get("uid") or "")


def _port_key(port: Mapping[str, Any]) -> str:
    return repr(sorted(port.items()))


def _address_sort_key(address: Mapping[str, Any]) -> tuple[bytes, bool, str]:
    """Upstream ``LessEndpointAddress``: IP bytes, then no target before a target, then target uid."""
    ref = address.get("targetRef")
    return str(address.get("ip") or "").encode(), ref is not None, str((ref or {}).get("uid") or "")


def repack_subsets(subsets: Sequence[Mapping[str, Any]]) -> list[Obj]:
    """See the module docstring."""
    all_addresses: dict[tuple[str, str], Obj] = {}
    ports_by_key: dict[str, Obj | None] = {}
    ready_by_port: dict[str, dict[tuple[str, str], bool]] = {}
    for subset in subsets:
        subset_ports: list[Obj | None] = list(subset.get("ports") or []) or [None]
        for port in subset_ports:
            pkey = _NO_PORT if port is None else _port_key(port)
            ports_by_key.setdefault(pkey, port)
            readiness = ready_by_port.setdefault(pkey, {})
            for field_name, ready in (("addresses", True), ("notReadyAddresses", False)):
                for address in subset.get(field_name) or []:
                    akey = _address_key(address)
                    all_addresses.setdefault(akey, dict(address))
                    if readiness.get(akey, True):  # not ready trumps ready
                        readiness[akey] = ready
    # addresses-with-readiness -> the ports they offer
    groups: dict[tuple[tuple[tuple[str, str], bool], ...], list[Obj]] = {}
    for pkey, readiness in ready_by_port.items():
        group = tuple(sorted(readiness.items()))
        members = groups.setdefault(group, [])
        port = ports_by_key[pkey]
        if port is not None:
            members.append(port)
    final: list[Obj] = []
    for group, group_ports in groups.items():
        ready_addresses = sorted((all_addresses[k] for k, r in group if r), key=_address_sort_key)
        not_ready = sorted((all_addresses[k] for k, r in group if not r), key=_address_sort_key)
        packed: Obj = {}
        if ready_addresses:
            packed["addresses"] = ready_addresses
        if not_ready:
            packed["notReadyAddresses"] = not_ready
        if group_ports:
            packed["ports"] = sorted(
                group_ports, key=lambda p: (str(p.get("name") or ""), p.get("port") or 0, p.get("protocol") or "")
            )
        final.append(packed)
    final.sort(key=_subset_sort_key)
    return final


def _subset_sort_key(subset: Mapping[str, Any]) -> tuple[Any, ...]:
    first = (subset.get("addresses") or subset.get("notReadyAddresses") or [{}])[0]
    ports = [(p.get("name") or "", p.get("port") or 0) for p in subset.get("ports") or []]
    return _address_sort_key(first), ports


def total_addresses(subsets: Sequence[Mapping[str, Any]]) -> int:
    return sum(len(s.get("addresses") or []) + len(s.get("notReadyAddresses") or []) for s in subsets)


def truncate(subsets: list[Obj]) -> bool:
    """Upstream ``truncateEndpoints``, in place; True when anything was cut."""
    total_ready = sum(len(s.get("addresses") or []) for s in subsets)
    total_not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if total_ready + total_not_ready <= MAX_CAPACITY:
        return False
    truncate_ready = total_ready > MAX_CAPACITY
    limit, num_total = (MAX_CAPACITY, total_ready) if truncate_ready else (MAX_CAPACITY - total_ready, total_not_ready)
    can_be_added = limit
    for subset in subsets:
        key = "addresses" if truncate_ready else "notReadyAddresses"
        in_subset = len(subset.get(key) or [])
        to_add = min(math.ceil(in_subset / num_total * limit), can_be_added) if num_total else 0
        subset[key] = list(subset.get(key) or [])[:to_add]
        if truncate_ready:
            subset.pop("notReadyAddresses", None)
        can_be_added -= len(subset[key])
        if not subset[key]:
            del subset[key]
    return True
