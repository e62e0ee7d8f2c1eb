"""The fleet's kubelet API: ``/containerLogs`` and ``/metrics/resource`` for every node, on one loopback port.

Upstream each kubelet serves its API on its node's port 10250 (``pkg/kubelet/server/server.go``); the API server
reaches it at the node's address and ``status.daemonEndpoints.kubeletEndpoint.Port`` for ``pods/log``, and
metrics-server scrapes ``/metrics/resource`` there. A fleet simulates thousands of kubelets in one process, so it
serves one HTTP endpoint on 127.0.0.1 and tells the nodes apart by the request's ``Host`` (the node name, as the
API server dials ``<node>:<port>``); every node of the fleet advertises that port in its daemonEndpoints.

``GET /containerLogs/{namespace}/{pod}/{container}`` follows ``Server.getContainerLogs`` and the kubelet's
``GetKubeletContainerLogs``/``validateContainerLogStatus`` (``pkg/kubelet/kubelet_pods.go``), with their
statuses and plain-text messages:

* query decoding (``tail`` as the old name of ``tailLines``, ``all`` meaning no limit) -- 400
  ``{"message": "Unable to decode query."}``; invalid options -- 422 ``{"message": "Invalid request."}``;
* a pod the node does not run -- 404 ``pod "p" does not exist``; a container the pod lacks -- 404
  ``container "c" not found in pod "p"``;
* the container's state decides which run is read, or a 400: ``previous terminated container "c" in pod "p" not
  found``, ``container "c" in pod "p" is waiting to start: ContainerCreating``, ``... is terminated``,
  ``container "c" in pod "p" is not available`` (a pod the kubelet rejected reports no container);
* then 200, ``text/plain``, chunked; with ``follow`` the response ends when the run ends or the reader leaves.

Plain HTTP: the endpoint is on loopback only and the API server is its one client (upstream uses TLS with client
certificates; ``insecureSkipTLSVerifyBackend`` has nothing to skip here).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from kubeplane.api.meta import parse_time
from kubeplane.client.clock import Clock

from . import container_logs, resource_metrics
from .runtime import ContainerRuntime, PodRuntime

DECODE_ERROR = '{"message": "Unable to decode query."}'
INVALID = '{"message": "Invalid request."}'


class QueryError(ValueError):
    pass


def _bool(value: str) -> bool:
    """The parameter codec's ``Convert_Slice_string_To_bool``: false only for ``0`` or any case of ``false``."""
    return not (value == "0" or value.lower() == "false")


def _int(value: str) -> int:
    try:
        return int(value, 10)
    except ValueError:
        raise QueryError(value) from None


def decode_query(query: Mapping[str, str], now: float) -> tuple[container_logs.ReadOptions, bool]:
    """``(read options, previous)`` from the kubelet's query; :class:`QueryError` for a value that does not
    convert, ``ValueError("invalid")`` for options ``ValidatePodLogOptions`` refuses."""
    values = dict(query)
    tail = values.pop("tail", None)
    if tail is not None and tail != "all":
        values["tailLines"] = tail
    follow = _bool(values["follow"]) if "follow" in values else False
    previous = _bool(values["previous"]) if "previous" in values else False
    timestamps = _bool(values["timestamps"]) if "timestamps" in values else False
    tail_lines = _int(values["tailLines"]) if "tailLines" in values else None
    limit = _int(values["limitBytes"]) if "limitBytes" in values else None
    since_seconds = _int(values["sinceSeconds"]) if "sinceSeconds" in values else None
    since_time: float | None = None
    if "sinceTime" in values:
        try:
            since_time = parse_time(values["sinceTime"]).timestamp()
        except ValueError:
            raise QueryError(values["sinceTime"]) from None
    if (
        (tail_lines is not None and tail_lines < 0)
        or (limit is not None and limit < 1)
        or (since_seconds is not None and since_time is not None)
        or (since_seconds is not None and since_seconds < 1)
    ):
        raise ValueError("invalid")
    since = since_time if since_time is not None else (now - since_seconds if since_seconds is not None else None)
    options = container_logs.ReadOptions(
        follow=follow,
        timestamps=timestamps,
        tail_lines=tail_lines,
        limit_bytes=limit,
        since_ns=None if since is None else round(since * 1e9),
    )
    return options, previous


class LogStatusError(Exception):
    """``validateContainerLogStatus``' refusal: a 400 with this message."""


def log_run(rt: PodRuntime, name: str, *, previous: bool) -> tuple[ContainerRuntime, int]:
    """Which run of container ``name`` to read (``validateContainerLogStatus``, in its order of cases)."""
    c = next((c for c in rt.all_containers() if c.name == name), None)
    if c is None or rt.rejected:
        raise LogStatusError(f'container "{name}" in pod "{rt.name}" is not available')
    last = c.last_state.get("terminated") or None
    if previous:
        if not last or not last.get("containerID"):
            raise LogStatusError(f'previous terminated container "{name}" in pod "{rt.name}" not found')
        return c, c.restart_count - 1
    if c.running:
        return c, c.restart_count
    if "terminated" in c.state:
        if c.state["terminated"].get("containerID"):
            return c, c.restart_count
        if last and last.get("containerID"):
            return c, c.restart_count - 1
        raise LogStatusError(f'container "{name}" in pod "{rt.name}" is terminated')
    if last:
        if not last.get("containerID"):
            raise LogStatusError(f'container "{name}" in pod "{rt.name}" is terminated')
        return c, c.restart_count - 1
    waiting = c.state.get("waiting")
    if waiting is not None:
        reason = waiting.get("reason") or ""
        if reason == "ErrImagePull":
            raise LogStatusError(f'container "{name}" in pod "{rt.name}" is waiting to start: image can\'t be pulled')
        if reason == "ImagePullBackOff":
            raise LogStatusError(
                f'container "{name}" in pod "{rt.name}" is waiting to start: trying and failing to pull image'
            )
        raise LogStatusError(f'container "{name}" in pod "{rt.name}" is waiting to start: {reason}')
    raise LogStatusError(f'container "{name}" in pod "{rt.name}" is waiting to start - no logs yet')


def _has_container(pod: Any, name: str) -> bool:
    spec = pod.get("spec") or {}
    every = [
        *(spec.get("initContainers") or []),
        *(spec.get("containers") or []),
        *(spec.get("ephemeralContainers") or []),
    ]
    return any(isinstance(c, dict) and c.get("name") == name for c in every)


class KubeletServer:
    """Serves the fleet's kubelet API (module docstring). ``find_pod(node, namespace, name)`` is the kubelet's
    pod manager lookup; ``node_pods(node)`` its running pods; ``nodes`` the fleet's node names."""

    def __init__(
        self,
        *,
        clock: Clock,
        nodes: Callable[[], Mapping[str, Any]],
        find_pod: Callable[[str, str, str], PodRuntime | None],
        node_pods: Callable[[str], list[PodRuntime]],
    ) -> None:
        self._clock, self._nodes, self._find_pod, self._node_pods = clock, nodes, find_pod, node_pods
        self._node_cpu: dict[str, resource_metrics.NodeCpu] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self._container_logs)
        app.router.add_get("/metrics/resource", self._resource_metrics)
        app.router.add_get("/healthz", self._healthz)
        # the fleet ends every log follower before stopping the server, so shutdown never waits on one
        # a follower whose reader left is cancelled at once (it may otherwise wait for a line that never comes)
        self._runner = runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=5.0, handler_cancellation=True
        )
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) if server is not None else None
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        return self.port

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _node(self, request: web.Request) -> str:
        """The node a request is for: its ``Host`` without the port (the API server dials ``<node>:<port>``)."""
        host = request.headers.get("Host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name not in self._nodes():
            raise web.HTTPNotFound(text=f'node "{name}" is not a node of this kubelet fleet')
        return name

    async def _healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _resource_metrics(self, request: web.Request) -> web.Response:
        node = self._node(request)
        cpu = self._node_cpu.setdefault(node, resource_metrics.NodeCpu())
        body = resource_metrics.render(self._node_pods(node), cpu, self._clock.now())
        return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    async def _container_logs(self, request: web.Request) -> web.StreamResponse:
        node = self._node(request)
        namespace, pod_name = request.match_info["namespace"], request.match_info["pod"]
        container = request.match_info["container"]
        try:
            options, previous = decode_query(request.query, self._clock.now())
        except QueryError:
            return web.Response(status=400, text=DECODE_ERROR)
        except ValueError:
            return web.Response(status=422, text=INVALID)
        rt = self._find_pod(node, namespace, pod_name)
        if rt is None:
            return web.Response(status=404, text=f'pod "{pod_name}" does not exist')
        if not _has_container(rt.pod, container):
            return web.Response(status=404, text=f'container "{container}" not found in pod "{pod_name}"')
        try:
            c, run = log_run(rt, container, previous=previous)
        except LogStatusError as exc:
            return web.Response(status=400, text=str(exc))
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        response.enable_chunked_encoding()
        await response.prepare(request)

        async def write(data: bytes) -> None:
            await response.write(data)

        with contextlib.suppress(ConnectionError):
            await container_logs.read(c.log, run, options, write)  # a previous run has ended: no follow
            await response.write_eof()
        return response
