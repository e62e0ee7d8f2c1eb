"""One table of resource request handlers, keyed by (verb, subresource), that every transport calls.

The HTTP app (:mod:`kubeplane.apiserver.http.app`) and the in-process client (:mod:`kubeplane.client.local`)
both turn a request into a :class:`Call` and hand it to the same table, so each verb and subresource is written
once (starlette's ``Router`` is the model: one table of routes that every entry point uses). What stays with a
transport is its own:

* HTTP: the URL (which resource, its 404s), the body (size limit, media type, decoding: 413, 415, 400), the
  query (options, ``dryRun``, ``fieldValidation``), Table output, status codes and headers, watch streaming.
* local: no sockets and no JSON round trip; results are copied for the caller unless the handler built them
  for this call alone (:attr:`Route.fresh`); watch events are shared read-only with the cache.

The checks, in this order on both transports (kube-apiserver's request chain):

1. :func:`check_scope`: the request addresses something, i.e. a subresource the resource has, a namespace for a
   namespaced object, none for a cluster-scoped one (404).
2. :func:`check_verb`: the resource serves the verb; update and patch name an object (405).
3. :func:`find_route`: the table has (verb, subresource) and the route applies to this resource (405).
4. the route's handler.

HTTP checks 1 as it resolves the URL, reads a create, update or patch body between 2 and 3 and a delete body
between 3 and 4, so a bad body of a verb that carries one is reported before an unsupported subresource, as it
always was. A call that already carries its body takes :func:`resolve` (1 to 3) or :func:`dispatch` (all four).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubeplane.api.meta import InvalidKeyError, check_key_segments
from kubeplane.api.patch import json_merge_patch
from kubeplane.api.resources import ResourceInfo

from . import apply, errors, offload, reviews, subresources, tokenrequest
from .auth import noderestriction
from .auth import reviews as authorization_reviews
from .deletion import DeleteOptions, delete_collection, delete_object
from .listing import ListOptions, WatchOptions, list_objects, open_watch
from .registry import Registry
from .watchcache import CacheWatcher, Obj

_METHODS = {
    "get": "GET",
    "list": "GET",
    "watch": "GET",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}
_NO_LIST_OPTIONS = ListOptions()
_NO_WATCH_OPTIONS = WatchOptions()
_NO_DELETE_OPTIONS = DeleteOptions()


class BodyChecks(Protocol):
    """Checks of a request body beyond validation: HTTP's ``fieldValidation`` (unknown and duplicate fields,
    which only JSON text can carry; unknown fields are pruned). The local transport has none: its bodies are
    dicts a component built."""

    def check_body(self, resource: ResourceInfo, body: Any) -> Any:
        """A create or update body: report its problems, return it without unknown fields."""
        ...

    def check_patch(self, resource: ResourceInfo) -> None:
        """A patch body, before it is applied (duplicate fields)."""
        ...

    def check_patched(self, resource: ResourceInfo, obj: Obj) -> Obj:
        """The patched object, before it is validated: decode it into the kind's Go types, report unknown fields,
        return it as decoding keeps it."""
        ...

    def check_patched_kind(self, group: str, version: str, kind: str, obj: Obj) -> Obj:
        """A patched object of a subresource's own kind (a Scale): decode it, return it as decoding keeps it."""
        ...


@dataclass(slots=True)
class Call:
    """One resource request as a transport hands it over. ``body`` is decoded (create and update: the object;
    patch: the patch, of media type ``patch_type``; binding and eviction: their object). ``method`` and
    ``path`` name the request in 405 messages (HTTP's own; the local transport's are derived)."""

    verb: str
    resource: ResourceInfo
    namespace: str | None
    name: str = ""
    subresource: str = ""
    body: Any = None
    patch_type: str = ""
    dry_run: bool = False
    list_options: ListOptions = _NO_LIST_OPTIONS  # list, deletecollection
    watch_options: WatchOptions = _NO_WATCH_OPTIONS
    delete_options: DeleteOptions = _NO_DELETE_OPTIONS  # delete, deletecollection
    checks: BodyChecks | None = None
    method: str = ""
    path: str = ""
    manager: str | None = "kubeplane"
    """The field manager of a write (HTTP: ``?fieldManager=`` or the User-Agent's prefix; local: kubeplane, as
    the HTTP client's User-Agent); None leaves managedFields untouched."""
    field_manager_given: bool = False  # ?fieldManager= was sent (an apply requires it)
    force: bool = False  # ?force=true (apply only)
    created: bool = False  # set by an apply that created its object: the reply is a 201
    user: Any = None  # tokens.UserInfo of the requester (SelfSubjectReview); None in-process
    authenticator: reviews.TokenAuthenticator | None = None  # the server's token authentication (TokenReview)

    def not_allowed(self) -> errors.APIError:
        """405 naming the request as it was sent (HTTP) or would have been (local)."""
        method = self.method or _METHODS.get(self.verb, self.verb.upper())
        path = self.path or self.resource.rest_path(self.namespace, self.name, self.subresource)
        return errors.method_not_allowed(method, path)


Handler = Callable[[Registry, Call], Awaitable[Any]]
"""A route's handler: the reply's body (for a watch, the opened
:class:`~kubeplane.apiserver.watchcache.CacheWatcher`). Handlers that only forward to the registry are plain
functions returning its coroutine, so an in-process call costs no coroutine more than the registry's own."""


@dataclass(frozen=True, slots=True)
class Route:
    """``code``: the status of a success. ``fresh``: the body is built for this call alone (a Status, a Scale; a
    written object: create, update and patch answer the object they built from the call's own body and a private
    decode of the stored one, never the watch cache's), so the caller may keep it without a copy. ``applies``:
    whether the route serves this call's resource (None: every resource that has the subresource); a route that
    does not apply is a 405, as a missing one. ``tabular``: the body is the resource's own objects, which HTTP
    renders as a Table when asked."""

    handler: Handler
    code: int = 200
    fresh: bool = False
    applies: Callable[[Call], bool] | None = None
    tabular: bool = False


def check_scope(resource: ResourceInfo, *, verb: str, namespace: str | None, subresource: str) -> None:
    """404 unless the call addresses something: a subresource the resource has, a namespace for one namespaced
    object (lists, watches and deletecollection may span namespaces), no namespace for a cluster-scoped one."""
    if subresource and resource.subresource(subresource) is None:
        raise errors.no_such_path()
    if resource.namespaced and namespace is None and verb not in ("list", "watch", "deletecollection"):
        raise errors.no_such_path()
    if not resource.namespaced and namespace is not None:
        raise errors.no_such_path()


def check_verb(call: Call) -> None:
    """405 unless the resource serves the verb (subresources have their own routes) and an update or patch
    names its object."""
    if (call.verb not in call.resource.verbs and not call.subresource) or (
        call.verb in ("update", "patch") and not call.name
    ):
        raise call.not_allowed()


def find_route(call: Call) -> Route:
    """The route of (verb, subresource) that applies to the call; 405 if there is none, 400 for a name or
    namespace no key can hold."""
    route = ROUTES.get((call.verb, call.subresource))
    if route is None or (route.applies is not None and not route.applies(call)):
        raise call.not_allowed()
    try:  # a name or namespace that cannot be a key segment ('%', '/', '..') is a 400, as upstream's key funcs
        check_key_segments(namespace=call.namespace, name=call.name)
    except InvalidKeyError as exc:
        raise errors.bad_request(str(exc)) from None
    return route


def resolve(call: Call) -> Route:
    """Steps 1 to 3 of the module's order, for a call that carries its body: the route to run it."""
    check_scope(call.resource, verb=call.verb, namespace=call.namespace, subresource=call.subresource)
    check_verb(call)
    return find_route(call)


async def dispatch(registry: Registry, call: Call) -> tuple[Route, Any]:
    """Every step of the module's order, for a call that carries its body: the route taken and its body."""
    route = resolve(call)
    return route, await route.handler(registry, call)


# -- handlers ----------------------------------------------------------------------------------------------------


def _namespaced(call: Call) -> bool:
    """Binding, eviction and scale address one object of a namespaced resource (check_scope already asks for the
    namespace; the handlers rely on it)."""
    return call.namespace is not None


def _collection(call: Call) -> bool:
    return not call.name


def _namespaces(call: Call) -> bool:
    return call.resource.group == "" and call.resource.plural == "namespaces"


def _get(registry: Registry, call: Call) -> Awaitable[Obj]:
    return registry.get(call.resource, call.namespace, call.name)


def _get_scale(registry: Registry, call: Call) -> Awaitable[Obj]:
    assert call.namespace is not None  # _namespaced
    return subresources.get_scale(registry, call.resource, call.namespace, call.name)


def _list(registry: Registry, call: Call) -> Awaitable[Obj]:
    call.list_options.validate()
    return list_objects(registry, call.resource, call.namespace, call.list_options)


async def _watch(registry: Registry, call: Call) -> CacheWatcher:
    """Opens the watcher (its initial events queued); streaming it is the transport's."""
    call.watch_options.validate()
    return open_watch(registry, call.resource, call.namespace, call.watch_options)


async def _create(registry: Registry, call: Call) -> Obj:
    body = call.body if call.checks is None else await offload.run(call.checks.check_body, call.resource, call.body)
    if reviews.handles(call.resource):  # answered, not stored
        return reviews.create_review(
            call.resource, body, namespace=call.namespace, user=call.user, authenticator=call.authenticator
        )
    if authorization_reviews.handles(call.resource):  # answered by the server's authorizer, not stored
        return authorization_reviews.create_review(
            registry, call.resource, body, namespace=call.namespace, user=call.user
        )
    return await registry.create(call.resource, call.namespace, body, dry_run=call.dry_run, manager=call.manager)


async def _bind(registry: Registry, call: Call) -> Obj:
    assert call.namespace is not None  # _namespaced
    await noderestriction.admit_subresource_create(
        registry, call.resource, "binding", call.namespace, call.name, call.body
    )
    return await subresources.bind(registry, call.namespace, call.name, call.body, dry_run=call.dry_run)


async def _evict(registry: Registry, call: Call) -> Obj:
    assert call.namespace is not None  # _namespaced
    await noderestriction.admit_subresource_create(
        registry, call.resource, "eviction", call.namespace, call.name, call.body
    )
    return await subresources.evict(registry, call.namespace, call.name, call.body, dry_run=call.dry_run)


async def _token(registry: Registry, call: Call) -> Obj:
    assert call.namespace is not None  # _namespaced
    await noderestriction.admit_subresource_create(
        registry, call.resource, "token", call.namespace, call.name, call.body
    )
    return await tokenrequest.create_token(registry, call.namespace, call.name, call.body)


async def _update(registry: Registry, call: Call) -> Obj:
    body = call.body if call.checks is None else await offload.run(call.checks.check_body, call.resource, call.body)
    return await registry.update(
        call.resource,
        call.namespace,
        call.name,
        body,
        subresource=call.subresource or None,
        dry_run=call.dry_run,
        manager=call.manager,
    )


def _update_scale(registry: Registry, call: Call) -> Awaitable[Obj]:
    assert call.namespace is not None  # _namespaced
    return subresources.update_scale(
        registry, call.resource, call.namespace, call.name, call.body, dry_run=call.dry_run, manager=call.manager
    )


def _finalize(registry: Registry, call: Call) -> Awaitable[Obj]:
    return subresources.finalize_namespace(registry, call.resource, call.name, call.body, dry_run=call.dry_run)


async def _patch(registry: Registry, call: Call) -> Obj:
    checks, resource = call.checks, call.resource
    if call.patch_type == apply.APPLY_PATCH:
        return await apply.apply_patch(registry, call)
    apply.check_patch_options(call)
    if checks is not None:
        await offload.run(checks.check_patch, resource)
    return await subresources.patch_object(
        registry,
        resource,
        call.namespace,
        call.name,
        content_type=call.patch_type,
        patch=call.body,
        subresource=call.subresource or None,
        dry_run=call.dry_run,
        check=None if checks is None else (lambda obj: checks.check_patched(resource, obj)),
        manager=call.manager,
    )


async def _patch_scale(registry: Registry, call: Call) -> Obj:
    """A merge patch of the Scale view; other patch types are 415 (upstream takes every patch type here)."""
    assert call.namespace is not None  # _namespaced
    if call.patch_type != subresources.MERGE_PATCH:
        raise errors.unsupported_media_type(call.patch_type)
    current = await subresources.get_scale(registry, call.resource, call.namespace, call.name)
    scale = json_merge_patch(current, call.body)
    if call.checks is not None and isinstance(scale, dict):
        scale = call.checks.check_patched_kind("autoscaling", "v1", "Scale", scale)
    return await subresources.update_scale(
        registry, call.resource, call.namespace, call.name, scale, dry_run=call.dry_run, manager=call.manager
    )


async def _delete(registry: Registry, call: Call) -> Obj:
    _, result = await delete_object(registry, call.resource, call.namespace, call.name, call.delete_options)
    return result  # its status is always 200 (no 202: kubeplane does not take orphanDependents)


def _delete_collection(registry: Registry, call: Call) -> Awaitable[Obj]:
    return delete_collection(registry, call.resource, call.namespace, call.list_options, call.delete_options)


ROUTES: Mapping[tuple[str, str], Route] = {
    ("get", ""): Route(_get, tabular=True),
    ("get", "status"): Route(_get, tabular=True),
    ("get", "scale"): Route(_get_scale, fresh=True, applies=_namespaced),
    ("list", ""): Route(_list, tabular=True),
    ("watch", ""): Route(_watch, tabular=True),
    ("create", ""): Route(_create, code=201, fresh=True, applies=_collection),
    ("create", "binding"): Route(_bind, code=201, fresh=True, applies=_namespaced),
    ("create", "eviction"): Route(_evict, code=201, fresh=True, applies=_namespaced),
    ("create", "token"): Route(_token, code=201, fresh=True, applies=_namespaced),
    ("update", ""): Route(_update, fresh=True),
    ("update", "status"): Route(_update, fresh=True),
    ("update", "scale"): Route(_update_scale, fresh=True, applies=_namespaced),
    ("update", "finalize"): Route(_finalize, applies=_namespaces),
    ("patch", ""): Route(_patch, fresh=True),
    ("patch", "status"): Route(_patch, fresh=True),
    ("patch", "scale"): Route(_patch_scale, fresh=True, applies=_namespaced),
    ("delete", ""): Route(_delete),
    ("deletecollection", ""): Route(_delete_collection),
}
"""Every (verb, subresource) the API server serves on a resource; anything else is a 405."""
