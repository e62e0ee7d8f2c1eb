"""``kubeplane kubelet``: a fleet of simulated kubelets against an API server (:mod:`kubeplane.kubelet.fleet`).

The nodes come from ``--node-config`` (the node-config YAML, :mod:`kubeplane.kubelet.config`), or ``--nodes N``
(the demo master plus N workers), or by default the seeds' demo cluster. The fleet's client is not rate
limited by default (``--kube-api-qps 0``): it stands for many kubelets, each of which would have its own
50 qps. /healthz and /metrics are served on ``--metrics-port`` (upstream's healthz port 10248). Each node writes as
its own kubelet, ``system:node:<name>`` in ``system:nodes``, impersonated on the kubeconfig's credentials (the
fleet's ``system:kubeplane:kubelet-fleet``, or an admin's), which must be allowed to impersonate them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubeplane.cli.component import CLIError, configure_logging, run_component
from kubeplane.client.interface import Client

if TYPE_CHECKING:
    from kubeplane.kubelet.config import NodeSpec
    from kubeplane.kubelet.fleet import FleetOptions

__all__ = ["fleet_options", "node_specs", "run_kubelet"]


def node_specs(node_config: Path | None, nodes: int | None) -> list[NodeSpec]:
    """The fleet's nodes from the flags (one-line CLIError on a bad file)."""
    from kubeplane.kubelet.config import NodeConfigError, demo_cluster, load_node_config, uniform_cluster

    if node_config is not None and nodes is not None:
        raise CLIError("give either --node-config or --nodes, not both")
    if nodes is not None and nodes < 0:
        raise CLIError(f"--nodes must be at least 0, not {nodes}")
    try:
        if node_config is not None:
            return load_node_config(node_config)
    except NodeConfigError as exc:
        raise CLIError(str(exc)) from None
    return uniform_cluster(nodes) if nodes is not None else demo_cluster()


def fleet_options(
    *, pull_delay: float | None = None, shutdown_delay: str | None = None, batch_run_time: str | None = None
) -> FleetOptions:
    from kubeplane.api.durations import parse_duration
    from kubeplane.kubelet.fleet import FleetOptions

    # kubectl logs / top reach the fleet's kubelet API; pods of kubeplane's own image run as real processes
    options = FleetOptions(kubelet_api=True, real_processes=True)
    if pull_delay is not None:
        if pull_delay < 0:
            raise CLIError(f"--pull-delay must not be negative, not {pull_delay}")
        options.pull_delay = pull_delay
    if shutdown_delay is not None:
        try:
            options.shutdown_delay = parse_duration(shutdown_delay) / 1e9
        except ValueError as exc:
            raise CLIError(f"--shutdown-delay: {exc}") from None
    if batch_run_time is not None:
        try:
            options.batch_run_time = parse_duration(batch_run_time) / 1e9
        except ValueError as exc:
            raise CLIError(f"--batch-run-time: {exc}") from None
        if options.batch_run_time < 0:
            raise CLIError(f"--batch-run-time must not be negative, not {batch_run_time}")
    return options


def run_kubelet(
    *,
    kubeconfig: str | None,
    verbosity: int,
    node_config: Path | None = None,
    nodes: int | None = None,
    pull_delay: float | None = None,
    shutdown_delay: str | None = None,
    batch_run_time: str | None = None,
    kube_api_qps: float = 0.0,
    metrics_port: int = 10248,
    bind_address: str = "127.0.0.1",
    root_dir: Path | None = None,
) -> None:
    from kubeplane.kubelet.fleet import NODES_GROUP, Fleet, node_user_name
    from kubeplane.scheduler.config.types import LeaderElection

    configure_logging(verbosity)
    specs = node_specs(node_config, nodes)
    options = fleet_options(pull_delay=pull_delay, shutdown_delay=shutdown_delay, batch_run_time=batch_run_time)
    options.state_dir = root_dir

    def build(client: Client) -> tuple[Fleet, str]:
        # each node writes as its own kubelet, system:node:<name> in system:nodes, impersonated on the
        # kubeconfig's credentials (the fleet's identity, or an admin's: both may impersonate nodes)
        http: Any = client
        fleet = Fleet(
            client,
            specs,
            options=options,
            node_client=lambda name: http.impersonating(node_user_name(name), (NODES_GROUP,)),
        )
        return fleet, f"with {len(specs)} node(s)"

    run_component(
        component="kubelet",
        kubeconfig=kubeconfig,
        le=LeaderElection(leader_elect=False),
        metrics_port=metrics_port,
        bind_address=bind_address,
        build=build,
        qps=kube_api_qps,
        burst=max(int(kube_api_qps * 2), 1),
    )
