"""``Impersonate-*`` headers (upstream ``endpoints/filters/impersonation.go``, v1.37).

A request may act as another user with ``Impersonate-User`` (a ServiceAccount's username is impersonated as
that ServiceAccount), ``Impersonate-Group`` (repeatable), ``Impersonate-Uid`` and ``Impersonate-Extra-<key>``
(repeatable; the key lower-cased and %-unescaped). Groups, uid or extras without a user are refused before
anything is authorized. Each requested thing is authorized for the *requester* with the verb ``impersonate``:
``users`` / ``groups`` (core group, cluster scope, named), ``serviceaccounts`` in the account's namespace,
``uids`` and ``userextras/<key>`` (authentication.k8s.io); the first refusal is the answer (upstream's
Forbidden for those attributes). The impersonated user has exactly the groups asked for, or, without
``Impersonate-Group``, a ServiceAccount's fixed groups; ``system:authenticated`` is added unless a given group
is system:authenticated or system:unauthenticated (``system:anonymous`` gets system:unauthenticated instead).

Upstream answers the "without impersonating a user" error with a 500 (``responsewriters.InternalError``);
kubeplane answers the same text as a 400, because it is bad input and bad input is never a 5xx here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from kubeplane.api.validation.names import is_dns1123_label, is_dns1123_subdomain
from kubeplane.apiserver import errors
from kubeplane.apiserver.tokens import ALL_GROUP, USER_PREFIX, UserInfo

from .authorizer import ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, Attributes, Authorizer, Decision
from .authorizer import forbidden as forbidden_error

USER_HEADER = "impersonate-user"
GROUP_HEADER = "impersonate-group"
UID_HEADER = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION_V1 = "authentication.k8s.io/v1"
_BAD_ESCAPE = re.compile(r"%(?![0-9a-fA-F]{2})")


@dataclass(frozen=True, slots=True)
class Request:
    """One thing to impersonate, as upstream's ``v1.ObjectReference`` (``field_path`` holds an extra's key)."""

    kind: str  # ServiceAccount, User, Group, UserExtra, UID
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""

    def go_string(self) -> str:
        """Go's ``%v`` of the ObjectReference: its seven fields in order, space-separated, in braces."""
        return f"{{{self.kind} {self.namespace} {self.name}  {self.api_version}  {self.field_path}}}"


def split_service_account(username: str) -> tuple[str, str] | None:
    """``serviceaccount.SplitUsername``: (namespace, name) of ``system:serviceaccount:<ns>:<name>`` when the
    namespace is a DNS label and the name a DNS subdomain, else None."""
    if not username.startswith(USER_PREFIX):
        return None
    parts = username[len(USER_PREFIX) :].split(":")
    if len(parts) != 2:
        return None
    namespace, name = parts
    if is_dns1123_label(namespace) or is_dns1123_subdomain(name):
        return None
    return namespace, name


def _unescape_extra_key(encoded: str) -> str:
    """``unescapeExtraKey``: ``url.PathUnescape``, or the key as sent when it is not valid %-encoding."""
    if _BAD_ESCAPE.search(encoded):
        return encoded
    return unquote(encoded, errors="strict") if "%" in encoded else encoded


def requests_of(headers: Iterable[tuple[str, str]]) -> list[Request]:
    """``buildImpersonationRequests``: what the headers (lower-cased names) ask to impersonate; 400 when
    groups, extras or a uid come without a user."""
    pairs = list(headers)
    found: list[Request] = []
    user = next((v for k, v in pairs if k == USER_HEADER), "")
    if user:
        sa = split_service_account(user)
        if sa is not None:
            found.append(Request("ServiceAccount", sa[1], namespace=sa[0]))
        else:
            found.append(Request("User", user))
    groups = [v for k, v in pairs if k == GROUP_HEADER]
    found.extend(Request("Group", g) for g in groups)
    extras: dict[str, list[str]] = {}
    for key, value in pairs:
        if key.startswith(EXTRA_PREFIX):
            extras.setdefault(key, []).append(value)
    for header, values in extras.items():
        extra_key = _unescape_extra_key(header[len(EXTRA_PREFIX) :].lower())
        found.extend(Request("UserExtra", v, api_version=AUTHENTICATION_V1, field_path=extra_key) for v in values)
    uid = next((v for k, v in pairs if k == UID_HEADER), "")
    if uid:
        found.append(Request("UID", uid, api_version=AUTHENTICATION_V1))
    if (groups or extras or uid) and not user:
        listed = " ".join(r.go_string() for r in found)
        raise errors.bad_request(f"requested [{listed}] without impersonating a user")
    return found


def _attributes(requester: UserInfo, request: Request) -> Attributes:
    # the ObjectReference's apiVersion is the attributes' group/version ("" for users, groups and SAs)
    group, _, version = request.api_version.rpartition("/")
    resource = {
        "ServiceAccount": "serviceaccounts",
        "User": "users",
        "Group": "groups",
        "UserExtra": "userextras",
        "UID": "uids",
    }[request.kind]
    return Attributes(
        user=requester,
        verb="impersonate",
        namespace=request.namespace,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=request.field_path if request.kind == "UserExtra" else "",
        name=request.name,
    )


def impersonate(authorizer: Authorizer, requester: UserInfo, headers: Iterable[tuple[str, str]]) -> UserInfo:
    """The user the request acts as: ``requester`` when nothing is impersonated, else the impersonated user
    once every part of it was authorized (403 with upstream's message for the first part refused)."""
    pairs = list(headers)
    wanted = requests_of(pairs)
    if not wanted:
        return requester
    groups_given = any(k == GROUP_HEADER for k, _ in pairs)
    username, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for request in wanted:
        attrs = _attributes(requester, request)
        if request.kind == "ServiceAccount":
            username = USER_PREFIX + request.namespace + ":" + request.name
            if not groups_given:
                groups = [ALL_GROUP, f"{ALL_GROUP}:{request.namespace}"]
        elif request.kind == "User":
            username = request.name
        elif request.kind == "Group":
            groups.append(request.name)
        elif request.kind == "UserExtra":
            extra.setdefault(request.field_path, []).append(request.name)
        else:
            uid = request.name
        decision, reason = authorizer.authorize(attrs)
        if decision is not Decision.ALLOW:
            raise forbidden_error(attrs, reason)
    if username != ANONYMOUS_USER:
        if AUTHENTICATED_GROUP not in groups and UNAUTHENTICATED_GROUP not in groups:
            groups.append(AUTHENTICATED_GROUP)
    elif UNAUTHENTICATED_GROUP not in groups:
        groups.append(UNAUTHENTICATED_GROUP)
    return UserInfo(username, uid=uid, groups=tuple(groups), extra={k: tuple(v) for k, v in extra.items()})
