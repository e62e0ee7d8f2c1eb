"""A stand-in RBAC for the request chain's tests (the real one is auth/rbac.py), and a direct ASGI caller.

:class:`Grants` allows what a list of grants names, for a user name or any of the user's groups, and otherwise
has no opinion (as RBAC); it also answers ``rules_for`` so SelfSubjectRulesReview can be checked. The grants
mirror upstream's bootstrap policy where a test relies on it: system:public-info-viewer's paths for everyone,
system:basic-user's selfsubject*reviews and system:discovery's paths for system:authenticated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kubeplane.apiserver.auth.authorizer import Attributes, Decision
from kubeplane.apiserver.tokens import UserInfo


@dataclass(frozen=True)
class Grant:
    subject: str  # a user name or a group
    verbs: tuple[str, ...]
    resources: tuple[str, ...] = ()
    groups: tuple[str, ...] = ("*",)
    namespace: str = ""  # "" = every namespace (a ClusterRoleBinding)
    paths: tuple[str, ...] = ()
    names: tuple[str, ...] = ()

    def allows(self, attrs: Attributes) -> bool:
        user = attrs.user
        if self.subject != user.name and self.subject not in user.groups:
            return False
        if "*" not in self.verbs and attrs.verb not in self.verbs:
            return False
        if not attrs.resource_request:
            return any(p == attrs.path or (p.endswith("*") and attrs.path.startswith(p[:-1])) for p in self.paths)
        if self.namespace and attrs.namespace != self.namespace:
            return False
        resource = attrs.resource + (f"/{attrs.subresource}" if attrs.subresource else "")
        if "*" not in self.resources and resource not in self.resources:
            return False
        if "*" not in self.groups and attrs.api_group not in self.groups:
            return False
        return not self.names or attrs.name in self.names


PUBLIC_INFO = Grant(
    "system:unauthenticated", ("get",), paths=("/healthz", "/livez", "/readyz", "/version", "/version/")
)
PUBLIC_INFO_AUTHENTICATED = Grant(
    "system:authenticated", ("get",), paths=("/healthz", "/livez", "/readyz", "/version", "/version/")
)
BASIC_USER = Grant(
    "system:authenticated",
    ("create",),
    resources=("selfsubjectaccessreviews", "selfsubjectrulesreviews", "selfsubjectreviews"),
    groups=("authorization.k8s.io", "authentication.k8s.io"),
)
DISCOVERY = Grant(
    "system:authenticated",
    ("get",),
    paths=(
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
    ),
)
BOOTSTRAP = (PUBLIC_INFO, PUBLIC_INFO_AUTHENTICATED, BASIC_USER, DISCOVERY)


class Grants:
    def __init__(self, *grants: Grant) -> None:
        self.grants = [*BOOTSTRAP, *grants]
        self.asked: list[Attributes] = []

    def add(self, grant: Grant) -> None:
        self.grants.append(grant)

    def authorize(self, attrs: Attributes) -> tuple[Decision, str]:
        self.asked.append(attrs)
        for grant in self.grants:
            if grant.allows(attrs):
                return Decision.ALLOW, f"allowed by grant to {grant.subject}"
        return Decision.NO_OPINION, ""

    def rules_for(
        self, user: UserInfo, namespace: str
    ) -> tuple[list[dict[str, object]], list[dict[str, object]], bool, str]:
        resource: list[dict[str, object]] = []
        non_resource: list[dict[str, object]] = []
        for g in self.grants:
            if g.subject != user.name and g.subject not in user.groups:
                continue
            if g.paths:
                non_resource.append({"verbs": list(g.verbs), "nonResourceURLs": list(g.paths)})
            elif not g.namespace or g.namespace == namespace:
                resource.append({"verbs": list(g.verbs), "apiGroups": list(g.groups), "resources": list(g.resources)})
        return resource, non_resource, False, ""


async def call(
    app: Any,
    method: str,
    path: str,
    *,
    token: str | None = None,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
    body: Any = None,
) -> tuple[int, Any]:
    """One request straight into the ASGI app; the status and the decoded JSON answer (text if not JSON)."""
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    if token is not None:
        pairs.append(("Authorization", f"Bearer {token}"))
    raw = b"" if body is None else json.dumps(body).encode()
    if body is not None:
        pairs.append(("Content-Type", "application/json"))
    path_only, _, query = path.partition("?")
    scope = {
        "type": "http",
        "method": method,
        "path": path_only,
        "raw_path": path_only.encode(),
        "query_string": query.encode(),
        "headers": [(k.lower().encode(), v.encode()) for k, v in pairs],
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    status = 0
    chunks: list[bytes] = []

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    data = b"".join(chunks)
    try:
        return status, json.loads(data)
    except ValueError:
        return status, data.decode()
