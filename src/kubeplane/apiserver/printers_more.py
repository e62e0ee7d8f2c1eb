"""Server-side Table columns of StorageClass, CSINode, RoleBinding and ClusterRoleBinding.

Upstream: ``pkg/printers/internalversion/printers.go`` (v1.37) ``AddHandlers``: the column names, types and
priorities, and the rows of ``printStorageClass`` (`` (default)`` after a default class's name, reclaim policy
``Delete`` and binding mode ``Immediate`` when unset), ``printCSINode`` (the number of drivers),
``printRoleBinding``/``printClusterRoleBinding`` (``Kind/name`` of the roleRef; users, groups and
``namespace/name`` service accounts joined by ``, ``). Column descriptions that upstream takes from
``SwaggerDoc()`` come from the same Go comments (:mod:`kubeplane.api.openapi_docs`). Endpoints and EndpointSlice
are in :mod:`.printers_endpoints`. Role and ClusterRole print Name and Created At, which is the default printer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubeplane.api.openapi_docs import load_docs
from kubeplane.api.views import items, name_of, section

from .printers_workloads import AGE_COLUMN, NAME_COLUMN, Column, Obj, Printer, age

__all__ = ["MORE_PRINTERS"]


def _doc(go_type: str, field: str) -> str:
    """``SwaggerDoc()[field]`` of a Go type: its field's description (empty if unknown)."""
    fields: Mapping[str, Any] = load_docs()["types"].get(go_type, {}).get("fields", {})
    return str(fields.get(field, {}).get("description", ""))


_DEFAULT_CLASS_ANNOTATIONS: Final = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def storage_class_row(obj: Obj, now: float) -> list[Any]:
    """``printStorageClass``: a default class (``storageutil.IsDefaultAnnotation``) is named ``<name> (default)``."""
    annotations = section(obj, "metadata", "annotations")
    default = any(annotations.get(key) == "true" for key in _DEFAULT_CLASS_ANNOTATIONS)
    return [
        name_of(obj) + (" (default)" if default else ""),
        str(obj.get("provisioner") or ""),
        str(obj.get("reclaimPolicy") or "Delete"),
        str(obj.get("volumeBindingMode") or "Immediate"),
        obj.get("allowVolumeExpansion") is True,
        age(obj, now),
    ]


def csi_node_row(obj: Obj, now: float) -> list[Any]:
    return [name_of(obj), len(items(section(obj, "spec"), "drivers")), age(obj, now)]


def _subjects(obj: Obj) -> tuple[str, str, str]:
    """``rbac.SubjectsStrings``: users, groups and service accounts, each joined by ``, ``."""
    users, groups, sas = [], [], []
    for subject in items(obj, "subjects"):
        kind, name = subject.get("kind"), str(subject.get("name", ""))
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            sas.append(f"{subject.get('namespace', '')}/{name}")
    return ", ".join(users), ", ".join(groups), ", ".join(sas)


def binding_row(obj: Obj, now: float) -> list[Any]:
    ref = section(obj, "roleRef")
    users, groups, sas = _subjects(obj)
    return [name_of(obj), f"{ref.get('kind', '')}/{ref.get('name', '')}", age(obj, now), users, groups, sas]


def _binding_columns(kind: str, label: str) -> tuple[Column, ...]:
    return (
        NAME_COLUMN,
        Column("Role", "string", _doc(f"k8s.io/api/rbac/v1.{kind}", "roleRef")),
        AGE_COLUMN,
        Column("Users", "string", f"Users in the {label}", priority=1),
        Column("Groups", "string", f"Groups in the {label}", priority=1),
        Column("ServiceAccounts", "string", f"ServiceAccounts in the {label}", priority=1),
    )


_STORAGE_CLASS: Final = "k8s.io/api/storage/v1.StorageClass"
MORE_PRINTERS: Final[Mapping[tuple[str, str], Printer]] = {
    ("storage.k8s.io", "StorageClass"): Printer(
        (
            NAME_COLUMN,
            Column("Provisioner", "string", _doc(_STORAGE_CLASS, "provisioner")),
            Column("ReclaimPolicy", "string", _doc(_STORAGE_CLASS, "reclaimPolicy")),
            Column("VolumeBindingMode", "string", _doc(_STORAGE_CLASS, "volumeBindingMode")),
            Column("AllowVolumeExpansion", "string", _doc(_STORAGE_CLASS, "allowVolumeExpansion")),
            AGE_COLUMN,
        ),
        storage_class_row,
    ),
    ("storage.k8s.io", "CSINode"): Printer(
        (
            NAME_COLUMN,
            Column("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
            AGE_COLUMN,
        ),
        csi_node_row,
    ),
    ("rbac.authorization.k8s.io", "RoleBinding"): Printer(_binding_columns("RoleBinding", "roleBinding"), binding_row),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): Printer(
        _binding_columns("ClusterRoleBinding", "clusterRoleBinding"), binding_row
    ),
}
