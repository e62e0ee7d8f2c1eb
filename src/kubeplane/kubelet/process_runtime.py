"""The real-process runtime: containers of kubeplane's own image run as kubeplane processes.

With ``FleetOptions.real_processes`` (on in ``kubeplane up`` and ``kubeplane kubelet``), a regular container whose
image is kubeplane's (:mod:`~kubeplane.kubelet.process_image`) is started, when the simulated one would start, as
a subprocess of the fleet: ``sys.executable -m kubeplane.cli.main <subcommand> <args>`` (the same interpreter and
installation: "the image" is this kubeplane), in the container's root directory (:mod:`~kubeplane.kubelet.pod_files`:
the pod's volumes, the ServiceAccount token, ``ca.crt`` and ``namespace`` at the usual paths) named by
``$KUBEPLANE_POD_ROOT``, with the pod's environment and the ``kubernetes`` service's variables pointing at the API
server's real endpoint, read from the ``default/kubernetes`` Endpoints (``127.0.0.1:<port>``: no service proxy
exists here, a documented departure from the ClusterIP a kubelet would give).

* **Logs**: each line of stdout and stderr goes to the container's log (:mod:`~kubeplane.kubelet.container_logs`),
  which ``kubectl logs`` reads through the fleet's kubelet API; the run's lines end when the process exits.
* **Exit**: the pod workers wait for the process; its exit code (128 + N for a death by signal N) becomes the
  container's ``terminated`` state and the pod's ``restartPolicy`` applies as for simulated containers.
* **Stop**: on pod deletion SIGTERM, then SIGKILL when the grace period (at least 2 s, upstream's minimum) ends;
  on fleet stop every process the runtime started gets SIGTERM and, 10 s later, SIGKILL. Signals go only to the
  PIDs this runtime started. Each process also asks the kernel to SIGKILL it if the fleet's thread dies
  (Linux ``PR_SET_PDEATHSIG``), so a killed ``kubeplane up`` leaves no scheduler behind.

Invariant: at most one live process per (pod UID, container); ``forget`` (the pod is gone from the API) kills what
is left of a pod's processes and removes its files.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubeplane.client.clock import Clock
from kubeplane.client.errors import ClientError, NotFoundError
from kubeplane.client.interface import Client
from kubeplane.client.pod_root import POD_ROOT_ENV

from .container_logs import ContainerLog
from .pod_files import MountError, PodFiles
from .process_image import StartError, command_line, expand, field_value, is_kubeplane_image, service_env
from .runtime import ContainerRuntime, PodRuntime

log = logging.getLogger("kubeplane.kubelet.fleet")

Obj = dict[str, Any]
STOP_ALL_WINDOW = 10.0
"""Seconds every process gets after SIGTERM when the fleet stops, before SIGKILL."""
LINE_LIMIT = 1 << 20


def exit_code(returncode: int) -> int:
    """A process's status as a container's exit code: a death by signal N is 128 + N (the shell's convention,
    which containerd reports too)."""
    return 128 - returncode if returncode < 0 else returncode


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the child dies with the fleet's thread."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)


@dataclass(eq=False)
class Process:
    """One started container process and the tasks copying its output into the container's log."""

    proc: asyncio.subprocess.Process
    pumps: list[asyncio.Task[None]] = field(default_factory=list)
    code: int | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid


async def _pump(stream: asyncio.StreamReader, log_: ContainerLog, run: int, clock: Clock) -> None:
    while True:
        try:
            line = await stream.readline()
        except ValueError:  # a line above LINE_LIMIT: take what is buffered as one line
            line = await stream.read(LINE_LIMIT)
        if not line:
            return
        log_.write(run, clock.now(), line.decode(errors="replace").rstrip("\n").rstrip("\r"))


class ProcessRuntime:
    """Starts, watches and stops the processes of kubeplane-image containers (see the module docstring).
    ``run_dir`` holds the pods' files; None: a temporary directory this runtime creates and removes."""

    def __init__(
        self,
        client: Client,
        clock: Clock,
        run_dir: Path | None = None,
        node_client: Callable[[str], Client] | None = None,
    ) -> None:
        """``node_client``: the client of a node's kubelet identity (its reads of the pod's ConfigMaps, Secrets
        and token requests are the node's, as the Node authorizer expects); default ``client`` for every node."""
        self._client, self._clock = client, clock
        self._node_client = node_client or (lambda _node: client)
        self._owned = run_dir is None
        self.run_dir = run_dir or Path(tempfile.mkdtemp(prefix="kubeplane-pods-"))
        self.files = PodFiles(client, clock, self.run_dir, node_client=self._node_client)
        self._procs: dict[tuple[str, str], Process] = {}
        self._background: set[asyncio.Task[None]] = set()

    @staticmethod
    def runs(image: str) -> bool:
        return is_kubeplane_image(image)

    def pids(self) -> list[int]:
        """PIDs of the processes still running (tests)."""
        return [p.pid for p in self._procs.values() if p.proc.returncode is None]

    def process(self, uid: str, container: str) -> Process | None:
        return self._procs.get((uid, container))

    # --- start ------------------------------------------------------------------------------------------------

    async def set_up(self, rt: PodRuntime) -> None:
        """The pod's volumes (raises :class:`~kubeplane.kubelet.pod_files.MountError` while one cannot be)."""
        await self.files.set_up(rt)

    async def api_endpoint(self, node: str) -> tuple[str, int] | None:
        """The API server's real address: the first of the ``default/kubernetes`` Endpoints; else (a kubelet
        identity that may read services but not endpoints, as upstream's ``system:node``) the ``kubernetes``
        Service's targetPort on 127.0.0.1, where kubeplane's API server always listens."""
        client = self._node_client(node)
        try:
            endpoints = await client.get(client.resource("endpoints"), "kubernetes", namespace="default")
        except ClientError:
            endpoints = {}
        for subset in endpoints.get("subsets") or []:
            addresses, ports = subset.get("addresses") or [], subset.get("ports") or []
            if addresses and ports:
                return str(addresses[0].get("ip")), int(ports[0].get("port"))
        try:
            service = await client.get(client.resource("services"), "kubernetes", namespace="default")
        except ClientError:
            return None
        for port in (service.get("spec") or {}).get("ports") or []:
            if isinstance(port.get("targetPort"), int):
                return "127.0.0.1", int(port["targetPort"])
        return None

    async def _values(self, rt: PodRuntime, kind: str, name: str, optional: bool) -> dict[str, str]:
        client = self._node_client(rt.node)
        resource = client.resource("configmaps" if kind == "ConfigMap" else "secrets")
        try:
            obj = await client.get(resource, name, namespace=rt.namespace)
        except NotFoundError:
            if optional:
                return {}
            raise StartError(f'{kind.lower()} "{name}" not found') from None
        except ClientError as exc:
            raise StartError(str(exc)) from None
        data = dict(obj.get("data") or {})
        if kind == "Secret":
            return {k: base64.b64decode(str(v)).decode(errors="replace") for k, v in data.items()}
        return {k: str(v) for k, v in data.items()}

    async def environment(self, rt: PodRuntime, container: Mapping[str, Any]) -> dict[str, str]:
        """The container's variables (:mod:`~kubeplane.kubelet.process_image`); StartError for a missing
        ConfigMap/Secret or key that is not optional (upstream: ``CreateContainerConfigError``)."""
        endpoint = await self.api_endpoint(rt.node)
        services = service_env(*endpoint) if endpoint else {}
        env: dict[str, str] = {}
        for source in container.get("envFrom") or []:
            for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                ref = source.get(key)
                if ref:
                    values = await self._values(rt, kind, str(ref.get("name")), bool(ref.get("optional")))
                    env.update({f"{source.get('prefix') or ''}{k}": v for k, v in values.items()})
        for var in container.get("env") or []:
            name, source = str(var.get("name")), var.get("valueFrom")
            if not source:
                env[name] = expand(str(var.get("value") or ""), {**services, **env})
                continue
            if source.get("fieldRef"):
                value = field_value(rt.pod, str(source["fieldRef"].get("fieldPath") or ""))
                if value is not None:
                    env[name] = value
                continue
            for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                ref = source.get(key)
                if not ref:
                    continue
                optional = bool(ref.get("optional"))
                values = await self._values(rt, kind, str(ref.get("name")), optional)
                wanted = str(ref.get("key"))
                if wanted in values:
                    env[name] = values[wanted]
                elif not optional:
                    raise StartError(f"couldn't find key {wanted} in {kind} {rt.namespace}/{ref.get('name')}")
        for key, value in services.items():
            env.setdefault(key, value)
        return env

    async def start(self, rt: PodRuntime, c: ContainerRuntime, container: Mapping[str, Any]) -> None:
        """Start ``c``'s process for its current run; StartError when it cannot start."""
        env = await self.environment(rt, container)
        argv = command_line(container, env)
        try:
            root = self.files.container_root(rt, container)
        except (MountError, OSError) as exc:
            raise StartError(f"mounting the container's volumes: {exc}") from None
        full = {"PATH": os.environ.get("PATH", os.defpath), "HOSTNAME": rt.name, "HOME": str(root)}
        if os.environ.get("PYTHONPATH"):
            full["PYTHONPATH"] = os.environ["PYTHONPATH"]  # the "image" is this installation
        full.update(env)
        full.update({POD_ROOT_ENV: str(root), "PYTHONUNBUFFERED": "1"})
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=root,
                env=full,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # a terminal's Ctrl-C reaches the fleet, which stops them in order
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                limit=LINE_LIMIT,
            )
        except OSError as exc:
            raise StartError(f"failed to start {argv[0]}: {exc}") from None
        started = Process(proc)
        loop = asyncio.get_running_loop()
        for stream in (proc.stdout, proc.stderr):
            assert stream is not None
            started.pumps.append(loop.create_task(_pump(stream, c.log, c.restart_count, self._clock)))
        self._procs[(rt.uid, c.name)] = started
        log.info("pod %s: container %s started as process %d: %s", rt.key, c.name, proc.pid, " ".join(argv[1:]))

    # --- exit and stop ----------------------------------------------------------------------------------------

    async def _finish(self, p: Process) -> int:
        returncode = await p.proc.wait()
        with contextlib.suppress(TimeoutError):  # a grandchild holding the pipes must not hold the container
            await asyncio.wait_for(asyncio.gather(*p.pumps, return_exceptions=True), 2.0)
        for pump in p.pumps:
            pump.cancel()
        p.code = exit_code(returncode)
        return p.code

    async def wait(self, uid: str, container: str) -> int:
        """The exit code of the container's process once it exits (0 when none was started)."""
        p = self._procs.get((uid, container))
        return 0 if p is None else await self._finish(p)

    async def stop(self, uid: str, container: str, window: float) -> int:
        """SIGTERM, then SIGKILL after ``window`` seconds; the exit code (upstream ``killContainer``)."""
        p = self._procs.get((uid, container))
        if p is None:
            return 0
        if p.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                p.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(p.proc.wait()), window)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    p.proc.kill()
        return await self._finish(p)

    def forget(self, uid: str, window: float = 2.0) -> None:
        """The pod is gone from the API: stop what is left of its processes (in the background), then remove
        its files."""
        names = [name for (owner, name) in self._procs if owner == uid]

        async def finish() -> None:
            await asyncio.gather(*(self.stop(uid, name, window) for name in names), return_exceptions=True)
            for name in names:
                self._procs.pop((uid, name), None)
            self.files.forget(uid)

        task = asyncio.get_running_loop().create_task(finish(), name=f"forget {uid}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def stop_all(self, window: float = STOP_ALL_WINDOW) -> None:
        """The fleet stops: every process gets SIGTERM, SIGKILL after ``window``; then their pods' files go (and
        the run directory, when this runtime created it)."""
        self.files.stop()
        keys = list(self._procs)
        await asyncio.gather(*(self.stop(uid, name, window) for uid, name in keys), return_exceptions=True)
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        self._procs.clear()
        for uid in {uid for uid, _ in keys}:
            self.files.forget(uid)
        if self._owned:
            shutil.rmtree(self.run_dir, ignore_errors=True)
