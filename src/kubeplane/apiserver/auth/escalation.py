"""RBAC's privilege-escalation prevention on writes of roles and bindings (upstream v1.37
``pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased/storage.go``,
``pkg/registry/rbac/escalation_check.go`` and ``validation.ConfirmNoEscalation``).

A requester may write a Role or ClusterRole only with rules it holds itself (in the object's namespace), unless
it is in system:masters or may ``escalate`` the role; setting a ClusterRole's ``aggregationRule`` needs full
authority (``*`` on everything). A binding may be written only if the requester may ``bind`` the referenced role
or holds all of its rules. An update that changes nothing but the garbage collector's fields (ownerReferences,
finalizers) is not checked. Refusals are upstream's 403 texts.

Departure: upstream checks before the object's validation, kubeplane in validating admission after it, so a
write that is both invalid and escalating is a 422 here where upstream answers 403.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kubeplane.api.resources import ResourceInfo
from kubeplane.api.validation.field import aggregate_text
from kubeplane.apiserver import errors

from .authorizer import Attributes, Decision
from .context import is_privileged, requester
from .rbac import GROUP, RBACAuthorizer
from .rbac_rules import Rule, compact, compact_string, covers, go_quote_list

if TYPE_CHECKING:
    from kubeplane.apiserver.registry import Registry
    from kubeplane.apiserver.tokens import UserInfo

_ROLES = frozenset({"Role", "ClusterRole"})
_BINDINGS = frozenset({"RoleBinding", "ClusterRoleBinding"})
FULL_AUTHORITY = (Rule(("*",), ("*",), ("*",)), Rule(("*",), non_resource_urls=("*",)))
_GC_FIELDS = ("ownerReferences", "finalizers")
_VOLATILE = ("resourceVersion", "managedFields", "generation", "creationTimestamp", "uid")


def _resolver(registry: Registry) -> RBACAuthorizer:
    """The server's RBAC authorizer if it has one (its index is warm), else one over the same caches."""
    for part in getattr(registry.authorizer, "authorizers", (registry.authorizer,)):
        if isinstance(part, RBACAuthorizer):
            return part
    found: RBACAuthorizer | None = getattr(registry, "_escalation_resolver", None)
    if found is None:
        found = RBACAuthorizer(registry)
        registry._escalation_resolver = found  # type: ignore[attr-defined]
    return found


def _allowed(registry: Registry, attrs: Attributes) -> bool:
    decision, _ = registry.authorizer.authorize(attrs)
    return decision is Decision.ALLOW


def confirm_no_escalation(registry: Registry, user: UserInfo, namespace: str, rules: list[Rule]) -> str:
    """``ConfirmNoEscalation``: "" when the user holds ``rules`` in ``namespace``, else upstream's message."""
    owner, resolution_errors = _resolver(registry).resolve(user, namespace)
    ok, missing = covers(owner, rules)
    if ok:
        return ""
    described = sorted({compact_string(rule) for rule in compact(missing)})
    message = (
        f'user "{user.name}" (groups={go_quote_list(user.groups)}) is attempting to grant RBAC permissions not '
        "currently held:\n" + "\n".join(described)
    )
    if resolution_errors:
        message += f"; resolution errors: [{aggregate_text(resolution_errors)}]"
    return message


def _only_gc_fields_changed(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """``IsOnlyMutatingGCFields``."""

    def stripped(obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _GC_FIELDS + _VOLATILE}
        return {**obj, "metadata": meta}

    return stripped(new) == stripped(old)


async def admit(registry: Registry, info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Check a create (``old`` None) or update of an RBAC object by the current requester."""
    if info.group != GROUP or (info.kind not in _ROLES and info.kind not in _BINDINGS):
        return
    user = requester()
    if user is None or is_privileged(user):  # rbacregistry.EscalationAllowed
        return
    if old is not None and _only_gc_fields_changed(obj, old):
        return
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "") if info.namespaced else ""
    if info.kind in _ROLES:
        _check_role(registry, info, user, obj, old, name, namespace)
    else:
        _check_binding(registry, info, user, obj, name, namespace)


def _check_role(
    registry: Registry,
    info: ResourceInfo,
    user: UserInfo,
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None,
    name: str,
    namespace: str,
) -> None:
    escalate = Attributes(
        user, "escalate", namespace=namespace, api_group=GROUP, api_version="*", resource=info.plural, name=name
    )
    if _allowed(registry, escalate):  # rbacregistry.RoleEscalationAuthorized
        return
    rules = [Rule.of(r) for r in obj.get("rules") or () if isinstance(r, Mapping)]
    refusal = confirm_no_escalation(registry, user, namespace, rules)
    if refusal:
        raise errors.forbidden(GROUP, info.plural, name, refusal)
    aggregation = obj.get("aggregationRule")
    changed = aggregation and (old is None or old.get("aggregationRule") != aggregation)
    if (
        info.kind == "ClusterRole"
        and changed
        and confirm_no_escalation(registry, user, namespace, list(FULL_AUTHORITY))
    ):
        raise errors.forbidden(
            GROUP, info.plural, name, "must have cluster-admin privileges to use the aggregationRule"
        )


def _check_binding(
    registry: Registry, info: ResourceInfo, user: UserInfo, obj: Mapping[str, Any], name: str, namespace: str
) -> None:
    ref = obj.get("roleRef") or {}
    kind, role = str(ref.get("kind", "")), str(ref.get("name", ""))
    bind = Attributes(
        user,
        "bind",
        namespace=namespace,
        api_group=GROUP,
        resource="roles" if kind == "Role" else "clusterroles",
        name=role,
    )
    if _allowed(registry, bind):  # rbacregistry.BindingAuthorized
        return
    index = _resolver(registry).index()
    found = index.roles.get((namespace, role)) if kind == "Role" else index.cluster_roles.get(role)
    if found is None:  # GetRoleReferenceRules' lister error, returned as it is: role.rbac... "x" not found (404)
        raise errors.not_found(GROUP, "role" if kind == "Role" else "clusterrole", role)
    refusal = confirm_no_escalation(registry, user, namespace, list(found))
    if refusal:
        raise errors.forbidden(GROUP, info.plural, name, refusal)
