"""LVM volume groups of a node: how a node declares them, and how claims are packed into them.

open-local (github.com/alibaba/open-local) keeps a node's volume groups in the ``status.nodeStorageInfo
.volumeGroups`` of its cluster-scoped NodeLocalStorage object (``name``, ``total``, ``allocatable`` in bytes),
written by its node agent. kubeplane's scheduler does not watch that CRD, so the same data is declared on the
Node itself, in the annotation :data:`VOLUME_GROUPS_ANNOTATION`, in either of two JSON forms:

* an object ``{"<vg name>": <size>}``, the size a quantity string (``"100Gi"``) or a number of bytes;
* open-local's list ``[{"name": "<vg name>", "allocatable": <bytes>, "total": <bytes>}]`` (``allocatable`` is
  the size; ``total`` is used when ``allocatable`` is absent), so a NodeLocalStorage's
  ``status.nodeStorageInfo.volumeGroups`` can be pasted as is.

Packing follows open-local's ``ProcessLVMPVCPredicate`` (``pkg/scheduler/algorithm/algo``): claims whose class
names a ``vgName`` go to that volume group and must fit its free space; the other claims go, one after the
other in the pod's volume order, to the volume group with the *least* free space that still holds the claim
(open-local's binpack order; ties by name), each placement reducing that group's free space for the next.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubeplane.api.quantity import QuantityError, parse_value

__all__ = ["VOLUME_GROUPS_ANNOTATION", "InvalidVolumeGroups", "VolumeGroups", "parse_volume_groups"]

VOLUME_GROUPS_ANNOTATION: Final = "kubeplane.io/lvm-volume-groups"


class InvalidVolumeGroups(ValueError):
    """The annotation's value is not one of the two accepted forms; the message says why."""


def _size(value: Any, where: str) -> int:
    if isinstance(value, bool):
        raise InvalidVolumeGroups(f"{where}: must be a quantity or a number of bytes")
    try:
        size = parse_value(value)
    except (QuantityError, TypeError, ValueError):
        raise InvalidVolumeGroups(f"{where}: must be a quantity or a number of bytes") from None
    if size < 0:
        raise InvalidVolumeGroups(f"{where}: must not be negative")
    return size


def parse_volume_groups(text: str) -> dict[str, int]:
    """``vg name -> size in bytes`` from the annotation's value; raises :class:`InvalidVolumeGroups`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidVolumeGroups(f"not JSON: {exc}") from None
    groups: dict[str, int] = {}
    if isinstance(data, Mapping):
        for name, value in data.items():
            groups[str(name)] = _size(value, str(name))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
                raise InvalidVolumeGroups(f"[{i}]: must be an object with a name")
            value = item.get("allocatable", item.get("total"))
            groups[item["name"]] = _size(value, item["name"])
    else:
        raise InvalidVolumeGroups('must be an object {"<vg>": "<size>"} or a list of {"name", "allocatable"}')
    if any(not name for name in groups):
        raise InvalidVolumeGroups("volume group names must not be empty")
    return groups


@dataclass(slots=True)
class VolumeGroups:
    """A node's volume groups with their free bytes; placements mutate ``free`` (work on a :meth:`copy`)."""

    free: dict[str, int]

    @classmethod
    def of_node(cls, node: Mapping[str, Any]) -> VolumeGroups:
        """The node's declared groups (none without the annotation); raises :class:`InvalidVolumeGroups`."""
        text = ((node.get("metadata") or {}).get("annotations") or {}).get(VOLUME_GROUPS_ANNOTATION)
        return cls(parse_volume_groups(text) if text else {})

    def copy(self) -> VolumeGroups:
        return VolumeGroups(dict(self.free))

    def take(self, vg: str, size: int) -> bool:
        """Place ``size`` bytes in ``vg``; False (nothing changes) when it has no group or too little room."""
        if vg not in self.free or self.free[vg] < size:
            return False
        self.free[vg] -= size
        return True

    def best_fit(self, size: int) -> str | None:
        """The group with the least free space still holding ``size`` (ties by name), or None."""
        fitting = [(free, name) for name, free in self.free.items() if free >= size]
        return min(fitting)[1] if fitting else None

    def charge(self, vg: str | None, size: int) -> None:
        """Account for a volume that already exists (or is on its way): in ``vg`` when known and declared,
        else where :meth:`best_fit` would have put it, else in the group with the most free space (which may
        go negative: the node is then over-committed and holds no more)."""
        if vg is not None:
            if vg in self.free:
                self.free[vg] -= size
            return
        if not self.free:
            return
        target = self.best_fit(size) or max(self.free, key=lambda n: (self.free[n], n))
        self.free[target] -= size
