"""Reaching etcd: connection options, one gRPC channel at a time with failover, unary calls and raw watch streams.

The wire protocol is etcd's gRPC API through the generated stubs that ship with ``aetcd`` (``aetcd.rpc``) on
``grpc.aio``; aetcd's high-level client is not used because it cannot range with a limit or at a revision,
request watch progress, use TLS or fail over between endpoints. This module knows nothing of the Store
protocol's keys or revisions: :mod:`kubeplane.store.etcd_feed` and :mod:`kubeplane.store.etcd` map them.

Failover: endpoints are tried in turn. Reads retry on the next endpoint on any connection error; a write is
retried only when the connection failed before the request was sent. A write whose outcome is unknown (the
member died while it was in flight) raises :class:`EtcdUnavailable`, as kube-apiserver returns an error for an
etcd timeout; the caller re-reads before retrying.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import grpc.aio
from aetcd import rpc

from .interface import StoreError

ERR_COMPACTED = "required revision has been compacted"
ERR_FUTURE = "required revision is a future revision"
ERR_BAD_TOKEN = "invalid auth token"

_SEMVER = re.compile(r"^(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")


def supports_request_watch_progress(version: str) -> bool:
    """Whether an etcd server of ``version`` answers a RequestProgress in order with the watch's events: as
    kube-apiserver's ``endpointSupportsRequestWatchProgress`` (storage/feature/feature_support_checker.go), not
    before 3.4.31 nor in 3.5.0-3.5.12. Older servers send the requested notification on a separate channel, so
    it can overtake events still queued (etcd-io/etcd#15220, fixed in 3.4.25/3.5.8) or come for a watch that is
    not synced (etcd-io/etcd#17507, fixed in 3.4.31/3.5.13): a revision claimed from it may precede events not
    yet delivered. A version that is not strict semver counts as unsupported (upstream's ``ParseSemantic``); a
    pre-release sorts before its release."""
    match = _SEMVER.match(version.strip())
    if match is None:
        return False
    release = (int(match[1]), int(match[2]), int(match[3]))
    pre = match[4] is not None

    def before(bound: tuple[int, int, int]) -> bool:
        return release < bound or (release == bound and pre)

    return not (before((3, 4, 31)) or (not before((3, 5, 0)) and before((3, 5, 13))))


DEFAULT_ENDPOINTS = ("http://127.0.0.1:2379",)


class EtcdRequestError(StoreError):
    """etcd refused a request (auth, permission, a bad argument): its gRPC error, as a StoreError."""

    def __init__(self, error: grpc.aio.AioRpcError) -> None:
        super().__init__(f"etcd: {error.details() or error.code().name}")
        self.rpc_error = error


class EtcdUnavailable(StoreError):
    """No etcd member answered, or a write's outcome is unknown because its member failed mid-request."""


@dataclass(frozen=True)
class EtcdOptions:
    """How to reach etcd. ``endpoints`` are URLs (``http://`` or ``https://``), tried in order on failure."""

    endpoints: Sequence[str] = DEFAULT_ENDPOINTS
    key_prefix: str = "/registry"
    store_root: str = "/registry"
    revision_offset: int = 0
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    username: str | None = None
    password: str | None = None
    dial_timeout: float = 5.0
    request_timeout: float = 10.0
    progress_timeout: float = 5.0
    ring_size: int = 1_000
    physical_compaction: bool = False


def prefix_end(prefix: bytes) -> bytes:
    """etcd's range_end for "every key starting with prefix" (b"\\0" = to the end of the key space)."""
    end = bytearray(prefix)
    while end:
        if end[-1] < 0xFF:
            end[-1] += 1
            return bytes(end)
        end.pop()
    return b"\0"


def not_sent(error: grpc.aio.AioRpcError) -> bool:
    """True if the call failed while connecting, so the server never saw it (safe to retry a write)."""
    details = (error.details() or "").lower()
    return "failed to connect" in details or "connection refused" in details or "no address" in details


class Connection:
    """One gRPC channel at a time to one endpoint; rotates to the next endpoint when that channel fails."""

    def __init__(self, options: EtcdOptions) -> None:
        if not options.endpoints:
            raise ValueError("at least one etcd endpoint is required")
        if (options.username is None) != (options.password is None):
            raise ValueError("etcd username and password go together")
        self._options = options
        self._index = 0
        self._channel: grpc.aio.Channel | None = None
        self._retired: list[grpc.aio.Channel] = []
        self._metadata: tuple[tuple[str, str], ...] | None = None
        self._lock = asyncio.Lock()
        self.kv: Any = None
        self.watch_stub: Any = None

    def _credentials(self) -> grpc.ChannelCredentials:
        o = self._options
        root = o.ca_file.read_bytes() if o.ca_file else None
        cert = o.cert_file.read_bytes() if o.cert_file else None
        key = o.key_file.read_bytes() if o.key_file else None
        return grpc.ssl_channel_credentials(root_certificates=root, private_key=key, certificate_chain=cert)

    async def channel(self) -> grpc.aio.Channel:
        if self._channel is not None:
            return self._channel
        async with self._lock:
            current = self._current()  # another task may have connected while this one waited
            if current is not None:
                return current
            endpoint = self._options.endpoints[self._index % len(self._options.endpoints)]
            url = urlsplit(endpoint if "://" in endpoint else f"http://{endpoint}")
            target = url.netloc
            secure = url.scheme == "https" or self._options.ca_file is not None
            if secure:
                channel = grpc.aio.secure_channel(target, self._credentials())
            else:
                channel = grpc.aio.insecure_channel(target)
            try:
                await asyncio.wait_for(channel.channel_ready(), self._options.dial_timeout)
                kv = rpc.KVStub(channel)
                metadata = None
                if self._options.username is not None:
                    auth = rpc.AuthStub(channel)
                    request = rpc.AuthenticateRequest(name=self._options.username, password=self._options.password)
                    response = await auth.Authenticate(request, timeout=self._options.dial_timeout)
                    metadata = (("token", response.token),)
            except (TimeoutError, grpc.aio.AioRpcError):
                self._index += 1
                self._retired.append(channel)
                raise
            self._channel = channel
            self._metadata = metadata
            self.kv = kv
            self.watch_stub = rpc.WatchStub(channel)
            return channel

    def _current(self) -> grpc.aio.Channel | None:
        return self._channel

    @property
    def endpoint(self) -> str:
        """The endpoint the current (or next) channel is to."""
        return self._options.endpoints[self._index % len(self._options.endpoints)]

    async def server_version(self, channel: grpc.aio.Channel) -> str:
        """The etcd version ``channel``'s member reports (Maintenance.Status)."""
        stub = rpc.MaintenanceStub(channel)
        request = rpc.StatusRequest()
        response = await stub.Status(request, timeout=self._options.request_timeout, metadata=self._metadata)
        return str(response.version)

    @property
    def metadata(self) -> tuple[tuple[str, str], ...] | None:
        return self._metadata

    def rotate(self, failed: grpc.aio.Channel | None) -> None:
        """Give up on ``failed`` (if it is still the current channel) and move to the next endpoint."""
        if failed is not None and failed is self._channel:
            self._retired.append(failed)
            self._channel = None
            self._index += 1

    async def call(self, method: str, request: Any, *, idempotent: bool) -> Any:
        """A unary call with failover; see the module docstring for which failures are retried."""
        attempts = 3 * len(self._options.endpoints)
        last: BaseException | None = None
        for attempt in range(attempts):
            if attempt and attempt % len(self._options.endpoints) == 0:
                await asyncio.sleep(0.2 * attempt)
            try:
                channel = await self.channel()
            except (TimeoutError, grpc.aio.AioRpcError) as error:
                last = error
                continue
            try:
                return await getattr(self.kv, method)(
                    request, timeout=self._options.request_timeout, metadata=self._metadata
                )
            except grpc.aio.AioRpcError as error:
                code = error.code()
                if code is grpc.StatusCode.UNAUTHENTICATED or ERR_BAD_TOKEN in (error.details() or ""):
                    self.rotate(channel)  # re-authenticates on the next channel
                    last = error
                    continue
                if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
                    self.rotate(channel)
                    last = error
                    if idempotent or not_sent(error):
                        continue
                    raise EtcdUnavailable(f"etcd {method} outcome unknown: {error.details()}") from error
                raise EtcdRequestError(error) from None
        raise EtcdUnavailable(f"no etcd endpoint of {list(self._options.endpoints)} answered: {last}") from last

    async def close(self) -> None:
        channels = [*self._retired, *([self._channel] if self._channel is not None else [])]
        self._channel = None
        self._retired = []
        for channel in channels:
            with contextlib.suppress(Exception):
                await channel.close(grace=None)


class WatchStream:
    """One etcd watch on its own gRPC stream; yields lists of raw events (one response each)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._call: Any = None
        self.channel: grpc.aio.Channel | None = None

    async def open(self, key: bytes, range_end: bytes, start_revision: int, *, timeout: float) -> None:
        self.channel = await self._connection.channel()
        self._call = self._connection.watch_stub.Watch(metadata=self._connection.metadata)
        create = rpc.WatchCreateRequest(
            key=key, range_end=range_end, start_revision=start_revision, prev_kv=True, progress_notify=True
        )
        await self._call.write(rpc.WatchRequest(create_request=create))
        response = await asyncio.wait_for(self._call.read(), timeout)
        if response is grpc.aio.EOF:
            raise EtcdUnavailable("etcd closed the watch stream")
        if response.compact_revision:
            raise EtcdCompacted(response.compact_revision)
        if response.canceled:
            raise EtcdUnavailable(f"etcd refused the watch: {response.cancel_reason}")

    async def request_progress(self) -> None:
        if self._call is not None:
            await self._call.write(rpc.WatchRequest(progress_request=rpc.WatchProgressRequest()))

    async def read(self) -> Any:
        response = await self._call.read()
        if response is grpc.aio.EOF:
            raise EtcdUnavailable("etcd closed the watch stream")
        if response.compact_revision:
            raise EtcdCompacted(response.compact_revision)
        if response.canceled:
            raise EtcdUnavailable(f"etcd cancelled the watch: {response.cancel_reason}")
        return response

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None


class EtcdCompacted(Exception):
    """etcd answered a watch with "compacted": its start revision is gone (``compact_revision`` is etcd's)."""

    def __init__(self, compact_revision: int) -> None:
        super().__init__(f"etcd compacted at {compact_revision}")
        self.compact_revision = compact_revision
