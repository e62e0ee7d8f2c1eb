"""The descheduler framework: plugin protocols, the per-pass cluster view, the PodEvictor with its limits, and the
handle a profile's plugins evict through (upstream ``pkg/framework/types``, ``pkg/framework/profile``,
``pkg/descheduler/evictions``).

A pass (:mod:`kubeplane.descheduler.loop`) builds one :class:`ClusterView` from the informers, resets the
:class:`PodEvictor`'s counters (limits are per pass, upstream ``ResetCounters``) and runs every profile's
Deschedule plugins, then every profile's Balance plugins. A plugin sees only its :class:`Handle`:
``filter``/``pre_eviction_filter`` (the profile's filter plugins ANDed: the DefaultEvictor), the pods on a node,
and ``evict``.

Eviction, as upstream's ``EvictPod``: the total limit, then the node's, then the namespace's are checked
(raising :class:`TotalLimitError`, :class:`NodeLimitError`, :class:`NamespaceLimitError`, which plugins use to
stop early), then a ``policy/v1`` Eviction is created for the pod with upstream's annotations; success counts
the pod against the limits, increments ``descheduler_pods_evicted{result="success"}`` and records an Event
(reason: the plugin's name, action ``Descheduled``, message ``pod eviction from <node> node by
sigs.k8s.io/descheduler``); a refusal (a PDB's 429, a vanished pod) counts ``result="error"`` and the plugin goes
on. In dry-run mode nothing is written: the eviction is logged and counted, and the pod leaves this pass's view
as an evicted pod would (upstream runs dry-run against a fake clientset seeded from the cluster, where the
eviction does delete the pod).

Invariant: a pod evicted during a pass is absent from :meth:`ClusterView.pods_on_node` for the rest of that
pass (in both modes), so later plugins neither count it on its node nor evict it twice; the informers catch up
by the next pass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn, Protocol

from kubeplane.api.views import meta_of, name_of, namespace_of, spec_of
from kubeplane.client.errors import ClientError
from kubeplane.client.event_series import SeriesEventRecorder
from kubeplane.client.interface import Client
from kubeplane.metrics.descheduler import DeschedulerMetrics

from .evictor import DefaultEvictor, EvictorContext

Obj = Mapping[str, Any]
log = logging.getLogger("kubeplane.descheduler")

REQUESTED_BY: Final = "sigs.k8s.io/descheduler"
EVENT_ACTION: Final = "Descheduled"

__all__ = [
    "BalancePlugin",
    "ClusterView",
    "DeschedulePlugin",
    "Eviction",
    "EvictionLimitError",
    "Handle",
    "NamespaceLimitError",
    "NodeLimitError",
    "PodEvictor",
    "TotalLimitError",
]


class EvictionLimitError(Exception):
    """An eviction refused by one of the policy's limits (nothing was sent)."""


class NodeLimitError(EvictionLimitError):
    def __init__(self, node: str) -> None:
        super().__init__("maximum number of evicted pods per node reached")
        self.node = node


class NamespaceLimitError(EvictionLimitError):
    def __init__(self, namespace: str) -> None:
        super().__init__("maximum number of evicted pods per namespace reached")
        self.namespace = namespace


class TotalLimitError(EvictionLimitError):
    def __init__(self) -> None:
        super().__init__("maximum number of evicted pods per a descheduling cycle reached")


@dataclass(frozen=True, slots=True)
class Eviction:
    """One pod the descheduler evicted (or would have, in dry-run)."""

    namespace: str
    name: str
    node: str
    strategy: str
    profile: str
    at: float


@dataclass
class ClusterView:
    """A pass's nodes and pods (lists from the informers), with evicted pods taken out as the pass goes."""

    nodes: list[Obj]
    """Ready nodes matching the policy's ``nodeSelector``, by name."""
    pods: list[Obj]
    """Every pod the informer holds."""
    pdbs: list[Obj] = field(default_factory=list)
    namespaces: dict[str, Obj] = field(default_factory=dict)
    now: float = 0.0
    _by_node: dict[str, list[Obj]] = field(default_factory=dict)
    _by_owner: dict[str, int] = field(default_factory=dict)
    _gone: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        for pod in self.pods:
            node = spec_of(pod).get("nodeName")
            if node:
                self._by_node.setdefault(str(node), []).append(pod)
            for ref in meta_of(pod).get("ownerReferences") or ():
                uid = str(ref.get("uid") or "")
                self._by_owner[uid] = self._by_owner.get(uid, 0) + 1

    def pods_on_node(self, node: str) -> list[Obj]:
        """Every pod bound to ``node`` (any phase), less those evicted in this pass."""
        return [p for p in self._by_node.get(node, ()) if _key(p) not in self._gone]

    def pods_of_owner(self, uid: str) -> int:
        return self._by_owner.get(uid, 0)

    def remove(self, pod: Obj) -> None:
        self._gone.add(_key(pod))


def _key(pod: Obj) -> str:
    return f"{namespace_of(pod)}/{name_of(pod)}"


class PodEvictor:
    """Evictions with the policy's limits (upstream ``PodEvictor``); counters reset at each pass."""

    def __init__(
        self,
        client: Client,
        *,
        metrics: DeschedulerMetrics,
        recorder: SeriesEventRecorder | None,
        dry_run: bool = False,
        max_per_node: int | None = None,
        max_per_namespace: int | None = None,
        max_total: int | None = None,
        grace_period_seconds: int | None = None,
        failure_events: bool = False,
        now: Callable[[], float] = lambda: 0.0,
        on_request: Callable[[Obj, bool], None] | None = None,
    ) -> None:
        self.client, self.metrics, self.recorder, self.dry_run = client, metrics, recorder, dry_run
        self.max_per_node, self.max_per_namespace, self.max_total = max_per_node, max_per_namespace, max_total
        self.grace_period_seconds = grace_period_seconds
        self.failure_events = failure_events
        self.now = now
        self.on_request = on_request
        """Called with (pod, True) just before an Eviction is sent and (pod, False) when it was refused: the
        simulation marks the pod as evicted before its informer can see the deletion."""
        self.node_count: dict[str, int] = {}
        self.namespace_count: dict[str, int] = {}
        self.total = 0
        self.evicted: list[Eviction] = []
        """Every successful eviction since the evictor was made (the simulation's record)."""

    def reset(self) -> None:
        self.node_count.clear()
        self.namespace_count.clear()
        self.total = 0

    def _refuse(self, pod: Obj, err: EvictionLimitError, *, strategy: str, profile: str, limit: int) -> NoReturn:
        node, namespace = str(spec_of(pod).get("nodeName") or ""), namespace_of(pod)
        self.metrics.pods_evicted(result=str(err), strategy=strategy, profile=profile, namespace=namespace, node=node)
        log.info("Error evicting pod %s/%s: %s (limit %d)", namespace, name_of(pod), err, limit)
        if self.failure_events and self.recorder is not None:
            what = {TotalLimitError: "total", NodeLimitError: "node", NamespaceLimitError: "namespace"}[type(err)]
            self.recorder.record(
                pod, "Warning", "EvictionFailed",
                f"pod eviction from {node} node by {REQUESTED_BY} failed: {what} eviction limit exceeded ({limit})",
                action=EVENT_ACTION,
            )  # fmt: skip
        raise err

    async def evict(self, pod: Obj, *, strategy: str, profile: str, view: ClusterView) -> bool:
        """Evict ``pod``: True when evicted (or counted, in dry-run), False when the API refused; raises an
        :class:`EvictionLimitError` when a limit stops it."""
        node, namespace, name = str(spec_of(pod).get("nodeName") or ""), namespace_of(pod), name_of(pod)
        if self.max_total is not None and self.total + 1 > self.max_total:
            self._refuse(pod, TotalLimitError(), strategy=strategy, profile=profile, limit=self.max_total)
        if node and self.max_per_node is not None and self.node_count.get(node, 0) + 1 > self.max_per_node:
            self._refuse(pod, NodeLimitError(node), strategy=strategy, profile=profile, limit=self.max_per_node)
        if self.max_per_namespace is not None and self.namespace_count.get(namespace, 0) + 1 > self.max_per_namespace:
            err = NamespaceLimitError(namespace)
            self._refuse(pod, err, strategy=strategy, profile=profile, limit=self.max_per_namespace)
        if not self.dry_run:
            if self.on_request is not None:
                self.on_request(pod, True)
            try:
                await self._create_eviction(pod, strategy=strategy, profile=profile)
            except ClientError as exc:
                if self.on_request is not None:
                    self.on_request(pod, False)
                log.info("Error evicting pod %s/%s: %s", namespace, name, exc)
                self.metrics.pods_evicted(
                    result="error", strategy=strategy, profile=profile, namespace=namespace, node=node
                )
                if self.failure_events and self.recorder is not None:
                    self.recorder.record(
                        pod, "Warning", "EvictionFailed",
                        f"pod eviction from {node} node by {REQUESTED_BY} failed: {exc}", action=EVENT_ACTION,
                    )  # fmt: skip
                return False
        if node:
            self.node_count[node] = self.node_count.get(node, 0) + 1
        self.namespace_count[namespace] = self.namespace_count.get(namespace, 0) + 1
        self.total += 1
        self.metrics.pods_evicted(result="success", strategy=strategy, profile=profile, namespace=namespace, node=node)
        view.remove(pod)
        self.evicted.append(Eviction(namespace, name, node, strategy, profile, self.now()))
        if self.dry_run:
            log.info("Evicted pod in dry run mode %s/%s (strategy %s, node %s, profile %s)",
                     namespace, name, strategy, node, profile)  # fmt: skip
        else:
            log.info("Evicted pod %s/%s (strategy %s, node %s, profile %s)", namespace, name, strategy, node, profile)
            if self.recorder is not None:
                message = f"pod eviction from {node} node by {REQUESTED_BY}"
                self.recorder.record(pod, "Normal", strategy or "NotSet", message, action=EVENT_ACTION)
        return True

    async def _create_eviction(self, pod: Obj, *, strategy: str, profile: str) -> None:
        body: dict[str, Any] = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {
                "name": name_of(pod),
                "namespace": namespace_of(pod),
                "annotations": {"reason": f"triggered by {profile}/{strategy}: ", "requested-by": REQUESTED_BY},
            },
        }
        if self.grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": self.grace_period_seconds}
        await self.client.create(
            self.client.resource("pods"), body, namespace=namespace_of(pod), subresource="eviction", name=name_of(pod)
        )


class Handle:
    """What a profile's plugins see (upstream ``frameworktypes.Handle`` with its ``Evictor()``)."""

    def __init__(
        self,
        *,
        profile: str,
        evictors: Sequence[DefaultEvictor],
        pod_evictor: PodEvictor,
        view: ClusterView,
        threshold: int,
    ) -> None:
        self.profile = profile
        self.evictors = evictors
        self.pod_evictor = pod_evictor
        self.view = view
        self.ctx = EvictorContext(
            nodes=view.nodes,
            pods_on_node=view.pods_on_node,
            pods_of_owner=view.pods_of_owner,
            pdbs=view.pdbs,
            namespaces=view.namespaces,
            threshold=threshold,
            now=view.now,
        )

    @property
    def now(self) -> float:
        return self.view.now

    def pods_on_node(self, node: str) -> list[Obj]:
        return self.view.pods_on_node(node)

    def filter(self, pod: Obj) -> bool:
        return all(e.filter(pod, self.ctx) for e in self.evictors)

    def pre_eviction_filter(self, pod: Obj) -> bool:
        return all(e.pre_eviction_filter(pod, self.ctx) for e in self.evictors)

    async def evict(self, pod: Obj, *, strategy: str) -> bool:
        return await self.pod_evictor.evict(pod, strategy=strategy, profile=self.profile, view=self.view)


class DeschedulePlugin(Protocol):
    name: str

    async def deschedule(self, nodes: Sequence[Obj]) -> None: ...


class BalancePlugin(Protocol):
    name: str

    async def balance(self, nodes: Sequence[Obj]) -> None: ...
