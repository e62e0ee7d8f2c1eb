"""Errors a Client raises: the server's ``Status`` as an exception, one class per reason a caller handles.

Both transports raise exactly these, with the same ``status`` body, so code behaves the same over HTTP and
in-process.
"""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Failure to talk to the server at all (connection refused, bad kubeconfig, ...)."""


class APIStatusError(ClientError):
    """The server answered with a failure ``Status``."""

    def __init__(self, status: dict[str, Any]) -> None:
        self.status = status
        self.code = int(status.get("code") or 0)
        self.reason = str(status.get("reason") or "")
        super().__init__(f"{self.code} {self.reason}: {status.get('message', '')}")

    @property
    def message(self) -> str:
        return str(self.status.get("message", ""))


class NotFoundError(APIStatusError):
    pass


class AlreadyExistsError(APIStatusError):
    pass


class ConflictError(APIStatusError):
    pass


class GoneError(APIStatusError):
    """410: the resourceVersion is too old (re-list), or a continue token expired."""


class InvalidError(APIStatusError):
    pass


class TooManyRequestsError(APIStatusError):
    pass


class ForbiddenError(APIStatusError):
    pass


def error_for(status: dict[str, Any]) -> APIStatusError:
    code, reason = int(status.get("code") or 0), status.get("reason")
    if code == 404:
        return NotFoundError(status)
    if code == 409:
        return AlreadyExistsError(status) if reason == "AlreadyExists" else ConflictError(status)
    if code == 410:
        return GoneError(status)
    if code == 422:
        return InvalidError(status)
    if code == 429:
        return TooManyRequestsError(status)
    if code == 403:
        return ForbiddenError(status)
    return APIStatusError(status)
