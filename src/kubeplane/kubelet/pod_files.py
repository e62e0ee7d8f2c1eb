"""The files of a pod whose containers run as real processes: its volumes on disk and each container's root.

Layout, under the fleet's run directory (:class:`~kubeplane.kubelet.process_runtime.ProcessRuntime` owns it):

* ``pods/<uid>/volumes/<volume>/`` -- one directory per volume of the pod, written once when the pod starts
  (upstream's volume manager ``MountVolume.SetUp``): ``configMap`` and ``secret`` volumes (``items`` or every
  key, ``optional``), ``downwardAPI`` (``fieldRef``), ``projected`` (their sources, and ``serviceAccountToken``:
  a TokenRequest bound to the pod, ``audience`` or the API audiences, refreshed at 80 % of its life as the
  kubelet's token manager ``pkg/kubelet/token`` does), and any other type as an empty directory (``emptyDir``;
  ``hostPath`` is deliberately *not* the host's path). A ConfigMap or Secret that is missing (and not optional)
  fails the set-up with upstream's message; the pod workers retry, emitting ``FailedMount``.
* ``pods/<uid>/<container>/`` -- the container's root (``$KUBEPLANE_POD_ROOT``, :mod:`kubeplane.client.pod_root`):
  each ``volumeMount`` is a symlink at ``<root>/<mountPath>`` to the volume's directory (or its ``subPath``).

Files are written whole (a temporary file renamed over the old one) so a reader never sees half a token. Volume
contents are written once per pod: later ConfigMap changes are not synced (upstream syncs within about a minute).
Invariant: nothing is written outside ``pods/<uid>/`` (paths with ``..`` or absolute item paths are refused).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kubeplane.api.meta import parse_time
from kubeplane.client.clock import Clock
from kubeplane.client.errors import ClientError, NotFoundError
from kubeplane.client.interface import Client

from .process_image import field_value
from .runtime import PodRuntime

log = logging.getLogger("kubeplane.kubelet.fleet")

Obj = dict[str, Any]
REFRESH_FRACTION = 0.8
"""upstream ``pkg/kubelet/token`` ``requiresRefresh``: a token older than 80 % of its TTL is renewed."""
MAX_TTL = 24 * 3600.0
"""... or older than 24 h, whatever its TTL."""
DEFAULT_TOKEN_SECONDS = 3607


class MountError(Exception):
    """A volume cannot be set up yet; ``str()`` is upstream's ``MountVolume.SetUp failed ...`` message."""


def _write(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.chmod(mode)
    os.replace(tmp, path)


def _inside(base: Path, relative: str) -> Path:
    """``base/relative``, lexically normalised (symlinks are not followed); MountError if it would leave ``base``."""
    normal = os.path.normpath(relative)
    if relative.startswith("/") or normal == ".." or normal.startswith("../"):
        raise MountError(f"path {relative!r} leaves the volume")
    return base / normal


class PodFiles:
    """Volumes and container roots of the pods that run processes (see the module docstring)."""

    def __init__(
        self, client: Client, clock: Clock, base: Path, node_client: Callable[[str], Client] | None = None
    ) -> None:
        self._client, self._clock, self.base = client, clock, base
        self._node_client = node_client or (lambda _node: client)
        self._refreshers: dict[str, list[asyncio.Task[None]]] = {}

    def pod_dir(self, uid: str) -> Path:
        return self.base / "pods" / uid

    # --- volumes ----------------------------------------------------------------------------------------------

    async def set_up(self, rt: PodRuntime) -> None:
        """Write every volume of the pod (module docstring); MountError names the first that cannot be."""
        for task in self._refreshers.pop(rt.uid, []):
            task.cancel()
        volumes = (rt.pod.get("spec") or {}).get("volumes") or []
        refresh: list[tuple[Path, Obj]] = []
        for volume in volumes:
            name = str(volume.get("name"))
            target = self.pod_dir(rt.uid) / "volumes" / name
            target.mkdir(parents=True, exist_ok=True)
            try:
                if "configMap" in volume:
                    await self._keyed(rt, target, "configmap", volume["configMap"], "name")
                elif "secret" in volume:
                    await self._keyed(rt, target, "secret", volume["secret"], "secretName")
                elif "downwardAPI" in volume:
                    self._downward(rt, target, volume["downwardAPI"])
                elif "projected" in volume:
                    for source in (volume["projected"] or {}).get("sources") or []:
                        if "serviceAccountToken" in source:
                            await self._token(rt, target, source["serviceAccountToken"])
                            refresh.append((target, source["serviceAccountToken"]))
                        elif "configMap" in source:
                            await self._keyed(rt, target, "configmap", source["configMap"], "name")
                        elif "secret" in source:
                            await self._keyed(rt, target, "secret", source["secret"], "name")
                        elif "downwardAPI" in source:
                            self._downward(rt, target, source["downwardAPI"])
            except MountError as exc:
                raise MountError(f'MountVolume.SetUp failed for volume "{name}" : {exc}') from None
        loop = asyncio.get_running_loop()
        self._refreshers[rt.uid] = [
            loop.create_task(self._refresh(rt, target, source), name=f"token {rt.key}") for target, source in refresh
        ]

    async def _keyed(self, rt: PodRuntime, target: Path, kind: str, ref: Mapping[str, Any], name_key: str) -> None:
        name = str(ref.get(name_key) or "")
        client = self._node_client(rt.node)
        resource = client.resource("configmaps" if kind == "configmap" else "secrets")
        try:
            obj = await client.get(resource, name, namespace=rt.namespace)
        except NotFoundError:
            if ref.get("optional"):
                return
            raise MountError(f'{kind} "{name}" not found') from None
        except ClientError as exc:  # forbidden, unreachable: retried as a failed mount
            raise MountError(str(exc)) from None
        data = {k: str(v).encode() for k, v in (obj.get("data") or {}).items()}
        binary = obj.get("binaryData") if kind == "configmap" else obj.get("data")
        data.update({k: base64.b64decode(str(v)) for k, v in (binary or {}).items()})
        items = ref.get("items")
        mode = int(ref.get("defaultMode") or 0o644)
        if not items:
            for key, value in data.items():
                _write(_inside(target, key), value, mode)
            return
        for item in items:
            key = str(item.get("key"))
            if key not in data:
                if ref.get("optional"):
                    continue
                raise MountError(f"{kind} references non-existent {'config ' if kind == 'configmap' else ''}key: {key}")
            _write(_inside(target, str(item.get("path") or key)), data[key], int(item.get("mode") or mode))

    def _downward(self, rt: PodRuntime, target: Path, ref: Mapping[str, Any]) -> None:
        for item in ref.get("items") or []:
            ref_ = item.get("fieldRef") or {}
            value = field_value(rt.pod, str(ref_.get("fieldPath") or "")) if ref_ else None
            if value is not None:
                _write(_inside(target, str(item.get("path"))), value.encode())

    async def _token(self, rt: PodRuntime, target: Path, source: Mapping[str, Any]) -> float:
        """Request the pod's token and write it; returns its TTL in seconds."""
        spec = rt.pod.get("spec") or {}
        account = str(spec.get("serviceAccountName") or "default")
        seconds = int(source.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
        body: Obj = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "audiences": [source["audience"]] if source.get("audience") else [],
                "expirationSeconds": seconds,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": rt.name, "uid": rt.uid},
            },
        }
        issued = self._clock.now()
        try:
            client = self._node_client(rt.node)
            accounts = client.resource("serviceaccounts")
            reply = await client.create(accounts, body, namespace=rt.namespace, subresource="token", name=account)
        except ClientError as exc:
            raise MountError(str(exc)) from None
        status = reply.get("status") or {}
        _write(_inside(target, str(source.get("path") or "token")), str(status.get("token") or "").encode(), 0o600)
        ttl = float(seconds)
        with contextlib.suppress(ValueError, TypeError):
            ttl = parse_time(str(status.get("expirationTimestamp"))).timestamp() - issued
        return ttl

    async def _refresh(self, rt: PodRuntime, target: Path, source: Mapping[str, Any]) -> None:
        """Renew the token at 80 % of its life (at most every 24 h); a failed renewal is retried in 10 s."""
        ttl = float(source.get("expirationSeconds") or DEFAULT_TOKEN_SECONDS)
        while True:
            await self._clock.sleep(min(ttl * REFRESH_FRACTION, MAX_TTL))
            try:
                ttl = await self._token(rt, target, source)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("pod %s: token renewal failed: %s", rt.key, exc)
                ttl = 10.0 / REFRESH_FRACTION

    # --- container roots --------------------------------------------------------------------------------------

    def container_root(self, rt: PodRuntime, container: Mapping[str, Any]) -> Path:
        """The container's root with its mounts as symlinks (recreated at each start)."""
        root = self.pod_dir(rt.uid) / str(container.get("name"))
        root.mkdir(parents=True, exist_ok=True)
        volumes = self.pod_dir(rt.uid) / "volumes"
        for mount in container.get("volumeMounts") or []:
            path = str(mount.get("mountPath") or "").lstrip("/")
            if not path:
                continue
            link = _inside(root, path)
            source = volumes / str(mount.get("name"))
            if mount.get("subPath"):
                source = _inside(source, str(mount["subPath"]))
                if not source.exists():
                    source.mkdir(parents=True)
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.is_file():
                link.unlink()
            elif link.is_dir():
                shutil.rmtree(link)
            link.symlink_to(source)
        return root

    def forget(self, uid: str) -> None:
        """The pod is gone: its token renewals stop and its files are removed."""
        for task in self._refreshers.pop(uid, []):
            task.cancel()
        shutil.rmtree(self.pod_dir(uid), ignore_errors=True)

    def stop(self) -> None:
        for tasks in self._refreshers.values():
            for task in tasks:
                task.cancel()
        self._refreshers.clear()
