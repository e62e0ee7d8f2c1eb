"""What ``kubeplane scheduler`` and ``kubeplane controller-manager`` share: the leader-election flags, where the
cluster is, the /healthz + /metrics port, and running the component's work under leader election.

Leader election follows kube-scheduler and kube-controller-manager: informers start (the cache warms) before
leading; the work runs only while the Lease is held; losing it ends the process at once with exit code 1
("leaderelection lost"), so a deposed leader never writes again; SIGINT/SIGTERM stop cleanly and release the Lease
(``ReleaseOnCancel``). Renewals use their own client (upstream's ``leader-election`` clientset) so they never queue
behind the component's requests in its qps limiter.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import random
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import typer

from kubeplane.cli.gcpolicy import tune_for_control_plane
from kubeplane.client.interface import Client

__all__ = [
    "CLIError",
    "LeaderElectionFlags",
    "apply_leader_election_flags",
    "client_config",
    "configure_logging",
    "run_component",
    "serve_component",
]


class CLIError(Exception):
    """One line for the user."""


def configure_logging(verbosity: int) -> None:
    """klog-like ``-v``: 0-1 warnings, 2-3 info, 4+ debug."""
    level = logging.WARNING if verbosity <= 1 else logging.INFO if verbosity <= 3 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)


@dataclasses.dataclass(frozen=True)
class LeaderElectionFlags:
    """The ``--leader-elect*`` flags as given; None = not given (then the file's value, or upstream's default)."""

    leader_elect: bool | None = None
    lease_duration: str | None = None
    renew_deadline: str | None = None
    retry_period: str | None = None
    resource_lock: str | None = None
    resource_name: str | None = None
    resource_namespace: str | None = None


async def _idle(stopped: asyncio.Event) -> None:
    await stopped.wait()


def apply_leader_election_flags(current: Any, flags: LeaderElectionFlags) -> Any:
    """``current`` (a leaderElection configuration) with every flag that was given applied on top (upstream
    ``ApplyLeaderElectionTo``: only flags set on the command line override the file). Raises CLIError."""
    from kubeplane.api.durations import parse_duration
    from kubeplane.client.leaderelection import LeaderElectionConfig

    changes: dict[str, Any] = {}
    if flags.leader_elect is not None:
        changes["leader_elect"] = flags.leader_elect
    for name, value in (
        ("lease_duration", flags.lease_duration),
        ("renew_deadline", flags.renew_deadline),
        ("retry_period", flags.retry_period),
    ):
        if value is not None:
            try:
                changes[name] = parse_duration(value) / 1e9
            except ValueError as exc:
                raise CLIError(f"--leader-elect-{name.replace('_', '-')}: {exc}") from None
    for name, value in (
        ("resource_lock", flags.resource_lock),
        ("resource_name", flags.resource_name),
        ("resource_namespace", flags.resource_namespace),
    ):
        if value is not None:
            changes[name] = value
    le = dataclasses.replace(current, **changes)
    if le.leader_elect:
        if le.resource_lock != "leases":
            raise CLIError(f"--leader-elect-resource-lock: only 'leases' is supported, not {le.resource_lock!r}")
        try:
            LeaderElectionConfig(
                name=le.resource_name,
                namespace=le.resource_namespace,
                identity="probe",
                on_started_leading=_idle,
                on_stopped_leading=lambda: None,
                lease_duration=le.lease_duration,
                renew_deadline=le.renew_deadline,
                retry_period=le.retry_period,
            )
        except ValueError as exc:
            raise CLIError(f"leader election: {exc}") from None
    return le


def client_config(path: str | None) -> Any:
    """From the kubeconfig lookup, or in a pod without one the service account (client-go's in-cluster config)."""
    from kubeplane.client.kubeconfig import find_kubeconfig, in_cluster_config, load_kubeconfig
    from kubeplane.client.pod_root import pod_path

    if path is None and os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        return in_cluster_config()
    return load_kubeconfig(find_kubeconfig(pod_path(path) if path else None))  # in a pod: under its root


class Component(Protocol):
    """What ``run_component`` drives: the Scheduler and the ControllerManager."""

    async def start(self) -> None: ...

    async def run(self) -> None: ...

    async def stop(self) -> None: ...


def run_component(
    *,
    component: str,
    kubeconfig: str | None,
    le: Any,
    metrics_port: int,
    bind_address: str,
    build: Callable[[Client], tuple[Component, str]],
    qps: float | None = None,
    burst: int | None = None,
) -> None:
    """The process body of ``kubeplane scheduler`` and ``kubeplane controller-manager``: connect (with the
    component's own qps/burst when given, and a separate client for leader election), ``build`` the component
    (returning it and how to describe it), serve it with :func:`serve_component`, then stop it and close the
    clients. Client errors become one CLIError line."""
    from kubeplane.client.errors import ClientError
    from kubeplane.client.http import HTTPClient

    async def main() -> None:
        base = client_config(kubeconfig)
        limited = base if qps is None or burst is None else dataclasses.replace(base, qps=qps, burst=burst)
        client = HTTPClient(limited)
        elector_client = HTTPClient(base) if le.leader_elect else None
        try:
            built, describe = build(client)
            try:
                await serve_component(
                    component=component,
                    le=le,
                    elector_client=elector_client,
                    metrics_port=metrics_port,
                    bind_address=bind_address,
                    warm_up=built.start,
                    work=built.run,
                    describe=describe,
                )
            finally:
                await built.stop()
        finally:
            await client.close()
            if elector_client is not None:
                await elector_client.close()

    tune_for_control_plane()
    try:
        asyncio.run(main())
    except ClientError as exc:
        raise CLIError(str(exc)) from None


async def serve_component(
    *,
    component: str,
    le: Any,
    elector_client: Client | None,
    metrics_port: int,
    bind_address: str,
    warm_up: Callable[[], Awaitable[None]],
    work: Callable[[], Awaitable[None]],
    describe: str,
) -> None:
    """Serve /healthz and /metrics, then ``work()`` (under leader election when ``le.leader_elect``, after
    ``warm_up()``) until SIGINT/SIGTERM or the work ends. The caller stops its component afterwards."""
    from kubeplane.metrics.leader import set_leader_status
    from kubeplane.metrics.server import start_metrics_server

    if not 0 <= metrics_port <= 65535:
        raise CLIError(f"--metrics-port must be between 0 and 65535, not {metrics_port}")
    try:
        metrics = await start_metrics_server(None, metrics_port, host=bind_address)
    except OSError as exc:
        raise CLIError(f"--metrics-port {metrics_port}: {exc.strerror or exc}") from None
    typer.echo(f"serving /healthz and /metrics on {metrics.url}", err=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if le.leader_elect:
        assert elector_client is not None
        set_leader_status(le.resource_name, False)
        task = asyncio.ensure_future(_lead(component, elector_client, le, stop, warm_up, work))
        typer.echo(
            f"kubeplane {component} {describe} waiting for lease {le.resource_namespace}/{le.resource_name}", err=True
        )
    else:
        task = asyncio.ensure_future(work())
        typer.echo(f"kubeplane {component} running {describe}", err=True)
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.set()
        task.cancel()
        waiter.cancel()
        await asyncio.gather(task, waiter, return_exceptions=True)
        await metrics.close()
    if task.done() and not task.cancelled() and task.exception() is not None:
        raise task.exception()  # type: ignore[misc]


async def _lead(
    component: str,
    client: Client,
    le: Any,
    shutting_down: asyncio.Event,
    warm_up: Callable[[], Awaitable[None]],
    work: Callable[[], Awaitable[None]],
) -> None:
    """Warm up, then run ``work`` while holding the Lease; ``shutting_down`` tells a clean stop from a lost lease."""
    from kubeplane.client.clock import SystemClock
    from kubeplane.client.leaderelection import LeaderElectionConfig, LeaderElector
    from kubeplane.client.pod_root import hostname
    from kubeplane.metrics.leader import set_leader_status

    log = logging.getLogger(f"kubeplane.{component}")
    identity = f"{hostname()}_{uuid.uuid4()}"  # upstream: os.Hostname() + "_" + uuid
    led = False

    async def lead(stopped: asyncio.Event) -> None:
        nonlocal led
        led = True
        set_leader_status(le.resource_name, True)
        typer.echo(
            f"kubeplane {component} {identity} acquired lease {le.resource_namespace}/{le.resource_name}", err=True
        )
        await work()

    def stopped_leading() -> None:
        if led and not shutting_down.is_set():
            # Upstream exits at once: another replica may already be active, and in-flight writes of this one
            # must not land after the lease is gone.
            log.error("leaderelection lost")
            sys.stderr.write("leaderelection lost\n")
            sys.stderr.flush()
            os._exit(1)

    def new_leader(holder: str) -> None:
        if holder and holder != identity:
            log.info("new leader elected: %s", holder)

    await warm_up()
    elector = LeaderElector(
        client,
        LeaderElectionConfig(
            name=le.resource_name,
            namespace=le.resource_namespace,
            identity=identity,
            on_started_leading=lead,
            on_stopped_leading=stopped_leading,
            on_new_leader=new_leader,
            lease_duration=le.lease_duration,
            renew_deadline=le.renew_deadline,
            retry_period=le.retry_period,
            release_on_cancel=True,
        ),
        clock=SystemClock(),
        rng=random.Random(),
    )
    await elector.run()
