"""Resource names as users and components write them, to a ResourceInfo of the table."""

from __future__ import annotations

from kubeplane.api.resources import ResourceInfo, ResourceTable


def resolve_resource(table: ResourceTable, name: str) -> ResourceInfo:
    info = table.resolve(name)
    if info is None:
        raise KeyError(f"unknown resource {name!r}")
    return info
