"""Run the API server: store, registry, ASGI app under uvicorn, kubeconfig, housekeeping.

Start-up order: open the store, start the registry (watch caches, bootstrap objects), bind 127.0.0.1, serve,
and only then write ``<data-dir>/kubeconfig`` (write to a temporary file, fsync, rename; mode 0600), so a
kubeconfig that exists always points at a server that answers. Shutdown (SIGINT/SIGTERM) closes every watch
at once, lets in-flight requests finish, stops the registry and closes the store; acknowledged writes are
already durable by then.

Slow clients are timed out and connections capped (:mod:`.http.connections`): the open-file soft limit is
raised to the hard limit at start and the cap kept below it.

Housekeeping, as kube-apiserver (:mod:`.housekeeping`): every ``compaction_interval`` the store is compacted to
the revision seen at the previous tick (so at least one interval of history stays for watch resumption), and
core Events older than ``event_ttl`` are deleted.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import secrets
import socket
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeplane.store.interface import Store, StoreError
from kubeplane.store.memory import MemoryStore
from kubeplane.store.sqlite import SqliteStore

from .auth import bootstrap
from .auth.authentication import TokenFileError, load_token_file
from .auth.modes import DEFAULT_MODES, build_authorizer, parse_modes
from .housekeeping import housekeeping
from .http.app import APIServerApp
from .http.connections import (
    ConnectionGuard,
    ConnectionLimits,
    GuardedHttpToolsProtocol,
    default_max_connections,
    raise_open_file_limit,
)
from .private_files import write_private
from .registry import Registry
from .service_alloc import DEFAULT_NODE_PORT_RANGE, DEFAULT_SERVICE_CIDR
from .servicecidrs import ensure_default_service_cidr
from .services import ensure_kubernetes_service
from .tls import ServingCerts, ensure_serving_certs
from .tokens import SigningKey, TokenIssuer, UserInfo
from .watchcache import WATCHER_BUDGET

log = logging.getLogger("kubeplane.apiserver")


@dataclass
class ServerConfig:
    data_dir: Path = field(default_factory=lambda: Path(".kubeplane"))
    host: str = "127.0.0.1"
    port: int = 6443
    store: str = "sqlite"
    compaction_interval: float = 300.0
    event_ttl: float = 3600.0
    auth: bool = True
    tls: bool = True
    kubeconfig_name: str = "kubeconfig"
    """The file in ``data_dir`` written once the server answers (``kubeplane up --processes`` renames it)."""
    etcd_servers: tuple[str, ...] = ()
    etcd_prefix: str = "/registry"
    etcd_cafile: Path | None = None
    etcd_certfile: Path | None = None
    etcd_keyfile: Path | None = None
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    """Header, body and TLS-handshake timeouts and the connection cap (``--header-timeout``, ...)."""
    watch_buffer_bytes: int = WATCHER_BUDGET
    """The byte budget of each HTTP watcher's queue of unsent events (past it the watcher is closed)."""
    service_cluster_ip_range: str = DEFAULT_SERVICE_CIDR
    """``--service-cluster-ip-range``: the CIDR(s) ClusterIPs come from (the first address is ``kubernetes``'s)."""
    service_node_port_range: str = DEFAULT_NODE_PORT_RANGE
    """``--service-node-port-range``: where NodePorts come from."""
    service_account_admission: bool = True
    """The ServiceAccount admission plugin (``--disable-admission-plugins ServiceAccount`` turns it off)."""
    authorization_mode: str = ""
    """``--authorization-mode``: comma-separated modes (Node, RBAC, AlwaysAllow, AlwaysDeny); empty: ``Node,RBAC``
    when requests are authenticated, AlwaysAllow when not (``auth=False``: no identities to authorize)."""
    token_auth_file: Path | None = None
    """``--token-auth-file``: more users by bearer token (CSV ``token,user,uid,"group1,group2"``), besides the
    admin token."""
    ui: Callable[[APIServerApp], Any] | None = None
    """Builds the web UI mounted at ``/ui`` over the app (``kubeplane.ui.UIApp``; the CLI passes it, as apiserver/
    may not import the UI's layer)."""


def open_store(config: ServerConfig) -> Store:
    if config.store == "memory":
        return MemoryStore()
    if config.store == "sqlite":
        return SqliteStore(config.data_dir / "store.db")
    if config.store == "etcd":
        from kubeplane.store.etcd import EtcdOptions, EtcdStore

        if not config.etcd_servers:
            raise StoreError("--store etcd needs --etcd-servers URL[,URL...]")
        return EtcdStore(
            EtcdOptions(
                endpoints=config.etcd_servers,
                key_prefix=config.etcd_prefix.rstrip("/") or "/registry",
                ca_file=config.etcd_cafile,
                cert_file=config.etcd_certfile,
                key_file=config.etcd_keyfile,
            )
        )
    raise StoreError(f"unknown store {config.store!r}: use sqlite, memory or etcd")


def admin_token(data_dir: Path) -> str:
    """The admin bearer token, kept in ``<data-dir>/admin.token`` (0600) so restarts keep kubeconfigs valid."""
    path = data_dir / "admin.token"
    if path.exists():
        return path.read_text().strip()
    token = secrets.token_urlsafe(32)
    write_private(path, (token + "\n").encode())
    return token


def kubeconfig_text(server: str, token: str, *, ca_pem: bytes | None = None) -> str:
    ca = f"    certificate-authority-data: {base64.b64encode(ca_pem).decode()}\n" if ca_pem else ""
    return (
        "apiVersion: v1\n"
        "kind: Config\n"
        "clusters:\n"
        "- name: kubeplane\n"
        "  cluster:\n"
        f"    server: {server}\n"
        f"{ca}"
        "contexts:\n"
        "- name: kubeplane\n"
        "  context:\n"
        "    cluster: kubeplane\n"
        "    user: admin\n"
        "    namespace: default\n"
        "current-context: kubeplane\n"
        "users:\n"
        "- name: admin\n"
        "  user:\n"
        f"    token: {token}\n"
        "preferences: {}\n"
    )


class _Server:
    """uvicorn's Server, closing every watch stream as soon as shutdown is requested, and serving through
    :class:`GuardedHttpToolsProtocol` under a :class:`ConnectionGuard` (uvicorn has no hook for header/body
    timeouts, a connection cap or the TLS-handshake timeout, so its ``startup`` is replaced by the few lines
    that create the listening server)."""

    def __init__(
        self,
        app: APIServerApp,
        sock: socket.socket,
        certs: ServingCerts | None = None,
        limits: ConnectionLimits | None = None,
    ) -> None:
        import uvicorn

        limits = chosen = limits or ConnectionLimits()
        open_files = raise_open_file_limit()
        cap = limits.max_connections or default_max_connections(open_files)
        if cap > open_files:
            log.warning("--max-connections %d is above the open-file limit %d", cap, open_files)
        self.guard = guard = ConnectionGuard(limits, cap)
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            http="httptools",
            timeout_graceful_shutdown=3,
            # longer than clients keep idle connections (kubeplane's: 30 s), so a client never writes a request
            # on a connection the server has just closed (aiohttp would fail that write, unretried)
            timeout_keep_alive=75,
            access_log=False,
            ssl_certfile=str(certs.cert) if certs else None,
            ssl_keyfile=str(certs.key) if certs else None,
            # client certificates signed by the cluster CA authenticate (x509: CN user, O groups); one that does
            # not verify fails the handshake, as Go's VerifyClientCertIfGiven
            ssl_cert_reqs=ssl.CERT_OPTIONAL if certs else ssl.CERT_NONE,
            ssl_ca_certs=str(certs.ca) if certs else None,
        )

        class Server(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                app.close_watches()
                super().handle_exit(sig, frame)

            async def startup(self, sockets: list[socket.socket] | None = None) -> None:
                config, state = self.config, self.server_state
                loop = asyncio.get_running_loop()

                def protocol() -> GuardedHttpToolsProtocol:
                    return GuardedHttpToolsProtocol(config=config, server_state=state, app_state={}, guard=guard)

                handshake = chosen.handshake_timeout if config.ssl and chosen.handshake_timeout > 0 else None
                self.servers = [
                    await loop.create_server(
                        protocol, sock=s, ssl=config.ssl, backlog=config.backlog, ssl_handshake_timeout=handshake
                    )
                    for s in sockets or []
                ]
                guard.start()
                self.started = True

            async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
                guard.stop()
                await super().shutdown(sockets)
                await app.close_kubelet_client()

        self.server = Server(config)
        self.sock = sock
        self.app = app

    async def serve(self) -> None:
        await self.server.serve(sockets=[self.sock])

    def stop(self) -> None:
        self.app.close_watches()
        self.server.should_exit = True


async def authorize_with(registry: Registry, authorization_mode: str) -> None:
    """Set ``registry.authorizer`` from ``--authorization-mode`` (default ``Node,RBAC``) and, with RBAC, run
    upstream's ``rbac/bootstrap-roles`` post-start hook (``auth.bootstrap.reconcile``) before anything is
    served, so the bootstrap roles and bindings exist when the first request is authorized."""
    modes = parse_modes(authorization_mode or ",".join(DEFAULT_MODES))
    registry.authorizer = build_authorizer(registry, modes)
    if "RBAC" in modes:
        await bootstrap.reconcile(registry)


async def run_apiserver(
    config: ServerConfig,
    *,
    on_ready: Callable[[str, Path], None] | None = None,
    stop: asyncio.Event | None = None,
    attach: Callable[[Registry], Awaitable[Callable[[], Awaitable[None]]]] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM (or ``stop`` is set).

    ``attach`` runs components in this process over the registry (``kubeplane up``): it is awaited once the
    server listens and before the kubeconfig is written (so the kubeconfig means "ready"), and returns the
    coroutine function that stops them, awaited on shutdown before the store closes, so every write a
    component had acknowledged is in the store."""
    config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # private: store, keys, admin token
    store = open_store(config)
    registry = Registry(
        store=store,
        service_cidr=config.service_cluster_ip_range,
        node_port_range=config.service_node_port_range,
        token_issuer=TokenIssuer(SigningKey.load_or_create(config.data_dir)),
        service_account_admission=config.service_account_admission,
    )
    await registry.start()
    token = admin_token(config.data_dir)
    users: dict[str, UserInfo | str] | None = None
    if config.auth:
        try:
            users = dict(load_token_file(config.token_auth_file)) if config.token_auth_file else {}
            users[token] = "admin"
            await authorize_with(registry, config.authorization_mode)
        except (TokenFileError, ValueError) as exc:  # bad flags: refuse to serve, say why
            await registry.stop()
            await store.close()
            raise StoreError(str(exc)) from None
    app = APIServerApp(registry, tokens=users, watch_buffer_bytes=config.watch_buffer_bytes)
    if config.ui is not None:
        app.ui = config.ui(app)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((config.host, config.port))
    except OSError as exc:
        await registry.stop()
        await store.close()
        raise StoreError(f"cannot listen on {config.host}:{config.port}: {exc.strerror}") from None
    sock.listen(1024)
    port = sock.getsockname()[1]
    await ensure_kubernetes_service(registry, config.host, port)  # needs the bound port (--port 0)
    await ensure_default_service_cidr(registry)  # upstream's defaultservicecidr controller, first sync
    certs = ensure_serving_certs(config.data_dir) if config.tls else None
    server = _Server(app, sock, certs, config.limits)
    address = f"{'https' if certs else 'http'}://{config.host}:{port}"
    ca_pem = certs.ca.read_bytes() if certs else None
    kubeconfig = config.data_dir / config.kubeconfig_name
    tasks = [
        asyncio.create_task(
            housekeeping(
                registry,
                compaction_interval=config.compaction_interval,
                event_ttl=config.event_ttl,
                sleep=asyncio.sleep,
                monotonic=time.monotonic,
            ),
            name="housekeeping",
        )
    ]

    stoppers: list[Callable[[], Awaitable[None]]] = []
    failures: list[Exception] = []

    async def announce() -> None:
        while not server.server.started:
            await asyncio.sleep(0.01)
        if attach is not None:
            try:
                stoppers.append(await attach(registry))
            except Exception as exc:  # the components could not start: stop serving, report it
                failures.append(exc)
                server.stop()
                return
        write_private(kubeconfig, kubeconfig_text(address, token, ca_pem=ca_pem).encode())
        log.warning("kubeplane apiserver serving on %s; kubeconfig: %s", address, kubeconfig)
        if on_ready is not None:
            on_ready(address, kubeconfig)
        if stop is not None:
            await stop.wait()
            server.stop()

    tasks.append(asyncio.create_task(announce(), name="announce"))
    try:
        await server.serve()
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for stopper in stoppers:
            await stopper()
        await registry.stop()
        await store.close()
    if failures:
        raise failures[0]
