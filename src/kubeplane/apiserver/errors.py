"""API errors as Kubernetes ``Status`` objects, with upstream's reasons, codes and messages.

Every error a request can cause is an :class:`APIError`; the HTTP layer serialises its ``status`` as the
response body. Constructors mirror ``k8s.io/apimachinery/pkg/api/errors`` (NewNotFound, NewAlreadyExists,
NewConflict, NewInvalid, ...) so messages read exactly as kube-apiserver's.

Invariant: every ``Status`` this server writes is built by :func:`status_object`, so its keys come in the
declaration order of ``metav1.Status`` / ``StatusDetails`` / ``StatusCause`` (apimachinery pkg/apis/meta/v1
types.go) with Go's ``omitempty`` applied. Encoded by the HTTP layer's Go-compatible writer, a Status is then
byte for byte what kube-apiserver sends (clients and tests that compare raw bodies see no difference).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubeplane.api.typed import go_json_type
from kubeplane.api.validation.field import Error as FieldError
from kubeplane.api.validation.field import dedupe


class APIError(Exception):
    def __init__(
        self,
        *,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers: list[tuple[bytes, bytes]] | None = None
        """Response headers sent with the Status (the request's ``Warning`` headers)."""

    @property
    def status(self) -> dict[str, Any]:
        return status_object("Failure", message=self.message, reason=self.reason, details=self.details, code=self.code)


_DETAILS_ORDER = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")
_CAUSE_ORDER = ("reason", "message", "field")


def status_details(details: dict[str, Any]) -> dict[str, Any]:
    """``details`` in ``StatusDetails``' field order, its empty fields (and its causes') left out as ``omitempty``
    does. An empty dict stays an empty object: ``details`` is a pointer, omitted only when nil."""
    out: dict[str, Any] = {}
    for key in _DETAILS_ORDER:
        value = details.get(key)
        if key == "causes" and value:
            value = [{k: c[k] for k in _CAUSE_ORDER if c.get(k)} for c in value]
        if value:
            out[key] = value
    return out


def status_object(
    status: str,
    *,
    message: str = "",
    reason: str = "",
    details: dict[str, Any] | None = None,
    code: int = 0,
) -> dict[str, Any]:
    """A ``metav1.Status`` in upstream's field order: ``kind, apiVersion, metadata, status, message, reason,
    details, code``; ``metadata`` (a struct) is always there, the rest only when set (``omitempty``)."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}}
    if status:
        body["status"] = status
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = status_details(details)
    if code:
        body["code"] = code
    return body


def _details(group: str, resource: str, name: str) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": resource}
    if name:
        details = {"name": name, **details}
    if group:
        details["group"] = group
    return details


def _qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> APIError:
    return APIError(
        code=404,
        reason="NotFound",
        message=f'{_qualified(group, resource)} "{name}" not found',
        details=_details(group, resource, name),
    )


NO_SUCH_PATH = "the server could not find the requested resource"


def no_such_path() -> APIError:
    """404 for a request that addresses nothing the server serves (upstream's generic NotFound)."""
    return APIError(code=404, reason="NotFound", message=NO_SUCH_PATH, details={})


def already_exists(group: str, resource: str, name: str) -> APIError:
    return APIError(
        code=409,
        reason="AlreadyExists",
        message=f'{_qualified(group, resource)} "{name}" already exists',
        details=_details(group, resource, name),
    )


def conflict(group: str, resource: str, name: str, why: str) -> APIError:
    return APIError(
        code=409,
        reason="Conflict",
        message=f'Operation cannot be fulfilled on {_qualified(group, resource)} "{name}": {why}',
        details=_details(group, resource, name),
    )


OPTIMISTIC_LOCK = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(group: str, kind: str, name: str, errors: Sequence[FieldError]) -> APIError:
    """422 with one cause per field error (upstream NewInvalid)."""
    causes = [{"reason": str(e.type), "message": e.error_body(), "field": e.field} for e in errors]
    shown = dedupe(errors)  # ErrorList.ToAggregate: each message once (a cause may repeat)
    if len(shown) == 1:
        summary = str(shown[0])
    else:
        summary = "[" + ", ".join(str(e) for e in shown) + "]"
    details: dict[str, Any] = {"name": name, "kind": kind, "causes": causes}
    if group:
        details["group"] = group
    return APIError(
        code=422,
        reason="Invalid",
        message=f'{_qualified(group, kind)} "{name}" is invalid: {summary}',
        details=details,
    )


def bad_request(message: str) -> APIError:
    return APIError(code=400, reason="BadRequest", message=message)


json_type = go_json_type
"""The JSON type name Go's decoder reports (``cannot unmarshal array into ...``): one home, in api.typed."""


def cannot_unmarshal(value: Any, *, field: str, go_type: str) -> APIError:
    """400 as upstream's JSON decoding of a field of the wrong type: ``field`` is Go's ``Struct.json.path`` (the
    innermost struct, then the path from the root), ``go_type`` the Go type it wanted."""
    return bad_request(f"json: cannot unmarshal {json_type(value)} into Go struct field {field} of type {go_type}")


def unauthorized() -> APIError:
    return APIError(code=401, reason="Unauthorized", message="Unauthorized")


def forbidden(group: str, resource: str, name: str, why: str) -> APIError:
    """``errors.NewForbidden``: no resource (a non-resource path) reads ``forbidden: ...``."""
    if not resource:
        prefix = "forbidden"
    elif name:
        prefix = f'{_qualified(group, resource)} "{name}" is forbidden'
    else:
        prefix = f"{_qualified(group, resource)} is forbidden"
    return APIError(code=403, reason="Forbidden", message=f"{prefix}: {why}", details=_details(group, resource, name))


def method_not_allowed(method: str, what: str) -> APIError:
    return APIError(
        code=405,
        reason="MethodNotAllowed",
        message=f"the server does not allow this method on the requested resource ({method} {what})",
    )


def not_acceptable(accept: str) -> APIError:
    return APIError(
        code=406,
        reason="NotAcceptable",
        message=f'only the following media types are accepted: application/json, application/yaml (got "{accept}")',
    )


def gone(message: str) -> APIError:
    """410 Expired, as for a too-old resourceVersion or an expired continue token."""
    return APIError(code=410, reason="Expired", message=message)


def too_large(limit: int) -> APIError:
    return APIError(
        code=413,
        reason="RequestEntityTooLarge",
        message=f"Request entity too large: limit is {limit}",
    )


def unsupported_media_type(content_type: str) -> APIError:
    return APIError(
        code=415,
        reason="UnsupportedMediaType",
        message=f"the body of the request was in an unknown format - accepted media types include: "
        f'application/json, application/json-patch+json, application/merge-patch+json (got "{content_type}")',
    )


def too_many_requests(message: str, *, retry_after: int = 0) -> APIError:
    """upstream NewTooManyRequests: ``details`` always set (``{}`` when there is no retry time)."""
    return APIError(code=429, reason="TooManyRequests", message=message, details={"retryAfterSeconds": retry_after})


def timeout(message: str, *, retry_after: int = 0) -> APIError:
    """upstream NewTimeoutError: 504 ``Timeout: <message>``, ``details`` always set."""
    return APIError(
        code=504, reason="Timeout", message=f"Timeout: {message}", details={"retryAfterSeconds": retry_after}
    )


def too_large_resource_version(requested: int, current: int, *, retry_after: int = 0) -> APIError:
    """apiserver storage.NewTooLargeResourceVersionError: a Timeout with the ResourceVersionTooLarge cause, which
    client-go's reflector looks for (``apierrors.IsTooLargeResourceVersion``) to fall back to a fresh list."""
    error = timeout(f"Too large resource version: {requested}, current: {current}", retry_after=retry_after)
    assert error.details is not None
    error.details["causes"] = [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]
    return error


def internal(message: str) -> APIError:
    """upstream NewInternalError: the error's text also as the one cause."""
    return APIError(
        code=500,
        reason="InternalError",
        message=f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )
