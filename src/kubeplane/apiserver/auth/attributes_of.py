"""From a request to its authorization :class:`Attributes`, and the check itself (upstream
``endpoints/request/requestinfo.go`` and ``endpoints/filters/authorization.go``, v1.37).

Both transports build attributes here, so a call over HTTP and the same call through the local client are
authorized alike. What upstream's RequestInfo makes of a request and kubeplane reproduces:

* a resource request's verb is get/list/watch/create/update/patch/delete/deletecollection (a nameless GET is a
  list, or a watch with ``watch=true``); a list or watch whose field selector requires ``metadata.name=<n>``
  (a valid path segment) is authorized for that name (``resourceNames`` rules apply, and the 403 names it);
* the namespace object itself (``/api/v1/namespaces/<n>[/status|/finalize]``) is in namespace ``<n>``;
* list, watch and deletecollection carry the request's ``fieldSelector`` / ``labelSelector`` as requirements
  (``AuthorizeWithSelectors``); a selector that does not parse is carried as none (the request itself will be
  refused by the handler);
* a non-resource request's verb is the lower-case HTTP method and its path the URL path.

The filter (:func:`authorize`) lets an ALLOW through and answers anything else with upstream's Forbidden.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from kubeplane.api import fields as apifields
from kubeplane.api import labels as apilabels
from kubeplane.apiserver import errors
from kubeplane.apiserver.tokens import UserInfo

from .authorizer import Attributes, Authorizer, Decision, Selector, forbidden

_CONNECT_CREATE = frozenset({"attach", "exec", "portforward"})
VERBS_WITH_SELECTORS = frozenset({"list", "watch", "deletecollection"})
_LABEL_OPS = {"==": "=", "gt": "gt", "lt": "lt"}


def field_requirements(selector: str) -> tuple[Selector, ...]:
    """``fields.ParseSelector(...).Requirements()`` as :class:`Selector` terms (``=`` or ``!=``)."""
    if not selector:
        return ()
    try:
        parsed = apifields.parse_selector(selector)
    except apifields.FieldSelectorError:
        return ()
    return tuple(Selector(r.field, r.operator, (r.value,)) for r in parsed.requirements)


def label_requirements(selector: str) -> tuple[Selector, ...]:
    """``labels.Parse(...).Requirements()`` as :class:`Selector` terms (``==`` read as ``=``)."""
    if not selector:
        return ()
    try:
        parsed = apilabels.parse(selector)
    except apilabels.SelectorError:
        return ()
    out: list[Selector] = []
    for r in parsed.requirements:
        op = str(r.operator.value)
        out.append(Selector(r.key, _LABEL_OPS.get(op, op), tuple(r.values)))
    return tuple(out)


def _valid_path_segment(name: str) -> bool:
    """``path.IsValidPathSegmentName``."""
    return name not in (".", "..") and "/" not in name and "%" not in name


def resource_attributes(
    user: UserInfo,
    *,
    verb: str,
    group: str,
    version: str,
    resource: str,
    namespace: str | None = None,
    name: str = "",
    subresource: str = "",
    path: str = "",
    field_selector: str = "",
    label_selector: str = "",
) -> Attributes:
    """The attributes of a resource request (see the module docstring for the rules applied)."""
    if verb in ("list", "watch") and not name and field_selector:
        exact = next(
            (s.values[0] for s in field_requirements(field_selector) if s.key == "metadata.name" and s.op == "="),
            None,
        )
        if exact is not None and _valid_path_segment(exact):
            name = exact
    ns = namespace or ""
    if not ns and group == "" and resource == "namespaces" and name:
        ns = name
    with_selectors = verb in VERBS_WITH_SELECTORS
    return Attributes(
        user=user,
        verb=verb,
        namespace=ns,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        name=name,
        resource_request=True,
        path=path,
        field_selector=field_requirements(field_selector) if with_selectors else (),
        label_selector=label_requirements(label_selector) if with_selectors else (),
    )


def non_resource_attributes(user: UserInfo, method: str, path: str) -> Attributes:
    """The attributes of a request for a path that is no resource (``/healthz``, ``/version``, ``/api``...)."""
    return Attributes(user=user, verb=method.lower(), path=path, resource_request=False)


class RequestInfo(Protocol):
    """What the HTTP transport's RequestInfo (``http/routes.py``) tells of a request."""

    @property
    def is_resource(self) -> bool: ...
    @property
    def verb(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def resource(self) -> str: ...
    @property
    def namespace(self) -> str | None: ...
    @property
    def name(self) -> str: ...
    @property
    def subresource(self) -> str: ...


def request_attributes(
    user: UserInfo, method: str, path: str, info: RequestInfo, query: Mapping[str, str]
) -> Attributes:
    """The attributes of an HTTP request: ``path`` is the URL's (decoded) path, ``query`` its parameters."""
    if not info.is_resource:
        return non_resource_attributes(user, method, path)
    return resource_attributes(
        user,
        verb=info.verb,
        group=info.group,
        version=info.version,
        resource=info.resource,
        namespace=info.namespace,
        name=info.name,
        subresource=info.subresource,
        path=path,
        field_selector=query.get("fieldSelector", ""),
        label_selector=query.get("labelSelector", ""),
    )


def authorize(authorizer: Authorizer, attrs: Attributes) -> None:
    """``WithAuthorization``: return on ALLOW; 403 (:func:`forbidden`) on DENY or NO_OPINION. Then, for a
    pod's attach, exec or portforward (``AuthorizePodWebsocketUpgradeCreatePermission``, on since v1.35), the
    pod REST's ``ensureAuthorizedForVerb``: a WebSocket upgrade is a GET, authorized as ``get``, so ``create``
    is required as well, refused as upstream's bare ``NewForbidden(pods, name, reason)``."""
    decision, reason = authorizer.authorize(attrs)
    if decision is not Decision.ALLOW:
        raise forbidden(attrs, reason)
    if _connect_needs_create(attrs):
        decision, reason = authorizer.authorize(replace(attrs, verb="create"))
        if decision is not Decision.ALLOW:
            raise errors.forbidden("", "pods", attrs.name, reason)


def _connect_needs_create(attrs: Attributes) -> bool:
    return (
        attrs.resource_request
        and attrs.verb != "create"
        and attrs.api_group == ""
        and attrs.resource == "pods"
        and attrs.subresource in _CONNECT_CREATE
    )
