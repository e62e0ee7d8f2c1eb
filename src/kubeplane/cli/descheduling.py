"""``kubeplane descheduler``: kubernetes-sigs/descheduler's command against an API server.

Upstream's flags: ``--policy-config-file`` (a DeschedulerPolicy, ``descheduler/v1alpha2``; docs/descheduler.md),
``--descheduling-interval`` (a Go duration; 0, the default, runs one pass and exits), ``--dry-run`` (log and
count evictions, send none), ``--kubeconfig``, ``-v``. /healthz and /metrics (``descheduler_pods_evicted``...)
are served on ``--metrics-port`` (upstream's secure port is 10258). Leader election is off, as upstream's
default. A policy that cannot be used is one ``error:`` line with upstream's message.
"""

from __future__ import annotations

import random
from pathlib import Path

from kubeplane.cli.component import CLIError, configure_logging, run_component
from kubeplane.client.interface import Client

__all__ = ["run_descheduler"]


def run_descheduler(
    *,
    kubeconfig: str | None,
    policy_config_file: Path | None,
    descheduling_interval: str,
    dry_run: bool,
    verbosity: int,
    metrics_port: int = 10258,
    bind_address: str = "127.0.0.1",
) -> None:
    from kubeplane.api.durations import parse_duration
    from kubeplane.client.clock import SystemClock
    from kubeplane.descheduler.loop import Descheduler
    from kubeplane.descheduler.policy import DeschedulerPolicy, PolicyError, load_policy
    from kubeplane.scheduler.config.types import LeaderElection

    configure_logging(verbosity)
    try:
        interval = parse_duration(descheduling_interval) / 1e9
    except ValueError as exc:
        raise CLIError(f"--descheduling-interval: {exc}") from None
    if interval < 0:
        raise CLIError("--descheduling-interval: must not be negative")
    try:
        # Upstream: no policy file means an empty policy (no profiles: every pass does nothing).
        policy = DeschedulerPolicy() if policy_config_file is None else load_policy(policy_config_file)
    except PolicyError as exc:
        raise CLIError(str(exc)) from None

    def build(client: Client) -> tuple[Descheduler, str]:
        descheduler = Descheduler(
            client, policy=policy, clock=SystemClock(), rng=random.Random(), interval=interval, dry_run=dry_run
        )
        profiles = ", ".join(p.name for p in policy.profiles) or "(none)"
        mode = " in dry-run mode" if dry_run else ""
        return descheduler, f"with profiles {profiles}{mode}"

    try:
        run_component(
            component="descheduler",
            kubeconfig=kubeconfig,
            le=LeaderElection(leader_elect=False, resource_name="descheduler"),
            metrics_port=metrics_port,
            bind_address=bind_address,
            build=build,
        )
    except PolicyError as exc:  # a priorityThreshold naming a PriorityClass that is not there, ...
        raise CLIError(str(exc)) from None
