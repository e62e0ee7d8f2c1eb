"""The bootstrap RBAC policy and its start-up reconciliation (upstream ``bootstrappolicy`` and the
``rbac/bootstrap-roles`` post-start hook: ``pkg/registry/rbac/rest/storage_rbac.go`` ensureRBACPolicy and
``pkg/registry/rbac/reconciliation``, v1.37).

:func:`reconcile` runs before the server serves. Invariants, as upstream with ``RemoveExtraPermissions: false``
and ``RemoveExtraSubjects: false``:

* a missing object is created as the policy states it;
* an existing object whose ``rbac.authorization.kubernetes.io/autoupdate`` annotation is "false" is left alone;
* any other existing object gets the policy's missing labels and annotations (its own values win), the missing
  rules (as broken-down subrules, ``Covers``), aggregationRule selectors and binding subjects, appended; nothing
  is ever removed; a binding whose roleRef differs is recreated (roleRef is immutable);
* an object already covering the policy is not written: a second run writes nothing.

Before that, a pre-aggregation admin/edit/view (no aggregationRule) has its rules copied to the matching
``system:aggregate-to-*`` role if that does not exist yet (primeAggregatedClusterRoles), so custom rules added to
them survive the switch to aggregation.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from kubeplane.apiserver import errors

from . import bootstrap_controllers, bootstrap_kubeplane, bootstrap_roles
from .bootstrap_rules import AUTOUPDATE_ANNOTATION, RBAC_GROUP, Obj
from .rbac_rules import Rule, covers

if TYPE_CHECKING:
    from kubeplane.api.resources import ResourceInfo
    from kubeplane.apiserver.registry import Registry

__all__ = [
    "cluster_role_bindings",
    "cluster_roles",
    "namespace_role_bindings",
    "namespace_roles",
    "reconcile",
]

log = logging.getLogger(__name__)
_CONFLICT_RETRIES = 5


def cluster_roles() -> list[Obj]:
    """Upstream's ClusterRoles and controller roles, then kubeplane's own."""
    return (
        bootstrap_roles.cluster_roles() + bootstrap_controllers.controller_roles() + bootstrap_kubeplane.cluster_roles()
    )


def cluster_role_bindings() -> list[Obj]:
    return (
        bootstrap_roles.cluster_role_bindings()
        + bootstrap_controllers.controller_role_bindings()
        + bootstrap_kubeplane.cluster_role_bindings()
    )


def namespace_roles() -> dict[str, list[Obj]]:
    return bootstrap_controllers.namespace_roles()


def namespace_role_bindings() -> dict[str, list[Obj]]:
    return bootstrap_controllers.namespace_role_bindings()


# -- reconciliation ----------------------------------------------------------------------------------------------


def _protected(existing: Obj) -> bool:
    """``Protected``: only an explicit "false" opts out, as upstream."""
    return bool((existing["metadata"].get("annotations") or {}).get(AUTOUPDATE_ANNOTATION) == "false")


def _merge_meta(result: Obj, expected: Obj) -> bool:
    """Add the expected labels and annotations the object lacks (upstream ``merge``: the existing value wins)."""
    changed = False
    meta = result["metadata"]
    for key in ("labels", "annotations"):
        have: dict[str, Any] = dict(meta.get(key) or {})
        merged = {**(expected["metadata"].get(key) or {}), **have}
        if merged != have:
            meta[key] = merged
            changed = True
    return changed


def reconciled_role(existing: Obj, expected: Obj) -> Obj | None:
    """``computeReconciledRole`` (union mode): the object to write, or None when it already covers ``expected``."""
    result = copy.deepcopy(existing)
    changed = _merge_meta(result, expected)
    _, missing = covers(
        [Rule.of(r) for r in existing.get("rules") or []], [Rule.of(r) for r in expected.get("rules") or []]
    )
    if missing:
        result["rules"] = list(result.get("rules") or []) + [r.wire() for r in missing]
        changed = True
    wanted = expected.get("aggregationRule")
    if wanted is not None:
        have_rule = existing.get("aggregationRule")
        have = list((have_rule or {}).get("clusterRoleSelectors") or [])
        missing_selectors = [s for s in wanted.get("clusterRoleSelectors") or [] if s not in have]
        if have_rule is None or missing_selectors:
            result["aggregationRule"] = {**(have_rule or {}), "clusterRoleSelectors": have + missing_selectors}
            changed = True
    return result if changed else None


def reconciled_binding(existing: Obj, expected: Obj) -> Obj | None:
    """``computeReconciledRoleBinding`` (union mode): missing subjects appended; None when nothing is missing."""
    result = copy.deepcopy(existing)
    changed = _merge_meta(result, expected)
    have = list(existing.get("subjects") or [])
    missing = [s for s in expected.get("subjects") or [] if s not in have]
    if missing:
        result["subjects"] = have + missing
        changed = True
    return result if changed else None


async def _write(registry: Registry, info: ResourceInfo, namespace: str | None, expected: Obj) -> None:
    """``ReconcileRoleOptions.Run`` / ``ReconcileRoleBindingOptions.Run`` for one object, retrying conflicts."""
    name = expected["metadata"]["name"]
    for _ in range(_CONFLICT_RETRIES):
        existing = registry.get_cached(info, namespace, name)
        try:
            if existing is None:
                await registry.create(info, namespace, copy.deepcopy(expected))
                return
            if _protected(existing):
                return
            if "roleRef" in expected and existing.get("roleRef") != expected["roleRef"]:
                await _recreate(registry, info, namespace, expected)
                return
            result = (reconciled_binding if "roleRef" in expected else reconciled_role)(existing, expected)
            if result is not None:
                await registry.update(info, namespace, name, result)
            return
        except errors.APIError as err:
            if err.code not in (404, 409):  # another writer raced us: read again and redo
                raise
    raise errors.conflict(info.group, info.plural, name, "the object kept changing during reconciliation")


async def _recreate(registry: Registry, info: ResourceInfo, namespace: str | None, expected: Obj) -> None:
    """roleRef is immutable: upstream deletes the binding and creates the expected one (ReconcileRecreate)."""
    from kubeplane.apiserver.deletion import DeleteOptions, delete_object

    await delete_object(registry, info, namespace, expected["metadata"]["name"], DeleteOptions())
    await registry.create(info, namespace, copy.deepcopy(expected))


async def _prime_aggregated_cluster_roles(registry: Registry, info: ResourceInfo) -> None:
    """``primeAggregatedClusterRoles``: copy a pre-aggregation admin/edit/view to its aggregate-to role."""
    for old_name, new_name in bootstrap_roles.CLUSTER_ROLES_TO_AGGREGATE.items():
        if registry.get_cached(info, None, new_name) is not None:
            continue
        existing = registry.get_cached(info, None, old_name)
        if existing is None:
            continue
        if existing.get("aggregationRule") is not None:
            return  # already migrated: no custom rules to carry over (upstream returns here)
        migrated = copy.deepcopy(existing)
        meta = migrated["metadata"]
        for system in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
            meta.pop(system, None)
        meta["name"] = new_name
        try:
            await registry.create(info, None, migrated)
        except errors.APIError as err:
            if err.code != 409:
                raise


async def reconcile(registry: Registry) -> None:
    """The ``rbac/bootstrap-roles`` post-start hook: ensure the bootstrap policy before serving.

    An object that cannot be reconciled is logged and skipped, as upstream (``utilruntime.HandleError``), so one
    bad object does not keep the server from starting.
    """
    roles = registry.resource(RBAC_GROUP, "clusterroles")
    bindings = registry.resource(RBAC_GROUP, "clusterrolebindings")
    ns_roles = registry.resource(RBAC_GROUP, "roles")
    ns_bindings = registry.resource(RBAC_GROUP, "rolebindings")
    await _prime_aggregated_cluster_roles(registry, roles)
    plan: list[tuple[ResourceInfo, str | None, Obj]] = [(roles, None, r) for r in cluster_roles()]
    plan += [(bindings, None, b) for b in cluster_role_bindings()]
    plan += [(ns_roles, ns, r) for ns, items in namespace_roles().items() for r in items]
    plan += [(ns_bindings, ns, b) for ns, items in namespace_role_bindings().items() for b in items]
    for info, namespace, expected in plan:
        try:
            await _write(registry, info, namespace, expected)
        except errors.APIError as err:
            log.error("unable to reconcile %s %s/%s: %s", info.kind, namespace or "", expected["metadata"]["name"], err)
