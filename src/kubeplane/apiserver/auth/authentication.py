"""Who sent a request: the token file, ServiceAccount JWTs, else anonymous (kube-apiserver v1.37's chain).

Upstream builds (``pkg/kubeapiserver/authenticator/config.go``) ``union(tokenfile, serviceaccount JWT)``, wraps it
in ``group.NewAuthenticatedGroupAdder`` (every authenticated user gains ``system:authenticated``) and, with
anonymous auth enabled, in ``union.NewFailOnError(chain, anonymous)``: a request without credentials is
``system:anonymous`` in ``system:unauthenticated``, but a bearer token that does not authenticate is an error
(401), never anonymous. ``bearertoken.Authenticator`` only looks at an ``Authorization: Bearer <token>``
header; another scheme (Basic, ...) or an empty token counts as no credentials.

The token file is upstream's ``--token-auth-file`` CSV (``pkg/authentication/token/tokenfile``): ``token,user,
uid[,"group1,group2"]``; fewer than three columns is an error; a record with an empty token is skipped; a later
duplicate wins. The admin token of ``<data-dir>/admin.token`` stays what it was (``admin`` in system:masters).
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubeplane.apiserver import errors, tokens
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.tokens import UserInfo

from . import impersonation
from .authorizer import ANONYMOUS_USER, AUTHENTICATED_GROUP, PRIVILEGED_GROUP, UNAUTHENTICATED_GROUP, Authorizer

log = logging.getLogger("kubeplane.apiserver.auth")

ANONYMOUS = UserInfo(ANONYMOUS_USER, groups=(UNAUTHENTICATED_GROUP,))
"""``anonymous.NewAuthenticator``'s user."""


class TokenFileError(ValueError):
    """The token file cannot be read (upstream's text)."""


def admin_user(name: str) -> UserInfo:
    """The admin token's user, as kubeplane has always authenticated it."""
    return UserInfo(name, groups=(PRIVILEGED_GROUP, AUTHENTICATED_GROUP))


def parse_token_file(text: str, path: str = "") -> dict[str, UserInfo]:
    """``tokenfile.NewCSV``: token -> user (name, uid, groups split on ``,``), without system:authenticated (the
    group adder adds it when authenticating)."""
    found: dict[str, UserInfo] = {}
    try:
        records = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:
        raise TokenFileError(str(exc)) from None
    number = 0
    for record in records:
        if not record:  # encoding/csv skips empty lines
            continue
        if len(record) < 3:
            raise TokenFileError(
                f"token file '{path}' must have at least 3 columns (token, user name, user uid), found {len(record)}"
            )
        number += 1
        if record[0] == "":
            log.warning("empty token has been found in token file '%s', record number '%d'", path, number)
            continue
        if record[0] in found:
            log.warning("duplicate token has been found in token file '%s', record number '%d'", path, number)
        groups = tuple(record[3].split(",")) if len(record) >= 4 else ()
        found[record[0]] = UserInfo(record[1], uid=record[2], groups=groups)
    return found


def load_token_file(path: Path) -> dict[str, UserInfo]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise TokenFileError(f"token file '{path}': {exc.strerror}") from None
    return parse_token_file(text, str(path))


def with_authenticated_group(user: UserInfo) -> UserInfo:
    """``group.AuthenticatedGroupAdder``: add system:authenticated unless the user is anonymous or already in
    system:authenticated or system:unauthenticated."""
    if user.name == ANONYMOUS_USER:
        return user
    if AUTHENTICATED_GROUP in user.groups or UNAUTHENTICATED_GROUP in user.groups:
        return user
    return UserInfo(user.name, uid=user.uid, groups=(*user.groups, AUTHENTICATED_GROUP), extra=user.extra)


def static_users(static: Mapping[str, UserInfo | str]) -> dict[str, UserInfo]:
    """A token mapping with plain names (the admin token, as the app has always been given it) made users."""
    return {token: admin_user(u) if isinstance(u, str) else u for token, u in static.items()}


def bearer_token(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """``bearertoken.Authenticator``'s reading of the ``Authorization`` header: the token, or None when the
    request carries no bearer credentials (no header, another scheme, an empty token)."""
    for name, value in headers:
        if name.lower() != b"authorization":
            continue
        parts = value.decode("latin-1").strip().split(" ", 2)
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return None
        return parts[1]
    return None


class Authenticator:
    """The server's request authenticator. Stateless apart from the token file's users: the SA JWTs are
    checked against the registry (the ServiceAccount, and the pod or secret it is bound to, still exist)."""

    def __init__(self, registry: Registry, static: Mapping[str, UserInfo | str], *, anonymous: bool = True) -> None:
        self.registry = registry
        self.users = static_users(static)
        self.anonymous = anonymous

    def authenticate_token(self, token: str) -> UserInfo | None:
        """The user ``token`` authenticates (the token file first, then SA JWTs), or None."""
        user = self.users.get(token)
        if user is None:
            try:
                user = tokens.authenticate(self.registry, token)
            except tokens.InvalidToken as exc:
                log.debug("bearer token refused: %s", exc)
                return None
        return with_authenticated_group(user)

    def authenticate(
        self, headers: Iterable[tuple[bytes, bytes]], client_cert: ClientCertificate | None = None
    ) -> UserInfo:
        """The request's user; 401 for a bearer token that does not authenticate (and, with anonymous requests
        disabled, for a request without one). A verified client certificate comes first, as upstream's x509
        authenticator precedes the token authenticators."""
        if client_cert is not None:
            return with_authenticated_group(x509_user(client_cert))
        token = bearer_token(headers)
        if token is None:
            if self.anonymous:
                return ANONYMOUS
            raise errors.unauthorized()
        user = self.authenticate_token(token)
        if user is None:
            raise errors.unauthorized()
        return user


ClientCertificate = dict[str, Any]
"""A verified peer certificate as ``ssl.SSLSocket.getpeercert()`` decodes it (``subject``: RDN tuples)."""


def x509_user(cert: ClientCertificate) -> UserInfo:
    """``x509.CommonNameUserConversion``: the subject's CommonName is the user, its Organizations the groups;
    a certificate without a CommonName authenticates nobody (401)."""
    names: list[str] = []
    organizations: list[str] = []
    for rdn in cert.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                names.append(str(value))
            elif key == "organizationName":
                organizations.append(str(value))
    if not names or not names[0]:
        raise errors.unauthorized()
    return UserInfo(names[0], groups=tuple(organizations))


def request_user(
    authenticator: Authenticator,
    authorizer: Authorizer,
    raw_headers: Sequence[tuple[bytes, bytes]],
    client_cert: ClientCertificate | None = None,
) -> UserInfo:
    """The HTTP filters ``WithAuthentication`` then ``WithImpersonation``: who a request (its raw ASGI headers
    and verified client certificate) acts as."""
    user = authenticator.authenticate(raw_headers, client_cert)
    if any(k[:12].lower() == b"impersonate-" for k, _ in raw_headers):  # decoded only when impersonating
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in raw_headers]
        user = impersonation.impersonate(authorizer, user, headers)
    return user
