"""The HTTP transport: the Client protocol against any Kubernetes API server (kubeplane's or a real cluster).

aiohttp with keep-alive connections and orjson. Behaviour shared with the in-process transport: the same
methods, results and errors (a failure ``Status`` becomes :mod:`kubeplane.client.errors`).

Rate limiting is a token bucket (``qps``, ``burst``; qps <= 0 disables it), as client-go's flowcontrol. Retries
happen only where they cannot duplicate an effect: a 429 or 503 that carries ``Retry-After`` (the server did
nothing), a connection that could not be opened (nothing was sent), and connection failures of reads (GET,
list, watch start). A write that may have reached the server is never retried.

Failover: with several servers (``ClientConfig.failover``, several API servers on one etcd), a connection that
cannot be opened, or a read whose connection breaks, moves the client to the next server, and it stays there.

Views: :meth:`HTTPClient.impersonating` (client-go's ``rest.ImpersonationConfig``: ``Impersonate-User`` and one
``Impersonate-Group`` header per group on every request) and :meth:`HTTPClient.with_token_source` (a bearer token
fetched per request, e.g. a refreshed ServiceAccount token) are clients that share the parent's connection pool,
rate limiter and failover position; only the parent owns the session, so closing a view closes nothing shared.
"""

from __future__ import annotations

import contextlib
import copy
import os
import ssl
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
from multidict import CIMultiDict

from kubeplane.api.resources import ResourceInfo, ResourceTable, default_table
from kubeplane.api.views import name_of

from .clock import Clock, SystemClock
from .errors import ClientError, error_for
from .flowcontrol import TokenBucket, TokenBucketConfig
from .interface import Obj, PatchType
from .kubeconfig import ClientConfig, find_kubeconfig, load_kubeconfig
from .resolve import resolve_resource
from .tls import server_ssl_context

READ_RETRIES = 3
MAX_RETRY_AFTER = 10.0


def _ssl_context(config: ClientConfig) -> ssl.SSLContext | bool:
    """The server's trust (:func:`.tls.server_ssl_context`) plus the kubeconfig's client certificate, if any."""
    ctx = server_ssl_context(config.server, ca_data=config.ca_data, insecure=config.insecure)
    if isinstance(ctx, ssl.SSLContext) and config.client_cert_data and config.client_key_data:
        # ssl can load a client certificate only from files: write them privately, load, remove.
        with tempfile.TemporaryDirectory(prefix="kubeplane-tls-") as tmp:
            cert, key = os.path.join(tmp, "c.pem"), os.path.join(tmp, "k.pem")
            for path, data in ((cert, config.client_cert_data), (key, config.client_key_data)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
            ctx.load_cert_chain(cert, key)
    return ctx


class HTTPWatch:
    """Newline-delimited watch events from a streaming response (lines of any size)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self._buffer = b""
        self._events: list[Obj] = []
        self._chunks: AsyncIterator[bytes] = response.content.iter_any()

    def __aiter__(self) -> AsyncIterator[Obj]:
        return self

    async def __anext__(self) -> Obj:
        while not self._events:
            try:
                chunk = await anext(self._chunks)
            except StopAsyncIteration:  # the server ended the watch (timeout): a clean end
                await self.close()
                raise
            except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
                # a broken stream is not a clean end: callers (informers) back off before re-watching
                await self.close()
                raise ClientError(f"watch stream broken: {exc}") from None
            self._buffer += chunk
            *lines, self._buffer = self._buffer.split(b"\n")
            self._events = [orjson.loads(line) for line in lines if line.strip()]
            self._events.reverse()
        event = self._events.pop()
        if event.get("type") == "ERROR":
            await self.close()
            raise error_for(event.get("object") or {"code": 500, "message": "watch error without a status"})
        return event

    async def close(self) -> None:
        self._response.close()


class _Shared:
    """What an :class:`HTTPClient` and its views share: the failover position."""

    __slots__ = ("active",)

    def __init__(self) -> None:
        self.active = 0


class HTTPClient:
    def __init__(
        self,
        config: ClientConfig,
        *,
        table: ResourceTable | None = None,
        clock: Clock | None = None,
        connections: int = 100,
    ) -> None:
        self.config = config
        self.table = table or default_table()
        self.clock = clock or SystemClock()
        self._bucket = (
            TokenBucket(TokenBucketConfig(qps=config.qps, burst=max(config.burst, 1)), clock=self.clock)
            if config.qps > 0
            else None
        )
        self._servers = config.servers
        self._shared = _Shared()
        self._owns_session = True
        self._extra: list[tuple[str, str]] = []  # headers of a view (impersonation), sent on every request
        self._token_source: Callable[[], Awaitable[str]] | None = None
        headers = {"Accept": "application/json", "User-Agent": "kubeplane"}
        if config.token:
            headers["Authorization"] = f"Bearer {config.token}"
        # idle connections are dropped after 30 s: before kubeplane's server (75 s) and kube-apiserver close them
        connector = aiohttp.TCPConnector(limit=connections, ssl=_ssl_context(config), keepalive_timeout=30.0)
        self._session = aiohttp.ClientSession(
            connector=connector, headers=headers, json_serialize=lambda o: orjson.dumps(o).decode()
        )

    @classmethod
    def from_kubeconfig(
        cls, path: str | os.PathLike[str] | None = None, *, context: str | None = None, **kwargs: Any
    ) -> HTTPClient:
        return cls(load_kubeconfig(find_kubeconfig(path), context=context), **kwargs)

    def resource(self, name: str) -> ResourceInfo:
        return resolve_resource(self.table, name)

    def _view(self) -> HTTPClient:
        view = copy.copy(self)
        view._owns_session = False
        view._extra = list(self._extra)
        return view

    def impersonating(self, user: str, groups: Sequence[str] = ()) -> HTTPClient:
        """A client making every request as ``user`` in ``groups`` (``Impersonate-User``, one ``Impersonate-Group``
        header per group, as client-go's ImpersonationConfig), on this client's credentials, which must be
        allowed the ``impersonate`` verb on those users and groups. It shares this client's connections; closing
        it leaves them open."""
        view = self._view()
        view._extra = [(k, v) for k, v in view._extra if not k.startswith("Impersonate-")]
        view._extra.append(("Impersonate-User", user))
        view._extra.extend(("Impersonate-Group", group) for group in groups)
        return view

    def with_token_source(self, source: Callable[[], Awaitable[str]]) -> HTTPClient:
        """A client authenticating each request with the bearer token ``await source()`` returns (instead of the
        kubeconfig's): the source caches and refreshes it (client-go's ``oauth2.TokenSource`` in a transport
        wrapper). It shares this client's connections; closing it leaves them open."""
        view = self._view()
        view._token_source = source
        return view

    async def _headers(self, content_type: str | None) -> CIMultiDict[str] | None:
        if not self._extra and self._token_source is None and content_type is None:
            return None
        headers: CIMultiDict[str] = CIMultiDict(self._extra)
        if self._token_source is not None:
            headers["Authorization"] = f"Bearer {await self._token_source()}"
        if content_type is not None:
            headers["Content-Type"] = content_type
        return headers

    @property
    def server(self) -> str:
        """The API server in use (the first one, or the one failover moved to)."""
        return self._servers[self._shared.active]

    def _fail_over(self, failed: str) -> bool:
        """Move to the next server if ``failed`` is still the one in use; False with a single server."""
        if len(self._servers) == 1:
            return False
        if self.server == failed:
            self._shared.active = (self._shared.active + 1) % len(self._servers)
        return True

    def _path(
        self, resource: ResourceInfo, *, namespace: str | None, name: str = "", subresource: str | None = None
    ) -> str:
        return resource.rest_path(namespace, name, subresource)

    async def _request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Obj:
        suffix = path + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else orjson.dumps(body)
        attempts = unsent = 0
        while True:
            if self._bucket is not None:
                await self._bucket.wait()
            attempts += 1
            server = self.server
            url = server + suffix
            try:
                headers = await self._headers(content_type if data is not None else None)
                async with self._session.request(method, url, data=data, headers=headers) as response:
                    raw = await response.read()
                    if response.status < 300:
                        result: Obj = orjson.loads(raw) if raw else {}
                        return result
                    retry_after = response.headers.get("Retry-After")
                    if response.status in (429, 503) and retry_after and attempts <= READ_RETRIES:
                        await self.clock.sleep(min(float(retry_after), MAX_RETRY_AFTER))
                        continue
                    raise error_for(_status(response.status, raw))
            except aiohttp.ClientConnectorError as exc:  # never connected: nothing was sent, any method may retry
                unsent += 1
                if self._fail_over(server) and unsent < 2 * len(self._servers):
                    continue
                if method == "GET" and attempts < READ_RETRIES:
                    await self.clock.sleep(0.2 * attempts)
                    continue
                raise ClientError(f"{method} {url}: {exc}") from None
            except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                # a payload error: the connection ended inside the response's body (the server died mid-answer), so
                # the request reached it: a broken connection like the others, a write never retried
                if method == "GET" and attempts < READ_RETRIES + len(self._servers) - 1:
                    self._fail_over(server)
                    await self.clock.sleep(0.2 * attempts)
                    continue
                raise ClientError(f"{method} {url}: {exc}") from None

    async def get(
        self, resource: ResourceInfo, name: str, *, namespace: str | None = None, subresource: str | None = None
    ) -> Obj:
        return await self._request("GET", self._path(resource, namespace=namespace, name=name, subresource=subresource))

    async def list(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        resource_version: str = "",
    ) -> Obj:
        query = {
            k: v
            for k, v in (
                ("labelSelector", label_selector),
                ("fieldSelector", field_selector),
                ("limit", str(limit) if limit else ""),
                ("continue", continue_token),
                ("resourceVersion", resource_version),
            )
            if v
        }
        return await self._request("GET", self._path(resource, namespace=namespace), query=query)

    async def watch(
        self,
        resource: ResourceInfo,
        *,
        namespace: str | None = None,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        allow_bookmarks: bool = True,
        timeout_seconds: int | None = None,
        send_initial_events: bool | None = None,
        resource_version_match: str = "",
    ) -> HTTPWatch:
        query = {"watch": "1"}
        for key, value in (
            ("resourceVersion", resource_version),
            ("resourceVersionMatch", resource_version_match),
            ("sendInitialEvents", "" if send_initial_events is None else str(send_initial_events).lower()),
            ("labelSelector", label_selector),
            ("fieldSelector", field_selector),
            ("allowWatchBookmarks", "true" if allow_bookmarks else ""),
            ("timeoutSeconds", str(timeout_seconds) if timeout_seconds else ""),
        ):
            if value:
                query[key] = value
        suffix = self._path(resource, namespace=namespace) + "?" + urlencode(query)
        url = self.server + suffix
        for attempt in range(1, READ_RETRIES + len(self._servers)):
            if self._bucket is not None:
                await self._bucket.wait()
            server = self.server
            url = server + suffix
            try:
                response = await self._session.get(
                    url, headers=await self._headers(None), timeout=aiohttp.ClientTimeout(total=None, sock_read=None)
                )
            except aiohttp.ClientConnectionError as exc:
                if attempt == READ_RETRIES + len(self._servers) - 1:
                    raise ClientError(f"watch {url}: {exc}") from None
                self._fail_over(server)
                await self.clock.sleep(0.2 * attempt)
                continue
            if response.status >= 300:
                raw = await response.read()
                response.close()
                retry_after = response.headers.get("Retry-After")
                if response.status in (429, 503) and retry_after and attempt < READ_RETRIES:
                    # as the other requests (and client-go's Watch): the server did nothing and said when to retry
                    await self.clock.sleep(min(float(retry_after), MAX_RETRY_AFTER))
                    continue
                raise error_for(_status(response.status, raw))
            return HTTPWatch(response)
        raise ClientError(f"watch {url}: no response")

    async def create(
        self,
        resource: ResourceInfo,
        obj: Obj,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        name: str | None = None,
    ) -> Obj:
        target = (name or "") if subresource else ""
        path = self._path(resource, namespace=namespace, name=target, subresource=subresource)
        return await self._request("POST", path, body=obj)

    async def update(
        self, resource: ResourceInfo, obj: Obj, *, namespace: str | None = None, subresource: str | None = None
    ) -> Obj:
        name = name_of(obj)
        path = self._path(resource, namespace=namespace, name=name, subresource=subresource)
        return await self._request("PUT", path, body=obj)

    async def patch(
        self,
        resource: ResourceInfo,
        name: str,
        patch: Any,
        *,
        patch_type: PatchType = PatchType.MERGE,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> Obj:
        path = self._path(resource, namespace=namespace, name=name, subresource=subresource)
        return await self._request("PATCH", path, body=patch, content_type=str(patch_type))

    async def delete(
        self,
        resource: ResourceInfo,
        name: str,
        *,
        namespace: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
        preconditions: dict[str, str] | None = None,
    ) -> Obj:
        options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = preconditions
        return await self._request("DELETE", self._path(resource, namespace=namespace, name=name), body=options)

    async def close(self) -> None:
        """Close the connections, unless this is a view (:meth:`impersonating`): its parent owns them."""
        if not self._owns_session:
            return
        with contextlib.suppress(Exception):
            await self._session.close()


def _status(code: int, raw: bytes) -> Obj:
    with contextlib.suppress(orjson.JSONDecodeError):
        doc = orjson.loads(raw)
        if isinstance(doc, dict) and doc.get("kind") == "Status":
            return doc
    return {"kind": "Status", "status": "Failure", "code": code, "message": raw[:500].decode("utf-8", "replace")}
