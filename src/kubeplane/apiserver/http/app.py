"""The API server as a plain ASGI application (no framework on the hot path).

Each request: authenticate (:mod:`..auth.authentication`: token file, ServiceAccount JWTs, else anonymous) and
apply impersonation, parse the path into a :class:`RequestInfo`, authorize it (every path, before any lookup:
:mod:`..auth.attributes_of`) and serve it as its user (``auth.context.acting_as``): read the body under the size
limit (413 before decoding), decode JSON, dispatch to the registry, and answer with JSON. Every failure is an
:class:`APIError` rendered as a ``Status``; an unexpected exception is logged and answered 500, and never ends
the server. Watches stream newline-delimited JSON events until ``timeoutSeconds``, the client going away, or the
watcher being cut off for falling behind.

A watch stream is written as kube-apiserver's ``WatchServer.HandleHTTP`` writes it, event after event, in
chunks of about :data:`WATCH_CHUNK` bytes: uvicorn's ``send`` waits until the transport's buffer has drained
below its high-water mark before writing, so a client that does not read holds at most that mark plus one chunk
in the server, never the whole backlog in one write. What it has not been sent waits in its watcher's queue,
bounded by ``watch_buffer_bytes``; past that the watcher is terminated (see
:mod:`kubeplane.apiserver.watchcache`) and the stream ends once the client reads what was already written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

from prometheus_client import CollectorRegistry

from kubeplane.api import typed as apityped
from kubeplane.api.crd.resource import CustomResourceInfo
from kubeplane.api.resources import ResourceInfo
from kubeplane.api.views import section
from kubeplane.apiserver import (
    apply,
    conversion,
    dispatch,
    errors,
    fieldmanager,
    metrics_api,
    offload,
    params,
    pod_logs,
    reviews,
    streaming,
    subresources,
    tokens,
)
from kubeplane.apiserver.auth import attributes_of, authentication
from kubeplane.apiserver.auth import context as auth_context
from kubeplane.apiserver.deletion import DeleteOptions
from kubeplane.apiserver.dispatch import Call
from kubeplane.apiserver.dryrun import OPTIONS_KIND, dry_run
from kubeplane.apiserver.errors import APIError
from kubeplane.apiserver.kubelet_client import KubeletClient
from kubeplane.apiserver.listing import WatchOptions, bookmark_event, list_options
from kubeplane.apiserver.registry import Registry
from kubeplane.apiserver.tokens import UserInfo
from kubeplane.apiserver.watchcache import WATCHER_BUDGET, CacheWatcher, Obj, WatchEvent
from kubeplane.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from kubeplane.metrics import APIServerMetrics, exposition
from kubeplane.metrics.apiserver import clean_scope, reported_verb
from kubeplane.store.interface import StoreError

from . import gojson, negotiation
from .connections import CLIENT_CERT
from .discovery import AGGREGATED_V2, OPENAPI_V2, Discovery, openapi_v2, wants_aggregated
from .routes import BadPath, RequestInfo, parse_request

log = logging.getLogger("kubeplane.apiserver")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

MAX_BODY = 3 * 1024 * 1024
WATCH_CHUNK = 64 * 1024
"""Bytes of watch lines written at once (one event more if a single event is larger)."""
BODY_TYPES = ("application/json", "", negotiation.PROTOBUF)
OPEN_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})
METRICS_PATH = "/metrics"
_USER = "kubeplane.user"  # the authenticated tokens.UserInfo
_INFO = "kubeplane.request_info"  # the parsed RequestInfo, left in the ASGI scope for the request metrics
_NON_RESOURCE_LABELS = frozenset({*OPEN_PATHS, "/api", "/apis"})
_perf = time.perf_counter
VERSION = {
    "major": "1",
    "minor": "37",
    "gitVersion": "v1.37.0+kubeplane",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "2026-11-21T00:00:00Z",
    "goVersion": "cpython3.11",
    "compiler": "cpython",
    "platform": "linux/amd64",
}


class Request:
    """One HTTP request; also the dispatcher's :class:`~kubeplane.apiserver.dispatch.BodyChecks`
    (``fieldValidation`` over the raw body the client sent)."""

    __slots__ = (
        "dry_run_values",
        "fields",
        "headers",
        "info",
        "method",
        "patch",
        "query",
        "raw",
        "receive",
        "table_headers_sent",
        "user",
    )

    def __init__(self, scope: Scope, receive: Receive, info: RequestInfo, query: dict[str, str]) -> None:
        self.method: str = scope["method"]
        self.headers: dict[str, str] = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        self.query = query
        self.dry_run_values: list[str] = []
        """Every ``dryRun`` of the query string, repetitions included (``query`` keeps the last)."""
        self.info = info
        self.receive = receive
        self.raw = b""
        self.patch: Any = None  # a patch request's decoded body (quoted by a strategic merge patch's 422)
        self.table_headers_sent = False  # a Table watch sends column definitions with its first event only
        self.fields: negotiation.FieldValidation  # set from the query once the resource is known (400 after 404)
        self.user: tokens.UserInfo | None = scope.get(_USER)  # who sent it (SelfSubjectReview answers this)

    async def body(self, limit: int) -> bytes:
        length = self.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise errors.too_large(limit)
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise errors.bad_request("the client closed the request before sending the whole body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise errors.too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                offload.note_body(size)  # a big body: this request's CPU-heavy steps leave the event loop
                return b"".join(chunks)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()

    async def json(self, limit: int, *, into: str, allowed: tuple[str, ...] = BODY_TYPES) -> Any:
        """The decoded body (JSON, or Kubernetes protobuf where allowed), of kind ``into``, nested at most
        ``jsondepth.MAX_DEPTH`` deep (:func:`negotiation.decode_body`); the raw bytes stay in ``raw``."""
        if self.content_type not in allowed:
            raise errors.unsupported_media_type(self.headers.get("content-type", ""))
        self.raw = raw = await self.body(limit)
        if not raw.strip():
            raise errors.bad_request("the request body is empty")
        return await offload.run(
            negotiation.decode_body, raw, self.content_type, into=into, field_validation=self.fields.mode
        )

    def check_body(self, resource: ResourceInfo, body: Any) -> Any:
        return self.fields.check_body(resource, self.raw, body, self.content_type)

    def check_patch(self, resource: ResourceInfo) -> None:
        self.fields.check_patch_body(resource, self.raw)

    def check_patched(self, resource: ResourceInfo, obj: Obj) -> Obj:
        return self.fields.check_patched(resource, obj, patch_type=self.content_type, patch=self.patch)

    def check_patched_kind(self, group: str, version: str, kind: str, obj: Obj) -> Obj:
        return negotiation.typed_patched(
            obj, group=group, version=version, kind=kind, patch_type=self.content_type, patch=self.patch
        )


class APIServerApp:
    def __init__(
        self,
        registry: Registry,
        *,
        tokens: Mapping[str, UserInfo | str] | None = None,
        max_body: int = MAX_BODY,
        bookmark_interval: float = 5.0,
        rng: random.Random | None = None,
        metrics_registry: CollectorRegistry | None = None,
        watch_buffer_bytes: int = WATCHER_BUDGET,
    ) -> None:
        """``tokens``: the token file's users (a plain name is an administrator, in system:masters); None: no
        authentication and no authorization (every request trusted). With tokens, requests without credentials
        are anonymous and every request is authorized by ``registry.authorizer``.
        ``metrics_registry``: where the request metrics live (default: the process-wide registry).
        ``watch_buffer_bytes``: the byte budget of each watcher's queue of unsent events."""
        self.registry = registry
        self.watch_buffer_bytes = watch_buffer_bytes
        self.tokens = tokens
        self.authenticator = None if tokens is None else authentication.Authenticator(registry, tokens)
        self.max_body = max_body
        self.bookmark_interval = bookmark_interval
        self._discovery_doc = Discovery(registry.table, extra=metrics_api.RESOURCES)
        self._openapi_docs = negotiation.OpenAPIDocuments(registry.table)
        self._documents_generation = registry.table.generation
        self.kubelets = KubeletClient(registry)
        self.metrics_api = metrics_api.MetricsAPI(registry, self.kubelets)
        self._log_stops: set[asyncio.Event] = set()  # one per pods/log stream being copied
        self.rng = rng or random.Random()
        self.watchers: set[CacheWatcher] = set()
        self.metrics = APIServerMetrics.for_registry(metrics_registry)
        self.ui: Any = None  # the web UI mounted at /ui (kubeplane.ui.UIApp, set by the CLI): its own sessions

    def _refresh_documents(self) -> None:
        """Rebuild discovery and OpenAPI when the table changed (CRDs register and remove resources at runtime)."""
        if self._documents_generation != self.registry.table.generation:
            self._documents_generation = self.registry.table.generation
            self._discovery_doc = Discovery(self.registry.table, extra=metrics_api.RESOURCES)
            self._openapi_docs = negotiation.OpenAPIDocuments(self.registry.table)

    @property
    def discovery(self) -> Discovery:
        self._refresh_documents()
        return self._discovery_doc

    @property
    def openapi(self) -> negotiation.OpenAPIDocuments:
        self._refresh_documents()
        return self._openapi_docs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] == "websocket":
            await self._websocket(scope, send)
            return
        if scope["type"] != "http":
            return
        start = _perf()
        code = 0

        async def send_counted(message: dict[str, Any]) -> None:
            nonlocal code
            if message["type"] == "http.response.start":
                code = message["status"]
            await send(message)

        try:
            await self._handle(scope, receive, send_counted)
        except APIError as exc:
            await _send_json(send_counted, exc.code, exc.status, headers=_error_headers(exc))
        except StoreError as exc:  # the storage backend failed (etcd unreachable, a write's outcome unknown)
            log.warning("storage error serving %s %s: %s", scope.get("method"), scope.get("path"), exc)
            await _send_json(send_counted, 500, errors.internal(str(exc)).status)
        except Exception as exc:  # a 500 for user input is a bug: log it, keep serving
            log.exception("internal error serving %s %s", scope.get("method"), scope.get("path"))
            await _send_json(send_counted, 500, errors.internal(type(exc).__name__).status)
        finally:
            if scope["path"] != METRICS_PATH:  # as upstream, scrapes are not counted
                self._record(scope, code, _perf() - start)

    async def _websocket(self, scope: Scope, send: Send) -> None:
        """A WebSocket upgrade is answered as its plain HTTP request would be (no upgrade is ever accepted: no
        container runs a process), the answer sent as the handshake's denial response, so a client reads a
        Status (connect subresources: :mod:`kubeplane.apiserver.streaming`) instead of uvicorn's bare 500."""
        if "websocket.http.response" not in scope.get("extensions", {}):
            await send({"type": "websocket.close", "code": 1008})  # the server answers 403
            return

        async def body() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def deny(message: dict[str, Any]) -> None:
            await send({**message, "type": "websocket." + message["type"]})

        http_scope = {**scope, "type": "http", "method": "GET"}
        http_scope.pop(_INFO, None)
        await self(http_scope, body, deny)

    def _record(self, scope: Scope, code: int, seconds: float) -> None:
        """apiserver_request_total / apiserver_request_duration_seconds with upstream's labels. Unknown resources
        and paths are not used as label values (a client could otherwise grow the label set without bound)."""
        method: str = scope["method"]
        info: RequestInfo | None = scope.get(_INFO)
        dry_run = "All" if b"dryRun=All" in scope.get("query_string", b"") else ""
        if info is not None and info.is_resource and self._served(info):
            sc = clean_scope(is_resource=True, verb=info.verb, namespace=info.namespace, name=info.name)
            content_type = ""
            if method == "PATCH":
                for name, value in scope["headers"]:
                    if name.lower() == b"content-type":
                        content_type = value.decode("latin-1").split(";", 1)[0].strip().lower()
            verb = reported_verb(method, sc, watch=info.verb == "watch", content_type=content_type)
            if verb == "GET" and info.subresource == "log" and info.group == "" and info.resource == "pods":
                verb = "CONNECT"  # upstream LogREST.OverrideMetricsVerb
            group, version, resource, sub = info.group, info.version, info.resource, info.subresource
        else:
            path: str = scope["path"]
            if path not in _NON_RESOURCE_LABELS:
                first = path.strip("/").split("/", 1)[0]
                path = f"/{first}/*" if first in ("api", "apis", "openapi") else "other"
            sc, verb = "", reported_verb(method, "", watch=False)
            group, version, resource, sub = "", "", "", path
        self.metrics.request(
            verb=verb,
            dry_run=dry_run,
            group=group,
            version=version,
            resource=resource,
            subresource=sub,
            scope=sc,
            code=code,
            seconds=seconds,
        )

    def _served(self, info: RequestInfo) -> bool:
        if info.group == "" and info.resource == "bindings":
            return True
        return self.registry.table.get(info.group, info.version, info.resource) is not None

    def _table_frame(self, resource: ResourceInfo, event: WatchEvent, request: Request) -> bytes:
        """A Table watch line (made per watcher: the column definitions go with its first event only)."""
        first = not request.table_headers_sent
        obj = self.registry._with_type(resource, event.obj) if event.type != "BOOKMARK" else event.obj
        doc = negotiation.table_event(
            resource, event.type, obj, query=request.query, now=self.registry.now(), headers=first
        )
        if event.type != "BOOKMARK":
            request.table_headers_sent = True
        return gojson.encode(doc)

    def close_watches(self) -> None:
        """Shutting down: every watch and every followed log ends."""
        for watcher in list(self.watchers):
            watcher.close()
        for stop in list(self._log_stops):
            stop.set()

    async def close_kubelet_client(self) -> None:
        await self.kubelets.close()

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        query = params.first_values(pairs)  # upstream's conversions read a repeated parameter's first value
        if self.ui is not None and self.ui.handles(path):  # the UI authenticates by session, then through here
            await self.ui(scope, receive, send)
            return
        user = self._authenticate(scope)
        watch = "watch" in query and params.go_bool(query["watch"])
        try:
            info = parse_request(scope["method"], scope.get("raw_path", b"").decode("latin-1") or path, watch=watch)
        except BadPath as exc:
            raise errors.bad_request(str(exc)) from None
        scope[_INFO] = info
        if user is not None:  # every request, resource or not, before anything is looked up (404s come after)
            attrs = attributes_of.request_attributes(user, scope["method"], path, info, query)
            attributes_of.authorize(self.registry.authorizer, attrs)
        with auth_context.acting_as(user):
            await self._serve(scope, receive, send, info, pairs, query)

    async def _serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        info: RequestInfo,
        pairs: list[tuple[str, str]],
        query: dict[str, str],
    ) -> None:
        path: str = scope["path"]
        if path in ("/healthz", "/livez", "/readyz"):
            await _send(send, 200, b"ok", "text/plain; charset=utf-8")
            return
        if path == METRICS_PATH:
            if scope["method"] not in ("GET", "HEAD"):
                raise errors.method_not_allowed(scope["method"], path)
            await _send(send, 200, exposition(self.metrics.registry), METRICS_CONTENT_TYPE)
            return
        if path == "/version":
            await _send_json(send, 200, VERSION)
            return
        if path == OPENAPI_V2 and scope["method"] in ("GET", "HEAD"):  # its own media types: before Accept checks
            body, content_type = openapi_v2(_header(scope, b"accept"), VERSION["gitVersion"])
            await _send(send, 200, body, content_type)
            return
        request = Request(scope, receive, info, query)
        request.dry_run_values = [value for key, value in pairs if key == "dryRun"]
        _check_accept(request.headers.get("accept", ""))
        if not info.is_resource:
            await self._discovery(request, send)
            return
        if info.group == metrics_api.GROUP:
            await self._metrics_api(request, send)
            return
        try:
            await self._resource(request, send)
        except APIError as exc:  # warnings recorded before the failure go out with it (filters/warning.go)
            fields: negotiation.FieldValidation | None = getattr(request, "fields", None)
            if fields is not None and fields.warnings:
                exc.headers = fields.headers()
            raise

    async def _metrics_api(self, request: Request, send: Send) -> None:
        """``metrics.k8s.io`` (:mod:`kubeplane.apiserver.metrics_api`): get and list only, as metrics-server."""
        info = request.info
        resource = next(
            (r for r in metrics_api.RESOURCES if r.version == info.version and r.plural == info.resource), None
        )
        if resource is None:
            raise errors.no_such_path()
        dispatch.check_scope(resource, verb=info.verb, namespace=info.namespace, subresource=info.subresource)
        if info.verb == "watch":
            raise errors.APIError(
                code=405,
                reason="MethodNotAllowed",
                details={"group": resource.group, "kind": resource.plural},
                message=f'watch is not supported on resources of kind "{resource.plural}.{resource.group}"',
            )
        if info.verb not in ("get", "list"):
            raise errors.method_not_allowed(request.method, info.path)
        doc = await self.metrics_api.handle(info.resource, info.namespace, info.name, request.query)
        await _send_json(send, 200, doc)

    async def _pod_log(self, request: Request, send: Send) -> None:
        """``pods/log`` (:mod:`kubeplane.apiserver.pod_logs`): the kubelet's answer copied as it comes."""
        info = request.info
        assert info.namespace is not None
        stream = await pod_logs.open_log(self.registry, self.kubelets, info.namespace, info.name, request.query)
        if stream is None:
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        stop = asyncio.Event()
        self._log_stops.add(stop)
        disconnected = asyncio.ensure_future(_wait_disconnect(request.receive))

        async def stopped() -> None:
            halt = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({disconnected, halt}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                halt.cancel()

        async def write(chunk: bytes) -> None:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})

        try:
            headers = [(b"content-type", b"text/plain"), (b"cache-control", b"no-cache, private")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await stream.pump(write, stopped)
            if not disconnected.done():
                with contextlib.suppress(OSError):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            disconnected.cancel()
            self._log_stops.discard(stop)

    def _authenticate(self, scope: Scope) -> UserInfo | None:
        """Who the request is, once impersonation is applied (:func:`authentication.request_user`), left in the
        scope; None when the server authenticates nothing (every request trusted)."""
        if self.authenticator is None:
            return None
        scope[_USER] = user = authentication.request_user(
            self.authenticator, self.registry.authorizer, scope["headers"], scope.get(CLIENT_CERT)
        )
        return user

    def _review_authenticate(self, token: str, audiences: Sequence[str]) -> reviews.Authenticated | None:
        """A TokenReview's authentication of ``token`` for ``audiences``: the admin tokens (audience-agnostic,
        so they count for the API audiences only), then ServiceAccount JWTs."""
        users = self.authenticator.users if self.authenticator is not None else {}
        return reviews.authenticate_token(self.registry, users, token, audiences)

    async def _discovery(self, request: Request, send: Send) -> None:
        parts = request.info.parts
        if request.method != "GET":
            raise errors.method_not_allowed(request.method, request.info.path)
        if parts[:2] == ("openapi", "v3"):
            data = self.openapi.get(parts)
            if data is None:
                raise errors.no_such_path()
            await _send(send, 200, data, "application/json")
            return
        aggregated = wants_aggregated(request.headers.get("accept", ""))
        doc: dict[str, Any] | None = None
        if parts == ("api",):
            if aggregated:
                await _send_json(send, 200, self.discovery.aggregated(core=True), content_type=AGGREGATED_V2)
                return
            doc = self.discovery.api_versions()
        elif parts == ("apis",):
            if aggregated:
                await _send_json(send, 200, self.discovery.aggregated(core=False), content_type=AGGREGATED_V2)
                return
            doc = self.discovery.api_group_list()
        elif len(parts) == 2 and parts[0] == "api":
            doc = self.discovery.resource_list("", parts[1])
        elif len(parts) == 2:
            doc = self.discovery.api_group(parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            doc = self.discovery.resource_list(parts[1], parts[2])
        if doc is None:
            raise errors.no_such_path()
        await _send_json(send, 200, doc)

    def _resource_info(self, info: RequestInfo) -> ResourceInfo:
        """The resource the URL addresses (404 if none): the table's, except the legacy
        ``namespaces/NS/bindings``, which binds a pod."""
        if info.group == "" and info.resource == "bindings":
            return self.registry.resource("", "pods")
        resource = self.registry.table.get(info.group, info.version, info.resource)
        if resource is None:
            raise errors.no_such_path()
        dispatch.check_scope(resource, verb=info.verb, namespace=info.namespace, subresource=info.subresource)
        return resource

    async def _resource(self, request: Request, send: Send) -> None:
        """HTTP's part of a resource request around the dispatcher's (see :mod:`kubeplane.apiserver.dispatch`
        for the order of checks): the body and options from the wire, the reply onto it."""
        info, query = request.info, request.query
        resource = self._resource_info(info)
        if info.subresource == "log" and resource.kind == "Pod" and info.name and request.method == "GET":
            await self._pod_log(request, send)
            return
        if streaming.is_connect(resource, info.subresource) and info.name and request.method in ("GET", "POST"):
            upgrade = "upgrade" in request.headers  # SPDY, and a WebSocket's handshake (see _websocket)
            await streaming.connect(
                self.registry, resource, info.namespace, info.name, info.subresource, query, upgrade=upgrade
            )
        verb = info.verb
        if verb in ("create", "update", "patch"):
            fieldmanager.validate_field_manager(query.get("fieldManager"), options_kind=OPTIONS_KIND[verb])
        call = Call(
            verb,
            resource,
            info.namespace,
            name=info.name,
            subresource=info.subresource,
            dry_run=dry_run(request.dry_run_values, verb=verb) if verb in OPTIONS_KIND else False,
            checks=request,
            method=request.method,
            path=info.path,
            manager=fieldmanager.manager_name(query.get("fieldManager"), request.headers.get("user-agent", "")),
            field_manager_given=bool(query.get("fieldManager")),
            force=query.get("force") == "true",
            user=request.user,
            authenticator=self._review_authenticate,
        )
        as_table = negotiation.wants_table(request.headers.get("accept", ""))
        request.fields = fields = negotiation.FieldValidation.from_query(query)
        if isinstance(resource, CustomResourceInfo) and resource.deprecation_warning:  # crdHandler.ServeHTTP
            fields.warnings.append(resource.deprecation_warning)
        if info.resource == "bindings" and verb == "create" and info.namespace is not None:
            body = await request.json(self.max_body, into="Binding")  # legacy namespaces/NS/bindings: the pod is
            body = negotiation.typed_body(body, group="", version="v1", kind="Binding")  # the body's name
            pod = (section(body, "metadata").get("name") if isinstance(body, dict) else None) or ""
            if not pod:  # the pod is named by the body alone here (upstream's namer: errEmptyName)
                raise errors.bad_request("name must be provided")
            call.name, call.subresource, call.body = str(pod), "binding", body
            route, result = await dispatch.dispatch(self.registry, call)
            await _send_json(send, route.code, result)
            return
        dispatch.check_verb(call)
        sub = resource.subresource(info.subresource) if info.subresource else None
        into = sub.kind if sub is not None else resource.kind
        if verb in ("create", "update"):
            call.body = await request.json(self.max_body, into=into)
            if sub is not None and sub.name != "status":  # binding, eviction, scale, finalize: their own kinds
                call.body = negotiation.typed_body(call.body, group=sub.group, version=sub.version, kind=sub.kind)
        elif verb == "patch" and request.content_type == apply.APPLY_PATCH:
            call.body = request.patch = await offload.run(apply.decode_yaml, await request.body(self.max_body))
            call.patch_type = request.content_type
        elif verb == "patch":
            call.body = request.patch = await request.json(self.max_body, into=into, allowed=subresources.PATCH_TYPES)
            call.patch_type = request.content_type
        route = dispatch.find_route(call)
        if verb in ("delete", "deletecollection"):
            body = _typed_delete_options(await _optional_json(request, self.max_body))
            call.delete_options = DeleteOptions.parse(body, query)
        if verb in ("list", "watch", "deletecollection"):  # a watch decodes (and refuses) the same ListOptions
            call.list_options = list_options(query)
        if verb == "get" and "resourceVersion" in query:  # upstream's storage parses it before the lookup
            params.parse_resource_version(query["resourceVersion"])
        if verb == "watch":
            await self._watch(request, send, call, route, as_table=as_table)
            return
        result = await route.handler(self.registry, call)
        if as_table and route.tabular:
            if call.verb == "list":
                offload.note_items(len(result["items"]))
            doc = await offload.run(self._table, call, result, query)
            headers = fields.headers() if fields.warnings else None
            await _send_json(send, route.code, doc, content_type=negotiation.TABLE_CONTENT_TYPE, headers=headers)
        else:
            code = 201 if call.created else route.code
            await _send_json(send, code, result, headers=fields.headers() if fields.warnings else None)

    def _table(self, call: Call, body: Obj, query: dict[str, str]) -> Obj:
        now = self.registry.now()
        if call.verb == "list":
            return negotiation.table(call.resource, body["items"], list_meta=body["metadata"], query=query, now=now)
        meta = {"resourceVersion": body["metadata"].get("resourceVersion", "")}
        return negotiation.table(call.resource, [body], list_meta=meta, query=query, now=now)

    async def _watch(
        self, request: Request, send: Send, call: Call, route: dispatch.Route, *, as_table: bool = False
    ) -> None:
        query, resource = request.query, call.resource
        timeout = params.timeout_seconds(query.get("timeoutSeconds"), self.rng)
        send_initial = query.get("sendInitialEvents")
        call.watch_options = options = WatchOptions(
            label_selector=query.get("labelSelector", ""),
            field_selector=query.get("fieldSelector", ""),
            resource_version=query.get("resourceVersion", ""),
            allow_bookmarks=params.go_bool(query.get("allowWatchBookmarks", "false")),
            send_initial_events=None if send_initial is None else params.go_bool(send_initial),
            resource_version_match=query.get("resourceVersionMatch", ""),
            buffer_bytes=self.watch_buffer_bytes,
        )
        error: APIError | None = None
        watcher: CacheWatcher | None = None
        try:
            watcher = await route.handler(self.registry, call)
        except APIError as exc:
            if exc.code != 410:  # a watch from a compacted revision: 200 and an ERROR event, as upstream
                raise
            error = exc
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"cache-control", b"no-cache, private"),
                    *request.fields.headers(),
                ],
            }
        )
        if error is not None or watcher is None:
            frame = gojson.encode({"type": "ERROR", "object": error.status if error else {}})
            await send({"type": "http.response.body", "body": frame, "more_body": False})
            return
        self.watchers.add(watcher)
        self.metrics.watcher_added(resource.group, resource.version, resource.kind)
        watcher.on_terminated = lambda: self.metrics.watcher_terminated(resource.group, resource.plural)
        if watcher.overflowed:
            watcher.on_terminated()
        disconnected = asyncio.ensure_future(_wait_disconnect(request.receive))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        cache = self.registry.cache(resource)
        bookmarks = options.allow_bookmarks and watcher.follows_cache
        converts = conversion.presents(resource)
        view = f"{resource.api_version}#{id(resource)}"  # a CRD change registers a new info (new schemas)

        def present(obj: Obj) -> Obj:
            return conversion.from_storage(resource, obj)

        def line_of(event: WatchEvent) -> bytes:
            """The event's watch line: the stored form's or events.k8s.io's, each encoded once per event and
            shared by every watcher; a Table's, per watcher."""
            if as_table:
                return self._table_frame(resource, event, request)
            return event.presented_frame(present, view) if converts else event.frame()

        async def stream() -> bytes:
            """Send the pending events in chunks of about WATCH_CHUNK bytes; return the last, partial chunk
            (nothing is awaited after the watcher was found to have nothing pending)."""
            parts: list[bytes] = []
            size = 0
            while (event := watcher.pop()) is not None:
                line = line_of(event)
                parts.append(line)
                size += len(line)
                if size >= WATCH_CHUNK:
                    await send({"type": "http.response.body", "body": b"".join(parts), "more_body": True})
                    parts, size = [], 0
            return b"".join(parts)

        async def flush(*, bookmark: bool) -> None:
            """Send pending events, then (if asked) a bookmark. The sync comes after the last event is taken and
            before the revision is read, with nothing awaited between: the bookmark is sent only if the sync
            gave this watcher nothing more, so its revision never runs ahead of an event not yet sent."""
            tail = await stream()
            if bookmark:
                revision = cache.bookmark_revision(watcher)
                if revision is not None:
                    tail += gojson.encode(bookmark_event(resource, revision))
            if tail:
                await send({"type": "http.response.body", "body": tail, "more_body": True})

        try:
            timed_out = False
            while not watcher.closed and not disconnected.done():
                remaining = deadline - loop.time()
                if remaining <= 0:
                    timed_out = True
                    break
                await watcher.wait(min(remaining, self.bookmark_interval))
                idle = not watcher.pending and not watcher.closed
                await flush(bookmark=idle and bookmarks)
            if not disconnected.done():
                # upstream sends a last bookmark as a watch times out, so the client resumes from the newest revision
                await flush(bookmark=timed_out and bookmarks)
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            disconnected.cancel()
            cache.remove_watcher(watcher)
            self.watchers.discard(watcher)
            self.metrics.watcher_removed(resource.group, resource.version, resource.kind)


async def _wait_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _optional_json(request: Request, limit: int) -> Any:
    raw = await request.body(limit)
    if not raw.strip():
        return None
    return negotiation.decode_delete_options(raw)


def _typed_delete_options(body: Any) -> Any:
    """A DELETE body decoded into meta/v1 DeleteOptions. Upstream's delete handler passes the decoder's error on
    unwrapped, which makes it a 500; kubeplane answers the same message as a 400 (bad input is never a 5xx)."""
    if not isinstance(body, dict):
        return body
    try:
        return apityped.decode(body, group="meta.k8s.io", version="v1", kind="DeleteOptions")
    except apityped.TypedDecodeError as exc:
        raise errors.bad_request(str(exc)) from None


def _check_accept(accept: str) -> None:
    if not accept:
        return
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in ("*/*", "application/*", "application/json", "application/yaml", "text/plain") or media.endswith(
            "+json"
        ):
            return
    raise errors.not_acceptable(accept)


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return ""


async def _send(
    send: Send, status: int, body: bytes, content_type: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type.encode()),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _error_headers(exc: APIError) -> list[tuple[bytes, bytes]] | None:
    """The error's headers, with ``Retry-After`` when its Status asks for a retry after some seconds (upstream
    responsewriters.ErrorNegotiated), so clients back off as told (client-go retries a 429 that carries one)."""
    retry_after = (exc.details or {}).get("retryAfterSeconds")
    if not retry_after:
        return exc.headers
    return [*(exc.headers or []), (b"retry-after", str(int(retry_after)).encode())]


async def _send_json(
    send: Send,
    status: int,
    doc: Any,
    *,
    content_type: str = "application/json",
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await _send(send, status, gojson.encode(doc), content_type, headers)
