"""``kubeplane``: one command for every component. Errors a user can cause print one line and exit 1."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from kubeplane.store.interface import StoreError

app = typer.Typer(
    name="kubeplane",
    help="The Kubernetes scheduling control plane, in Python.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def version() -> str:
    """The installed distribution's version (importlib.metadata), else the source tree's ``__version__`` (a
    checkout run with PYTHONPATH=src has no distribution metadata)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("kubeplane")
    except importlib.metadata.PackageNotFoundError:
        from kubeplane import __version__

        return __version__


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"kubeplane {version()}")
        raise typer.Exit()


@app.callback()
def _root(
    _version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Print the version and exit.", callback=_print_version, is_eager=True),
    ] = False,
) -> None:
    """The Kubernetes scheduling control plane, in Python."""


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


# Options shared by the components that elect a leader and serve metrics (scheduler, controller-manager).
KubeconfigOpt = Annotated[
    str | None,
    typer.Option("--kubeconfig", help="Kubeconfig (default: $KUBECONFIG, then ./.kubeplane/kubeconfig)."),
]
VerbosityOpt = Annotated[int, typer.Option("-v", "--v", help="Log verbosity (0-10) as upstream's -v.")]
# The leader-election flags get a panel of their own, as upstream's --help groups "Leader election flags": their
# long names would squeeze every other option's help into a narrow column at 80 columns. They show no type
# (metavar ""): with a type column, rich shrinks the name column at 80 columns and cuts the longest name
# (--leader-elect-resource-namespace); tests/cli/test_help.py checks every command's help at 80 columns.
LEADER_ELECTION = "Leader election"
LeaderElectOpt = Annotated[
    bool | None,
    typer.Option(
        "--leader-elect",
        help="Run only while holding the Lease (default true, as upstream); --leader-elect=false or "
        "--no-leader-elect turns it off.",
        metavar="",
        rich_help_panel=LEADER_ELECTION,
    ),
]
# Hidden: shown beside --leader-elect it would add a column to the whole table; --leader-elect's help names it.
NoLeaderElectOpt = Annotated[bool, typer.Option("--no-leader-elect", hidden=True)]
LeaseDurationOpt = Annotated[
    str | None,
    typer.Option(
        "--leader-elect-lease-duration", help="Go duration (default 15s).", metavar="", rich_help_panel=LEADER_ELECTION
    ),
]
RenewDeadlineOpt = Annotated[
    str | None,
    typer.Option(
        "--leader-elect-renew-deadline", help="Go duration (default 10s).", metavar="", rich_help_panel=LEADER_ELECTION
    ),
]
RetryPeriodOpt = Annotated[
    str | None,
    typer.Option(
        "--leader-elect-retry-period", help="Go duration (default 2s).", metavar="", rich_help_panel=LEADER_ELECTION
    ),
]
ResourceLockOpt = Annotated[
    str | None,
    typer.Option(
        "--leader-elect-resource-lock", help="Only 'leases' (the default).", metavar="", rich_help_panel=LEADER_ELECTION
    ),
]
ResourceNameOpt = Annotated[
    str | None,
    typer.Option(
        "--leader-elect-resource-name",
        help="Lease name (default: the component's name).",
        metavar="",
        rich_help_panel=LEADER_ELECTION,
    ),
]
ResourceNamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--leader-elect-resource-namespace",
        help="Lease namespace (default kube-system).",
        metavar="",
        rich_help_panel=LEADER_ELECTION,
    ),
]
BindAddressOpt = Annotated[
    str, typer.Option("--bind-address", help="Address of the metrics port (default 127.0.0.1; 0.0.0.0 in a pod).")
]

# Options of the commands that run simulated kubelets (kubelet, up) or choose a store (apiserver, up).
PullDelayOpt = Annotated[
    float | None, typer.Option("--pull-delay", help="Seconds a simulated image pull takes (default 0.5).")
]
ShutdownDelayOpt = Annotated[
    str | None,
    typer.Option(
        "--shutdown-delay", help="Go duration a container takes to exit after SIGTERM (default 500ms; grace bounds it)."
    ),
]
EtcdServersOpt = Annotated[str, typer.Option("--etcd-servers", help="With --store etcd: etcd URLs, comma-separated.")]
ServiceCIDROpt = Annotated[
    str,
    typer.Option(
        "--service-cluster-ip-range",
        help="CIDR ClusterIPs are allocated from (two of different families, comma-separated: dual-stack).",
    ),
]
NodePortRangeOpt = Annotated[
    str, typer.Option("--service-node-port-range", help="Port range NodePorts are allocated from (BASE-MAX).")
]


def _check_service_ranges(service_cidr: str, node_port_range: str) -> None:
    """Refuse bad --service-cluster-ip-range / --service-node-port-range before anything starts."""
    from kubeplane.apiserver.ipallocator import parse_service_cidrs
    from kubeplane.apiserver.portallocator import parse_port_range

    try:
        parse_service_cidrs(service_cidr)
        parse_port_range(node_port_range)
    except ValueError as exc:
        _fail(str(exc))


def _metrics_port_opt() -> Any:
    return typer.Option("--metrics-port", help="Port for /healthz and /metrics on 127.0.0.1 (0: a free port, logged).")


@app.command()
def apiserver(
    data_dir: Annotated[Path, typer.Option("--data-dir", help="State directory: store, token, kubeconfig.")] = Path(
        ".kubeplane"
    ),
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1; 0 picks a free one.")] = 6443,
    store: Annotated[
        str, typer.Option("--store", help="sqlite (durable, default), memory, or etcd (with --etcd-servers).")
    ] = "sqlite",
    compaction_interval: Annotated[
        float, typer.Option("--etcd-compaction-interval", help="Seconds between store compactions.")
    ] = 300.0,
    event_ttl: Annotated[float, typer.Option("--event-ttl", help="Seconds an Event is kept.")] = 3600.0,
    tls: Annotated[
        bool,
        typer.Option(
            "--tls/--no-tls",
            help="HTTPS with a generated self-signed CA (default). kubectl sends its token only over TLS, so "
            "--no-tls (plain HTTP) suits only clients that send tokens in the clear, such as the Python client.",
        ),
    ] = True,
    kubeconfig_name: Annotated[str, typer.Option("--kubeconfig-name", hidden=True)] = "kubeconfig",
    etcd_servers: EtcdServersOpt = "",
    etcd_prefix: Annotated[str, typer.Option("--etcd-prefix", help="Key prefix in etcd.")] = "/registry",
    etcd_cafile: Annotated[Path | None, typer.Option("--etcd-cafile", help="CA of etcd's TLS.")] = None,
    etcd_certfile: Annotated[Path | None, typer.Option("--etcd-certfile", help="Client certificate.")] = None,
    etcd_keyfile: Annotated[Path | None, typer.Option("--etcd-keyfile", help="Client key.")] = None,
    request_timeout: Annotated[
        float, typer.Option("--request-timeout", help="Seconds a request's body may take to arrive (then 504).")
    ] = 60.0,
    header_timeout: Annotated[
        float, typer.Option("--header-timeout", help="Seconds a request's line and headers may take (Go's 32 s).")
    ] = 32.0,
    handshake_timeout: Annotated[
        float, typer.Option("--tls-handshake-timeout", help="Seconds a TLS handshake may take (Go's 32 s).")
    ] = 32.0,
    max_connections: Annotated[
        int, typer.Option("--max-connections", help="Open connections at most (0: derived from the open-file limit).")
    ] = 0,
    watch_buffer_bytes: Annotated[
        int,
        typer.Option(
            "--watch-buffer-bytes",
            hidden=True,
            help="Bytes of unsent events a watcher may queue before it is closed for not keeping up.",
        ),
    ] = 8 * 1024 * 1024,
    service_cluster_ip_range: ServiceCIDROpt = "10.96.0.0/12",
    service_node_port_range: NodePortRangeOpt = "30000-32767",
    token_auth_file: Annotated[
        Path | None,
        typer.Option(
            "--token-auth-file",
            hidden=True,  # upstream's long names: documented in docs/apiserver.md
            help='Users by bearer token, CSV token,user,uid,"group1,group2" (besides the admin token).',
        ),
    ] = None,
    authorization_mode: Annotated[
        str,
        typer.Option(
            "--authorization-mode",
            hidden=True,
            help="Authorizers in order, comma-separated: Node, RBAC (default Node,RBAC), AlwaysAllow, AlwaysDeny.",
        ),
    ] = "",
    disable_admission_plugins: Annotated[
        str,
        typer.Option(
            "--disable-admission-plugins",
            hidden=True,  # documented in docs/apiserver.md: upstream's long name does not fit --help's 80 columns
            help="Admission plugins to turn off, comma-separated; only ServiceAccount can be (as upstream's test "
            "servers do: without a controller manager nothing creates the default ServiceAccount pods wait for).",
        ),
    ] = "",
    ui_scheduler_config: Annotated[
        Path | None,
        typer.Option(
            "--ui-scheduler-config",
            hidden=True,  # set by `kubeplane up --processes`: the web UI explains with the scheduler's own config
            help="The running scheduler's --config, for the web UI's pod and scheduler views (default: none).",
        ),
    ] = None,
    ui_feature_gates: Annotated[
        str, typer.Option("--ui-feature-gates", hidden=True, help="The running scheduler's --feature-gates.")
    ] = "",
) -> None:
    """Serve the Kubernetes API on 127.0.0.1 and write DATA_DIR/kubeconfig once it answers."""
    from kubeplane.apiserver.http.connections import ConnectionLimits
    from kubeplane.apiserver.server import ServerConfig, run_apiserver
    from kubeplane.ui import mount as ui_mount

    if store not in ("sqlite", "memory", "etcd"):
        _fail(f"--store must be sqlite, memory or etcd, not {store!r}")
    if not 0 <= port <= 65535:
        _fail(f"--port must be between 0 and 65535, not {port}")
    if watch_buffer_bytes <= 0:
        _fail(f"--watch-buffer-bytes must be positive, not {watch_buffer_bytes}")
    _check_service_ranges(service_cluster_ip_range, service_node_port_range)
    disabled = frozenset(p.strip() for p in disable_admission_plugins.split(",") if p.strip())
    for plugin in sorted(disabled - {"ServiceAccount"}):
        _fail(f"--disable-admission-plugins: {plugin!r} cannot be disabled (only ServiceAccount can)")
    if authorization_mode:
        from kubeplane.apiserver.auth.modes import parse_modes

        try:
            parse_modes(authorization_mode)
        except ValueError as exc:
            _fail(f"--authorization-mode: {exc}")
    servers = tuple(u.strip() for u in etcd_servers.split(",") if u.strip())
    if store == "etcd" and not servers:
        _fail("--store etcd needs --etcd-servers URL[,URL...]")
    ui_config = None
    if ui_scheduler_config is not None or ui_feature_gates:
        from kubeplane.cli.component import CLIError
        from kubeplane.cli.scheduling import _load_config

        try:
            ui_config = _load_config(ui_scheduler_config, ui_feature_gates or None)
        except CLIError as exc:
            _fail(str(exc))
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    config = ServerConfig(
        data_dir=data_dir,
        port=port,
        store=store,
        compaction_interval=compaction_interval,
        event_ttl=event_ttl,
        tls=tls,
        kubeconfig_name=kubeconfig_name,
        etcd_servers=servers,
        etcd_prefix=etcd_prefix,
        etcd_cafile=etcd_cafile,
        etcd_certfile=etcd_certfile,
        etcd_keyfile=etcd_keyfile,
        limits=ConnectionLimits(
            header_timeout=header_timeout,
            body_timeout=request_timeout,
            handshake_timeout=handshake_timeout,
            max_connections=max(max_connections, 0),
        ),
        watch_buffer_bytes=watch_buffer_bytes,
        service_cluster_ip_range=service_cluster_ip_range,
        service_node_port_range=service_node_port_range,
        service_account_admission="ServiceAccount" not in disabled,
        token_auth_file=token_auth_file,
        authorization_mode=authorization_mode,
        ui=ui_mount(ui_config),
    )

    def ready(address: str, kubeconfig: Path) -> None:
        typer.echo(f"kubeplane apiserver serving on {address}", err=True)
        typer.echo(f"web UI: {address}/ui/ (log in with the kubeconfig's token)", err=True)
        typer.echo(f"use it: .venv/bin/kubectl --kubeconfig {kubeconfig} get namespaces", err=True)

    # uvicorn handles SIGINT/SIGTERM itself (graceful shutdown) and re-raises the signal when done; this
    # handler receives that re-raise so the process finishes its own clean-up and exits 0.
    signal.signal(signal.SIGTERM, lambda _sig, _frame: None)
    try:
        import uvloop

        from kubeplane.cli.gcpolicy import tune_for_control_plane

        tune_for_control_plane()
        uvloop.run(run_apiserver(config, on_ready=ready))
    except StoreError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        pass


FeatureGatesOpt = Annotated[
    str | None,
    typer.Option(
        "--feature-gates",
        help="kube-scheduler feature gates: comma-separated Name=true|false pairs (gang scheduling: "
        "GenericWorkload=true and GangScheduling=true); v1.37's defaults otherwise.",
    ),
]


@app.command()
def scheduler(
    kubeconfig: KubeconfigOpt = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="KubeSchedulerConfiguration file (YAML/JSON).")
    ] = None,
    verbosity: VerbosityOpt = 0,
    leader_elect: LeaderElectOpt = None,
    no_leader_elect: NoLeaderElectOpt = False,
    lease_duration: LeaseDurationOpt = None,
    renew_deadline: RenewDeadlineOpt = None,
    retry_period: RetryPeriodOpt = None,
    resource_lock: ResourceLockOpt = None,
    resource_name: ResourceNameOpt = None,
    resource_namespace: ResourceNamespaceOpt = None,
    metrics_port: Annotated[int, _metrics_port_opt()] = 10259,
    bind_address: BindAddressOpt = "127.0.0.1",
    feature_gates: FeatureGatesOpt = None,
) -> None:
    """Run kube-scheduler against an API server (kubeplane's or any Kubernetes cluster's)."""
    from kubeplane.cli.component import CLIError, LeaderElectionFlags
    from kubeplane.cli.scheduling import run_scheduler

    flags = LeaderElectionFlags(
        leader_elect=False if no_leader_elect else leader_elect,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        resource_lock=resource_lock,
        resource_name=resource_name,
        resource_namespace=resource_namespace,
    )
    try:
        run_scheduler(
            kubeconfig=kubeconfig,
            config=config,
            verbosity=verbosity,
            leader_election=flags,
            metrics_port=metrics_port,
            bind_address=bind_address,
            feature_gates=feature_gates,
        )
    except CLIError as exc:
        _fail(str(exc))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def autoscaler(
    ctx: typer.Context,
    node_groups: Annotated[Path, typer.Option("--node-groups", help="Node groups file (docs/autoscaler.md).")],
    kubeconfig: KubeconfigOpt = None,
    verbosity: VerbosityOpt = 0,
    metrics_port: Annotated[int, _metrics_port_opt()] = 8085,
    bind_address: BindAddressOpt = "127.0.0.1",
) -> None:
    """Run the cluster-autoscaler over simulated node groups.

    Other options are cluster-autoscaler's flags, e.g. --scan-interval=10s,
    --expander=least-waste (docs/autoscaler.md)."""
    from kubeplane.cli.autoscaler import run_autoscaler
    from kubeplane.cli.component import CLIError, configure_logging

    configure_logging(verbosity)
    try:
        run_autoscaler(
            kubeconfig=kubeconfig,
            node_groups=node_groups,
            args=list(ctx.args),
            metrics_port=metrics_port,
            bind_address=bind_address,
        )
    except CLIError as exc:
        _fail(str(exc))


@app.command("controller-manager")
def controller_manager(
    kubeconfig: KubeconfigOpt = None,
    controllers: Annotated[
        str,
        typer.Option("--controllers", help="Comma-separated: '*' for all, 'name' to enable, '-name' to disable."),
    ] = "*",
    verbosity: VerbosityOpt = 0,
    leader_elect: LeaderElectOpt = None,
    no_leader_elect: NoLeaderElectOpt = False,
    lease_duration: LeaseDurationOpt = None,
    renew_deadline: RenewDeadlineOpt = None,
    retry_period: RetryPeriodOpt = None,
    resource_lock: ResourceLockOpt = None,
    resource_name: ResourceNameOpt = None,
    resource_namespace: ResourceNamespaceOpt = None,
    metrics_port: Annotated[int, _metrics_port_opt()] = 10257,
    bind_address: BindAddressOpt = "127.0.0.1",
    use_service_account_credentials: Annotated[
        bool,
        typer.Option(
            "--use-service-account-credentials/--no-use-service-account-credentials",
            hidden=True,  # too wide for the 80-column help; docs/controllers.md describes it
            help="Each controller calls the API as its own kube-system ServiceAccount (kubeadm's setting).",
        ),
    ] = True,
) -> None:
    """Run the controllers (ReplicaSet, Deployment, ...) against an API server, under leader election."""
    from kubeplane.cli.component import CLIError, LeaderElectionFlags
    from kubeplane.cli.controller_manager import run_controller_manager

    flags = LeaderElectionFlags(
        leader_elect=False if no_leader_elect else leader_elect,
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        resource_lock=resource_lock,
        resource_name=resource_name,
        resource_namespace=resource_namespace,
    )
    try:
        run_controller_manager(
            kubeconfig=kubeconfig,
            verbosity=verbosity,
            controllers=controllers,
            leader_election=flags,
            metrics_port=metrics_port,
            bind_address=bind_address,
            use_service_account_credentials=use_service_account_credentials,
        )
    except CLIError as exc:
        _fail(str(exc))


@app.command()
def descheduler(
    kubeconfig: KubeconfigOpt = None,
    policy_config_file: Annotated[
        Path | None, typer.Option("--policy-config-file", help="DeschedulerPolicy file (descheduler/v1alpha2).")
    ] = None,
    descheduling_interval: Annotated[
        str, typer.Option("--descheduling-interval", help="Go duration between passes (0: one pass, then exit).")
    ] = "0s",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Log and count evictions; evict nothing.")] = False,
    verbosity: VerbosityOpt = 0,
    metrics_port: Annotated[int, _metrics_port_opt()] = 10258,
    bind_address: BindAddressOpt = "127.0.0.1",
) -> None:
    """Run the descheduler (kubernetes-sigs/descheduler) against an API server."""
    from kubeplane.cli.component import CLIError
    from kubeplane.cli.descheduling import run_descheduler

    try:
        run_descheduler(
            kubeconfig=kubeconfig,
            policy_config_file=policy_config_file,
            descheduling_interval=descheduling_interval,
            dry_run=dry_run,
            verbosity=verbosity,
            metrics_port=metrics_port,
            bind_address=bind_address,
        )
    except CLIError as exc:
        _fail(str(exc))


@app.command()
def up(
    data_dir: Annotated[Path, typer.Option("--data-dir", help="State directory: store, kubeconfig, logs.")] = Path(
        ".kubeplane"
    ),
    port: Annotated[int, typer.Option("--port", help="API server port on 127.0.0.1; 0 picks a free one.")] = 6443,
    nodes: Annotated[
        int | None, typer.Option("--nodes", help="N worker nodes (4 CPU, 8Gi, 110 pods; 3 zones) plus the master.")
    ] = None,
    node_config: Annotated[
        Path | None, typer.Option("--node-config", help="Node-config YAML (docs/kubelet.md) instead of --nodes.")
    ] = None,
    node_groups: Annotated[
        Path | None,
        typer.Option("--node-groups", help="Node groups of the simulated cloud (docs/autoscaler.md), in addition."),
    ] = None,
    autoscaler_flag: Annotated[
        list[str] | None,
        typer.Option(
            "--autoscaler-flag",
            metavar="FLAG",
            help="One cluster-autoscaler flag (e.g. =--scan-interval=1m) for the autoscaler of --node-groups; "
            "repeatable.",
        ),
    ] = None,
    store: Annotated[
        str, typer.Option("--store", help="sqlite (durable, default), memory, or etcd (with --etcd-servers).")
    ] = "sqlite",
    etcd_servers: EtcdServersOpt = "",
    scheduler_config: Annotated[
        Path | None, typer.Option("--scheduler-config", help="KubeSchedulerConfiguration file.")
    ] = None,
    feature_gates: FeatureGatesOpt = None,
    processes: Annotated[
        bool, typer.Option("--processes", help="One process per component over HTTP (default: one process).")
    ] = False,
    pull_delay: PullDelayOpt = None,
    shutdown_delay: ShutdownDelayOpt = None,
    verbosity: VerbosityOpt = 0,
    service_cluster_ip_range: ServiceCIDROpt = "10.96.0.0/12",
    service_node_port_range: NodePortRangeOpt = "30000-32767",
) -> None:
    """Start a whole cluster: API server, controller manager, scheduler and simulated kubelets."""
    from kubeplane.cli.component import CLIError
    from kubeplane.cli.up import UpOptions, run_up

    _check_service_ranges(service_cluster_ip_range, service_node_port_range)

    try:
        run_up(
            UpOptions(
                data_dir=data_dir, port=port, node_config=node_config, nodes=nodes, store=store,
                scheduler_config=scheduler_config, feature_gates=feature_gates, processes=processes,
                verbosity=verbosity,
                pull_delay=pull_delay, shutdown_delay=shutdown_delay, etcd_servers=etcd_servers,
                service_cluster_ip_range=service_cluster_ip_range, service_node_port_range=service_node_port_range,
                node_groups=node_groups, autoscaler_flags=tuple(autoscaler_flag or ()),
            )
        )  # fmt: skip
    except CLIError as exc:
        _fail(str(exc))
    except StoreError as exc:
        _fail(str(exc))


@app.command()
def kubelet(
    kubeconfig: KubeconfigOpt = None,
    node_config: Annotated[
        Path | None,
        typer.Option("--node-config", help="Node-config YAML (docs/kubelet.md); default: the demo cluster."),
    ] = None,
    nodes: Annotated[int | None, typer.Option("--nodes", help="The demo master plus N worker nodes.")] = None,
    pull_delay: PullDelayOpt = None,
    shutdown_delay: ShutdownDelayOpt = None,
    batch_run_time: Annotated[
        str | None,
        typer.Option(
            "--batch-run-time",
            help="Go duration a Never/OnFailure pod's containers run without sim.kubeplane.io/duration (default 5s).",
        ),
    ] = None,
    kube_api_qps: Annotated[
        float, typer.Option("--kube-api-qps", help="Client rate limit of the whole fleet (0: none).")
    ] = 0.0,
    verbosity: VerbosityOpt = 0,
    metrics_port: Annotated[int, _metrics_port_opt()] = 10248,
    bind_address: BindAddressOpt = "127.0.0.1",
    root_dir: Annotated[
        Path | None,
        typer.Option("--root-dir", help="Directory of the kubelets' state (DRA checkpoints); default: none kept."),
    ] = None,
) -> None:
    """Run simulated kubelets: register nodes, heartbeat, run the pods bound to them (nothing is executed)."""
    from kubeplane.cli.component import CLIError
    from kubeplane.cli.kubelet import run_kubelet

    try:
        run_kubelet(
            kubeconfig=kubeconfig,
            verbosity=verbosity,
            node_config=node_config,
            nodes=nodes,
            pull_delay=pull_delay,
            shutdown_delay=shutdown_delay,
            batch_run_time=batch_run_time,
            kube_api_qps=kube_api_qps,
            metrics_port=metrics_port,
            bind_address=bind_address,
            root_dir=root_dir,
        )
    except CLIError as exc:
        _fail(str(exc))


@app.command()
def explain(
    pod: Annotated[str, typer.Option("--pod", help="Pod file, or NS/NAME of a pod in the live cluster.")],
    cluster: Annotated[
        Path | None, typer.Option("--cluster", help="Offline: a v1 List or multi-document YAML of Nodes and Pods.")
    ] = None,
    config: Annotated[Path | None, typer.Option("--config", help="KubeSchedulerConfiguration file.")] = None,
    output: Annotated[str, typer.Option("-o", "--output", help="table (default) or json.")] = "table",
    kubeconfig: Annotated[str | None, typer.Option("--kubeconfig", help="Kubeconfig for the live cluster.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the tie-breaking RNG.")] = 0,
    what_if: Annotated[
        bool,
        typer.Option(
            "--what-if",
            help="For a pod that fits nowhere: the smallest single changes that would let it fit, each verified "
            "by re-running the filters on a modified copy of the cluster.",
        ),
    ] = False,
    feature_gates: FeatureGatesOpt = None,
) -> None:
    """Explain where a pod would be scheduled and why every other node was rejected or ranked lower."""
    from kubeplane.cli.component import CLIError
    from kubeplane.cli.scheduling import run_explain

    try:
        run_explain(
            pod_ref=pod,
            cluster=cluster,
            config=config,
            output=output,
            kubeconfig=kubeconfig,
            seed=seed,
            what_if=what_if,
            feature_gates=feature_gates,
        )
    except CLIError as exc:
        _fail(str(exc))


_BOOL_FLAGS = ("--leader-elect",)


def normalize_bool_flags(argv: list[str]) -> list[str]:
    """Accept Go-style ``--flag=true|false`` for boolean flags (the seeds write ``--leader-elect=true``)."""
    out: list[str] = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        if eq and name in _BOOL_FLAGS and value.lower() in ("true", "false", "1", "0", "t", "f"):
            out.append(name if value.lower() in ("true", "1", "t") else "--no-" + name[2:])
        else:
            out.append(arg)
    return out


def main() -> None:
    app(args=normalize_bool_flags(sys.argv[1:]))


from kubeplane.cli.store import store_app  # noqa: E402 - registered last: the command group is optional

app.add_typer(store_app, name="store")

from kubeplane.cli.sim import sim_app  # noqa: E402

app.add_typer(sim_app, name="sim")

from kubeplane.cli.ui import ui as ui_command  # noqa: E402

app.command(name="ui")(ui_command)
if __name__ == "__main__":
    main()
