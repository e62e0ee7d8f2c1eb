"""``--authorization-mode``: the server's authorizer (upstream ``pkg/kubeapiserver/authorizer/config.go``).

kube-apiserver always puts ``system:masters`` first (``authorizerfactory.NewPrivilegedGroups``), then the modes
in the order given; kubeplane serves ``Node`` and ``RBAC`` (the default ``Node,RBAC``, as kubeadm's), and
``AlwaysAllow`` / ``AlwaysDeny``. The Node and RBAC authorizers read the registry's watch caches, so the one
built here follows every later write.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.tokens import UserInfo

from .authorizer import AlwaysAllow, Attributes, Authorizer, Decision, PrivilegedGroups, RuleResolver, Union
from .node import NodeAuthorizer
from .rbac import RBACAuthorizer

DEFAULT_MODES = ("Node", "RBAC")
MODES = ("AlwaysAllow", "AlwaysDeny", "Node", "RBAC")


class AlwaysDeny:
    """``--authorization-mode=AlwaysDeny``: ``authorizerfactory.NewAlwaysDenyAuthorizer`` (NO_OPINION, "Everything
    is forbidden.")."""

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        return Decision.NO_OPINION, "Everything is forbidden."


def parse_modes(text: str) -> tuple[str, ...]:
    """``--authorization-mode`` as a tuple; ValueError with upstream's text for an unknown or repeated mode."""
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes:
        raise ValueError("at least one authorization-mode must be passed")
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"authorization-mode {mode!r} is not a valid mode")
    if len(set(modes)) != len(modes):
        raise ValueError(f"authorization-mode {','.join(modes)!r} has mode specified more than once")
    return modes


def _mode(registry: Registry, mode: str) -> Authorizer:
    if mode == "AlwaysAllow":
        return AlwaysAllow()
    if mode == "AlwaysDeny":
        return AlwaysDeny()
    if mode == "Node":
        return NodeAuthorizer(registry)
    return RBACAuthorizer(registry)


def build_authorizer(registry: Registry, modes: Sequence[str] = DEFAULT_MODES) -> Authorizer:
    """Union(PrivilegedGroups, *modes) over ``registry``."""
    return Union([PrivilegedGroups(), *(_mode(registry, m) for m in modes)])


class _AllRules:
    """``alwaysAllowAuthorizer.RulesFor``: everything, on every path."""

    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, object]], list[dict[str, object]], bool, str]:
        return (
            [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            False,
            "",
        )


def rule_resolvers(authorizer: Authorizer) -> list[RuleResolver]:
    """The rule resolvers among the server's authorizers, in order (AlwaysAllow's and RBAC's), whose union a
    SelfSubjectRulesReview reports (``union.NewRuleResolvers``)."""
    parts = authorizer.authorizers if isinstance(authorizer, Union) else (authorizer,)
    found: list[RuleResolver] = []
    for part in parts:
        if isinstance(part, AlwaysAllow):
            found.append(_AllRules())
        elif callable(getattr(part, "rules_for", None)):
            found.append(cast(RuleResolver, part))
    return found
