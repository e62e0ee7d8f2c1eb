"""The RBAC authorizer and its rule resolution (upstream v1.37 ``plugin/pkg/auth/authorizer/rbac/rbac.go`` and
``pkg/registry/rbac/validation/rule.go``: ``DefaultRuleResolver.VisitRulesFor``, ``appliesTo``,
``GetRoleReferenceRules``).

Roles, ClusterRoles, RoleBindings and ClusterRoleBindings are read from the registry's watch caches. The index
(bindings in name order, roles' rules parsed once) is rebuilt when any of the four caches changed since it was
built, checked on every decision after the caches have taken what the store already delivered, so a decision
reflects every RBAC write completed before the request (read your writes, as a single apiserver's informers
almost always do). Decisions are cached per request shape and dropped with the index.

Bindings are visited ClusterRoleBindings first, then the RoleBindings of the request's namespace, each in name
order (upstream visits its listers' order, which is unspecified: only which binding an ALLOW names can differ).
A denial is NO_OPINION whose reason is empty unless rule resolution failed (``RBAC: <errors>``), as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubeplane.api.validation.field import aggregate_text
from kubeplane.apiserver.tokens import USER_PREFIX, UserInfo

from .authorizer import Attributes, Decision
from .rbac_rules import Rule

if TYPE_CHECKING:
    from kubeplane.apiserver.registry import Registry

GROUP = "rbac.authorization.k8s.io"
_KINDS = ("roles", "clusterroles", "rolebindings", "clusterrolebindings")
DECISION_CACHE_SIZE = 65_536
"""Distinct request shapes remembered between RBAC changes (the cache is emptied when it is full)."""


@dataclass(frozen=True, slots=True)
class Subject:
    kind: str
    name: str
    namespace: str

    def applies_to(self, user: UserInfo, namespace: str) -> bool:
        """``appliesToUser``: a ServiceAccount subject without a namespace takes the binding's."""
        if self.kind == "User":
            return user.name == self.name
        if self.kind == "Group":
            return self.name in user.groups
        if self.kind == "ServiceAccount":
            sa_namespace = self.namespace or namespace
            return bool(sa_namespace) and user.name == f"{USER_PREFIX}{sa_namespace}:{self.name}"
        return False

    def describe(self, binding_namespace: str) -> str:
        """``describeSubject``."""
        if self.kind == "ServiceAccount":
            return f'{self.kind} "{self.name}/{self.namespace or binding_namespace}"'
        return f'{self.kind} "{self.name}"'


@dataclass(frozen=True, slots=True)
class Binding:
    kind: str  # RoleBinding | ClusterRoleBinding
    name: str
    namespace: str
    role_kind: str
    role_name: str
    subjects: tuple[Subject, ...]

    def subject_for(self, user: UserInfo, namespace: str) -> Subject | None:
        """``appliesTo``: the first subject that names the user."""
        return next((s for s in self.subjects if s.applies_to(user, namespace)), None)

    def describe(self, subject: Subject) -> str:
        """``clusterRoleBindingDescriber`` / ``roleBindingDescriber``."""
        return f'{self.kind} "{self.name}" of {self.role_kind} "{self.role_name}" to {subject.describe(self.namespace)}'


def _binding(kind: str, obj: Mapping[str, Any]) -> Binding:
    meta = obj.get("metadata") or {}
    ref = obj.get("roleRef") or {}
    subjects = tuple(
        Subject(str(s.get("kind", "")), str(s.get("name", "")), str(s.get("namespace", "") or ""))
        for s in obj.get("subjects") or ()
        if isinstance(s, Mapping)
    )
    return Binding(
        kind,
        str(meta.get("name", "")),
        str(meta.get("namespace", "") or ""),
        str(ref.get("kind", "")),
        str(ref.get("name", "")),
        subjects,
    )


def _rules(obj: Mapping[str, Any]) -> tuple[Rule, ...]:
    return tuple(Rule.of(r) for r in obj.get("rules") or () if isinstance(r, Mapping))


class _Index:
    def __init__(self, objects: Mapping[str, list[dict[str, Any]]]) -> None:
        self.cluster_roles = {str(o["metadata"]["name"]): _rules(o) for o in objects["clusterroles"]}
        self.roles = {
            (str(o["metadata"].get("namespace", "")), str(o["metadata"]["name"])): _rules(o) for o in objects["roles"]
        }
        self.cluster_bindings = sorted(
            (_binding("ClusterRoleBinding", o) for o in objects["clusterrolebindings"]), key=lambda b: b.name
        )
        self.bindings: dict[str, list[Binding]] = {}
        for o in objects["rolebindings"]:
            b = _binding("RoleBinding", o)
            self.bindings.setdefault(b.namespace, []).append(b)
        for items in self.bindings.values():
            items.sort(key=lambda b: b.name)

    def role_rules(self, binding: Binding) -> tuple[Rule, ...]:
        """``GetRoleReferenceRules``; :class:`LookupError` with the lister's message when the role is missing."""
        if binding.role_kind == "Role":
            found = self.roles.get((binding.namespace, binding.role_name))
            if found is None:
                raise LookupError(f'role.{GROUP} "{binding.role_name}" not found')
            return found
        if binding.role_kind == "ClusterRole":
            found = self.cluster_roles.get(binding.role_name)
            if found is None:
                raise LookupError(f'clusterrole.{GROUP} "{binding.role_name}" not found')
            return found
        raise LookupError(f'unsupported role reference kind: "{binding.role_kind}"')


Visitor = Callable[[str, Rule | None, str], bool]
"""(source description, rule, error) -> continue?"""


class RBACAuthorizer:
    """``RBACAuthorizer`` over ``registry``: an :class:`~.authorizer.Authorizer` and
    :class:`~.authorizer.RuleResolver`."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._infos = [registry.resource(GROUP, plural) for plural in _KINDS]
        self._signature: tuple[tuple[int, int, int], ...] | None = None
        self._index: _Index | None = None
        self._decisions: dict[tuple[Any, ...], tuple[Decision, str]] = {}
        self.rebuilds = 0

    # -- the index ---------------------------------------------------------------------------------------------

    def index(self) -> _Index:
        """The index as of every RBAC write the store has delivered (rebuilt if any of the four kinds moved)."""
        caches = [self.registry.cache(info) for info in self._infos]
        signature = []
        for cache in caches:
            cache.sync()
            last = cache.ring[-1].revision if cache.ring else 0
            signature.append((last, cache.ring_floor, len(cache.objects)))
        key = tuple(signature)
        if self._index is None or key != self._signature:
            objects = {
                plural: [obj for _, obj in cache.items(info.collection_key())]
                for plural, cache, info in zip(_KINDS, caches, self._infos, strict=True)
            }
            self._index = _Index(objects)
            self._signature = key
            self._decisions.clear()
            self.rebuilds += 1
        return self._index

    # -- rule resolution ---------------------------------------------------------------------------------------

    def visit_rules_for(self, user: UserInfo, namespace: str, visitor: Visitor) -> None:
        """``VisitRulesFor``: every rule of every binding that applies to ``user`` in ``namespace``."""
        index = self.index()
        for binding in _applicable(index, user, namespace):
            subject = binding.subject_for(user, binding.namespace if binding.kind == "RoleBinding" else "")
            assert subject is not None
            try:
                rules = index.role_rules(binding)
            except LookupError as exc:
                if not visitor("", None, str(exc)):
                    return
                continue
            source = binding.describe(subject)
            for rule in rules:
                if not visitor(source, rule, ""):
                    return

    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, object]], list[dict[str, object]], bool, str]:
        """``RBACAuthorizer.RulesFor``: rules with resources and rules with URLs; never incomplete (upstream
        reports resolution errors only as the evaluation error)."""
        rules, errors = self.resolve(user, namespace)
        resource = [_resource_rule(r) for r in rules if r.resources]
        non_resource: list[dict[str, object]] = [
            {"verbs": list(r.verbs), "nonResourceURLs": list(r.non_resource_urls)} for r in rules if r.non_resource_urls
        ]
        return resource, non_resource, False, aggregate_text(errors)

    def resolve(self, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
        """The user's rules in ``namespace`` and the resolution errors (escalation checks use both)."""
        rules: list[Rule] = []
        errors: list[str] = []

        def collect(_source: str, rule: Rule | None, error: str) -> bool:
            if rule is not None:
                rules.append(rule)
            if error:
                errors.append(error)
            return True

        self.visit_rules_for(user, namespace, collect)
        return rules, errors

    # -- authorization -----------------------------------------------------------------------------------------

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        self.index()  # drops the cached decisions when RBAC changed
        user = attrs.user
        key = (
            user.name,
            user.groups,
            attrs.verb,
            attrs.namespace,
            attrs.api_group,
            attrs.resource,
            attrs.subresource,
            attrs.name,
            attrs.resource_request,
            attrs.path,
        )
        cached = self._decisions.get(key)
        if cached is not None:
            return cached
        allowed = ""
        errors: list[str] = []

        def check(source: str, rule: Rule | None, error: str) -> bool:
            nonlocal allowed
            if rule is not None and rule.allows(attrs):
                allowed = f"RBAC: allowed by {source}"
                return False
            if error:
                errors.append(error)
            return True

        self.visit_rules_for(user, attrs.namespace, check)
        if allowed:
            decision = (Decision.ALLOW, allowed)
        else:
            error = aggregate_text(errors)
            decision = (Decision.NO_OPINION, f"RBAC: {error}" if error else "")
        if len(self._decisions) >= DECISION_CACHE_SIZE:
            self._decisions.clear()
        self._decisions[key] = decision
        return decision


def _resource_rule(rule: Rule) -> dict[str, object]:
    """``authorizer.DefaultResourceRuleInfo`` as a review's ``ResourceRule``."""
    out: dict[str, object] = {
        "verbs": list(rule.verbs),
        "apiGroups": list(rule.api_groups),
        "resources": list(rule.resources),
    }
    if rule.resource_names:
        out["resourceNames"] = list(rule.resource_names)
    return out


def _applicable(index: _Index, user: UserInfo, namespace: str) -> Iterator[Binding]:
    for binding in index.cluster_bindings:
        if binding.subject_for(user, "") is not None:
            yield binding
    if namespace:
        for binding in index.bindings.get(namespace, ()):
            if binding.subject_for(user, namespace) is not None:
                yield binding
