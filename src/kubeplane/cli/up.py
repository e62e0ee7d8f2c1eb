"""``kubeplane up``: a whole cluster — API server, controller manager, scheduler and a simulated kubelet fleet.

By default everything runs in this one process: the API server serves HTTP(S) for kubectl on 127.0.0.1, and the
components talk to its registry over the local transport (no sockets). ``--processes`` runs each component as
its own ``kubeplane`` process over HTTP instead, exactly as ``kubeplane apiserver | scheduler | controller-manager
| kubelet`` would be started by hand.

Invariants:

* A data dir belongs to one cluster at a time: before anything in it changes, ``up`` checks the store's lock
  (``store.db.lock``, held by a running ``up`` or ``kubeplane apiserver``) and takes ``up.lock`` for its whole
  run (which also covers ``--store memory|etcd``); when either is held it fails with one line and touches nothing.
* ``DATA_DIR/kubeconfig`` is removed at start and written only when the cluster is ready (every node
  registered and every component started), so a script may wait for the file; with ``--processes`` the
  components use a kubeconfig of their own until then.
* A restart on the same data dir brings the same cluster back (SQLite store): the fleet finds its Nodes and
  adopts the pods that were running.
* The cluster has a default StorageClass ``standard`` (node-local, WaitForFirstConsumer, backed by the fleet's
  default simulated CSI driver ``csi.kubeplane.io``) unless a class of that name exists, as kind and minikube.
* ``--node-groups FILE`` (docs/autoscaler.md, "Node groups"): the groups' nodes run in the same fleet, created by
  the simulated cloud (:class:`~kubeplane.autoscaler.fleet_provider.FleetProvider`: initial nodes at start, a
  restart takes back the groups' nodes), and the cluster-autoscaler runs with the flags given as
  ``--autoscaler-flag`` (parsed by ``kubeplane autoscaler``'s parser, ``AutoscalerOptions.from_args``, before
  anything starts). One process only.
* SIGINT/SIGTERM stop the components first, then the API server, then close the store: every write the API
  acknowledged is on disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import typer

from kubeplane.cli.component import CLIError, configure_logging
from kubeplane.cli.identities import TOKEN_FILE, write_component_kubeconfig, write_token_file

if TYPE_CHECKING:
    from kubeplane.apiserver.registry import Registry
    from kubeplane.autoscaler.loop import Autoscaler
    from kubeplane.autoscaler.options import AutoscalerOptions
    from kubeplane.autoscaler.provider import NodeGroupSpec
    from kubeplane.kubelet.config import NodeSpec
    from kubeplane.kubelet.fleet import FleetOptions

__all__ = ["UpOptions", "run_up"]


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[int, int], None]]:
    """A progress bar of node registration on a terminal (nothing when stderr is not one)."""
    from rich.console import Console
    from rich.progress import Progress

    console = Console(stderr=True)
    if not console.is_terminal:
        yield lambda _done, _total: None
        return
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("registering nodes", total=total)
        yield lambda done, _total: progress.update(task, completed=done)


def _kubectl() -> tuple[str, str]:
    """How to call kubectl: the venv's (``make kubectl`` or the test extras install it), else the one on PATH;
    ``make run`` installs no kubectl, so then a comment says how to get one. Returns (command, comment)."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        with contextlib.suppress(ValueError):
            return str(beside.relative_to(Path.cwd())), ""
        return str(beside), ""
    if shutil.which("kubectl"):
        return "kubectl", ""
    return "kubectl", "    # no kubectl found: `make kubectl` installs v1.37 as .venv/bin/kubectl"


def _ready_message(address: str, kubeconfig: Path, nodes: int, mode: str) -> str:
    kubectl, comment = _kubectl()
    return (
        f"kubeplane is up ({mode}): API server on {address}, {nodes} node(s)\n"
        f"use it:\n  export KUBECONFIG={kubeconfig}\n  {kubectl} get nodes{comment}\n"
        f"web UI: {address}/ui/ (log in with the kubeconfig's token)\n"
        "stop it with Ctrl-C"
    )


@dataclasses.dataclass(frozen=True)
class UpOptions:
    """The flags of ``kubeplane up`` (docs/up.md)."""

    data_dir: Path = Path(".kubeplane")
    port: int = 6443
    node_config: Path | None = None
    nodes: int | None = None
    store: str = "sqlite"
    scheduler_config: Path | None = None
    feature_gates: str | None = None
    """kube-scheduler's ``--feature-gates`` (``key=value,...``), for the scheduler in either mode."""
    processes: bool = False
    verbosity: int = 0
    pull_delay: float | None = None
    shutdown_delay: str | None = None
    etcd_servers: str = ""
    """With ``store="etcd"``: comma-separated etcd URLs."""
    service_cluster_ip_range: str = "10.96.0.0/12"
    service_node_port_range: str = "30000-32767"
    node_groups: Path | None = None
    """``--node-groups FILE``: node groups of the simulated cloud, beside the fleet's nodes."""
    autoscaler_flags: tuple[str, ...] = ()
    """``--autoscaler-flag`` values, in order: cluster-autoscaler's command-line arguments (``--scan-interval=10s``)
    for the autoscaler of ``node_groups``."""

    @property
    def etcd_endpoints(self) -> tuple[str, ...]:
        return tuple(u.strip() for u in self.etcd_servers.split(",") if u.strip())


def run_up(opts: UpOptions) -> None:
    from kubeplane.cli.kubelet import fleet_options, node_specs
    from kubeplane.cli.scheduling import _load_config

    if opts.store not in ("sqlite", "memory", "etcd"):
        raise CLIError(f"--store must be sqlite, memory or etcd, not {opts.store!r}")
    if opts.store == "etcd" and not opts.etcd_endpoints:
        raise CLIError("--store etcd needs --etcd-servers URL[,URL...]")
    if not 0 <= opts.port <= 65535:
        raise CLIError(f"--port must be between 0 and 65535, not {opts.port}")
    specs = node_specs(opts.node_config, opts.nodes)
    groups = _node_groups(opts)
    autoscaler_options = _autoscaler_options(opts)
    options = fleet_options(pull_delay=opts.pull_delay, shutdown_delay=opts.shutdown_delay)
    options.state_dir = opts.data_dir / "kubelet"  # the kubelets' --root-dir: their DRA checkpoints
    sched_config = _load_config(opts.scheduler_config, opts.feature_gates)
    configure_logging(opts.verbosity)
    lock = _claim_data_dir(opts.data_dir)
    try:
        (opts.data_dir / "kubeconfig").unlink(missing_ok=True)
        if opts.processes:
            _run_processes(opts, [spec.name for spec in specs])
        else:
            _run_one_process(
                opts,
                specs=specs,
                options=options,
                sched_config=sched_config,
                groups=groups,
                autoscaler_options=autoscaler_options,
            )
    finally:
        lock.close()


def _node_groups(opts: UpOptions) -> list[NodeGroupSpec]:
    """``--node-groups``: the parsed groups (none without the flag); errors are one line."""
    if opts.node_groups is None:
        return []
    from kubeplane.autoscaler.nodegroups import NodeGroupConfigError, load_node_groups

    if opts.processes:
        raise CLIError("--node-groups runs the groups' nodes in up's own fleet: it cannot be used with --processes")
    try:
        return load_node_groups(opts.node_groups)
    except NodeGroupConfigError as exc:
        raise CLIError(str(exc)) from None


def _autoscaler_options(opts: UpOptions) -> AutoscalerOptions | None:
    """``--autoscaler-flag``s parsed as ``kubeplane autoscaler`` parses its flags (None without node groups); errors
    are Go's flag package's one line."""
    if opts.node_groups is None:
        if opts.autoscaler_flags:
            raise CLIError("--autoscaler-flag configures the autoscaler of --node-groups: give --node-groups FILE")
        return None
    from kubeplane.autoscaler.options import AutoscalerOptions, OptionsError

    try:
        return AutoscalerOptions.from_args(list(opts.autoscaler_flags))
    except OptionsError as exc:
        raise CLIError(str(exc)) from None


def _try_lock(path: Path) -> IO[bytes] | None:
    """``path`` opened and exclusively flock-ed (the caller holds it until it closes it), or None if another
    process holds it. The lock is the one :mod:`kubeplane.store.sqlite` takes on ``store.db.lock``."""
    handle = open(path, "ab")  # noqa: SIM115 - returned to the caller, who closes it
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def _claim_data_dir(data_dir: Path) -> IO[bytes]:
    """Make sure no running cluster holds ``data_dir`` before anything in it changes; return ``up.lock``, held.

    The store's lock is probed first (and released at once: the store takes it again when it opens), so a
    running ``up`` or ``kubeplane apiserver`` on this dir is found whatever ``--store`` this run asks for, and
    nothing is created in a dir it holds. ``up.lock`` then keeps a second ``up`` out for this run's lifetime,
    also with stores that take no file lock (memory, etcd)."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # private: it holds the store and the admin token
    store_lock = data_dir / "store.db.lock"
    if store_lock.exists():
        probe = _try_lock(store_lock)
        if probe is None:
            raise CLIError(
                f"{data_dir} holds a running cluster (its store {data_dir / 'store.db'} is open in another "
                "process); stop that cluster (Ctrl-C) or pass another --data-dir"
            )
        probe.close()
    held = _try_lock(data_dir / "up.lock")
    if held is None:
        raise CLIError(
            f"{data_dir} holds a running cluster (another kubeplane up holds {data_dir / 'up.lock'}); "
            "stop that cluster (Ctrl-C) or pass another --data-dir"
        )
    return held


def _run_one_process(
    opts: UpOptions,
    *,
    specs: list[NodeSpec],
    options: FleetOptions,
    sched_config: Any,
    groups: list[NodeGroupSpec] | None = None,
    autoscaler_options: AutoscalerOptions | None = None,
) -> None:
    """Everything in this process: the components on the local transport, attached to the API server."""

    from kubeplane.apiserver.server import ServerConfig, run_apiserver
    from kubeplane.apiserver.tokens import service_account_user
    from kubeplane.cli.explain_parts import ui_parts
    from kubeplane.cli.identities import component_user, node_user
    from kubeplane.client.local import LocalClient
    from kubeplane.controllers.credentials import local_client_for
    from kubeplane.controllers.manager import ControllerManager, available_controllers
    from kubeplane.kubelet.fleet import Fleet
    from kubeplane.scheduler.config import ConfigError
    from kubeplane.scheduler.scheduler import Scheduler
    from kubeplane.store.interface import StoreError
    from kubeplane.ui import mount as ui_mount

    async def attach(registry: Registry) -> Callable[[], Awaitable[None]]:
        from kubeplane.kubelet.csi.publisher import ensure_standard_storage_class

        client = LocalClient(registry)  # the server's own (trusted) client: the default StorageClass
        await ensure_standard_storage_class(client)
        # every component as its own user (cli/identities.py), as kubeadm's components are
        fleet = Fleet(
            client.as_user(component_user("kubelet")),
            specs,
            options=options,
            node_client=lambda name: client.as_user(node_user(name)),
        )
        ca = opts.data_dir / "ca.crt"  # the root CA publisher's --root-ca-file
        manager_client = client.as_user(component_user("controller-manager"))
        client_for = await local_client_for(manager_client, available_controllers(), user_of=service_account_user)
        manager = ControllerManager(
            manager_client,
            options={"root-ca-cert-publisher": {"rootCA": ca.read_text() if ca.exists() else ""}},
            client_for=client_for,
        )
        try:
            scheduler = Scheduler(client.as_user(component_user("scheduler")), config=sched_config)
        except ConfigError as exc:
            raise CLIError("\n".join(exc.errors)) from None
        started: list[Any] = []  # each with stop(): stopped in reverse order
        tasks: list[asyncio.Task[None]] = []

        async def stop() -> None:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            for component in reversed(started):
                await component.stop()
            await client.close()

        try:
            with _progress(len(specs)) as advance:
                fleet.on_registered = advance
                for component in (fleet, manager, scheduler):
                    await component.start()
                    started.append(component)
            for name, component in (("kubelet", fleet), ("controller-manager", manager), ("scheduler", scheduler)):
                tasks.append(asyncio.create_task(component.run(), name=name))
            if groups:
                autoscaler = await _start_node_groups(
                    client, fleet, groups, sched_config, started, options=autoscaler_options
                )
                tasks.append(asyncio.create_task(autoscaler.run(), name="cluster-autoscaler"))
        except BaseException:
            await stop()
            raise
        return stop

    def ready(address: str, kubeconfig: Path) -> None:
        initial = sum(g.min_size if g.initial_size is None else g.initial_size for g in groups or ())
        typer.echo(_ready_message(address, kubeconfig, len(specs) + initial, "one process"), err=True)

    config = ServerConfig(
        data_dir=opts.data_dir,
        port=opts.port,
        store=opts.store,
        etcd_servers=opts.etcd_endpoints,
        service_cluster_ip_range=opts.service_cluster_ip_range,
        service_node_port_range=opts.service_node_port_range,
        ui=ui_mount(sched_config, explain_parts=ui_parts(sched_config)),
    )
    signal.signal(signal.SIGTERM, lambda _sig, _frame: None)  # uvicorn re-raises it after its shutdown
    try:
        import uvloop

        from kubeplane.cli.gcpolicy import tune_for_control_plane

        tune_for_control_plane()
        uvloop.run(run_apiserver(config, on_ready=ready, attach=attach))
    except StoreError as exc:
        raise CLIError(str(exc)) from None
    except KeyboardInterrupt:
        pass


async def _start_node_groups(
    client: Any,
    fleet: Any,
    groups: list[NodeGroupSpec],
    sched_config: Any,
    started: list[Any],
    *,
    options: AutoscalerOptions | None = None,
) -> Autoscaler:
    """The groups' provider on ``fleet`` (the server's trusted client deletes Nodes, as a cloud's node lifecycle
    controller), taking back the groups' Nodes the API has; then the autoscaler with ``options`` (upstream's
    defaults when None), returned to be run. Both are appended to ``started``."""
    import random

    from kubeplane.api.views import name_of
    from kubeplane.autoscaler.fleet_provider import FleetProvider
    from kubeplane.autoscaler.loop import Autoscaler
    from kubeplane.autoscaler.options import AutoscalerOptions
    from kubeplane.autoscaler.provider import NODE_GROUP_LABEL
    from kubeplane.client.clock import SystemClock

    clock = SystemClock()
    provider = FleetProvider(fleet, groups, clock=clock, client=client)
    listed = await client.list(client.resource("nodes"), label_selector=NODE_GROUP_LABEL)
    await provider.start(existing=[name_of(n) for n in listed["items"]])
    started.append(provider)
    autoscaler = Autoscaler(
        client,
        provider=provider,
        options=AutoscalerOptions() if options is None else options,
        clock=clock,
        rng=random.Random(),
        scheduler_config=sched_config,
    )
    await autoscaler.start()
    started.append(autoscaler)
    return autoscaler


_PRIVATE_KUBECONFIG = ".components.kubeconfig"


def _wait_for_nodes(
    kubeconfig: Path,
    names: list[str],
    children: list[tuple[str, subprocess.Popen[bytes]]],
    logs: Path,
    stopping: Callable[[], bool],
) -> None:
    """Block until every node of the fleet is registered (or a child dies, or a signal asks to stop)."""
    from kubeplane.client.http import HTTPClient

    async def registered() -> set[str]:
        client = HTTPClient.from_kubeconfig(kubeconfig)
        try:
            nodes = client.resource("nodes")
            return {str(n["metadata"]["name"]) for n in (await client.list(nodes))["items"]}
        finally:
            await client.close()

    deadline = time.monotonic() + 120
    while not stopping():
        for name, child in children:
            if child.poll() is not None:
                raise CLIError(f"{name} exited with code {child.returncode}; see {logs / (name + '.log')}")
        if set(names) <= asyncio.run(registered()):
            return
        if time.monotonic() > deadline:
            raise CLIError(f"the nodes did not register within 120 s; see {logs / 'kubelet.log'}")
        time.sleep(0.2)


def _standard_class(kubeconfig: Path) -> None:
    """The default StorageClass ``standard`` over HTTP (``--processes``), unless it exists."""
    from kubeplane.client.http import HTTPClient
    from kubeplane.kubelet.csi.publisher import ensure_standard_storage_class

    async def create() -> None:
        client = HTTPClient.from_kubeconfig(kubeconfig)
        try:
            await ensure_standard_storage_class(client)
        finally:
            await client.close()

    asyncio.run(create())


def _run_processes(opts: UpOptions, names: list[str]) -> None:
    """Each component as its own process over HTTP; logs in ``DATA_DIR/logs/<component>.log``. The components
    use a kubeconfig of their own; ``DATA_DIR/kubeconfig`` appears once every node has registered."""
    base = [sys.executable, "-m", "kubeplane.cli.main"]
    data_dir = opts.data_dir
    kubeconfig = data_dir / "kubeconfig"
    logs = data_dir / "logs"
    logs.mkdir(exist_ok=True)
    verbose = [f"--v={opts.verbosity}"] if opts.verbosity else []
    kubelet = (
        ["--node-config", str(opts.node_config)]
        if opts.node_config
        else ["--nodes", str(opts.nodes)]
        if opts.nodes is not None
        else []
    )
    kubelet += ["--root-dir", str(data_dir / "kubelet")]
    if opts.pull_delay is not None:
        kubelet += ["--pull-delay", str(opts.pull_delay)]
    if opts.shutdown_delay is not None:
        kubelet += ["--shutdown-delay", opts.shutdown_delay]
    private = data_dir / _PRIVATE_KUBECONFIG  # the admin's until the nodes are there: then D/kubeconfig
    private.unlink(missing_ok=True)
    tokens = write_token_file(data_dir)  # each component's identity (cli/identities.py)
    commands = {
        "apiserver": [
            "apiserver",
            "--data-dir",
            str(data_dir),
            "--port",
            str(opts.port),
            "--store",
            opts.store,
            "--kubeconfig-name",
            _PRIVATE_KUBECONFIG,
            "--token-auth-file",
            str(data_dir / TOKEN_FILE),
            *(["--etcd-servers", opts.etcd_servers] if opts.store == "etcd" else []),
            f"--service-cluster-ip-range={opts.service_cluster_ip_range}",
            f"--service-node-port-range={opts.service_node_port_range}",
            # the web UI (served by this process) explains with the scheduler's configuration, not the default
            *(["--ui-scheduler-config", str(opts.scheduler_config)] if opts.scheduler_config else []),
            *(["--ui-feature-gates", opts.feature_gates] if opts.feature_gates else []),
        ],
        "controller-manager": ["controller-manager", "--leader-elect=false", "--metrics-port=0", *verbose],
        "scheduler": [
            "scheduler",
            "--leader-elect=false",
            "--metrics-port=0",
            *(["--config", str(opts.scheduler_config)] if opts.scheduler_config else []),
            *(["--feature-gates", opts.feature_gates] if opts.feature_gates else []),
            *verbose,
        ],
        "kubelet": ["kubelet", "--metrics-port=0", *kubelet, *verbose],
    }
    children: list[tuple[str, subprocess.Popen[bytes]]] = []
    stopping = False

    def stop(_sig: int = 0, _frame: object = None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        for name, args in commands.items():
            extra = [] if name == "apiserver" else ["--kubeconfig", str(data_dir / f".{name}.kubeconfig")]
            with (logs / f"{name}.log").open("ab") as log:
                children.append((name, subprocess.Popen([*base, *args, *extra], stdout=log, stderr=log)))
            if name == "apiserver":
                deadline = time.monotonic() + 60
                while not private.exists():
                    if children[0][1].poll() is not None or time.monotonic() > deadline:
                        raise CLIError(f"the API server did not start; see {logs / 'apiserver.log'}")
                    if stopping:
                        return
                    time.sleep(0.05)
                address = next(
                    line.split("server: ", 1)[1] for line in private.read_text().splitlines() if "server: " in line
                )
                admin = (data_dir / "admin.token").read_text().strip()
                for component, token in tokens.items():
                    write_component_kubeconfig(private, admin, token, data_dir / f".{component}.kubeconfig")
        _standard_class(private)
        _wait_for_nodes(private, names, children, logs, lambda: stopping)
        if stopping:
            return
        shutil.copy2(private, kubeconfig)  # the same owner-only mode: it holds the admin token
        typer.echo(_ready_message(address, kubeconfig, len(names), "one process per component"), err=True)
        while not stopping:
            for name, child in children:
                if child.poll() is not None:
                    raise CLIError(f"{name} exited with code {child.returncode}; see {logs / (name + '.log')}")
            time.sleep(0.2)
    finally:
        for _name, child in reversed(children):  # components first, the API server last
            if child.poll() is None:
                os.kill(child.pid, signal.SIGTERM)
                try:
                    child.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.kill(child.pid, signal.SIGKILL)
                    child.wait()
