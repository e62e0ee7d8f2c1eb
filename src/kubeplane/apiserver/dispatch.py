"""One table of resource request handlers, keyed by (verb, subresource), that every transport calls.

The HTTP app (:mod:`kubeplane.apiserver.http.app`) and the in-process client (:mod:`kubeplane.client.local`)
both turn a request into a :class:`Call` and hand it to the same table, so each verb and subresource is written
once (starlette's ``Router`` is the model: one table of routes that every entry point uses). What stays with a
transport is its own:

* HTTP: the URL (which resource, its 404s), the body (size limit, media type, decoding: 413, 415, 400), the
  query (options, ``dryRun``, ``fieldValidation``), Table output, status codes and headers, watch streaming.
* local: no sockets and no JSON round trip; results are copied for the caller unless the handler built them
  for this call alone (:attr:`Reply.fresh`); watch events are shared read-only with the cache.

The checks, in this order on both transports (kube-apiserver's request chain):

1. :func:`check_scope`: the request addresses something, i.e. a subresource the resource has, a namespace for a
   namespaced object, none for a cluster-scoped one (404).
2. :func:`check_verb`: the resource serves the verb; update and patch name an object (405).
3. :func:`find_route`: the table has (verb, subresource) and the route applies to this resource (405).
4. the route's handler.

HTTP reads a create, update or patch body between 2 and 3 and a delete body between 3 and 4, so a bad body of
a verb that carries one is reported before an unsupported subresource, as it always was; :func:`dispatch` runs
2 to 4 for a transport whose call already carries its body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from kubeplane.api.patch import json_merge_patch
from kubeplane.api.resources import ResourceInfo

from . import errors, subresources
from .deletion import DeleteOptions, delete_collection, delete_object
from .listing import ListOptions, WatchOptions, list_objects, open_watch
from .registry import Registry
from .watchcache import Obj

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
        """The patched object, before it is validated: report unknown fields, return it pruned."""
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

    def not_allowed(self) -> errors.APIError:
        """405 naming the request as it was sent (HTTP) or would have been (local)."""
        method = self.method or _METHODS.get(self.verb, self.verb.upper())
        path = self.path or rest_path(self.resource, self.namespace, self.name, self.subresource)
        return errors.method_not_allowed(method, path)


@dataclass(frozen=True, slots=True)
class Reply:
    """A handler's answer: the status code and body (for a watch, the opened
    :class:`~kubeplane.apiserver.watchcache.CacheWatcher`). ``fresh``: the body was built for this call alone
    (a Status, a Scale), so the caller may keep it without a copy."""

    code: int
    body: Any
    fresh: bool = False


Handler = Callable[[Registry, Call], Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class Route:
    """``applies``: whether the route serves this call's resource (None: every resource that has the
    subresource); a route that does not apply is a 405, as a missing one. ``tabular``: the reply is the
    resource's own objects, which HTTP renders as a Table when asked."""

    handler: Handler
    applies: Callable[[Call], bool] | None = None
    tabular: bool = False


def rest_path(resource: ResourceInfo, namespace: str | None, name: str = "", subresource: str = "") -> str:
    """The request path of a call, as the HTTP transport builds it."""
    parts = [f"/api/{resource.version}" if not resource.group else f"/apis/{resource.group}/{resource.version}"]
    if resource.namespaced and namespace:
        parts.append(f"namespaces/{quote(namespace, safe='')}")
    parts.append(resource.plural)
    if name:
        parts.append(quote(name, safe=""))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


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
    """The route of (verb, subresource) that applies to the call; 405 if there is none."""
    route = ROUTES.get((call.verb, call.subresource))
    if route is None or (route.applies is not None and not route.applies(call)):
        raise call.not_allowed()
    return route


async def dispatch(registry: Registry, call: Call) -> Reply:
    """Steps 2 to 4 of the module's order, for a call that carries its body (step 1 is the transport's, on the
    resource it resolved)."""
    check_verb(call)
    return await find_route(call).handler(registry, call)


# -- handlers ----------------------------------------------------------------------------------------------------


def _namespaced(call: Call) -> bool:
    """Binding, eviction and scale address one object of a namespaced resource (check_scope already asks for the
    namespace; the handlers rely on it)."""
    return call.namespace is not None


def _collection(call: Call) -> bool:
    return not call.name


def _namespaces(call: Call) -> bool:
    return call.resource.group == "" and call.resource.plural == "namespaces"


async def _get(registry: Registry, call: Call) -> Reply:
    return Reply(200, await registry.get(call.resource, call.namespace, call.name))


async def _get_scale(registry: Registry, call: Call) -> Reply:
    assert call.namespace is not None  # _namespaced
    return Reply(200, await subresources.get_scale(registry, call.resource, call.namespace, call.name), fresh=True)


async def _list(registry: Registry, call: Call) -> Reply:
    call.list_options.validate()
    return Reply(200, await list_objects(registry, call.resource, call.namespace, call.list_options))


async def _watch(registry: Registry, call: Call) -> Reply:
    """Opens the watcher (its initial events queued); streaming it is the transport's."""
    call.watch_options.validate()
    return Reply(200, open_watch(registry, call.resource, call.namespace, call.watch_options))


async def _create(registry: Registry, call: Call) -> Reply:
    body = call.body if call.checks is None else call.checks.check_body(call.resource, call.body)
    return Reply(201, await registry.create(call.resource, call.namespace, body, dry_run=call.dry_run))


async def _bind(registry: Registry, call: Call) -> Reply:
    assert call.namespace is not None  # _namespaced
    return Reply(201, await subresources.bind(registry, call.namespace, call.name, call.body), fresh=True)


async def _evict(registry: Registry, call: Call) -> Reply:
    assert call.namespace is not None  # _namespaced
    return Reply(201, await subresources.evict(registry, call.namespace, call.name, call.body), fresh=True)


async def _update(registry: Registry, call: Call) -> Reply:
    body = call.body if call.checks is None else call.checks.check_body(call.resource, call.body)
    result = await registry.update(
        call.resource, call.namespace, call.name, body, subresource=call.subresource or None, dry_run=call.dry_run
    )
    return Reply(200, result)


async def _update_scale(registry: Registry, call: Call) -> Reply:
    assert call.namespace is not None  # _namespaced
    scale = await subresources.update_scale(registry, call.resource, call.namespace, call.name, call.body)
    return Reply(200, scale, fresh=True)


async def _finalize(registry: Registry, call: Call) -> Reply:
    return Reply(200, await subresources.finalize_namespace(registry, call.resource, call.name, call.body))


async def _patch(registry: Registry, call: Call) -> Reply:
    checks, resource = call.checks, call.resource
    if checks is not None:
        checks.check_patch(resource)
    result = await subresources.patch_object(
        registry,
        resource,
        call.namespace,
        call.name,
        content_type=call.patch_type,
        patch=call.body,
        subresource=call.subresource or None,
        dry_run=call.dry_run,
        check=None if checks is None else (lambda obj: checks.check_patched(resource, obj)),
    )
    return Reply(200, result)


async def _patch_scale(registry: Registry, call: Call) -> Reply:
    """A merge patch of the Scale view; other patch types are 415 (upstream takes every patch type here)."""
    assert call.namespace is not None  # _namespaced
    if call.patch_type != subresources.MERGE_PATCH:
        raise errors.unsupported_media_type(call.patch_type)
    current = await subresources.get_scale(registry, call.resource, call.namespace, call.name)
    scale = json_merge_patch(current, call.body)
    updated = await subresources.update_scale(registry, call.resource, call.namespace, call.name, scale)
    return Reply(200, updated, fresh=True)


async def _delete(registry: Registry, call: Call) -> Reply:
    code, result = await delete_object(registry, call.resource, call.namespace, call.name, call.delete_options)
    return Reply(code, result)


async def _delete_collection(registry: Registry, call: Call) -> Reply:
    result = await delete_collection(registry, call.resource, call.namespace, call.list_options, call.delete_options)
    return Reply(200, result)


ROUTES: Mapping[tuple[str, str], Route] = {
    ("get", ""): Route(_get, tabular=True),
    ("get", "status"): Route(_get, tabular=True),
    ("get", "scale"): Route(_get_scale, applies=_namespaced),
    ("list", ""): Route(_list, tabular=True),
    ("watch", ""): Route(_watch, tabular=True),
    ("create", ""): Route(_create, applies=_collection),
    ("create", "binding"): Route(_bind, applies=_namespaced),
    ("create", "eviction"): Route(_evict, applies=_namespaced),
    ("update", ""): Route(_update),
    ("update", "status"): Route(_update),
    ("update", "scale"): Route(_update_scale, applies=_namespaced),
    ("update", "finalize"): Route(_finalize, applies=_namespaces),
    ("patch", ""): Route(_patch),
    ("patch", "status"): Route(_patch),
    ("patch", "scale"): Route(_patch_scale, applies=_namespaced),
    ("delete", ""): Route(_delete),
    ("deletecollection", ""): Route(_delete_collection),
}
"""Every (verb, subresource) the API server serves on a resource; anything else is a 405."""
