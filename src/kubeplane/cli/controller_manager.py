"""``kubeplane controller-manager``: every controller against an API server, under leader election.

As kube-controller-manager: ``--controllers`` selects controllers (``*`` all, ``name``, ``-name``); the Lease is
``kube-system/kube-controller-manager``; /healthz and /metrics are served on ``--metrics-port`` (upstream's secure
port 10257). Leader election and the metrics port work as for the scheduler (:mod:`kubeplane.cli.component`).
``--use-service-account-credentials`` (default on, as kubeadm sets it) runs each controller as its own
``kube-system`` ServiceAccount with a token requested by the manager's own credentials
(:class:`kubeplane.controllers.credentials.TokenClientBuilder`); the informers and leader election keep the
kubeconfig's identity.
"""

from __future__ import annotations

from kubeplane.cli.component import (
    CLIError,
    LeaderElectionFlags,
    apply_leader_election_flags,
    configure_logging,
    run_component,
)
from kubeplane.client.interface import Client

__all__ = ["run_controller_manager"]


def run_controller_manager(
    *,
    kubeconfig: str | None,
    verbosity: int,
    controllers: str = "*",
    leader_election: LeaderElectionFlags | None = None,
    metrics_port: int = 10257,
    bind_address: str = "127.0.0.1",
    use_service_account_credentials: bool = True,
) -> None:
    from kubeplane.controllers.credentials import TokenClientBuilder
    from kubeplane.controllers.manager import ControllerManager, available_controllers, select_controllers
    from kubeplane.scheduler.config.types import LeaderElection

    configure_logging(verbosity)
    try:
        selected = select_controllers(controllers.split(","), list(available_controllers()))
    except ValueError as exc:
        raise CLIError(f"--controllers: {exc}") from None
    le = apply_leader_election_flags(
        LeaderElection(resource_name="kube-controller-manager"), leader_election or LeaderElectionFlags()
    )

    def build(client: Client) -> tuple[ControllerManager, str]:
        builder = TokenClientBuilder(client) if use_service_account_credentials else None
        manager = ControllerManager(
            client,
            controllers=selected,
            client_for=None if builder is None else builder.client_for,
            prepare=None if builder is None else builder.prepare,
        )
        return manager, f"with controllers {', '.join(manager.controllers) or '(none)'}"

    run_component(
        component="controller-manager",
        kubeconfig=kubeconfig,
        le=le,
        metrics_port=metrics_port,
        bind_address=bind_address,
        build=build,
    )
