"""Request attributes, authorization decisions and the Forbidden answer (upstream
``k8s.io/apiserver/pkg/authorization/authorizer``, ``.../authorizerfactory`` and
``.../endpoints/handlers/responsewriters/errors.go``, v1.37).

Every transport turns a request into :class:`Attributes` once, after authentication and impersonation, and asks
the server's :class:`Authorizer` (a :class:`Union`, in kube-apiserver's order: system:masters, Node, RBAC). An
authorizer answers ALLOW, DENY or NO_OPINION with a reason; a union returns the first ALLOW or DENY and
otherwise NO_OPINION, which the filter answers as DENY (403, :func:`forbidden`). Decisions are pure functions of
the attributes and the authorizers' indexes, so callers may cache them per request shape.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kubeplane.apiserver import errors
from kubeplane.apiserver.tokens import UserInfo

PRIVILEGED_GROUP = "system:masters"
"""``user.SystemPrivilegedGroup``: always allowed (``authorizerfactory.NewPrivilegedGroups``)."""
ANONYMOUS_USER = "system:anonymous"
UNAUTHENTICATED_GROUP = "system:unauthenticated"
AUTHENTICATED_GROUP = "system:authenticated"
NODES_GROUP = "system:nodes"
NODE_USER_PREFIX = "system:node:"


class Decision(enum.Enum):
    DENY = 0
    ALLOW = 1
    NO_OPINION = 2


@dataclass(frozen=True, slots=True)
class Selector:
    """One requirement of a request's field or label selector, as ``authorizer.Attributes.GetFieldSelector``
    parses it (``op``: ``=``, ``!=``, ``in``, ``notin``, ``exists``, ``!``); used by the Node authorizer's
    AuthorizeNodeWithSelectors rules."""

    key: str
    op: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Attributes:
    """``authorizer.AttributesRecord``. For a resource request: ``verb`` is the request verb (get, list, watch,
    create, update, patch, delete, deletecollection) or a special one (impersonate, bind, escalate, use,
    approve, ...); ``api_group``/``api_version``/``resource``/``subresource``/``name``/``namespace`` as the URL
    names them. For a non-resource request ``resource_request`` is False, ``path`` is the URL path and ``verb``
    the lower-case HTTP verb (get, post, put, patch, delete, head)."""

    user: UserInfo
    verb: str
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    resource_request: bool = True
    path: str = ""
    field_selector: tuple[Selector, ...] = ()
    label_selector: tuple[Selector, ...] = ()


class Authorizer(Protocol):
    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        """The decision and its reason (empty when there is nothing to say)."""
        ...


class RuleResolver(Protocol):
    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, object]], list[dict[str, object]], bool, str]:
        """``authorizer.RuleResolver.RulesFor``: the user's resource rules and non-resource rules in
        ``namespace`` (wire form, as a SelfSubjectRulesReview's status lists them), whether the list is
        incomplete, and the evaluation error if any."""
        ...


class AlwaysAllow:
    """``--authorization-mode=AlwaysAllow``: what a server without authentication configured uses."""

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        return Decision.ALLOW, ""


class PrivilegedGroups:
    """``authorizerfactory.NewPrivilegedGroups(system:masters)``: members are allowed everything."""

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        if PRIVILEGED_GROUP in attrs.user.groups:
            return Decision.ALLOW, ""
        return Decision.NO_OPINION, ""


class Union:
    """``union.New``: the first ALLOW or DENY wins; reasons of the authorizers without an opinion are joined
    with ``", "`` as upstream's union does."""

    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self.authorizers = tuple(authorizers)

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        reasons: list[str] = []
        for authorizer in self.authorizers:
            decision, reason = authorizer.authorize(attrs)
            if decision is not Decision.NO_OPINION:
                return decision, reason
            if reason:
                reasons.append(reason)
        return Decision.NO_OPINION, ", ".join(reasons)


def forbidden_message(attrs: Attributes) -> str:
    """``responsewriters.forbiddenMessage``."""
    username = attrs.user.name
    if not attrs.resource_request:
        return f'User "{username}" cannot {attrs.verb} path "{attrs.path}"'
    resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
    if attrs.namespace:
        return (
            f'User "{username}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" '
            f'in the namespace "{attrs.namespace}"'
        )
    return (
        f'User "{username}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" '
        "at the cluster scope"
    )


def forbidden(attrs: Attributes, reason: str) -> errors.APIError:
    """``responsewriters.Forbidden``: 403 for the resource (and name) the attributes address, the message
    :func:`forbidden_message` plus ``": " + reason`` when the authorizers gave one."""
    message = forbidden_message(attrs)
    if reason:
        message = f"{message}: {reason}"
    return errors.forbidden(attrs.api_group, attrs.resource, attrs.name, message)
