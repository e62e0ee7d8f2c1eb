"""Who the request being served is, for the code deep inside a write (admission, RBAC escalation checks).

kube-apiserver passes the user in the request's context; kubeplane does the same with a context variable, set
by each transport around the request's dispatch (the HTTP app for an authenticated request, the local client for
a component with an identity). ``None`` means the caller is the server itself or an in-process component without
an identity (the loopback client): it is trusted as upstream trusts its loopback client (system:masters).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from kubeplane.apiserver.tokens import UserInfo

from .authorizer import PRIVILEGED_GROUP

_REQUESTER: ContextVar[UserInfo | None] = ContextVar("kubeplane_requester", default=None)


def requester() -> UserInfo | None:
    """The user of the request being served; None for the server's own (trusted) calls."""
    return _REQUESTER.get()


def is_privileged(user: UserInfo | None) -> bool:
    """Whether checks that upstream skips for the loopback client or system:masters are skipped."""
    return user is None or PRIVILEGED_GROUP in user.groups


@contextmanager
def acting_as(user: UserInfo | None) -> Iterator[None]:
    """Serve what runs inside as ``user`` (restored afterwards, also on error)."""
    token = _REQUESTER.set(user)
    try:
        yield
    finally:
        _REQUESTER.reset(token)
