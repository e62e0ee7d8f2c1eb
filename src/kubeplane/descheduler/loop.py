"""The descheduler's loop (upstream ``pkg/descheduler/descheduler.go``): informers for nodes, pods,
namespaces and PodDisruptionBudgets; one pass per ``interval`` of the injected clock; each pass runs every
profile's Deschedule plugins, then every profile's Balance plugins, evicting through the Eviction API.

Lifecycle: ``start()`` starts the informers, waits for their lists and resolves each profile's priority
threshold (``priorityThreshold.name`` is read from its PriorityClass; no threshold is SystemCriticalPriority);
``run()`` (starting first if need be) runs passes until cancelled (``interval`` 0: one pass, then return, as upstream's
``--descheduling-interval 0``); ``stop()`` stops the informers and flushes events.

A pass, as ``runDeschedulerLoop``/``runProfiles``: the eviction counters reset (limits are per pass); the nodes
are the informer's nodes matching the policy's ``nodeSelector`` that are Ready; with one node or none the pass
does nothing ("the cluster size is 0 or 1 meaning eviction causes service disruption or degradation"); profiles
are built afresh from the policy (upstream builds them each cycle) over one :class:`ClusterView`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubeplane.api.labels import parse
from kubeplane.api.views import labels_of, name_of
from kubeplane.client.clock import Clock
from kubeplane.client.errors import ClientError
from kubeplane.client.event_series import SeriesEventRecorder
from kubeplane.client.informer import SharedInformer
from kubeplane.client.interface import Client
from kubeplane.metrics.descheduler import DeschedulerMetrics, descheduler_metrics

from . import evictor as default_evictor
from .framework import ClusterView, Eviction, Handle, PodEvictor
from .podutil import SYSTEM_CRITICAL_PRIORITY, is_node_ready
from .policy import DeschedulerPolicy, PolicyError, Profile

Obj = Mapping[str, Any]
log = logging.getLogger("kubeplane.descheduler")

__all__ = ["REPORTING_CONTROLLER", "Descheduler"]

REPORTING_CONTROLLER = "sigs.k8s.io.descheduler"


class Descheduler:
    """The descheduler as a component (``start``/``run``/``stop``, as the scheduler and controller manager)."""

    def __init__(
        self,
        client: Client,
        *,
        policy: DeschedulerPolicy,
        clock: Clock,
        rng: random.Random,
        interval: float = 300.0,
        dry_run: bool = False,
        metrics_registry: Any = None,
        recorder: SeriesEventRecorder | None = None,
        on_request: Callable[[Obj, bool], None] | None = None,
    ) -> None:
        self.client, self.policy, self.clock, self.rng = client, policy, clock, rng
        self.interval, self.dry_run = interval, dry_run
        self.metrics: DeschedulerMetrics = descheduler_metrics(metrics_registry)
        # upstream utils.GetRecorderAndBroadcaster: events.NewEventBroadcasterAdapter(...).NewRecorder(
        # "sigs.k8s.io.descheduler") (dots, not a slash): events.k8s.io/v1 Events from "<that>-<hostname>"
        self.recorder = (
            recorder
            if recorder is not None
            else SeriesEventRecorder(
                client,
                reporting_controller=REPORTING_CONTROLLER,
                reporting_instance=f"{REPORTING_CONTROLLER}-{socket.gethostname()}",
                clock=clock,
                rng=random.Random(rng.getrandbits(64)),
            )
        )
        self.evictor = PodEvictor(
            client,
            metrics=self.metrics,
            recorder=self.recorder,
            dry_run=dry_run,
            max_per_node=policy.max_per_node,
            max_per_namespace=policy.max_per_namespace,
            max_total=policy.max_total,
            grace_period_seconds=policy.grace_period_seconds,
            failure_events=policy.eviction_failure_event_notification,
            now=clock.monotonic,
            on_request=on_request,
        )
        self._informers = {
            name: SharedInformer(client, name, clock=clock, rng=rng)
            for name in ("nodes", "pods", "namespaces", "poddisruptionbudgets")
        }
        self._thresholds: dict[str, int] = {}
        self.passes = 0
        self._started = False

    @property
    def evicted(self) -> Sequence[Eviction]:
        """Every eviction so far (dry-run: every eviction that would have been made)."""
        return self.evictor.evicted

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        for informer in self._informers.values():
            informer.start()
        await asyncio.gather(*(i.wait_for_sync() for i in self._informers.values()))
        for profile in self.policy.profiles:
            self._thresholds[profile.name] = await self._threshold(profile)

    async def _threshold(self, profile: Profile) -> int:
        """Upstream ``GetPriorityValueFromPriorityThreshold``; raises :class:`PolicyError`."""
        args = profile.args_of(default_evictor.PLUGIN_NAME)
        threshold = args.priority_threshold
        if threshold is None or (threshold.value is None and not threshold.name):
            return SYSTEM_CRITICAL_PRIORITY
        if threshold.value is not None:
            value = threshold.value
        else:
            try:
                pc = await self.client.get(self.client.resource("priorityclasses"), threshold.name)
            except ClientError as exc:
                raise PolicyError(f"unable to get priority value from the priority class: {exc}") from None
            value = int(pc.get("value") or 0)
        value = int(value)
        if value > SYSTEM_CRITICAL_PRIORITY:
            raise PolicyError(f"priority threshold can't be greater than {SYSTEM_CRITICAL_PRIORITY}")
        return value

    async def run(self) -> None:
        await self.start()  # a no-op after start(); the CLI without leader election calls run() alone
        while True:
            await self.run_pass()
            if self.interval <= 0:
                return
            await self.clock.sleep(self.interval)

    async def stop(self) -> None:
        for informer in self._informers.values():
            await informer.stop()
        await self.recorder.close()

    def _nodes(self) -> list[Obj]:
        nodes = sorted(self._informers["nodes"].lister().list(), key=name_of)
        if self.policy.node_selector:
            selector = parse(self.policy.node_selector)
            nodes = [n for n in nodes if selector.matches(labels_of(n))]
        return [n for n in nodes if is_node_ready(n)]

    def _view(self, nodes: list[Obj]) -> ClusterView:
        pods: list[Obj] = sorted(
            self._informers["pods"].lister().list(), key=lambda p: (p["metadata"].get("namespace"), name_of(p))
        )
        return ClusterView(
            nodes=nodes,
            pods=pods,
            pdbs=list(self._informers["poddisruptionbudgets"].lister().list()),
            namespaces={name_of(n): n for n in self._informers["namespaces"].lister().list()},
            now=self.clock.now(),
        )

    async def run_pass(self) -> None:
        """One descheduling cycle."""
        started = time.perf_counter()
        self.passes += 1
        self.evictor.reset()
        nodes = self._nodes()
        if len(nodes) <= 1:
            log.info(
                "The cluster size is 0 or 1 meaning eviction causes service disruption or degradation. So aborting.."
            )
            return
        view = self._view(nodes)
        built = [self._build(profile, view) for profile in self.policy.profiles]
        for point in ("deschedule", "balance"):
            for profile, plugins in zip(self.policy.profiles, built, strict=True):
                for plugin in plugins[point]:
                    begun = time.perf_counter()
                    try:
                        await getattr(plugin, point)(nodes)
                    except ClientError as exc:
                        log.error("plugin %q finished with error: %s", plugin.name, exc)
                    self.metrics.strategy_duration.labels(plugin.name, profile.name).observe(
                        time.perf_counter() - begun
                    )
        self.metrics.loop_duration.observe(time.perf_counter() - started)

    def _build(self, profile: Profile, view: ClusterView) -> dict[str, list[Any]]:
        specs = self.policy.plugins
        filters = [
            default_evictor.DefaultEvictor(profile.args_of(name))
            for name in profile.enabled["filter"]
            if name == default_evictor.PLUGIN_NAME
        ]
        handle = Handle(
            profile=profile.name,
            evictors=filters,
            pod_evictor=self.evictor,
            view=view,
            threshold=self._thresholds.get(profile.name, SYSTEM_CRITICAL_PRIORITY),
        )
        out: dict[str, list[Any]] = {"deschedule": [], "balance": []}
        for point, plugins in out.items():
            for name in profile.enabled[point]:
                factory = specs[name].new
                if factory is not None:
                    plugins.append(factory(profile.args_of(name), handle))
        return out
