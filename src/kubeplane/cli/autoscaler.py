"""``kubeplane autoscaler``: the cluster-autoscaler against an API server, its cloud the simulated node groups of
``--node-groups FILE`` (docs/autoscaler.md).

The groups' nodes run as kubelets in a fleet of this process (:func:`kubeplane.autoscaler.fleet_provider.
fleet_provider`: nodes of the groups the API already has are taken back); the core
(:class:`kubeplane.autoscaler.loop.Autoscaler`) list-watches the cluster through ``--kubeconfig`` like any
component. Every other option is one of cluster-autoscaler's flags (``--scan-interval=10s``, ``--expander=...``;
:class:`kubeplane.autoscaler.options.AutoscalerOptions`); /healthz and /metrics are served on ``--metrics-port``
(upstream's ``--address`` port, 8085). No leader election: run one replica.
"""

from __future__ import annotations

import asyncio
import random
import types
from collections.abc import Sequence
from pathlib import Path

from kubeplane.cli.component import CLIError, client_config, serve_component
from kubeplane.cli.gcpolicy import tune_for_control_plane

__all__ = ["run_autoscaler"]


def run_autoscaler(
    *,
    kubeconfig: str | None,
    node_groups: Path,
    args: Sequence[str],
    metrics_port: int,
    bind_address: str,
) -> None:
    """Parse the flags and the groups (one CLIError line each), then run until SIGINT/SIGTERM."""
    from kubeplane.autoscaler.fleet_provider import fleet_provider
    from kubeplane.autoscaler.loop import Autoscaler
    from kubeplane.autoscaler.nodegroups import NodeGroupConfigError, load_node_groups
    from kubeplane.autoscaler.options import AutoscalerOptions, OptionsError
    from kubeplane.client.clock import SystemClock
    from kubeplane.client.errors import ClientError
    from kubeplane.client.http import HTTPClient

    try:
        options = AutoscalerOptions.from_args(list(args))
    except OptionsError as exc:
        raise CLIError(str(exc)) from None
    try:
        groups = load_node_groups(node_groups)
    except NodeGroupConfigError as exc:
        raise CLIError(str(exc)) from None
    if not groups:
        raise CLIError(f"--node-groups {node_groups}: no node groups")

    async def main() -> None:
        client = HTTPClient(client_config(kubeconfig))
        clock = SystemClock()
        try:
            async with fleet_provider(client, groups, clock=clock) as provider:
                autoscaler = Autoscaler(client, provider=provider, options=options, clock=clock, rng=random.Random())

                async def work() -> None:
                    await autoscaler.start()
                    await autoscaler.run()

                try:
                    await serve_component(
                        component="autoscaler",
                        le=types.SimpleNamespace(leader_elect=False),
                        elector_client=None,
                        metrics_port=metrics_port,
                        bind_address=bind_address,
                        warm_up=autoscaler.start,
                        work=work,
                        describe=f"for node groups {', '.join(g.name for g in groups)}",
                    )
                finally:
                    await autoscaler.stop()
        finally:
            await client.close()

    tune_for_control_plane()
    try:
        asyncio.run(main())
    except ClientError as exc:
        raise CLIError(str(exc)) from None
