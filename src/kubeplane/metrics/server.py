"""A small metrics endpoint for a component: ``/metrics`` (Prometheus text format) and ``/healthz``.

``kubeplane scheduler --metrics-port`` serves its registry with :func:`start_metrics_server` (upstream serves
the same two paths on kube-scheduler's secure port 10259). The API server serves ``/metrics`` on its own port
instead, through :func:`exposition`.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest

__all__ = ["CONTENT_TYPE", "MetricsServer", "exposition", "start_metrics_server"]

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""``text/plain; version=0.0.4; charset=utf-8``: the Prometheus text exposition format."""


def exposition(registry: CollectorRegistry | None = None) -> bytes:
    """Every metric of ``registry`` (default: the process-wide one) in the Prometheus text format."""
    return generate_latest(registry if registry is not None else REGISTRY)


class MetricsServer:
    """A running metrics endpoint; ``port`` is the bound port (useful when asked for port 0)."""

    def __init__(self, runner: web.AppRunner, site: web.TCPSite, host: str, port: int) -> None:
        self._runner = runner
        self._site = site
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    async def close(self) -> None:
        await self._runner.cleanup()


async def start_metrics_server(
    registry: CollectorRegistry | None,
    port: int,
    *,
    host: str = "127.0.0.1",
    healthz: Callable[[], bool] | None = None,
) -> MetricsServer:
    """Serve ``GET /metrics`` for ``registry`` (None: the process-wide registry) and ``GET /healthz`` ("ok", or
    503 "unhealthy" when ``healthz`` returns False) on ``host:port``; port 0 picks a free port."""
    target = registry if registry is not None else REGISTRY

    async def metrics(_request: web.Request) -> web.Response:
        response = web.Response(body=generate_latest(target))
        response.headers["Content-Type"] = CONTENT_TYPE
        return response

    async def health(_request: web.Request) -> web.Response:
        if healthz is not None and not healthz():
            return web.Response(status=503, text="unhealthy")
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", health)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = port
    server = site._server
    sockets = getattr(server, "sockets", None) if server is not None else None
    if sockets:
        bound = int(sockets[0].getsockname()[1])
    return MetricsServer(runner, site, host, bound)
