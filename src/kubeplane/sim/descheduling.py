"""The descheduler in a simulation: the scenario's ``descheduler`` section, the component the runner starts,
and what it adds to the outputs.

Scenario::

    descheduler:
      policy: {...a DeschedulerPolicy (descheduler/v1alpha2)...}   # or
      policyFile: desched-policy.yaml                            # relative to the scenario file
      interval: 5m                                               # --descheduling-interval (Go duration or seconds)
      dryRun: false                                              # --dry-run

The descheduler runs on the run's virtual clock with its own random source (derived from the seed, so a run
without a descheduler draws exactly what it drew before: event-log hashes of other scenarios do not change). As
upstream, its first pass runs at start-up (time 0, when the cluster is still coming up: nothing to do) and then
one every ``interval``. Pods it evicts end as ``evicted`` in pods.csv (the runner marks them
before the Eviction is sent, as it does for ``drain``), with the plugin that evicted them as their ``reason``;
summary.json gets ``descheduler_evictions`` and ``descheduler_evictions_by_plugin`` (dry-run: the evictions
that would have been made).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kubeplane.api.views import name_of, namespace_of
from kubeplane.client.clock import Clock
from kubeplane.client.interface import Client
from kubeplane.descheduler.loop import Descheduler
from kubeplane.descheduler.policy import DeschedulerPolicy, PolicyError, load_policy, parse_policy

__all__ = ["FIELDS", "DeschedulerSpec", "SimDescheduler", "parse_descheduler"]

FIELDS: Final = ("descheduler_evictions", "descheduler_evictions_by_plugin")
"""summary.json fields of runs with a descheduler."""


@dataclass(frozen=True)
class DeschedulerSpec:
    policy: DeschedulerPolicy
    interval: float = 300.0
    dry_run: bool = False


def parse_descheduler(
    value: Any, base: Path, *, seconds: Callable[[Any, str], float], error: type[ValueError]
) -> DeschedulerSpec | None:
    """The ``descheduler`` section (None when absent); errors are ``error`` (the scenario's) with one line."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise error("descheduler: expected a mapping")
    unknown = sorted(set(value) - {"policy", "policyFile", "interval", "dryRun"})
    if unknown:
        raise error(f"descheduler: unknown field(s) {', '.join(unknown)}")
    if ("policy" in value) == ("policyFile" in value):
        raise error("descheduler: needs exactly one of policy, policyFile")
    try:
        if "policy" in value:
            policy = parse_policy(value["policy"], source="descheduler.policy")
        else:
            policy = load_policy(base / str(value["policyFile"]))
    except PolicyError as exc:
        raise error(f"descheduler: {exc}") from None
    dry_run = value.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise error("descheduler.dryRun: expected true or false")
    interval = seconds(value.get("interval", 300), "descheduler.interval")
    if interval <= 0:
        raise error("descheduler.interval: must be positive")
    return DeschedulerSpec(policy, interval, dry_run)


class SimDescheduler:
    """The runner's descheduler: started after the scheduler, its passes every ``interval`` of virtual time."""

    def __init__(
        self,
        spec: DeschedulerSpec,
        client: Client,
        *,
        clock: Clock,
        seed: int,
        evicted: set[str],
        metrics_registry: Any,
    ) -> None:
        self.spec = spec
        self._evicted = evicted

        def mark(pod: Mapping[str, Any], sent: bool) -> None:
            key = f"{namespace_of(pod)}/{name_of(pod)}"
            if sent:
                evicted.add(key)
            else:
                evicted.discard(key)

        self.descheduler = Descheduler(
            client,
            policy=spec.policy,
            clock=clock,
            rng=random.Random(f"descheduler-{seed}"),
            interval=spec.interval,
            dry_run=spec.dry_run,
            metrics_registry=metrics_registry,
            on_request=mark,
        )

    async def start(self) -> None:
        await self.descheduler.start()

    async def run(self) -> None:
        await self.descheduler.run()

    async def stop(self) -> None:
        await self.descheduler.stop()

    def summary(self) -> dict[str, Any]:
        by_plugin = Counter(e.strategy for e in self.descheduler.evicted)
        return {
            "descheduler_evictions": sum(by_plugin.values()),
            "descheduler_evictions_by_plugin": dict(sorted(by_plugin.items())),
        }

    def annotate(self, rows: Sequence[dict[str, Any]]) -> None:
        """Give pods.csv rows of pods this descheduler evicted the plugin's name as their reason."""
        if self.spec.dry_run:
            return
        by_key = {f"{e.namespace}/{e.name}": e.strategy for e in self.descheduler.evicted}
        for row in rows:
            strategy = by_key.get(f"{row['namespace']}/{row['name']}")
            if strategy is not None and row["end"] == "evicted":
                row["reason"] = strategy
