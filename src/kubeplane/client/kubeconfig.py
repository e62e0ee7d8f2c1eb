"""Where a kubeplane command finds its cluster, and what a kubeconfig says.

Lookup order (DESIGN.md decision 4): ``--kubeconfig``, then ``$KUBECONFIG`` (the first file of the list that
exists), then ``./.kubeplane/kubeconfig``. ``~/.kube/config`` is read only when named explicitly: a kubeplane
command must never drive a cluster the user did not point it at. In a pod, :func:`in_cluster_config` reads the
service account as client-go's rest.InClusterConfig does.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubeplane.api import yamlio
from kubeplane.api.views import section

from .errors import ClientError
from .pod_root import pod_path

DEFAULT_KUBECONFIG = Path(".kubeplane") / "kubeconfig"
FAILOVER_EXTENSION = "kubeplane.io/failover"
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Everything needed to reach one API server as one user."""

    server: str
    token: str | None = None
    ca_data: bytes | None = None
    client_cert_data: bytes | None = None
    client_key_data: bytes | None = None
    insecure: bool = False
    namespace: str = "default"
    qps: float = 50.0
    burst: int = 100
    source: str = ""
    failover: tuple[str, ...] = ()
    """More API servers of the same cluster (same CA and token), tried in turn when one cannot be reached: the
    kubeconfig's cluster extension ``kubeplane.io/failover`` (``{servers: [URL, ...]}``), which kubectl ignores."""

    @property
    def servers(self) -> tuple[str, ...]:
        return (self.server, *self.failover)


def find_kubeconfig(explicit: str | os.PathLike[str] | None = None, *, cwd: Path | None = None) -> Path:
    """The kubeconfig to use, by the lookup order above; ClientError naming what was tried if none exists."""
    if explicit:
        path = Path(explicit)
        if not path.exists():
            raise ClientError(f"kubeconfig {path} does not exist")
        return path
    tried: list[str] = []
    env = os.environ.get("KUBECONFIG", "")
    for entry in env.split(os.pathsep):
        if entry:
            tried.append(entry)
            if Path(entry).exists():
                return Path(entry)
    default = (cwd or Path.cwd()) / DEFAULT_KUBECONFIG
    tried.append(str(default))
    if default.exists():
        return default
    raise ClientError(f"no kubeconfig found (tried --kubeconfig, $KUBECONFIG, {', '.join(tried)}); pass --kubeconfig")


def _named(entries: Any, name: str, what: str, path: Path) -> dict[str, Any]:
    for entry in entries or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            value = entry.get(what)
            if isinstance(value, dict):
                return value
    raise ClientError(f"{path}: no {what} named {name!r}")


def _data(section: dict[str, Any], key: str, base: Path) -> bytes | None:
    """``<key>-data`` (base64) or ``<key>`` (a file path, relative to the kubeconfig's directory)."""
    inline = section.get(f"{key}-data")
    if inline:
        return base64.b64decode(inline)
    file = section.get(key)
    if file:
        return (base / str(file)).read_bytes()
    return None


def load_kubeconfig(path: Path, *, context: str | None = None) -> ClientConfig:
    try:
        doc = yamlio.load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ClientError(f"cannot read kubeconfig {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ClientError(f"{path} is not a kubeconfig")
    name = context or doc.get("current-context")
    if not name:
        raise ClientError(f"{path}: no current-context; pass a context")
    ctx = _named(doc.get("contexts"), str(name), "context", path)
    cluster = _named(doc.get("clusters"), str(ctx.get("cluster")), "cluster", path)
    user = _named(doc.get("users"), str(ctx.get("user")), "user", path) if ctx.get("user") else {}
    server = cluster.get("server")
    if not server:
        raise ClientError(f"{path}: cluster {ctx.get('cluster')!r} has no server")
    base = path.parent
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = (base / user["tokenFile"]).read_text().strip()
    failover: list[str] = []
    for extension in cluster.get("extensions") or []:
        if isinstance(extension, dict) and extension.get("name") == FAILOVER_EXTENSION:
            failover += [str(u).rstrip("/") for u in section(extension, "extension").get("servers") or []]
    return ClientConfig(
        server=str(server).rstrip("/"),
        failover=tuple(failover),
        token=str(token) if token else None,
        ca_data=_data(cluster, "certificate-authority", base),
        client_cert_data=_data(user, "client-certificate", base),
        client_key_data=_data(user, "client-key", base),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        namespace=str(ctx.get("namespace") or "default"),
        source=str(path),
    )


def in_cluster_config(root: Path = SERVICE_ACCOUNT) -> ClientConfig:
    """client-go's ``rest.InClusterConfig``: the API server of ``KUBERNETES_SERVICE_HOST``/``_PORT`` with the
    ServiceAccount token and CA under ``root``, which a kubeplane-started pod re-roots under
    ``$KUBEPLANE_POD_ROOT`` (:mod:`~kubeplane.client.pod_root`)."""
    root = pod_path(root)
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise ClientError("not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    namespace = root / "namespace"
    return ClientConfig(
        server=f"https://{host}:{port}",
        token=(root / "token").read_text().strip(),
        ca_data=(root / "ca.crt").read_bytes(),
        namespace=namespace.read_text().strip() if namespace.exists() else "default",
        source="in-cluster",
    )
