"""TokenReview and SelfSubjectReview (authentication.k8s.io/v1): create-only kinds that are answered, not stored.

Upstream: ``pkg/registry/authentication/tokenreview/storage.go`` and ``selfsubjectreview/rest.go`` (v1.37).

* **TokenReview** (``POST /apis/authentication.k8s.io/v1/tokenreviews``, cluster-scoped): an empty
  ``spec.token`` is a 400 ``token is required for TokenReview in authentication``. The token is authenticated as
  a request carrying only ``Authorization: Bearer <token>`` would be, for ``spec.audiences`` (default: the API
  audiences): ``status.authenticated``, ``status.user`` (username, uid, groups, extra) and ``status.audiences``
  (those of the request the token is good for). A token that does not authenticate is not an error: the reply is
  201 with ``status: {user: {}, error: "invalid bearer token"}`` (apiserver's bearertoken authenticator's default
  error; kubeplane does not reproduce the aggregated reasons of upstream's JWT authenticator).
* **SelfSubjectReview**: ``status.userInfo`` of the requester, as ``kubectl auth whoami`` prints it.

Both reply with the request's object (``metadata.creationTimestamp: null``, as Go encodes a zero time) and code
201; nothing is written to the store. Admin tokens (the token file) are audience-agnostic upstream
(``authenticator.WrapAudienceAgnosticToken``): they authenticate only for audiences among the API audiences.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubeplane.api.resources import ResourceInfo

from . import errors
from .registry import Registry
from .tokens import AUTHENTICATED_GROUP, InvalidToken, UserInfo, authenticate, issuer_of

GROUP = "authentication.k8s.io"
INVALID_BEARER_TOKEN = "invalid bearer token"
_KINDS = frozenset({"TokenReview", "SelfSubjectReview"})


@dataclass(frozen=True)
class Authenticated:
    """What a token authenticates as, and for which of the requested audiences."""

    user: UserInfo
    audiences: tuple[str, ...]


TokenAuthenticator = Callable[[str, Sequence[str]], "Authenticated | None"]


def handles(resource: ResourceInfo) -> bool:
    """Whether a create of ``resource`` is a review answered here rather than an object stored."""
    return resource.group == GROUP and resource.kind in _KINDS


def authenticate_token(
    registry: Registry, static_tokens: Mapping[str, str | UserInfo], token: str, audiences: Sequence[str]
) -> Authenticated | None:
    """The union of the server's token authenticators, as a TokenReview runs it (None: not authenticated)."""
    api_audiences = issuer_of(registry).audiences
    targets = tuple(audiences) or api_audiences
    if token in static_tokens:
        common = tuple(a for a in targets if a in api_audiences)
        if not common:
            return None
        found = static_tokens[token]
        user = found if isinstance(found, UserInfo) else UserInfo(found, groups=("system:masters", AUTHENTICATED_GROUP))
        return Authenticated(user, common)
    try:
        claims = issuer_of(registry).verify(token, now=registry.now(), audiences=targets)
        user = authenticate(registry, token, audiences=targets)
    except InvalidToken:
        return None
    aud = claims.get("aud")
    token_audiences = [aud] if isinstance(aud, str) else list(aud or [])
    return Authenticated(user, tuple(a for a in targets if a in token_audiences))


def _user_info(user: UserInfo, *, extra_key: str = "extra") -> dict[str, Any]:
    """authentication/v1 ``UserInfo``: every field omitempty."""
    out: dict[str, Any] = {}
    if user.name:
        out["username"] = user.name
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out[extra_key] = {k: list(v) for k, v in user.extra.items()}
    return out


def _reply(body: Any, kind: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request(f"not a {kind}")
    found = body.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "kind": kind,
        "apiVersion": f"{GROUP}/v1",
        "metadata": {**metadata, "creationTimestamp": metadata.get("creationTimestamp")},
    }


def create_review(
    resource: ResourceInfo,
    body: Any,
    *,
    namespace: str | None,
    user: UserInfo | None,
    authenticator: TokenAuthenticator | None,
) -> dict[str, Any]:
    """The reply to a create of a review kind (see the module docstring)."""
    if namespace:
        raise errors.bad_request(f"namespace is not allowed on this type: {namespace}")
    reply = _reply(body, resource.kind)
    if resource.kind == "SelfSubjectReview":
        if user is None:
            raise errors.bad_request("no user present on request")
        reply["status"] = {"userInfo": _user_info(user)}
        return reply
    found_spec = body.get("spec")
    spec: dict[str, Any] = found_spec if isinstance(found_spec, dict) else {}
    token = spec.get("token") or ""
    if not token:
        raise errors.bad_request("token is required for TokenReview in authentication")
    audiences = [str(a) for a in spec.get("audiences") or []]
    reply["spec"] = dict(spec)
    found = authenticator(token, audiences) if authenticator is not None else None
    if found is None:
        reply["status"] = {"user": {}, "error": INVALID_BEARER_TOKEN}
        return reply
    status: dict[str, Any] = {"authenticated": True, "user": _user_info(found.user)}
    if found.audiences:
        status["audiences"] = list(found.audiences)
    reply["status"] = status
    return reply
