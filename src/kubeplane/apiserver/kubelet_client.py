"""How the API server reaches a node's kubelet: upstream's ``NodeConnectionInfoGetter`` (pkg/kubelet/client).

Upstream reads the Node, takes the first address of the preferred types (kube-apiserver's
``--kubelet-preferred-address-types``, default ``Hostname, InternalDNS, InternalIP, ExternalDNS, ExternalIP``;
none is the error ``no preferred addresses found; known addresses: [...]``) and the port
``status.daemonEndpoints.kubeletEndpoint.Port`` (10250 when unset), and dials ``https://<address>:<port>``.

kubeplane's kubelets are simulated by fleets that serve their kubelet API on 127.0.0.1
(:mod:`kubeplane.kubelet.kubelet_server`), so the connection goes to 127.0.0.1 at the advertised port with the
chosen address (the node name, a Hostname address) as the ``Host``: the request is the one upstream sends to
``<node>:<port>``, its name resolved to loopback. Plain HTTP (the fleet's endpoint is loopback-only).

A kubelet that cannot be reached is a 500 whose message is Go's ``http.Client`` error, as kube-apiserver answers
(``Get "http://node01:10250/containerLogs/...": dial tcp 127.0.0.1:10250: connect: connection refused``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp

from . import errors
from .registry import Registry

PREFERRED_ADDRESS_TYPES = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS", "ExternalIP")
DEFAULT_KUBELET_PORT = 10250
KUBELET_HOST = "127.0.0.1"
"""Where every simulated kubelet answers (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class Connection:
    hostname: str
    port: int

    def url(self, path: str, query: Mapping[str, str] | None = None) -> str:
        """The URL upstream would dial (for messages): ``http://<hostname>:<port><path>?<query>``."""
        text = f"http://{self.hostname}:{self.port}{quote(path)}"
        return f"{text}?{urlencode(query)}" if query else text


def _address_list(addresses: Any) -> str:
    """Go's ``%v`` of ``[]NodeAddress``: ``[{Hostname node01} {InternalIP 10.0.0.1}]``."""
    items = [f"{{{a.get('type', '')} {a.get('address', '')}}}" for a in addresses or [] if isinstance(a, dict)]
    return "[" + " ".join(items) + "]"


class KubeletClient:
    """Connections to kubelets for ``pods/log`` and the resource metrics (one aiohttp session, keep-alive)."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._session: aiohttp.ClientSession | None = None

    async def connection(self, node_name: str) -> Connection:
        """``GetConnectionInfo``: 404 for a missing Node, 500 for a Node without a usable address."""
        node = await self._registry.get(self._registry.resource("", "nodes"), None, node_name)
        status = node.get("status") or {}
        addresses = status.get("addresses") or []
        hostname = ""
        for kind in PREFERRED_ADDRESS_TYPES:
            hostname = next((a.get("address", "") for a in addresses if a.get("type") == kind), "")
            if hostname:
                break
        if not hostname:
            raise errors.APIError(
                code=500,
                reason="",
                message=f"no preferred addresses found; known addresses: {_address_list(addresses)}",
            )
        port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port") or 0
        return Connection(hostname, int(port) if int(port) > 0 else DEFAULT_KUBELET_PORT)

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30.0)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=None, connect=10.0), auto_decompress=False
            )
        return self._session

    async def get(self, conn: Connection, path: str, query: Mapping[str, str] | None = None) -> aiohttp.ClientResponse:
        """``GET path`` on the kubelet of ``conn``; the caller reads and releases the response. A kubelet that
        cannot be reached is the 500 of the module docstring."""
        url = f"http://{KUBELET_HOST}:{conn.port}{quote(path)}"
        try:
            return await self.session().get(
                url, params=dict(query or {}), headers={"Host": f"{conn.hostname}:{conn.port}"}
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise errors.APIError(code=500, reason="", message=_dial_error(conn, path, query, exc)) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def _dial_error(conn: Connection, path: str, query: Mapping[str, str] | None, exc: BaseException) -> str:
    """Go's ``*url.Error`` text for a failed dial: ``Get "URL": dial tcp HOST:PORT: connect: connection refused``."""
    if isinstance(exc, aiohttp.ClientConnectorError | ConnectionRefusedError):
        reason = f"dial tcp {KUBELET_HOST}:{conn.port}: connect: connection refused"
    else:
        reason = str(exc) or type(exc).__name__
    return f'Get "{conn.url(path, query)}": {reason}'
