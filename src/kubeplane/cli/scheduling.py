"""``kubeplane scheduler`` and ``kubeplane explain``: the scheduler as a process, and the "why" of a placement."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import signal
import sys
from pathlib import Path
from typing import Any

import typer
import yaml

from kubeplane.client.errors import ClientError

__all__ = ["LeaderElectionFlags", "apply_leader_election_flags", "load_objects", "run_explain", "run_scheduler"]


_OTHER_KINDS = (
    ("namespaces", "Namespace"),
    ("services", "Service"),
    ("replicasets", "ReplicaSet"),
    ("statefulsets", "StatefulSet"),
    ("replicationcontrollers", "ReplicationController"),
    ("poddisruptionbudgets", "PodDisruptionBudget"),
    ("priorityclasses", "PriorityClass"),
)


class CLIError(Exception):
    """One line for the user."""


def load_objects(path: Path) -> list[dict[str, Any]]:
    """Objects from a JSON/YAML file: a v1 List, a multi-document YAML stream, or a single object."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        raise CLIError(f"{path} is not valid YAML or JSON: {str(exc).splitlines()[0]}") from None
    out: list[dict[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, dict):
            raise CLIError(f"{path}: expected Kubernetes objects, found {type(doc).__name__}")
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
            out.extend(i for i in doc.get("items") or [] if isinstance(i, dict))
        else:
            out.append(doc)
    return out


def _load_config(config: Path | None) -> Any:
    from kubeplane.scheduler.config import ConfigError, default_config, load_config

    if config is None:
        return default_config()
    try:
        return load_config(config)
    except ConfigError as exc:
        raise CLIError(f"invalid scheduler configuration {config}:\n" + "\n".join(exc.errors)) from None


async def _live_objects(
    kubeconfig: str | None, pod_ref: str
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    from kubeplane.client.http import HTTPClient

    client = HTTPClient.from_kubeconfig(kubeconfig)
    try:
        nodes = (await client.list(client.resource("nodes")))["items"]
        pods = (await client.list(client.resource("pods")))["items"]
        others: list[dict[str, Any]] = []
        for resource, kind in _OTHER_KINDS:
            others += [{**o, "kind": kind} for o in (await client.list(client.resource(resource)))["items"]]
        pod = None
        if not Path(pod_ref).exists():
            if "/" not in pod_ref:
                ns, name = "default", pod_ref
            else:
                ns, name = pod_ref.split("/", 1)
            pod = await client.get(client.resource("pods"), name, namespace=ns)
        return pod, nodes, pods, others
    finally:
        await client.close()


def run_explain(
    *, pod_ref: str, cluster: Path | None, config: Path | None, output: str, kubeconfig: str | None, seed: int
) -> None:
    from kubeplane.scheduler.config import ConfigError
    from kubeplane.scheduler.explain import ExplainError, explain, render_table

    if output not in ("table", "json"):
        raise CLIError(f"-o must be table or json, not {output!r}")
    cfg = _load_config(config)
    pod: dict[str, Any] | None = None
    if cluster is not None:
        objects = load_objects(cluster)
        nodes = [o for o in objects if o.get("kind") == "Node"]
        pods = [o for o in objects if o.get("kind") == "Pod"]
        others = [o for o in objects if o.get("kind") not in ("Node", "Pod")]
    else:
        try:
            pod, nodes, pods, others = asyncio.run(_live_objects(kubeconfig, pod_ref))
        except ClientError as exc:
            raise CLIError(str(exc)) from None
    if pod is None:
        if not Path(pod_ref).exists():
            raise CLIError(
                f"--pod {pod_ref}: no such file" + ("" if cluster is None else " (with --cluster, --pod is a file)")
            )
        found = [o for o in load_objects(Path(pod_ref)) if o.get("kind", "Pod") == "Pod"]
        if len(found) != 1:
            raise CLIError(f"--pod {pod_ref}: expected exactly one Pod, found {len(found)}")
        pod = found[0]
    key = ((pod.get("metadata") or {}).get("namespace") or "default", (pod.get("metadata") or {}).get("name"))
    placed = [
        p
        for p in pods
        if ((p.get("metadata") or {}).get("namespace") or "default", (p.get("metadata") or {}).get("name")) != key
    ]
    try:
        result = explain(pod, nodes=nodes, pods=placed, objects=others, config=cfg, seed=seed)
    except (ExplainError, ConfigError) as exc:
        raise CLIError(str(exc)) from None
    if output == "json":
        typer.echo(json.dumps(result, indent=2))
    else:
        from rich.console import Console

        console = Console()
        if not console.is_terminal:  # piped: do not wrap the reasons at 80 columns
            console = Console(width=320)
        console.print(render_table(result))


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


def apply_leader_election_flags(current: Any, flags: LeaderElectionFlags) -> Any:
    """The file's ``leaderElection`` with every flag that was given applied on top (upstream
    ``ApplyLeaderElectionTo``: only flags set on the command line override the file). Raises CLIError."""
    from kubeplane.client.leaderelection import LeaderElectionConfig
    from kubeplane.scheduler.config.types import parse_duration

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
                identity="kube-scheduler",
                on_started_leading=_idle,
                on_stopped_leading=lambda: None,
                lease_duration=le.lease_duration,
                renew_deadline=le.renew_deadline,
                retry_period=le.retry_period,
            )
        except ValueError as exc:
            raise CLIError(f"leader election: {exc}") from None
    return le


async def _idle(stopped: asyncio.Event) -> None:
    await stopped.wait()


def _client_config(path: str | None) -> Any:
    """From the kubeconfig lookup, or in a pod without one the service account (client-go's in-cluster config)."""
    import os

    from kubeplane.client.kubeconfig import find_kubeconfig, in_cluster_config, load_kubeconfig

    if path is None and os.environ.get("KUBERNETES_SERVICE_HOST") and not os.environ.get("KUBECONFIG"):
        return in_cluster_config()
    return load_kubeconfig(find_kubeconfig(path))


def run_scheduler(
    *,
    kubeconfig: str | None,
    config: Path | None,
    verbosity: int,
    leader_election: LeaderElectionFlags | None = None,
    metrics_port: int = 10259,
    bind_address: str = "127.0.0.1",
) -> None:
    """``kubeplane scheduler``: the configured profiles against the cluster of ``kubeconfig`` (else the file's
    clientConnection.kubeconfig, else the usual lookup, else in-cluster).

    With leader election (the default, as upstream) informers start at once but pods are scheduled only while
    this process holds the Lease; losing it ends the process at once with exit code 1 (upstream's
    ``leaderelection lost``), so a deposed leader never binds another pod. SIGINT/SIGTERM release the Lease.
    """
    from kubeplane.client.http import HTTPClient
    from kubeplane.scheduler.config import ConfigError
    from kubeplane.scheduler.scheduler import Scheduler

    level = logging.WARNING if verbosity <= 1 else logging.INFO if verbosity <= 3 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    cfg = _load_config(config)
    le = apply_leader_election_flags(cfg.leader_election, leader_election or LeaderElectionFlags())
    if not 0 <= metrics_port <= 65535:
        raise CLIError(f"--metrics-port must be between 0 and 65535, not {metrics_port}")
    path = kubeconfig or (cfg.client_connection.kubeconfig or None)

    async def main() -> None:
        conn = cfg.client_connection
        client_config = _client_config(path)
        client = HTTPClient(dataclasses.replace(client_config, qps=conn.qps, burst=conn.burst))
        try:
            scheduler = Scheduler(client, config=cfg)
        except ConfigError as exc:
            await client.close()
            raise CLIError("\n".join(exc.errors)) from None
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        from kubeplane.metrics.leader import set_leader_status
        from kubeplane.metrics.server import start_metrics_server

        try:
            metrics = await start_metrics_server(None, metrics_port, host=bind_address)
        except OSError as exc:
            await client.close()
            raise CLIError(f"--metrics-port {metrics_port}: {exc.strerror or exc}") from None
        typer.echo(f"serving /healthz and /metrics on {metrics.url}", err=True)
        if le.leader_elect:
            set_leader_status(le.resource_name, False)
        profiles = ", ".join(scheduler.profiles)
        # Leader election has its own client (upstream's "leader-election" clientset): renewals must not queue
        # behind the scheduler's bindings and events in the clientConnection qps limiter.
        elector_client = HTTPClient(client_config) if le.leader_elect else None
        if le.leader_elect:
            assert elector_client is not None
            task = asyncio.ensure_future(_lead_then_schedule(elector_client, scheduler, le, stop))
            typer.echo(
                f"kubeplane scheduler with profiles {profiles} waiting for lease "
                f"{le.resource_namespace}/{le.resource_name}",
                err=True,
            )
        else:
            task = asyncio.ensure_future(scheduler.run())
            typer.echo(f"kubeplane scheduler running with profiles {profiles}", err=True)
        waiter = asyncio.ensure_future(stop.wait())
        await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
        stop.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await scheduler.stop()
        waiter.cancel()
        await metrics.close()
        await client.close()
        if elector_client is not None:
            await elector_client.close()

    try:
        asyncio.run(main())
    except ClientError as exc:
        raise CLIError(str(exc)) from None


async def _lead_then_schedule(client: Any, scheduler: Any, le: Any, shutting_down: asyncio.Event) -> None:
    """Warm the cache, then schedule while holding the Lease (upstream ``leaderElector.Run`` with
    ``ReleaseOnCancel``); ``shutting_down`` tells a clean stop from a lost lease."""
    import os
    import random
    import socket
    import uuid

    from kubeplane.client.clock import SystemClock
    from kubeplane.client.leaderelection import LeaderElectionConfig, LeaderElector

    log = logging.getLogger("kubeplane.scheduler")
    identity = f"{socket.gethostname()}_{uuid.uuid4()}"
    led = False

    async def lead(stopped: asyncio.Event) -> None:
        from kubeplane.metrics.leader import set_leader_status

        nonlocal led
        led = True
        set_leader_status(le.resource_name, True)
        typer.echo(
            f"kubeplane scheduler {identity} acquired lease {le.resource_namespace}/{le.resource_name}", err=True
        )
        await scheduler.run()

    def stopped_leading() -> None:
        if led and not shutting_down.is_set():
            # Upstream exits at once ("leaderelection lost"): another replica may already be scheduling, and
            # in-flight bindings of this one must not land after the lease is gone.
            log.error("leaderelection lost")
            sys.stderr.write("leaderelection lost\n")
            sys.stderr.flush()
            os._exit(1)

    def new_leader(holder: str) -> None:
        if holder and holder != identity:
            log.info("new leader elected: %s", holder)

    await scheduler.start()
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
